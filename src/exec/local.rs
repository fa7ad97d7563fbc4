//! [`LocalExecutor`]: jobs on this machine.
//!
//! Kinds this process has a runner for (`split`, `report`, `update-gain`: no tensors) run on
//! a thread pool inside the engine. Every other kind runs in a persistent worker process
//! (`asymflow-worker`, speaking [`super::protocol`]), one per slot, reused across jobs, as
//! Bazel's persistent workers are:
//! - **device slots**: one per GPU, the worker pinned with `CUDA_VISIBLE_DEVICES`; on a machine
//!   without GPUs, `device_slots` CPU slots (one by default) that share the cores;
//! - **CPU slots**: tensor kinds of the CPU class (`evaluate`, `import`), up to `jobs` at once.
//!
//! Threads are given by slot, not by what else happens to run, so a job computes the same
//! bytes whatever runs beside it: a device slot on the CPU gets `cores / device_slots`
//! threads, a CPU slot one. The worker's environment is set here (`OMP_WAIT_POLICY=PASSIVE`,
//! `OMP_NUM_THREADS`, `CUDA_VISIBLE_DEVICES`), so libtorch's OpenMP threads wait passively and
//! never spin against a neighbour.
//!
//! A worker that dies (killed, out of memory, a crash in native code) is noticed when its
//! pipe closes; its job fails with [`FailureReason::Crashed`] (which the scheduler may retry)
//! and the slot starts a fresh worker for its next job.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use super::executor::{
    Executor, ExecutorError, FailureReason, Job, JobEvent, JobFailure, JobId, JobOutcome,
};
use super::protocol::{FromWorker, ToWorker};
use super::worker::{run_job, NoTensors};
use crate::kind::{Device, ProgressSink, Registry, Resource};

/// The worker program's name, looked for beside the running executable.
pub const WORKER_PROGRAM: &str = "asymflow-worker";

/// How the local executor divides the machine.
#[derive(Debug, Clone)]
pub struct LocalOptions {
    /// Jobs at once, in all.
    pub jobs: usize,
    /// Device slots on a machine without GPUs (trainings at once).
    pub device_slots: usize,
}

enum Message {
    Event(Box<JobEvent>),
    WorkerExited { slot: usize, generation: u64 },
}

struct WorkerProcess {
    child: Child,
    stdin: ChildStdin,
    generation: u64,
}

struct Slot {
    class: Resource,
    /// The device as the worker sees it.
    device: Device,
    /// `CUDA_VISIBLE_DEVICES` for the worker (`None`: inherit).
    visible: Option<String>,
    threads: usize,
    process: Option<WorkerProcess>,
    busy: Option<JobId>,
}

enum Placement {
    InProcess { cancel: Arc<AtomicBool> },
    Worker { slot: usize },
}

/// See the module docs.
pub struct LocalExecutor {
    registry: Arc<Registry>,
    options: LocalOptions,
    pool: rayon::ThreadPool,
    tx: mpsc::Sender<Message>,
    rx: mpsc::Receiver<Message>,
    slots: Vec<Slot>,
    running: HashMap<JobId, Placement>,
    generation: u64,
}

/// GPUs visible to this process, without loading CUDA: `CUDA_VISIBLE_DEVICES` when set, else
/// the NVIDIA driver's device list.
pub fn visible_gpus() -> Vec<String> {
    if let Ok(list) = std::env::var("CUDA_VISIBLE_DEVICES") {
        return list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty() && *s != "-1")
            .map(String::from)
            .collect();
    }
    let count = std::fs::read_dir("/proc/driver/nvidia/gpus").map_or(0, |d| d.count());
    (0..count).map(|i| i.to_string()).collect()
}

impl LocalExecutor {
    /// An executor running `registry`'s runners in-process and every other kind in workers.
    pub fn new(registry: Arc<Registry>, options: LocalOptions) -> Result<Self, ExecutorError> {
        let jobs = options.jobs.max(1);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(jobs)
            .thread_name(|i| format!("asymflow-stage-{i}"))
            .build()
            .map_err(|e| ExecutorError::Other(format!("thread pool: {e}")))?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let gpus = visible_gpus();
        let mut slots = Vec::new();
        if gpus.is_empty() {
            let n = options.device_slots.max(1);
            for _ in 0..n {
                slots.push(Slot::new(
                    Resource::Device,
                    Device::Cpu,
                    None,
                    (cores / n).max(1),
                ));
            }
        } else {
            let threads = (cores / gpus.len()).max(1);
            for gpu in &gpus {
                slots.push(Slot::new(
                    Resource::Device,
                    Device::Cuda(0),
                    Some(gpu.clone()),
                    threads,
                ));
            }
        }
        let hidden = (!gpus.is_empty()).then(String::new);
        for _ in 0..jobs {
            slots.push(Slot::new(Resource::Cpu, Device::Cpu, hidden.clone(), 1));
        }
        let (tx, rx) = mpsc::channel();
        Ok(LocalExecutor {
            registry,
            options: LocalOptions { jobs, ..options },
            pool,
            tx,
            rx,
            slots,
            running: HashMap::new(),
            generation: 0,
        })
    }

    fn free_slot(&self, class: Resource) -> Option<usize> {
        self.slots
            .iter()
            .position(|s| s.class == class && s.busy.is_none())
    }

    fn in_process_jobs(&self) -> usize {
        self.running
            .values()
            .filter(|p| matches!(p, Placement::InProcess { .. }))
            .count()
    }

    fn spawn_worker(&mut self, slot: usize) -> Result<(), ExecutorError> {
        let program = worker_program()?;
        let s = &self.slots[slot];
        let mut command = Command::new(&program);
        command
            .arg("serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .env("OMP_NUM_THREADS", s.threads.to_string())
            .env("MKL_NUM_THREADS", s.threads.to_string());
        if std::env::var_os("OMP_WAIT_POLICY").is_none() {
            command.env("OMP_WAIT_POLICY", "PASSIVE");
        }
        if let Some(visible) = &s.visible {
            command.env("CUDA_VISIBLE_DEVICES", visible);
        }
        let mut child = command.spawn().map_err(|e| ExecutorError::Spawn {
            program: program.display().to_string(),
            message: e.to_string(),
        })?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        self.generation += 1;
        let generation = self.generation;
        let tx = self.tx.clone();
        std::thread::Builder::new()
            .name(format!("asymflow-worker-{slot}"))
            .spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    let event = match serde_json::from_str::<FromWorker>(&line) {
                        Ok(FromWorker::Ready { .. }) => continue,
                        Ok(FromWorker::Progress {
                            id,
                            position,
                            length,
                            message,
                        }) => JobEvent::Progress {
                            id,
                            position,
                            length,
                            message,
                        },
                        Ok(FromWorker::Done { id, outcome }) => JobEvent::Finished {
                            id,
                            outcome: *outcome,
                        },
                        Err(_) => {
                            // Not protocol: something in the worker printed to stdout.
                            eprintln!("{line}");
                            continue;
                        }
                    };
                    if tx.send(Message::Event(Box::new(event))).is_err() {
                        return;
                    }
                }
                let _ = tx.send(Message::WorkerExited { slot, generation });
            })
            .map_err(|e| ExecutorError::Other(format!("worker reader thread: {e}")))?;
        self.slots[slot].process = Some(WorkerProcess {
            child,
            stdin,
            generation,
        });
        Ok(())
    }

    fn send_to_worker(&mut self, slot: usize, message: &ToWorker) -> std::io::Result<()> {
        let process = self.slots[slot]
            .process
            .as_mut()
            .ok_or_else(|| std::io::Error::other("no worker process"))?;
        let line = serde_json::to_string(message).expect("protocol messages serialise");
        // The worker may have died a moment ago: that must fail this write, not end the engine.
        super::pipe::without_sigpipe(|| {
            writeln!(process.stdin, "{line}")?;
            process.stdin.flush()
        })
    }

    /// The outcome of a job whose worker died.
    fn crashed(&mut self, slot: usize, generation: u64) -> Option<JobEvent> {
        let s = &mut self.slots[slot];
        let process = s.process.take_if(|p| p.generation == generation)?;
        let mut child = process.child;
        let status = child.wait().map_or_else(
            |e| format!("could not be waited for: {e}"),
            |status| describe_exit(&status),
        );
        let id = s.busy.take()?;
        self.running.remove(&id);
        Some(JobEvent::Finished {
            id,
            outcome: JobOutcome::Failed(JobFailure {
                reason: FailureReason::Crashed,
                message: format!(
                    "the worker process running it died ({status}); a fresh worker takes the \
                     slot's next job"
                ),
                log_tail: None,
            }),
        })
    }
}

impl Slot {
    fn new(class: Resource, device: Device, visible: Option<String>, threads: usize) -> Self {
        Slot {
            class,
            device,
            visible,
            threads,
            process: None,
            busy: None,
        }
    }
}

fn describe_exit(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (_, Some(libc::SIGKILL)) => "killed by signal 9: out of memory, or killed".into(),
        (_, Some(signal)) => format!("killed by signal {signal}"),
        (Some(code), _) => format!("exit code {code}"),
        (None, None) => "exited".into(),
    }
}

/// Where the worker program is: `ASYMFLOW_WORKER`, else beside this executable (or one folder
/// up, for test binaries in `target/*/deps`).
pub fn worker_program() -> Result<PathBuf, ExecutorError> {
    if let Some(path) = std::env::var_os("ASYMFLOW_WORKER") {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().map_err(|e| ExecutorError::Other(e.to_string()))?;
    let dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    let candidates = [
        dir.join(WORKER_PROGRAM),
        dir.join("..").join(WORKER_PROGRAM),
    ];
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or_else(|| ExecutorError::Spawn {
            program: WORKER_PROGRAM.into(),
            message: format!(
                "not found beside {} (looked for {}); build it with `cargo build --release \
                 --workspace`, or point ASYMFLOW_WORKER at it",
                exe.display(),
                candidates
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        })
}

struct ChannelProgress {
    id: JobId,
    tx: mpsc::Sender<Message>,
    state: std::sync::Mutex<(u64, u64, String)>,
}

impl ProgressSink for ChannelProgress {
    fn start(&self, len: u64, message: &str) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        *state = (0, len, message.to_string());
        self.send(&state);
    }

    fn tick(&self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.0 += 1;
        self.send(&state);
    }
}

impl ChannelProgress {
    fn send(&self, state: &(u64, u64, String)) {
        let _ = self.tx.send(Message::Event(Box::new(JobEvent::Progress {
            id: self.id,
            position: state.0,
            length: state.1,
            message: state.2.clone(),
        })));
    }
}

impl Executor for LocalExecutor {
    fn has_room(&self, class: Resource) -> bool {
        self.running.len() < self.options.jobs
            && (class == Resource::Cpu || self.free_slot(Resource::Device).is_some())
    }

    fn submit(&mut self, id: JobId, mut job: Job) -> Result<(), ExecutorError> {
        let class = job.resources.class;
        if self.registry.runner(&job.kind).is_some() {
            // A device-class kind that runs in-process (a test kind) still takes a device slot.
            let slot = match class {
                Resource::Device => self.free_slot(Resource::Device),
                Resource::Cpu => None,
            };
            if let Some(slot) = slot {
                self.slots[slot].busy = Some(id);
            }
            // Device slots come first, one per visible GPU in order: the slot's index is the
            // GPU's index among this process's GPUs (a `command` stage pins its program to it).
            job.resources.device = match slot.map(|s| (s, &self.slots[s].visible)) {
                Some((s, Some(gpu))) if !gpu.is_empty() => Device::Cuda(s),
                _ => Device::Cpu,
            };
            job.resources.threads = 1;
            let cancel = Arc::new(AtomicBool::new(false));
            self.running.insert(
                id,
                Placement::InProcess {
                    cancel: Arc::clone(&cancel),
                },
            );
            let (tx, registry) = (self.tx.clone(), Arc::clone(&self.registry));
            debug_assert!(self.in_process_jobs() <= self.options.jobs);
            self.pool.spawn(move || {
                let progress = ChannelProgress {
                    id,
                    tx: tx.clone(),
                    state: std::sync::Mutex::new((0, 0, String::new())),
                };
                let outcome = run_job(
                    &job,
                    &registry,
                    &NoTensors,
                    "engine",
                    &cancel,
                    Some(Box::new(progress)),
                );
                let _ = tx.send(Message::Event(Box::new(JobEvent::Finished { id, outcome })));
            });
            return Ok(());
        }
        let slot = self
            .free_slot(class)
            .ok_or_else(|| ExecutorError::Other(format!("no free {class:?} slot")))?;
        if self.slots[slot].process.is_none() {
            self.spawn_worker(slot)?;
        }
        job.resources.device = self.slots[slot].device;
        job.resources.threads = self.slots[slot].threads;
        let message = ToWorker::Job {
            id,
            job: Box::new(job),
        };
        if let Err(e) = self.send_to_worker(slot, &message) {
            // The worker died between jobs: start a fresh one and try once more.
            if let Some(mut process) = self.slots[slot].process.take() {
                let _ = process.child.kill();
                let _ = process.child.wait();
            }
            self.spawn_worker(slot)?;
            self.send_to_worker(slot, &message)
                .map_err(|e2| ExecutorError::Other(format!("worker pipe: {e}; again: {e2}")))?;
        }
        self.slots[slot].busy = Some(id);
        self.running.insert(id, Placement::Worker { slot });
        Ok(())
    }

    fn next_event(&mut self, timeout: Duration) -> Option<JobEvent> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let message = self.rx.recv_timeout(left).ok()?;
            match message {
                Message::Event(event) => {
                    let event = *event;
                    if let JobEvent::Finished { id, .. } = &event {
                        if self.running.remove(id).is_some() {
                            for slot in &mut self.slots {
                                if slot.busy == Some(*id) {
                                    slot.busy = None;
                                }
                            }
                        }
                    }
                    return Some(event);
                }
                Message::WorkerExited { slot, generation } => {
                    if let Some(event) = self.crashed(slot, generation) {
                        return Some(event);
                    }
                }
            }
        }
    }

    fn cancel(&mut self, id: JobId) {
        match self.running.get(&id) {
            Some(Placement::InProcess { cancel }) => cancel.store(true, Ordering::Relaxed),
            Some(Placement::Worker { slot }) => {
                let slot = *slot;
                let _ = self.send_to_worker(slot, &ToWorker::Cancel { id });
            }
            None => {}
        }
    }

    fn shutdown(&mut self) {
        for slot in 0..self.slots.len() {
            if self.slots[slot].process.is_some() {
                let _ = self.send_to_worker(slot, &ToWorker::Shutdown);
            }
            if let Some(mut process) = self.slots[slot].process.take() {
                drop(process.stdin);
                let deadline = std::time::Instant::now() + Duration::from_secs(5);
                loop {
                    match process.child.try_wait() {
                        Ok(Some(_)) => break,
                        Ok(None) if std::time::Instant::now() < deadline => {
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        _ => {
                            let _ = process.child.kill();
                            let _ = process.child.wait();
                            break;
                        }
                    }
                }
            }
        }
    }
}

impl Drop for LocalExecutor {
    fn drop(&mut self) {
        self.shutdown();
    }
}
