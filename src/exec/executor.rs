//! Where jobs run: the [`Executor`] trait and the plain data that crosses it.
//!
//! The scheduler decides *what* runs (a ready instance whose key missed the cache); an executor
//! decides *where*: a pool of persistent local worker processes ([`super::local`]), or a
//! cluster scheduler. Everything that crosses the seam is plain serde data, so a job can be
//! written to a file, sent down a pipe, or submitted to Slurm and read back by
//! `asymflow exec JOB.json` on another machine that sees the same object store.
//!
//! The split of duties, as in Bazel's remote execution: a job names its inputs by content
//! digest; whoever runs it reads them from the object store, verifies them, runs the stage and
//! stores the outputs there; the outcome carries only digests and numbers back. The engine
//! alone writes the index, one transaction per result, so executors never touch SQLite.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(crate) use crate::cache::ExternalJob;
use crate::cache::{OutputRef, Provenance};
use crate::kind::{Device, Params, Resource};

/// The scheduler's handle on a submitted job (the instance's index in the plan).
pub type JobId = usize;

/// One stage instance to run, detached from the plan: everything a process needs to run it,
/// given read access to the object store.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Job {
    /// The stage key (blake3 hex); the name of the result.
    pub key: String,
    /// The canonical key JSON, kept with the result for `why`.
    pub key_json: String,
    /// `stage[axis=value]`, for messages and job names.
    pub label: String,
    /// The pipeline's name.
    pub pipeline: String,
    /// The stage's name in the pipeline.
    pub stage: String,
    /// Its kind.
    pub kind: String,
    /// The sweep values bound for this instance.
    pub binding: BTreeMap<String, Value>,
    /// The resolved parameters.
    pub params: Params,
    /// Input slot -> the upstream results connected to it (one, or all gathered ones).
    pub inputs: BTreeMap<String, Vec<JobInput>>,
    /// What the job asks for; the executor fills in the device and threads it grants.
    pub resources: Resources,
    /// The pipeline's project folder (relative paths in parameters resolve against it).
    pub project_dir: PathBuf,
    /// The cache folder whose object store holds the inputs and receives the outputs.
    pub cache_dir: PathBuf,
    /// The stage's `timeout` in seconds: a job running longer fails. Not in the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<f64>,
}

impl Job {
    /// The stage's `timeout`, if it has one.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_seconds
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(Duration::from_secs_f64)
    }
}

/// One upstream result as a job carries it: who made it, and its outputs by digest.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobInput {
    /// The upstream stage's name.
    pub stage: String,
    /// Its kind.
    pub kind: String,
    /// Its sweep binding.
    pub binding: BTreeMap<String, Value>,
    /// Its resolved parameters.
    pub params: Params,
    /// Its key.
    pub key: String,
    /// Its recorded metrics.
    pub metrics: BTreeMap<String, f64>,
    /// Output name -> object.
    pub outputs: BTreeMap<String, OutputRef>,
    /// The stochastic instances it descends from, for kinds that read them
    /// ([`crate::kind::Stage::reads_draws`]); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub draws: Vec<crate::kind::Draw>,
}

/// What a job asks for and what it was granted.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Resources {
    /// The kind's resource class: plain CPU work, or a device slot.
    pub class: Resource,
    /// The device to compute on, as the running process sees it (a worker pinned to one GPU
    /// with `CUDA_VISIBLE_DEVICES` sees it as `cuda:0`).
    pub device: Device,
    /// Intra-op threads the job may use.
    pub threads: usize,
}

/// How a job ended, as its runner reports it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum JobOutcome {
    /// The outputs are in the object store.
    Done(Box<JobResult>),
    /// No result.
    Failed(JobFailure),
}

/// A finished job's result: what the engine records.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobResult {
    /// Output name -> object (already stored).
    pub outputs: BTreeMap<String, OutputRef>,
    /// Keyed metrics (deterministic results of the stage; downstream keys depend on them).
    pub metrics: BTreeMap<String, f64>,
    /// Seconds since the epoch.
    pub started: f64,
    /// Seconds since the epoch.
    pub finished: f64,
    /// Where it ran, with what, and its telemetry (volatile measurements): stored and shown,
    /// never in the key.
    pub provenance: Provenance,
}

/// Why a job produced no result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobFailure {
    /// What kind of failure: decides what the scheduler does next.
    pub reason: FailureReason,
    /// What went wrong, for the user.
    pub message: String,
    /// The last lines of the stage's log, when there is one.
    pub log_tail: Option<String>,
}

/// The kinds of failure the scheduler tells apart.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum FailureReason {
    /// The stage itself failed (bad data, a bad parameter value, libtorch).
    Stage,
    /// The run was cancelled (Ctrl-C); nothing is recorded, the instance is skipped.
    Interrupted,
    /// An input object was corrupt or missing: its producer must run again.
    BadInput {
        /// The producing instance's key.
        producer_key: String,
        /// Its stage.
        producer_stage: String,
    },
    /// The process running the job died (killed, out of memory, a crash in native code).
    /// The job may be retried (`--retries`).
    Crashed,
    /// The executor could not run the job (a cluster job that failed, timed out, was
    /// preempted or cancelled from outside); `state` is the executor's own word for it.
    Executor {
        /// The executor's id for the job (a Slurm job id).
        job_id: String,
        /// Its final state (`FAILED`, `TIMEOUT`, `OUT_OF_MEMORY`, `NODE_FAIL`, `CANCELLED`).
        state: String,
    },
}

impl FailureReason {
    /// Whether running the same job again may succeed (the failure was the process's or the
    /// machine's, not the stage's).
    pub(crate) fn retryable(&self) -> bool {
        match self {
            FailureReason::Crashed => true,
            FailureReason::Executor { state, .. } => {
                matches!(state.as_str(), "NODE_FAIL" | "PREEMPTED" | "BOOT_FAIL")
            }
            FailureReason::Stage | FailureReason::Interrupted | FailureReason::BadInput { .. } => {
                false
            }
        }
    }
}

/// What an executor reports about a submitted job.
#[derive(Debug, Clone, PartialEq)]
pub enum JobEvent {
    /// A line worth showing (`submitted as Slurm job 1234`, `worker restarted`).
    Note {
        /// The job.
        id: JobId,
        /// The line.
        message: String,
    },
    /// Progress within the stage (epochs, batches).
    Progress {
        /// The job.
        id: JobId,
        /// Steps done.
        position: u64,
        /// Steps in all.
        length: u64,
        /// What is being counted.
        message: String,
    },
    /// The job ended.
    Finished {
        /// The job.
        id: JobId,
        /// How.
        outcome: JobOutcome,
    },
}

/// An executor could not take a job at all (as opposed to a job that failed).
#[derive(Debug, thiserror::Error)]
pub enum ExecutorError {
    /// No worker process could be started.
    #[error("could not start a worker ({program}): {message}")]
    Spawn {
        /// The program.
        program: String,
        /// What went wrong and how to fix it.
        message: String,
    },
    /// Submitting to the cluster failed.
    #[error("submitting {label}: {message}")]
    Submit {
        /// The job.
        label: String,
        /// The submitter's error.
        message: String,
    },
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

/// Runs jobs somewhere and reports back. See the module docs.
pub trait Executor {
    /// Whether a job of `class` could start now (a free device slot, room under a cap on
    /// queued jobs). The scheduler asks before it takes the key's lease.
    fn has_room(&self, class: Resource) -> bool;

    /// Starts `job`. The executor fills in `job.resources` (device, threads) as it grants them.
    /// An executor that batches (Slurm's job arrays) may only queue it until [`Self::flush`].
    fn submit(&mut self, id: JobId, job: Job) -> Result<(), ExecutorError>;

    /// Starts what `submit` queued; the scheduler calls it after each round of submitting
    /// what is ready. Problems come back as events of the jobs concerned.
    fn flush(&mut self) {}

    /// The job outside this process that runs job `id` (a Slurm job), while it is followed;
    /// the scheduler records it in the key's lease. `None` for work in local processes, which
    /// dies with the engine.
    fn external_job(&self, _id: JobId) -> Option<ExternalJob> {
        None
    }

    /// Follows `external`, started for `job` by an earlier engine that died, as job `id`:
    /// it reports like a submitted job, also when it finished while no engine was watching.
    /// An executor that cannot follow such a job says so, and the scheduler runs the job.
    fn adopt(&mut self, _id: JobId, job: Job, external: &ExternalJob) -> Result<(), ExecutorError> {
        let stop = if external.executor == "slurm" {
            format!(" (`scancel {}` stops it)", external.id)
        } else {
            String::new()
        };
        Err(ExecutorError::Other(format!(
            "{} job {} for {}, submitted by an earlier run, is left as it is{stop}: this run \
             does not use that executor",
            external.executor, external.id, job.label
        )))
    }

    /// The next event of any submitted job, waiting at most `timeout`.
    fn next_event(&mut self, timeout: Duration) -> Option<JobEvent>;

    /// Asks job `id` to stop; it still reports a [`JobEvent::Finished`] (usually
    /// [`FailureReason::Interrupted`]).
    fn cancel(&mut self, id: JobId);

    /// Stops every process the executor started; called once, when the run ends.
    fn shutdown(&mut self);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_round_trips_through_json_with_its_reason_tagged() {
        let outcome = JobOutcome::Failed(JobFailure {
            reason: FailureReason::BadInput {
                producer_key: "ab".repeat(32),
                producer_stage: "teacher".into(),
            },
            message: "digest mismatch".into(),
            log_tail: None,
        });
        let text = serde_json::to_string(&outcome).unwrap();
        assert!(text.contains(r#""status":"failed""#), "{text}");
        assert!(text.contains(r#""reason":"bad-input""#), "{text}");
        assert_eq!(serde_json::from_str::<JobOutcome>(&text).unwrap(), outcome);
    }

    #[test]
    fn only_process_and_machine_failures_are_retryable() {
        assert!(FailureReason::Crashed.retryable());
        assert!(!FailureReason::Stage.retryable());
        let preempted = FailureReason::Executor {
            job_id: "7".into(),
            state: "PREEMPTED".into(),
        };
        assert!(preempted.retryable());
        let oom = FailureReason::Executor {
            job_id: "7".into(),
            state: "OUT_OF_MEMORY".into(),
        };
        assert!(!oom.retryable());
    }
}
