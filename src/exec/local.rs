//! Runs one stage instance in this process: inputs verified and handed over, outputs moved into
//! the object store. Recording the result in the index is the scheduler's job, after this
//! returns, in one transaction.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use crate::cache::{Cache, ObjectError, OutputRef, RunRecord};
use crate::kind::{InputArtifact, Inputs, Params, Registry, StageContext, StageError};

/// Everything needed to run one instance, detached from the plan so it can move to a worker.
#[derive(Debug, Clone)]
pub struct Job {
    /// The instance's index in the plan.
    pub index: usize,
    /// `stage[binding]`, for messages.
    pub label: String,
    /// The stage's name.
    pub stage: String,
    /// Its kind.
    pub kind: String,
    /// The pipeline's name.
    pub pipeline: String,
    /// The binding, as JSON.
    pub binding: String,
    /// Resolved parameters.
    pub params: Params,
    /// The key (hex) and its canonical JSON.
    pub key: String,
    /// The canonical key JSON.
    pub key_json: String,
    /// Slot -> upstream instances with their recorded results.
    pub inputs: BTreeMap<String, Vec<(InputArtifact, RunRecord)>>,
    /// The device to run on.
    pub device: tch::Device,
}

/// Why a job did not produce a result.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// An input object was corrupt or missing: its producer must run again.
    #[error("input from {producer_stage} is unusable: {source}")]
    BadInput {
        /// The producing instance's key.
        producer_key: String,
        /// Its stage.
        producer_stage: String,
        /// What was wrong.
        source: ObjectError,
    },
    /// The stage failed.
    #[error(transparent)]
    Stage(#[from] StageError),
    /// Storing the outputs failed.
    #[error("storing outputs: {0}")]
    Store(#[from] ObjectError),
    /// The stage panicked (a bug in the stage, reported instead of aborting the run).
    #[error("stage panicked: {0}")]
    Panic(String),
    /// Scratch space could not be made.
    #[error("scratch folder in {dir}: {source}")]
    Scratch {
        /// The folder.
        dir: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// Runs `job`, returning the record to store.
pub fn execute(
    job: &Job,
    registry: &Registry,
    cache: &Cache,
    project_dir: &Path,
    cancel: &AtomicBool,
    progress: Option<indicatif::ProgressBar>,
) -> Result<RunRecord, JobError> {
    let stage = registry
        .get(&job.kind)
        .ok_or_else(|| StageError::Other(format!("unknown kind {}", job.kind)))?;
    let tmp = cache.tmp_dir();
    std::fs::create_dir_all(&tmp).map_err(|source| JobError::Scratch {
        dir: tmp.display().to_string(),
        source,
    })?;
    let scratch = tempfile::Builder::new()
        .prefix(&format!("{}-", crate::cache::short_key(&job.key)))
        .tempdir_in(&tmp)
        .map_err(|source| JobError::Scratch {
            dir: tmp.display().to_string(),
            source,
        })?;
    let out_dir = scratch.path().join("out");
    let in_dir = scratch.path().join("in");
    std::fs::create_dir_all(&out_dir).map_err(|source| JobError::Scratch {
        dir: out_dir.display().to_string(),
        source,
    })?;

    let mut inputs: Inputs = BTreeMap::new();
    for (slot, ups) in &job.inputs {
        let mut artifacts = Vec::with_capacity(ups.len());
        for (n, (artifact, record)) in ups.iter().enumerate() {
            let mut artifact = artifact.clone();
            for (name, output) in &record.outputs {
                let bad = |source| JobError::BadInput {
                    producer_key: record.key.clone(),
                    producer_stage: artifact.stage.clone(),
                    source,
                };
                let path = if output.is_dir {
                    let dest = in_dir.join(format!("{slot}-{n}")).join(name);
                    cache
                        .objects()
                        .materialise_dir(&output.digest, &dest)
                        .map_err(bad)?;
                    dest
                } else {
                    cache.objects().open_verified(&output.digest).map_err(bad)?
                };
                artifact.outputs.insert(name.clone(), path);
            }
            artifacts.push(artifact);
        }
        inputs.insert(slot.clone(), artifacts);
    }

    let started = crate::cache::store::now();
    let clock = std::time::Instant::now();
    let metrics = {
        let mut ctx = StageContext::new(
            &job.stage,
            &job.params,
            &inputs,
            out_dir.clone(),
            project_dir,
            job.device,
            cancel,
            progress,
        );
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| stage.run(&mut ctx)));
        match result {
            Ok(Ok(())) => ctx.finish(),
            Ok(Err(e)) => return Err(e.into()),
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "unknown panic".into());
                return Err(JobError::Panic(message));
            }
        }
    };
    if !metrics.is_empty() {
        let path = out_dir.join("metrics.json");
        let text = serde_json::to_string_pretty(&metrics).expect("metrics serialise");
        std::fs::write(&path, text).map_err(|e| StageError::io(path, e))?;
    }

    let mut outputs = BTreeMap::new();
    let mut sizes = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&out_dir)
        .map_err(|e| StageError::io(&out_dir, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| StageError::io(&out_dir, e))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if path.is_dir() {
            let (digest, size, _) = cache.objects().put_dir(&path)?;
            sizes.push((digest.clone(), size));
            outputs.insert(
                name,
                OutputRef {
                    digest,
                    is_dir: true,
                },
            );
        } else {
            let (digest, size) = cache.objects().put_file(&path)?;
            sizes.push((digest.clone(), size));
            outputs.insert(
                name,
                OutputRef {
                    digest,
                    is_dir: false,
                },
            );
        }
    }
    let finished = crate::cache::store::now();
    Ok(RunRecord {
        key: job.key.clone(),
        stage: job.stage.clone(),
        kind: job.kind.clone(),
        pipeline: job.pipeline.clone(),
        binding: job.binding.clone(),
        key_json: job.key_json.clone(),
        started,
        finished,
        duration: clock.elapsed().as_secs_f64(),
        device: device_name(job.device),
        outputs,
        metrics,
    })
}

/// `cpu` or `cuda:N`.
pub fn device_name(device: tch::Device) -> String {
    match device {
        tch::Device::Cuda(i) => format!("cuda:{i}"),
        tch::Device::Mps => "mps".into(),
        _ => "cpu".into(),
    }
}
