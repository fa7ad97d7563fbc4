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
use super::layout::{ArrayDir, JobDir};
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

/// The job name: the instance's label cut to what reads well in `squeue` (letters, digits,
/// `.`, `=`, `-`, the rest as `_`; at most 48 characters), then `-asymflow-` and the first 16
/// digits of the key: `train_seed=0-asymflow-0123456789abcdef`. `squeue`'s default format
/// shows the first 8 characters of a name, so the stage comes first.
pub(crate) fn job_name(job: &Job) -> String {
    format!(
        "{}-asymflow-{}",
        name_part(&job.label, 48),
        job.key.get(..16).unwrap_or(&job.key)
    )
}

/// `text` as a Slurm name: letters, digits, `.`, `=`, `-`; every run of other characters one
/// `_`; no `_` at either end; at most `max` characters.
pub(crate) fn name_part(text: &str, max: usize) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || ".=-".contains(c) {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let cut: String = out.trim_matches('_').chars().take(max).collect();
    let cut = cut.trim_end_matches('_');
    if cut.is_empty() {
        "stage".to_string()
    } else {
        cut.to_string()
    }
}

/// What one `sbatch` call submits.
#[derive(Debug, Clone, Copy)]
pub enum Batch<'a> {
    /// One job, its files in its key's folder.
    Single(&'a Job, &'a JobDir),
    /// A job array: element `i` runs `jobs[i]`, whose folder the array folder links as `i`;
    /// at most `throttle` elements run at once (`--array=0-N%K`).
    Array {
        /// The jobs, in element order (one stage, one project).
        jobs: &'a [&'a Job],
        /// The array's folder.
        dir: &'a ArrayDir,
        /// `%K`.
        throttle: Option<usize>,
    },
}

/// The job array's name: the stage, cut as [`job_name`] cuts a label, then `-asymflow-` and
/// the array folder's hash.
pub(crate) fn array_name(stage: &str, dir: &ArrayDir) -> String {
    format!("{}-asymflow-{}", name_part(stage, 48), dir.hash())
}

/// Renders the script and arguments of `batch`.
pub fn render(
    batch: Batch<'_>,
    request: &Request,
    setup: Option<&str>,
    command: &JobCommand,
) -> Result<Submission, RenderError> {
    let (first, folder, script) = match batch {
        Batch::Single(job, dir) => (job, dir.path().to_path_buf(), dir.script()),
        Batch::Array { jobs, dir, .. } => {
            let first = jobs
                .first()
                .ok_or_else(|| RenderError("an empty job array".into()))?;
            (*first, dir.path().to_path_buf(), dir.script())
        }
    };
    let folder = folder.to_string_lossy().into_owned();
    if folder.contains('%') {
        return Err(RenderError(format!(
            "the cache folder {folder} contains `%`, which sbatch reads as a pattern in log \
             names; move the cache (--cache DIR)"
        )));
    }
    let args = sbatch_args(batch, first, &folder, &script, request);
    let mut s = header(batch, first, &args);
    s.push_str(&body(batch, &folder, setup, command));
    Ok(Submission { script: s, args })
}

/// The `sbatch` arguments: asymflow's options (the id, the name, the log, the project folder,
/// the array), then the profile's, then the script's path.
fn sbatch_args(
    batch: Batch<'_>,
    first: &Job,
    folder: &str,
    script: &std::path::Path,
    request: &Request,
) -> Vec<String> {
    let project =
        std::path::absolute(&first.project_dir).unwrap_or_else(|_| first.project_dir.clone());
    let (name, output) = match batch {
        Batch::Single(job, _) => (job_name(job), format!("{folder}/%j.log")),
        Batch::Array { dir, .. } => (
            array_name(&first.stage, dir),
            format!("{folder}/%a/%A_%a.log"),
        ),
    };
    let mut args = vec![
        "--parsable".to_string(),
        format!("--job-name={name}"),
        format!("--output={output}"),
        "--open-mode=append".to_string(),
        format!("--chdir={}", project.display()),
    ];
    if let Batch::Array { jobs, throttle, .. } = batch {
        let mut spec = format!("--array=0-{}", jobs.len() - 1);
        if let Some(k) = throttle {
            spec.push_str(&format!("%{k}"));
        }
        args.push(spec);
    }
    args.extend(request.to_args());
    args.push(script.to_string_lossy().into_owned());
    args
}

/// The script's first lines: the shebang, then comments saying what runs (the job, or each
/// element of the array) and the `sbatch` command that submitted it.
fn header(batch: Batch<'_>, first: &Job, args: &[String]) -> String {
    let submitted: Vec<String> = std::iter::once("sbatch".to_string())
        .chain(args.iter().map(|a| quote(a)))
        .collect();
    let mut s = String::new();
    s.push_str("#!/bin/bash\n");
    match batch {
        Batch::Single(job, _) => {
            s.push_str(&comment(&format!(
                "asymflow: {} (key {})",
                job.label, job.key
            )));
        }
        Batch::Array { jobs, .. } => {
            s.push_str(&comment(&format!(
                "asymflow: a job array of {} instances of stage {}",
                jobs.len(),
                first.stage
            )));
            for (i, job) in jobs.iter().enumerate() {
                s.push_str(&comment(&format!("  {i}: {} (key {})", job.label, job.key)));
            }
        }
    }
    s.push_str(&comment(&format!(
        "submitted with: {}",
        submitted.join(" ")
    )));
    s
}

/// The script's commands: the job's folder and id, the removal of an earlier attempt's files,
/// the profile's setup line, the job command, and the recording of its exit status.
fn body(batch: Batch<'_>, folder: &str, setup: Option<&str>, command: &JobCommand) -> String {
    let line: Vec<String> = command
        .argv()
        .iter()
        .map(|a| match a.as_str() {
            JOB_PLACEHOLDER => "\"$dir/job.json\"".to_string(),
            RESULT_PLACEHOLDER => "\"$result\"".to_string(),
            other => quote(other),
        })
        .collect();
    let mut s = String::new();
    match batch {
        Batch::Single(..) => {
            s.push_str(&format!("dir={}\n", quote(folder)));
            s.push_str("id=\"$SLURM_JOB_ID\"\n");
        }
        Batch::Array { .. } => {
            s.push_str(&format!("dir={}/\"$SLURM_ARRAY_TASK_ID\"\n", quote(folder)));
            s.push_str("id=\"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\"\n");
        }
    }
    s.push_str("result=\"$dir/$id.result.json\"\n");
    s.push_str("exit_file=\"$dir/$id.exit\"\n");
    s.push_str("rm -f \"$result\" \"$exit_file\"\n");
    s.push_str(
        "echo \"asymflow: Slurm job $id (restart ${SLURM_RESTART_COUNT:-0}) on \
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
    s
}

/// `text` as one comment line of the script: every character that could end the line or
/// confuse a terminal (newlines, carriage returns, other control characters) is written as a
/// visible escape (`\n`, `\u{1b}`), so a label from a pipeline file can never become a
/// command. The rest of the script quotes every value it holds with [`quote`].
pub fn comment(text: &str) -> String {
    let mut line = String::from("# ");
    for c in text.chars() {
        if c.is_control() || c == '\u{2028}' || c == '\u{2029}' {
            line.extend(c.escape_default());
        } else {
            line.push(c);
        }
    }
    line.push('\n');
    line
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
        let sub = render(
            Batch::Single(&j, &dir),
            &request,
            Some("module load cuda"),
            &cmd,
        )
        .unwrap();
        assert_eq!(
            sub.args,
            [
                "--parsable",
                "--job-name=teacher_seed=0-asymflow-abc",
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
            Batch::Single(&j, &dir),
            &Request::default(),
            None,
            &JobCommand::new(["true"]),
        )
        .unwrap_err();
        assert!(err.0.contains("--cache"), "{err}");
    }

    #[test]
    fn a_label_with_a_newline_stays_in_its_comment() {
        let mut j = job("abc");
        j.label = "t[tag=a\ntouch /tmp/x #,b=`id`$(id)\r\u{1b}]".into();
        let dir = JobDir::new(&j.cache_dir, &j.key);
        let sub = render(
            Batch::Single(&j, &dir),
            &Request::default(),
            None,
            &JobCommand::new(["true"]),
        )
        .unwrap();
        let first: Vec<&str> = sub.script.lines().skip(1).take(2).collect();
        assert_eq!(
            first[0],
            "# asymflow: t[tag=a\\ntouch /tmp/x #,b=`id`$(id)\\r\\u{1b}] (key abc)"
        );
        assert!(
            first[1].starts_with("# submitted with: sbatch"),
            "{}",
            sub.script
        );
        for line in sub.script.lines().filter(|l| l.contains("touch")) {
            assert!(line.starts_with("# "), "{line}");
        }
        assert_eq!(
            name_part("t[tag=a\ntouch /tmp/x #]", 48),
            "t_tag=a_touch_tmp_x"
        );
        assert_eq!(name_part("[[]]", 48), "stage");
    }

    #[test]
    fn an_array_runs_each_element_from_its_own_folder_with_a_throttle() {
        let (a, mut b) = (job("k0"), job("k1"));
        b.label = "teacher[seed=1]".into();
        let dir = ArrayDir::new(&a.cache_dir, &["k0", "k1"]);
        let jobs = [&a, &b];
        let batch = Batch::Array {
            jobs: &jobs,
            dir: &dir,
            throttle: Some(4),
        };
        let sub = render(batch, &Request::default(), None, &JobCommand::new(["true"])).unwrap();
        let folder = dir.path().display().to_string();
        assert_eq!(
            sub.args,
            [
                "--parsable".to_string(),
                format!("--job-name=teacher.v2-asymflow-{}", dir.hash()),
                format!("--output={folder}/%a/%A_%a.log"),
                "--open-mode=append".into(),
                "--chdir=/proj".into(),
                "--array=0-1%4".into(),
                format!("{folder}/job.sh"),
            ]
        );
        let s = &sub.script;
        assert!(s.contains("#   1: teacher[seed=1] (key k1)\n"), "{s}");
        assert!(
            s.contains(&format!("dir={folder}/\"$SLURM_ARRAY_TASK_ID\"\n")),
            "{s}"
        );
        assert!(
            s.contains("id=\"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\"\n"),
            "{s}"
        );
        assert!(s.contains("result=\"$dir/$id.result.json\"\n"), "{s}");
    }

    #[test]
    fn quoting_keeps_one_word() {
        assert_eq!(quote("plain/path-1.0"), "plain/path-1.0");
        assert_eq!(quote("it's here"), "'it'\\''s here'");
        assert_eq!(quote(""), "''");
    }
}
