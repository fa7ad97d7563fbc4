//! `asymflow push FILE`: publishes the pipeline's local results (blobs first, records last)
//! to the team's remote.

use std::process::ExitCode;

use super::common::{cache_for, load_plan, print_json, registry};
use super::PipelineArgs;
use crate::exec::resolve::walk;

/// Pushes what the local cache holds of a pipeline.
pub fn push(args: PipelineArgs) -> anyhow::Result<ExitCode> {
    let registry = registry();
    let plan = load_plan(&args, &registry)?;
    let cache = cache_for(&args.cache, &plan.spec().project_dir);
    let remote = super::remote::required_remote(&plan.spec().project_dir)?;
    let mut lines = Vec::new();
    let mut failed = 0usize;
    let (mut records, mut blobs, mut bytes) = (0usize, 0usize, 0u64);
    walk(&plan, &registry, &cache, |inst, _key, local| {
        let Some(record) = local else {
            lines.push(
                serde_json::json!({ "instance": inst.label(), "status": "not computed locally" }),
            );
            return Ok::<_, anyhow::Error>(None);
        };
        match remote.push(&cache, &record) {
            Ok(stats) => {
                records += usize::from(stats.created);
                blobs += stats.blobs;
                bytes += stats.bytes;
                let status = if stats.created {
                    "pushed"
                } else {
                    "already on remote"
                };
                lines.push(serde_json::json!({ "instance": inst.label(), "status": status }));
            }
            Err(e) if e.is_miss() => {
                failed += 1;
                lines.push(serde_json::json!({ "instance": inst.label(), "status": format!("failed: {e}") }));
            }
            Err(e) => return Err(e.into()),
        }
        Ok(Some(record))
    })?;
    if args.json {
        print_json(&serde_json::json!({
            "remote": remote.url(), "records": records, "blobs": blobs, "bytes": bytes,
            "instances": lines,
        }))?;
    } else {
        for l in &lines {
            println!(
                "{:18} {}",
                l["status"].as_str().unwrap_or(""),
                l["instance"].as_str().unwrap_or("")
            );
        }
        eprintln!(
            "pushed {records} records, {blobs} blobs ({:.1} MB) to {}",
            bytes as f64 / 1e6,
            remote.url()
        );
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
