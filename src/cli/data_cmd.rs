//! `asymflow data export FILE STAGE OUT`: a split stage's data as an ImageFolder tree of PNGs.
//!
//! The split is computed in a scratch folder (it is cheap and this way the command works on a
//! fresh cache too); every partition, or the one named with `--partition`, is written under
//! `OUT/PARTITION/CLASS/NAME.png`. `--json` prints what was written as one document.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use anyhow::{anyhow, bail, Context};

use super::args::PipelineArgs;
use super::common::{load_plan, print_json, registry};
use crate::data::{export_image_folder, SplitManifest};
use crate::kind::StageContext;

/// Exports the data of split stage `stage`.
pub fn export(
    args: PipelineArgs,
    stage: &str,
    out: &Path,
    partition: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let registry = registry();
    let plan = load_plan(&args, &registry)?;
    let spec = plan.spec();
    let stage_spec = spec
        .stage(stage)
        .ok_or_else(|| anyhow!("no stage `{stage}` in {}", spec.file.display()))?;
    if stage_spec.kind != "split" {
        bail!(
            "stage `{stage}` is of kind `{}`; `data export` needs a `split` stage",
            stage_spec.kind
        );
    }
    let kind = registry.get("split").expect("split is a built-in kind");
    let mut written = Vec::new();
    for inst in plan.instances_of(stage) {
        let scratch = tempfile::tempdir().context("scratch folder")?;
        let inputs = BTreeMap::new();
        let cancel = AtomicBool::new(false);
        let mut ctx = StageContext::new(
            &inst.stage,
            &inst.params,
            &inputs,
            scratch.path().to_path_buf(),
            &spec.project_dir,
            crate::kind::Device::Cpu,
            &cancel,
            None,
        );
        registry
            .runner(kind.kind())
            .ok_or_else(|| anyhow::anyhow!("kind {} cannot run in the engine", kind.kind()))?
            .run(&mut ctx)
            .map_err(|e| anyhow!("computing {}: {e}", inst.label()))?;
        drop(ctx);
        let manifest = SplitManifest::read(&scratch.path().join("split.json"))?;
        let dataset = manifest.open(&spec.project_dir)?;
        let dest = if plan.instances_of(stage).count() > 1 {
            out.join(inst.label())
        } else {
            out.to_path_buf()
        };
        let names: Vec<String> = match partition {
            Some(p) => vec![p.to_string()],
            None => manifest.partitions.keys().cloned().collect(),
        };
        for name in names {
            let items = manifest.partition(&name)?;
            let n = export_image_folder(dataset.as_ref(), items, &dest.join(&name))?;
            if !args.json {
                println!(
                    "{}: wrote {n} images of partition `{name}` to {}",
                    inst.label(),
                    dest.join(&name).display()
                );
            }
            written.push(serde_json::json!({
                "instance": inst.label(),
                "partition": name,
                "images": n,
                "folder": dest.join(&name),
            }));
        }
    }
    if args.json {
        print_json(&serde_json::json!({ "stage": stage, "written": written }))?;
    }
    Ok(ExitCode::SUCCESS)
}
