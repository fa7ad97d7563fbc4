//! `asymflow remote status [FILE]` and `asymflow remote gc`. Every command finds the team's
//! remote the same way, from `asymflow.toml` beside `pipelines/` and the `ASYMFLOW_REMOTE*`
//! variables (an empty `ASYMFLOW_REMOTE` turns it off): [`crate::exec::run::open_remote`]
//! where a remote is optional, [`super::common::required_remote`] where it is not.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use super::args::{CacheArgs, OverrideArgs, PipelineArgs};
use super::common::{cache_for, load_plan, print_json, project_here, registry, required_remote};
use crate::cache::remote::RemoteSummary;
use crate::exec::resolve::{remote_states, RemoteState};

/// `asymflow remote ...`.
#[derive(Debug, Subcommand)]
pub enum RemoteCommand {
    /// Where the remote points, whether it answers, and what it holds (for a pipeline: per
    /// instance).
    #[command(
        after_help = "Examples:\n  asymflow remote status\n  asymflow remote status pipelines/quickstart.toml --json"
    )]
    Status {
        /// A pipeline file.
        file: Option<PathBuf>,
        /// Overrides.
        #[command(flatten)]
        overrides: OverrideArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Also count every record and blob the remote holds (lists the whole remote: slow on
        /// a large one).
        #[arg(long)]
        count: bool,
        /// The cache.
        #[command(flatten)]
        cache: CacheArgs,
    },
    /// Remove what nobody needs from the remote: records neither needed by the named
    /// pipelines nor pushed within --keep-days, the blobs only they named, quarantined blobs,
    /// and (on a shared folder) unfinished uploads. Blobs younger than a day are kept (a push
    /// in progress). At least one pipeline or --keep-days is required.
    #[command(
        after_help = "Examples:\n  asymflow remote gc pipelines/quickstart.toml --dry-run\n  asymflow remote gc --keep-days 30"
    )]
    Gc {
        /// Pipelines whose every instance's record is kept (with the overrides below).
        files: Vec<PathBuf>,
        /// Overrides applied to every named pipeline.
        #[command(flatten)]
        overrides: OverrideArgs,
        /// Also keep records pushed within this many days.
        #[arg(long, value_name = "N")]
        keep_days: Option<u64>,
        /// Keep blobs no record names (a push in progress), unfinished uploads and probes
        /// younger than this.
        #[arg(long, value_name = "H", default_value_t = 24)]
        min_age_hours: u64,
        /// Say what would be removed; remove nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// The cache (to compute the pipelines' keys).
        #[command(flatten)]
        cache: CacheArgs,
    },
}

/// Runs `asymflow remote ...`.
pub(crate) fn dispatch(command: RemoteCommand) -> anyhow::Result<ExitCode> {
    match command {
        RemoteCommand::Status {
            file,
            overrides,
            json,
            count,
            cache,
        } => status(file, overrides, json, count, cache),
        RemoteCommand::Gc {
            files,
            overrides,
            keep_days,
            min_age_hours,
            dry_run,
            json,
            cache,
        } => super::remote_gc::gc(super::remote_gc::GcArgs {
            files,
            overrides,
            keep_days,
            min_age_hours,
            dry_run,
            json,
            cache,
        }),
    }
}

/// `asymflow remote status [FILE]`: one listing-free probe, and one record read per instance
/// of the pipeline; the whole remote is listed only with `--count`.
fn status(
    file: Option<PathBuf>,
    overrides: OverrideArgs,
    json: bool,
    count: bool,
    cache: CacheArgs,
) -> anyhow::Result<ExitCode> {
    let pipeline = file.map(|file| PipelineArgs {
        file,
        overrides,
        json,
        cache: cache.clone(),
    });
    let registry = registry();
    let plan = pipeline
        .as_ref()
        .map(|p| load_plan(p, &registry))
        .transpose()?;
    let project = match &plan {
        Some(plan) => plan.spec().project_dir.clone(),
        None => project_here()?,
    };
    let remote = required_remote(&project)?;
    let summary = remote.summary(count)?;
    let states = match &plan {
        Some(plan) => {
            let local_cache = cache_for(&cache, &plan.spec().project_dir);
            remote_states(plan, &registry, &local_cache, &remote)?
        }
        None => Vec::new(),
    };
    if json {
        let instances: Vec<serde_json::Value> = states
            .iter()
            .map(|s| {
                serde_json::json!({
                    "instance": s.label,
                    "key": s.key,
                    "local": s.local,
                    "remote": s.remote,
                })
            })
            .collect();
        print_json(&serde_json::json!({ "remote": summary, "instances": instances }))?;
        return Ok(ExitCode::SUCCESS);
    }
    print_summary(&summary);
    if let Some(plan) = &plan {
        print_states(&plan.spec().name, &states);
    }
    Ok(ExitCode::SUCCESS)
}

/// Where the remote points, whether it answers (with its counts when counted), and whether
/// records are signed and pushed after a run.
fn print_summary(summary: &RemoteSummary) {
    println!("remote:  {}", summary.url);
    match (summary.records, summary.blobs, summary.bytes) {
        (Some(records), Some(blobs), Some(bytes)) => println!(
            "answers: yes; {records} records, {blobs} blobs, {:.1} MB",
            bytes as f64 / 1e6
        ),
        _ => println!("answers: yes (--count counts its records and blobs)"),
    }
    println!(
        "signing: {}",
        if summary.signing {
            "on (ASYMFLOW_REMOTE_SECRET): unsigned or badly signed records are never used"
        } else {
            "off (set ASYMFLOW_REMOTE_SECRET to sign and check records)"
        }
    );
    println!(
        "push after run: {}",
        if summary.push { "on" } else { "off" }
    );
}

/// How many of the pipeline's instances the remote holds, then one line per instance: its
/// label, whether it is local, and where the remote stands on it.
fn print_states(pipeline: &str, states: &[RemoteState]) {
    let held = states.iter().filter(|s| s.remote == "on remote").count();
    println!(
        "\n{pipeline}: {held} records on the remote for its {}:",
        super::output::count(states.len(), "instance", "instances")
    );
    let width = states.iter().map(|s| s.label.len()).max().unwrap_or(0);
    for s in states {
        println!(
            "  {:width$}  {:9}  {}",
            s.label,
            if s.local { "local" } else { "not local" },
            s.remote
        );
    }
}
