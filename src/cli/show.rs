//! `asymflow show FILE STAGE` or `asymflow show KEY`: params, inputs, outputs, metrics, times.
//!
//! `STAGE` may be one instance's label (`model[seed=0]`). The params shown are those the stage
//! receives (templates, vars, sweep values and `--set` applied), also for an instance that has
//! not run; outputs are listed by the path of their object in the cache, a file the user can
//! open or copy, and a result computed as a cluster job lists that job's log.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail};

use super::args::{CacheArgs, OverrideArgs, PipelineArgs};
use super::common::{
    cache_for, cache_here, existing_cache, load_plan, planning_cache, print_json, registry,
};
use super::status::human_bytes;
use crate::cache::{Cache, RunRecord, StageKey};
use crate::exec::plan_status;

/// Shows a stage's instances or one key.
pub fn show(
    target: Vec<String>,
    overrides: OverrideArgs,
    json: bool,
    cache: CacheArgs,
) -> anyhow::Result<ExitCode> {
    if let [file, wanted] = target.as_slice() {
        let common = PipelineArgs {
            file: PathBuf::from(file),
            overrides,
            json,
            cache,
        };
        let registry = registry();
        let plan = load_plan(&common, &registry)?;
        let selected = crate::select::chosen(&plan, std::slice::from_ref(wanted), "")?;
        let (cache, _scratch) = planning_cache(cache_for(&common.cache, &plan.spec().project_dir))?;
        let planned = plan_status(&plan, &registry, &cache)?;
        let chosen: Vec<_> = planned
            .iter()
            .enumerate()
            .filter(|(i, _)| selected.contains(i))
            .map(|(_, p)| p)
            .collect();
        let mut shown = Vec::new();
        for p in chosen {
            match &p.record {
                Some(record) => shown.push(describe(
                    &cache,
                    &p.label,
                    record,
                    Some(&*p.params),
                    common.json,
                )?),
                None => {
                    if !common.json {
                        println!("{}: not computed ({})", p.label, p.reason);
                        println!("  kind      {}", p.kind);
                        print_params(&p.params.0);
                        println!();
                    }
                    shown.push(serde_json::json!({
                        "instance": p.label,
                        "kind": p.kind,
                        "status": "to-run",
                        "reason": p.reason,
                        "params": p.params,
                    }));
                }
            }
        }
        if common.json {
            print_json(&shown)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let prefix = &target[0];
    let cache = existing_cache(cache_here(&cache)?)?;
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
    let shown = describe(&cache, &stage, &record, None, json)?;
    if json {
        print_json(&shown)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn print_params(params: &std::collections::BTreeMap<String, serde_json::Value>) {
    println!("  params");
    for (k, v) in params {
        println!("    {k} = {v}");
    }
}

/// Prints (or returns as JSON) one result. `resolved` is the instance's params from the
/// pipeline (paths included); without it the params come from the key (paths are not in it).
fn describe(
    cache: &Cache,
    name: &str,
    record: &RunRecord,
    resolved: Option<&crate::kind::Params>,
    json: bool,
) -> anyhow::Result<serde_json::Value> {
    let key: Option<StageKey> = serde_json::from_str(&record.key_json).ok();
    let params = resolved
        .map(|p| p.0.clone())
        .or_else(|| key.as_ref().map(|k| k.params.clone()));
    let outputs: std::collections::BTreeMap<_, _> = record
        .outputs
        .iter()
        .map(|(n, o)| {
            (
                n.clone(),
                serde_json::json!({
                    "digest": o.digest,
                    "path": cache.objects().local_path(&o.digest),
                    "is_dir": o.is_dir,
                }),
            )
        })
        .collect();
    let provenance = cache.index()?.provenance(&record.key)?;
    let job_logs = crate::exec::choice::job_logs(cache.dir(), &record.key);
    let mut value = serde_json::json!({
        "instance": name,
        "key": record.key,
        "kind": record.kind,
        "params": params,
        "inputs": key.as_ref().map(|k| &k.inputs),
        "outputs": outputs,
        "metrics": record.metrics,
        "duration_s": record.duration,
        "finished": record.finished,
        "device": record.device,
        "provenance": provenance,
    });
    for logs in &job_logs {
        value[format!("{}_logs", logs.executor)] = serde_json::to_value(&logs.paths)?;
    }
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
    if let Some(params) = &params {
        print_params(params);
    }
    if let Some(p) = &provenance {
        print_provenance(p);
    }
    if let Some(key) = &key {
        if !key.inputs.is_empty() {
            println!("  inputs");
            for (slot, ups) in &key.inputs {
                println!(
                    "    {slot}: {}",
                    super::output::count(ups.len(), "instance", "instances")
                );
            }
        }
    }
    print_outputs(cache, record);
    for logs in &job_logs {
        for log in &logs.paths {
            println!("  {} log {}", logs.executor, log.display());
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

/// Where and with what the result was made, and its telemetry.
fn print_provenance(p: &crate::cache::Provenance) {
    let libtorch = if p.libtorch.is_empty() {
        String::new()
    } else {
        format!(", libtorch {}", p.libtorch)
    };
    println!(
        "  made by   asymflow {} ({}){libtorch}, {} threads on {}{}{}",
        p.asymflow,
        p.git_commit,
        p.threads,
        p.device,
        if p.host.is_empty() {
            String::new()
        } else {
            format!(" at {}", p.host)
        },
        if p.runner.is_empty() {
            String::new()
        } else {
            format!(" ({})", p.runner)
        },
    );
    if !p.telemetry.is_empty() {
        let items: Vec<String> = p
            .telemetry
            .iter()
            .map(|(k, v)| format!("{k} {v:.4}"))
            .collect();
        println!("  telemetry {}", items.join(", "));
    }
}

/// Each output's size and object path, and a split's summary.
fn print_outputs(cache: &Cache, record: &RunRecord) {
    println!("  outputs");
    for (n, o) in &record.outputs {
        let size = cache.objects().size_of(&o.digest).unwrap_or(0);
        let place = cache
            .objects()
            .local_path(&o.digest)
            .map_or_else(|| "(missing)".to_string(), |p| p.display().to_string());
        println!("    {n:24} {:>10}  {place}", human_bytes(size));
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
}
