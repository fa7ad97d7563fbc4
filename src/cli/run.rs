//! `asymflow run FILE [STAGE...]`: compute what the cache lacks, publish reports, print a
//! summary.
//!
//! Named stages (or instances) narrow the run to them and what they need; `--force` recomputes
//! named instances even when cached. Reports are published to `reports/PIPELINE/`, or to
//! `reports/PIPELINE+DIGEST/` when overrides change the resolved pipeline, so a one-off run never replaces the
//! plain pipeline's tables (each such table names its overrides at its foot). With
//! `--keep-going`, a report whose inputs partly failed is still rendered from whatever
//! finished, through the same path as `asymflow report`. The run itself is one call into the
//! engine ([`crate::exec::run::run`]); this file turns the arguments into its request and its
//! outcome into text.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::args::RunArgs;
use super::common::{label, plan_source, print_json, registry};
use super::{exit, failure, output};
use crate::exec::choice::ExecutorSettings;
use crate::exec::run::{RunOutcome, RunRequest};
use crate::exec::{self, RunSummary, Status};

/// Runs a pipeline.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let registry = registry();
    let json = args.pipeline.json;
    let cancel = Arc::new(AtomicBool::new(false));
    let outcome = exec::run::run(&request(args), &registry, &cancel, install_ctrl_c)?;
    if !json && !output::quiet() {
        for (search, dir) in &outcome.search_reports {
            eprintln!("search {search}: report in {}", dir.display());
        }
    }
    for warning in &outcome.warnings {
        eprintln!("warning: {warning}");
    }
    let RunOutcome {
        plan,
        summary,
        cache,
        index,
        ..
    } = &outcome;
    if json {
        print_json(&with_labels(serde_json::to_value(WithSearches {
            summary,
            searches: plan.searches(),
        })?))?;
    } else {
        for (name, table, dest) in &outcome.tables {
            println!("\n{name} (in {}):\n\n{table}", dest.display());
        }
    }
    for (result, inst) in summary.instances.iter().zip(plan.instances()) {
        if result.status == Status::Failed {
            eprintln!(
                "{}",
                failure::describe(cache, Some(index), inst, &result.reason)
            );
        }
    }
    if !json {
        print_summary(summary, outcome.seconds, outcome.estimate.as_ref());
    }
    for e in &outcome.errors {
        eprintln!("error: {e}");
    }
    Ok(if summary.interrupted {
        ExitCode::from(exit::INTERRUPTED)
    } else if outcome.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(exit::STAGE_FAILED)
    })
}

/// The engine's request for `run`'s arguments.
fn request(args: RunArgs) -> RunRequest {
    RunRequest {
        source: plan_source(&args.pipeline),
        targets: args.stages,
        force: args.force,
        reports: args.reports,
        executor: args.executor,
        settings: ExecutorSettings {
            jobs: args.jobs,
            device_slots: args.device_slots,
            max_jobs: args.max_jobs,
        },
        keep_going: args.keep_going,
        progress: !args.pipeline.json && !output::quiet(),
        retries: args.retries,
        offline: args.offline,
        require_remote: args.require_remote,
    }
}

/// `run --json`: the summary, and where each search stands (its trials' numbers, values and
/// objectives; each instance's binding names its trial) when the pipeline has searches.
#[derive(serde::Serialize)]
struct WithSearches<'a> {
    #[serde(flatten)]
    summary: &'a RunSummary,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    searches: &'a [crate::search::SearchState],
}

/// `run --json` with each instance's label (`student[seed=7]`), as `plan` prints it, beside
/// its stage and binding.
fn with_labels(mut doc: serde_json::Value) -> serde_json::Value {
    if let Some(list) = doc["instances"].as_array_mut() {
        for entry in list {
            let stage = entry["stage"].as_str().unwrap_or_default().to_string();
            let binding: std::collections::BTreeMap<String, serde_json::Value> =
                serde_json::from_value(entry["binding"].clone()).unwrap_or_default();
            entry["label"] = serde_json::Value::String(label(&stage, &binding));
        }
    }
    doc
}

/// `estimated about 9 min here (from 12 similar results); the stages took 8 min`, when the
/// run had an estimate and ran something.
fn estimate_against_actual(
    summary: &RunSummary,
    estimate: &exec::estimate::Estimate,
) -> Option<String> {
    use exec::estimate::human_seconds;
    let ran: Vec<f64> = summary
        .instances
        .iter()
        .filter(|o| o.status == Status::Ran)
        .filter_map(|o| o.seconds)
        .collect();
    if estimate.estimated == 0 || ran.is_empty() {
        return None;
    }
    let covers = if estimate.estimated < estimate.to_run {
        format!(
            " for {} of the {} to run",
            estimate.estimated, estimate.to_run
        )
    } else {
        String::new()
    };
    Some(format!(
        "estimated about {}{covers} (from {} similar {}); the {} that ran took {} (stage time, \
         one after another)",
        human_seconds(estimate.seconds),
        estimate.from,
        if estimate.from == 1 {
            "result"
        } else {
            "results"
        },
        ran.len(),
        human_seconds(ran.iter().sum()),
    ))
}

/// Each instance's status with `--verbose`, then the one-line count (unless `--quiet`), and
/// the estimate beside the time the stages took.
fn print_summary(summary: &RunSummary, seconds: f64, estimate: Option<&exec::estimate::Estimate>) {
    if output::verbose() {
        for outcome in &summary.instances {
            let status = serde_json::to_value(&outcome.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            // A cached instance's reason is the word `cached` again: say it once.
            let reason = if outcome.reason == status {
                ""
            } else {
                outcome.reason.as_str()
            };
            let line = format!(
                "{:8} {}  {reason}",
                output::status_word_err(&status),
                label(&outcome.stage, &outcome.binding),
            );
            eprintln!("{}", line.trim_end());
        }
    }
    if !output::quiet() {
        eprintln!(
            "{}: {} ran, {} cached, {} failed, {} skipped in {seconds:.2}s",
            summary.pipeline,
            summary.count(Status::Ran),
            summary.count(Status::Cached),
            summary.count(Status::Failed),
            summary.count(Status::Skipped),
        );
        if let Some(line) = estimate.and_then(|e| estimate_against_actual(summary, e)) {
            eprintln!("{line}");
        }
    }
}

/// First Ctrl-C, SIGTERM (what `timeout`, cluster schedulers and systemd send) or SIGHUP (a closed
/// terminal): stop launching stages and let running ones stop at their next check (a worker
/// that does not stop within the grace is killed). Second: exit at once; the workers die with
/// the engine (their parent-death signal). The cache stays consistent either way: nothing is
/// recorded half-done.
fn install_ctrl_c(cancel: &Arc<AtomicBool>) {
    let cancel = Arc::clone(cancel);
    let _ = ctrlc::set_handler(move || {
        if cancel.swap(true, Ordering::SeqCst) {
            eprintln!("\ninterrupted again: exiting now");
            std::process::exit(i32::from(exit::INTERRUPTED));
        }
        eprintln!("\ninterrupted: stopping after running stages stop (Ctrl-C again to exit now)");
    });
}
