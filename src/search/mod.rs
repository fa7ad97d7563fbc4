//! Hyper-parameter search: the samplers that propose trials.
//!
//! A sampler is a pure function of (the search as written, its seed, the trial's number, the
//! results of the trials before the trial's batch, in trial order): [`propose`]. Nothing here
//! reads a clock, a thread count or the order in which trials finished, so a search run twice,
//! resumed after `kill -9`, or extended by a teammate who pulled its trials, proposes the same
//! trials and finds them all in the cache. The run loop that turns proposals into pipeline
//! instances is [`crate::exec::search`].
//!
//! - [`sampler`]: the grid, and the dispatch to the sampler a search names.
//! - [`random`]: each trial's random stream and uniform draws; values rounded to six
//!   significant digits (a key must not depend on the last bit of a platform's `exp`).
//! - [`tpe`]: the tree-structured Parzen estimator as Optuna defines it.
//! - [`state`]: where a search stands after replay (trials, objectives, winner).
//! - [`asha`]: early stopping by asynchronous successive halving (which trial trains
//!   further, from its lower rung's result).
//! - [`parzen`]: the truncated-normal and categorical mixtures TPE is made of.

pub mod asha;
pub mod parzen;
pub mod random;
pub mod sampler;
pub mod state;
pub mod tpe;

use serde_json::Value;

pub use sampler::propose;
pub(crate) use state::{PruneState, RungJob, SearchState, Trial};

/// A finished trial as a sampler sees it: its values (in the order of the space) and its
/// objective.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// One value per dimension.
    pub values: Vec<Value>,
    /// The objective (the mean over the instances the search does not own).
    pub objective: f64,
}
