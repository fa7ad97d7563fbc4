//! The scheduler: walks the instance DAG, skipping what the cache holds and running the rest.
//!
//! A ready queue over the plan: an instance becomes ready when every input is done; its key is
//! computed then (inputs enter the key by content) and looked up. Misses are dispatched to a
//! pool of `jobs` worker threads; instances of kinds that need a device also take one of the
//! device slots (one per GPU, or a single CPU slot), so two trainings never share a device.
//!
//! Before a miss runs, the scheduler takes the key's lease in the index. If another process
//! holds it, the instance waits and checks again; when that process finishes, the result is a
//! cache hit, so no key is ever computed twice. A lease whose process died is taken over.
//! Within one process, two instances with the same key (same work) run once.
//!
//! Results are recorded by this thread only, one transaction per instance, after the worker
//! moved every output into the object store. Ctrl-C stops dispatching; running stages see the
//! flag and stop; nothing half-done is recorded.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::freshness::{binding_json, dirty_reasons, fingerprint, instance_key, outputs_present};
use super::local::{device_name, execute, Job, JobError};
use super::progress::Progress;
use crate::cache::{Cache, IndexHasher, Lease, RunRecord};
use crate::graph::Plan;
use crate::kind::{InputArtifact, Registry, Resource};

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Worker threads for stages (`--jobs`).
    pub jobs: usize,
    /// Keep running branches that do not depend on a failure.
    pub keep_going: bool,
    /// Show progress bars (off for `--json` and when stderr is not a terminal).
    pub progress: bool,
    /// The team's remote cache: local misses are pulled from it (verified), and what runs is
    /// pushed to it when it says so. `None` with `--offline` or without a remote.
    pub remote: Option<Arc<crate::cache::remote::Remote>>,
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
    /// The worker pool could not start.
    #[error("worker pool: {0}")]
    Pool(String),
}

#[derive(Debug, Clone)]
enum State {
    Waiting,
    Ready {
        key: crate::cache::StageKey,
        digest: String,
        reasons: Vec<String>,
    },
    Running {
        digest: String,
        key_json: String,
        reasons: Vec<String>,
        started: Instant,
    },
    Done {
        record: RunRecord,
        ran: Option<(f64, Vec<String>)>,
    },
    Failed {
        reason: String,
    },
    Skipped {
        reason: String,
    },
}

struct Finished {
    index: usize,
    result: Result<RunRecord, JobError>,
}

/// Runs `plan` against `cache`.
pub fn run(
    plan: &Plan,
    registry: &Arc<Registry>,
    cache: &Cache,
    options: &RunOptions,
    cancel: &Arc<AtomicBool>,
) -> Result<RunSummary, ExecError> {
    let mut index = cache.index()?;
    let hasher = IndexHasher::new(cache.index()?);
    let owner = format!(
        "{}:{}:{:x}",
        crate::cache::store::host_name(),
        std::process::id(),
        rand::random::<u64>()
    );
    let n = plan.instances().len();
    let mut states = vec![State::Waiting; n];
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.jobs.max(1))
        .thread_name(|i| format!("asymflow-stage-{i}"))
        .build()
        .map_err(|e| ExecError::Pool(e.to_string()))?;
    let devices = device_slots();
    let mut device_free: Vec<bool> = vec![true; devices.len()];
    let mut device_of: HashMap<usize, usize> = HashMap::new();
    let (tx, rx) = mpsc::channel::<Finished>();
    let progress = Progress::new(options.progress, n as u64);
    let project_dir = plan.spec().project_dir.clone();
    let pipeline = plan.spec().name.clone();
    let mut running = 0usize;
    let mut stop_launching = false;
    let mut last_heartbeat = Instant::now();
    let mut lease_wait: HashMap<usize, Instant> = HashMap::new();
    let mut fingerprints: HashMap<usize, serde_json::Value> = HashMap::new();

    loop {
        if cancel.load(Ordering::Relaxed) {
            stop_launching = true;
        }
        // 1. Promote waiting instances whose inputs are all done.
        for &i in plan.order() {
            if !matches!(states[i], State::Waiting) {
                continue;
            }
            let inst = &plan.instances()[i];
            let ups: Vec<usize> = inst.inputs.values().flatten().copied().collect();
            if let Some(&bad) = ups
                .iter()
                .find(|&&u| matches!(states[u], State::Failed { .. } | State::Skipped { .. }))
            {
                states[i] = State::Skipped {
                    reason: format!("input {} did not complete", plan.instances()[bad].label()),
                };
                progress.inc();
                continue;
            }
            if !ups.iter().all(|&u| matches!(states[u], State::Done { .. })) {
                continue;
            }
            let fp = match fingerprints.get(&i) {
                Some(fp) => fp.clone(),
                None => match fingerprint(plan, inst, registry, &hasher) {
                    Ok(fp) => {
                        fingerprints.insert(i, fp.clone());
                        fp
                    }
                    Err(e) => {
                        states[i] = State::Failed {
                            reason: format!("fingerprint: {e}"),
                        };
                        progress.println(&format!("failed  {}: {e}", inst.label()));
                        progress.inc();
                        if !options.keep_going {
                            stop_launching = true;
                        }
                        continue;
                    }
                },
            };
            let upstream = |u: usize| match &states[u] {
                State::Done { record, .. } => Some(record.clone()),
                _ => None,
            };
            let key = instance_key(plan, inst, registry, &upstream, fp)
                .expect("inputs are done and the kind is registered");
            let digest = key.digest();
            match index.lookup(&digest)? {
                Some(record) if outputs_present(cache, &record) => {
                    states[i] = State::Done { record, ran: None };
                    progress.inc();
                }
                _ => {
                    if let Some(record) = options
                        .remote
                        .as_ref()
                        .and_then(|r| r.read_through(cache, &digest, &|m| progress.println(m)))
                    {
                        progress.println(&format!("pulled  {} from the remote", inst.label()));
                        states[i] = State::Done { record, ran: None };
                        progress.inc();
                        continue;
                    }
                    let reasons = dirty_reasons(&index, cache, &pipeline, inst, &key);
                    states[i] = State::Ready {
                        key,
                        digest,
                        reasons,
                    };
                }
            }
        }

        // 2. Dispatch ready instances while there is room.
        if !stop_launching {
            for &i in plan.order() {
                if running >= options.jobs.max(1) {
                    break;
                }
                let State::Ready {
                    key,
                    digest,
                    reasons,
                } = &states[i]
                else {
                    continue;
                };
                if let Some(since) = lease_wait.get(&i) {
                    if since.elapsed() < Duration::from_millis(500) {
                        continue;
                    }
                }
                let same_key_running = states
                    .iter()
                    .any(|s| matches!(s, State::Running { digest: d, .. } if d == digest));
                if same_key_running {
                    continue;
                }
                let inst = &plan.instances()[i];
                let stage = registry.get(&inst.kind).expect("kinds are resolved");
                let needs_device = stage.resource(&inst.params) == Resource::Device;
                let slot = if needs_device {
                    match device_free.iter().position(|f| *f) {
                        Some(s) => Some(s),
                        None => continue,
                    }
                } else {
                    None
                };
                match index.try_lease(digest, &owner)? {
                    Lease::HeldBy { host, pid } => {
                        if lease_wait.insert(i, Instant::now()).is_none() {
                            progress.println(&format!(
                                "waiting {}: another asymflow (pid {pid} on {host}) is computing it",
                                inst.label()
                            ));
                        }
                        continue;
                    }
                    Lease::Acquired => {}
                }
                lease_wait.remove(&i);
                // Another process may have finished it while we waited for the lease.
                if let Some(record) = index.lookup(digest)? {
                    if outputs_present(cache, &record) {
                        index.release(digest, &owner)?;
                        states[i] = State::Done { record, ran: None };
                        progress.inc();
                        continue;
                    }
                }
                let device = slot.map_or(tch::Device::Cpu, |s| devices[s]);
                if let Some(s) = slot {
                    device_free[s] = false;
                    device_of.insert(i, s);
                }
                let job = make_job(plan, i, key, digest, &states, device);
                let reasons = reasons.clone();
                let digest = digest.clone();
                let key_json = job.key_json.clone();
                states[i] = State::Running {
                    digest,
                    key_json,
                    reasons,
                    started: Instant::now(),
                };
                running += 1;
                let bar = progress.stage_bar(&inst.label());
                let (tx, registry, cache, project_dir, cancel) = (
                    tx.clone(),
                    Arc::clone(registry),
                    cache.clone(),
                    project_dir.clone(),
                    Arc::clone(cancel),
                );
                pool.spawn(move || {
                    let result =
                        execute(&job, &registry, &cache, &project_dir, &cancel, bar.clone());
                    if let Some(bar) = bar {
                        bar.finish_and_clear();
                    }
                    let _ = tx.send(Finished {
                        index: job.index,
                        result,
                    });
                });
            }
        }

        // 3. Done?
        let blocked_on_lease = !lease_wait.is_empty() && !stop_launching;
        let pending = states
            .iter()
            .any(|s| matches!(s, State::Waiting | State::Ready { .. }));
        if running == 0 && !blocked_on_lease && (!pending || stop_launching) {
            // Stopped with work left: everything not finished is skipped.
            let reason = if cancel.load(Ordering::Relaxed) {
                "interrupted (Ctrl-C)".to_string()
            } else {
                "not started: an earlier stage failed (use --keep-going to run independent branches)".to_string()
            };
            for s in states.iter_mut() {
                if matches!(s, State::Waiting | State::Ready { .. }) {
                    *s = State::Skipped {
                        reason: reason.clone(),
                    };
                }
            }
            break;
        }

        // 4. Wait for a worker (or a timeout for leases, heartbeats and Ctrl-C).
        let message = rx.recv_timeout(Duration::from_millis(100));
        if last_heartbeat.elapsed() > Duration::from_secs(5) {
            index.heartbeat(&owner)?;
            last_heartbeat = Instant::now();
        }
        let Ok(Finished { index: i, result }) = message else {
            continue;
        };
        running -= 1;
        if let Some(s) = device_of.remove(&i) {
            device_free[s] = true;
        }
        let State::Running {
            digest,
            key_json,
            reasons,
            started,
        } = states[i].clone()
        else {
            unreachable!("only running instances finish")
        };
        let label = plan.instances()[i].label();
        match result {
            Ok(record) => {
                index.record_success(&record, &object_sizes(&record, cache))?;
                index.release(&digest, &owner)?;
                if let Some(remote) = options.remote.as_ref().filter(|r| r.push_after_run()) {
                    remote.push_after(cache, &record, &|m| progress.println(m));
                }
                progress.println(&format!(
                    "ran     {label} in {:.1}s ({})",
                    started.elapsed().as_secs_f64(),
                    reasons.join("; ")
                ));
                progress.inc();
                states[i] = State::Done {
                    record,
                    ran: Some((started.elapsed().as_secs_f64(), reasons)),
                };
            }
            Err(JobError::BadInput {
                producer_key,
                producer_stage,
                source,
            }) => {
                index.release(&digest, &owner)?;
                progress.println(&format!(
                    "corrupt input of {label} from {producer_stage}: {source}; recomputing it"
                ));
                index.forget(&producer_key)?;
                for (j, s) in states.iter_mut().enumerate() {
                    if let State::Done { record, .. } = s {
                        if record.key == producer_key {
                            *s = State::Waiting;
                            fingerprints.remove(&j);
                        }
                    }
                }
                states[i] = State::Waiting;
            }
            Err(error) => {
                let interrupted = matches!(
                    &error,
                    JobError::Stage(crate::kind::StageError::Interrupted)
                );
                index.release(&digest, &owner)?;
                let inst = &plan.instances()[i];
                let message = error.to_string();
                if !interrupted {
                    let record = failed_record(plan, i, &digest, &key_json, &started);
                    index.record_failure(&record, &message)?;
                    progress.println(&format!(
                        "failed  {label}\n  params: {}\n  error: {message}",
                        serde_json::to_string(&inst.params.0).unwrap_or_default()
                    ));
                }
                states[i] = if interrupted {
                    State::Skipped {
                        reason: "interrupted (Ctrl-C)".into(),
                    }
                } else {
                    State::Failed { reason: message }
                };
                progress.inc();
                if !options.keep_going || interrupted {
                    stop_launching = true;
                }
            }
        }
    }
    index.release_all(&owner)?;
    progress.finish();

    let instances = plan
        .instances()
        .iter()
        .map(|inst| {
            let (status, key, reason, seconds) = match &states[inst.index] {
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
                    reasons.join("; "),
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
                binding: inst.binding.clone(),
                key,
                status,
                reason,
                seconds,
            }
        })
        .collect();
    Ok(RunSummary {
        pipeline,
        instances,
        interrupted: cancel.load(Ordering::Relaxed),
    })
}

/// The devices stages may run on: every CUDA device, or the CPU as one slot.
fn device_slots() -> Vec<tch::Device> {
    let n = tch::Cuda::device_count();
    if n > 0 {
        (0..n as usize).map(tch::Device::Cuda).collect()
    } else {
        vec![tch::Device::Cpu]
    }
}

fn make_job(
    plan: &Plan,
    i: usize,
    key: &crate::cache::StageKey,
    digest: &str,
    states: &[State],
    device: tch::Device,
) -> Job {
    let inst = &plan.instances()[i];
    let mut inputs = BTreeMap::new();
    for (slot, ups) in &inst.inputs {
        let list = ups
            .iter()
            .map(|&u| {
                let State::Done { record, .. } = &states[u] else {
                    unreachable!("inputs are done")
                };
                (artifact(plan, u, record), record.clone())
            })
            .collect();
        inputs.insert(slot.clone(), list);
    }
    Job {
        index: i,
        label: inst.label(),
        stage: inst.stage.clone(),
        kind: inst.kind.clone(),
        pipeline: plan.spec().name.clone(),
        binding: binding_json(inst),
        params: inst.params.clone(),
        key: digest.to_string(),
        key_json: key.canonical_json(),
        inputs,
        device,
    }
}

/// The view of upstream instance `u` a stage gets (outputs filled in by the worker).
pub fn artifact(plan: &Plan, u: usize, record: &RunRecord) -> InputArtifact {
    let up = &plan.instances()[u];
    InputArtifact {
        stage: up.stage.clone(),
        kind: up.kind.clone(),
        binding: up.binding.clone(),
        params: up.params.clone(),
        key: record.key.clone(),
        outputs: BTreeMap::new(),
        metrics: record.metrics.clone(),
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
        device: device_name(tch::Device::Cpu),
        outputs: BTreeMap::new(),
        metrics: BTreeMap::new(),
    }
}

fn object_sizes(record: &RunRecord, cache: &Cache) -> Vec<(String, u64)> {
    record
        .outputs
        .values()
        .map(|o| {
            let size = std::fs::metadata(cache.objects().path(&o.digest)).map_or(0, |m| m.len());
            (o.digest.clone(), size)
        })
        .collect()
}
