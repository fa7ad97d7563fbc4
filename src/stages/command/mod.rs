//! `command`: the user's own program as a stage, so a new method is a script, not a Rust
//! change. It gets what native kinds get (sweeps, the content-addressed cache, early cut-off,
//! the remote, Slurm, reports), and the pipeline file declares what a native kind declares in
//! code: its command line, the code it runs, its outputs.
//!
//! The contract (docs/command-stages.md has the user's version):
//! - the command runs without a shell (its `cmd` list is the argument list; `shell = true`
//!   runs one string with `sh -c`), in a private working folder inside the stage's scratch
//!   folder, which is where it writes its outputs under their declared file names;
//! - inputs are read-only links to verified objects ([`job_file`]); placeholders and the
//!   `ASYMFLOW_JOB` file say where everything is;
//! - the key holds the command as declared and the parameters (both parameters of the
//!   instance), the input digests, and in the fingerprint the content of the `code` files
//!   ([`code`]), the program's content hash ([`program`]) and the values of the `env` names;
//! - stdout and stderr go to the stage's log ([`process`]); a non-zero exit fails the stage;
//! - exactly the declared outputs, `metrics.json` flat numbers, `loss.json` in the loss format
//!   ([`collect`]); the project folder unchanged ([`guard`]).

mod code;
mod collect;
mod guard;
mod job_file;
mod process;
mod program;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::kind::command::{
    CommandResources, CommandSpec, COMMAND_KIND, COMMAND_PARAM, RESOURCES_PARAM,
};
use crate::kind::{
    Artifact, Device, FingerprintEnv, InputDecl, OutputDecl, ParamDecl, Params, Resource, Run,
    Stage, StageContext, StageError, LOG_OUTPUT,
};

/// Bumped when what the kind does with the same declaration changes.
pub const IMPL_VERSION: u32 = 1;

/// What every command stage may write: the files its `outputs` declare (checked exactly by the
/// kind itself, per stage); among them, files in a native format native kinds read: a loss
/// curve the reports draw, embeddings `evaluate` scores.
const OUTPUTS: &[OutputDecl] = &[
    OutputDecl::optional(
        super::outputs::EMBEDDINGS.file,
        Artifact::Embeddings,
        "embeddings in the native format (`embed`'s), which `evaluate` reads",
    ),
    OutputDecl::optional(
        "loss.json",
        Artifact::Losses,
        "the `loss` output: per-epoch losses, drawn by reports",
    ),
    OutputDecl::optional(
        "*",
        Artifact::Data,
        "the files the stage's `outputs` declare, exactly those",
    ),
];

/// See the module docs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CommandKind;

impl CommandKind {
    fn spec(params: &Params) -> Result<CommandSpec, StageError> {
        let value = params.get(COMMAND_PARAM).cloned().unwrap_or(Value::Null);
        serde_json::from_value(value).map_err(|e| {
            StageError::Other(format!("the `command` parameter is not a command ({e})"))
        })
    }

    fn resources(params: &Params) -> CommandResources {
        params
            .get(RESOURCES_PARAM)
            .cloned()
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default()
    }
}

impl Stage for CommandKind {
    fn kind(&self) -> &'static str {
        COMMAND_KIND
    }

    fn impl_version(&self) -> u32 {
        IMPL_VERSION
    }

    fn summary(&self) -> &'static str {
        "Runs your own program (`cmd`), keyed by its `code`, with declared `outputs`; see docs/command-stages.md."
    }

    fn params(&self) -> &'static [ParamDecl] {
        &[]
    }

    fn inputs(&self) -> &'static [InputDecl] {
        &[]
    }

    fn outputs(&self) -> &'static [OutputDecl] {
        OUTPUTS
    }

    fn keyed_param(&self, name: &str) -> bool {
        name != RESOURCES_PARAM
    }

    fn resource(&self, params: &Params) -> Resource {
        match Self::resources(params).device.as_deref() {
            Some("gpu") => Resource::Device,
            _ => Resource::Cpu,
        }
    }

    fn fingerprint(
        &self,
        params: &Params,
        env: &FingerprintEnv<'_>,
    ) -> Result<Option<Value>, StageError> {
        let spec = Self::spec(params)?;
        let code = code::fingerprint(env.project_dir, &spec.code, env.hashes)?;
        let program = program::identity(&spec, env.project_dir, env.hashes)?;
        let vars: BTreeMap<&String, Option<String>> = spec
            .env
            .iter()
            .map(|name| (name, std::env::var(name).ok()))
            .collect();
        Ok(Some(
            json!({ "code": code, "program": program, "env": vars }),
        ))
    }
}

/// The folders of one run inside the stage's scratch folder.
struct Folders {
    work: PathBuf,
    inputs: PathBuf,
    tmp: PathBuf,
    job: PathBuf,
    log: PathBuf,
    cache: PathBuf,
}

impl Folders {
    fn new(out_dir: &Path) -> Result<Folders, StageError> {
        let scratch = out_dir
            .parent()
            .ok_or_else(|| StageError::Other("the output folder has no scratch folder".into()))?;
        let folders = Folders {
            work: scratch.join("work"),
            inputs: scratch.join("inputs"),
            tmp: scratch.join("tmp"),
            job: scratch.join("job.json"),
            log: out_dir.join(LOG_OUTPUT),
            // SCRATCH is CACHE/tmp/KEY-xxxx: the cache is two folders up.
            cache: scratch
                .parent()
                .and_then(Path::parent)
                .unwrap_or(scratch)
                .to_path_buf(),
        };
        for dir in [&folders.work, &folders.inputs, &folders.tmp] {
            std::fs::create_dir_all(dir).map_err(|e| StageError::io(dir, e))?;
        }
        Ok(folders)
    }
}

/// The device the command computes on, as it sees it, and its `CUDA_VISIBLE_DEVICES`: a GPU
/// slot's GPU alone (`cuda:0` to the command), or none.
fn device_for_child(device: Device) -> (String, String) {
    match device {
        Device::Cpu => ("cpu".into(), String::new()),
        Device::Cuda(i) => {
            let physical = std::env::var("CUDA_VISIBLE_DEVICES")
                .ok()
                .and_then(|list| {
                    list.split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .nth(i)
                        .map(String::from)
                })
                .unwrap_or_else(|| i.to_string());
            ("cuda:0".into(), physical)
        }
    }
}

impl Run for CommandKind {
    fn run(&self, ctx: &mut StageContext<'_>) -> Result<(), StageError> {
        let spec = Self::spec(ctx.params())?;
        let resources = Self::resources(ctx.params());
        let folders = Folders::new(ctx.out_dir())?;
        let linked = job_file::link_inputs(ctx.inputs(), &folders.inputs)?;
        let outputs: BTreeMap<String, PathBuf> = spec
            .outputs
            .iter()
            .map(|(name, file)| (name.clone(), folders.work.join(file)))
            .collect();
        let params = job_file::user_params(ctx.params());
        let project = ctx.project_dir().to_path_buf();
        let expansion = job_file::Expansion {
            inputs: ctx.inputs(),
            linked: &linked,
            outputs: &outputs,
            params: &params,
            project: &project,
            shell: spec.shell,
        };
        let argv = job_file::argv(&spec, &expansion)?;
        let (device, visible) = device_for_child(ctx.device());
        let document =
            expansion.job_document(ctx.stage_name(), &device, resources.threads, &folders.work);
        let text = serde_json::to_string_pretty(&document)
            .map_err(|e| StageError::Other(format!("ASYMFLOW_JOB: {e}")))?;
        std::fs::write(&folders.job, text).map_err(|e| StageError::io(&folders.job, e))?;

        let mut env = BTreeMap::from([
            (
                "ASYMFLOW_JOB".to_string(),
                folders.job.to_string_lossy().into_owned(),
            ),
            (
                "TMPDIR".to_string(),
                folders.tmp.to_string_lossy().into_owned(),
            ),
            ("CUDA_VISIBLE_DEVICES".to_string(), visible),
        ]);
        if let Some(threads) = resources.threads {
            for name in ["OMP_NUM_THREADS", "MKL_NUM_THREADS"] {
                env.insert(name.to_string(), threads.to_string());
            }
        }
        let argv = with_program_resolved(argv, &spec, &project);
        let before = collect::digests(&linked.objects)?;
        let snapshot = guard::Snapshot::take(&project, &folders.cache);
        process::log_line(&folders.log, &format!("$ {}", shown(&argv)));
        if !snapshot.taken() {
            process::log_line(
                &folders.log,
                &format!(
                    "the project folder has more than {} files: writes outside the scratch \
                     folder are not checked",
                    guard::MAX_ENTRIES
                ),
            );
        }
        let launch = process::Launch {
            argv: &argv,
            workdir: &folders.work,
            env,
            log: &folders.log,
        };
        let status = process::run(&launch, &|| ctx.check_cancelled().is_err())?;
        if !status.success() {
            let how = match status.code() {
                Some(code) => format!("exited with status {code}"),
                None => format!("was killed ({status})"),
            };
            return Err(StageError::Other(format!(
                "the command {how}; its output is in the stage log"
            )));
        }
        check_inputs_unchanged(&linked.objects, &before)?;
        let changes = snapshot.changes();
        if !changes.is_empty() {
            return Err(StageError::Other(format!(
                "the command changed the project folder, outside its scratch folder ({}); \
                 nothing recorded: a command writes only its declared outputs, in its working \
                 folder, and temporary files in $TMPDIR",
                changes
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        for (name, value) in collect::outputs(&spec, &folders.work, ctx.out_dir())? {
            ctx.metric(&name, value);
        }
        Ok(())
    }
}

/// `argv` with a relative program path taken from the project folder (the working folder is
/// the scratch folder, where it would not be found).
fn with_program_resolved(mut argv: Vec<String>, spec: &CommandSpec, project: &Path) -> Vec<String> {
    if let Some(first) = argv.first_mut() {
        if !spec.shell && first.contains('/') && !Path::new(first.as_str()).is_absolute() {
            *first = project.join(&*first).to_string_lossy().into_owned();
        }
    }
    argv
}

fn check_inputs_unchanged(objects: &[PathBuf], before: &[String]) -> Result<(), StageError> {
    let after = collect::digests(objects)?;
    match objects
        .iter()
        .zip(before.iter().zip(&after))
        .find(|(_, (b, a))| b != a)
    {
        None => Ok(()),
        Some((path, _)) => Err(StageError::Other(format!(
            "the command changed one of its inputs ({}), which are read-only objects of the \
             cache; nothing recorded. Run `asymflow cache verify` to move the damaged object \
             aside, and have the command write copies in its working folder instead",
            path.display()
        ))),
    }
}

/// `argv` as a shell would need it typed, for the log.
fn shown(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
