//! `asymflow remote gc [FILE...] [--keep-days N] [--dry-run]`: turns the pipelines named into
//! the stage keys to keep (every instance whose inputs are known, from the local cache or the
//! remote) and asks the remote to collect the rest ([`crate::cache::remote::gc`]).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;

use super::args::{CacheArgs, OverrideArgs, PipelineArgs};
use super::common::{cache_for, load_plan, print_json, registry};
use crate::cache::remote::gc::{GcOptions, GcReport};
use crate::cache::remote::Remote;
use crate::exec::resolve::walk;

/// The arguments of `remote gc`.
pub(super) struct GcArgs {
    pub files: Vec<PathBuf>,
    pub overrides: OverrideArgs,
    pub keep_days: Option<u64>,
    pub min_age_hours: u64,
    pub dry_run: bool,
    pub json: bool,
    pub cache: CacheArgs,
}

/// Runs `remote gc`.
pub(super) fn gc(args: GcArgs) -> anyhow::Result<ExitCode> {
    if args.files.is_empty() && args.keep_days.is_none() {
        bail!(
            "remote gc needs to know what to keep: name the pipelines whose results stay (`asymflow remote gc pipelines/quickstart.toml`), or --keep-days N for what was pushed in the last N days, or both; --dry-run shows what would go"
        );
    }
    let registry = registry();
    let mut keep = BTreeSet::new();
    let mut remote: Option<Remote> = None;
    for file in &args.files {
        let pipeline = PipelineArgs {
            file: file.clone(),
            overrides: args.overrides.clone(),
            json: args.json,
            cache: args.cache.clone(),
        };
        let plan = load_plan(&pipeline, &registry)?;
        let project = plan.spec().project_dir.clone();
        if remote.is_none() {
            remote = Some(super::common::required_remote(&project)?);
        }
        let remote = remote.as_ref().expect("opened above");
        let cache = cache_for(&args.cache, &project);
        let walked = walk(&plan, &registry, &cache, |_, key, local| {
            Ok::<_, anyhow::Error>(match local {
                Some(local) => Some(local),
                None => remote.lookup(key).ok().flatten(),
            })
        })?;
        keep.extend(walked.into_iter().filter_map(|w| w.key));
    }
    let remote = match remote {
        Some(r) => r,
        None => super::common::required_remote(&super::common::project_here()?)?,
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs() as i64;
    let report = remote.gc(&GcOptions {
        keep_keys: keep,
        keep_days: args.keep_days,
        min_age: (args.min_age_hours as i64).saturating_mul(3600),
        dry_run: args.dry_run,
        now,
    })?;
    if args.json {
        print_json(&serde_json::json!({ "remote": remote.url(), "gc": report }))?;
    } else {
        print_report(remote.url(), &report);
    }
    Ok(if report.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn print_report(url: &str, r: &GcReport) {
    let verb = if r.dry_run { "would remove" } else { "removed" };
    println!(
        "{url}: {verb} {} records ({} kept), {} blobs, {:.1} MB ({} kept), {} quarantined",
        r.records_removed,
        r.records_kept,
        r.blobs_removed,
        r.bytes_removed as f64 / 1e6,
        r.blobs_kept,
        r.quarantine_removed
    );
    match r.uploads_aborted {
        Some(n) => println!("unfinished uploads: {verb} {n}"),
        None => println!(
            "unfinished uploads: {}",
            r.uploads_note
                .as_deref()
                .unwrap_or("not shown by this store")
        ),
    }
    if r.dry_run {
        println!("(--dry-run: nothing was removed)");
    }
    for f in &r.failed {
        eprintln!("warning: could not remove {f}");
    }
}
