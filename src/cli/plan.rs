//! `asymflow plan FILE`: every instance, cached or to run, and why.

use std::process::ExitCode;

use super::common::{cache_for, label, load_plan, print_json, registry};
use super::PipelineArgs;
use crate::exec::plan_status_with;

/// Prints the plan.
pub fn plan(args: PipelineArgs) -> anyhow::Result<ExitCode> {
    let registry = registry();
    let plan = load_plan(&args, &registry)?;
    let cache = cache_for(&args.cache, &plan.spec().project_dir);
    let remote = super::remote::remote_for(&plan.spec().project_dir, false, false)?;
    let planned = plan_status_with(&plan, &registry, &cache, remote.as_deref())?;
    if args.json {
        print_json(&serde_json::json!({ "pipeline": plan.spec().name, "instances": planned }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let width = planned
        .iter()
        .map(|p| label(&p.stage, &p.binding).len())
        .max()
        .unwrap_or(0);
    for p in &planned {
        let name = label(&p.stage, &p.binding);
        if p.status == "cached" {
            println!("cached  {name}");
        } else if p.status == "on-remote" {
            println!("remote  {name:width$}  on the team's remote (run pulls it)");
        } else {
            println!("to-run  {name:width$}  {}", p.reason);
        }
    }
    let count = |status: &str| planned.iter().filter(|p| p.status == status).count();
    println!(
        "\n{} instances: {} cached, {} on remote, {} to run",
        planned.len(),
        count("cached"),
        count("on-remote"),
        count("to-run")
    );
    Ok(ExitCode::SUCCESS)
}
