//! The batch script and the `sbatch` arguments of one job, rendered as plain text.
//!
//! The options asymflow owns go on the `sbatch` command line (no quoting rules of `#SBATCH`
//! lines to get wrong): `--parsable` for the id, a job name carrying the stage and the key (so
//! `squeue` shows what runs, and a lost lease can still be matched by name), the log under the
//! cache named by job id and appended to across requeues. The profile's options follow.
//!
//! The script records the exit status of the job command in `ID.exit` after it returns, so
//! the engine knows how a job ended without accounting, and it removes the files of an earlier
//! attempt under the same id first (a requeued job starts over).

use crate::exec::executor::Job;

use super::command::{JobCommand, JOB_PLACEHOLDER, RESULT_PLACEHOLDER};
use super::layout::JobDir;
use super::profile::Request;

/// What to submit.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    /// The script's text (`job.sh`).
    pub script: String,
    /// The `sbatch` arguments, the script's path last.
    pub args: Vec<String>,
}

/// Why a job cannot be submitted as it is.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct RenderError(pub String);

/// The job name: `asymflow-STAGE-KEY` (the stage cut to letters, digits, `-`, `_`).
pub fn job_name(job: &Job) -> String {
    let stage: String = job
        .stage
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    format!("asymflow-{stage}-{}", job.key)
}

/// Renders the script and arguments for `job` into `dir`.
pub fn render(
    job: &Job,
    dir: &JobDir,
    request: &Request,
    setup: Option<&str>,
    command: &JobCommand,
) -> Result<Submission, RenderError> {
    let folder = dir.path().to_string_lossy();
    if folder.contains('%') {
        return Err(RenderError(format!(
            "the cache folder {folder} contains `%`, which sbatch reads as a pattern in log \
             names; move the cache (--cache DIR)"
        )));
    }
    let project = std::path::absolute(&job.project_dir).unwrap_or_else(|_| job.project_dir.clone());
    let mut args = vec![
        "--parsable".to_string(),
        format!("--job-name={}", job_name(job)),
        format!("--output={folder}/%j.log"),
        "--open-mode=append".to_string(),
        format!("--chdir={}", project.display()),
    ];
    args.extend(request.to_args());
    args.push(dir.script().to_string_lossy().into_owned());

    let line: Vec<String> = command
        .argv()
        .iter()
        .map(|a| match a.as_str() {
            JOB_PLACEHOLDER => "\"$dir/job.json\"".to_string(),
            RESULT_PLACEHOLDER => "\"$result\"".to_string(),
            other => quote(other),
        })
        .collect();
    let submitted: Vec<String> = std::iter::once("sbatch".to_string())
        .chain(args.iter().map(|a| quote(a)))
        .collect();
    let mut s = String::new();
    s.push_str("#!/bin/bash\n");
    s.push_str(&format!("# asymflow: {} (key {})\n", job.label, job.key));
    s.push_str(&format!("# submitted with: {}\n", submitted.join(" ")));
    s.push_str(&format!("dir={}\n", quote(&folder)));
    s.push_str("result=\"$dir/$SLURM_JOB_ID.result.json\"\n");
    s.push_str("exit_file=\"$dir/$SLURM_JOB_ID.exit\"\n");
    s.push_str("rm -f \"$result\" \"$exit_file\"\n");
    s.push_str(
        "echo \"asymflow: Slurm job $SLURM_JOB_ID (restart ${SLURM_RESTART_COUNT:-0}) on \
         $(hostname), CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}\"\n",
    );
    s.push_str(
        "finish() {\n  printf '%s\\n' \"$1\" > \"$exit_file.tmp\" && mv -f \"$exit_file.tmp\" \
         \"$exit_file\"\n  exit \"$1\"\n}\n",
    );
    if let Some(setup) = setup {
        s.push_str(&format!(
            "{setup} || {{ s=$?; echo \"asymflow: the profile's setup line failed (status \
             $s)\"; finish \"$s\"; }}\n"
        ));
    }
    s.push_str(&line.join(" "));
    s.push('\n');
    s.push_str("finish $?\n");
    Ok(Submission { script: s, args })
}

/// `text` as one shell word.
pub fn quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::exec::executor::Resources;
    use crate::kind::{Device, Params, Resource};

    pub(crate) fn job(key: &str) -> Job {
        Job {
            key: key.into(),
            key_json: "{}".into(),
            label: "teacher[seed=0]".into(),
            pipeline: "p".into(),
            stage: "teacher.v2".into(),
            kind: "train-classifier".into(),
            binding: BTreeMap::new(),
            params: Params::default(),
            inputs: BTreeMap::new(),
            resources: Resources {
                class: Resource::Device,
                device: Device::Cpu,
                threads: 1,
            },
            project_dir: PathBuf::from("/proj"),
            cache_dir: PathBuf::from("/proj/cache"),
            timeout_seconds: None,
        }
    }

    #[test]
    fn the_script_runs_the_command_with_its_files_and_records_the_status() {
        let j = job("abc");
        let dir = JobDir::new(&j.cache_dir, &j.key);
        let request = Request {
            partition: Some("gpu".into()),
            gres: Some("gpu:1".into()),
            ..Request::default()
        };
        let cmd = JobCommand::asymflow_exec(Path::new("/opt/asym flow/asymflow"));
        let sub = render(&j, &dir, &request, Some("module load cuda"), &cmd).unwrap();
        assert_eq!(
            sub.args,
            [
                "--parsable",
                "--job-name=asymflow-teacher_v2-abc",
                "--output=/proj/cache/slurm/abc/%j.log",
                "--open-mode=append",
                "--chdir=/proj",
                "--partition=gpu",
                "--gres=gpu:1",
                "/proj/cache/slurm/abc/job.sh"
            ]
        );
        let s = &sub.script;
        assert!(s.starts_with("#!/bin/bash\n"), "{s}");
        assert!(s.contains("dir=/proj/cache/slurm/abc\n"), "{s}");
        assert!(
            s.contains("'/opt/asym flow/asymflow' exec \"$dir/job.json\" --result \"$result\"\n"),
            "{s}"
        );
        assert!(s.contains("module load cuda || {"), "{s}");
        assert!(s.ends_with("finish $?\n"), "{s}");
    }

    #[test]
    fn a_percent_in_the_cache_path_is_refused() {
        let mut j = job("abc");
        j.cache_dir = PathBuf::from("/tmp/100%/cache");
        let dir = JobDir::new(&j.cache_dir, &j.key);
        let err = render(
            &j,
            &dir,
            &Request::default(),
            None,
            &JobCommand::new(["true"]),
        )
        .unwrap_err();
        assert!(err.0.contains("--cache"), "{err}");
    }

    #[test]
    fn quoting_keeps_one_word() {
        assert_eq!(quote("plain/path-1.0"), "plain/path-1.0");
        assert_eq!(quote("it's here"), "'it'\\''s here'");
        assert_eq!(quote(""), "''");
    }
}
