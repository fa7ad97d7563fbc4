//! The command a Slurm job runs on its compute node.
//!
//! In the engine it is `asymflow exec JOB.json --result RESULT.json` ([`JobCommand::asymflow_exec`]):
//! a fresh process reads the job, its inputs from the shared object store, runs the stage,
//! stores the outputs and writes its [`crate::exec::executor::JobOutcome`] to the result
//! file. Tests run a small script with the same contract instead, so the executor is tested
//! against real `sbatch` without the tensor stages; switching is this one value.

use std::path::Path;

/// Stands for the job file's path in a [`JobCommand`] argument.
pub(crate) const JOB_PLACEHOLDER: &str = "{job}";
/// Stands for the result file's path in a [`JobCommand`] argument.
pub(crate) const RESULT_PLACEHOLDER: &str = "{result}";

/// A command line; arguments equal to [`JOB_PLACEHOLDER`] or [`RESULT_PLACEHOLDER`] are
/// replaced by the paths of that job's files.
#[derive(Debug, Clone, PartialEq)]
pub struct JobCommand {
    argv: Vec<String>,
}

impl JobCommand {
    /// `EXE exec {job} --result {result}`: the engine's own binary (`std::env::current_exe`,
    /// which must be on the shared filesystem too).
    pub fn asymflow_exec(exe: &Path) -> JobCommand {
        JobCommand::new([
            exe.to_string_lossy().into_owned(),
            "exec".into(),
            JOB_PLACEHOLDER.into(),
            "--result".into(),
            RESULT_PLACEHOLDER.into(),
        ])
    }

    /// Any command line following the same contract.
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(argv: I) -> JobCommand {
        JobCommand {
            argv: argv.into_iter().map(Into::into).collect(),
        }
    }

    /// The arguments, placeholders included.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }
}
