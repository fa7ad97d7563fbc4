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
//! and the slot starts a fresh worker for its next job. A worker that breaks the protocol (a
//! line that is not a message, a job id it is not running) is killed the same way, and so is
//! one that runs past its stage's `timeout`, falls silent (no heartbeat, [`super::deadlines`])
//! or ignores a cancel for [`super::deadlines::CANCEL_GRACE`].
//!
//! Workers die with the engine: each is started with a parent-death signal (SIGKILL), so a
//! killed engine (kill -9, out of memory) leaves no worker training on as an orphan.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use super::deadlines::{shown, silence_limit, Clocks, Overdue};
use super::executor::{
    Executor, ExecutorError, FailureReason, Job, JobEvent, JobFailure, JobId, JobOutcome,
};
use super::protocol::{FromWorker, ToWorker};
use super::worker::{run_job, NoTensors};
use crate::kind::{Device, ProgressSink, Registry, Resource};

/// The worker program's name, looked for beside the running executable.
pub(crate) const WORKER_PROGRAM: &str = "asymflow-worker";

/// How the local executor divides the machine.
#[derive(Debug, Clone)]
pub(crate) struct LocalOptions {
    /// Jobs at once, in all.
    pub jobs: usize,
    /// Device slots on a machine without GPUs (trainings at once).
    pub device_slots: usize,
}

enum Message {
    /// An event of a job on an engine thread; `token` tells its submission apart from a later
    /// one of the same instance.
    Engine {
        token: u64,
        event: Box<JobEvent>,
    },
    /// A line from the worker of `slot` started as `generation`: a message, or why it is none.
    Worker {
        slot: usize,
        generation: u64,
        line: Result<FromWorker, String>,
    },
    WorkerExited {
        slot: usize,
        generation: u64,
    },
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
    InProcess { cancel: Arc<AtomicBool>, token: u64 },
    Worker { slot: usize },
}

struct RunningJob {
    placement: Placement,
    clocks: Clocks,
    /// It ran past its timeout and was asked to stop (a job on an engine thread).
    timed_out: bool,
}

/// See the module docs.
pub(crate) struct LocalExecutor {
    registry: Arc<Registry>,
    options: LocalOptions,
    pool: rayon::ThreadPool,
    tx: mpsc::Sender<Message>,
    rx: mpsc::Receiver<Message>,
    slots: Vec<Slot>,
    running: HashMap<JobId, RunningJob>,
    generation: u64,
    silence: Duration,
}

/// GPUs visible to this process, without loading CUDA: `CUDA_VISIBLE_DEVICES` when set, else
/// the NVIDIA driver's device list.
pub(crate) fn visible_gpus() -> Vec<String> {
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
            silence: silence_limit(),
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
            .filter(|r| matches!(r.placement, Placement::InProcess { .. }))
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
        let engine = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs in the forked child before exec and only makes
        // async-signal-safe calls (prctl, getppid); it allocates nothing.
        unsafe {
            command.pre_exec(move || die_with_engine(engine));
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
                    let line = serde_json::from_str::<FromWorker>(&line).map_err(|e| {
                        format!(
                            "a line that is not a protocol message ({e}): {}",
                            excerpt(&line)
                        )
                    });
                    let message = Message::Worker {
                        slot,
                        generation,
                        line,
                    };
                    if tx.send(message).is_err() {
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

/// A job's failure outcome.
fn failed(reason: FailureReason, message: String) -> JobOutcome {
    JobOutcome::Failed(JobFailure {
        reason,
        message,
        log_tail: None,
    })
}

impl LocalExecutor {
    /// Kills the worker of `slot` (it broke the protocol, hung, or overran) and returns the
    /// job it was running; the slot starts a fresh worker for its next job.
    fn kill_worker(&mut self, slot: usize) -> Option<JobId> {
        if let Some(mut process) = self.slots[slot].process.take() {
            let _ = process.child.kill();
            let _ = process.child.wait();
        }
        let id = self.slots[slot].busy.take()?;
        self.running.remove(&id);
        Some(id)
    }

    /// The worker of `slot` broke the protocol: it is replaced, and its job fails.
    fn broke_protocol(&mut self, slot: usize, what: &str) -> Option<JobEvent> {
        let id = self.kill_worker(slot);
        let message = format!(
            "the worker process broke the protocol: {what}; it was stopped, nothing it \
             reported is recorded, and a fresh worker takes the slot's next job"
        );
        match id {
            Some(id) => Some(JobEvent::Finished {
                id,
                outcome: failed(FailureReason::Crashed, message),
            }),
            None => {
                eprintln!("asymflow: {message}");
                None
            }
        }
    }

    /// One line from the worker of `slot`, checked against what the slot runs: only a
    /// progress or `done` of its own job goes on to the scheduler.
    fn on_worker_line(
        &mut self,
        slot: usize,
        generation: u64,
        line: Result<FromWorker, String>,
    ) -> Option<JobEvent> {
        let current = self.slots[slot].process.as_ref().map(|p| p.generation);
        if current != Some(generation) {
            return None; // a line from a worker already replaced
        }
        let busy = self.slots[slot].busy;
        if let Some(job) = busy.and_then(|id| self.running.get_mut(&id)) {
            job.clocks.heard = Some(std::time::Instant::now());
        }
        let message = match line {
            Ok(message) => message,
            Err(what) => return self.broke_protocol(slot, &what),
        };
        match message {
            FromWorker::Ready { .. } | FromWorker::Heartbeat => None,
            FromWorker::Progress {
                id,
                position,
                length,
                message,
            } if busy == Some(id) => Some(JobEvent::Progress {
                id,
                position,
                length,
                message,
            }),
            FromWorker::Done { id, outcome } if busy == Some(id) => {
                self.slots[slot].busy = None;
                self.running.remove(&id);
                Some(JobEvent::Finished {
                    id,
                    outcome: *outcome,
                })
            }
            FromWorker::Progress { id, .. } | FromWorker::Done { id, .. } => self.broke_protocol(
                slot,
                &format!(
                    "it reported on job {id}, which it is not running ({})",
                    busy.map_or("it runs none".into(), |b| format!("it runs job {b}"))
                ),
            ),
        }
    }

    /// An event of a job on an engine thread; one of an abandoned submission is dropped.
    fn on_engine_event(&mut self, token: u64, event: JobEvent) -> Option<JobEvent> {
        let id = match &event {
            JobEvent::Finished { id, .. } | JobEvent::Progress { id, .. } => *id,
            JobEvent::Note { .. } => return Some(event),
        };
        let job = self.running.get(&id)?;
        if !matches!(job.placement, Placement::InProcess { token: t, .. } if t == token) {
            return None;
        }
        let JobEvent::Finished { outcome, .. } = event else {
            return Some(event);
        };
        let timed_out = job.clocks.timeout.filter(|_| job.timed_out);
        self.finish_in_process(id);
        let outcome = match (timed_out, outcome) {
            (Some(timeout), JobOutcome::Failed(f)) if f.reason == FailureReason::Interrupted => {
                failed(FailureReason::Stage, timed_out_message(timeout))
            }
            (_, outcome) => outcome,
        };
        Some(JobEvent::Finished { id, outcome })
    }

    fn finish_in_process(&mut self, id: JobId) {
        self.running.remove(&id);
        for slot in &mut self.slots {
            if slot.busy == Some(id) {
                slot.busy = None;
            }
        }
    }

    /// The first running job that is overdue ([`super::deadlines`]), stopped and reported.
    fn overdue_job(&mut self) -> Option<JobEvent> {
        let now = std::time::Instant::now();
        let (id, why, in_process, timed_out) = self.running.iter().find_map(|(id, job)| {
            let why = job.clocks.overdue(now, self.silence)?;
            let in_process = matches!(job.placement, Placement::InProcess { .. });
            // A stage on an engine thread that overran was asked to stop: it gets the grace.
            if in_process && job.timed_out && why != Overdue::IgnoredCancel {
                return None;
            }
            Some((*id, why, in_process, job.timed_out))
        })?;
        if in_process && matches!(why, Overdue::TimedOut(_)) {
            // A thread cannot be killed: ask it to stop first.
            let job = self.running.get_mut(&id)?;
            job.timed_out = true;
            job.clocks.cancelled = Some(now);
            if let Placement::InProcess { cancel, .. } = &job.placement {
                cancel.store(true, Ordering::Relaxed);
            }
            return None;
        }
        let timeout = self.running.get(&id).and_then(|j| j.clocks.timeout);
        let outcome = match (why, timeout) {
            (Overdue::TimedOut(timeout), _) => {
                failed(FailureReason::Stage, timed_out_message(timeout))
            }
            (Overdue::IgnoredCancel, Some(timeout)) if timed_out => {
                failed(FailureReason::Stage, timed_out_message(timeout))
            }
            (Overdue::Silent(quiet), _) => failed(
                FailureReason::Crashed,
                format!(
                    "its worker process sent nothing for {} (not even a heartbeat): it is hung \
                     or stopped; it was killed, and a fresh worker takes the slot's next job",
                    shown(quiet)
                ),
            ),
            (Overdue::IgnoredCancel, _) => failed(
                FailureReason::Interrupted,
                format!(
                    "interrupted; it did not stop within {} and was killed",
                    shown(super::deadlines::CANCEL_GRACE)
                ),
            ),
        };
        match self.running.get(&id).map(|j| &j.placement) {
            Some(Placement::Worker { slot }) => {
                let slot = *slot;
                self.kill_worker(slot);
            }
            // A thread cannot be killed: its late result is dropped (its token is gone).
            _ => self.finish_in_process(id),
        }
        Some(JobEvent::Finished { id, outcome })
    }
}

fn timed_out_message(timeout: Duration) -> String {
    format!(
        "timed out: it ran longer than its stage's `timeout` of {} and was stopped; raise \
         `timeout` in the stage's table if it needs longer",
        shown(timeout)
    )
}

/// At most the first 200 characters of a line, for messages.
fn excerpt(line: &str) -> String {
    match line.char_indices().nth(200) {
        Some((end, _)) => format!("{}...", &line[..end]),
        None => line.to_string(),
    }
}

/// In a worker between fork and exec: ask for SIGKILL when the engine dies, then check that
/// it has not died already (the signal would never come).
fn die_with_engine(engine: libc::pid_t) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl and getppid are async-signal-safe system calls without pointers.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::getppid() != engine {
            return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = engine;
    Ok(())
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
pub(crate) fn worker_program() -> Result<PathBuf, ExecutorError> {
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
    token: u64,
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
        let event = JobEvent::Progress {
            id: self.id,
            position: state.0,
            length: state.1,
            message: state.2.clone(),
        };
        let _ = self.tx.send(Message::Engine {
            token: self.token,
            event: Box::new(event),
        });
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
            self.generation += 1;
            let token = self.generation;
            self.running.insert(
                id,
                RunningJob {
                    placement: Placement::InProcess {
                        cancel: Arc::clone(&cancel),
                        token,
                    },
                    clocks: Clocks::new(std::time::Instant::now(), job.timeout(), false),
                    timed_out: false,
                },
            );
            let (tx, registry) = (self.tx.clone(), Arc::clone(&self.registry));
            debug_assert!(self.in_process_jobs() <= self.options.jobs);
            self.pool.spawn(move || {
                let progress = ChannelProgress {
                    id,
                    token,
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
                let event = Box::new(JobEvent::Finished { id, outcome });
                let _ = tx.send(Message::Engine { token, event });
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
        let timeout = job.timeout();
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
        self.running.insert(
            id,
            RunningJob {
                placement: Placement::Worker { slot },
                clocks: Clocks::new(std::time::Instant::now(), timeout, true),
                timed_out: false,
            },
        );
        Ok(())
    }

    fn next_event(&mut self, timeout: Duration) -> Option<JobEvent> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Some(event) = self.overdue_job() {
                return Some(event);
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            // Wake at least every 100 ms to watch the deadlines.
            let message = match self.rx.recv_timeout(left.min(Duration::from_millis(100))) {
                Ok(message) => message,
                Err(_) if left.is_zero() => return None,
                Err(_) => continue,
            };
            let event = match message {
                Message::Engine { token, event } => self.on_engine_event(token, *event),
                Message::Worker {
                    slot,
                    generation,
                    line,
                } => self.on_worker_line(slot, generation, line),
                Message::WorkerExited { slot, generation } => self.crashed(slot, generation),
            };
            if event.is_some() {
                return event;
            }
        }
    }

    fn cancel(&mut self, id: JobId) {
        let Some(job) = self.running.get_mut(&id) else {
            return;
        };
        job.clocks
            .cancelled
            .get_or_insert_with(std::time::Instant::now);
        match &job.placement {
            Placement::InProcess { cancel, .. } => cancel.store(true, Ordering::Relaxed),
            Placement::Worker { slot } => {
                let slot = *slot;
                let _ = self.send_to_worker(slot, &ToWorker::Cancel { id });
            }
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
