//! From a pipeline file and its overrides to the plan a run executes: read, overridden,
//! resolved, expanded, searches replayed against the cache, narrowed to what the targets
//! name, reports checked. `run`, `plan` and every command that reads a pipeline load it here,
//! so they agree on what a pipeline with these arguments is.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::cache::Cache;
use crate::graph::Plan;
use crate::kind::Registry;
use crate::spec::{self, Override, SpecError};

/// A pipeline as the user names it: its file, the overrides, the cache it is planned against.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PlanSource {
    /// The pipeline file.
    pub file: PathBuf,
    /// `--set` and `--sweep`, in the order they apply.
    pub overrides: Vec<Override>,
    /// The cache folder (`--cache`); `None`: the project's `cache/`.
    pub cache: Option<PathBuf>,
}

impl PlanSource {
    /// The cache for the pipeline in `project_dir`: the one named, else `project_dir/cache`.
    pub fn cache(&self, project_dir: &Path) -> Cache {
        cache_at(self.cache.as_deref(), project_dir)
    }
}

/// The cache `named` (`--cache`, `ASYMFLOW_CACHE`), else `project_dir/cache`.
pub(crate) fn cache_at(named: Option<&Path>, project_dir: &Path) -> Cache {
    match named {
        Some(dir) => Cache::new(dir),
        None => Cache::new(&project_dir.join("cache")),
    }
}

/// Reads, overrides, resolves and expands the pipeline of `source`, keeping only what
/// `targets` select and what it needs upstream (every stage when `targets` is empty): first
/// the named stages and the stages they need, then, for instance labels, only the selected
/// instances and their ancestors ([`crate::select::narrow`]). Dropping the rest changes no
/// instance and no key: an instance depends on its own params and its inputs only. The
/// pipeline's warnings go to stderr.
pub(crate) fn load_plan(
    source: &PlanSource,
    registry: &Registry,
    targets: &[String],
) -> anyhow::Result<Plan> {
    let mut spec = spec::load(&source.file, &source.overrides, registry)?;
    for warning in &spec.warnings {
        eprintln!("warning: {warning}");
    }
    if !targets.is_empty() {
        let keep = needed_stages(&spec, targets, &source.file)?;
        spec.stages.retain(|s| keep.contains(&s.name));
    }
    let cache = source.cache(&spec.project_dir);
    let has_index = cache.dir().join("index.sqlite").is_file();
    let plan = super::search::replay(&spec, registry, has_index.then_some(&cache))?;
    let plan = crate::select::narrow(plan, targets)?;
    crate::report::check::check_reports(&plan, registry, crate::stages::report::KIND)?;
    super::lineage::check_partitions(&plan, registry)?;
    Ok(plan)
}

/// The stages `targets` name and every stage they need, each target checked against the
/// stages of `spec` (read from `file`).
fn needed_stages(
    spec: &spec::PipelineSpec,
    targets: &[String],
    file: &Path,
) -> Result<BTreeSet<String>, SpecError> {
    let names: Vec<&str> = spec.stages.iter().map(|s| s.name.as_str()).collect();
    let mut keep: BTreeSet<String> = BTreeSet::new();
    let mut todo: Vec<String> = Vec::new();
    for target in targets {
        let stage = crate::select::stage_of(target);
        if !names.contains(&stage) {
            return Err(
                SpecError::nowhere(format!("no stage `{stage}` in {}", file.display()))
                    .suggest(stage, names.iter().copied()),
            );
        }
        todo.push(stage.to_string());
    }
    while let Some(name) = todo.pop() {
        if keep.insert(name.clone()) {
            if let Some(stage) = spec.stage(&name) {
                todo.extend(stage.inputs.iter().flat_map(|i| i.stages.iter().cloned()));
                todo.extend(searched_objectives(spec, stage));
            }
        }
    }
    Ok(keep)
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
