//! What a running stage sees: its parameters, its inputs, a private output folder, and ways to
//! report metrics, log lines and progress.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use super::{Device, ParamError, Params, LOG_OUTPUT, REASONS_OUTPUT};

/// Where a running stage's progress goes: a terminal bar in the engine, protocol messages in a
/// worker.
pub trait ProgressSink: Send {
    /// Starts counting `len` steps of `message` (epochs, batches).
    fn start(&self, len: u64, message: &str);
    /// One more step done.
    fn tick(&self);
}

/// Why a stage failed.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    /// A parameter value the stage cannot use (checked beyond its declared type).
    #[error("parameter `{name}`: {message}")]
    BadParam {
        /// The parameter.
        name: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A parameter read with the wrong type (a bug in the stage, or an upstream read).
    #[error(transparent)]
    Param(#[from] ParamError),
    /// An input slot the stage needs is not connected or lacks an output.
    #[error("input `{slot}`: {message}")]
    Input {
        /// The slot.
        slot: String,
        /// What is missing.
        message: String,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A data set could not be read. (The `From` impl lives beside `DataError`, in `data/`,
    /// so this ground-floor module imports nothing above it.)
    #[error(transparent)]
    Data(Box<dyn std::error::Error + Send + Sync>),
    /// The tensor library reported an error.
    #[error("libtorch: {0}")]
    Torch(String),
    /// The run was interrupted (Ctrl-C); nothing is recorded.
    #[error("interrupted")]
    Interrupted,
    /// Anything else, with a message that says what and how to fix it.
    #[error("{0}")]
    Other(String),
}

impl StageError {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StageError::Io {
            path: path.into(),
            source,
        }
    }

    /// A bad parameter value.
    pub fn bad_param(name: &str, message: impl Into<String>) -> Self {
        StageError::BadParam {
            name: name.to_string(),
            message: message.into(),
        }
    }
}

/// A stochastic instance (see [`super::Stage::stochastic`]) that an artifact descends from,
/// or the artifact itself when it is one: one random draw its result depends on. Two artifacts
/// sharing a draw share that instance's randomness, so a spread across them does not cover it.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Draw {
    /// The stage's name in the pipeline.
    pub stage: String,
    /// The instance's label (`student[query_res=32,seed=1]`): one per draw.
    pub instance: String,
}

/// One finished upstream instance, as a downstream stage sees it.
#[derive(Debug, Clone)]
pub struct InputArtifact {
    /// The upstream stage's name in the pipeline.
    pub stage: String,
    /// The upstream stage's kind.
    pub kind: String,
    /// The sweep values bound for that instance (axis -> value).
    pub binding: BTreeMap<String, Value>,
    /// Its resolved parameters.
    pub params: Params,
    /// Its cache key (hex).
    pub key: String,
    /// Output name -> a verified, read-only file (or materialised folder) holding it.
    pub outputs: BTreeMap<String, PathBuf>,
    /// Its metrics.
    pub metrics: BTreeMap<String, f64>,
    /// The stochastic instances it descends from (itself included when it is one), upstream
    /// first. Filled for kinds that read them ([`super::Stage::reads_draws`]); empty otherwise.
    pub draws: Vec<Draw>,
}

impl InputArtifact {
    /// Why each metric this instance declined has no number (empty when it declined none).
    pub fn reasons(&self) -> Result<BTreeMap<String, String>, StageError> {
        match self.outputs.get(REASONS_OUTPUT) {
            Some(path) => read_json(path),
            None => Ok(BTreeMap::new()),
        }
    }

    /// The path of output `name`, or an error naming what exists.
    pub fn output(&self, name: &str) -> Result<&Path, StageError> {
        self.outputs
            .get(name)
            .map(PathBuf::as_path)
            .ok_or_else(|| StageError::Input {
                slot: self.stage.clone(),
                message: format!(
                    "stage `{}` (kind {}) has no output `{name}`; it has: {}",
                    self.stage,
                    self.kind,
                    self.outputs.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            })
    }
}

/// Input slot -> the upstream instances connected to it: one for a plain input, all gathered
/// instances (in a deterministic order) for a gathered one.
pub type Inputs = BTreeMap<String, Vec<InputArtifact>>;

/// The running stage's view of the world.
pub struct StageContext<'a> {
    params: &'a Params,
    inputs: &'a Inputs,
    out_dir: PathBuf,
    project_dir: &'a Path,
    stage_name: &'a str,
    device: Device,
    cancel: &'a AtomicBool,
    metrics: BTreeMap<String, f64>,
    reasons: BTreeMap<String, String>,
    telemetry: BTreeMap<String, f64>,
    log: Option<std::fs::File>,
    progress: Option<Box<dyn ProgressSink>>,
    live: LiveProgress,
}

impl<'a> StageContext<'a> {
    /// A context writing into `out_dir` (which must exist and be empty).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        stage_name: &'a str,
        params: &'a Params,
        inputs: &'a Inputs,
        out_dir: PathBuf,
        project_dir: &'a Path,
        device: Device,
        cancel: &'a AtomicBool,
        progress: Option<Box<dyn ProgressSink>>,
    ) -> Self {
        let log = std::fs::File::create(out_dir.join(LOG_OUTPUT)).ok();
        let live = LiveProgress::new(&out_dir);
        StageContext {
            params,
            inputs,
            out_dir,
            project_dir,
            stage_name,
            device,
            cancel,
            metrics: BTreeMap::new(),
            reasons: BTreeMap::new(),
            telemetry: BTreeMap::new(),
            live,
            log,
            progress,
        }
    }

    /// The resolved parameters.
    pub fn params(&self) -> &Params {
        self.params
    }

    /// Every input slot.
    pub fn inputs(&self) -> &Inputs {
        self.inputs
    }

    /// The single instance connected to `slot` (an error when absent or gathered).
    pub fn input(&self, slot: &str) -> Result<&InputArtifact, StageError> {
        match self.inputs.get(slot).map(Vec::as_slice) {
            Some([one]) => Ok(one),
            Some([]) | None => Err(StageError::Input {
                slot: slot.to_string(),
                message: "not connected; add it under `inputs`".into(),
            }),
            Some(many) => Err(StageError::Input {
                slot: slot.to_string(),
                message: format!("expected one instance, got {} (gathered)", many.len()),
            }),
        }
    }

    /// The instances connected to `slot` (empty when not connected).
    pub fn input_all(&self, slot: &str) -> &[InputArtifact] {
        self.inputs.get(slot).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Where outputs go: each top-level file becomes an output named by its file name, each
    /// top-level folder a directory output.
    pub fn out_dir(&self) -> &Path {
        &self.out_dir
    }

    /// The path of output `name` inside the output folder.
    pub fn out_path(&self, name: &str) -> PathBuf {
        self.out_dir.join(name)
    }

    /// Relative paths in parameters are resolved against this folder.
    pub fn project_dir(&self) -> &Path {
        self.project_dir
    }

    /// `path` resolved against the project folder.
    pub(crate) fn resolve_path(&self, path: &str) -> PathBuf {
        self.project_dir.join(path)
    }

    /// The stage's name in the pipeline.
    pub(crate) fn stage_name(&self) -> &str {
        self.stage_name
    }

    /// The device to compute on (a GPU slot, or the CPU).
    pub fn device(&self) -> Device {
        self.device
    }

    /// Records a metric (also written to the `metrics.json` output). Metrics are results:
    /// the same inputs must give the same value, since downstream keys depend on them.
    pub fn metric(&mut self, name: &str, value: f64) {
        self.metrics.insert(name.to_string(), value);
    }

    /// Records that `metric` has no number and why (`"FPIR 1e-2 needs at least 100 non-mated
    /// probes; there are 40"`): logged, and kept in the [`REASONS_OUTPUT`] output, which reports
    /// read to footnote the dash in place of the number. The reason is a result like a metric
    /// (it enters downstream keys), so a kind that starts or stops declining bumps its
    /// `impl_version`.
    pub fn decline(&mut self, metric: &str, reason: impl Into<String>) -> Result<(), StageError> {
        let reason = reason.into();
        self.metrics.remove(metric);
        self.log(format!("{metric}: no number: {reason}"));
        self.reasons.insert(metric.to_string(), reason);
        self.write_json(REASONS_OUTPUT, &self.reasons)
    }

    /// Records a volatile measurement (seconds, images per second): stored with the result
    /// and shown, never written to `metrics.json`, so it never enters a downstream key.
    pub fn telemetry(&mut self, name: &str, value: f64) {
        self.telemetry.insert(name.to_string(), value);
    }

    /// The metrics recorded so far.
    pub fn metrics(&self) -> &BTreeMap<String, f64> {
        &self.metrics
    }

    /// Appends a line to the stage's log (kept as the `log.txt` output) and to the tracing log.
    pub fn log(&mut self, line: impl AsRef<str>) {
        let line = line.as_ref();
        tracing::info!(stage = self.stage_name, "{line}");
        if let Some(file) = self.log.as_mut() {
            let _ = writeln!(file, "{line}");
        }
    }

    /// Sets up the progress bar for `len` steps with a message (epochs, batches).
    pub fn progress_start(&self, len: u64, message: &str) {
        self.live.start(len, message);
        if let Some(sink) = &self.progress {
            sink.start(len, message);
        }
    }

    /// Advances the progress bar by one step.
    pub fn progress_tick(&self) {
        self.live.tick();
        if let Some(sink) = &self.progress {
            sink.tick();
        }
    }

    /// `Err(Interrupted)` once Ctrl-C was pressed; long loops call this between steps.
    pub fn check_cancelled(&self) -> Result<(), StageError> {
        if self.cancel.load(Ordering::Relaxed) {
            Err(StageError::Interrupted)
        } else {
            Ok(())
        }
    }

    /// Writes `value` as pretty JSON to output `name`.
    pub fn write_json(&self, name: &str, value: &impl serde::Serialize) -> Result<(), StageError> {
        let path = self.out_path(name);
        let text = serde_json::to_string_pretty(value)
            .map_err(|e| StageError::Other(format!("serialising {name}: {e}")))?;
        std::fs::write(&path, text).map_err(|e| StageError::io(path, e))
    }

    /// Consumes the context, returning the metrics and the telemetry.
    pub fn finish(self) -> (BTreeMap<String, f64>, BTreeMap<String, f64>) {
        (self.metrics, self.telemetry)
    }
}

/// The file beside a running stage's output folder that holds its progress as JSON
/// (`{"pos": 3, "len": 10, "unit": "epochs", "updated": 1.7e9}`), for readers in other
/// processes (`asymflow serve`). It lives in the scratch folder, so it never becomes an output
/// and goes away with the scratch folder.
pub(crate) const PROGRESS_FILE: &str = "progress.json";

/// Progress written to [`PROGRESS_FILE`]: at every start, then at most every 200 ms, each
/// write a whole file renamed into place so a reader never sees half of one.
struct LiveProgress {
    path: Option<PathBuf>,
    pos: std::sync::atomic::AtomicU64,
    len: std::sync::atomic::AtomicU64,
    unit: std::sync::Mutex<(String, Option<std::time::Instant>)>,
}

impl LiveProgress {
    fn new(out_dir: &Path) -> Self {
        LiveProgress {
            path: out_dir.parent().map(|p| p.join(PROGRESS_FILE)),
            pos: 0.into(),
            len: 0.into(),
            unit: std::sync::Mutex::new((String::new(), None)),
        }
    }

    fn start(&self, len: u64, unit: &str) {
        self.len.store(len, Ordering::Relaxed);
        self.pos.store(0, Ordering::Relaxed);
        let mut guard = self.unit.lock().unwrap_or_else(|p| p.into_inner());
        guard.0 = unit.to_string();
        guard.1 = None;
        self.write(&mut guard);
    }

    fn tick(&self) {
        self.pos.fetch_add(1, Ordering::Relaxed);
        let mut guard = self.unit.lock().unwrap_or_else(|p| p.into_inner());
        let due = guard.1.is_none_or(|t| t.elapsed().as_millis() >= 200)
            || self.pos.load(Ordering::Relaxed) >= self.len.load(Ordering::Relaxed);
        if due {
            self.write(&mut guard);
        }
    }

    fn write(&self, guard: &mut (String, Option<std::time::Instant>)) {
        let Some(path) = &self.path else { return };
        let doc = serde_json::json!({
            "pos": self.pos.load(Ordering::Relaxed),
            "len": self.len.load(Ordering::Relaxed),
            "unit": guard.0,
            "updated": std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
        });
        let tmp = path.with_extension("json.tmp");
        if std::fs::write(&tmp, doc.to_string()).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
        guard.1 = Some(std::time::Instant::now());
    }
}

/// Reads a JSON file written by another stage.
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, StageError> {
    let text = std::fs::read_to_string(path).map_err(|e| StageError::io(path, e))?;
    serde_json::from_str(&text)
        .map_err(|e| StageError::Other(format!("{}: not the expected JSON: {e}", path.display())))
}
