//! `asymflow why FILE STAGE`: which key fields changed since each instance of a stage last ran.

use std::process::ExitCode;

use anyhow::anyhow;

use super::common::{cache_for, label, load_plan, registry};
use super::PipelineArgs;
use crate::exec::plan_status;
use crate::spec::error::closest;

/// Explains each instance of `stage`.
pub fn why(args: PipelineArgs, stage: &str) -> anyhow::Result<ExitCode> {
    let registry = registry();
    let plan = load_plan(&args, &registry)?;
    if plan.spec().stage(stage).is_none() {
        let names: Vec<&str> = plan.spec().stages.iter().map(|s| s.name.as_str()).collect();
        let hint = closest(stage, &names)
            .map(|c| format!(" (did you mean `{c}`?)"))
            .unwrap_or_default();
        return Err(anyhow!(
            "no stage `{stage}` in {}{hint}",
            plan.spec().file.display()
        ));
    }
    let cache = cache_for(&args.cache, &plan.spec().project_dir);
    let planned = plan_status(&plan, &registry, &cache)?;
    for p in planned.iter().filter(|p| p.stage == stage) {
        let name = label(&p.stage, &p.binding);
        if p.status == "cached" {
            println!("{name}: fresh (cached)");
        } else {
            println!("{name}: dirty");
            for reason in p.reason.split("; ") {
                println!("  {reason}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
