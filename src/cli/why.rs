//! `asymflow why FILE STAGE`: which key fields changed since each instance of a stage last ran.
//! `STAGE` may be one instance's label (`model[seed=0]`), as printed everywhere.

use std::process::ExitCode;

use super::args::PipelineArgs;
use super::common::{cache_for, load_plan, planning_cache, registry};
use super::output;
use crate::exec::plan_status;

/// Explains each instance of `stage`.
pub fn why(args: PipelineArgs, target: &str) -> anyhow::Result<ExitCode> {
    let stage = crate::select::stage_of(target);
    let registry = registry();
    let plan = load_plan(&args, &registry)?;
    let wanted = crate::select::chosen(&plan, &[target.to_string()], "")?;
    if let Some(search) = plan
        .searches()
        .iter()
        .find(|s| s.waiting.iter().any(|w| w == stage))
    {
        let finished = search
            .trials
            .iter()
            .filter(|t| t.objective.is_some())
            .count();
        println!(
            "{stage}: waits for search {} ({finished} of {} trials finished; `asymflow run` \
             finishes it)",
            search.name, search.trials_wanted
        );
        return Ok(ExitCode::SUCCESS);
    }
    let (cache, _scratch) = planning_cache(cache_for(&args.cache, &plan.spec().project_dir))?;
    let planned = plan_status(&plan, &registry, &cache)?;
    let chosen: Vec<_> = planned
        .iter()
        .enumerate()
        .filter(|(i, _)| wanted.contains(i))
        .map(|(_, p)| p)
        .collect();
    if args.json {
        let doc: Vec<serde_json::Value> = chosen
            .iter()
            .map(|p| {
                serde_json::json!({
                    "label": p.label,
                    "status": p.status,
                    "key": p.key,
                    "reasons": p.reasons,
                    "reason": p.reason,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    for search in plan
        .searches()
        .iter()
        .filter(|s| s.takers.iter().any(|t| t == stage))
    {
        if let Some(winner) = search.winner() {
            println!(
                "{stage} takes the winner of search {}: {}",
                search.name,
                search.describe_trial(winner)
            );
        }
    }
    for p in chosen {
        let name = &p.label;
        if p.status == "cached" {
            println!("{name}: {} (cached)", output::status_word("fresh"));
        } else {
            println!("{name}: {}", output::status_word("dirty"));
            for reason in p.reason.split("; ") {
                println!("  {reason}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
