//! `asymflow plan FILE`: every instance, cached or to run, and why, without running anything.
//!
//! It says what it can know before running: an instance whose data cannot be read (a missing
//! weight file or data folder its params name) is "cannot run", and the command then exits
//! with [`exit::STAGE_FAILED`]. `--json` adds each instance's resolved params. Where there is
//! no cache yet it plans against an empty one and creates nothing.

use std::process::ExitCode;

use super::common::{cache_for, load_plan, planning_cache, print_json, registry};
use super::{exit, output, PipelineArgs};
use crate::exec::plan_status::cannot_run;
use crate::exec::plan_status_with;

/// Prints the plan.
pub fn plan(args: PipelineArgs) -> anyhow::Result<ExitCode> {
    let registry = registry();
    let plan = load_plan(&args, &registry)?;
    let (cache, scratch) = planning_cache(cache_for(&args.cache, &plan.spec().project_dir))?;
    let remote = super::remote::remote_for(&plan.spec().project_dir, false, false)?;
    let planned = plan_status_with(&plan, &registry, &cache, remote.as_deref())?;
    let blocked = planned.iter().filter(|p| cannot_run(p)).count();
    let code = if blocked > 0 {
        ExitCode::from(exit::STAGE_FAILED)
    } else {
        ExitCode::SUCCESS
    };
    if args.json {
        print_json(&serde_json::json!({
            "pipeline": plan.spec().name,
            "cache": if scratch.is_some() { None } else { Some(cache.dir()) },
            "instances": planned,
        }))?;
        return Ok(code);
    }
    if scratch.is_some() && !output::quiet() {
        let wanted = cache_for(&args.cache, &plan.spec().project_dir);
        eprintln!(
            "no cache at {} yet: every instance is new (use --cache to name another)",
            wanted.dir().display()
        );
    }
    let width = planned.iter().map(|p| p.label.len()).max().unwrap_or(0);
    for p in &planned {
        let name = &p.label;
        if p.status == "cached" {
            println!("{}      {name}", output::status_word("cached"));
        } else if cannot_run(p) {
            println!(
                "{}  {name:width$}  {}",
                output::status_word("cannot-run"),
                p.reason
            );
        } else if p.status == "on-remote" {
            println!(
                "{}      {name:width$}  on the team's remote (run pulls it)",
                output::status_word("remote")
            );
        } else {
            println!(
                "{}      {name:width$}  {}",
                output::status_word("to-run"),
                p.reason
            );
        }
    }
    let n = |status: &str| planned.iter().filter(|p| p.status == status).count();
    println!(
        "\n{}: {} cached, {} on remote, {} to run{}",
        count(planned.len(), "instance", "instances"),
        n("cached"),
        n("on-remote"),
        planned.len() - n("cached") - n("on-remote"),
        if blocked > 0 {
            format!(" ({blocked} cannot run: fix the data or params named above)")
        } else {
            String::new()
        }
    );
    Ok(code)
}

/// `1 instance`, `2 instances`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
