//! `asymflow why FILE STAGE`: which key fields changed since each instance of a stage last ran.
//! `STAGE` may be one instance's label (`model[seed=0]`), as printed everywhere.

use std::process::ExitCode;

use anyhow::anyhow;

use super::common::{
    cache_for, label_selects, load_plan, planning_cache, registry, stage_of_label,
};
use super::{output, PipelineArgs};
use crate::exec::plan_status;
use crate::spec::error::closest;

/// Explains each instance of `stage`.
pub fn why(args: PipelineArgs, target: &str) -> anyhow::Result<ExitCode> {
    let stage = stage_of_label(target);
    let registry = registry();
    let plan = load_plan(&args, &registry)?;
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
    let (cache, _scratch) = planning_cache(cache_for(&args.cache, &plan.spec().project_dir))?;
    let planned = plan_status(&plan, &registry, &cache)?;
    let chosen: Vec<_> = planned
        .iter()
        .filter(|p| label_selects(target, &p.label))
        .collect();
    if chosen.is_empty() {
        return Err(anyhow!(
            "no instance `{target}`; the instances of `{stage}` are: {}",
            planned
                .iter()
                .filter(|p| p.stage == stage)
                .map(|p| p.label.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
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
