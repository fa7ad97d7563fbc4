//! `asymflow cache verify`, `asymflow cache gc` and `asymflow cache forget`.

use std::collections::BTreeSet;
use std::process::ExitCode;

use super::args::CacheArgs;
use super::common::cache_here;
use super::status::human_bytes;
use crate::cache::gc::GcRequest;
use crate::cache::short_key;

/// Checks every recorded result against the object store (`cache::verify` says how) and
/// prints what it found. Exits 1 when anything was wrong.
pub fn verify(args: CacheArgs) -> anyhow::Result<ExitCode> {
    let cache = cache_here(&args)?;
    let outcome = crate::cache::verify::verify(&cache)?;
    for c in &outcome.corrupt {
        println!(
            "corrupt {}: content hashes to {}; moved to {}",
            c.digest,
            c.actual,
            c.quarantined.display()
        );
    }
    for (key, why) in &outcome.forgotten {
        println!("forgetting result {}: {why}", short_key(key));
    }
    println!(
        "verified {} objects: {} corrupt, {} results forgotten (their stages run again)",
        outcome.checked,
        outcome.corrupt.len(),
        outcome.forgotten.len()
    );
    Ok(if outcome.clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Deletes objects that no kept result reaches, scratch folders and temporary files left by
/// killed runs (`cache::gc` says how). Results are forgotten first when they finished more than
/// `older_than` days ago, or (with `keep`) when no instance of the named pipelines uses them,
/// as `dvc gc -w` keeps what the workspace uses. The dry run prints the same counts and
/// deletes nothing.
pub fn gc(
    args: CacheArgs,
    dry_run: bool,
    older_than_days: Option<f64>,
    keep: &[std::path::PathBuf],
) -> anyhow::Result<ExitCode> {
    // Nothing to collect where there is no cache, and a dry run must not create one.
    let cache = super::common::existing_cache(cache_here(&args)?)?;
    let kept_keys = if keep.is_empty() {
        None
    } else {
        Some(keys_used_by(keep, &cache)?)
    };
    let kept = kept_keys.is_some();
    let request = GcRequest {
        dry_run,
        older_than_days,
        kept_keys,
    };
    let outcome = crate::cache::gc::collect(&cache, &request)?;
    if outcome.forgotten > 0 {
        println!(
            "{} {} results{}",
            if dry_run {
                "would forget"
            } else {
                "forgetting"
            },
            outcome.forgotten,
            match (older_than_days, kept) {
                (Some(days), false) => format!(" older than {days} days"),
                (None, true) => " no kept pipeline uses".to_string(),
                _ => " (old, or unused by the kept pipelines)".to_string(),
            }
        );
    }
    let verb = if dry_run { "would delete" } else { "deleted" };
    println!(
        "{verb} {} unreferenced objects ({}), {} scratch folders and {} temporary files",
        outcome.objects,
        human_bytes(outcome.freed_bytes),
        outcome.scratch,
        outcome.temporaries
    );
    Ok(ExitCode::SUCCESS)
}

/// Forgets the results whose keys start with each of `prefixes` (each must name one result),
/// so their stages run again. Their objects stay until `cache gc`.
pub fn forget(args: CacheArgs, prefixes: &[String]) -> anyhow::Result<ExitCode> {
    let cache = cache_here(&args)?;
    let mut index = cache.index()?;
    let mut keys = Vec::new();
    for prefix in prefixes {
        let matches = index.keys_with_prefix(prefix)?;
        match matches.as_slice() {
            [(key, _)] => keys.push(key.clone()),
            [] => anyhow::bail!(
                "no result has a key starting with `{prefix}` (see `asymflow status` or `asymflow show`)"
            ),
            many => anyhow::bail!(
                "`{prefix}` names {} results ({}); give more characters of the key",
                many.len(),
                many.iter()
                    .take(5)
                    .map(|(k, s)| format!("{} {s}", short_key(k)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
    for key in &keys {
        index.forget(key)?;
        println!("forgot {}", short_key(key));
    }
    Ok(ExitCode::SUCCESS)
}

/// The keys of every cached instance of the pipelines in `files` (as `plan` computes them).
fn keys_used_by(
    files: &[std::path::PathBuf],
    cache: &crate::cache::Cache,
) -> anyhow::Result<BTreeSet<String>> {
    let registry = super::common::registry();
    let mut keys = BTreeSet::new();
    for file in files {
        let args = super::args::PipelineArgs {
            file: file.clone(),
            overrides: Default::default(),
            json: false,
            cache: super::args::CacheArgs { cache: None },
        };
        let plan = super::common::load_plan(&args, &registry)?;
        for planned in crate::exec::plan_status(&plan, &registry, cache)? {
            if planned.status == "cached" {
                keys.extend(planned.key);
            }
        }
    }
    Ok(keys)
}
