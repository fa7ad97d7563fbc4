//! Reports rendered from what the cache holds, without running anything: each report
//! instance gets every upstream instance the cache holds; those that have not run are passed
//! with empty metrics and outputs, so their cells show as missing (each table lists them).
//! `asymflow report` renders every report this way, and a run with `--keep-going` the
//! reports a failure kept from running.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use super::plan_status;
use super::publish;
use super::reports_root::{note_overrides, report_folder};
use super::scheduler::artifact;
use crate::cache::Cache;
use crate::graph::{label_of, Plan};
use crate::kind::{InputArtifact, Registry, StageContext};

/// What [`render`] produced.
#[derive(Debug, Default, serde::Serialize)]
pub(crate) struct Rendered {
    /// (instance label, `table.md`, folder) per report with a table.
    pub tables: Vec<(String, String, PathBuf)>,
    /// Upstream instances that have not run, sorted, each once.
    pub missing: Vec<String>,
    /// How many report instances were rendered.
    pub rendered: usize,
}

/// Renders the report instances of `plan` (those labelled in `only`, or all when it is empty)
/// from what the cache holds, into `root/FOLDER/`, noting the overrides (`overrides`, as
/// typed) under each table.
pub fn render(
    plan: &Plan,
    registry: &Registry,
    cache: &Cache,
    root: &Path,
    overrides: &str,
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
                            binding: up.binding.to_map(),
                            params: (*up.params).clone(),
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
        let dest = report_folder(root, &inst.stage, &inst.binding);
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
                .push((label_of(&inst.stage, &inst.binding), table, dest));
        }
    }
    done.missing.sort();
    done.missing.dedup();
    Ok(done)
}
