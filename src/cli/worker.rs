//! `asymflow worker` and `asymflow exec JOB.json`: the engine has no tensor kinds, so both hand
//! over to the worker program (`asymflow-worker`, beside this binary), replacing this process.

use std::os::unix::process::CommandExt;
use std::path::Path;

use anyhow::Context;

use crate::exec::local::worker_program;

/// Becomes the worker program with `args`.
pub(crate) fn hand_over(args: &[&std::ffi::OsStr]) -> anyhow::Result<std::process::ExitCode> {
    let program = worker_program()?;
    let error = std::process::Command::new(&program).args(args).exec();
    Err(error).with_context(|| format!("starting {}", program.display()))
}

/// `asymflow exec JOB --result FILE`.
pub fn exec(job: &Path, result: &Path) -> anyhow::Result<std::process::ExitCode> {
    hand_over(&[
        "exec".as_ref(),
        job.as_os_str(),
        "--result".as_ref(),
        result.as_os_str(),
    ])
}
