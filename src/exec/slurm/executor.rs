//! [`SlurmExecutor`]: each job one `sbatch`, followed by polling until it ends.
//!
//! Submitting writes the job (`job.json`) and its batch script into the key's folder under
//! the cache ([`super::layout`]) and runs `sbatch --parsable`. Following is a poll every
//! `poll_interval` seconds (10 by default: a login node is shared, and slurmctld answers every
//! user), one `squeue` for all followed jobs; a job that ended or left `squeue`'s view is
//! asked about with `scontrol show job`, then `sacct` where accounting exists, and its files decide
//! how it ended ([`super::tracker`] holds the rules). Results come back through the shared
//! object store; the executor hands the outcome to the scheduler, which alone writes the index.
//!
//! For an engine restart, the scheduler keeps each job's Slurm id and folder in the key's
//! lease ([`Executor::external_job`] after `submit`); a restarted engine that takes over the
//! lease of a dead one calls [`Executor::adopt`] (which is [`SlurmExecutor::adopt`]) instead
//! of submitting again, and gets the outcome as for any other job, including one that
//! finished while the engine was down (read from its result file by [`recorded_outcome`]).
//! An engine killed between `sbatch` returning and the lease write leaves a job no lease
//! names; `submit` finds it by its name and log folder when the key's folder already holds a
//! job file, and follows it.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::exec::executor::{
    Executor, ExecutorError, ExternalJob, Job, JobEvent, JobId, JobOutcome,
};
use crate::kind::{Device, Resource};

use super::command::JobCommand;
use super::layout::{JobDir, ResultFile};
use super::profile::{Request, SlurmProfile};
use super::script::{job_name, render};
use super::tools::Tools;
use super::tracker::{Facts, Step, Tracker};

/// The executor's name in the [`ExternalJob`]s it records.
pub const EXECUTOR_NAME: &str = "slurm";

/// Runs jobs as Slurm batch jobs. See the module docs.
#[derive(Debug)]
pub struct SlurmExecutor {
    profile: SlurmProfile,
    tools: Tools,
    command: JobCommand,
    max_jobs: Option<usize>,
    poll_interval: Duration,
    jobs: BTreeMap<JobId, Followed>,
    events: VecDeque<JobEvent>,
    last_poll: Option<Instant>,
    accounting: bool,
}

#[derive(Debug)]
struct Followed {
    label: String,
    dir: JobDir,
    tracker: Tracker,
}

/// A followed job, for `status` and the summary after Ctrl-C.
#[derive(Debug, Clone, PartialEq)]
pub struct SlurmJobInfo {
    /// The scheduler's id.
    pub id: JobId,
    /// `stage[axis=value]`.
    pub label: String,
    /// Slurm's job id.
    pub slurm_id: String,
    /// The state last seen (`PENDING`, `RUNNING`), `None` before the first poll.
    pub state: Option<String>,
}

impl SlurmExecutor {
    /// An executor submitting with `profile`, running `command` in each job, keeping at most
    /// `max_jobs` jobs queued or running (`--max-jobs`).
    pub fn new(
        profile: SlurmProfile,
        command: JobCommand,
        max_jobs: Option<usize>,
    ) -> Result<SlurmExecutor, ExecutorError> {
        profile
            .validate()
            .map_err(|e| ExecutorError::Other(e.to_string()))?;
        if max_jobs == Some(0) {
            return Err(ExecutorError::Other(
                "--max-jobs must be at least 1".to_string(),
            ));
        }
        Ok(SlurmExecutor {
            tools: Tools {
                bin_dir: profile.bin_dir.clone(),
            },
            poll_interval: Duration::from_secs_f64(profile.poll_interval()),
            profile,
            command,
            max_jobs,
            jobs: BTreeMap::new(),
            events: VecDeque::new(),
            last_poll: None,
            accounting: true,
        })
    }

    /// Whether stages of `class` go to the cluster (the others run locally).
    pub fn submits(&self, class: Resource) -> bool {
        self.profile.submits(class)
    }

    /// What a job of `class` asks for (for `plan`).
    pub fn request(&self, class: Resource) -> Request {
        self.profile.request(class)
    }

    /// Slurm's id for job `id`, while it is followed (to store in the key's lease).
    pub fn slurm_job_id(&self, id: JobId) -> Option<&str> {
        self.jobs.get(&id).map(|f| f.tracker.slurm_id.as_str())
    }

    /// The jobs followed now.
    pub fn jobs(&self) -> Vec<SlurmJobInfo> {
        self.jobs
            .iter()
            .map(|(id, f)| SlurmJobInfo {
                id: *id,
                label: f.label.clone(),
                slurm_id: f.tracker.slurm_id.clone(),
                state: f.tracker.last.as_ref().map(|s| s.word().to_string()),
            })
            .collect()
    }

    /// Follows Slurm job `slurm_id`, submitted for `job` by an earlier engine (its id from the
    /// key's lease), instead of submitting it again. It reports like a submitted job: still
    /// queued or running, it is followed to its end; finished meanwhile, its result file
    /// gives the outcome at the next poll.
    pub fn adopt(&mut self, id: JobId, job: &Job, slurm_id: &str) -> Result<(), ExecutorError> {
        if slurm_id.is_empty() || !slurm_id.chars().all(|c| c.is_ascii_digit()) {
            return Err(ExecutorError::Other(format!(
                "cannot follow {}: `{slurm_id}` is not a Slurm job id",
                job.label
            )));
        }
        self.jobs.insert(
            id,
            Followed {
                label: job.label.clone(),
                dir: JobDir::new(&job.cache_dir, &job.key),
                tracker: Tracker::new(slurm_id),
            },
        );
        self.events.push_back(JobEvent::Note {
            id,
            message: format!("following Slurm job {slurm_id}, submitted by an earlier run"),
        });
        self.last_poll = None;
        Ok(())
    }

    /// A job of this user, named for `job`'s key and writing its log into `dir`, that Slurm
    /// still queues or runs: submitted by an engine that died before it could record it.
    fn orphan(&self, job: &Job, dir: &JobDir) -> Option<String> {
        match self.tools.active_named(&job_name(job)) {
            Ok(jobs) => jobs
                .into_iter()
                .find(|(_, folder)| folder == dir.path())
                .map(|(slurm_id, _)| slurm_id),
            Err(e) => {
                tracing::warn!("looking for an earlier job for {}: {e}", job.label);
                None
            }
        }
    }

    /// Cancels every followed job with one `scancel`; their Slurm ids.
    pub fn cancel_all(&mut self) -> Vec<String> {
        let ids: Vec<String> = self
            .jobs
            .values_mut()
            .map(|f| {
                f.tracker.cancel_requested = true;
                f.tracker.slurm_id.clone()
            })
            .collect();
        if let Err(e) = self.tools.scancel(&ids) {
            tracing::warn!("{e}");
        }
        self.last_poll = None;
        ids
    }

    /// One poll of every followed job; queues what it learns as events.
    fn poll(&mut self) {
        self.last_poll = Some(Instant::now());
        let ids: Vec<String> = self
            .jobs
            .values()
            .map(|f| f.tracker.slurm_id.clone())
            .collect();
        let mut seen = match self.tools.squeue(&ids) {
            Ok(seen) => seen,
            Err(e) => {
                tracing::warn!("{e}; asking again at the next poll");
                return;
            }
        };
        let mut unknown = Vec::new();
        for id in &ids {
            let ask = seen.get(id).is_none_or(|s| s.state.ended());
            if !ask {
                continue;
            }
            match self.tools.scontrol(id) {
                Ok(Some(s)) => {
                    seen.insert(id.clone(), s);
                }
                Ok(None) if !seen.contains_key(id) => unknown.push(id.clone()),
                Ok(None) => {}
                Err(e) => tracing::warn!("{e}"),
            }
        }
        if !unknown.is_empty() && self.accounting {
            match self.tools.sacct(&unknown) {
                Some(found) => {
                    seen.extend(found.into_iter().filter(|(id, _)| unknown.contains(id)))
                }
                None => self.accounting = false,
            }
        }
        let mut finished = Vec::new();
        for (&id, f) in self.jobs.iter_mut() {
            let slurm_id = f.tracker.slurm_id.clone();
            let sighting = seen.remove(&slurm_id);
            let files = sighting.as_ref().is_none_or(|s| s.state.ended());
            let facts = Facts {
                sighting,
                result: if files {
                    f.dir.read_result(&slurm_id)
                } else {
                    None
                },
                exit: if files {
                    f.dir.read_exit(&slurm_id)
                } else {
                    None
                },
            };
            for step in f.tracker.observe(&facts) {
                match step {
                    Step::Note(message) => self.events.push_back(JobEvent::Note { id, message }),
                    Step::Finished(mut outcome) => {
                        if let JobOutcome::Failed(failure) = &mut *outcome {
                            if failure.log_tail.is_none() {
                                failure.log_tail = f.dir.log_tail(&slurm_id);
                            }
                            failure.message = format!(
                                "{} (log: {})",
                                failure.message,
                                f.dir.log(&slurm_id).display()
                            );
                        }
                        self.events.push_back(JobEvent::Finished {
                            id,
                            outcome: *outcome,
                        });
                        finished.push(id);
                    }
                }
            }
        }
        for id in finished {
            self.jobs.remove(&id);
        }
    }
}

/// The outcome job `slurm_id` of `key` wrote into the cache at `cache_dir`, if it finished
/// (for an engine that was down when it did).
pub fn recorded_outcome(cache_dir: &Path, key: &str, slurm_id: &str) -> Option<JobOutcome> {
    match JobDir::new(cache_dir, key).read_result(slurm_id)? {
        ResultFile::Outcome(outcome) => Some(*outcome),
        ResultFile::Unreadable(_) => None,
    }
}

impl Executor for SlurmExecutor {
    fn has_room(&self, _class: Resource) -> bool {
        self.max_jobs.is_none_or(|max| self.jobs.len() < max)
    }

    fn submit(&mut self, id: JobId, mut job: Job) -> Result<(), ExecutorError> {
        let submit_err = |message: String| ExecutorError::Submit {
            label: job.label.clone(),
            message,
        };
        let request = self.profile.request(job.resources.class);
        let gpu = request
            .gres
            .as_deref()
            .is_some_and(|g| g.starts_with("gpu"))
            || request.gpus.is_some();
        job.resources.device = if gpu { Device::Cuda(0) } else { Device::Cpu };
        job.resources.threads = request.cpus_per_task.unwrap_or(1) as usize;
        let dir = JobDir::new(&job.cache_dir, &job.key);
        // A job file from an earlier engine: it may have died between `sbatch` and recording
        // the job id in the lease. Follow that job if Slurm still holds it.
        if dir.job().exists() {
            if let Some(slurm_id) = self.orphan(&job, &dir) {
                return SlurmExecutor::adopt(self, id, &job, &slurm_id);
            }
        }
        let submission = render(
            &job,
            &dir,
            &request,
            self.profile.setup.as_deref(),
            &self.command,
        )
        .map_err(|e| submit_err(e.0))?;
        let json = serde_json::to_vec_pretty(&job).map_err(|e| submit_err(e.to_string()))?;
        let write = |path: &Path, bytes: &[u8]| {
            dir.write(path, bytes)
                .map_err(|e| submit_err(format!("writing {}: {e}", path.display())))
        };
        write(&dir.job(), &json)?;
        write(&dir.script(), submission.script.as_bytes())?;
        let slurm_id = self
            .tools
            .sbatch(&submission.args)
            .map_err(|e| submit_err(e.to_string()))?;
        self.events.push_back(JobEvent::Note {
            id,
            message: format!(
                "submitted {} as Slurm job {slurm_id} ({})",
                job.label,
                request.summary()
            ),
        });
        self.jobs.insert(
            id,
            Followed {
                label: job.label,
                dir,
                tracker: Tracker::new(slurm_id),
            },
        );
        Ok(())
    }

    fn external_job(&self, id: JobId) -> Option<ExternalJob> {
        self.jobs.get(&id).map(|f| ExternalJob {
            executor: EXECUTOR_NAME.to_string(),
            id: f.tracker.slurm_id.clone(),
            dir: f.dir.path().to_path_buf(),
        })
    }

    fn adopt(&mut self, id: JobId, job: Job, external: &ExternalJob) -> Result<(), ExecutorError> {
        if external.executor != EXECUTOR_NAME {
            return Err(ExecutorError::Other(format!(
                "cannot follow {} job {} for {}: it was not submitted to Slurm",
                external.executor, external.id, job.label
            )));
        }
        SlurmExecutor::adopt(self, id, &job, &external.id)
    }

    fn next_event(&mut self, timeout: Duration) -> Option<JobEvent> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(event) = self.events.pop_front() {
                return Some(event);
            }
            if self.jobs.is_empty() {
                return None;
            }
            let now = Instant::now();
            let due = self.last_poll.map_or(now, |last| last + self.poll_interval);
            if due <= now {
                self.poll();
                if self.events.is_empty() && Instant::now() >= deadline {
                    return None;
                }
                continue;
            }
            if deadline <= now {
                return None;
            }
            std::thread::sleep(due.min(deadline) - now);
        }
    }

    fn cancel(&mut self, id: JobId) {
        let Some(f) = self.jobs.get_mut(&id) else {
            return;
        };
        f.tracker.cancel_requested = true;
        if let Err(e) = self
            .tools
            .scancel(std::slice::from_ref(&f.tracker.slurm_id))
        {
            tracing::warn!("{e}");
        }
        self.last_poll = None;
    }

    fn shutdown(&mut self) {
        if !self.jobs.is_empty() {
            self.cancel_all();
        }
        self.jobs.clear();
        self.events.clear();
    }
}
