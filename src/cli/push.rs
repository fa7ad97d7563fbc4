//! `asymflow push FILE [--set ...] [--sweep ...]`: publishes the local results of the
//! pipeline's instances, with the same overrides as the `run` that computed them (blobs first,
//! records last, what the remote already has skipped), several records at once, with a
//! progress bar. When nothing was pushed it says why: nothing of the plan is computed here, or
//! all of it is on the remote already (a run with overrides is pushed with the same
//! `--set`/`--sweep`).

use std::process::ExitCode;
use std::sync::Mutex;

use super::args::PipelineArgs;
use super::common::{cache_for, load_plan, overrides_text, print_json, registry};
use crate::cache::remote::{PushStats, RemoteError};
use crate::cache::RunRecord;
use crate::exec::resolve::walk;

/// Records pushed at once (each is a few HEADs and uploads, mostly waiting on the network).
const PARALLEL: usize = 8;

/// The outcome of one instance.
struct Line {
    label: String,
    status: String,
}

/// Pushes what the local cache holds of a pipeline.
pub fn push(args: PipelineArgs) -> anyhow::Result<ExitCode> {
    let registry = registry();
    let plan = load_plan(&args, &registry)?;
    let cache = cache_for(&args.cache, &plan.spec().project_dir);
    let remote = super::common::required_remote(&plan.spec().project_dir)?;
    let mut lines: Vec<Line> = Vec::new();
    let mut local: Vec<(usize, RunRecord)> = Vec::new();
    walk(&plan, &registry, &cache, |inst, _key, record| {
        lines.push(Line {
            label: inst.label(),
            status: "not computed locally".into(),
        });
        if let Some(record) = &record {
            local.push((lines.len() - 1, record.clone()));
        }
        Ok::<_, anyhow::Error>(record)
    })?;
    let runs: Vec<RunRecord> = local.iter().map(|(_, r)| r.clone()).collect();
    let bar = progress_bar(args.json, runs.len());
    let sent = Mutex::new(0u64);
    let results = remote.push_many(&cache, &runs, PARALLEL, &|_, result| {
        if let Ok(stats) = result {
            let mut sent = sent.lock().unwrap_or_else(|p| p.into_inner());
            *sent += stats.bytes;
            bar.set_message(format!("{:.1} MB sent", *sent as f64 / 1e6));
        }
        bar.inc(1);
    });
    bar.finish_and_clear();
    let mut tally = Tally::default();
    for ((line, _), result) in local.iter().zip(results) {
        lines[*line].status = tally.absorb(result)?;
    }
    if args.json {
        print_json(&serde_json::json!({
            "remote": remote.url(), "records": tally.records, "blobs": tally.blobs,
            "bytes": tally.bytes,
            "instances": lines.iter().map(|l| serde_json::json!({
                "instance": l.label, "status": l.status,
            })).collect::<Vec<_>>(),
        }))?;
    } else {
        for l in &lines {
            println!(
                "{:20} {}",
                l.status.chars().take(20).collect::<String>(),
                l.label
            );
        }
        eprintln!(
            "pushed {} records, {} blobs ({:.1} MB) to {}",
            tally.records,
            tally.blobs,
            tally.bytes as f64 / 1e6,
            remote.url()
        );
        if tally.records == 0 && tally.failed == 0 {
            eprintln!("{}", nothing_pushed(&args, lines.len(), runs.len()));
        }
    }
    Ok(if tally.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[derive(Default)]
struct Tally {
    records: usize,
    blobs: usize,
    bytes: u64,
    failed: usize,
}

impl Tally {
    /// Counts one push; returns its status. A rejected or corrupt record is a failure of
    /// that instance, a broken remote an error.
    fn absorb(&mut self, result: Result<PushStats, RemoteError>) -> anyhow::Result<String> {
        match result {
            Ok(stats) => {
                self.records += usize::from(stats.created);
                self.blobs += stats.blobs;
                self.bytes += stats.bytes;
                Ok(if stats.created {
                    "pushed".into()
                } else {
                    "already on remote".into()
                })
            }
            Err(e) if e.is_miss() => {
                self.failed += 1;
                eprintln!("warning: {e}");
                Ok(format!("failed: {e}"))
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// Why a push pushed nothing, and what to do.
fn nothing_pushed(args: &PipelineArgs, instances: usize, computed: usize) -> String {
    let file = args.file.display();
    let same = overrides_text(&args.overrides);
    let hint = if same.is_empty() {
        format!(
            "results of a run with --set or --sweep are other instances: push them with the same options (`asymflow push {file} --set ...`)"
        )
    } else {
        format!("these are the instances of `{file} {same}`")
    };
    if computed == 0 {
        format!(
            "nothing matched: none of the plan's {instances} instances is computed locally; {hint}"
        )
    } else {
        format!(
            "nothing new: the {computed} locally computed instances (of {instances}) are all on the remote already; {hint}"
        )
    }
}

fn progress_bar(hidden: bool, records: usize) -> indicatif::ProgressBar {
    if hidden || records == 0 {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(records as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} pushing {pos}/{len} records {msg}")
            .expect("the template is valid"),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}
