//! Running a [`Job`]: in the engine's own threads, in a persistent worker process
//! (`asymflow worker`, [`serve`]), or in a fresh process per job (`asymflow exec JOB.json`,
//! [`exec_file`], what a Slurm job runs).
//!
//! All three go through [`run_job`]: inputs are read from the object store at
//! `job.cache_dir` and verified, the stage runs in a private scratch folder, its outputs are
//! moved into the object store, and a [`JobOutcome`] carries their digests back. Nothing here
//! writes the index; the engine records the outcome.
//!
//! The engine binary has no tensor kinds: the worker binary (`asymflow-worker`, in the tensor
//! crate) calls [`serve`] and [`exec_file`] with a registry that has every runner, and a
//! [`Runtime`] that sets libtorch up for each job.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use super::executor::{FailureReason, Job, JobFailure, JobId, JobOutcome, JobResult};
use super::protocol::{FromWorker, ToWorker};
use crate::cache::{Cache, OutputRef, Provenance};
use crate::kind::{InputArtifact, Inputs, ProgressSink, Registry, Run, StageContext, StageError};

/// What the process running jobs knows about itself (libtorch, for the worker binary).
pub trait Runtime: Sync {
    /// Sets the process up for `job` (intra-op threads, say).
    fn prepare(&self, job: &Job);
    /// The linked libtorch's version, if any.
    fn libtorch(&self) -> Option<String>;
}

/// The engine's own runtime: no tensors.
pub(crate) struct NoTensors;

impl Runtime for NoTensors {
    fn prepare(&self, _job: &Job) {}
    fn libtorch(&self) -> Option<String> {
        None
    }
}

/// Lines of the stage log a failure carries.
const LOG_TAIL_LINES: usize = 20;

/// A failed outcome.
fn failed(reason: FailureReason, message: String, log_tail: Option<String>) -> JobOutcome {
    JobOutcome::Failed(JobFailure {
        reason,
        message,
        log_tail,
    })
}

/// Runs `job` with the runner `registry` has for its kind. `runner` names the process kind in
/// the provenance (`engine`, `worker`, `exec`).
pub(crate) fn run_job(
    job: &Job,
    registry: &Registry,
    runtime: &dyn Runtime,
    runner: &str,
    cancel: &AtomicBool,
    progress: Option<Box<dyn ProgressSink>>,
) -> JobOutcome {
    let Some(run) = registry.runner(&job.kind) else {
        return failed(
            FailureReason::Stage,
            format!(
                "kind `{}` cannot run in this process (no runner registered)",
                job.kind
            ),
            None,
        );
    };
    let cache = Cache::new(&job.cache_dir);
    let scratch = match scratch_dir(job, &cache) {
        Ok(s) => s,
        Err(outcome) => return *outcome,
    };
    let out_dir = scratch.path().join("out");
    let in_dir = scratch.path().join("in");
    let inputs = match materialise_inputs(job, &cache, &in_dir) {
        Ok(inputs) => inputs,
        Err(outcome) => return *outcome,
    };

    runtime.prepare(job);
    let started = crate::cache::store::now();
    let result = run_stage(run, job, &inputs, &out_dir, cancel, progress);
    let (metrics, telemetry) = match result {
        Ok(recorded) => recorded,
        Err(StageError::Interrupted) => {
            return failed(FailureReason::Interrupted, "interrupted".into(), None)
        }
        Err(e) => {
            let tail = log_tail(&out_dir.join(crate::kind::LOG_OUTPUT));
            return failed(FailureReason::Stage, e.to_string(), tail);
        }
    };
    match store_outputs(&cache, &out_dir, &metrics) {
        Ok(outputs) => {
            let provenance = provenance(job, runtime, runner, telemetry);
            JobOutcome::Done(Box::new(JobResult {
                outputs,
                metrics,
                started,
                finished: crate::cache::store::now(),
                provenance,
            }))
        }
        Err(message) => failed(FailureReason::Stage, message, None),
    }
}

/// The job's private scratch folder under the cache's `tmp`, with its `out` folder made.
fn scratch_dir(job: &Job, cache: &Cache) -> Result<tempfile::TempDir, Box<JobOutcome>> {
    let tmp = cache.tmp_dir();
    let scratch = std::fs::create_dir_all(&tmp).and_then(|()| {
        tempfile::Builder::new()
            .prefix(&format!("{}-", crate::cache::short_key(&job.key)))
            .tempdir_in(&tmp)
    });
    let scratch = match scratch {
        Ok(s) => s,
        Err(e) => {
            return Err(Box::new(failed(
                FailureReason::Stage,
                format!("scratch folder in {}: {e}", tmp.display()),
                None,
            )))
        }
    };
    let out_dir = scratch.path().join("out");
    if let Err(e) = std::fs::create_dir_all(&out_dir) {
        return Err(Box::new(failed(
            FailureReason::Stage,
            format!("{}: {e}", out_dir.display()),
            None,
        )));
    }
    Ok(scratch)
}

/// The metrics and the telemetry a stage recorded.
type Recorded = (BTreeMap<String, f64>, BTreeMap<String, f64>);

/// The metrics and telemetry the stage recorded, or its error; a panic in the stage is an
/// error that says so.
fn run_stage(
    run: &dyn Run,
    job: &Job,
    inputs: &Inputs,
    out_dir: &Path,
    cancel: &AtomicBool,
    progress: Option<Box<dyn ProgressSink>>,
) -> Result<Recorded, StageError> {
    let mut ctx = StageContext::new(
        &job.stage,
        &job.params,
        inputs,
        out_dir.to_path_buf(),
        &job.project_dir,
        job.resources.device,
        cancel,
        progress,
    );
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.run(&mut ctx)));
    match result {
        Ok(Ok(())) => Ok(ctx.finish()),
        Ok(Err(e)) => Err(e),
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(StageError::Other(format!("stage panicked: {message}")))
        }
    }
}

/// The provenance of a job this process ran: the build, the device, the runner and the
/// telemetry the stage recorded.
fn provenance(
    job: &Job,
    runtime: &dyn Runtime,
    runner: &str,
    telemetry: BTreeMap<String, f64>,
) -> Provenance {
    let mut provenance = Provenance::this_build(
        &job.resources.device.to_string(),
        job.resources.threads as i64,
        &runtime.libtorch().unwrap_or_default(),
    );
    provenance.runner = runner.to_string();
    provenance.visible_devices = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    provenance.telemetry = telemetry;
    provenance
}

/// Reads every input object of `job` from the store, verified; a bad one is a
/// [`FailureReason::BadInput`] naming its producer.
fn materialise_inputs(job: &Job, cache: &Cache, in_dir: &Path) -> Result<Inputs, Box<JobOutcome>> {
    let mut inputs: Inputs = BTreeMap::new();
    for (slot, ups) in &job.inputs {
        let mut artifacts = Vec::with_capacity(ups.len());
        for (n, up) in ups.iter().enumerate() {
            let mut artifact = InputArtifact {
                stage: up.stage.clone(),
                kind: up.kind.clone(),
                binding: up.binding.clone(),
                params: up.params.clone(),
                key: up.key.clone(),
                outputs: BTreeMap::new(),
                metrics: up.metrics.clone(),
                draws: up.draws.clone(),
            };
            for (name, output) in &up.outputs {
                let path = if output.is_dir {
                    let dest = in_dir.join(format!("{slot}-{n}")).join(name);
                    cache
                        .objects()
                        .materialise_dir(&output.digest, &dest)
                        .map(|()| dest)
                } else {
                    cache.objects().open_verified(&output.digest)
                };
                let path = path.map_err(|source| {
                    Box::new(JobOutcome::Failed(JobFailure {
                        reason: FailureReason::BadInput {
                            producer_key: up.key.clone(),
                            producer_stage: up.stage.clone(),
                        },
                        message: format!("input `{name}` from {}: {source}", up.stage),
                        log_tail: None,
                    }))
                })?;
                artifact.outputs.insert(name.clone(), path);
            }
            artifacts.push(artifact);
        }
        inputs.insert(slot.clone(), artifacts);
    }
    Ok(inputs)
}

/// Writes `metrics.json` (keyed metrics only) and moves every top-level file and folder of
/// `out_dir` into the object store.
fn store_outputs(
    cache: &Cache,
    out_dir: &Path,
    metrics: &BTreeMap<String, f64>,
) -> Result<BTreeMap<String, OutputRef>, String> {
    if !metrics.is_empty() {
        let path = out_dir.join(crate::kind::METRICS_OUTPUT);
        let text = serde_json::to_string_pretty(metrics).map_err(|e| e.to_string())?;
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let mut entries: Vec<_> = std::fs::read_dir(out_dir)
        .and_then(|d| d.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", out_dir.display()))?;
    entries.sort_by_key(|e| e.file_name());
    let mut outputs = BTreeMap::new();
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let (digest, is_dir) = if path.is_dir() {
            let (digest, _, _) = cache
                .objects()
                .put_dir(&path)
                .map_err(|e| format!("storing outputs: {e}"))?;
            (digest, true)
        } else {
            let (digest, _) = cache
                .objects()
                .put_file(&path)
                .map_err(|e| format!("storing outputs: {e}"))?;
            (digest, false)
        };
        outputs.insert(name, OutputRef { digest, is_dir });
    }
    Ok(outputs)
}

fn log_tail(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n");
    (!tail.is_empty()).then_some(tail)
}

/// The protocol's end of the pipe to the engine: the worker's own copy of stdout.
type ProtocolOut = Arc<Mutex<std::fs::File>>;

/// Progress of a job in a worker, sent to the engine as protocol lines.
struct ProtocolProgress {
    id: JobId,
    out: ProtocolOut,
    state: Mutex<(u64, u64, String)>,
}

impl ProgressSink for ProtocolProgress {
    fn start(&self, len: u64, message: &str) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        *state = (0, len, message.to_string());
        send(&self.out, &self.progress(&state));
    }

    fn tick(&self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.0 += 1;
        send(&self.out, &self.progress(&state));
    }
}

impl ProtocolProgress {
    fn progress(&self, state: &(u64, u64, String)) -> FromWorker {
        FromWorker::Progress {
            id: self.id,
            position: state.0,
            length: state.1,
            message: state.2.clone(),
        }
    }
}

/// Writes one protocol line, whole (one `write` under the lock).
fn send(out: &Mutex<std::fs::File>, message: &FromWorker) {
    let mut line = serde_json::to_string(message).expect("protocol messages serialise");
    line.push('\n');
    let mut out = out.lock().unwrap_or_else(|p| p.into_inner());
    // A closed pipe means the engine is gone; the worker ends at the next read.
    let _ = out.write_all(line.as_bytes());
}

/// Takes stdout for the protocol: returns a private copy of it (closed on exec, so a program a
/// stage starts cannot hold the engine's pipe open) and points stdout at stderr, so that
/// whatever a stage or a library prints goes to the engine's terminal, never into the
/// protocol.
fn take_stdout_for_protocol() -> std::io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    // SAFETY: plain descriptor calls; `copy` is a fresh descriptor this function owns and
    // hands to the File, and stdout's buffer is still empty (nothing was printed yet).
    unsafe {
        let copy = libc::fcntl(libc::STDOUT_FILENO, libc::F_DUPFD_CLOEXEC, 3);
        if copy < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) < 0 {
            let error = std::io::Error::last_os_error();
            libc::close(copy);
            return Err(error);
        }
        Ok(std::fs::File::from_raw_fd(copy))
    }
}

/// Sends a heartbeat every [`super::protocol::HEARTBEAT_EVERY`] for as long as the process
/// lives, from a thread of its own: a long stage step never looks like a hang.
fn start_heartbeat(out: ProtocolOut) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("asymflow-worker-heartbeat".into())
        .spawn(move || loop {
            std::thread::sleep(super::protocol::HEARTBEAT_EVERY);
            send(&out, &FromWorker::Heartbeat);
        })
        .map(|_| ())
}

/// The persistent worker: reads jobs from stdin and answers on stdout until stdin closes or
/// `shutdown` arrives (see [`super::protocol`]). SIGTERM, SIGINT or SIGHUP stop the running
/// job (it answers `done`, interrupted) and end the worker: the terminal's Ctrl-C reaches the
/// workers too, and a cluster sends SIGTERM to every process of a job.
pub fn serve(registry: &Registry, runtime: &dyn Runtime) -> std::io::Result<()> {
    let out: ProtocolOut = Arc::new(Mutex::new(take_stdout_for_protocol()?));
    let cancel = Arc::new(AtomicBool::new(false));
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        signal_flag(signal, Arc::clone(&cancel))?;
    }
    send(
        &out,
        &FromWorker::Ready {
            pid: std::process::id(),
            libtorch: runtime.libtorch(),
        },
    );
    start_heartbeat(Arc::clone(&out))?;
    let (jobs_tx, jobs_rx) = mpsc::channel::<(JobId, Job)>();
    let running: Arc<Mutex<Option<JobId>>> = Arc::new(Mutex::new(None));
    {
        let (running, cancel) = (Arc::clone(&running), Arc::clone(&cancel));
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if line.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str::<ToWorker>(&line) {
                    Ok(ToWorker::Job { id, job }) => {
                        if jobs_tx.send((id, *job)).is_err() {
                            break;
                        }
                    }
                    Ok(ToWorker::Cancel { id }) => {
                        if *running.lock().unwrap_or_else(|p| p.into_inner()) == Some(id) {
                            cancel.store(true, Ordering::Relaxed);
                        }
                    }
                    Ok(ToWorker::Shutdown) => break,
                    Err(e) => eprintln!("asymflow worker: ignoring a bad request line: {e}"),
                }
            }
            // Dropping the sender ends the job loop after the running job.
        });
    }
    for (id, job) in jobs_rx {
        let terminating = TERMINATING.load(Ordering::Relaxed);
        *running.lock().unwrap_or_else(|p| p.into_inner()) = Some(id);
        cancel.store(terminating, Ordering::Relaxed);
        let outcome = if terminating {
            JobOutcome::Failed(JobFailure {
                reason: FailureReason::Interrupted,
                message: "the worker was stopped by a signal".into(),
                log_tail: None,
            })
        } else {
            let progress = ProtocolProgress {
                id,
                out: Arc::clone(&out),
                state: Mutex::new((0, 0, String::new())),
            };
            run_job(
                &job,
                registry,
                runtime,
                "worker",
                &cancel,
                Some(Box::new(progress)),
            )
        };
        *running.lock().unwrap_or_else(|p| p.into_inner()) = None;
        send(
            &out,
            &FromWorker::Done {
                id,
                outcome: Box::new(outcome),
            },
        );
        if TERMINATING.load(Ordering::Relaxed) {
            break;
        }
    }
    Ok(())
}

/// Why `asymflow exec` could not run a job file at all.
#[derive(Debug, thiserror::Error)]
pub enum ExecFileError {
    /// The job file could not be read.
    #[error("{path}: {message}")]
    Job {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The result file could not be written.
    #[error("writing the result to {path}: {source}")]
    Result {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// `asymflow exec JOB.json --result RESULT.json`: runs one job in this process and writes its
/// [`JobOutcome`] to `result` (temp file + rename, so a reader never sees half of it).
/// Returns whether the job succeeded.
pub fn exec_file(
    job_path: &Path,
    result: &Path,
    registry: &Registry,
    runtime: &dyn Runtime,
) -> Result<bool, ExecFileError> {
    let job_error = |message: String| ExecFileError::Job {
        path: job_path.display().to_string(),
        message,
    };
    let text = std::fs::read_to_string(job_path).map_err(|e| job_error(e.to_string()))?;
    let job: Job = serde_json::from_str(&text)
        .map_err(|e| job_error(format!("not an asymflow job file: {e}")))?;
    let cancel = Arc::new(AtomicBool::new(false));
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // Slurm sends SIGTERM before it kills a cancelled or timed-out job.
        let _ = signal_flag(signal, Arc::clone(&cancel));
    }
    let outcome = run_job(&job, registry, runtime, "exec", &cancel, None);
    let ok = matches!(outcome, JobOutcome::Done(_));
    let text = serde_json::to_string_pretty(&outcome).expect("outcomes serialise");
    let write_error = |source| ExecFileError::Result {
        path: result.display().to_string(),
        source,
    };
    let dir = result.parent().filter(|p| !p.as_os_str().is_empty());
    let mut tmp =
        tempfile::NamedTempFile::new_in(dir.unwrap_or(Path::new("."))).map_err(write_error)?;
    tmp.write_all(text.as_bytes()).map_err(write_error)?;
    tmp.as_file().sync_all().map_err(write_error)?;
    tmp.persist(result).map_err(|e| write_error(e.error))?;
    Ok(ok)
}

static SIGNAL_FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
/// A stop signal arrived: the worker ends after the running job.
static TERMINATING: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    TERMINATING.store(true, Ordering::Relaxed);
    if let Some(flag) = SIGNAL_FLAG.get() {
        flag.store(true, Ordering::Relaxed);
    }
}

fn signal_flag(signal: libc::c_int, flag: Arc<AtomicBool>) -> std::io::Result<()> {
    let _ = SIGNAL_FLAG.set(flag);
    // SAFETY: the handler only stores into an atomic, which is async-signal-safe.
    let previous = unsafe { libc::signal(signal, on_signal as *const () as libc::sighandler_t) };
    if previous == libc::SIG_ERR {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
