//! The project being served: its folder (with `pipelines/`), its cache and the stage registry.
//!
//! Pipelines are named by the stem of their file under `pipelines/`; a URL names a pipeline
//! only by that stem, looked up in the listing, so no URL ever becomes a path.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::ServeError;
use crate::cache::{Cache, Index};
use crate::graph::Plan;
use crate::kind::Registry;

/// A project and its cache, read-only.
#[derive(Clone)]
pub struct Site {
    project_dir: PathBuf,
    cache: Cache,
    registry: Arc<Registry>,
}

/// A pipeline file under `pipelines/`.
#[derive(Debug, Clone)]
pub struct PipelineFile {
    /// The file's stem, which names it in URLs.
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
        }
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

    /// The pipeline files, sorted by name. A project without `pipelines/` has none.
    pub fn pipelines(&self) -> Vec<PipelineFile> {
        let dir = self.project_dir.join("pipelines");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        let mut files: Vec<PipelineFile> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "toml"))
            .filter_map(|path| {
                let name = path.file_stem()?.to_str()?.to_string();
                Some(PipelineFile { name, path })
            })
            .collect();
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

    /// The pipeline called `name`, read, resolved and expanded.
    pub fn load(&self, name: &str) -> Result<Plan, ServeError> {
        let file = self.pipeline_file(name)?;
        let spec = crate::spec::load(&file.path, &[], &self.registry)
            .map_err(|e| ServeError::Pipeline(e.to_string()))?;
        Plan::build(spec).map_err(|e| ServeError::Pipeline(e.to_string()))
    }

    /// The cache index, or `None` when nothing was ever cached (it is not created here).
    pub fn index(&self) -> Result<Option<Index>, ServeError> {
        if !self.cache.dir().join("index.sqlite").is_file() {
            return Ok(None);
        }
        Ok(Some(self.cache.index()?))
    }
}
