//! The scheduler's driver: walks the instance DAG, skipping what the cache holds and handing
//! the rest to an [`Executor`].
//!
//! The rules live in the state machine ([`super::schedule`]); this file does the I/O around
//! it. An instance becomes ready when every input is done; its key is computed then (inputs
//! enter the key by content) and looked up. A miss is submitted to the executor once it has
//! room (a device slot for the kinds that need one).
//!
//! Before a miss runs, the scheduler takes the key's lease in the index. If another process
//! holds it, the instance waits and checks again; when that process finishes, the result is a
//! cache hit, so no key is ever computed twice. A lease whose process died is taken over.
//! Within one process, two instances with the same key (same work) run once. A job that runs
//! outside the engine (a Slurm job) is named in the lease; an engine that takes over the lease
//! of a dead one follows that job ([`Executor::adopt`]) instead of submitting another.
//!
//! Results are recorded by this thread only, one transaction per instance, after the job moved
//! every output into the object store. A job whose process died is tried again `--retries`
//! times; an input found corrupt sends its producer back to run, a bounded number of times.
//! Ctrl-C stops dispatching and cancels what runs; nothing half-done is recorded.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::executor::{
    Executor, FailureReason, Job, JobEvent, JobFailure, JobInput, JobOutcome, JobResult, Resources,
};
use super::freshness::{binding_json, dirty_reasons, fingerprint, instance_key, outputs_present};
use super::local::{LocalExecutor, LocalOptions};
use super::progress::Progress;
use super::schedule::{
    Schedule, State, MAX_BAD_INPUT_ROUNDS, STOPPED_BY_FAILURE, STOPPED_BY_INTERRUPT,
};
use crate::cache::why::{join, DirtyReason};
use crate::cache::{
    Cache, Heartbeat, Index, IndexError, IndexHasher, Lease, LockMode, Presence, RunRecord,
    StageKey,
};
use crate::graph::Plan;
use crate::kind::{Device, InputArtifact, Registry};

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Worker threads for stages (`--jobs`).
    pub jobs: usize,
    /// Keep running branches that do not depend on a failure.
    pub keep_going: bool,
    /// Show progress bars (off for `--json` and when stderr is not a terminal).
    pub progress: bool,
    /// Device slots on a machine without GPUs: trainings at once (`--device-slots`).
    pub device_slots: usize,
    /// How often a job whose process died (or whose cluster node failed) is tried again.
    pub retries: usize,
    /// Instances (indices into the plan) to recompute even when the cache holds them
    /// (`--force`); the result is recorded under the same key, the old objects stay until gc.
    pub force: std::collections::BTreeSet<usize>,
    /// The team's remote cache: local misses are pulled from it (verified), and what runs is
    /// pushed to it when it says so. `None` with `--offline` or without a remote.
    pub remote: Option<Arc<crate::cache::remote::Remote>>,
}

impl RunOptions {
    /// `jobs` at once, one device slot, no retries, with or without progress bars.
    pub fn new(jobs: usize, keep_going: bool, progress: bool) -> Self {
        RunOptions {
            jobs,
            keep_going,
            progress,
            device_slots: 1,
            retries: 0,
            force: Default::default(),
            remote: None,
        }
    }
}

/// What happened to one instance.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Its result was already in the cache.
    Cached,
    /// It ran now.
    Ran,
    /// It failed.
    Failed,
    /// It did not run (an input failed, or the run was stopped).
    Skipped,
}

/// One line of a run's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct InstanceOutcome {
    /// The stage.
    pub stage: String,
    /// Its sweep binding.
    pub binding: BTreeMap<String, serde_json::Value>,
    /// The key, when it could be computed.
    pub key: Option<String>,
    /// What happened.
    pub status: Status,
    /// Why it ran, failed or was skipped.
    pub reason: String,
    /// Seconds it ran.
    pub seconds: Option<f64>,
}

/// The outcome of a whole run.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// The pipeline.
    pub pipeline: String,
    /// One entry per instance, in plan order.
    pub instances: Vec<InstanceOutcome>,
    /// Whether Ctrl-C stopped the run.
    pub interrupted: bool,
}

impl RunSummary {
    /// Whether every instance is cached or ran.
    pub fn success(&self) -> bool {
        !self.interrupted
            && self
                .instances
                .iter()
                .all(|i| matches!(i.status, Status::Cached | Status::Ran))
    }

    /// How many instances have `status`.
    pub fn count(&self, status: Status) -> usize {
        self.instances.iter().filter(|i| i.status == status).count()
    }
}

/// A scheduler error that stops the run (the index is unusable, say).
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The cache index failed.
    #[error(transparent)]
    Index(#[from] crate::cache::IndexError),
    /// The executor could not take a job.
    #[error(transparent)]
    Executor(#[from] super::executor::ExecutorError),
    /// The cache is being garbage-collected.
    #[error(transparent)]
    Lock(#[from] crate::cache::LockError),
}

/// Runs `plan` against `cache` on this machine ([`LocalExecutor`]).
pub fn run(
    plan: &Plan,
    registry: &Arc<Registry>,
    cache: &Cache,
    options: &RunOptions,
    cancel: &Arc<AtomicBool>,
) -> Result<RunSummary, ExecError> {
    let mut executor = LocalExecutor::new(
        Arc::clone(registry),
        LocalOptions {
            jobs: options.jobs,
            device_slots: options.device_slots,
        },
    )?;
    let summary = run_with(plan, registry, cache, options, cancel, &mut executor);
    executor.shutdown();
    summary
}

/// Runs `plan` against `cache`, the misses on `executor`.
pub(crate) fn run_with(
    plan: &Plan,
    registry: &Arc<Registry>,
    cache: &Cache,
    options: &RunOptions,
    cancel: &Arc<AtomicBool>,
    executor: &mut dyn Executor,
) -> Result<RunSummary, ExecError> {
    // Held for the whole run, so `cache gc` never deletes objects stored but not yet recorded.
    let _gc_guard = cache.lock(LockMode::Shared)?;
    let owner = format!(
        "{}:{}:{:x}",
        crate::cache::store::host_name(),
        std::process::id(),
        rand::random::<u64>()
    );
    let _heartbeat = Heartbeat::start(cache.dir(), &owner)?;
    let mut driver = Driver::new(plan, registry, cache, options, executor, owner)?;
    let driven = drive(&mut driver, cancel);
    // Leases are released whatever happened; one the index cannot release (a full disk) is
    // taken over by the next run once this process is gone.
    if let Err(e) = driver.index.release_all(&driver.owner) {
        driver
            .progress
            .println(&format!("note    could not release this run's leases: {e}"));
    }
    driven?;
    driver.progress.finish();
    Ok(driver.summary(cancel.load(Ordering::Relaxed)))
}

/// The scheduler's loop, until nothing runs and nothing more may start.
fn drive(driver: &mut Driver<'_>, cancel: &AtomicBool) -> Result<(), ExecError> {
    loop {
        if cancel.load(Ordering::Relaxed) && !driver.schedule.stopping() {
            for i in driver.schedule.cancel() {
                driver.executor.cancel(i);
            }
        }
        driver.key_promotable();
        driver.start_ready()?;
        if driver.schedule.finished(!driver.lease_wait.is_empty()) {
            driver.schedule.close(if cancel.load(Ordering::Relaxed) {
                STOPPED_BY_INTERRUPT
            } else {
                STOPPED_BY_FAILURE
            });
            return Ok(());
        }
        // Wait for an executor event (or a timeout for leases, heartbeats and Ctrl-C).
        if let Some(event) = driver.executor.next_event(Duration::from_millis(100)) {
            driver.on_event(event);
        }
    }
}

/// An instance's record as the index answered (none: no result under its key).
type Looked = Result<Option<RunRecord>, IndexError>;

/// An instance whose inputs are done, with its key's digest.
struct Keyed {
    i: usize,
    digest: String,
}

/// The I/O around the [`Schedule`] during one run: the index, the leases, the executor and
/// the terminal. Each method does one step of the loop in [`run_with`]; the rules are the
/// schedule's.
struct Driver<'a> {
    plan: &'a Plan,
    registry: &'a Registry,
    cache: &'a Cache,
    options: &'a RunOptions,
    executor: &'a mut dyn Executor,
    index: Index,
    hasher: IndexHasher,
    /// This run's name in the leases it takes.
    owner: String,
    schedule: Schedule,
    progress: Progress,
    bars: HashMap<usize, indicatif::ProgressBar>,
    /// Instances whose lease another process holds, and since when we last asked.
    lease_wait: HashMap<usize, Instant>,
    /// Fingerprints (hashes of the files a stage reads) computed so far.
    fingerprints: HashMap<usize, serde_json::Value>,
    /// Submitted instances whose job outside this process (a Slurm job) is not yet named in
    /// their lease: a batching executor names it at its next flush.
    unrecorded: Vec<usize>,
}

impl<'a> Driver<'a> {
    fn new(
        plan: &'a Plan,
        registry: &'a Registry,
        cache: &'a Cache,
        options: &'a RunOptions,
        executor: &'a mut dyn Executor,
        owner: String,
    ) -> Result<Self, ExecError> {
        let schedule = Schedule::new(
            plan.instances().iter().map(|inst| inst.label()).collect(),
            plan.instances()
                .iter()
                .map(|inst| inst.inputs.values().flatten().copied().collect())
                .collect(),
            plan.order().to_vec(),
            options.keep_going,
            options.retries,
        );
        Ok(Driver {
            plan,
            registry,
            cache,
            options,
            executor,
            index: cache.index()?,
            hasher: IndexHasher::new(cache.index()?),
            owner,
            schedule,
            progress: Progress::new(options.progress, plan.instances().len() as u64),
            bars: HashMap::new(),
            lease_wait: HashMap::new(),
            fingerprints: HashMap::new(),
            unrecorded: Vec::new(),
        })
    }

    fn label(&self, i: usize) -> String {
        self.plan.instances()[i].label()
    }

    /// Instance `i` failed because the index could not `what` (a full disk, an I/O error):
    /// that stage fails, nothing half-done is recorded, and the run goes on as after any
    /// failure (on with `--keep-going`, else it stops launching).
    fn index_failed(&mut self, i: usize, what: &str, error: &dyn std::fmt::Display) {
        self.progress
            .println(&format!("failed  {} (details below)", self.label(i)));
        self.progress.inc();
        self.schedule.fail(
            i,
            format!(
                "the cache index could not {what}: {error}; nothing was recorded for it (if \
                 the disk under the cache is full, free space and run again)"
            ),
        );
    }

    /// Keys the instances whose inputs are all done (a hit is done, a miss ready); skips
    /// those whose inputs failed. Their results are read in key order in one read snapshot
    /// (keys are blake3 digests: in plan order each look-up lands on a page of the index far
    /// from the last) and their outputs checked in one pass over the store, as `plan` does; a
    /// no-op `run` of a 100,000-instance sweep read the index and the store one instance at a
    /// time. They are then decided in plan order, so misses start in that order.
    fn key_promotable(&mut self) {
        let (promotable, skipped) = self.schedule.promotable();
        for _ in skipped {
            self.progress.inc();
        }
        let keyed: Vec<Keyed> = promotable
            .into_iter()
            .filter_map(|i| self.key_of(i))
            .collect();
        if keyed.is_empty() {
            return;
        }
        let mut found = self.look_up_in_key_order(&keyed);
        let mut present = self.cache.objects().presence();
        for (at, keyed) in keyed.into_iter().enumerate() {
            let i = keyed.i;
            if let Err(e) = self.decide(keyed, found[at].take(), &mut present) {
                self.index_failed(i, "look its key up", &e);
            }
        }
    }

    /// Instance `i` keyed, its inputs done; `None` when its external data cannot be
    /// fingerprinted (it failed). Only the key's digest is kept (a miss makes the key again):
    /// holding a batch of 100,000 keys raised a no-op `run`'s peak by 19 MiB.
    fn key_of(&mut self, i: usize) -> Option<Keyed> {
        let (plan, registry) = (self.plan, self.registry);
        let inst = &plan.instances()[i];
        let fp = match self.fingerprints.get(&i) {
            Some(fp) => fp.clone(),
            None => match fingerprint(plan, inst, registry, &self.hasher) {
                Ok(fp) => {
                    self.fingerprints.insert(i, fp.clone());
                    fp
                }
                Err(e) => {
                    self.progress.println(&format!("failed  {}", inst.label()));
                    self.progress.inc();
                    self.schedule.fail(i, format!("fingerprint: {e}"));
                    return None;
                }
            },
        };
        Some(Keyed {
            i,
            digest: self.key(i, fp).digest(),
        })
    }

    /// Instance `i`'s key from its fingerprint `fp`, its inputs done.
    fn key(&self, i: usize, fp: serde_json::Value) -> StageKey {
        let (plan, schedule) = (self.plan, &self.schedule);
        let inst = &plan.instances()[i];
        instance_key(
            plan,
            inst,
            self.registry,
            &|u| schedule.record(u).cloned(),
            fp,
        )
        .expect("inputs are done and the kind is registered")
    }

    /// The index's record for each of `keyed` not forced to run (`None` for the forced), read
    /// in key order in one read snapshot.
    fn look_up_in_key_order(&self, keyed: &[Keyed]) -> Vec<Option<Looked>> {
        let mut order: Vec<usize> = (0..keyed.len())
            .filter(|&at| !self.options.force.contains(&keyed[at].i))
            .collect();
        order.sort_unstable_by(|&a, &b| keyed[a].digest.cmp(&keyed[b].digest));
        let _snapshot = self.index.read_snapshot();
        let mut found: Vec<Option<Looked>> = keyed.iter().map(|_| None).collect();
        for at in order {
            found[at] = Some(self.index.lookup(&keyed[at].digest));
        }
        found
    }

    /// Instance `keyed` decided from its record (`found`; `None` when it is forced): a hit when
    /// every output is in the store (asked in `present`, the batch's pass), else pulled from the
    /// remote when it holds it, else ready to run, with why.
    fn decide(
        &mut self,
        keyed: Keyed,
        found: Option<Looked>,
        present: &mut Presence<'_>,
    ) -> Result<(), ExecError> {
        let Keyed { i, digest } = keyed;
        let inst = &self.plan.instances()[i];
        let Some(found) = found else {
            let key = self.key(i, self.fingerprints[&i].clone());
            self.schedule
                .ready(i, key, digest, vec![DirtyReason::Forced]);
            return Ok(());
        };
        if let Some(record) = found? {
            if record.outputs.values().all(|o| present(&o.digest)) {
                self.schedule.hit(i, record);
                self.progress.inc();
                return Ok(());
            }
        }
        let progress = &self.progress;
        if let Some(record) = self
            .options
            .remote
            .as_ref()
            .and_then(|r| r.read_through(self.cache, &digest, &|m| progress.println(m)))
        {
            self.progress
                .println(&format!("pulled  {} from the remote", inst.label()));
            self.schedule.hit(i, record);
            self.progress.inc();
            return Ok(());
        }
        let key = self.key(i, self.fingerprints[&i].clone());
        let pipeline = &self.plan.spec().name;
        let reasons = dirty_reasons(&self.index, self.cache, pipeline, inst, &key, &digest);
        self.schedule.ready(i, key, digest, reasons);
        Ok(())
    }

    /// Starts ready instances while the executor has room, then has the executor submit
    /// them (one batch where it can) and names their jobs in their leases.
    fn start_ready(&mut self) -> Result<(), ExecError> {
        for i in self.schedule.startable() {
            match self.try_start(i) {
                Err(ExecError::Index(e)) => self.index_failed(i, "lease or look up its key", &e),
                other => other?,
            }
        }
        self.executor.flush();
        self.record_external()
    }

    /// Names in the lease of each submitted instance the job outside this process running it,
    /// once the executor knows it.
    fn record_external(&mut self) -> Result<(), ExecError> {
        let mut left = Vec::new();
        for i in std::mem::take(&mut self.unrecorded) {
            let State::Running { digest, .. } = self.schedule.state(i) else {
                continue;
            };
            match self.executor.external_job(i) {
                Some(external) => self
                    .index
                    .set_external(digest, &self.owner, Some(&external))?,
                None => left.push(i),
            }
        }
        self.unrecorded = left;
        Ok(())
    }

    /// Starts ready instance `i` if the executor has room and its lease is free (or held by a
    /// dead engine, whose job it then follows).
    fn try_start(&mut self, i: usize) -> Result<(), ExecError> {
        let State::Ready { key, digest, .. } = self.schedule.state(i).clone() else {
            return Ok(());
        };
        if self
            .lease_wait
            .get(&i)
            .is_some_and(|since| since.elapsed() < Duration::from_millis(500))
        {
            return Ok(());
        }
        let inst = &self.plan.instances()[i];
        let stage = self.registry.get(&inst.kind).expect("kinds are resolved");
        let class = stage.resource(&inst.params);
        if !self.executor.has_room(class) {
            return Ok(());
        }
        let adopt = match self.index.try_lease(&digest, &self.owner)? {
            Lease::HeldBy { host, pid } => {
                if self.lease_wait.insert(i, Instant::now()).is_none() {
                    self.progress.println(&format!(
                        "waiting {}: another asymflow (pid {pid} on {host}) is computing it",
                        inst.label()
                    ));
                }
                return Ok(());
            }
            Lease::Acquired => None,
            Lease::Adopt(external) => Some(external),
        };
        self.lease_wait.remove(&i);
        // Another process may have finished it while we waited for the lease.
        let finished = self.index.lookup(&digest).inspect_err(|_| {
            let _ = self.index.release(&digest, &self.owner);
        })?;
        if let Some(record) = finished {
            if outputs_present(self.cache, &record) && !self.options.force.contains(&i) {
                self.index.release(&digest, &self.owner)?;
                self.schedule.hit(i, record);
                self.progress.inc();
                return Ok(());
            }
        }
        let mut job = make_job(
            self.plan,
            i,
            &key,
            &digest,
            &self.schedule,
            self.cache,
            class,
        );
        if stage.reads_draws() {
            attach_draws(&mut job, self.plan, i, self.registry);
        }
        let key_json = job.key_json.clone();
        // A dead engine's job for this key may still be queued, running or finished: follow
        // it rather than submit a second one.
        let adopted = match &adopt {
            Some(external) => match self.executor.adopt(i, job.clone(), external) {
                Ok(()) => true,
                Err(e) => {
                    self.progress
                        .println(&format!("note    {}: {e}; running it again", inst.label()));
                    false
                }
            },
            None => false,
        };
        if !adopted {
            if let Err(e) = self.executor.submit(i, job) {
                self.index.release(&digest, &self.owner)?;
                return Err(e.into());
            }
            // The lease names the job outside this process once the executor has submitted
            // it, or (taken over from a dead engine whose job this executor cannot follow)
            // no longer names any.
            let external = self.executor.external_job(i);
            if external.is_some() || adopt.is_some() {
                if let Err(e) = self
                    .index
                    .set_external(&digest, &self.owner, external.as_ref())
                {
                    self.progress.println(&format!(
                        "note    {}: the lease could not name its job: {e}",
                        inst.label()
                    ));
                }
            }
            if external.is_none() {
                self.unrecorded.push(i);
            }
        }
        self.schedule.start(i, key_json, Instant::now());
        if let Some(bar) = self.progress.stage_bar(&inst.label()) {
            self.bars.insert(i, bar);
        }
        Ok(())
    }

    /// One event from the executor: a note or progress for the terminal, or a finished job.
    /// An event naming no instance of the plan is dropped with a note: executors report what
    /// their workers say, and a worker's word is not trusted.
    fn on_event(&mut self, event: JobEvent) {
        let id = match &event {
            JobEvent::Note { id, .. }
            | JobEvent::Progress { id, .. }
            | JobEvent::Finished { id, .. } => *id,
        };
        if id >= self.plan.instances().len() {
            self.progress.println(&format!(
                "note    ignored an executor event about job {id}, which this run never \
                 submitted"
            ));
            return;
        }
        match event {
            JobEvent::Note { id, message } => {
                self.progress
                    .println(&format!("note    {}: {message}", self.label(id)));
            }
            JobEvent::Progress {
                id,
                position,
                length,
                message,
            } => {
                if let Some(bar) = self.bars.get(&id) {
                    bar.set_length(length);
                    bar.set_position(position);
                    bar.set_message(format!("{} {message}", self.label(id)));
                }
            }
            JobEvent::Finished { id, outcome } => self.on_finished(id, outcome),
        }
    }

    /// A job ended: record its result in one transaction, or decide what its failure means.
    /// The index failing to do so fails this stage only.
    fn on_finished(&mut self, i: usize, outcome: JobOutcome) {
        if let Some(bar) = self.bars.remove(&i) {
            bar.finish_and_clear();
        }
        let State::Running {
            digest,
            key_json,
            reasons,
            started,
        } = self.schedule.state(i).clone()
        else {
            return;
        };
        if let Err(e) = self.index.release(&digest, &self.owner) {
            self.progress.println(&format!(
                "note    {}: could not release its lease: {e}",
                self.label(i)
            ));
        }
        let kind = &self.plan.instances()[i].kind;
        let outcome = contract_checked(objects_checked(outcome, self.cache), self.registry, kind);
        let recorded = match outcome {
            JobOutcome::Done(result) => {
                self.on_success(i, &digest, &key_json, &reasons, started, *result)
            }
            JobOutcome::Failed(failure) => self.on_failure(i, &digest, &key_json, started, failure),
        };
        if let Err(e) = recorded {
            self.index_failed(i, "record its outcome", &e);
        }
    }

    fn on_success(
        &mut self,
        i: usize,
        digest: &str,
        key_json: &str,
        reasons: &[DirtyReason],
        started: Instant,
        result: JobResult,
    ) -> Result<(), ExecError> {
        let provenance = result.provenance.clone();
        // Counted from when the job started (on a cluster node, after its queue wait), not
        // from when it was submitted; a wait of a second or more is said apart.
        let seconds = (result.finished - result.started).max(0.0);
        let waited = started.elapsed().as_secs_f64() - seconds;
        let record = success_record(self.plan, i, digest, key_json, result);
        self.index
            .record_success(&record, &object_sizes(&record, self.cache))?;
        if let Err(e) = self.index.record_provenance(&record.key, &provenance) {
            // The result is recorded; only where it ran is missing.
            self.progress.println(&format!(
                "note    {}: its provenance could not be recorded: {e}",
                self.label(i)
            ));
        }
        let progress = &self.progress;
        if let Some(remote) = self.options.remote.as_ref().filter(|r| r.push_after_run()) {
            remote.push_after(self.cache, &record, &|m| progress.println(m));
        }
        let queued = if waited >= 1.0 {
            format!(", after {waited:.1}s queued")
        } else {
            String::new()
        };
        self.progress.println(&format!(
            "ran     {} in {seconds:.1}s ({}{queued})",
            self.label(i),
            join(reasons)
        ));
        self.progress.inc();
        self.schedule.succeed(i, record, seconds);
        Ok(())
    }

    fn on_failure(
        &mut self,
        i: usize,
        digest: &str,
        key_json: &str,
        started: Instant,
        failure: JobFailure,
    ) -> Result<(), ExecError> {
        let label = self.label(i);
        match failure.reason {
            FailureReason::BadInput {
                producer_key,
                producer_stage,
            } => {
                self.progress.println(&format!(
                    "corrupt input of {label} from {producer_stage}: {}; recomputing it",
                    failure.message
                ));
                self.index.forget(&producer_key)?;
                match self.schedule.recompute_input(i, &producer_key) {
                    Some(reset) => {
                        for j in reset {
                            self.fingerprints.remove(&j);
                        }
                    }
                    None => {
                        self.progress.inc();
                        self.schedule.fail(
                            i,
                            format!(
                                "its input from {producer_stage} was unreadable \
                                 {MAX_BAD_INPUT_ROUNDS} times in a row, even after recomputing \
                                 it ({}); check the disk under the cache",
                                failure.message
                            ),
                        );
                    }
                }
            }
            FailureReason::Interrupted => {
                self.progress
                    .println(&format!("stopped {label}: {}", failure.message));
                self.progress.inc();
                self.schedule.interrupted(i);
            }
            reason => {
                if let Some(attempt) = self.schedule.retry(i, reason.retryable()) {
                    self.progress.println(&format!(
                        "retry   {label} ({attempt} of {}): {}",
                        self.schedule.retries(),
                        failure.message
                    ));
                    return Ok(());
                }
                let mut message = failure.message.clone();
                if let Some(tail) = &failure.log_tail {
                    message = format!(
                        "{message}\n  log (last lines):\n    {}",
                        tail.replace('\n', "\n    ")
                    );
                }
                let record = failed_record(self.plan, i, digest, key_json, &started);
                self.index.record_failure(&record, &message)?;
                self.progress
                    .println(&format!("failed  {label} (details below)"));
                self.progress.inc();
                self.schedule.fail(i, message);
            }
        }
        Ok(())
    }

    /// What happened to each instance, in plan order.
    fn summary(&self, interrupted: bool) -> RunSummary {
        let instances = self
            .plan
            .instances()
            .iter()
            .map(|inst| {
                let (status, key, reason, seconds) = match self.schedule.state(inst.index) {
                    State::Done { record, ran: None } => (
                        Status::Cached,
                        Some(record.key.clone()),
                        "cached".into(),
                        None,
                    ),
                    State::Done {
                        record,
                        ran: Some((secs, reasons)),
                    } => (
                        Status::Ran,
                        Some(record.key.clone()),
                        join(reasons),
                        Some(*secs),
                    ),
                    State::Failed { reason } => (Status::Failed, None, reason.clone(), None),
                    State::Skipped { reason } => (Status::Skipped, None, reason.clone(), None),
                    State::Waiting | State::Ready { .. } | State::Running { .. } => {
                        (Status::Skipped, None, "not reached".into(), None)
                    }
                };
                InstanceOutcome {
                    stage: inst.stage.clone(),
                    binding: inst.binding.to_map(),
                    key,
                    status,
                    reason,
                    seconds,
                }
            })
            .collect();
        RunSummary {
            pipeline: self.plan.spec().name.clone(),
            instances,
            interrupted,
        }
    }
}

/// `outcome`, or a failure when a finished job reports an output the object store does not
/// hold under that digest (a malformed digest, an absent object, a folder whose manifest or
/// files are missing). A worker's report is checked, not believed: the index only ever names
/// objects that are there.
fn objects_checked(outcome: JobOutcome, cache: &Cache) -> JobOutcome {
    let JobOutcome::Done(result) = outcome else {
        return outcome;
    };
    let missing = result
        .outputs
        .iter()
        .find_map(|(name, output)| object_problem(cache, output).map(|p| format!("`{name}` {p}")));
    match missing {
        None => JobOutcome::Done(result),
        Some(problem) => JobOutcome::Failed(JobFailure {
            reason: FailureReason::Stage,
            message: format!(
                "its runner reported output {problem}; nothing was recorded (a broken or \
                 lying worker, or a store its runner could not write)"
            ),
            log_tail: None,
        }),
    }
}

/// What is wrong with a reported output, if anything.
fn object_problem(cache: &Cache, output: &crate::cache::OutputRef) -> Option<String> {
    let shown: String = output.digest.chars().take(80).collect();
    if !crate::cache::objects::is_digest(&output.digest) {
        return Some(format!(
            "with the digest `{shown}`, which is not 64 lowercase hex characters"
        ));
    }
    if !cache.objects().contains(&output.digest) {
        return Some(format!("as object {shown}, which the store does not hold"));
    }
    if !output.is_dir {
        return None;
    }
    match cache.objects().read_manifest(&output.digest) {
        Err(e) => Some(format!(
            "as folder {shown}, whose manifest is unreadable: {e}"
        )),
        Ok(manifest) => manifest
            .entries
            .iter()
            .find(|(_, d)| !cache.objects().contains(d))
            .map(|(path, d)| format!("as folder {shown}, whose file `{path}` ({d}) is absent")),
    }
}

/// `outcome`, or a stage failure when a finished job's outputs break its kind's declarations
/// ([`crate::kind::check_outputs`]). Every executor's results pass through here before the
/// index records them, so the cache never holds a result that breaks the contract; the
/// objects such a job stored stay unreferenced until `cache gc`.
fn contract_checked(outcome: JobOutcome, registry: &Registry, kind: &str) -> JobOutcome {
    let JobOutcome::Done(result) = outcome else {
        return outcome;
    };
    let Some(stage) = registry.get(kind) else {
        return JobOutcome::Done(result);
    };
    match crate::kind::check_outputs(stage, result.outputs.keys().map(String::as_str)) {
        Ok(()) => JobOutcome::Done(result),
        Err(e) => JobOutcome::Failed(JobFailure {
            reason: FailureReason::Stage,
            message: e.to_string(),
            log_tail: None,
        }),
    }
}

fn make_job(
    plan: &Plan,
    i: usize,
    key: &crate::cache::StageKey,
    digest: &str,
    schedule: &Schedule,
    cache: &Cache,
    class: crate::kind::Resource,
) -> Job {
    let inst = &plan.instances()[i];
    let mut inputs = BTreeMap::new();
    for (slot, ups) in &inst.inputs {
        let list = ups
            .iter()
            .map(|&u| {
                let record = schedule.record(u).expect("inputs are done");
                let up = &plan.instances()[u];
                JobInput {
                    stage: up.stage.clone(),
                    kind: up.kind.clone(),
                    binding: up.binding.to_map(),
                    params: (*up.params).clone(),
                    key: record.key.clone(),
                    metrics: record.metrics.clone(),
                    outputs: record.outputs.clone(),
                    draws: Vec::new(),
                }
            })
            .collect();
        inputs.insert(slot.clone(), list);
    }
    Job {
        key: digest.to_string(),
        key_json: key.canonical_json(),
        label: inst.label(),
        pipeline: plan.spec().name.clone(),
        stage: inst.stage.clone(),
        kind: inst.kind.clone(),
        binding: inst.binding.to_map(),
        params: (*inst.params).clone(),
        inputs,
        resources: Resources {
            class,
            device: Device::Cpu,
            threads: 1,
        },
        project_dir: plan.spec().project_dir.clone(),
        cache_dir: cache.dir().to_path_buf(),
        timeout_seconds: plan
            .spec()
            .stage(&inst.stage)
            .and_then(|s| s.timeout)
            .map(|t| t.as_secs_f64()),
    }
}

fn success_record(
    plan: &Plan,
    i: usize,
    digest: &str,
    key_json: &str,
    result: JobResult,
) -> RunRecord {
    let inst = &plan.instances()[i];
    RunRecord {
        key: digest.to_string(),
        stage: inst.stage.clone(),
        kind: inst.kind.clone(),
        pipeline: plan.spec().name.clone(),
        binding: binding_json(inst),
        key_json: key_json.to_string(),
        started: result.started,
        finished: result.finished,
        duration: result.finished - result.started,
        device: result.provenance.device,
        outputs: result.outputs,
        metrics: result.metrics,
    }
}

/// Fills in the draws of every input of `job` (instance `i`), for a kind that reads them.
fn attach_draws(job: &mut Job, plan: &Plan, i: usize, registry: &Registry) {
    for (slot, ups) in &plan.instances()[i].inputs {
        if let Some(list) = job.inputs.get_mut(slot) {
            for (input, &u) in list.iter_mut().zip(ups) {
                input.draws = plan.draws(u, registry);
            }
        }
    }
}

/// The view of upstream instance `u` a stage gets (outputs filled in by the worker).
pub fn artifact(plan: &Plan, u: usize, record: &RunRecord) -> InputArtifact {
    let up = &plan.instances()[u];
    InputArtifact {
        stage: up.stage.clone(),
        kind: up.kind.clone(),
        binding: up.binding.to_map(),
        params: (*up.params).clone(),
        key: record.key.clone(),
        outputs: BTreeMap::new(),
        metrics: record.metrics.clone(),
        draws: Vec::new(),
    }
}

fn failed_record(
    plan: &Plan,
    i: usize,
    digest: &str,
    key_json: &str,
    started: &Instant,
) -> RunRecord {
    let inst = &plan.instances()[i];
    let now = crate::cache::store::now();
    RunRecord {
        key: digest.to_string(),
        stage: inst.stage.clone(),
        kind: inst.kind.clone(),
        pipeline: plan.spec().name.clone(),
        binding: binding_json(inst),
        key_json: key_json.to_string(),
        started: now - started.elapsed().as_secs_f64(),
        finished: now,
        duration: started.elapsed().as_secs_f64(),
        device: Device::Cpu.to_string(),
        outputs: BTreeMap::new(),
        metrics: BTreeMap::new(),
    }
}

fn object_sizes(record: &RunRecord, cache: &Cache) -> Vec<(String, u64)> {
    record
        .outputs
        .values()
        .map(|o| {
            let size = cache.objects().size_of(&o.digest).unwrap_or(0);
            (o.digest.clone(), size)
        })
        .collect()
}
