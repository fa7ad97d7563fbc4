//! `asymflow show FILE STAGE` or `asymflow show KEY`: params, inputs, outputs, metrics, times.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail};

use super::common::{cache_for, cache_here, label, load_plan, print_json, registry};
use super::status::human_bytes;
use super::{CacheArgs, OverrideArgs, PipelineArgs};
use crate::cache::{Cache, RunRecord, StageKey};
use crate::exec::plan_status;

/// Shows a stage's instances or one key.
pub fn show(
    target: Vec<String>,
    overrides: OverrideArgs,
    json: bool,
    cache: CacheArgs,
) -> anyhow::Result<ExitCode> {
    if let [file, stage] = target.as_slice() {
        let common = PipelineArgs {
            file: PathBuf::from(file),
            overrides,
            json,
            cache,
        };
        let registry = registry();
        let plan = load_plan(&common, &registry)?;
        if plan.spec().stage(stage).is_none() {
            bail!("no stage `{stage}` in {file}");
        }
        let cache = cache_for(&common.cache, &plan.spec().project_dir);
        let planned = plan_status(&plan, &registry, &cache)?;
        let mut shown = Vec::new();
        for p in planned.iter().filter(|p| &p.stage == stage) {
            let name = label(&p.stage, &p.binding);
            match &p.record {
                Some(record) => shown.push(describe(&cache, &name, record, common.json)?),
                None => {
                    if !common.json {
                        println!("{name}: not computed ({})\n", p.reason);
                    }
                    shown.push(serde_json::json!({ "instance": name, "status": "to-run", "reason": p.reason }));
                }
            }
        }
        if common.json {
            print_json(&shown)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let prefix = &target[0];
    let cache = cache_here(&cache)?;
    let index = cache.index()?;
    let matches = index.keys_with_prefix(prefix)?;
    let (key, stage) = match matches.as_slice() {
        [one] => one.clone(),
        [] => bail!("no result with key `{prefix}` in {}; to show a stage, give the pipeline file too: `asymflow show FILE STAGE`", cache.dir().display()),
        many => bail!("key prefix `{prefix}` is ambiguous ({} results); give more digits", many.len()),
    };
    let record = index.lookup(&key)?.ok_or_else(|| {
        anyhow!(
            "{stage} ({key}) failed: {}",
            index.failure(&key).ok().flatten().unwrap_or_default()
        )
    })?;
    let shown = describe(&cache, &stage, &record, json)?;
    if json {
        print_json(&shown)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn describe(
    cache: &Cache,
    name: &str,
    record: &RunRecord,
    json: bool,
) -> anyhow::Result<serde_json::Value> {
    let key: Option<StageKey> = serde_json::from_str(&record.key_json).ok();
    let provenance = cache.index()?.provenance(&record.key)?;
    let value = serde_json::json!({
        "instance": name,
        "key": record.key,
        "kind": record.kind,
        "params": key.as_ref().map(|k| &k.params),
        "inputs": key.as_ref().map(|k| &k.inputs),
        "outputs": record.outputs.iter().map(|(n, o)| (n.clone(), o.digest.clone())).collect::<std::collections::BTreeMap<_, _>>(),
        "metrics": record.metrics,
        "duration_s": record.duration,
        "finished": record.finished,
        "device": record.device,
        "provenance": provenance,
    });
    if json {
        return Ok(value);
    }
    println!(
        "{name}  ({} IMPL_VERSION {})",
        record.kind,
        key.as_ref().map_or(0, |k| k.impl_version)
    );
    println!("  key       {}", record.key);
    println!("  ran       {:.1}s on {}", record.duration, record.device);
    if let Some(p) = &provenance {
        let libtorch = if p.libtorch.is_empty() {
            String::new()
        } else {
            format!(", libtorch {}", p.libtorch)
        };
        println!(
            "  made by   asymflow {} ({}){libtorch}, {} threads on {}",
            p.asymflow, p.git_commit, p.threads, p.device
        );
    }
    if let Some(key) = &key {
        println!("  params");
        for (k, v) in &key.params {
            println!("    {k} = {v}");
        }
        if !key.inputs.is_empty() {
            println!("  inputs");
            for (slot, ups) in &key.inputs {
                println!("    {slot}: {} instance(s)", ups.len());
            }
        }
    }
    println!("  outputs");
    for (n, o) in &record.outputs {
        let size = cache.objects().size_of(&o.digest).unwrap_or(0);
        println!(
            "    {n:24} {}  {}",
            crate::cache::short_key(&o.digest),
            human_bytes(size)
        );
    }
    if let Some(split) = record.outputs.get(crate::data::MANIFEST_OUTPUT) {
        if let Ok(manifest) = cache
            .objects()
            .open_verified(&split.digest)
            .map_err(anyhow::Error::from)
            .and_then(|p| Ok(crate::data::SplitManifest::read(&p)?))
        {
            println!("  split");
            for line in manifest.summary().lines() {
                println!("    {line}");
            }
        }
    }
    if !record.metrics.is_empty() {
        println!("  metrics");
        for (k, v) in &record.metrics {
            println!("    {k} = {v}");
        }
    }
    println!();
    Ok(value)
}
