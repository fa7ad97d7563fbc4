//! `asymflow pull FILE` (or `pull --all`): fetches from the team's remote exactly what a
//! pipeline's instances need and the local cache lacks, every blob verified while it streams,
//! with a progress bar in bytes.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::common::{cache_for, load_plan, print_json, registry};
use super::{CacheArgs, OverrideArgs, PipelineArgs};
use crate::cache::remote::{Fetched, Remote, RemoteError};
use crate::cache::Cache;
use crate::exec::resolve::walk;

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
    fn fetch(
        &mut self,
        remote: &Remote,
        cache: &Cache,
        label: &str,
        key: &str,
        bar: &indicatif::ProgressBar,
    ) -> Result<Option<Fetched>, RemoteError> {
        bar.set_message(label.to_string());
        match remote.fetch(cache, key, Some(bar)) {
            Ok(Some(f)) => {
                self.pulled += 1;
                self.blobs += f.blobs;
                self.bytes += f.bytes;
                self.lines
                    .push(serde_json::json!({ "instance": label, "status": "pulled" }));
                Ok(Some(f))
            }
            Ok(None) => {
                self.lines
                    .push(serde_json::json!({ "instance": label, "status": "not on remote" }));
                Ok(None)
            }
            Err(e) if e.is_miss() => {
                self.rejected += 1;
                bar.suspend(|| eprintln!("warning: {e}"));
                self.lines.push(
                    serde_json::json!({ "instance": label, "status": format!("rejected: {e}") }),
                );
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

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
    let url;
    match &args.file {
        Some(file) if !args.all => {
            let pipeline = PipelineArgs {
                file: file.clone(),
                overrides: args.overrides.clone(),
                json: args.json,
                cache: args.cache.clone(),
            };
            let plan = load_plan(&pipeline, &registry)?;
            let cache = cache_for(&args.cache, &plan.spec().project_dir);
            let remote = super::remote::required_remote(&plan.spec().project_dir)?;
            url = remote.url().to_string();
            let walked = walk(&plan, &registry, &cache, |inst, key, local| {
                if local.is_some() {
                    tally
                        .lines
                        .push(serde_json::json!({ "instance": inst.label(), "status": "local" }));
                    return Ok(local);
                }
                Ok::<_, anyhow::Error>(
                    tally
                        .fetch(&remote, &cache, &inst.label(), key, &bar)?
                        .map(|f| f.record),
                )
            })?;
            for w in walked.iter().filter(|w| w.key.is_none()) {
                tally.lines.push(serde_json::json!({ "instance": w.label, "status": "an input is not available" }));
            }
        }
        _ => {
            let project = match &args.file {
                Some(file) => {
                    let pipeline = PipelineArgs {
                        file: file.clone(),
                        overrides: args.overrides.clone(),
                        json: args.json,
                        cache: args.cache.clone(),
                    };
                    load_plan(&pipeline, &registry)?.spec().project_dir.clone()
                }
                None => super::remote::project_here()?,
            };
            let cache = cache_for(&args.cache, &project);
            let remote = super::remote::required_remote(&project)?;
            url = remote.url().to_string();
            let index = cache.index()?;
            for key in remote.keys()? {
                if index.lookup(&key)?.is_some() {
                    continue;
                }
                tally.fetch(&remote, &cache, &key[..12], &key, &bar)?;
            }
        }
    }
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
