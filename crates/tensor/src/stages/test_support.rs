//! Helpers for unit tests of stage kinds: a fake upstream artifact and a one-call stage run
//! with declared defaults filled in, as the engine would.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use serde_json::Value;

use crate::kind::{InputArtifact, Inputs, Params, Stage, StageContext, StageError};

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
    }
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

/// Runs `stage` on CPU with `overrides` over its defaults; returns its metrics and the output
/// folder (kept alive by the returned guard).
pub fn run_stage(
    stage: &dyn Stage,
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
        tch::Device::Cpu,
        &cancel,
        None,
    );
    stage.run(&mut ctx)?;
    Ok((ctx.finish(), out))
}
