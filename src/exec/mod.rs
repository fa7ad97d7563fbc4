//! Execution: from a sealed [`crate::graph::Plan`] to cached results.
//!
//! The engine decides what runs; an [`executor::Executor`] decides where:
//!
//! ```text
//! engine (one per `asymflow run`)                          workers
//!   plan -> ready queue -> Executor::submit(Job) ---------> asymflow-worker serve  (persistent,
//!         <- JobEvent: progress, outcome (digests) -------    one per slot: LocalExecutor)
//!                                                          asymflow exec JOB.json (one process
//!                                                            per job: a cluster executor)
//! ```
//!
//! - [`run`](mod@run): one run of a pipeline as one call (request in, outcome out): what the
//!   CLI's `run` calls; [`load`]: a pipeline file and its overrides to a plan.
//! - [`choice`]: `--executor`, and what commands ask of an executor without naming it
//!   (placement for `plan`, job logs and labels for `show` and `status`).
//! - [`freshness`]: keys, hits, and dirty reasons (the rules are written there).
//! - [`plan_status`]: `asymflow plan` (what would run, and why).
//! - [`scheduler`] (over the pure state machine in `schedule`): the ready queue, leases, retries, Ctrl-C; records results, one transaction
//!   each. The engine alone writes the index.
//! - [`executor`]: the `Executor` trait and the plain serde `Job` and `JobOutcome` that cross it.
//! - [`local`]: `LocalExecutor`, kinds without tensors on engine threads and the tensor kinds in
//!   persistent worker processes ([`protocol`]), one per device slot.
//! - [`worker`]: running one job anywhere (inputs verified from the object store, outputs moved
//!   into it); `asymflow worker` and `asymflow exec`.
//! - [`routed`]: two executors behind one, by resource class (Slurm for GPUs, local for the
//!   rest).
//! - [`slurm`]: `SlurmExecutor`, one `sbatch` job per instance running `asymflow exec`.
//! - [`progress`]: progress bars; [`publish`]: reports copied out of the cache, into the
//!   folders [`reports_root`] names; [`render`]: reports rendered from what the cache holds.
//! - [`resolve`]: a pipeline's keys from records, for moving results between caches.
//! - [`search`]: searches as graph expansion over time (replay, the run loop);
//!   [`lineage`]: which instances read test images.
//! - [`memory`]: the peak device memory of a training instance's step, estimated for `plan`.

pub mod choice;
mod deadlines;
pub mod estimate;
pub mod executor;
pub mod freshness;
pub mod lineage;
pub(crate) mod load;
pub mod local;
pub mod memory;
mod pipe;
pub mod plan_status;
pub mod progress;
pub mod protocol;
pub mod publish;
pub(crate) mod render;
pub mod report_folders;
pub(crate) mod reports_root;
pub mod resolve;
pub mod routed;
pub(crate) mod run;
mod run_reports;
mod schedule;
pub mod scheduler;
pub mod search;
pub mod slurm;
pub mod worker;

pub use plan_status::plan_status;

pub(crate) use plan_status::{plan_status_of, plan_status_with};
pub(crate) use scheduler::RunSummary;
pub use scheduler::{run, RunOptions, Status};
