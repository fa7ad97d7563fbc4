//! The project being served: its folder (with `pipelines/`), its cache and the stage registry.
//!
//! Pipelines are named by their file's path under `pipelines/` without `.toml`
//! (`quickstart`, `examples/language`), in any subfolder; a URL names a pipeline only by that
//! name (one path segment, `/` written `%2F`), looked up in the listing, so no URL ever
//! becomes a path.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::ServeError;
use super::memo::StateMemo;
use crate::cache::{Cache, Index};
use crate::graph::Plan;
use crate::kind::Registry;
use crate::spec::PipelineSpec;

/// A project and its cache, read-only.
#[derive(Clone)]
pub struct Site {
    project_dir: PathBuf,
    cache: Cache,
    registry: Arc<Registry>,
    /// Pipeline states kept between requests.
    memo: Arc<StateMemo>,
}

/// A pipeline file under `pipelines/`.
#[derive(Debug, Clone)]
pub struct PipelineFile {
    /// Its path under `pipelines/` without `.toml`, `/`-separated, which names it in URLs.
    pub name: String,
    /// The file.
    pub path: PathBuf,
}

impl Site {
    /// The project in `project_dir` with its cache in `cache_dir`.
    pub fn new(project_dir: &Path, cache_dir: &Path, registry: Arc<Registry>) -> Self {
        Site {
            project_dir: std::path::absolute(project_dir).unwrap_or_else(|_| project_dir.into()),
            cache: Cache::new(cache_dir),
            registry,
            memo: Arc::new(StateMemo::default()),
        }
    }

    /// The pipeline states kept between requests.
    pub(crate) fn memo(&self) -> &StateMemo {
        &self.memo
    }

    /// The project folder.
    pub fn project_dir(&self) -> &Path {
        &self.project_dir
    }

    /// The cache.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// The stage kinds.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The pipeline files under `pipelines/` and its subfolders, sorted by name. A project
    /// without `pipelines/` has none. Hidden folders and links to folders are not followed.
    pub fn pipelines(&self) -> Vec<PipelineFile> {
        let mut files = Vec::new();
        collect_pipelines(&self.project_dir.join("pipelines"), "", &mut files);
        files.sort_by(|a, b| a.name.cmp(&b.name));
        files
    }

    /// The pipeline file called `name`, or a 404 naming the ones that exist.
    pub(crate) fn pipeline_file(&self, name: &str) -> Result<PipelineFile, ServeError> {
        let files = self.pipelines();
        files
            .iter()
            .find(|f| f.name == name)
            .cloned()
            .ok_or_else(|| {
                let known: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
                ServeError::NotFound(format!(
                    "no pipeline `{name}` under {}; there are: {}",
                    self.project_dir.join("pipelines").display(),
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ))
            })
    }

    /// The pipeline called `name`, read, resolved and expanded, its searches replayed against
    /// the cache as `plan` replays them (the trials known so far and the next batch).
    pub fn load(&self, name: &str) -> Result<Plan, ServeError> {
        self.expand(self.spec(name)?)
    }

    /// The pipeline called `name`, read and resolved (not expanded).
    pub(crate) fn spec(&self, name: &str) -> Result<PipelineSpec, ServeError> {
        let file = self.pipeline_file(name)?;
        crate::spec::load(&file.path, &[], &self.registry)
            .map_err(|e| ServeError::Pipeline(e.to_string()))
    }

    /// `spec` expanded, its searches replayed against the cache.
    pub(crate) fn expand(&self, spec: PipelineSpec) -> Result<Plan, ServeError> {
        let has_index = self.cache.dir().join("index.sqlite").is_file();
        crate::exec::search::replay(&spec, &self.registry, has_index.then_some(&self.cache))
            .map_err(|e| ServeError::Pipeline(e.to_string()))
    }

    /// The cache index, or `None` when nothing was ever cached (it is not created here).
    pub fn index(&self) -> Result<Option<Index>, ServeError> {
        if !self.cache.dir().join("index.sqlite").is_file() {
            return Ok(None);
        }
        Ok(Some(self.cache.index()?))
    }
}

/// Adds the `.toml` files under `dir` (named `prefix` + stem) and those of its subfolders.
fn collect_pipelines(dir: &Path, prefix: &str, out: &mut Vec<PipelineFile>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let Some(file_name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if file_name.starts_with('.') {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            collect_pipelines(&path, &format!("{prefix}{file_name}/"), out);
        } else if path.is_file() && path.extension().is_some_and(|e| e == "toml") {
            if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
                out.push(PipelineFile {
                    name: format!("{prefix}{stem}"),
                    path,
                });
            }
        }
    }
}
