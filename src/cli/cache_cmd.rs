//! `asymflow cache verify`, `asymflow cache gc` and `asymflow cache forget`.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::process::ExitCode;

use super::common::cache_here;
use super::status::human_bytes;
use super::CacheArgs;
use crate::cache::results::check_output;
use crate::cache::{short_key, LockMode, ObjectError};

/// Checks every recorded result against the object store. An object that is corrupt is
/// quarantined; a result that references a corrupt or missing object (directly or through a
/// directory manifest), or records an unsafe output name or digest, is forgotten, so its stage
/// runs again. Exits 1 when anything was wrong.
pub fn verify(args: CacheArgs) -> anyhow::Result<ExitCode> {
    let cache = cache_here(&args)?;
    let mut index = cache.index()?;
    let objects = cache.objects();
    let mut problems = 0usize;
    let mut corrupt = BTreeSet::new();
    let mut checked = 0usize;
    for (digest, _) in objects.list()? {
        checked += 1;
        if let Err(ObjectError::Corrupt {
            actual,
            quarantined,
            ..
        }) = objects.open_verified(&digest)
        {
            println!(
                "corrupt {digest}: content hashes to {actual}; moved to {}",
                quarantined.display()
            );
            problems += 1;
            corrupt.insert(digest);
        }
    }
    // Every result's outputs, and the files of its directory outputs, must be present.
    let mut bad_results: BTreeMap<String, String> = BTreeMap::new();
    for (key, name, output) in index.recorded_outputs()? {
        if bad_results.contains_key(&key) {
            continue;
        }
        if let Err(e) = check_output(&key, &name, &output) {
            bad_results.insert(key, e.to_string());
            continue;
        }
        let mut needed = vec![output.digest.clone()];
        if output.is_dir {
            match objects.read_manifest(&output.digest) {
                Ok(m) => needed.extend(m.entries.into_iter().map(|(_, d)| d)),
                Err(e) => {
                    bad_results.insert(key, format!("output `{name}`: {e}"));
                    continue;
                }
            }
        }
        if let Some(gone) = needed
            .iter()
            .find(|d| corrupt.contains(*d) || !objects.contains(d))
        {
            let what = if corrupt.contains(gone) {
                "corrupt"
            } else {
                "missing"
            };
            bad_results.insert(key, format!("output `{name}`: object {gone} is {what}"));
        }
    }
    for (key, why) in &bad_results {
        println!("forgetting result {}: {why}", short_key(key));
        index.forget(key)?;
        problems += 1;
    }
    for digest in &corrupt {
        index.forget_object(digest)?;
    }
    println!(
        "verified {checked} objects: {} corrupt, {} results forgotten (their stages run again)",
        corrupt.len(),
        bad_results.len()
    );
    Ok(if problems == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Deletes objects that no kept result reaches, scratch folders and temporary files left by
/// killed runs. Results are forgotten first when they finished more than `older_than` days ago,
/// or (with `keep`) when no instance of the named pipelines uses them, as `dvc gc -w` keeps
/// what the workspace uses. The dry run computes exactly the same sets and only prints them.
/// Holds the cache's exclusive lock, so it never runs beside a `run` whose objects are stored
/// but not yet recorded.
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
    let _lock = cache.lock(LockMode::Exclusive)?;
    let mut index = cache.index()?;
    let mut forgotten: BTreeSet<String> = BTreeSet::new();
    if let Some(days) = older_than_days {
        let cutoff = crate::cache::now() - days * 86_400.0;
        forgotten.extend(index.runs_finished_before(cutoff)?);
    }
    if let Some(kept) = &kept_keys {
        index.each_recorded_output(|key, _, _| {
            if !kept.contains(key) && !forgotten.contains(key) {
                forgotten.insert(key.to_string());
            }
        })?;
    }
    if !forgotten.is_empty() {
        println!(
            "{} {} results{}",
            if dry_run {
                "would forget"
            } else {
                "forgetting"
            },
            forgotten.len(),
            match (older_than_days, &kept_keys) {
                (Some(days), None) => format!(" older than {days} days"),
                (None, Some(_)) => " no kept pipeline uses".to_string(),
                _ => " (old, or unused by the kept pipelines)".to_string(),
            }
        );
        if !dry_run {
            for key in &forgotten {
                index.forget(key)?;
            }
        }
    }
    let reachable = reachable_objects(&index, &cache, &forgotten)?;
    let mut unreferenced = Vec::new();
    cache.objects().each_digest(&mut |digest| {
        if !reachable.contains(&digest_bytes(&digest)) {
            unreferenced.push(digest);
        }
        Ok(())
    })?;
    let mut freed = 0u64;
    let count = unreferenced.len();
    for digest in &unreferenced {
        freed += cache.objects().size_of(digest).unwrap_or(0);
        if !dry_run {
            cache.objects().remove(digest)?;
            index.forget_object(digest)?;
        }
    }
    // With the exclusive lock held no run is alive: every lease, scratch folder and temporary
    // object file is a leftover.
    let mut scratch = 0usize;
    if let Ok(entries) = std::fs::read_dir(cache.tmp_dir()) {
        for entry in entries.flatten() {
            scratch += 1;
            if !dry_run {
                let path = entry.path();
                if path.is_dir() {
                    std::fs::remove_dir_all(&path)?;
                } else {
                    std::fs::remove_file(&path)?;
                }
            }
        }
    }
    let temporaries = if dry_run {
        0
    } else {
        index.drop_stale_leases()?;
        cache.objects().remove_temporaries()?
    };
    let verb = if dry_run { "would delete" } else { "deleted" };
    println!(
        "{verb} {count} unreferenced objects ({}), {scratch} scratch folders and {temporaries} temporary files",
        human_bytes(freed)
    );
    Ok(ExitCode::SUCCESS)
}

/// The objects the results not in `forgotten` reach: their outputs and the files of their
/// directory outputs, streamed from the index, each held as its 32 bytes (a million results
/// reach two million objects).
fn reachable_objects(
    index: &crate::cache::Index,
    cache: &crate::cache::Cache,
    forgotten: &BTreeSet<String>,
) -> anyhow::Result<HashSet<[u8; 32]>> {
    let mut reachable = HashSet::new();
    index.each_recorded_output(|key, _, output| {
        if forgotten.contains(key) {
            return;
        }
        if output.is_dir {
            if let Ok(m) = cache.objects().read_manifest(&output.digest) {
                reachable.extend(m.entries.iter().map(|(_, d)| digest_bytes(d)));
            }
        }
        reachable.insert(digest_bytes(&output.digest));
    })?;
    Ok(reachable)
}

/// A digest's bytes, for a compact set; text that is not 64 hex characters (a damaged index
/// row) maps to its blake3, which names no object in the store.
fn digest_bytes(digest: &str) -> [u8; 32] {
    let hex = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let bytes = digest.as_bytes();
    let mut out = [0u8; 32];
    if bytes.len() != 64 {
        return *blake3::hash(bytes).as_bytes();
    }
    for (i, pair) in bytes.chunks(2).enumerate() {
        match (hex(pair[0]), hex(pair[1])) {
            (Some(a), Some(b)) => out[i] = a << 4 | b,
            _ => return *blake3::hash(bytes).as_bytes(),
        }
    }
    out
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
        let args = super::PipelineArgs {
            file: file.clone(),
            overrides: Default::default(),
            json: false,
            cache: super::CacheArgs { cache: None },
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
