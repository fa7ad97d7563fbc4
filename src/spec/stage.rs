//! One resolved stage of a pipeline (not yet expanded over sweep axes) and the inputs
//! connected to it.
//!
//! Its own file because the search tables ([`super::search`]) bind their dimensions to a
//! stage's parameters and the pipeline ([`super::pipeline`]) holds both: the stage sits below
//! the two.

use std::collections::BTreeMap;

use super::source::Loc;
use super::template::Tpl;

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
