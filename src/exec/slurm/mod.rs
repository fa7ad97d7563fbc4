//! Running stages as Slurm batch jobs (`--executor slurm`).
//!
//! The engine stays on the login node; each ready instance whose kind needs a device slot
//! becomes one Slurm job running `asymflow exec JOB.json` on a compute node, which reads its
//! inputs from the object store on the shared filesystem and writes its outputs there. The
//! engine learns how the job ended from the result file the job writes, so clusters without
//! accounting work, and records the result in its index itself.
//!
//! - [`profile`]: the `[executor.slurm]` table of the project config, checked.
//! - [`command`]: the command each job runs.
//! - [`layout`]: the job's files under the cache (job, script, log, result, exit status).
//! - [`script`]: the batch script and `sbatch` arguments.
//! - [`state`]: Slurm's job states and the tools' output parsed.
//! - [`tracker`]: one job's states to the engine's events: a pure state machine.
//! - [`tools`]: running `sbatch`, `squeue`, `scontrol`, `sacct`, `scancel`.
//! - [`executor`]: [`SlurmExecutor`], the [`crate::exec::executor::Executor`] tying them up.
//! - [`setup`]: the `--executor slurm` choice: the project's profile, the routed executor a run
//!   submits to, where `plan` says instances would run.

pub mod command;
pub mod executor;
pub mod layout;
pub mod profile;
pub mod script;
pub mod setup;
pub mod state;
pub mod tools;
pub mod tracker;

pub use command::JobCommand;
pub(crate) use executor::EXECUTOR_NAME;
pub use executor::{recorded_outcome, SlurmExecutor};
pub(crate) use layout::job_label;
pub use layout::job_logs;
pub(crate) use profile::Request;
pub use profile::{ClassProfile, SlurmProfile};
