//! Stage kinds for testing the engine itself (freshness, sweeps, crashes, concurrency). They
//! are compiled only into test builds (the `test-kinds` feature, which the test, bench and
//! `--all-targets` builds turn on) and registered only when `ASYMFLOW_TEST_KINDS` is set, so
//! users' binaries never carry them.
//!
//! `test-echo` writes `value.json` holding its `value` param and the values of its inputs, and
//! records the metric `value` (its own number plus its inputs'). It can sleep (checking for
//! Ctrl-C, reporting ten steps of progress and a log line per step), fail on purpose, take a
//! device slot, and append a line to a file every time it really runs, so tests can count
//! executions across processes. It can also break its output contract on purpose (`omit`
//! leaves out `value.json`, `stray` writes a file no declaration names).
//!
//! `test-train` stands in for a training stage (a loss curve, per-epoch progress, metrics) for
//! the dashboard's tests.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use serde_json::Value;

use crate::kind::{
    Artifact, Device, InputArtifact, InputDecl, Inputs, OutputDecl, ParamDecl, ParamType, Params,
    Registry, Resource, Run, Stage, StageContext, StageError,
};

/// The test kinds, declared and run by this process.
pub fn register(registry: &mut Registry) {
    declare(registry);
    registry.register_runner("test-echo", Box::new(echo()));
    registry.register_runner("test-strict", Box::new(Strict));
    registry.register_runner("test-train", Box::new(Train));
}

/// The test kinds' declarations only: they run elsewhere (in a worker).
pub fn declare(registry: &mut Registry) {
    registry.register(Box::new(echo()));
    registry.register(Box::new(Strict));
    registry.register(Box::new(Train));
}

fn echo() -> Echo {
    Echo {
        kind: "test-echo",
        version: echo_version(),
    }
}

/// `test-train`: a stand-in for a training stage, for the dashboard's tests. Per epoch it
/// reports progress, logs the loss and can sleep; it writes `loss.json` (one object per epoch
/// with `loss` and an `aux` term) and records `map` and `final_loss`, all computed from its
/// `value`, `seed` and `epochs` so every result is known in advance.
#[derive(Clone)]
pub(crate) struct Train;

const TRAIN_PARAMS: &[ParamDecl] = &[
    ParamDecl::optional(
        "value",
        ParamType::Float,
        "0.5",
        "sets the metric and the curve",
    ),
    ParamDecl::optional(
        "seed",
        ParamType::Int,
        "0",
        "shifts the metric by seed / 100",
    ),
    ParamDecl::optional("epochs", ParamType::Int, "5", "points on the loss curve"),
    ParamDecl::optional(
        "sleep_ms",
        ParamType::Int,
        "0",
        "sleep this long in every epoch",
    ),
];

/// `test-train`'s inputs: the test kinds' data slots, and a stand-in teacher (another
/// `test-train`), so a two-level stochastic pipeline (a teacher, students) can be tested.
const TRAIN_INPUTS: &[InputDecl] = &[
    INPUTS[0],
    INPUTS[1],
    InputDecl {
        name: "teacher",
        required: false,
        accepts: &[Artifact::Metrics],
        doc: "a stand-in teacher (its metrics are not read)",
    },
];

/// The loss of `test-train` after `epoch` of `epochs` with `value`.
pub fn train_loss(value: f64, epoch: i64, epochs: i64) -> f64 {
    (1.0 + value) * (-2.0 * epoch as f64 / epochs.max(1) as f64).exp()
}

impl Stage for Train {
    fn kind(&self) -> &'static str {
        "test-train"
    }
    fn impl_version(&self) -> u32 {
        1
    }
    fn summary(&self) -> &'static str {
        "test kind: a training stand-in with a loss curve, progress and metrics"
    }
    fn params(&self) -> &'static [ParamDecl] {
        TRAIN_PARAMS
    }
    fn inputs(&self) -> &'static [InputDecl] {
        TRAIN_INPUTS
    }
    fn outputs(&self) -> &'static [OutputDecl] {
        &[super::outputs::LOSSES]
    }
    fn records(&self, _params: &Params) -> Option<Vec<String>> {
        crate::kind::declared(&["map", "final_loss"])
    }
}

/// `test-train`'s parameters, read once ([`crate::kind::typed`]).
#[derive(Debug, Clone)]
struct TrainParams {
    value: f64,
    seed: i64,
    epochs: i64,
    sleep_ms: i64,
}

impl TrainParams {
    fn from_params(params: &Params) -> Result<Self, StageError> {
        Ok(TrainParams {
            value: params.float("value")?,
            seed: params.int("seed")?,
            epochs: params.int("epochs")?,
            sleep_ms: params.int("sleep_ms")?,
        })
    }
}

impl Run for Train {
    fn run(&self, ctx: &mut StageContext<'_>) -> Result<(), StageError> {
        let p = TrainParams::from_params(ctx.params())?;
        let value = p.value;
        let seed = p.seed;
        let epochs = p.epochs.max(1);
        let sleep = p.sleep_ms.max(0) as u64;
        ctx.progress_start(epochs as u64, "epochs");
        let mut curve = Vec::new();
        for epoch in 1..=epochs {
            let clock = std::time::Instant::now();
            while clock.elapsed().as_millis() < sleep as u128 {
                ctx.check_cancelled()?;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            let loss = train_loss(value, epoch, epochs);
            curve.push(serde_json::json!({ "epoch": epoch, "loss": loss, "aux": loss / 2.0 }));
            ctx.log(format!("epoch {epoch}/{epochs}: loss {loss:.5}"));
            ctx.progress_tick();
        }
        ctx.write_json(super::outputs::LOSSES.file, &curve)?;
        ctx.metric("map", value * 0.8 + seed as f64 / 100.0);
        ctx.metric("final_loss", train_loss(value, epochs, epochs));
        Ok(())
    }
}

/// `test-strict`: a required parameter and a required input, for error-message tests.
#[derive(Clone)]
pub(crate) struct Strict;

const STRICT_PARAMS: &[ParamDecl] = &[ParamDecl::required(
    "count",
    ParamType::Int,
    "how many (required)",
)];

const STRICT_INPUTS: &[InputDecl] = &[InputDecl {
    name: "source",
    required: true,
    accepts: &[Artifact::Metrics],
    doc: "an upstream test stage",
}];

impl Stage for Strict {
    fn kind(&self) -> &'static str {
        "test-strict"
    }
    fn impl_version(&self) -> u32 {
        1
    }
    fn summary(&self) -> &'static str {
        "test kind: a required parameter and input"
    }
    fn params(&self) -> &'static [ParamDecl] {
        STRICT_PARAMS
    }
    fn inputs(&self) -> &'static [InputDecl] {
        STRICT_INPUTS
    }
    fn outputs(&self) -> &'static [OutputDecl] {
        &[]
    }
    fn records(&self, _params: &Params) -> Option<Vec<String>> {
        crate::kind::declared(&["count"])
    }
}

/// `test-strict`'s parameters, read once ([`crate::kind::typed`]).
#[derive(Debug, Clone)]
struct StrictParams {
    count: i64,
}

impl StrictParams {
    fn from_params(params: &Params) -> Result<Self, StageError> {
        Ok(StrictParams {
            count: params.int("count")?,
        })
    }
}

impl Run for Strict {
    fn run(&self, ctx: &mut StageContext<'_>) -> Result<(), StageError> {
        let count = StrictParams::from_params(ctx.params())?.count;
        ctx.metric("count", count as f64);
        Ok(())
    }
}

fn echo_version() -> u32 {
    std::env::var("ASYMFLOW_TEST_ECHO_VERSION")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

/// See the module docs.
#[derive(Clone)]
pub struct Echo {
    kind: &'static str,
    version: u32,
}

const PARAMS: &[ParamDecl] = &[
    ParamDecl::optional(
        "value",
        ParamType::Any,
        "0",
        "any value; a number enters the metric",
    ),
    ParamDecl::optional(
        "sleep_ms",
        ParamType::Int,
        "0",
        "sleep this long while running",
    ),
    ParamDecl::optional("fail", ParamType::Bool, "false", "fail on purpose"),
    ParamDecl::optional(
        "pad_bytes",
        ParamType::Int,
        "0",
        "also write `pad.bin` of this many bytes (a large output, for disk-full tests)",
    ),
    ParamDecl::optional("device", ParamType::Bool, "false", "take a device slot"),
    ParamDecl::optional(
        "omit",
        ParamType::Bool,
        "false",
        "leave out `value.json`, breaking the output contract",
    ),
    ParamDecl::optional(
        "stray",
        ParamType::Str,
        "\"\"",
        "also write a file of this name, which no output declaration names",
    ),
    ParamDecl::optional(
        "trace",
        ParamType::Path,
        "\"\"",
        "append a line here on every real run",
    ),
];

const INPUTS: &[InputDecl] = &[
    InputDecl {
        name: "input",
        required: false,
        accepts: &[Artifact::Data],
        doc: "upstream test stages",
    },
    InputDecl {
        name: "other",
        required: false,
        accepts: &[Artifact::Data],
        doc: "more upstream test stages",
    },
];

const VALUE: OutputDecl = OutputDecl::new(
    "value.json",
    Artifact::Data,
    "its value and its inputs' values",
);
const PAD: OutputDecl = OutputDecl::optional(
    "pad.bin",
    Artifact::Data,
    "`pad_bytes` bytes (when above 0)",
);
const ECHO_OUTPUTS: &[OutputDecl] = &[VALUE, PAD];

impl Stage for Echo {
    fn kind(&self) -> &'static str {
        self.kind
    }
    fn impl_version(&self) -> u32 {
        self.version
    }
    fn summary(&self) -> &'static str {
        "test kind: echoes its value and its inputs' values"
    }
    fn params(&self) -> &'static [ParamDecl] {
        PARAMS
    }
    fn inputs(&self) -> &'static [InputDecl] {
        INPUTS
    }
    fn outputs(&self) -> &'static [OutputDecl] {
        ECHO_OUTPUTS
    }
    fn records(&self, _params: &Params) -> Option<Vec<String>> {
        crate::kind::declared(&["value"])
    }
    fn resource(&self, params: &Params) -> Resource {
        if EchoParams::from_params(params).is_ok_and(|p| p.device) {
            Resource::Device
        } else {
            Resource::Cpu
        }
    }
}

/// `test-echo`'s parameters, read once ([`crate::kind::typed`]).
#[derive(Debug, Clone)]
struct EchoParams {
    /// `value`, any JSON.
    value: Value,
    sleep_ms: i64,
    fail: bool,
    pad_bytes: i64,
    device: bool,
    omit: bool,
    /// `stray`, `None` when empty.
    stray: Option<String>,
    /// `trace`, `None` when empty.
    trace: Option<String>,
}

impl EchoParams {
    fn from_params(params: &Params) -> Result<Self, StageError> {
        Ok(EchoParams {
            value: params.get("value").cloned().unwrap_or(Value::Null),
            sleep_ms: params.int("sleep_ms")?,
            fail: params.bool("fail")?,
            pad_bytes: params.int("pad_bytes")?,
            device: params.bool("device").unwrap_or(false),
            omit: params.bool("omit")?,
            stray: params.opt_str("stray").map(str::to_string),
            trace: params.opt_str("trace").map(str::to_string),
        })
    }
}

impl Run for Echo {
    fn run(&self, ctx: &mut StageContext<'_>) -> Result<(), StageError> {
        let params = EchoParams::from_params(ctx.params())?;
        if let Some(trace) = &params.trace {
            let path = ctx.resolve_path(trace);
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| StageError::io(&path, e))?;
            // One write per line: with O_APPEND it lands whole even when processes share the
            // trace (`writeln!` on a File writes each formatted piece on its own).
            let line = format!("{} {}\n", ctx.stage_name(), params.value);
            file.write_all(line.as_bytes())
                .map_err(|e| StageError::io(&path, e))?;
        }
        let sleep = params.sleep_ms.max(0) as u64;
        if sleep > 0 {
            // Ten steps of progress, so readers of a running stage (`serve`) see it move.
            ctx.progress_start(10, "steps");
        }
        let clock = std::time::Instant::now();
        let mut step = 0;
        while clock.elapsed().as_millis() < sleep as u128 {
            ctx.check_cancelled()?;
            std::thread::sleep(std::time::Duration::from_millis(10));
            let done = (clock.elapsed().as_millis() * 10 / sleep.max(1) as u128).min(10);
            while step < done {
                step += 1;
                ctx.progress_tick();
                ctx.log(format!("step {step}/10"));
            }
        }
        if params.fail {
            return Err(StageError::Other("failed on purpose (fail = true)".into()));
        }
        let mut total = params.value.as_f64().unwrap_or(0.0);
        let mut seen = Vec::new();
        for slot in ["input", "other"] {
            for up in ctx.input_all(slot) {
                total += up.metrics.get("value").copied().unwrap_or(0.0);
                let text = std::fs::read_to_string(up.output(VALUE.file)?).map_err(|e| {
                    StageError::io(
                        up.output(VALUE.file).unwrap_or(std::path::Path::new("?")),
                        e,
                    )
                })?;
                seen.push(serde_json::from_str::<Value>(&text).unwrap_or(Value::Null));
            }
        }
        if !params.omit {
            ctx.write_json(
                VALUE.file,
                &serde_json::json!({ "value": params.value, "inputs": seen }),
            )?;
        }
        if let Some(stray) = params.stray.as_deref() {
            if stray.contains(['/', '\\']) || stray.starts_with('.') {
                return Err(StageError::bad_param(
                    "stray",
                    format!("`{stray}` is not a plain file name; use one like `extra.txt`"),
                ));
            }
            let path = ctx.out_path(stray);
            std::fs::write(&path, b"stray").map_err(|e| StageError::io(&path, e))?;
        }
        let pad = params.pad_bytes.max(0) as usize;
        if pad > 0 {
            let path = ctx.out_path(PAD.file);
            std::fs::write(&path, vec![0x5a; pad]).map_err(|e| StageError::io(&path, e))?;
        }
        ctx.metric("value", total);
        ctx.log(format!("echo total {total}"));
        Ok(())
    }
}

// Helpers for unit tests of stage kinds (in both crates): a fake upstream artifact and a
// one-call stage run with declared defaults filled in, as the engine would.

/// An upstream artifact named `stage` with the given outputs.
pub fn artifact(stage: &str, key: &str, outputs: &[(&str, &Path)]) -> InputArtifact {
    InputArtifact {
        stage: stage.to_string(),
        kind: "test".to_string(),
        binding: BTreeMap::new(),
        params: Params::default(),
        key: key.to_string(),
        outputs: outputs
            .iter()
            .map(|(n, p)| (n.to_string(), p.to_path_buf()))
            .collect(),
        metrics: BTreeMap::new(),
        draws: Vec::new(),
    }
}

/// Parameters from `(name, value)` pairs (unit tests of parameter readers).
pub fn params_of(pairs: &[(&str, Value)]) -> Params {
    Params(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    )
}

/// The stage's declared defaults overlaid with `overrides` (a JSON object).
pub fn params_with_defaults(stage: &dyn Stage, overrides: Value) -> Params {
    let mut map: BTreeMap<String, Value> = stage
        .params()
        .iter()
        .filter_map(|d| d.default_value().map(|v| (d.name.to_string(), v)))
        .collect();
    if let Value::Object(o) = overrides {
        map.extend(o);
    }
    Params(map)
}

/// Runs `stage` (declared by `stage`, run by `run`) on CPU with `overrides` over its defaults; returns its metrics and the output
/// folder (kept alive by the returned guard).
pub fn run_stage(
    stage: &dyn Stage,
    run: &dyn Run,
    overrides: Value,
    inputs: &[(&str, Vec<InputArtifact>)],
) -> Result<(BTreeMap<String, f64>, tempfile::TempDir), StageError> {
    let params = params_with_defaults(stage, overrides);
    let inputs: Inputs = inputs
        .iter()
        .map(|(s, a)| (s.to_string(), a.clone()))
        .collect();
    let out = tempfile::tempdir().unwrap();
    let project = PathBuf::from(".");
    let cancel = AtomicBool::new(false);
    let mut ctx = StageContext::new(
        stage.kind(),
        &params,
        &inputs,
        out.path().to_path_buf(),
        &project,
        Device::Cpu,
        &cancel,
        None,
    );
    run.run(&mut ctx)?;
    Ok((ctx.finish().0, out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::typed::assert_reads_match_declaration;
    use serde_json::json;

    #[test]
    fn each_test_kind_reads_what_it_declares() {
        assert_reads_match_declaration(&echo(), json!({}), EchoParams::from_params);
        assert_reads_match_declaration(&Train, json!({}), TrainParams::from_params);
        assert_reads_match_declaration(&Strict, json!({"count": 3}), StrictParams::from_params);
    }
}
