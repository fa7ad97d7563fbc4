//! `asymflow report FILE`: render a pipeline's reports from the cache alone.
//!
//! Nothing is trained. Each report instance gets every upstream instance the cache holds;
//! those that have not run are passed with empty metrics and outputs, so their cells show as
//! missing (each table lists them), and the command says how to compute them, repeating the
//! user's overrides. The rendering is the engine's ([`crate::exec::render`]), which
//! `run --keep-going` uses too.

use std::path::Path;
use std::process::ExitCode;

use super::args::PipelineArgs;
use super::common::{
    cache_for, existing_cache, load_plan, overrides_text, plan_source, print_json, registry,
    shell_quote,
};
use crate::exec::publish;
use crate::exec::render::render;
use crate::exec::reports_root::ReportsRoot;
use crate::graph::Plan;

/// Renders every report of the pipeline into `reports/PIPELINE/` (or `--reports DIR`).
pub fn report(args: PipelineArgs, reports_arg: Option<&Path>) -> anyhow::Result<ExitCode> {
    let registry = registry();
    let plan = load_plan(&args, &registry)?;
    let cache = existing_cache(cache_for(&args.cache, &plan.spec().project_dir))?;
    let reports = ReportsRoot::of(
        &plan_source(&args),
        &registry,
        &plan.spec().project_dir,
        &plan.spec().name,
        reports_arg,
    )?;
    let root = &reports.dir;
    publish::check_outside_cache(root, cache.dir())?;
    let done = render(
        &plan,
        &registry,
        &cache,
        root,
        &reports.overrides_text(),
        &[],
    )?;
    reports.mark(&plan.spec().name)?;
    let command = compute_command(&plan, &args, reports_arg);
    if args.json {
        print_json(&serde_json::json!({
            "pipeline": plan.spec().name,
            "reports": done.tables.iter().map(|(name, table, dir)| serde_json::json!({
                "instance": name,
                "folder": dir,
                "table": table,
            })).collect::<Vec<_>>(),
            "missing": done.missing,
            "compute": if done.missing.is_empty() { None } else { Some(&command) },
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    for (name, table, dest) in &done.tables {
        println!("{name} (in {}):\n\n{table}", dest.display());
    }
    if done.rendered == 0 {
        eprintln!("{} has no report stage", plan.spec().file.display());
    }
    if !done.missing.is_empty() {
        // The tables list the missing instances themselves; say how to compute them.
        let n = done.missing.len();
        eprintln!(
            "{n} {} not run yet; compute {} with: {command}",
            if n == 1 {
                "instance has"
            } else {
                "instances have"
            },
            if n == 1 { "it" } else { "them" },
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `asymflow run FILE` with the overrides, cache and reports folder the user gave, ready to
/// paste: without `--cache` it would compute into another cache than the one just read.
fn compute_command(plan: &Plan, args: &PipelineArgs, reports: Option<&Path>) -> String {
    let path = |p: &Path| shell_quote(&p.to_string_lossy());
    let mut words = vec!["asymflow run".to_string(), path(&plan.spec().file)];
    let extra = overrides_text(&args.overrides);
    if !extra.is_empty() {
        words.push(extra);
    }
    if let Some(dir) = &args.cache.cache {
        words.push(format!("--cache {}", path(dir)));
    }
    if let Some(dir) = reports {
        words.push(format!("--reports {}", path(dir)));
    }
    words.join(" ")
}
