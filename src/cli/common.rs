//! What the commands share: loading a pipeline with its overrides, finding the cache.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;

use super::{CacheArgs, PipelineArgs};
use crate::cache::Cache;
use crate::graph::Plan;
use crate::spec::{self, Override};
use crate::kind::Registry;

/// The registry the binary uses: every built-in kind, plus the test kinds when
/// `ASYMFLOW_TEST_KINDS=1` (for the engine's own tests of crashes and concurrency).
pub fn registry() -> Arc<Registry> {
    let mut registry = crate::stages::registry();
    if std::env::var("ASYMFLOW_TEST_KINDS").is_ok_and(|v| v == "1") {
        for kind in crate::stages::testing::kinds() {
            registry.register(kind);
        }
    }
    Arc::new(registry)
}

/// Reads, overrides, resolves and expands the pipeline named in `args`.
pub fn load_plan(args: &PipelineArgs, registry: &Registry) -> anyhow::Result<Plan> {
    let file = &args.file;
    let overrides: Vec<Override> = args
        .overrides
        .set
        .iter()
        .map(|s| Override::Set(s.clone()))
        .chain(
            args.overrides
                .sweep
                .iter()
                .map(|s| Override::Sweep(s.clone())),
        )
        .collect();
    let spec = spec::load(file, &overrides, registry)?;
    Ok(Plan::build(spec)?)
}

/// The cache for a pipeline in `project_dir`: `--cache`/`ASYMFLOW_CACHE`, else
/// `project_dir/cache`.
pub fn cache_for(args: &CacheArgs, project_dir: &Path) -> Cache {
    match &args.cache {
        Some(dir) => Cache::new(dir),
        None => Cache::new(&project_dir.join("cache")),
    }
}

/// The cache when no pipeline is named: `--cache`/`ASYMFLOW_CACHE`, else the `cache/` of the
/// project around the current folder.
pub fn cache_here(args: &CacheArgs) -> anyhow::Result<Cache> {
    if let Some(dir) = &args.cache {
        return Ok(Cache::new(dir));
    }
    let cwd = std::env::current_dir().context("current folder")?;
    let project = spec::resolve::find_project_dir(&cwd);
    Ok(Cache::new(&project.join("cache")))
}

/// Prints `value` as pretty JSON on stdout.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// `stage[axis=v,...]` for a stage name and binding.
pub fn label(
    stage: &str,
    binding: &std::collections::BTreeMap<String, serde_json::Value>,
) -> String {
    if binding.is_empty() {
        return stage.to_string();
    }
    let parts: Vec<String> = binding
        .iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k}={s}"),
            v => format!("{k}={v}"),
        })
        .collect();
    format!("{stage}[{}]", parts.join(","))
}

/// The folder reports of `pipeline` are published to.
pub fn reports_dir(project_dir: &Path, pipeline: &str) -> PathBuf {
    project_dir.join("reports").join(pipeline)
}
