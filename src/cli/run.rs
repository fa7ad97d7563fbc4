//! `asymflow run FILE`: compute what the cache lacks, publish reports, print a summary.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::common::{cache_for, label, load_plan, print_json, registry, reports_dir};
use super::RunArgs;
use crate::exec::{self, publish::publish, RunOptions, Status};

/// Runs a pipeline.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let registry = registry();
    let plan = load_plan(&args.pipeline, &registry)?;
    let cache = cache_for(&args.pipeline.cache, &plan.spec().project_dir);
    let cancel = Arc::new(AtomicBool::new(false));
    install_ctrl_c(&cancel);
    let options = RunOptions {
        jobs: args.jobs,
        keep_going: args.keep_going,
        progress: !args.pipeline.json,
        remote: super::remote::remote_for(
            &plan.spec().project_dir,
            args.offline,
            args.require_remote,
        )?,
    };
    let clock = std::time::Instant::now();
    let summary = exec::run(&plan, &registry, &cache, &options, &cancel)?;

    // Publish reports and show their tables.
    let mut tables = Vec::new();
    let index = cache.index()?;
    for outcome in &summary.instances {
        let publishes = plan
            .spec()
            .stage(&outcome.stage)
            .and_then(|s| registry.get(&s.kind))
            .is_some_and(|k| k.publishes());
        let (true, Some(key)) = (publishes, &outcome.key) else {
            continue;
        };
        let Some(record) = index.lookup(key)? else {
            continue;
        };
        let folder = if outcome.binding.is_empty() {
            outcome.stage.clone()
        } else {
            label(&outcome.stage, &outcome.binding)
        };
        let dest = reports_dir(&plan.spec().project_dir, &plan.spec().name).join(folder);
        let written = publish(&cache, &record, &dest)?;
        if let Some(table) = written
            .iter()
            .find(|p| p.file_name().is_some_and(|n| n == "table.md"))
        {
            tables.push((
                label(&outcome.stage, &outcome.binding),
                std::fs::read_to_string(table)?,
                dest,
            ));
        }
    }

    if args.pipeline.json {
        print_json(&summary)?;
    } else {
        for (name, table, dest) in &tables {
            println!("\n{name} (in {}):\n\n{table}", dest.display());
        }
        let failed: Vec<_> = summary
            .instances
            .iter()
            .filter(|i| i.status == Status::Failed)
            .collect();
        for f in &failed {
            eprintln!("failed: {}: {}", label(&f.stage, &f.binding), f.reason);
        }
        eprintln!(
            "{}: {} ran, {} cached, {} failed, {} skipped in {:.2}s",
            summary.pipeline,
            summary.count(Status::Ran),
            summary.count(Status::Cached),
            summary.count(Status::Failed),
            summary.count(Status::Skipped),
            clock.elapsed().as_secs_f64()
        );
    }
    Ok(if summary.interrupted {
        ExitCode::from(130)
    } else if summary.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// First Ctrl-C: stop launching stages and let running ones stop at their next check. Second:
/// exit at once (the cache stays consistent either way: nothing is recorded half-done).
fn install_ctrl_c(cancel: &Arc<AtomicBool>) {
    let cancel = Arc::clone(cancel);
    let _ = ctrlc::set_handler(move || {
        if cancel.swap(true, Ordering::SeqCst) {
            eprintln!("\ninterrupted again: exiting now");
            std::process::exit(130);
        }
        eprintln!("\ninterrupted: stopping after running stages stop (Ctrl-C again to exit now)");
    });
}
