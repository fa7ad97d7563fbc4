//! `asymflow report FILE`: render a pipeline's reports from the cache alone.
//!
//! Nothing is trained. Each report instance gets every upstream instance the cache holds;
//! those that have not run are passed with empty metrics and outputs, so their cells show as
//! missing (each table lists them), and the command says how to compute them, repeating the
//! user's overrides. `run --keep-going` renders the reports a failure kept from running
//! through [`render`] too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use super::common::{
    cache_for, existing_cache, label, load_plan, note_overrides, overrides_text, print_json,
    registry, reports_dir, shell_quote,
};
use super::{OverrideArgs, PipelineArgs};
use crate::cache::Cache;
use crate::exec::scheduler::artifact;
use crate::exec::{plan_status, publish};
use crate::graph::Plan;
use crate::kind::{InputArtifact, Registry, StageContext};

/// What [`render`] produced.
#[derive(Debug, Default, serde::Serialize)]
pub struct Rendered {
    /// (instance label, `table.md`, folder) per report with a table.
    pub tables: Vec<(String, String, PathBuf)>,
    /// Upstream instances that have not run, sorted, each once.
    pub missing: Vec<String>,
    /// How many report instances were rendered.
    pub rendered: usize,
}

/// Renders every report of the pipeline into `reports/PIPELINE/` (or `--reports DIR`).
pub fn report(args: PipelineArgs, reports_arg: Option<&Path>) -> anyhow::Result<ExitCode> {
    let registry = registry();
    let plan = load_plan(&args, &registry)?;
    let cache = existing_cache(cache_for(&args.cache, &plan.spec().project_dir))?;
    let reports = reports_dir(
        &args,
        &registry,
        &plan.spec().project_dir,
        &plan.spec().name,
        reports_arg,
    )?;
    let root = &reports.dir;
    publish::check_outside_cache(root, cache.dir())?;
    let done = render(&plan, &registry, &cache, root, &reports.overrides, &[])?;
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

/// Renders the report instances of `plan` (those labelled in `only`, or all when it is empty)
/// from what the cache holds, into `root/FOLDER/`, noting the overrides under each table.
pub fn render(
    plan: &Plan,
    registry: &Registry,
    cache: &Cache,
    root: &Path,
    overrides: &OverrideArgs,
    only: &[String],
) -> anyhow::Result<Rendered> {
    let planned = plan_status(plan, registry, cache)?;
    let mut done = Rendered::default();
    for inst in plan.instances() {
        let Some(kind) = registry.get(&inst.kind) else {
            continue;
        };
        if !kind.publishes() || (!only.is_empty() && !only.contains(&inst.label())) {
            continue;
        }
        let mut inputs: BTreeMap<String, Vec<InputArtifact>> = BTreeMap::new();
        for (slot, ups) in &inst.inputs {
            let mut list = Vec::new();
            for &u in ups {
                let up = &plan.instances()[u];
                match &planned[u].record {
                    Some(record) => {
                        let mut a = artifact(plan, u, record);
                        a.draws = plan.draws(u, registry);
                        for (name, output) in &record.outputs {
                            if !output.is_dir {
                                if let Ok(path) = cache.objects().open_verified(&output.digest) {
                                    a.outputs.insert(name.clone(), path);
                                }
                            }
                        }
                        list.push(a);
                    }
                    None => {
                        done.missing.push(up.label());
                        list.push(InputArtifact {
                            stage: up.stage.clone(),
                            kind: up.kind.clone(),
                            binding: up.binding.clone(),
                            params: up.params.clone(),
                            key: String::new(),
                            outputs: BTreeMap::new(),
                            metrics: BTreeMap::new(),
                            draws: plan.draws(u, registry),
                        });
                    }
                }
            }
            inputs.insert(slot.clone(), list);
        }
        let dest = super::run::report_folder(root, &inst.stage, &inst.binding);
        publish::check_replaceable(&dest)?;
        let staging = publish::staging_dir(&dest)?;
        let cancel = AtomicBool::new(false);
        let mut ctx = StageContext::new(
            &inst.stage,
            &inst.params,
            &inputs,
            staging.path().to_path_buf(),
            &plan.spec().project_dir,
            crate::kind::Device::Cpu,
            &cancel,
            None,
        );
        registry
            .runner(kind.kind())
            .ok_or_else(|| anyhow::anyhow!("kind {} cannot run in the engine", kind.kind()))?
            .run(&mut ctx)
            .map_err(|e| anyhow::anyhow!("rendering {}: {e}", inst.label()))?;
        drop(ctx);
        let _ = std::fs::remove_file(staging.path().join(crate::kind::LOG_OUTPUT));
        note_overrides(staging.path(), overrides)?;
        let instance = inst.label();
        let origin = publish::Origin {
            pipeline: &plan.spec().name,
            instance: &instance,
            source: publish::Source::Rendered,
        };
        publish::install_dir(staging, &dest, &origin)?;
        done.rendered += 1;
        if let Ok(table) = std::fs::read_to_string(dest.join("table.md")) {
            done.tables
                .push((label(&inst.stage, &inst.binding), table, dest));
        }
    }
    done.missing.sort();
    done.missing.dedup();
    Ok(done)
}
