//! `asymflow status`: what the cache holds.

use std::process::ExitCode;

use super::common::cache_here;
use super::CacheArgs;

/// Prints a summary of the cache.
pub fn status(args: CacheArgs) -> anyhow::Result<ExitCode> {
    let cache = cache_here(&args)?;
    let index = cache.index()?;
    let (ok, failed, leases, objects, bytes) = index.summary()?;
    println!("cache {}", cache.dir().display());
    println!(
        "  {ok} results, {failed} failed runs, {objects} objects ({})",
        human_bytes(bytes as u64)
    );
    let live = index.leases()?;
    if leases > 0 {
        println!("  {leases} leases:");
        for (key, host, pid, age) in live {
            println!(
                "    {} held by pid {pid} on {host}, heartbeat {age:.0}s ago",
                crate::cache::short_key(&key)
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
pub fn human_bytes(n: u64) -> String {
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
