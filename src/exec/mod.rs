//! Execution: from a sealed [`crate::graph::Plan`] to cached results.
//!
//! - [`freshness`]: keys, hits, and dirty reasons (the rules are written there).
//! - [`plan_status`]: `asymflow plan` (what would run, and why).
//! - [`scheduler`]: the ready queue, worker pool, device slots, leases, Ctrl-C.
//! - [`local`]: runs one instance in this process.
//! - [`progress`]: progress bars.
//!
//! Submitting instances to a cluster scheduler (`asymflow exec --key K` under Slurm) is the
//! planned next executor beside [`local`]; it needs only a job's key, since inputs and results
//! travel through the cache.

pub mod executor;
pub mod freshness;
pub mod local;
pub mod plan_status;
pub mod progress;
pub mod publish;
pub mod scheduler;
pub mod slurm;

pub use plan_status::{plan_status, PlannedInstance};
pub use scheduler::{run, InstanceOutcome, RunOptions, RunSummary, Status};
