//! Running the command: no shell (the argument list goes to `execve` as it is), its own
//! process group, stdout and stderr appended to the stage's log as they come (so `show` and
//! the dashboard follow it live), Ctrl-C honoured.
//!
//! The child gets `SIGKILL` when the thread that started it dies (Linux `PR_SET_PDEATHSIG`),
//! so `kill -9` of the engine or its worker does not leave it computing; its own children
//! (data loader processes) are its business, as they are under any launcher. Nothing is
//! recorded for a command whose engine died: the result is recorded by the engine after the
//! outputs are stored, never before.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use crate::kind::StageError;

/// How to start the command.
pub(super) struct Launch<'a> {
    pub(super) argv: &'a [String],
    pub(super) workdir: &'a Path,
    pub(super) env: BTreeMap<String, String>,
    pub(super) log: &'a Path,
}

/// Appends `line` to the log at `path` (the child appends to the same file).
pub(super) fn log_line(path: &Path, line: &str) {
    tracing::info!("{line}");
    if let Ok(mut file) = std::fs::OpenOptions::new().append(true).open(path) {
        let _ = writeln!(file, "{line}");
    }
}

/// Runs the command to its end, or kills it when `cancelled` says so (then `Interrupted`).
pub(super) fn run(
    launch: &Launch<'_>,
    cancelled: &dyn Fn() -> bool,
) -> Result<ExitStatus, StageError> {
    let log = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(launch.log)
        .map_err(|e| StageError::io(launch.log, e))?;
    let err = log.try_clone().map_err(|e| StageError::io(launch.log, e))?;
    let (program, args) = launch
        .argv
        .split_first()
        .ok_or_else(|| StageError::Other("`cmd` is empty".into()))?;
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(launch.workdir)
        .envs(&launch.env)
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(err))
        .process_group(0);
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = command.spawn().map_err(|e| {
        StageError::Other(format!(
            "cannot start `{program}`: {e}{}",
            if e.kind() == std::io::ErrorKind::NotFound {
                " (not found: give its path, or install it on PATH)"
            } else {
                ""
            }
        ))
    })?;
    loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| StageError::Other(format!("waiting for `{program}`: {e}")))?
        {
            return Ok(status);
        }
        if cancelled() {
            stop(&mut child);
            return Err(StageError::Interrupted);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `SIGTERM` to the command's process group, `SIGKILL` after five seconds.
fn stop(child: &mut std::process::Child) {
    let group = -(child.id() as i32);
    // SAFETY: kill has no memory effects; the group is the child's own (process_group(0)).
    unsafe {
        libc::kill(group, libc::SIGTERM);
    }
    for _ in 0..100 {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: as above.
    unsafe {
        libc::kill(group, libc::SIGKILL);
    }
    let _ = child.wait();
}
