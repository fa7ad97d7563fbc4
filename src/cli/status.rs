//! `asymflow status`: what the cache holds. It never creates a cache, and it shows a lease
//! whose process died (or stopped heart-beating) as stale, since the next run takes it over.
//! Jobs a run submitted to a cluster are listed with their job ids and files, from the leases
//! that carry them; a dead engine's job is followed by the next run.

use std::process::ExitCode;

use super::args::CacheArgs;
use super::common::{cache_here, existing_cache};
use super::output::count;
use crate::cache::leases::lease_is_stale;
use crate::cache::store::now;

/// Prints a summary of the cache.
pub fn status(args: CacheArgs) -> anyhow::Result<ExitCode> {
    let cache = existing_cache(cache_here(&args)?)?;
    let index = cache.index()?;
    let (ok, failed, leases, objects, bytes) = index.summary()?;
    println!("cache {}", cache.dir().display());
    println!(
        "  {}, {}, {} ({})",
        count(ok as usize, "result", "results"),
        count(failed as usize, "failed run", "failed runs"),
        count(objects as usize, "object", "objects"),
        human_bytes(bytes as u64)
    );
    let live = index.leases()?;
    if leases > 0 {
        println!("  {}:", count(leases as usize, "lease", "leases"));
        for (key, host, pid, liveness, age) in live {
            let state = if lease_is_stale(&host, pid, &liveness, now() - age) {
                "stale (its process is gone; the next run takes it over)"
            } else {
                "held"
            };
            println!(
                "    {} {state}: pid {pid} on {host}, heartbeat {age:.0}s ago",
                crate::cache::short_key(&key)
            );
        }
    }
    let external = index.external_jobs()?;
    if !external.is_empty() {
        println!(
            "  {} submitted to a cluster:",
            count(external.len(), "job", "jobs")
        );
        for (key, job, orphaned) in external {
            let what = crate::exec::choice::describe_job(&job);
            let label = crate::exec::choice::job_label(&job)
                .unwrap_or_else(|| crate::cache::short_key(&key).to_string());
            let state = if orphaned {
                "its engine is gone; the next run follows it"
            } else {
                "followed by a running asymflow"
            };
            println!(
                "    {label} {what} ({state}), files in {}",
                job.dir.display()
            );
        }
    }
    let recent = index.recent_runs(10)?;
    if !recent.is_empty() {
        println!("  recent runs:");
        for run in recent {
            let key = crate::cache::short_key(&run.key);
            println!(
                "    {:6} {}/{} {:.1}s  {key}",
                run.status, run.pipeline, run.stage, run.duration
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `1.5 MiB`.
pub(crate) fn human_bytes(n: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < units.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", units[unit])
    }
}
