//! Running Slurm's command-line tools: `sbatch`, `squeue`, `scontrol`, `sacct`, `scancel`.
//!
//! The tools are the only interface every cluster offers (slurmrestd is rarely enabled), and
//! they are what users type, so their errors can be shown as they are. Each call is one
//! process; polling batches every followed job into one `squeue` call, asks `scontrol` about a
//! job only once it has ended or left `squeue`'s view (for its exit code and restart count),
//! and `sacct` only about jobs slurmctld has forgotten.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::state::{
    parse_sacct, parse_sbatch, parse_scontrol, parse_squeue, unknown_job, Sighting, SACCT_FORMAT,
    SQUEUE_FORMAT,
};

/// A tool that could not be run, or that failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{tool}: {message}")]
pub(crate) struct ToolError {
    /// The tool.
    pub tool: String,
    /// Its error output, or why it did not start.
    pub message: String,
}

/// Where the tools are.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Tools {
    /// Their folder; `None` finds them on `PATH`.
    pub bin_dir: Option<PathBuf>,
}

struct Ran {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Tools {
    fn run(&self, tool: &str, args: &[String]) -> Result<Ran, ToolError> {
        let program = match &self.bin_dir {
            Some(dir) => dir.join(tool),
            None => PathBuf::from(tool),
        };
        let out = Command::new(&program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| ToolError {
                tool: tool.to_string(),
                message: if e.kind() == std::io::ErrorKind::NotFound {
                    format!(
                        "not found ({}); run on a Slurm login node, or set \
                         executor.slurm.bin_dir to the folder holding the Slurm tools",
                        program.display()
                    )
                } else {
                    e.to_string()
                },
            })?;
        Ok(Ran {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }

    /// `sbatch ARGS`; the new job's id.
    pub fn sbatch(&self, args: &[String]) -> Result<String, ToolError> {
        let ran = self.run("sbatch", args)?;
        let err = |message: String| ToolError {
            tool: "sbatch".into(),
            message,
        };
        if !ran.ok {
            return Err(err(if ran.stderr.is_empty() {
                "failed without a message".into()
            } else {
                ran.stderr
            }));
        }
        parse_sbatch(&ran.stdout)
            .ok_or_else(|| err(format!("printed no job id: {:?}", ran.stdout.trim())))
    }

    /// `squeue` for `ids` (`1234`, or `1234_7` for an array element): the jobs slurmctld
    /// still holds, in any state. Elements are asked for by their array (one id for all of
    /// them), each listed on its own line (`-r`).
    pub fn squeue(&self, ids: &[String]) -> Result<BTreeMap<String, Sighting>, ToolError> {
        if ids.is_empty() {
            return Ok(BTreeMap::new());
        }
        let mut bases: Vec<&str> = ids
            .iter()
            .map(|id| id.split('_').next().unwrap_or(id))
            .collect();
        bases.dedup();
        bases.sort_unstable();
        bases.dedup();
        let args = [
            "-h".to_string(),
            "-r".into(),
            "-t".into(),
            "all".into(),
            "-j".into(),
            bases.join(","),
            "-o".into(),
            SQUEUE_FORMAT.into(),
        ];
        let ran = self.run("squeue", &args)?;
        if ran.ok {
            Ok(parse_squeue(&ran.stdout))
        } else if unknown_job(&ran.stderr) {
            Ok(BTreeMap::new())
        } else {
            Err(ToolError {
                tool: "squeue".into(),
                message: ran.stderr,
            })
        }
    }

    /// The ids of this user's jobs named `name` that are still queued or running (`squeue`
    /// lists only active jobs by default, and array elements one by one with `-r`).
    pub(crate) fn active_ids(&self, name: &str) -> Result<Vec<String>, ToolError> {
        let args = [
            "-h".to_string(),
            "-r".into(),
            "--me".into(),
            "-n".into(),
            name.into(),
            "-o".into(),
            "%i".into(),
        ];
        let ran = self.run("squeue", &args)?;
        if !ran.ok {
            return Err(ToolError {
                tool: "squeue".into(),
                message: ran.stderr,
            });
        }
        Ok(ran.stdout.split_whitespace().map(str::to_string).collect())
    }

    /// [`Tools::active_ids`] with the folder each writes its log to (`scontrol` gives each
    /// one's `StdOut`).
    pub(crate) fn active_named(&self, name: &str) -> Result<Vec<(String, PathBuf)>, ToolError> {
        let ids = self.active_ids(name)?;
        let mut jobs = Vec::new();
        for id in &ids {
            let args = ["show".to_string(), "job".into(), "-o".into(), id.clone()];
            let shown = self.run("scontrol", &args)?;
            let stdout = shown
                .stdout
                .split_whitespace()
                .find_map(|word| word.strip_prefix("StdOut="));
            if let Some(folder) = stdout.and_then(|path| std::path::Path::new(path).parent()) {
                jobs.push((id.clone(), folder.to_path_buf()));
            }
        }
        Ok(jobs)
    }

    /// `scontrol show job -o ID`; `None` when slurmctld does not know it any more.
    pub fn scontrol(&self, id: &str) -> Result<Option<Sighting>, ToolError> {
        let args = ["show".to_string(), "job".into(), "-o".into(), id.into()];
        let ran = self.run("scontrol", &args)?;
        if ran.ok {
            Ok(parse_scontrol(&ran.stdout).map(|(_, s)| s))
        } else if unknown_job(&ran.stderr) {
            Ok(None)
        } else {
            Err(ToolError {
                tool: "scontrol".into(),
                message: ran.stderr,
            })
        }
    }

    /// `sacct` for `ids`; `None` when the cluster keeps no accounting (or has no `sacct`).
    pub fn sacct(&self, ids: &[String]) -> Option<BTreeMap<String, Sighting>> {
        let args = [
            "-n".to_string(),
            "-P".into(),
            "-X".into(),
            "-j".into(),
            ids.join(","),
            "-o".into(),
            SACCT_FORMAT.into(),
        ];
        let ran = self.run("sacct", &args).ok()?;
        ran.ok.then(|| parse_sacct(&ran.stdout))
    }

    /// `scancel IDS`.
    pub fn scancel(&self, ids: &[String]) -> Result<(), ToolError> {
        if ids.is_empty() {
            return Ok(());
        }
        let ran = self.run("scancel", ids)?;
        if ran.ok {
            Ok(())
        } else {
            Err(ToolError {
                tool: "scancel".into(),
                message: ran.stderr,
            })
        }
    }
}
