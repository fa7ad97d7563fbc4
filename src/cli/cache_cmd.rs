//! `asymflow cache verify` and `asymflow cache gc`.

use std::collections::BTreeSet;
use std::process::ExitCode;

use super::common::cache_here;
use super::status::human_bytes;
use super::CacheArgs;
use crate::cache::ObjectError;

/// Rehashes every object. A corrupt one is quarantined and every result that references it
/// (directly or through a directory manifest) is forgotten, so its stage runs again.
pub fn verify(args: CacheArgs) -> anyhow::Result<ExitCode> {
    let cache = cache_here(&args)?;
    let mut index = cache.index()?;
    let objects = cache.objects().list()?;
    let manifests: Vec<String> = index
        .referenced_outputs()?
        .into_iter()
        .filter(|o| o.is_dir)
        .map(|o| o.digest)
        .collect();
    let mut corrupt = Vec::new();
    for (digest, _) in &objects {
        match cache.objects().open_verified(digest) {
            Ok(_) | Err(ObjectError::Missing { .. }) => {}
            Err(ObjectError::Corrupt {
                actual,
                quarantined,
                ..
            }) => {
                println!(
                    "corrupt {digest}: content hashes to {actual}; moved to {}",
                    quarantined.display()
                );
                corrupt.push(digest.clone());
            }
            Err(e) => return Err(e.into()),
        }
    }
    let mut forgotten = BTreeSet::new();
    for digest in &corrupt {
        let mut owners = index.runs_referencing(digest)?;
        for manifest in &manifests {
            if let Ok(m) = cache.objects().read_manifest(manifest) {
                if m.entries.iter().any(|(_, d)| d == digest) {
                    owners.extend(index.runs_referencing(manifest)?);
                }
            }
        }
        for key in owners {
            index.forget(&key)?;
            forgotten.insert(key);
        }
        index.forget_object(digest)?;
    }
    println!(
        "verified {} objects: {} corrupt, {} results forgotten (their stages run again)",
        objects.len(),
        corrupt.len(),
        forgotten.len()
    );
    Ok(if corrupt.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Deletes objects that no recorded result reaches (optionally forgetting old results first)
/// and scratch folders left by killed runs.
pub fn gc(
    args: CacheArgs,
    dry_run: bool,
    older_than_days: Option<f64>,
) -> anyhow::Result<ExitCode> {
    let cache = cache_here(&args)?;
    let mut index = cache.index()?;
    if let Some(days) = older_than_days {
        let cutoff = crate::cache::store::now() - days * 86_400.0;
        let old = index.runs_finished_before(cutoff)?;
        println!(
            "{} {} results older than {days} days",
            if dry_run {
                "would forget"
            } else {
                "forgetting"
            },
            old.len()
        );
        if !dry_run {
            for key in old {
                index.forget(&key)?;
            }
        }
    }
    let mut reachable = BTreeSet::new();
    for output in index.referenced_outputs()? {
        if output.is_dir {
            if let Ok(m) = cache.objects().read_manifest(&output.digest) {
                reachable.extend(m.entries.into_iter().map(|(_, d)| d));
            }
        }
        reachable.insert(output.digest);
    }
    let mut freed = 0u64;
    let mut count = 0usize;
    for (digest, size) in cache.objects().list()? {
        if reachable.contains(&digest) {
            continue;
        }
        count += 1;
        freed += size;
        if !dry_run {
            cache.objects().remove(&digest)?;
            index.forget_object(&digest)?;
        }
    }
    if !dry_run {
        index.drop_stale_leases()?;
    }
    let live: BTreeSet<String> = index
        .leases()?
        .into_iter()
        .map(|(k, ..)| k[..16].to_string())
        .collect();
    let mut scratch = 0usize;
    if let Ok(entries) = std::fs::read_dir(cache.tmp_dir()) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !live.iter().any(|k| name.starts_with(k.as_str())) {
                scratch += 1;
                if !dry_run {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
    }
    let verb = if dry_run { "would delete" } else { "deleted" };
    println!(
        "{verb} {count} unreferenced objects ({}) and {scratch} scratch folders",
        human_bytes(freed)
    );
    Ok(ExitCode::SUCCESS)
}
