//! `asymflow report FILE`: render a pipeline's reports from the cache alone.
//!
//! Nothing is trained. Each report instance gets every upstream instance the cache holds;
//! those that have not run are passed with empty metrics and outputs, so their cells show as
//! missing (each table lists them), and the command says how to compute them.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use super::common::{cache_for, label, load_plan, registry, reports_dir};
use super::PipelineArgs;
use crate::exec::scheduler::artifact;
use crate::exec::{plan_status, publish};
use crate::kind::{InputArtifact, StageContext};

/// Renders every report of the pipeline into `reports/PIPELINE/`.
pub fn report(args: PipelineArgs) -> anyhow::Result<ExitCode> {
    let registry = registry();
    let plan = load_plan(&args, &registry)?;
    let cache = cache_for(&args.cache, &plan.spec().project_dir);
    let planned = plan_status(&plan, &registry, &cache)?;
    let mut missing = Vec::new();
    let mut rendered = 0;
    for inst in plan.instances() {
        let Some(kind) = registry.get(&inst.kind) else {
            continue;
        };
        if !kind.publishes() {
            continue;
        }
        let mut inputs: BTreeMap<String, Vec<InputArtifact>> = BTreeMap::new();
        for (slot, ups) in &inst.inputs {
            let mut list = Vec::new();
            for &u in ups {
                let up = &plan.instances()[u];
                match &planned[u].record {
                    Some(record) => {
                        let mut a = artifact(&plan, u, record);
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
                        missing.push(up.label());
                        list.push(InputArtifact {
                            stage: up.stage.clone(),
                            kind: up.kind.clone(),
                            binding: up.binding.clone(),
                            params: up.params.clone(),
                            key: String::new(),
                            outputs: BTreeMap::new(),
                            metrics: BTreeMap::new(),
                        });
                    }
                }
            }
            inputs.insert(slot.clone(), list);
        }
        let folder = if inst.binding.is_empty() {
            inst.stage.clone()
        } else {
            label(&inst.stage, &inst.binding)
        };
        let dest = reports_dir(&plan.spec().project_dir, &plan.spec().name)
            .join(publish::folder_name(&folder));
        let staging = publish::staging_dir(&dest)?;
        let cancel = AtomicBool::new(false);
        let mut ctx = StageContext::new(
            &inst.stage,
            &inst.params,
            &inputs,
            staging.path().to_path_buf(),
            &plan.spec().project_dir,
            tch::Device::Cpu,
            &cancel,
            None,
        );
        kind.run(&mut ctx)
            .map_err(|e| anyhow::anyhow!("rendering {}: {e}", inst.label()))?;
        drop(ctx);
        let _ = std::fs::remove_file(staging.path().join(crate::kind::LOG_OUTPUT));
        publish::install_dir(staging, &dest)?;
        rendered += 1;
        if let Ok(table) = std::fs::read_to_string(dest.join("table.md")) {
            println!("{} (in {}):\n\n{table}", inst.label(), dest.display());
        }
    }
    missing.sort();
    missing.dedup();
    if rendered == 0 {
        eprintln!("{} has no report stage", plan.spec().file.display());
    }
    if !missing.is_empty() {
        // The tables list the missing instances themselves; say how to compute them.
        eprintln!(
            "{} instances have not run yet; compute them with: asymflow run {}",
            missing.len(),
            plan.spec().file.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
