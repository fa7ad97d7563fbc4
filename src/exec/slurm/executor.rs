//! [`SlurmExecutor`]: ready instances submitted with as few `sbatch` calls as possible,
//! followed by polling until they end.
//!
//! `submit` writes the job (`job.json`) into the key's folder under the cache
//! ([`super::layout`]) and queues it; [`Executor::flush`], which the scheduler calls after
//! each round of starting what is ready, submits the queue: the instances of one stage (with
//! one request) as one job array (`sbatch --array=0-N%K`, `K` from `--max-jobs`), a lone
//! instance, or every instance when `arrays = false`, as a plain job. Following is a poll
//! every `poll_interval` seconds (10 by default: a login node is shared, and slurmctld
//! answers every user), one `squeue` for all followed jobs; a job that ended or left
//! `squeue`'s view is asked about with `scontrol show job`, then `sacct` where accounting
//! exists, and its files decide how it ended ([`super::tracker`] holds the rules). Results
//! come back through the shared object store; the executor hands the outcome to the
//! scheduler, which alone writes the index.
//!
//! A refused `sbatch` never ends the run. A refusal that passes (a per-user or QOS limit on
//! submitted jobs, a busy slurmctld) keeps the jobs queued here and tries again after a
//! back-off that doubles from `poll_interval` up to a minute; while jobs of this run are
//! still followed (their end frees the limit) it waits as long as they run, otherwise it
//! gives up after [`MAX_REFUSALS`] tries. Other refusals (an unknown partition) and a
//! refusal given up on end those jobs as failed (`REFUSED`, with sbatch's message). Jobs
//! already submitted are followed throughout. A cluster whose `MaxArraySize` refuses an
//! array gets plain jobs for the rest of the run.
//!
//! For an engine restart, the scheduler keeps each job's Slurm id and folder in the key's
//! lease ([`Executor::external_job`] after `flush`); a restarted engine that takes over the
//! lease of a dead one calls [`Executor::adopt`] (which is [`SlurmExecutor::adopt`]) instead
//! of submitting again, and gets the outcome as for any other job, including one that
//! finished while the engine was down (read from its result file by [`recorded_outcome`]).
//! An engine killed between `sbatch` returning and the lease write leaves a job no lease
//! names; `submit` finds it by its name and log folder (a plain job) or by its array's name
//! and element index (an array element) when the key's folder already holds a job file, and
//! follows it.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::exec::executor::{
    Executor, ExecutorError, ExternalJob, FailureReason, Job, JobEvent, JobFailure, JobId,
    JobOutcome,
};
use crate::kind::{Device, Resource};

use super::command::JobCommand;
use super::layout::{arrays_linking, parse_job_id, ArrayDir, JobDir, ResultFile};
use super::profile::{Request, SlurmProfile};
use super::script::{array_name, job_name, render, Batch};
use super::state::Sighting;
use super::tools::{ToolError, Tools};
use super::tracker::{condense_failure, Facts, Step, Tracker};

/// The executor's name in the [`ExternalJob`]s it records.
pub(crate) const EXECUTOR_NAME: &str = "slurm";

/// Elements in one job array at most (Slurm's default `MaxArraySize` is 1001: indices 0 to
/// 1000).
pub(crate) const MAX_ARRAY: usize = 1000;

/// Refused `sbatch` calls in a row, with no job of the run left to wait for, before the
/// refused jobs fail.
pub(crate) const MAX_REFUSALS: u32 = 8;

/// The longest wait between two tries of a refused `sbatch`.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Runs jobs as Slurm batch jobs. See the module docs.
#[derive(Debug)]
pub struct SlurmExecutor {
    profile: SlurmProfile,
    tools: Tools,
    command: JobCommand,
    max_jobs: Option<usize>,
    poll_interval: Duration,
    arrays: bool,
    jobs: BTreeMap<JobId, Followed>,
    queued: Vec<Queued>,
    refusals: Refusals,
    events: VecDeque<JobEvent>,
    last_poll: Option<Instant>,
    accounting: bool,
    /// The squeue failure last shown, until squeue answers again.
    shown_error: Option<String>,
    /// The queue reasons last shown.
    shown_reasons: Vec<String>,
    /// Active job ids by job name, asked once per flush (for jobs an engine died submitting).
    active_by_name: HashMap<String, Vec<String>>,
}

#[derive(Debug)]
struct Followed {
    label: String,
    dir: JobDir,
    tracker: Tracker,
}

/// A job accepted by `submit`, waiting for the next `sbatch`.
#[derive(Debug)]
struct Queued {
    id: JobId,
    job: Job,
    dir: JobDir,
    request: Request,
}

/// Refused `sbatch` calls: how many in a row, and when to try again.
#[derive(Debug, Default)]
struct Refusals {
    count: u32,
    waits: u32,
    next_try: Option<Instant>,
}

/// A followed job, for `status` and the summary after Ctrl-C.
#[derive(Debug, Clone, PartialEq)]
pub struct SlurmJobInfo {
    /// The scheduler's id.
    pub id: JobId,
    /// `stage[axis=value]`.
    pub label: String,
    /// Slurm's job id (`1234`, or `1234_7` for an array element).
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
        let profile_arrays = profile.arrays();
        Ok(SlurmExecutor {
            tools: Tools {
                bin_dir: profile.bin_dir.clone(),
            },
            poll_interval: Duration::from_secs_f64(profile.poll_interval()),
            profile,
            command,
            max_jobs,
            arrays: profile_arrays,
            jobs: BTreeMap::new(),
            queued: Vec::new(),
            refusals: Refusals::default(),
            events: VecDeque::new(),
            last_poll: None,
            accounting: true,
            shown_error: None,
            shown_reasons: Vec::new(),
            active_by_name: HashMap::new(),
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

    /// Follows Slurm job `slurm_id` (`1234`, or `1234_7` for an array element), submitted
    /// for `job` by an earlier engine (its id from the key's lease), instead of submitting it
    /// again. It reports like a submitted job: still queued or running, it is followed to its
    /// end; finished meanwhile, its result file gives the outcome at the next poll.
    pub fn adopt(&mut self, id: JobId, job: &Job, slurm_id: &str) -> Result<(), ExecutorError> {
        if parse_job_id(slurm_id).is_none() {
            return Err(ExecutorError::Other(format!(
                "cannot follow {}: `{slurm_id}` is not a Slurm job id",
                job.label
            )));
        }
        self.follow(
            id,
            job.label.clone(),
            JobDir::new(&job.cache_dir, &job.key),
            slurm_id,
        );
        self.events.push_back(JobEvent::Note {
            id,
            message: format!("following Slurm job {slurm_id}, submitted by an earlier run"),
        });
        self.last_poll = None;
        Ok(())
    }

    fn follow(&mut self, id: JobId, label: String, dir: JobDir, slurm_id: &str) {
        self.jobs.insert(
            id,
            Followed {
                label,
                dir,
                tracker: Tracker::new(slurm_id),
            },
        );
    }

    /// The active job ids of this user named `name` (asked once per flush).
    fn active_ids(&mut self, name: &str) -> Vec<String> {
        if let Some(ids) = self.active_by_name.get(name) {
            return ids.clone();
        }
        let ids = match self.tools.active_ids(name) {
            Ok(ids) => ids,
            Err(e) => {
                tracing::warn!("looking for earlier jobs named {name}: {e}");
                Vec::new()
            }
        };
        self.active_by_name.insert(name.to_string(), ids.clone());
        ids
    }

    /// A job of this user for `job`'s key that Slurm still queues or runs, submitted by an
    /// engine that died before it could record it: a plain job named for the key and writing
    /// its log into `dir`, or an element of an array whose folder links `dir`.
    fn orphan(&mut self, job: &Job, dir: &JobDir) -> Option<String> {
        if !self.active_ids(&job_name(job)).is_empty() {
            match self.tools.active_named(&job_name(job)) {
                Ok(jobs) => {
                    if let Some((slurm_id, _)) =
                        jobs.into_iter().find(|(_, folder)| folder == dir.path())
                    {
                        return Some(slurm_id);
                    }
                }
                Err(e) => tracing::warn!("looking for an earlier job for {}: {e}", job.label),
            }
        }
        for (array, index) in arrays_linking(&job.cache_dir, &job.key) {
            let suffix = format!("_{index}");
            let name = array_name(&job.stage, &array);
            if let Some(found) = self
                .active_ids(&name)
                .into_iter()
                .find(|id| id.ends_with(&suffix))
            {
                return Some(found);
            }
        }
        None
    }

    /// Cancels every followed job with one `scancel`, and drops the jobs not yet submitted;
    /// the Slurm ids cancelled.
    pub fn cancel_all(&mut self) -> Vec<String> {
        for q in std::mem::take(&mut self.queued) {
            self.events.push_back(JobEvent::Finished {
                id: q.id,
                outcome: not_submitted(&q.job.label),
            });
        }
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

    /// A line for the terminal that is about no job in particular (the queue, squeue), shown
    /// under the first followed job.
    fn cluster_note(&mut self, message: String) {
        let id = self
            .jobs
            .keys()
            .next()
            .copied()
            .or_else(|| self.queued.first().map(|q| q.id));
        if let Some(id) = id {
            self.events.push_back(JobEvent::Note { id, message });
        }
    }

    /// Submits the queued jobs, a job array per stage and request where it can.
    fn submit_queued(&mut self) {
        self.active_by_name.clear();
        if self.queued.is_empty() {
            return;
        }
        if self.refusals.next_try.is_some_and(|at| Instant::now() < at) {
            return;
        }
        let mut groups: Vec<Vec<Queued>> = Vec::new();
        for q in std::mem::take(&mut self.queued) {
            let same = groups.iter_mut().find(|g| {
                let first = &g[0];
                first.job.stage == q.job.stage
                    && first.job.project_dir == q.job.project_dir
                    && first.job.cache_dir == q.job.cache_dir
                    && first.request == q.request
                    && g.len() < MAX_ARRAY
            });
            match same {
                Some(group) => group.push(q),
                None => groups.push(vec![q]),
            }
        }
        let mut groups = groups.into_iter();
        for group in groups.by_ref() {
            if let Err(back) = self.submit_group(group) {
                self.queued.extend(back);
                break;
            }
        }
        for rest in groups {
            self.queued.extend(rest);
        }
    }

    /// One `sbatch` for `group` (a job array, or a plain job for one instance or without
    /// arrays); the jobs to queue again when the refusal passes.
    fn submit_group(&mut self, group: Vec<Queued>) -> Result<(), Vec<Queued>> {
        if !(self.arrays && group.len() > 1) {
            let mut group = group.into_iter();
            while let Some(q) = group.next() {
                if let Err(mut back) = self.submit_single(q) {
                    back.extend(group);
                    return Err(back);
                }
            }
            return Ok(());
        }
        let jobs: Vec<&Job> = group.iter().map(|q| &q.job).collect();
        let keys: Vec<&str> = jobs.iter().map(|j| j.key.as_str()).collect();
        let array = ArrayDir::new(&group[0].job.cache_dir, &keys);
        let batch = Batch::Array {
            jobs: &jobs,
            dir: &array,
            throttle: self.max_jobs,
        };
        let prepared = render(
            batch,
            &group[0].request,
            self.profile.setup.as_deref(),
            &self.command,
        )
        .map_err(|e| e.0)
        .and_then(|sub| {
            for (i, key) in keys.iter().enumerate() {
                array
                    .link(i, key)
                    .map_err(|e| format!("linking {}: {e}", array.path().display()))?;
            }
            array
                .write_script(&sub.script)
                .map_err(|e| format!("writing {}: {e}", array.script().display()))?;
            Ok(sub)
        });
        let submission = match prepared {
            Ok(sub) => sub,
            Err(message) => {
                self.fail_all(group, &message);
                return Ok(());
            }
        };
        match self.tools.sbatch(&submission.args) {
            Ok(array_id) => {
                self.refusals = Refusals::default();
                let n = group.len();
                let throttle = self
                    .max_jobs
                    .map(|k| format!(", at most {k} at once"))
                    .unwrap_or_default();
                for (i, q) in group.into_iter().enumerate() {
                    let slurm_id = format!("{array_id}_{i}");
                    self.events.push_back(JobEvent::Note {
                        id: q.id,
                        message: format!(
                            "submitted {} as Slurm job {slurm_id} (element {i} of an array of \
                             {n}{throttle}; {})",
                            q.job.label,
                            q.request.summary()
                        ),
                    });
                    self.follow(q.id, q.job.label, q.dir, &slurm_id);
                }
                Ok(())
            }
            Err(e) if e.message.to_ascii_lowercase().contains("array") => {
                self.arrays = false;
                self.cluster_note(format!(
                    "{e}: this cluster refuses the job array, so this run submits one job per \
                     instance (set `arrays = false` in [executor.slurm] to skip the attempt)"
                ));
                Err(group)
            }
            Err(e) => self.refused(group, e),
        }
    }

    /// One plain job.
    fn submit_single(&mut self, q: Queued) -> Result<(), Vec<Queued>> {
        let submission = match render(
            Batch::Single(&q.job, &q.dir),
            &q.request,
            self.profile.setup.as_deref(),
            &self.command,
        ) {
            Ok(sub) => sub,
            Err(e) => {
                self.fail_all(vec![q], &e.0);
                return Ok(());
            }
        };
        if let Err(e) = q.dir.write(&q.dir.script(), submission.script.as_bytes()) {
            let message = format!("writing {}: {e}", q.dir.script().display());
            self.fail_all(vec![q], &message);
            return Ok(());
        }
        match self.tools.sbatch(&submission.args) {
            Ok(slurm_id) => {
                self.refusals = Refusals::default();
                self.events.push_back(JobEvent::Note {
                    id: q.id,
                    message: format!(
                        "submitted {} as Slurm job {slurm_id} ({})",
                        q.job.label,
                        q.request.summary()
                    ),
                });
                self.follow(q.id, q.job.label, q.dir, &slurm_id);
                Ok(())
            }
            Err(e) => self.refused(vec![q], e),
        }
    }

    /// `sbatch` refused `jobs`: queue them again after a back-off when the refusal passes
    /// (see the module docs), or end them as failed.
    fn refused(&mut self, jobs: Vec<Queued>, e: ToolError) -> Result<(), Vec<Queued>> {
        let n = jobs.len();
        let what = if n == 1 {
            jobs[0].job.label.clone()
        } else {
            format!("{n} instances of {}", jobs[0].job.stage)
        };
        if !passes(&e.message) {
            self.fail_all(jobs, &format!("sbatch refused {what}: {}", e.message));
            return Ok(());
        }
        let followed = self.jobs.len();
        if followed == 0 {
            self.refusals.count += 1;
        }
        if self.refusals.count >= MAX_REFUSALS {
            let tries = self.refusals.count + self.refusals.waits;
            self.refusals = Refusals::default();
            self.fail_all(
                jobs,
                &format!(
                    "sbatch refused {what} {tries} times, the last: {}; submit fewer jobs at \
                     once (--max-jobs) or ask the cluster's administrators about the limit",
                    e.message
                ),
            );
            return Ok(());
        }
        self.refusals.waits += u32::from(followed > 0);
        let tries = self.refusals.count + self.refusals.waits;
        let delay = self
            .poll_interval
            .saturating_mul(1 << (tries - 1).min(16))
            .min(MAX_BACKOFF);
        self.refusals.next_try = Some(Instant::now() + delay);
        let bound = if followed > 0 {
            format!(
                "the {followed} jobs of this run already submitted are followed, and trying \
                 goes on while they run"
            )
        } else {
            format!(
                "try {} of {MAX_REFUSALS} with no job of this run in Slurm",
                self.refusals.count
            )
        };
        self.events.push_back(JobEvent::Note {
            id: jobs[0].id,
            message: format!(
                "sbatch refused {what} ({}); trying again in {:.0} s ({bound})",
                e.message,
                delay.as_secs_f64().max(1.0)
            ),
        });
        Err(jobs)
    }

    /// Ends `jobs` as failed without a Slurm job.
    fn fail_all(&mut self, jobs: Vec<Queued>, message: &str) {
        for q in jobs {
            self.events.push_back(JobEvent::Finished {
                id: q.id,
                outcome: JobOutcome::Failed(JobFailure {
                    reason: FailureReason::Executor {
                        job_id: "none".into(),
                        state: "REFUSED".into(),
                    },
                    message: format!("submitting {}: {message}", q.job.label),
                    log_tail: None,
                }),
            });
        }
    }

    /// One poll of every followed job; queues what it learns as events.
    fn poll(&mut self) {
        self.last_poll = Some(Instant::now());
        let ids: Vec<String> = self
            .jobs
            .values()
            .map(|f| f.tracker.slurm_id.clone())
            .collect();
        if ids.is_empty() {
            return;
        }
        let Some(seen) = self.sightings(&ids) else {
            return;
        };
        self.observe(seen);
        self.note_queue();
    }

    /// What the cluster says of the jobs `ids`: `squeue`, then `scontrol` for those it does
    /// not show running or queued, then accounting for those neither knows. `None` when
    /// `squeue` fails (said once, until it answers again).
    fn sightings(&mut self, ids: &[String]) -> Option<BTreeMap<String, Sighting>> {
        let mut seen = match self.tools.squeue(ids) {
            Ok(seen) => {
                if self.shown_error.take().is_some() {
                    self.cluster_note("squeue answers again".to_string());
                }
                seen
            }
            Err(e) => {
                let message = e.to_string();
                if self.shown_error.as_ref() != Some(&message) {
                    self.cluster_note(format!(
                        "{message}; the {} jobs of this run are still followed, asking again \
                         every {:.0} s",
                        ids.len(),
                        self.poll_interval.as_secs_f64().max(1.0)
                    ));
                    self.shown_error = Some(message);
                }
                return None;
            }
        };
        let mut unknown = Vec::new();
        for id in ids {
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
        Some(seen)
    }

    /// Feeds each followed job what was seen of it and the files it left, queues the notes
    /// and outcomes its tracker draws from them, and stops following the finished ones.
    fn observe(&mut self, mut seen: BTreeMap<String, Sighting>) {
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
                                failure.log_tail = f.dir.log_tail_of(&slurm_id, 400);
                            }
                            condense_failure(failure);
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

    /// Why the followed jobs wait in the queue, shown once and again when the reasons
    /// change: a drained node or a limit is seen, not silently waited for.
    fn note_queue(&mut self) {
        let mut waiting: BTreeMap<String, (usize, JobId)> = BTreeMap::new();
        for (&id, f) in &self.jobs {
            if !f.tracker.last.as_ref().is_some_and(|s| s.queued()) {
                continue;
            }
            let reason = f
                .tracker
                .reason
                .clone()
                .unwrap_or_else(|| "no reason given".into());
            waiting.entry(reason).or_insert((0, id)).0 += 1;
        }
        let reasons: Vec<String> = waiting.keys().cloned().collect();
        if reasons == self.shown_reasons {
            return;
        }
        self.shown_reasons = reasons;
        let Some(&(_, first)) = waiting.values().next() else {
            return;
        };
        let parts: Vec<String> = waiting
            .iter()
            .map(|(reason, (n, _))| {
                format!(
                    "{n} {} ({reason}){}",
                    if *n == 1 { "job" } else { "jobs" },
                    explain_reason(reason)
                )
            })
            .collect();
        self.events.push_back(JobEvent::Note {
            id: first,
            message: format!("waiting in Slurm's queue: {}", parts.join("; ")),
        });
    }
}

/// Whether an `sbatch` refusal passes by itself: a limit on jobs submitted or running (which
/// the end of other jobs lifts), or a slurmctld that is busy or briefly unreachable.
pub fn passes(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "maxsubmit",
        "submit limit",
        "job violates accounting/qos policy",
        "qosmax",
        "assocmax",
        "maxjobcount",
        "max_job_count",
        "temporarily",
        "socket timed out",
        "unable to contact slurm controller",
        "slurm_receive_msg",
        "connection refused",
        "try again",
        "slurmctld is busy",
    ]
    .iter()
    .any(|pattern| m.contains(pattern))
}

/// A word on queue reasons that mean a wait may not end by itself.
fn explain_reason(reason: &str) -> &'static str {
    let r = reason.to_ascii_lowercase();
    if r.contains("reqnodenotavail")
        || r.contains("drain")
        || r.contains("nodedown")
        || r.contains("down")
    {
        " - a node it needs is down, drained or reserved; `sinfo -R` says why"
    } else if r.contains("partitionnodelimit") || r.contains("partitiontimelimit") {
        " - it asks for more than the partition allows; check the profile's class"
    } else if r.contains("assoc") || r.contains("qos") {
        " - a limit of your account or QOS; it starts when your other jobs end"
    } else {
        ""
    }
}

/// How a job that never reached Slurm ends when the run is cancelled.
fn not_submitted(label: &str) -> JobOutcome {
    JobOutcome::Failed(JobFailure {
        reason: FailureReason::Interrupted,
        message: format!("{label} was not submitted yet"),
        log_tail: None,
    })
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
        // With arrays, --max-jobs throttles each array (`%K`) instead: every ready instance
        // of a stage goes into one array.
        self.arrays
            || self
                .max_jobs
                .is_none_or(|max| self.jobs.len() + self.queued.len() < max)
    }

    fn submit(&mut self, id: JobId, mut job: Job) -> Result<(), ExecutorError> {
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
        let submit_err = |message: String| ExecutorError::Submit {
            label: job.label.clone(),
            message,
        };
        render(
            Batch::Single(&job, &dir),
            &request,
            self.profile.setup.as_deref(),
            &self.command,
        )
        .map_err(|e| submit_err(e.0))?;
        let json = serde_json::to_vec_pretty(&job).map_err(|e| submit_err(e.to_string()))?;
        dir.write(&dir.job(), &json)
            .map_err(|e| submit_err(format!("writing {}: {e}", dir.job().display())))?;
        self.queued.push(Queued {
            id,
            job,
            dir,
            request,
        });
        Ok(())
    }

    fn flush(&mut self) {
        self.submit_queued();
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
            if !self.queued.is_empty() {
                self.submit_queued();
                if !self.events.is_empty() {
                    continue;
                }
            }
            if self.jobs.is_empty() && self.queued.is_empty() {
                return None;
            }
            let now = Instant::now();
            let mut due = self.last_poll.map_or(now, |last| last + self.poll_interval);
            if self.jobs.is_empty() {
                due = self.refusals.next_try.unwrap_or(now + self.poll_interval);
            } else if let Some(at) = self.refusals.next_try.filter(|_| !self.queued.is_empty()) {
                due = due.min(at);
            }
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
        if let Some(at) = self.queued.iter().position(|q| q.id == id) {
            let q = self.queued.remove(at);
            self.events.push_back(JobEvent::Finished {
                id,
                outcome: not_submitted(&q.job.label),
            });
            return;
        }
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
        if !self.jobs.is_empty() || !self.queued.is_empty() {
            self.cancel_all();
        }
        self.jobs.clear();
        self.queued.clear();
        self.events.clear();
    }
}
