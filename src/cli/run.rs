//! `asymflow run FILE [STAGE...]`: compute what the cache lacks, publish reports, print a
//! summary.
//!
//! Named stages (or instances) narrow the run to them and what they need; `--force` recomputes
//! named instances even when cached. Reports are published to `reports/PIPELINE/`, or to
//! `reports/PIPELINE+DIGEST/` when overrides change the resolved pipeline, so a one-off run never replaces the
//! plain pipeline's tables (each such table names its overrides at its foot). With
//! `--keep-going`, a report whose inputs partly failed is still rendered from whatever
//! finished, through the same path as `asymflow report`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::common::{
    cache_for, label, load_plan_of, note_overrides, print_json, registry, reports_dir,
};
use super::{exit, failure, output, report_cmd, OverrideArgs, RunArgs};
use crate::cache::{Cache, Index};
use crate::exec::executor::Executor;
use crate::exec::{self, publish::publish, RunOptions, RunSummary, Status};
use crate::graph::Plan;
use crate::kind::Registry;

/// Runs a pipeline.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let registry = registry();
    let plan = load_plan_of(&args.pipeline, &registry, &args.stages)?;
    let cache = cache_for(&args.pipeline.cache, &plan.spec().project_dir);
    let force = forced_instances(&plan, &args.force)?;
    // Where the reports go, checked before anything runs: a destination that is not ours
    // fails now, not after hours of training (and is checked again when publishing).
    let reports = reports_dir(
        &args.pipeline,
        &registry,
        &plan.spec().project_dir,
        &plan.spec().name,
        args.reports.as_deref(),
    )?;
    let (root, overrides) = (reports.dir.clone(), &reports.overrides);
    check_report_folders(&plan, &registry, &cache, &root)?;
    let cancel = Arc::new(AtomicBool::new(false));
    install_ctrl_c(&cancel);
    let mut options = RunOptions {
        jobs: args.jobs,
        keep_going: args.keep_going,
        progress: !args.pipeline.json && !output::quiet(),
        device_slots: args.device_slots,
        retries: args.retries,
        force,
        remote: super::remote::remote_for(
            &plan.spec().project_dir,
            args.offline,
            args.require_remote,
        )?,
    };
    let estimate = estimate_run(&plan, &registry, &cache);
    let clock = std::time::Instant::now();
    let mut run_plan = |plan: &Plan| -> anyhow::Result<RunSummary> {
        let summary = match args.executor {
            ExecutorChoice::Local => exec::run(plan, &registry, &cache, &options, &cancel)?,
            ExecutorChoice::Slurm => {
                let mut executor = slurm_executor(plan, &registry, &options, args.max_jobs)?;
                let summary =
                    exec::run_with(plan, &registry, &cache, &options, &cancel, &mut executor);
                executor.shutdown();
                summary?
            }
        };
        // `--force` names instances of the first plan; a search's later plans number theirs
        // anew.
        options.force.clear();
        Ok(summary)
    };
    let (plan, summary) = if plan.searches().is_empty() {
        let summary = run_plan(&plan)?;
        (plan, summary)
    } else {
        let mut load = || load_plan_of(&args.pipeline, &registry, &args.stages);
        exec::search::drive(plan, &mut load, &mut run_plan)?
    };

    // Publish reports and show their tables. A failed publish is reported after the summary,
    // which is never lost.
    let index = cache.index()?;
    let mut published =
        publish_reports(&plan, &registry, &cache, &index, &summary, &root, overrides)?;
    match exec::publish::publish_searches(&plan.spec().name, plan.searches(), &root) {
        Ok(dirs) if !args.pipeline.json && !output::quiet() => {
            for (search, dir) in plan.searches().iter().zip(dirs) {
                eprintln!("search {}: report in {}", search.name, dir.display());
            }
        }
        Ok(_) => {}
        Err(e) => published.errors.push(e),
    }
    // With --keep-going, reports that did not run render from what finished.
    if args.keep_going && !summary.interrupted && !published.unrendered.is_empty() {
        let rendered = report_cmd::render(
            &plan,
            &registry,
            &cache,
            &root,
            overrides,
            &published.unrendered,
        )?;
        published.tables.extend(rendered.tables);
    }
    if let Err(e) = reports.mark(&plan.spec().name) {
        eprintln!("warning: {e}");
    }

    if args.pipeline.json {
        print_json(&with_labels(serde_json::to_value(WithSearches {
            summary: &summary,
            searches: plan.searches(),
        })?))?;
    } else {
        for (name, table, dest) in &published.tables {
            println!("\n{name} (in {}):\n\n{table}", dest.display());
        }
    }
    for (outcome, inst) in summary.instances.iter().zip(plan.instances()) {
        if outcome.status == Status::Failed {
            eprintln!(
                "{}",
                failure::describe(&cache, Some(&index), inst, &outcome.reason)
            );
        }
    }
    if !args.pipeline.json {
        print_summary(&summary, clock.elapsed().as_secs_f64(), estimate.as_ref());
    }
    for e in &published.errors {
        eprintln!("error: {e}");
    }
    Ok(if summary.interrupted {
        ExitCode::from(exit::INTERRUPTED)
    } else if summary.success() && published.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(exit::STAGE_FAILED)
    })
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
            let binding = serde_json::from_value(entry["binding"].clone()).unwrap_or_default();
            entry["label"] = serde_json::Value::String(label(&stage, &binding));
        }
    }
    doc
}

/// The instances `--force` names (a stage, or one instance's label), each checked against the
/// plan with the labels that exist when it names nothing.
fn forced_instances(plan: &Plan, targets: &[String]) -> anyhow::Result<BTreeSet<usize>> {
    let mut force = BTreeSet::new();
    for target in targets {
        force.extend(crate::select::matching(
            plan,
            target,
            &format!("--force {target}: "),
        )?);
    }
    Ok(force)
}

/// What publishing a run's reports gave.
struct Published {
    /// Each published table: the report's label, its markdown, its folder.
    tables: Vec<(String, String, PathBuf)>,
    /// Reports that could not be copied out of the cache.
    errors: Vec<exec::publish::PublishError>,
    /// Report instances without a result (their inputs failed, or the run stopped).
    unrendered: Vec<String>,
}

/// Copies every report instance that has a result to its folder under `root`.
fn publish_reports(
    plan: &Plan,
    registry: &Registry,
    cache: &Cache,
    index: &Index,
    summary: &RunSummary,
    root: &Path,
    overrides: &OverrideArgs,
) -> anyhow::Result<Published> {
    let mut published = Published {
        tables: Vec::new(),
        errors: Vec::new(),
        unrendered: Vec::new(),
    };
    for outcome in &summary.instances {
        let publishes = plan
            .spec()
            .stage(&outcome.stage)
            .and_then(|s| registry.get(&s.kind))
            .is_some_and(|k| k.publishes());
        if !publishes {
            continue;
        }
        let record = match &outcome.key {
            Some(key) => index.lookup(key)?,
            None => None,
        };
        let Some(record) = record else {
            published
                .unrendered
                .push(label(&outcome.stage, &outcome.binding));
            continue;
        };
        let dest = report_folder(root, &outcome.stage, &outcome.binding);
        let instance = label(&outcome.stage, &outcome.binding);
        let written = match publish(cache, &record, &dest, &instance) {
            Ok(written) => written,
            Err(e) => {
                published.errors.push(e);
                continue;
            }
        };
        note_overrides(&dest, overrides)?;
        if written
            .iter()
            .any(|p| p.file_name().is_some_and(|n| n == "table.md"))
        {
            published.tables.push((
                label(&outcome.stage, &outcome.binding),
                std::fs::read_to_string(dest.join("table.md"))?,
                dest,
            ));
        }
    }
    Ok(published)
}

/// Refuses, when the plan has reports, a reports root inside the cache and report folders
/// asymflow did not publish.
fn check_report_folders(
    plan: &Plan,
    registry: &Registry,
    cache: &Cache,
    root: &Path,
) -> anyhow::Result<()> {
    let folders: Vec<PathBuf> = plan
        .instances()
        .iter()
        .filter(|inst| registry.get(&inst.kind).is_some_and(|k| k.publishes()))
        .map(|inst| report_folder(root, &inst.stage, &inst.binding))
        .collect();
    if !folders.is_empty() {
        exec::publish::check_outside_cache(root, cache.dir())?;
    }
    for folder in &folders {
        exec::publish::check_replaceable(folder)?;
    }
    Ok(())
}

/// The folder of one report instance under `root`.
pub(crate) fn report_folder(
    root: &Path,
    stage: &str,
    binding: &std::collections::BTreeMap<String, serde_json::Value>,
) -> PathBuf {
    root.join(exec::publish::folder_name(&folder(stage, binding)))
}

/// What `plan` would estimate for this run, to show beside the time it took; `None` when it
/// cannot be read (an estimate never stops a run).
fn estimate_run(
    plan: &Plan,
    registry: &Registry,
    cache: &Cache,
) -> Option<exec::estimate::Estimate> {
    if !cache.dir().join("index.sqlite").is_file() {
        return None;
    }
    let planned = exec::plan_status(plan, registry, cache).ok()?;
    exec::estimate::of_planned(&cache.index().ok()?, registry, &planned).ok()
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

/// The folder of one report instance under the reports root: the stage, or its label.
pub fn folder(
    stage: &str,
    binding: &std::collections::BTreeMap<String, serde_json::Value>,
) -> String {
    if binding.is_empty() {
        stage.to_string()
    } else {
        label(stage, binding)
    }
}

/// First Ctrl-C, SIGTERM (what `timeout`, Slurm and systemd send) or SIGHUP (a closed
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

/// `--executor`: where stages run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum ExecutorChoice {
    /// On this machine: the kinds without tensors in the engine, the rest in workers.
    #[default]
    Local,
    /// The stage classes the project's `[executor.slurm]` profile submits go to Slurm as jobs
    /// (`asymflow exec`); the rest run here.
    Slurm,
}

/// The Slurm executor of the project's profile, with a local executor for the classes it does
/// not submit.
fn slurm_executor(
    plan: &crate::graph::Plan,
    registry: &Arc<crate::kind::Registry>,
    options: &RunOptions,
    max_jobs: Option<usize>,
) -> anyhow::Result<exec::routed::Routed> {
    use crate::exec::slurm::{JobCommand, SlurmExecutor};
    let profile = slurm_profile(&plan.spec().project_dir)?;
    let exe = std::env::current_exe()?;
    let route = profile.clone();
    let cluster = SlurmExecutor::new(profile, JobCommand::asymflow_exec(&exe), max_jobs)?;
    let local = exec::local::LocalExecutor::new(
        Arc::clone(registry),
        exec::local::LocalOptions {
            jobs: options.jobs,
            device_slots: options.device_slots,
        },
    )?;
    Ok(exec::routed::Routed::new(
        Box::new(cluster),
        Box::new(local),
        Box::new(move |class| route.submits(class)),
    ))
}

/// The `[executor.slurm]` profile of the project at `project`, checked.
pub(crate) fn slurm_profile(
    project: &std::path::Path,
) -> anyhow::Result<crate::exec::slurm::SlurmProfile> {
    let file = project.join(crate::config::CONFIG_FILE);
    let config = crate::config::ProjectConfig::load(project)?;
    let table = config
        .executor
        .as_ref()
        .and_then(|t| t.get("slurm"))
        .cloned()
        .ok_or_else(|| {
            anyhow::anyhow!(
                "--executor slurm: no [executor.slurm] profile in {}; add one (partition, \
                 account, time, mem, and gres under [executor.slurm.device]); the README's \
                 `Running on a Slurm cluster` has a worked example",
                file.display()
            )
        })?;
    let profile: crate::exec::slurm::SlurmProfile = table
        .try_into()
        .map_err(|e| anyhow::anyhow!("{} [executor.slurm]: {e}", file.display()))?;
    profile
        .validate()
        .map_err(|e| anyhow::anyhow!("{} [executor.slurm]: {e}", file.display()))?;
    Ok(profile)
}
