//! After the command exits 0: its working folder must hold exactly the declared outputs (a
//! missing or an extra file fails the stage, and nothing is recorded), `metrics.json` must be
//! flat name -> number (its numbers become the stage's metrics), `loss.json` must be in the
//! native loss format, and no input object may have changed. The outputs then move into the
//! stage's output folder, under their file names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::kind::command::{CommandSpec, LOSS_NAME, METRICS_NAME};
use crate::kind::StageError;

/// The declared outputs, checked, moved into `out_dir`; returns the metrics the command wrote.
pub(super) fn outputs(
    spec: &CommandSpec,
    workdir: &Path,
    out_dir: &Path,
) -> Result<BTreeMap<String, f64>, StageError> {
    check_exact(spec, workdir)?;
    let mut metrics = BTreeMap::new();
    for (name, file) in &spec.outputs {
        let path = workdir.join(file);
        if name == METRICS_NAME {
            metrics = read_metrics(&path)?;
            continue;
        }
        if name == LOSS_NAME {
            check_loss(&path)?;
        }
        let dest = out_dir.join(file);
        std::fs::rename(&path, &dest).map_err(|e| StageError::io(&dest, e))?;
    }
    Ok(metrics)
}

fn check_exact(spec: &CommandSpec, workdir: &Path) -> Result<(), StageError> {
    let written: BTreeSet<String> = std::fs::read_dir(workdir)
        .and_then(|d| d.collect::<Result<Vec<_>, _>>())
        .map_err(|e| StageError::io(workdir, e))?
        .into_iter()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let declared: BTreeSet<String> = spec.outputs.values().cloned().collect();
    let missing: Vec<String> = spec
        .outputs
        .iter()
        .filter(|(_, f)| !written.contains(*f))
        .map(|(n, f)| format!("`{f}` (output `{n}`)"))
        .collect();
    let extra: Vec<&String> = written.difference(&declared).collect();
    if missing.is_empty() && extra.is_empty() {
        return Ok(());
    }
    let mut problems = Vec::new();
    if !missing.is_empty() {
        problems.push(format!("it did not write {}", missing.join(", ")));
    }
    if !extra.is_empty() {
        problems.push(format!(
            "it wrote {}, which `outputs` does not declare",
            extra
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Err(StageError::Other(format!(
        "the command's outputs are not the declared ones, nothing recorded: {}; it must write \
         exactly {} in its working folder (declare every file it writes under `outputs`, and \
         put temporary files in $TMPDIR, which is private to the run)",
        problems.join("; "),
        if declared.is_empty() {
            "nothing".to_string()
        } else {
            declared
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    )))
}

/// `metrics.json`: a flat JSON object of finite numbers.
fn read_metrics(path: &Path) -> Result<BTreeMap<String, f64>, StageError> {
    let text = std::fs::read_to_string(path).map_err(|e| StageError::io(path, e))?;
    let bad = |why: String| {
        StageError::Other(format!(
            "metrics.json: {why}; it must be one flat JSON object of numbers, \
             `{{\"map\": 0.71, \"top1\": 0.9}}`"
        ))
    };
    let doc: Value = serde_json::from_str(&text).map_err(|e| bad(format!("not JSON ({e})")))?;
    let Value::Object(map) = doc else {
        return Err(bad("not an object".into()));
    };
    map.into_iter()
        .map(
            |(name, value)| match value.as_f64().filter(|v| v.is_finite()) {
                Some(v) => Ok((name, v)),
                None => Err(bad(format!("`{name}` is {value}, not a finite number"))),
            },
        )
        .collect()
}

/// `loss.json` in a shape the loss charts read.
fn check_loss(path: &Path) -> Result<(), StageError> {
    let doc: Value = crate::kind::read_json(path)?;
    crate::report::loss::parse_curves(&doc)
        .and_then(|curves| {
            if curves.is_empty() {
                Err("it holds no loss curve".to_string())
            } else {
                Ok(())
            }
        })
        .map_err(|why| {
            StageError::Other(format!(
                "loss.json is not in the loss format: {why}; write `{{\"epochs\": [{{\"epoch\": 1, \"loss\": 0.5}}, ...]}}` \
                 or a list of numbers"
            ))
        })
}

/// The blake3 digest of each object file, to compare before and after the command.
pub(super) fn digests(objects: &[PathBuf]) -> Result<Vec<String>, StageError> {
    objects
        .iter()
        .map(|path| {
            let mut hasher = blake3::Hasher::new();
            let file = std::fs::File::open(path).map_err(|e| StageError::io(path, e))?;
            hasher
                .update_reader(file)
                .map_err(|e| StageError::io(path, e))?;
            Ok(hasher.finalize().to_hex().to_string())
        })
        .collect()
}
