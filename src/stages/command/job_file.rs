//! What a command sees of its job: its inputs as read-only paths, the paths its outputs go
//! to, its parameters, seed and device, in its argument list (the `cmd` placeholders) and in
//! one `ASYMFLOW_JOB` JSON file.
//!
//! Inputs are symbolic links, `SCRATCH/inputs/SLOT/OUTPUT` (gathered slots:
//! `SCRATCH/inputs/SLOT/N/OUTPUT`), to the verified objects in the cache, made read-only: no
//! copy of a large model per stage, and the file keeps its output's name (`model.safetensors`)
//! for libraries that look at extensions. A folder output is a private copy already (the
//! object store keeps folders as manifests). Whether a command changed an input anyway (it
//! ran as a user who may `chmod`) is checked after it exits ([`super::collect`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::kind::command::RESOURCES_PARAM;
use crate::kind::command::{
    parse_arg, parse_script, CommandSpec, Piece, Placeholder, COMMAND_PARAM,
};
use crate::kind::{InputArtifact, Inputs, StageError};

/// One linked input output: its link and the object it points to.
pub(super) struct Linked {
    /// Slot -> per instance, output name -> link path.
    pub(super) slots: BTreeMap<String, Vec<BTreeMap<String, PathBuf>>>,
    /// Every object file linked (for the integrity check after the run).
    pub(super) objects: Vec<PathBuf>,
}

/// Links every input's outputs under `dir` (see the module docs).
pub(super) fn link_inputs(inputs: &Inputs, dir: &Path) -> Result<Linked, StageError> {
    let mut linked = Linked {
        slots: BTreeMap::new(),
        objects: Vec::new(),
    };
    for (slot, ups) in inputs {
        let mut per_instance = Vec::with_capacity(ups.len());
        for (n, up) in ups.iter().enumerate() {
            let folder = if ups.len() == 1 {
                dir.join(slot)
            } else {
                dir.join(slot).join(n.to_string())
            };
            std::fs::create_dir_all(&folder).map_err(|e| StageError::io(&folder, e))?;
            let mut outputs = BTreeMap::new();
            for (name, target) in &up.outputs {
                let link = folder.join(name);
                if target.is_file() {
                    make_read_only(target);
                    linked.objects.push(target.clone());
                }
                std::os::unix::fs::symlink(target, &link).map_err(|e| StageError::io(&link, e))?;
                outputs.insert(name.clone(), link);
            }
            per_instance.push(outputs);
        }
        linked.slots.insert(slot.clone(), per_instance);
    }
    Ok(linked)
}

/// Drops the write bits of an object file; best effort (a shared cache may hold another
/// user's objects, which are not ours to change and not writable by us anyway).
fn make_read_only(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path) {
        let mode = meta.permissions().mode() & !0o222;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
    }
}

/// The path `${inputs.SLOT.OUTPUT}` stands for: the output of that name (its file name), a
/// command stage's declared output name, or the file whose stem it is (`model` is a native
/// model's `model.safetensors`, its weights, rather than the `model.json` beside them).
pub(super) fn input_path(
    inputs: &Inputs,
    linked: &Linked,
    slot: &str,
    output: &str,
) -> Result<PathBuf, StageError> {
    let ups = inputs.get(slot).map(Vec::as_slice).unwrap_or_default();
    let [up] = ups else {
        return Err(StageError::Input {
            slot: slot.into(),
            message: format!(
                "`${{inputs.{slot}.{output}}}` needs one instance, the slot has {} (gathered); \
                 read the paths from the ASYMFLOW_JOB file",
                ups.len()
            ),
        });
    };
    let file = output_file(up, output)?;
    linked
        .slots
        .get(slot)
        .and_then(|v| v.first())
        .and_then(|o| o.get(&file))
        .cloned()
        .ok_or_else(|| StageError::Input {
            slot: slot.into(),
            message: format!("output `{file}` of `{}` was not linked", up.stage),
        })
}

fn output_file(up: &InputArtifact, output: &str) -> Result<String, StageError> {
    if up.outputs.contains_key(output) {
        return Ok(output.to_string());
    }
    let declared = up
        .params
        .get(COMMAND_PARAM)
        .and_then(|c| c.get("outputs"))
        .and_then(|o| o.get(output))
        .and_then(Value::as_str);
    if let Some(file) = declared.filter(|f| up.outputs.contains_key(*f)) {
        return Ok(file.to_string());
    }
    let stem = |name: &str| {
        name.split_once('.')
            .map_or(name.to_string(), |(s, _)| s.to_string())
    };
    let mut same: Vec<&String> = up.outputs.keys().filter(|n| stem(n) == output).collect();
    if same.len() > 1 {
        same.retain(|n| n.ends_with(".safetensors"));
    }
    match same.as_slice() {
        [one] => Ok((*one).clone()),
        _ => Err(StageError::Input {
            slot: up.stage.clone(),
            message: format!(
                "stage `{}` (kind {}) has no output `{output}`; it has: {}",
                up.stage,
                up.kind,
                up.outputs.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        }),
    }
}

/// A parameter as one argument: a string as it is, anything else as JSON.
fn param_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What the placeholders of one run stand for.
pub(super) struct Expansion<'a> {
    pub(super) inputs: &'a Inputs,
    pub(super) linked: &'a Linked,
    pub(super) outputs: &'a BTreeMap<String, PathBuf>,
    pub(super) params: &'a BTreeMap<String, Value>,
    pub(super) project: &'a Path,
    /// Whether `cmd` is a shell script (other `${...}` are left to the shell).
    pub(super) shell: bool,
}

impl Expansion<'_> {
    /// `arg` with its placeholders replaced; the result is one argument whatever the values
    /// hold (quotes, `$()`, newlines), since no shell reads it.
    pub(super) fn expand(&self, arg: &str) -> Result<String, StageError> {
        let pieces = if self.shell {
            parse_script(arg)
        } else {
            parse_arg(arg)
        };
        let pieces = pieces.map_err(StageError::Other)?;
        let mut out = String::new();
        for piece in pieces {
            match piece {
                Piece::Text(t) => out.push_str(&t),
                Piece::Slot(Placeholder::Project) => out.push_str(&self.project.to_string_lossy()),
                Piece::Slot(Placeholder::Param(p)) => {
                    let value = self
                        .params
                        .get(&p)
                        .ok_or_else(|| StageError::bad_param(&p, "named in `cmd` but not given"))?;
                    out.push_str(&param_text(value));
                }
                Piece::Slot(Placeholder::Output(name)) => {
                    let path = self.outputs.get(&name).ok_or_else(|| {
                        StageError::Other(format!("`${{outputs.{name}}}`: no such output"))
                    })?;
                    out.push_str(&path.to_string_lossy());
                }
                Piece::Slot(Placeholder::Input { slot, output }) => {
                    let path = input_path(self.inputs, self.linked, &slot, &output)?;
                    out.push_str(&path.to_string_lossy());
                }
            }
        }
        Ok(out)
    }

    /// The `ASYMFLOW_JOB` document.
    pub(super) fn job_document(
        &self,
        stage: &str,
        device: &str,
        threads: Option<u64>,
        workdir: &Path,
    ) -> Value {
        let inputs: BTreeMap<&String, Value> = self
            .inputs
            .iter()
            .map(|(slot, ups)| {
                let links = self.linked.slots.get(slot);
                let one = |n: usize, up: &InputArtifact| {
                    json!({
                        "stage": up.stage,
                        "kind": up.kind,
                        "binding": up.binding,
                        "outputs": links.and_then(|l| l.get(n)),
                        "metrics": up.metrics,
                    })
                };
                let value = match ups.as_slice() {
                    [up] => one(0, up),
                    many => Value::Array(many.iter().enumerate().map(|(n, u)| one(n, u)).collect()),
                };
                (slot, value)
            })
            .collect();
        json!({
            "stage": stage,
            "params": self.params,
            "inputs": inputs,
            "outputs": self.outputs,
            "seed": self.params.get("seed"),
            "device": device,
            "threads": threads,
            "project": self.project,
            "workdir": workdir,
        })
    }
}

/// The user's parameters: every parameter but the reserved ones.
pub(super) fn user_params(params: &crate::kind::Params) -> BTreeMap<String, Value> {
    params
        .0
        .iter()
        .filter(|(k, _)| k.as_str() != COMMAND_PARAM && k.as_str() != RESOURCES_PARAM)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The argument list of `spec` (`sh -c SCRIPT` for a shell command).
pub(super) fn argv(
    spec: &CommandSpec,
    expansion: &Expansion<'_>,
) -> Result<Vec<String>, StageError> {
    let expanded: Vec<String> = spec
        .cmd
        .iter()
        .map(|a| expansion.expand(a))
        .collect::<Result<_, _>>()?;
    if spec.shell {
        let mut argv = vec!["sh".to_string(), "-c".to_string()];
        argv.extend(expanded);
        return Ok(argv);
    }
    Ok(expanded)
}
