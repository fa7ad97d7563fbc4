//! The program a command stage runs (`cmd[0]`, or `sh` with `shell = true`): where it is, and
//! its identity in the key.
//!
//! The identity is the blake3 hash of the resolved executable's content (links followed, so a
//! virtual environment's `python` is the interpreter it points to), not its `--version` line:
//! - hashing reads a file and is remembered by size and modification time in the cache index,
//!   so a plan costs a `stat`; `--version` starts a process on every plan;
//! - `cmd[0]` may be the user's own program, for which `--version` means anything (or starts
//!   the training);
//! - a content hash changes with any rebuild or upgrade of the interpreter, a version line
//!   only when the maintainers bump it (two Python builds both say `Python 3.12.3`).
//!
//! What neither covers: the libraries the interpreter imports (PyTorch, NumPy) are not the
//! interpreter's file. List the ones that matter through `code` (a vendored library) or pin
//! them in the environment; the docs say so.

use std::path::{Path, PathBuf};

use crate::kind::command::CommandSpec;
use crate::kind::StageError;

/// The program `spec` starts, as declared (`${project}` expanded): `sh` for a shell command.
pub(super) fn declared(spec: &CommandSpec, project: &Path) -> String {
    if spec.shell {
        return "sh".into();
    }
    let first = spec.cmd.first().map(String::as_str).unwrap_or_default();
    first.replace("${project}", &project.to_string_lossy())
}

/// Where `program` is: a path with a `/` is taken as it is (relative to the project folder),
/// a bare name is looked up on `PATH`.
pub(super) fn resolve(program: &str, project: &Path) -> Result<PathBuf, StageError> {
    if program.contains('/') {
        let path = project.join(program);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(StageError::Other(format!(
                "program `{program}` (cmd[0]) does not exist: {} is not a file",
                path.display()
            )))
        };
    }
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path_var)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
        .ok_or_else(|| {
            StageError::Other(format!(
                "program `{program}` (cmd[0]) is not on PATH; install it, or give its path \
                 (`${{project}}/tools/{program}`, `/usr/bin/{program}`)"
            ))
        })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The identity of the program `spec` starts: `{"name": as declared, "hash": content hash}`,
/// or `None` when `cmd[0]` is an input's or an output's path (the input's digest is already
/// keyed).
pub(super) fn identity(
    spec: &CommandSpec,
    project: &Path,
    hashes: &dyn crate::kind::FileHasher,
) -> Result<Option<serde_json::Value>, StageError> {
    let program = declared(spec, project);
    if program.contains("${") {
        return Ok(None);
    }
    let path = resolve(&program, project)?;
    let real = std::fs::canonicalize(&path).map_err(|e| StageError::io(&path, e))?;
    let hash = hashes
        .hash_file(&real)
        .map_err(|e| StageError::io(&real, e))?;
    let name = if spec.shell {
        "sh".to_string()
    } else {
        spec.cmd.first().cloned().unwrap_or_default()
    };
    Ok(Some(serde_json::json!({ "name": name, "hash": hash })))
}
