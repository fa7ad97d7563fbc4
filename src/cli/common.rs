//! What the commands share: loading a pipeline with its overrides, finding the cache, naming
//! instances, and where reports are published.
//!
//! Read-only commands never create a cache: [`existing_cache`] refuses a folder without an
//! index ("no cache at X"), and [`planning_cache`] plans against a throwaway empty cache when
//! there is none yet, so `plan` on a fresh project says what would run without writing
//! anything.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::collections::BTreeSet;

use anyhow::{bail, Context};

use super::{CacheArgs, OverrideArgs, PipelineArgs};
use crate::cache::Cache;
use crate::graph::Plan;
use crate::kind::Registry;
use crate::spec::{self, Override, SpecError};

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

/// As [`load_plan`], keeping only what `targets` select and what it needs upstream (every
/// stage when `targets` is empty): first the named stages and the stages they need, then,
/// for instance labels, only the selected instances and their ancestors
/// ([`crate::select::narrow`]). Dropping the rest changes no instance and no key: an
/// instance depends on its own params and its inputs only.
pub(crate) fn load_plan_of(
    args: &PipelineArgs,
    registry: &Registry,
    targets: &[String],
) -> anyhow::Result<Plan> {
    let mut spec = spec::load(&args.file, &overrides_of(&args.overrides), registry)?;
    for warning in &spec.warnings {
        eprintln!("warning: {warning}");
    }
    if !targets.is_empty() {
        let names: Vec<&str> = spec.stages.iter().map(|s| s.name.as_str()).collect();
        let mut keep: BTreeSet<String> = BTreeSet::new();
        let mut todo: Vec<String> = Vec::new();
        for target in targets {
            let stage = crate::select::stage_of(target);
            if !names.contains(&stage) {
                return Err(SpecError::nowhere(format!(
                    "no stage `{stage}` in {}",
                    args.file.display()
                ))
                .suggest(stage, names.iter().copied())
                .into());
            }
            todo.push(stage.to_string());
        }
        while let Some(name) = todo.pop() {
            if keep.insert(name.clone()) {
                if let Some(stage) = spec.stage(&name) {
                    todo.extend(stage.inputs.iter().flat_map(|i| i.stages.iter().cloned()));
                    todo.extend(searched_objectives(&spec, stage));
                }
            }
        }
        spec.stages.retain(|s| keep.contains(&s.name));
    }
    let cache = cache_for(&args.cache, &spec.project_dir);
    let has_index = cache.dir().join("index.sqlite").is_file();
    let plan = crate::exec::search::replay(&spec, registry, has_index.then_some(&cache))?;
    let plan = crate::select::narrow(plan, targets)?;
    crate::report::check::check_reports(&plan, registry, crate::stages::report::KIND)?;
    crate::exec::lineage::check_partitions(&plan, registry)?;
    Ok(plan)
}

/// The objective stages of the searches whose winners `stage` takes: a stage that waits for
/// a search needs the search's trials.
fn searched_objectives(spec: &spec::PipelineSpec, stage: &spec::StageSpec) -> Vec<String> {
    let mut refs = Vec::new();
    stage.params.values().for_each(|t| t.best_refs(&mut refs));
    refs.iter()
        .filter_map(|(search, _, _)| spec.search(search))
        .map(|s| s.objective.stage.clone())
        .collect()
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
    args.set
        .iter()
        .map(|s| format!("--set {}", shell_quote(s)))
        .chain(
            args.sweep
                .iter()
                .map(|s| format!("--sweep {}", shell_quote(s))),
        )
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` quoted for a POSIX shell when it needs it.
pub(crate) fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.,=/:+@%".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
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
    match &args.cache {
        Some(dir) => Cache::new(dir),
        None => Cache::new(&project_dir.join("cache")),
    }
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

/// Where a run's reports are published, and which overrides its tables note.
pub(crate) struct ReportsRoot {
    /// The folder.
    pub dir: PathBuf,
    /// The overrides, or none when they resolve to the pipeline the file already is (a no-op
    /// `--set` publishes to the plain folder and notes nothing).
    pub overrides: OverrideArgs,
    /// Whether `dir` is a variant folder `reports/PIPELINE+DIGEST/`, to be marked with its
    /// overrides ([`crate::exec::report_folders::mark_variant`]) after publishing.
    pub variant: bool,
}

impl ReportsRoot {
    /// Marks a variant folder with its pipeline and overrides, once something is published.
    pub(crate) fn mark(&self, pipeline: &str) -> anyhow::Result<()> {
        if self.variant && self.dir.is_dir() {
            crate::exec::report_folders::mark_variant(
                &self.dir,
                pipeline,
                &overrides_text(&self.overrides),
            )?;
        }
        Ok(())
    }
}

/// The folder the reports of the pipeline in `args` are published to: `reports/PIPELINE/`,
/// or `reports/PIPELINE+DIGEST/` when its overrides change the resolved pipeline (DIGEST names
/// the resolved pipeline, not the override text, so a one-off run never replaces the plain
/// pipeline's tables and identical variants share one folder). `--reports DIR` names the
/// folder outright.
pub(crate) fn reports_dir(
    args: &PipelineArgs,
    registry: &Registry,
    project_dir: &Path,
    pipeline: &str,
    explicit: Option<&Path>,
) -> anyhow::Result<ReportsRoot> {
    let given = args.overrides.clone();
    if let Some(dir) = explicit {
        return Ok(ReportsRoot {
            dir: dir.to_path_buf(),
            overrides: given,
            variant: false,
        });
    }
    let plain = project_dir.join("reports").join(pipeline);
    if overrides_text(&given).is_empty() {
        return Ok(ReportsRoot {
            dir: plain,
            overrides: given,
            variant: false,
        });
    }
    let resolved = spec::load(&args.file, &overrides_of(&given), registry)?;
    let digest = spec::digest::resolved_digest(&resolved);
    let as_written = spec::load(&args.file, &[], registry)
        .ok()
        .map(|s| spec::digest::resolved_digest(&s));
    Ok(if as_written.as_deref() == Some(digest.as_str()) {
        ReportsRoot {
            dir: plain,
            overrides: OverrideArgs::default(),
            variant: false,
        }
    } else {
        let name = crate::exec::report_folders::variant_name(pipeline, &digest);
        ReportsRoot {
            dir: project_dir.join("reports").join(name),
            overrides: given,
            variant: true,
        }
    })
}

/// Notes the overrides under a published report: a line at the foot of `table.md`, a
/// comment at the end of `table.tex`, and `overrides.txt`. Nothing when there are none.
pub(crate) fn note_overrides(dest: &Path, overrides: &OverrideArgs) -> anyhow::Result<()> {
    let text = overrides_text(overrides);
    if text.is_empty() {
        return Ok(());
    }
    let append = |name: &str, line: String| -> anyhow::Result<()> {
        let path = dest.join(name);
        if path.is_file() {
            let mut body = std::fs::read_to_string(&path)?;
            body.push_str(&line);
            std::fs::write(&path, body).with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    };
    append("table.md", format!("\nOverrides: `{text}`\n"))?;
    append("table.tex", format!("% overrides: {text}\n"))?;
    std::fs::write(dest.join("overrides.txt"), format!("{text}\n"))
        .with_context(|| format!("writing {}", dest.join("overrides.txt").display()))?;
    Ok(())
}
