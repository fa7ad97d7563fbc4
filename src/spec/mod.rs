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
//! - [`pipeline`]: the resolved pipeline ([`PipelineSpec`]); [`stage`]: one resolved stage
//!   ([`StageSpec`]) and its connected inputs.
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
pub mod pipeline;
mod read;
pub mod resolve;
pub mod search;
mod search_prune;
pub mod search_space;
pub mod source;
pub mod stage;
pub mod sweep;
pub mod template;
mod timeout;
pub mod value;

pub(crate) use error::SpecError;
pub use overrides::Override;
pub(crate) use pipeline::PipelineSpec;
pub use resolve::load;
pub use source::Loc;
pub(crate) use stage::StageSpec;
pub(crate) use sweep::Axis;
pub(crate) use template::Tpl;
