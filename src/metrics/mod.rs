//! Metrics computed from recorded results, without tensors: the compatibility criterion and
//! the update gain of backward-compatible training; and the [`registry`] of every metric's
//! name, label, format and direction; the [`per_query`] scores file an evaluation writes so a
//! report can resample its queries.
//!
//! The evaluation protocols over embeddings (retrieval, verification, identification,
//! re-identification) need tensors and live in the tensor crate (`asymflow_tensor::metrics`).

mod compatibility;
pub mod per_query;
pub mod registry;

pub(crate) use compatibility::{update_gain, UpdateGain};
