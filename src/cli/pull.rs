//! `asymflow pull FILE` (or `pull --all`): fetches from the team's remote exactly what a
//! pipeline's instances need and the local cache lacks, every blob verified while it streams,
//! with a progress bar in bytes.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use super::args::{CacheArgs, OverrideArgs, PipelineArgs};
use super::common::{cache_for, load_plan, print_json, registry};
use crate::cache::remote::{Fetched, RemoteError};
use crate::exec::resolve::walk;
use crate::kind::Registry;

/// `asymflow pull`.
#[derive(Debug, Clone, Args)]
pub struct PullArgs {
    /// The pipeline file (not needed with --all).
    #[arg(required_unless_present = "all")]
    pub file: Option<PathBuf>,
    /// Pull every record the remote holds, not only a pipeline's.
    #[arg(long)]
    pub all: bool,
    /// Overrides.
    #[command(flatten)]
    pub overrides: OverrideArgs,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// The cache.
    #[command(flatten)]
    pub cache: CacheArgs,
}

#[derive(Default)]
struct Tally {
    pulled: usize,
    blobs: usize,
    bytes: u64,
    lines: Vec<serde_json::Value>,
    rejected: usize,
}

impl Tally {
    /// Counts the outcome of fetching `label`; a rejected record is a warning, a broken remote
    /// an error.
    fn absorb(
        &mut self,
        label: &str,
        result: Result<Option<Fetched>, RemoteError>,
        bar: &indicatif::ProgressBar,
    ) -> Result<(), RemoteError> {
        let status = match result {
            Ok(Some(f)) => {
                self.pulled += 1;
                self.blobs += f.blobs;
                self.bytes += f.bytes;
                "pulled".to_string()
            }
            Ok(None) => "not on remote".to_string(),
            Err(e) if e.is_miss() => {
                self.rejected += 1;
                bar.suspend(|| eprintln!("warning: {e}"));
                format!("rejected: {e}")
            }
            Err(e) => return Err(e),
        };
        self.lines
            .push(serde_json::json!({ "instance": label, "status": status }));
        Ok(())
    }
}

/// Downloads at once (they mostly wait on the network).
const PARALLEL: usize = 8;

fn bytes_bar(hidden: bool) -> indicatif::ProgressBar {
    if hidden {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} pulled {bytes} ({binary_bytes_per_sec}) {wide_msg}",
        )
        .expect("the template is valid"),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

/// Pulls a pipeline's results, or everything with `--all`.
pub fn pull(args: PullArgs) -> anyhow::Result<ExitCode> {
    let registry = registry();
    let mut tally = Tally::default();
    let bar = bytes_bar(args.json);
    let pipeline = args.file.as_ref().map(|file| PipelineArgs {
        file: file.clone(),
        overrides: args.overrides.clone(),
        json: args.json,
        cache: args.cache.clone(),
    });
    let url = match &pipeline {
        Some(pipeline) if !args.all => {
            pull_pipeline(pipeline, &args.cache, &registry, &mut tally, &bar)?
        }
        _ => pull_all(pipeline.as_ref(), &args.cache, &registry, &mut tally, &bar)?,
    };
    bar.finish_and_clear();
    if args.json {
        print_json(&serde_json::json!({
            "remote": url, "pulled": tally.pulled, "blobs": tally.blobs, "bytes": tally.bytes,
            "rejected": tally.rejected, "instances": tally.lines,
        }))?;
    } else {
        for l in &tally.lines {
            println!(
                "{:26} {}",
                l["status"]
                    .as_str()
                    .unwrap_or("")
                    .chars()
                    .take(26)
                    .collect::<String>(),
                l["instance"].as_str().unwrap_or("")
            );
        }
        eprintln!(
            "pulled {} records, {} blobs ({:.1} MB) from {url}{}",
            tally.pulled,
            tally.blobs,
            tally.bytes as f64 / 1e6,
            if tally.rejected > 0 {
                format!("; {} rejected (see the warnings)", tally.rejected)
            } else {
                String::new()
            }
        );
    }
    Ok(if tally.rejected == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Pulls the results of the pipeline `pipeline` names that the local cache lacks; returns the
/// remote's URL.
fn pull_pipeline(
    pipeline: &PipelineArgs,
    cache_args: &CacheArgs,
    registry: &Arc<Registry>,
    tally: &mut Tally,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<String> {
    let plan = load_plan(pipeline, registry)?;
    let cache = cache_for(cache_args, &plan.spec().project_dir);
    let remote = super::common::required_remote(&plan.spec().project_dir)?;
    // Keys come from records (local, or the remote's without their blobs), in plan
    // order; then every blob the local cache lacks comes down, side by side.
    let mut wanted: Vec<(String, String)> = Vec::new();
    let walked = walk(&plan, registry, &cache, |inst, key, local| {
        if local.is_some() {
            tally
                .lines
                .push(serde_json::json!({ "instance": inst.label(), "status": "local" }));
            return Ok::<_, RemoteError>(local);
        }
        match remote.lookup(key) {
            Ok(found) => {
                if found.is_some() {
                    wanted.push((inst.label(), key.to_string()));
                } else {
                    tally.lines.push(
                        serde_json::json!({ "instance": inst.label(), "status": "not on remote" }),
                    );
                }
                Ok(found)
            }
            Err(e) if e.is_miss() => {
                tally.absorb(&inst.label(), Err(e), bar)?;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    })?;
    let keys: Vec<String> = wanted.iter().map(|(_, k)| k.clone()).collect();
    let results = remote.fetch_many(&cache, &keys, PARALLEL, Some(bar));
    for ((label, _), result) in wanted.iter().zip(results) {
        tally.absorb(label, result, bar)?;
    }
    for w in walked.iter().filter(|w| w.key.is_none()) {
        tally.lines.push(
            serde_json::json!({ "instance": w.label, "status": "an input is not available" }),
        );
    }
    Ok(remote.url().to_string())
}

/// Pulls every result the remote holds that the local cache lacks (`--all`), into the cache of
/// `pipeline`'s project or of the project around the current folder; returns the remote's URL.
fn pull_all(
    pipeline: Option<&PipelineArgs>,
    cache_args: &CacheArgs,
    registry: &Arc<Registry>,
    tally: &mut Tally,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<String> {
    let project = match pipeline {
        Some(pipeline) => load_plan(pipeline, registry)?.spec().project_dir.clone(),
        None => super::common::project_here()?,
    };
    let cache = cache_for(cache_args, &project);
    let remote = super::common::required_remote(&project)?;
    let index = cache.index()?;
    let mut keys = Vec::new();
    for key in remote.keys()? {
        if index.lookup(&key)?.is_none() {
            keys.push(key);
        }
    }
    let results = remote.fetch_many(&cache, &keys, PARALLEL, Some(bar));
    for (key, result) in keys.iter().zip(results) {
        tally.absorb(&key[..12], result, bar)?;
    }
    Ok(remote.url().to_string())
}
