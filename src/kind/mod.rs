//! The stage protocol: what a stage kind declares and what a running stage sees.
//!
//! This is the ground floor of the crate. The engine (spec, graph, cache, exec), the layers the
//! kinds are built from (data, report) and the kinds themselves (`stages/`) all import from
//! here; nothing here imports from them, so there is no import circle.
//!
//! A kind is a type implementing [`Stage`]. It declares its parameters, its input slots and its
//! outputs (the artifact contract of [`Artifact`]: what each slot accepts and what each kind
//! writes, checked before anything runs), an [`Stage::impl_version`] (part of every cache key:
//! bump it by hand whenever the kind's output for the same inputs changes, so stale results
//! are never reused), whether it wants a device slot, and optionally a fingerprint of external
//! content it reads (data sets, weight files). A [`Registry`] maps kind names to implementations.
//!
//! A stage runs with a [`StageContext`]: resolved parameters, its inputs' verified artifacts,
//! and a private output folder. Everything the stage writes there becomes its outputs once it
//! returns `Ok`; nothing is recorded otherwise.

mod artifact;
pub mod command;
mod context;
mod contract;
mod device;
mod param_reads;
mod params;
mod registry;
mod resolution;
mod stage;
pub mod typed;

pub(crate) use artifact::{
    describe as describe_artifacts, Artifact, OutputDecl, IMPLICIT_OUTPUTS, LOG_OUTPUT,
    METRICS_OUTPUT, REASONS_OUTPUT,
};
pub use context::{read_json, Draw, InputArtifact, Inputs, StageContext, StageError};
pub(crate) use context::{ProgressSink, PROGRESS_FILE};
pub(crate) use contract::{check_outputs, Violation};
pub use contract::{fits, produces};
pub use device::Device;
pub use params::{concat as params_concat, total as params_total, ParamDecl, Params, Range};
pub(crate) use params::{Alias, AliasRewrite, InputDecl, ParamError, ParamType};
pub use registry::Registry;
pub use resolution::Resolution;
pub use stage::{declared, declares_metric, FingerprintEnv, Resource, Run, Stage};
pub(crate) use stage::{param_decl, FileHasher};
