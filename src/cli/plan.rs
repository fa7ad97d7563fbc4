//! `asymflow plan FILE`: every instance, cached or to run, and why.

use std::process::ExitCode;

use super::common::{cache_for, label, load_plan, print_json, registry};
use super::PipelineArgs;
use crate::exec::plan_status;

/// Prints the plan.
pub fn plan(args: PipelineArgs) -> anyhow::Result<ExitCode> {
    let registry = registry();
    let plan = load_plan(&args, &registry)?;
    let cache = cache_for(&args.cache, &plan.spec().project_dir);
    let planned = plan_status(&plan, &registry, &cache)?;
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
        } else {
            println!("to-run  {name:width$}  {}", p.reason);
        }
    }
    let cached = planned.iter().filter(|p| p.status == "cached").count();
    println!(
        "\n{} instances: {cached} cached, {} to run",
        planned.len(),
        planned.len() - cached
    );
    Ok(ExitCode::SUCCESS)
}
