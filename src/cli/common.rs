//! What the commands share: the pipeline, overrides and cache their arguments name (loaded
//! by [`crate::exec::load`]), and naming instances.
//!
//! Read-only commands never create a cache: [`existing_cache`] refuses a folder without an
//! index ("no cache at X"), and [`planning_cache`] plans against a throwaway empty cache when
//! there is none yet, so `plan` on a fresh project says what would run without writing
//! anything.

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context};

use super::args::{CacheArgs, OverrideArgs, PipelineArgs};
use crate::cache::Cache;
use crate::exec::load::PlanSource;
use crate::graph::Plan;
use crate::kind::Registry;
use crate::spec::{self, Override};

pub(crate) use crate::spec::overrides::shell_quote;

/// The registry the binary uses: every built-in kind, plus, in test builds (feature
/// `test-kinds`), the test kinds when `ASYMFLOW_TEST_KINDS` is set (for the engine's own tests
/// of crashes and concurrency): with `1` the engine runs them itself, with `worker` only their
/// declarations are registered here, so they run in worker processes as the tensor kinds do.
pub fn registry() -> Arc<Registry> {
    #[allow(unused_mut)]
    let mut registry = crate::stages::registry();
    #[cfg(feature = "test-kinds")]
    match std::env::var("ASYMFLOW_TEST_KINDS").as_deref() {
        Ok("1") => crate::stages::testing::register(&mut registry),
        Ok("worker") => crate::stages::testing::declare(&mut registry),
        _ => {}
    }
    Arc::new(registry)
}

/// Reads, overrides, resolves and expands the pipeline named in `args`.
pub(crate) fn load_plan(args: &PipelineArgs, registry: &Registry) -> anyhow::Result<Plan> {
    load_plan_of(args, registry, &[])
}

/// As [`load_plan`], keeping only what `targets` select and what it needs upstream
/// ([`crate::exec::load::load_plan`]).
pub(crate) fn load_plan_of(
    args: &PipelineArgs,
    registry: &Registry,
    targets: &[String],
) -> anyhow::Result<Plan> {
    crate::exec::load::load_plan(&plan_source(args), registry, targets)
}

/// The pipeline `args` name, as the engine takes it.
pub(crate) fn plan_source(args: &PipelineArgs) -> PlanSource {
    PlanSource {
        file: args.file.clone(),
        overrides: overrides_of(&args.overrides),
        cache: args.cache.cache.clone(),
    }
}

/// The overrides of the command line, `--set` first, in the order given.
pub(crate) fn overrides_of(args: &OverrideArgs) -> Vec<Override> {
    args.set
        .iter()
        .map(|s| Override::Set(s.clone()))
        .chain(args.sweep.iter().map(|s| Override::Sweep(s.clone())))
        .collect()
}

/// The overrides as a user would type them again: `--set 'a=1' --sweep 'seed=7'` (empty
/// when there are none).
pub(crate) fn overrides_text(args: &OverrideArgs) -> String {
    crate::spec::overrides::command_line(&overrides_of(args))
}

/// The cache at `cache`, which must already exist (read-only commands never create one).
pub(crate) fn existing_cache(cache: Cache) -> anyhow::Result<Cache> {
    if cache.dir().join("index.sqlite").is_file() {
        Ok(cache)
    } else {
        bail!(
            "no cache at {} (use --cache DIR or ASYMFLOW_CACHE to name one; `asymflow run` creates it)",
            cache.dir().display()
        )
    }
}

/// The cache to plan against: `cache` when it exists, else an empty throwaway one (returned
/// with it, removed when dropped), so planning writes nothing where there is no cache.
pub(crate) fn planning_cache(cache: Cache) -> anyhow::Result<(Cache, Option<tempfile::TempDir>)> {
    if cache.dir().join("index.sqlite").is_file() {
        return Ok((cache, None));
    }
    let scratch = tempfile::tempdir().context("scratch folder for planning")?;
    Ok((Cache::new(scratch.path()), Some(scratch)))
}

/// The cache for a pipeline in `project_dir`: `--cache`/`ASYMFLOW_CACHE`, else
/// `project_dir/cache`.
pub(crate) fn cache_for(args: &CacheArgs, project_dir: &Path) -> Cache {
    crate::exec::load::cache_at(args.cache.as_deref(), project_dir)
}

/// The cache when no pipeline is named: `--cache`/`ASYMFLOW_CACHE`, else the `cache/` of the
/// project around the current folder.
pub(crate) fn cache_here(args: &CacheArgs) -> anyhow::Result<Cache> {
    if let Some(dir) = &args.cache {
        return Ok(Cache::new(dir));
    }
    let cwd = std::env::current_dir().context("current folder")?;
    let project = spec::resolve::find_project_dir(&cwd);
    Ok(Cache::new(&project.join("cache")))
}

/// Prints `value` as pretty JSON on stdout.
pub(crate) fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    use std::io::Write;
    // Streamed through one buffer: `plan --json` of 10,000 instances is megabytes of text.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// `stage[axis=v,...]` for a stage name and binding.
pub fn label<'a>(
    stage: &str,
    binding: impl IntoIterator<Item = (&'a String, &'a serde_json::Value)>,
) -> String {
    crate::graph::label_of(stage, binding)
}

/// The project around the current folder.
pub(crate) fn project_here() -> anyhow::Result<std::path::PathBuf> {
    let cwd = std::env::current_dir()?;
    Ok(crate::spec::resolve::find_project_dir(&cwd))
}

/// The remote a command that needs one (`push`, `pull`, `remote status`, `remote gc`) uses.
pub(crate) fn required_remote(project_dir: &Path) -> anyhow::Result<crate::cache::remote::Remote> {
    let config = crate::config::ProjectConfig::load(project_dir)?;
    crate::cache::remote::Remote::from_config(&config, registry())?.ok_or_else(|| {
        anyhow::anyhow!(
            "no remote is configured; set `remote = \"s3://bucket/prefix\"` (or \"file:///folder\") in {}, or ASYMFLOW_REMOTE",
            project_dir.join(crate::config::CONFIG_FILE).display()
        )
    })
}
