//! Where a Slurm job's files live: one folder per key under the cache, `CACHE/slurm/KEY/`.
//!
//! ```text
//! job.json            the Job, as `asymflow exec` reads it on the compute node
//! job.sh              the batch script (its first lines record the sbatch command)
//! ID.log              the job's stdout and stderr (`--output`, appended over requeues)
//! ID.result.json      the JobOutcome the job command wrote (`--result`)
//! ID.exit             the command's exit status, written by the script after it returns
//! ```
//!
//! A job array ([`ArrayDir`]) has its own folder, `CACHE/slurm/arrays/HASH/`, holding the one
//! batch script of all its elements and, per element index, a link `INDEX -> ../../KEY` to
//! the key's folder: element `INDEX` finds its `job.json` there, and its log
//! (`--output=.../%a/%A_%a.log`), result and exit status land in the key's folder under the
//! element's id (`ARRAYID_INDEX`), exactly where a plain job's would.
//!
//! Files of one attempt are named by its Slurm job id, so a retry never reads an older
//! attempt's result, and an engine restarted with a job id from a lease reads exactly that
//! job's. The folder is inside the cache (it goes wherever the cache goes, on the shared
//! filesystem the compute nodes see), and `show` finds the logs of a key through
//! [`job_logs`]. Nothing here is an index record: the engine records results itself.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::exec::executor::JobOutcome;

/// How many lines of a log a failure shows.
pub(crate) const LOG_TAIL_LINES: usize = 20;

/// The files of one key's Slurm jobs.
#[derive(Debug, Clone, PartialEq)]
pub struct JobDir {
    dir: PathBuf,
}

/// What a result file held.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ResultFile {
    /// A readable outcome.
    Outcome(Box<JobOutcome>),
    /// A file that is not a JobOutcome (what is wrong with it).
    Unreadable(String),
}

impl JobDir {
    /// The folder for `key` in the cache at `cache_dir` (made absolute: a compute node's
    /// working directory is not the engine's).
    pub fn new(cache_dir: &Path, key: &str) -> JobDir {
        let cache = std::path::absolute(cache_dir).unwrap_or_else(|_| cache_dir.to_path_buf());
        JobDir {
            dir: cache.join("slurm").join(key),
        }
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// `job.json`.
    pub fn job(&self) -> PathBuf {
        self.dir.join("job.json")
    }

    /// `job.sh`.
    pub fn script(&self) -> PathBuf {
        self.dir.join("job.sh")
    }

    /// `ID.log`.
    pub fn log(&self, slurm_id: &str) -> PathBuf {
        self.dir.join(format!("{slurm_id}.log"))
    }

    /// `ID.result.json`.
    pub fn result(&self, slurm_id: &str) -> PathBuf {
        self.dir.join(format!("{slurm_id}.result.json"))
    }

    /// `ID.exit`.
    pub fn exit(&self, slurm_id: &str) -> PathBuf {
        self.dir.join(format!("{slurm_id}.exit"))
    }

    /// The result file of job `slurm_id`, if it wrote one.
    pub(crate) fn read_result(&self, slurm_id: &str) -> Option<ResultFile> {
        let path = self.result(slurm_id);
        let text = std::fs::read_to_string(&path).ok()?;
        Some(match serde_json::from_str::<JobOutcome>(&text) {
            Ok(outcome) => ResultFile::Outcome(Box::new(outcome)),
            Err(e) => ResultFile::Unreadable(format!("{}: {e}", path.display())),
        })
    }

    /// The exit status the script recorded, if it got that far.
    pub(crate) fn read_exit(&self, slurm_id: &str) -> Option<i32> {
        std::fs::read_to_string(self.exit(slurm_id))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// The last [`LOG_TAIL_LINES`] lines of job `slurm_id`'s log.
    pub fn log_tail(&self, slurm_id: &str) -> Option<String> {
        tail(&self.log(slurm_id), LOG_TAIL_LINES)
    }

    /// The last `lines` lines of job `slurm_id`'s log (for a tail to be cut down further).
    pub(crate) fn log_tail_of(&self, slurm_id: &str, lines: usize) -> Option<String> {
        tail(&self.log(slurm_id), lines)
    }

    /// Writes `name` in the folder: a temporary file renamed into place, so a job never reads
    /// half a file.
    pub fn write(&self, path: &Path, contents: &[u8]) -> std::io::Result<()> {
        use std::io::Write;
        std::fs::create_dir_all(&self.dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
        tmp.write_all(contents)?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

/// The folder of one job array: its script, and a link per element to the element's key
/// folder.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayDir {
    dir: PathBuf,
}

impl ArrayDir {
    /// The folder of the array over `keys` (in element order) in the cache at `cache_dir`:
    /// named by a hash of the cache's path and the keys, so the same instances make the same
    /// folder, and the array's job name differs from any other cache's.
    pub fn new(cache_dir: &Path, keys: &[&str]) -> ArrayDir {
        let cache = std::path::absolute(cache_dir).unwrap_or_else(|_| cache_dir.to_path_buf());
        let named = format!("{}\n{}", cache.display(), keys.join(","));
        let hash = blake3::hash(named.as_bytes()).to_hex();
        ArrayDir {
            dir: cache.join("slurm").join("arrays").join(&hash[..16]),
        }
    }

    /// The array folder at `dir`.
    pub fn at(dir: PathBuf) -> ArrayDir {
        ArrayDir { dir }
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The 16 hex digits naming it.
    pub fn hash(&self) -> String {
        self.dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// `job.sh`.
    pub fn script(&self) -> PathBuf {
        self.dir.join("job.sh")
    }

    /// Links element `index` to `key`'s folder (replacing an older link).
    pub fn link(&self, index: usize, key: &str) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let path = self.dir.join(index.to_string());
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        link(&Path::new("..").join("..").join(key), &path)
    }

    /// Writes the script (renamed into place).
    pub(crate) fn write_script(&self, text: &str) -> std::io::Result<()> {
        JobDir {
            dir: self.dir.clone(),
        }
        .write(&self.script(), text.as_bytes())
    }
}

#[cfg(unix)]
fn link(target: &Path, path: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, path)
}

#[cfg(not(unix))]
fn link(_target: &Path, _path: &Path) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "job arrays need symbolic links (set executor.slurm.arrays = false)",
    ))
}

/// The job arrays in the cache at `cache_dir` with an element linked to `key`: each array's
/// folder and the element's index (for an engine that died while `sbatch` ran).
pub(crate) fn arrays_linking(cache_dir: &Path, key: &str) -> Vec<(ArrayDir, usize)> {
    let root = JobDir::new(cache_dir, key).path().with_file_name("arrays");
    let mut found = Vec::new();
    for array in std::fs::read_dir(root).into_iter().flatten().flatten() {
        for element in std::fs::read_dir(array.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let Ok(index) = element.file_name().to_string_lossy().parse::<usize>() else {
                continue;
            };
            let target = std::fs::read_link(element.path()).ok();
            if target.is_some_and(|t| t.file_name().is_some_and(|n| n == key)) {
                found.push((ArrayDir::at(array.path()), index));
            }
        }
    }
    found
}

/// A Slurm job id as files name it: `1234`, or `1234_7` for element 7 of array 1234; its
/// order (array or job id, then element).
pub(crate) fn parse_job_id(id: &str) -> Option<(u64, u64)> {
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    match id.split_once('_') {
        Some((a, t)) if digits(a) && digits(t) => Some((a.parse().ok()?, t.parse().ok()?)),
        None if digits(id) => Some((id.parse().ok()?, 0)),
        _ => None,
    }
}

/// The Slurm logs kept for `key` in the cache at `cache_dir`, oldest job first (for `show`).
pub fn job_logs(cache_dir: &Path, key: &str) -> Vec<PathBuf> {
    let dir = JobDir::new(cache_dir, key);
    let mut logs: Vec<((u64, u64), PathBuf)> = std::fs::read_dir(dir.path())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let id = parse_job_id(name.strip_suffix(".log")?)?;
            Some((id, e.path()))
        })
        .collect();
    logs.sort();
    logs.into_iter().map(|(_, p)| p).collect()
}

/// The label (`stage[axis=value]`) of the job whose files are in `dir`, from its `job.json`
/// (for `status`, which knows a running job only by its lease).
pub(crate) fn job_label(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("job.json")).ok()?;
    let job: crate::exec::executor::Job = serde_json::from_str(&text).ok()?;
    Some(job.label)
}

/// The last `lines` lines of a text file (reading at most its last 64 KiB).
fn tail(path: &Path, lines: usize) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let start = len.saturating_sub(64 * 1024);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    let from = all.len().saturating_sub(lines);
    let tail = all[from..].join("\n");
    (!tail.trim().is_empty()).then_some(tail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::executor::{FailureReason, JobFailure};

    #[test]
    fn files_are_named_by_job_id_and_read_back() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = JobDir::new(tmp.path(), "abc");
        assert!(dir.path().is_absolute());
        assert_eq!(dir.read_result("5"), None);
        let outcome = JobOutcome::Failed(JobFailure {
            reason: FailureReason::Stage,
            message: "bad".into(),
            log_tail: None,
        });
        dir.write(
            &dir.result("5"),
            serde_json::to_string(&outcome).unwrap().as_bytes(),
        )
        .unwrap();
        assert_eq!(
            dir.read_result("5"),
            Some(ResultFile::Outcome(Box::new(outcome)))
        );
        dir.write(&dir.result("6"), b"{not json").unwrap();
        assert!(
            matches!(dir.read_result("6"), Some(ResultFile::Unreadable(m)) if m.contains("6.result.json"))
        );
        dir.write(&dir.exit("5"), b"3\n").unwrap();
        assert_eq!(dir.read_exit("5"), Some(3));
        let log: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        dir.write(&dir.log("5"), log.as_bytes()).unwrap();
        dir.write(&dir.log("12"), b"x\n").unwrap();
        let tail = dir.log_tail("5").unwrap();
        assert!(
            tail.starts_with("line 11\n") && tail.ends_with("line 30"),
            "{tail}"
        );
        dir.write(&dir.log("7_3"), b"x\n").unwrap();
        assert_eq!(
            job_logs(tmp.path(), "abc"),
            [dir.log("5"), dir.log("7_3"), dir.log("12")]
        );
        assert!(job_logs(tmp.path(), "other").is_empty());
        assert_eq!(job_label(dir.path()), None);
        dir.write(&dir.job(), b"{not a job").unwrap();
        assert_eq!(job_label(dir.path()), None);
    }
}
