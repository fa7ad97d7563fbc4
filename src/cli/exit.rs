//! Exit codes: a script (or a cluster job wrapper) must tell a mistake in the pipeline file,
//! a stage that failed and an interruption apart without parsing messages.
//!
//! | code | meaning |
//! |---:|---|
//! | 0 | success |
//! | 1 | any other error (the cache, a file, an unknown key) |
//! | 2 | bad command line (clap's usage errors) |
//! | 3 | bad pipeline file or override (nothing ran) |
//! | 4 | a stage failed, or `plan` found an instance that cannot run |
//! | 130 | interrupted (Ctrl-C, SIGTERM or SIGHUP) |

use std::process::ExitCode;

/// Any other error.
pub(crate) const ERROR: u8 = 1;
/// A mistake in the pipeline file, a template or a `--set`/`--sweep` override.
pub(crate) const BAD_PIPELINE: u8 = 3;
/// A stage failed (or cannot run).
pub(crate) const STAGE_FAILED: u8 = 4;
/// Ctrl-C (or SIGTERM, SIGHUP) stopped the run.
pub(crate) const INTERRUPTED: u8 = 130;

/// The exit-code table for `--help`.
pub(crate) const HELP: &str =
    "Exit codes: 0 success, 1 other error, 2 bad command line, 3 bad pipeline \
file or override, 4 a stage failed (or `plan` found one that cannot run), 130 interrupted.";

/// The code for an error that reached the top of a command.
pub(crate) fn for_error(error: &anyhow::Error) -> ExitCode {
    if error.chain().any(|e| e.is::<crate::spec::SpecError>()) {
        ExitCode::from(BAD_PIPELINE)
    } else {
        ExitCode::from(ERROR)
    }
}
