//! Which executor runs a pipeline's jobs, and what the commands ask of it without naming it.
//!
//! `--executor` parses into [`ExecutorChoice`]; everything that differs between executors
//! is answered here, so the commands stay the same when an executor is added:
//! - [`ExecutorChoice::build`]: the [`Executor`] a run submits to;
//! - [`ExecutorChoice::placement`]: where `plan` says each instance to run would run
//!   ([`Placement`]), and what the plan's jobs request in all;
//! - [`job_logs`], [`describe_job`], [`job_label`]: what `show` and `status` print about jobs
//!   an executor ran outside this process (read from the files it left under the cache).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::executor::{Executor, ExternalJob};
use super::local::{LocalExecutor, LocalOptions};
use super::slurm;
use crate::kind::{Registry, Resource};

/// `--executor`: where stages run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum ExecutorChoice {
    /// On this machine: the kinds without tensors in the engine, the rest in workers.
    #[default]
    Local,
    /// The stage classes the project's `[executor.slurm]` profile submits go to Slurm as jobs
    /// (`asymflow exec`); the rest run here.
    Slurm,
}

/// `plan --executor`'s help.
pub(crate) const PLAN_HELP: &str =
    "Where the instances to run would run: with `slurm`, which go to \
    Slurm and with which resources (partition, gres or gpus, time, mem), per the \
    `[executor.slurm]` profile";

/// `run --executor`'s help.
pub(crate) const RUN_HELP: &str =
    "Where stages run: here, or as Slurm jobs per the project's `[executor.slurm]` profile";

/// `run --max-jobs`'s help.
pub(crate) const MAX_JOBS_HELP: &str =
    "With `--executor slurm`: at most this many jobs queued or running at once";

/// `asymflow exec`'s help: the command each cluster job runs.
pub(crate) const EXEC_ABOUT: &str =
    "Run one job file in this process and write its outcome (what a Slurm job runs)";

/// `asymflow exec`'s examples.
pub(crate) const EXEC_EXAMPLES: &str =
    "Examples (written by `run --executor slurm` into each job's \
    script):\n  asymflow exec cache/jobs/JOB/job.json --result cache/jobs/JOB/result.json";

/// What an executor needs to start, whichever it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecutorSettings {
    /// Stages at once on this machine (`--jobs`).
    pub jobs: usize,
    /// Device slots on a machine without GPUs (`--device-slots`).
    pub device_slots: usize,
    /// At most this many jobs queued or running at once on a cluster (`--max-jobs`).
    pub max_jobs: Option<usize>,
}

impl ExecutorChoice {
    /// The executor of this choice for a pipeline in `project_dir` (a cluster executor reads
    /// its profile from the project's config).
    pub fn build(
        self,
        project_dir: &Path,
        registry: &Arc<Registry>,
        settings: &ExecutorSettings,
    ) -> anyhow::Result<Box<dyn Executor>> {
        let local = || -> Result<Box<dyn Executor>, super::executor::ExecutorError> {
            Ok(Box::new(LocalExecutor::new(
                Arc::clone(registry),
                LocalOptions {
                    jobs: settings.jobs,
                    device_slots: settings.device_slots,
                },
            )?))
        };
        Ok(match self {
            ExecutorChoice::Local => local()?,
            ExecutorChoice::Slurm => {
                Box::new(slurm::setup::routed(project_dir, settings.max_jobs, local)?)
            }
        })
    }

    /// Where `plan` says instances would run with this choice, checked against the project's
    /// config; `None` where everything runs here (nothing to say).
    pub(crate) fn placement(
        self,
        project_dir: &Path,
    ) -> anyhow::Result<Option<Box<dyn Placement>>> {
        Ok(match self {
            ExecutorChoice::Local => None,
            ExecutorChoice::Slurm => Some(Box::new(slurm::setup::project_profile(project_dir)?)),
        })
    }
}

/// Where an executor would run each instance to run, as `plan` shows it.
pub(crate) trait Placement {
    /// `runs_on` of one instance to run, of resource class `class`, in `plan --json`.
    fn runs_on(&self, class: Resource) -> serde_json::Value;

    /// Where it runs, in words, after `on` under the instance in `plan`.
    fn describe(&self, class: Resource) -> String;

    /// What the plan's instances to run (their classes) amount to with this executor.
    fn totals(&self, classes: &[Resource]) -> PlacementTotals;
}

/// A plan's totals under one executor: a field of `plan --json` and the line `plan` prints.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PlacementTotals {
    /// The field's name in `plan --json`.
    pub field: &'static str,
    /// Its value.
    pub json: serde_json::Value,
    /// The line, at the end of `plan`.
    pub line: String,
}

/// The logs one executor kept for the jobs that computed a result.
#[derive(Debug, Clone, PartialEq)]
pub struct JobLogs {
    /// The executor's name (`slurm`): `show` prints `slurm log PATH`, and its JSON holds the
    /// list as `slurm_logs`.
    pub executor: &'static str,
    /// The log files, oldest job first (empty when it ran none for this key).
    pub paths: Vec<PathBuf>,
}

/// The logs of the jobs that computed `key` in the cache at `cache_dir`, for each executor
/// that keeps job files (listed also when it kept none for this key).
pub fn job_logs(cache_dir: &Path, key: &str) -> Vec<JobLogs> {
    vec![JobLogs {
        executor: slurm::EXECUTOR_NAME,
        paths: slurm::job_logs(cache_dir, key),
    }]
}

/// `Slurm job 1234`: a job outside this process, as `status` names it.
pub(crate) fn describe_job(job: &ExternalJob) -> String {
    if job.executor == slurm::EXECUTOR_NAME {
        format!("Slurm job {}", job.id)
    } else {
        format!("{} job {}", job.executor, job.id)
    }
}

/// The label of the instance a job outside this process runs, read from its files; `None`
/// when they do not say.
pub(crate) fn job_label(job: &ExternalJob) -> Option<String> {
    if job.executor == slurm::EXECUTOR_NAME {
        slurm::job_label(&job.dir)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_are_named_by_their_executor() {
        let slurm = ExternalJob {
            executor: slurm::EXECUTOR_NAME.into(),
            id: "1234".into(),
            dir: PathBuf::from("/nowhere"),
        };
        assert_eq!(describe_job(&slurm), "Slurm job 1234");
        assert_eq!(job_label(&slurm), None, "no job file, no label");
        let other = ExternalJob {
            executor: "pbs".into(),
            id: "7".into(),
            dir: PathBuf::from("/nowhere"),
        };
        assert_eq!(describe_job(&other), "pbs job 7");
    }

    #[test]
    fn running_here_has_no_placement_to_show() {
        let project = tempfile::tempdir().unwrap();
        assert!(ExecutorChoice::Local
            .placement(project.path())
            .unwrap()
            .is_none());
        let err = ExecutorChoice::Slurm
            .placement(project.path())
            .err()
            .expect("no profile");
        assert!(
            err.to_string().contains("no [executor.slurm] profile"),
            "{err}"
        );
    }
}
