//! `asymflow plan FILE [STAGE...]`: every instance, cached or to run, and why, without running
//! anything. Named stages narrow it to them and what they need, exactly as `run` narrows (one
//! function, `load_plan_of`, does both), so a plan of a large validation pipeline can show the
//! one round a run is about to compute.
//!
//! It says what it can know before running: an instance whose data cannot be read (a missing
//! weight file or data folder its params name) is "cannot run", and the command then exits
//! with [`exit::STAGE_FAILED`]. `--json` adds each instance's resolved params. Where there is
//! no cache yet it plans against an empty one and creates nothing. With `--executor slurm`
//! each instance to run says where it would run: as a Slurm job with the resources the
//! project's profile gives its class (partition, gres or gpus, time, mem), or here, and the
//! plan says how many GPU-hours the jobs request.
//!
//! It estimates how long the instances to run take here, from the recorded durations of
//! similar results ([`crate::exec::estimate`]): "41 to run, about 9 min here (from 12 similar
//! results)".

use std::process::ExitCode;

use super::common::{cache_for, load_plan_of, planning_cache, print_json, registry};
use super::run::{slurm_profile, ExecutorChoice};
use super::{exit, output, PlanArgs};
use crate::exec::estimate;
use crate::exec::plan_status::{cannot_run, PlannedInstance};
use crate::exec::plan_status_with;
use crate::exec::slurm::SlurmProfile;
use crate::kind::Registry;

/// Prints the plan.
pub fn plan(args: PlanArgs) -> anyhow::Result<ExitCode> {
    let PlanArgs {
        pipeline: args,
        executor,
        stages,
        offline,
    } = args;
    let registry = registry();
    let plan = load_plan_of(&args, &registry, &stages)?;
    let profile = match executor {
        ExecutorChoice::Local => None,
        ExecutorChoice::Slurm => Some(slurm_profile(&plan.spec().project_dir)?),
    };
    let (cache, scratch) = planning_cache(cache_for(&args.cache, &plan.spec().project_dir))?;
    let remote = super::remote::remote_for(&plan.spec().project_dir, offline, false)?;
    let planned = plan_status_with(&plan, &registry, &cache, remote.as_deref())?;
    let blocked = planned.iter().filter(|p| cannot_run(p)).count();
    let code = if blocked > 0 {
        ExitCode::from(exit::STAGE_FAILED)
    } else {
        ExitCode::SUCCESS
    };
    let estimate = estimate::of_planned(&cache.index()?, &registry, &planned)?;
    let places: Vec<Option<Place>> = planned
        .iter()
        .map(|p| place(p, &registry, profile.as_ref()))
        .collect();
    if args.json {
        let mut instances = serde_json::to_value(&planned)?;
        if profile.is_some() {
            if let Some(list) = instances.as_array_mut() {
                for (entry, place) in list.iter_mut().zip(&places) {
                    entry["runs_on"] = serde_json::to_value(place)?;
                }
            }
        }
        let mut doc = serde_json::json!({
            "pipeline": plan.spec().name,
            "cache": if scratch.is_some() { None } else { Some(cache.dir()) },
            "instances": instances,
            "estimate": estimate,
        });
        if profile.is_some() {
            doc["slurm_request"] = serde_json::to_value(requested(&places))?;
        }
        if !plan.searches().is_empty() {
            doc["searches"] = serde_json::to_value(plan.searches())?;
        }
        let readers = crate::exec::lineage::test_readers(&plan);
        if !readers.is_empty() {
            doc["reads_test_images"] = serde_json::to_value(&readers)?;
        }
        print_json(&doc)?;
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
    for (p, place) in planned.iter().zip(&places) {
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
            if let (Some(place), Some(profile)) = (place, &profile) {
                println!(
                    "{:pad$}  on {}",
                    "",
                    place.describe(profile),
                    pad = width + 12
                );
            }
        }
    }
    print_searches(&plan, width);
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
    if estimate.to_run > 0 {
        println!("{}", estimate.describe());
    }
    if profile.is_some() {
        let slurm = places
            .iter()
            .filter(|p| matches!(p, Some(Place::Slurm { .. })))
            .count();
        let local = places
            .iter()
            .filter(|p| matches!(p, Some(Place::Local { .. })))
            .count();
        println!(
            "--executor slurm: {} to Slurm, {local} here{}",
            count(slurm, "job", "jobs"),
            describe_request(&requested(&places))
        );
    }
    Ok(code)
}

/// What the Slurm jobs of a plan request.
fn requested(places: &[Option<Place>]) -> estimate::GpuHours {
    estimate::gpu_hours(places.iter().filter_map(|p| match p {
        Some(Place::Slurm { request, .. }) => Some(request),
        _ => None,
    }))
}

/// `; they request 12 GPU-hours (time limit x GPUs of 6 jobs)`, or nothing without GPU jobs.
fn describe_request(hours: &estimate::GpuHours) -> String {
    if hours.gpu_jobs == 0 {
        return String::new();
    }
    let counted = hours.gpu_jobs - hours.unlimited;
    let mut text = format!(
        "; they request {:.1} GPU-hours (time limit x GPUs of {})",
        hours.gpu_hours,
        count(counted, "job", "jobs")
    );
    if hours.unlimited > 0 {
        text.push_str(&format!(
            "; {} without a time limit not counted",
            count(hours.unlimited, "GPU job", "GPU jobs")
        ));
    }
    text
}

/// The stages waiting for a search's winner, where each search stands, and which stages read
/// test images.
fn print_searches(plan: &crate::graph::Plan, width: usize) {
    for search in plan.searches() {
        for stage in &search.waiting {
            println!(
                "{}       {stage:width$}  waits for search {}",
                output::status_word("waits"),
                search.name
            );
        }
    }
    for search in plan.searches() {
        let known = search
            .trials
            .iter()
            .filter(|t| t.objective.is_some())
            .count();
        println!(
            "\nsearch {}: {known} of {} trials finished ({}; objective {} {}, mean over {})",
            search.name,
            search.trials_wanted,
            search.sampler,
            search.objective,
            search.goal,
            search.mean_over_text()
        );
        if let Some(winner) = search.winner() {
            println!("  winner: {}", search.describe_trial(winner));
        }
    }
    let readers = crate::exec::lineage::test_readers(plan);
    if !readers.is_empty() {
        let list: Vec<String> = readers.iter().map(|(s, w)| format!("{s} ({w})")).collect();
        println!("\nreads test images: {}", list.join(", "));
    }
}

/// Where an instance to run would run under `--executor slurm`.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(tag = "executor", rename_all = "lowercase")]
enum Place {
    /// As a Slurm job with these `sbatch` options.
    Slurm {
        /// Its resource class.
        class: crate::kind::Resource,
        /// The options.
        request: crate::exec::slurm::Request,
    },
    /// On this machine.
    Local {
        /// Its resource class.
        class: crate::kind::Resource,
    },
}

impl Place {
    /// `Slurm (partition=gpu gres=gpu:1 ...)` or `local (...)`.
    fn describe(&self, profile: &SlurmProfile) -> String {
        match self {
            Place::Slurm { class, .. } | Place::Local { class } => profile.placement(*class),
        }
    }
}

/// Where `p` would run with `profile`: `None` for what needs no run (cached, on the remote,
/// cannot run) or without a profile.
fn place(
    p: &PlannedInstance,
    registry: &Registry,
    profile: Option<&SlurmProfile>,
) -> Option<Place> {
    let profile = profile?;
    if p.status != "to-run" || cannot_run(p) {
        return None;
    }
    let class = registry.get(&p.kind)?.resource(&p.params);
    Some(if profile.submits(class) {
        Place::Slurm {
            class,
            request: profile.request(class),
        }
    } else {
        Place::Local { class }
    })
}

/// `1 instance`, `2 instances`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
