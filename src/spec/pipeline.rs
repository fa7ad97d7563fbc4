//! The resolved pipeline: what [`super::resolve`] makes of a file and its overrides, and what
//! the graph, the planner and every command read.
//!
//! Its own file, not the module root, because the search tables it holds
//! ([`super::search`]) read the stages it holds; with the stages in [`super::stage`] each
//! file imports only what sits below it.

use std::path::PathBuf;

use super::error::SpecError;
use super::search;
use super::stage::StageSpec;
use super::sweep::Axis;

/// A resolved pipeline.
#[derive(Debug, Clone)]
pub struct PipelineSpec {
    /// `[pipeline] name`, or the file's stem.
    pub name: String,
    /// The pipeline file as given.
    pub file: PathBuf,
    /// The folder relative paths resolve against (holds `pipelines/`, `stages/`, `cache/`).
    pub project_dir: PathBuf,
    /// The sweep axes.
    pub axes: Vec<Axis>,
    /// The stages, in written order.
    pub stages: Vec<StageSpec>,
    /// The `[search.NAME]` tables, in written order.
    pub searches: Vec<search::SearchSpec>,
    /// Edges within a stage across a search's dimension (ASHA's promotions), added by the
    /// search's replay ([`crate::exec::search`]); empty as a file is read.
    pub resumes: Vec<search::ResumeLink>,
    /// What the file may keep but should change (deprecated parameter names), each at its
    /// place; commands print them before their work.
    pub warnings: Vec<SpecError>,
}

impl PipelineSpec {
    /// The stage called `name`.
    pub fn stage(&self, name: &str) -> Option<&StageSpec> {
        self.stages.iter().find(|s| s.name == name)
    }

    /// The search called `name`.
    pub fn search(&self, name: &str) -> Option<&search::SearchSpec> {
        self.searches.iter().find(|s| s.name == name)
    }

    /// The axis called `name`.
    pub fn axis(&self, name: &str) -> Option<&Axis> {
        self.axes.iter().find(|a| a.name == name)
    }
}
