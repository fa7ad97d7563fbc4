//! `asymflow plan FILE [STAGE...]`: every instance, cached or to run, and why, without running
//! anything. Named stages narrow it to them and what they need, exactly as `run` narrows (one
//! function, `load_plan_of`, does both), so a plan of a large validation pipeline can show the
//! one round a run is about to compute.
//!
//! It says what it can know before running: an instance whose data cannot be read (a missing
//! weight file or data folder its params name) is "cannot run", and the command then exits
//! with [`exit::STAGE_FAILED`]. `--json` adds each instance's resolved params. Where there is
//! no cache yet it plans against an empty one and creates nothing. With an `--executor` other
//! than `local`, each instance to run says where it would run and the plan ends with what its
//! jobs request, as the executor's [`crate::exec::choice::Placement`] words it.
//!
//! It estimates how long the instances to run take here, from the recorded durations of
//! similar results ([`crate::exec::estimate`]): "41 to run, about 9 min here (from 12 similar
//! results)".

//! Each training instance to run also says the peak device memory its step is estimated to
//! need ([`crate::exec::memory`]), and with `--device-memory` one that exceeds it is flagged
//! with a setting that fits.

use std::io::Write;
use std::process::ExitCode;

use super::args::PlanArgs;
use super::common::{cache_for, load_plan_of, planning_cache, print_json, registry};
use super::output::count;
use super::plan_memory as memory;
use super::{exit, output};
use crate::exec::choice::Placement;
use crate::exec::estimate;
use crate::exec::plan_status::{cannot_run, PlannedInstance};
use crate::exec::plan_status_with;
use crate::graph::Plan;
use crate::kind::{Registry, Resource};

/// Prints the plan.
pub fn plan(args: PlanArgs) -> anyhow::Result<ExitCode> {
    let PlanArgs {
        pipeline: args,
        executor,
        stages,
        offline,
        device_memory,
    } = args;
    let registry = registry();
    let plan = load_plan_of(&args, &registry, &stages)?;
    let placement = executor.placement(&plan.spec().project_dir)?;
    let (cache, scratch) = planning_cache(cache_for(&args.cache, &plan.spec().project_dir))?;
    let remote =
        crate::exec::run::open_remote(&plan.spec().project_dir, offline, false, &registry)?;
    let planned = plan_status_with(&plan, &registry, &cache, remote.as_deref())?;
    let shown = Shown {
        estimate: estimate::of_planned(&cache.index()?, &registry, &planned)?,
        classes: planned.iter().map(|p| class(p, &registry)).collect(),
        blocked: planned.iter().filter(|p| cannot_run(p)).count(),
        memory: memory::of_plan(&plan, &planned, device_memory),
        plan,
        planned,
        placement,
    };
    let code = if shown.blocked > 0 {
        ExitCode::from(exit::STAGE_FAILED)
    } else {
        ExitCode::SUCCESS
    };
    if args.json {
        print_plan_json(&shown, scratch.is_none().then(|| cache.dir()))?;
    } else {
        if scratch.is_some() && !output::quiet() {
            let wanted = cache_for(&args.cache, &shown.plan.spec().project_dir);
            eprintln!(
                "no cache at {} yet: every instance is new (use --cache to name another)",
                wanted.dir().display()
            );
        }
        print_plan_text(&shown)?;
    }
    // The command ends here and its process with it: freeing a plan of 100,000 instances one
    // allocation at a time was a tenth of `plan`'s time, memory the system takes back at once.
    std::mem::forget(shown);
    Ok(code)
}

/// What `plan` shows: each instance's status and resource class, and what they add up to.
struct Shown {
    plan: Plan,
    planned: Vec<PlannedInstance>,
    /// The class of each instance to run (`None` for the others).
    classes: Vec<Option<Resource>>,
    /// Where the executor chosen would run them (`None`: here).
    placement: Option<Box<dyn Placement>>,
    estimate: estimate::Estimate,
    /// Instances that cannot run.
    blocked: usize,
    /// The memory estimate of each training instance to run.
    memory: Vec<Option<memory::Shown>>,
}

/// `plan --json`: `cache` is the cache planned against (`None`: there is none yet).
fn print_plan_json(shown: &Shown, cache: Option<&std::path::Path>) -> anyhow::Result<()> {
    let plan = &shown.plan;
    let mut instances = serde_json::to_value(&shown.planned)?;
    if let Some(placement) = &shown.placement {
        if let Some(list) = instances.as_array_mut() {
            for (entry, class) in list.iter_mut().zip(&shown.classes) {
                entry["runs_on"] = class.map_or(serde_json::Value::Null, |c| placement.runs_on(c));
            }
        }
    }
    if let Some(list) = instances.as_array_mut() {
        for (entry, memory) in list.iter_mut().zip(&shown.memory) {
            if let Some(memory) = memory {
                entry["memory"] = memory.json();
            }
        }
    }
    let mut doc = serde_json::json!({
        "pipeline": plan.spec().name,
        "cache": cache,
        "instances": instances,
        "estimate": shown.estimate,
    });
    if let Some(placement) = &shown.placement {
        let totals = placement.totals(&to_run(&shown.classes));
        doc[totals.field] = totals.json;
    }
    if !plan.searches().is_empty() {
        doc["searches"] = serde_json::to_value(plan.searches())?;
    }
    let readers = crate::exec::lineage::test_readers(plan);
    if !readers.is_empty() {
        doc["reads_test_images"] = serde_json::to_value(&readers)?;
    }
    print_json(&doc)
}

/// `plan` as text: one line per instance, the searches, then the totals. Written through one
/// buffer: a line at a time, a 100,000-instance plan made as many writes.
fn print_plan_text(shown: &Shown) -> std::io::Result<()> {
    let out = &mut std::io::BufWriter::new(std::io::stdout().lock());
    let planned = &shown.planned;
    let width = planned.iter().map(|p| p.label.len()).max().unwrap_or(0);
    for ((p, class), memory) in planned.iter().zip(&shown.classes).zip(&shown.memory) {
        print_instance(out, p, width)?;
        if let Some(memory) = memory {
            for line in memory.lines() {
                writeln!(out, "{:pad$}  {line}", "", pad = width + 12)?;
            }
        }
        if let (Some(class), Some(placement)) = (class, &shown.placement) {
            writeln!(
                out,
                "{:pad$}  on {}",
                "",
                placement.describe(*class),
                pad = width + 12
            )?;
        }
    }
    print_searches(out, &shown.plan, width)?;
    let n = |status: &str| planned.iter().filter(|p| p.status == status).count();
    writeln!(
        out,
        "\n{}: {} cached, {} on remote, {} to run{}",
        count(planned.len(), "instance", "instances"),
        n("cached"),
        n("on-remote"),
        planned.len() - n("cached") - n("on-remote"),
        if shown.blocked > 0 {
            format!(
                " ({} cannot run: fix the data or params named above)",
                shown.blocked
            )
        } else {
            String::new()
        }
    )?;
    if shown.estimate.to_run > 0 {
        writeln!(out, "{}", shown.estimate.describe())?;
    }
    if let Some(placement) = &shown.placement {
        writeln!(out, "{}", placement.totals(&to_run(&shown.classes)).line)?;
    }
    out.flush()
}

/// One instance's line: its status, label and why.
fn print_instance(out: &mut impl Write, p: &PlannedInstance, width: usize) -> std::io::Result<()> {
    let name = &p.label;
    if p.status == "cached" {
        writeln!(out, "{}      {name}", output::status_word("cached"))
    } else if cannot_run(p) {
        writeln!(
            out,
            "{}  {name:width$}  {}",
            output::status_word("cannot-run"),
            p.reason
        )
    } else if p.status == "on-remote" {
        writeln!(
            out,
            "{}      {name:width$}  on the team's remote (run pulls it)",
            output::status_word("remote")
        )
    } else {
        writeln!(
            out,
            "{}      {name:width$}  {}",
            output::status_word("to-run"),
            p.reason
        )
    }
}

/// The classes of the instances to run.
fn to_run(classes: &[Option<Resource>]) -> Vec<Resource> {
    classes.iter().flatten().copied().collect()
}

/// The stages waiting for a search's winner, where each search stands, and which stages read
/// test images.
fn print_searches(out: &mut impl Write, plan: &Plan, width: usize) -> std::io::Result<()> {
    for search in plan.searches() {
        for stage in &search.waiting {
            writeln!(
                out,
                "{}       {stage:width$}  waits for search {}",
                output::status_word("waits"),
                search.name
            )?;
        }
    }
    for search in plan.searches() {
        let known = search
            .trials
            .iter()
            .filter(|t| t.objective.is_some())
            .count();
        writeln!(
            out,
            "\nsearch {}: {known} of {} trials finished ({}; objective {} {}, mean over {})",
            search.name,
            search.trials_wanted,
            search.sampler,
            search.objective,
            search.goal,
            search.mean_over_text()
        )?;
        if let Some(winner) = search.winner() {
            writeln!(out, "  winner: {}", search.describe_trial(winner))?;
        }
    }
    let readers = crate::exec::lineage::test_readers(plan);
    if !readers.is_empty() {
        let list: Vec<String> = readers.iter().map(|(s, w)| format!("{s} ({w})")).collect();
        writeln!(out, "\nreads test images: {}", list.join(", "))?;
    }
    Ok(())
}

/// The resource class of `p` when it is to run: `None` for what needs no run (cached, on the
/// remote, cannot run).
fn class(p: &PlannedInstance, registry: &Registry) -> Option<Resource> {
    if p.status != "to-run" || cannot_run(p) {
        return None;
    }
    Some(registry.get(&p.kind)?.resource(&p.params))
}
