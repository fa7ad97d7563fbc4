//! The pipeline language: a TOML file (plus command-line overrides) -> a validated
//! [`PipelineSpec`].
//!
//! - [`source`]: files and locations; [`error`]: errors with file, line, column and a hint.
//! - [`names`]: pipeline and stage names, which become folder names, kept safe.
//! - [`value`]: the located TOML tree; [`model`]: the file's four tables, unknown keys rejected.
//! - [`overrides`]: `--set` and `--sweep`, applied to the written pipeline.
//! - [`template`]: `${vars.x}` / `${sweep.x}` interpolation that keeps types.
//! - [`sweep`]: axes and zip groups.
//! - [`search`]: `[search.NAME]` tables (spaces, objectives, samplers).
//! - [`resolve`]: templates (`extends`), kinds, params, inputs and gathers checked.
//!
//! Every mistake is found here, before anything runs; cycles between stages are found when the
//! graph is built ([`crate::graph`]), still before anything runs.

mod command;
pub mod digest;
pub mod error;
pub mod model;
pub mod names;
pub mod overrides;
mod read;
pub mod resolve;
pub mod search;
mod search_prune;
pub mod search_space;
pub mod source;
pub mod sweep;
pub mod template;
mod timeout;
pub mod value;

use std::collections::BTreeMap;
use std::path::PathBuf;

pub use error::SpecError;
pub use overrides::Override;
pub use resolve::load;
pub use source::Loc;
pub use sweep::Axis;
pub use template::Tpl;

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

/// A resolved stage (not yet expanded over sweep axes).
#[derive(Debug, Clone)]
pub struct StageSpec {
    /// Its name.
    pub name: String,
    /// Its kind (known to the registry).
    pub kind: String,
    /// Every declared parameter (defaults filled in), possibly referring to sweep axes.
    pub params: BTreeMap<String, Tpl>,
    /// Where each written parameter's value is (the pipeline file, a template, or the command
    /// line); defaults have none. Plan-time checks point here and tell a user's own value
    /// from a template's.
    pub param_locs: BTreeMap<String, Loc>,
    /// Connected input slots.
    pub inputs: Vec<InputRef>,
    /// Axes whose instances this stage receives together.
    pub gather: Vec<String>,
    /// How long one of its jobs may run (`timeout`); not in the key.
    pub timeout: Option<std::time::Duration>,
    /// Where the stage is declared.
    pub loc: Loc,
}

/// An input slot and the stages connected to it.
#[derive(Debug, Clone)]
pub struct InputRef {
    /// The slot.
    pub slot: String,
    /// The upstream stages, in written order.
    pub stages: Vec<String>,
    /// Where the connection is written.
    pub loc: Loc,
    /// Where each upstream stage is named, in the order of `stages`.
    pub stage_locs: Vec<Loc>,
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
