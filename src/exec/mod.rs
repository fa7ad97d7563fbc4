//! Execution: from a sealed [`crate::graph::Plan`] to cached results.
//!
//! - [`freshness`]: keys, hits, and dirty reasons (the rules are written there).
//! - [`plan_status`]: `asymflow plan` (what would run, and why).
//! - [`scheduler`]: the ready queue, worker pool, device slots, leases, Ctrl-C.
//! - [`local`]: runs one instance in this process.
//! - [`progress`]: progress bars.
//! - [`resolve`]: a pipeline's keys from records, for moving results between caches.
//!
//! Submitting instances to a cluster scheduler (`asymflow exec --key K` under Slurm) is the
//! planned next executor beside [`local`]; it needs only a job's key, since inputs and results
//! travel through the cache.

pub mod freshness;
pub mod local;
pub mod plan_status;
pub mod progress;
pub mod publish;
pub mod resolve;
pub mod scheduler;

pub use plan_status::{plan_status, plan_status_with, PlannedInstance};
pub use scheduler::{run, InstanceOutcome, RunOptions, RunSummary, Status};
