//! Publishing: copies the outputs of publishing kinds (reports) out of the cache into
//! `reports/PIPELINE/STAGE/` after a run. The cache holds the artifacts; the folder is a view,
//! rewritten each time, so it never disagrees with the cache.
//!
//! A folder is never rewritten in place. The new content is written into a staging folder
//! beside it and swapped in with one atomic exchange (`renameat2(RENAME_EXCHANGE)`), under a
//! lock file shared by every process publishing into the same pipeline's folder, so concurrent
//! runs never see each other's half-written folders and never fail on a folder that another
//! one just filled. A failed publish leaves the previous folder as it was; when it failed
//! because an object is corrupt or missing, the result is forgotten so the next run recomputes
//! it.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Component, Path, PathBuf};

use crate::cache::objects::check_relative_path;
use crate::cache::{Cache, ObjectError, RunRecord};

/// Why publishing failed.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// An output could not be read from the cache.
    #[error("publishing {dest}: {source}{}", if *.forgotten { "; the result was forgotten, so the next run recomputes it" } else { "" })]
    Object {
        /// The report folder.
        dest: PathBuf,
        /// The cause.
        source: ObjectError,
        /// Whether the result was forgotten.
        forgotten: bool,
    },
    /// A file-system error.
    #[error("publishing {path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The destination is not a plain folder under the reports folder.
    #[error("refusing to publish into {0}: a report folder must be one plain folder name")]
    UnsafeDest(PathBuf),
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> PublishError + '_ {
    move |source| PublishError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The folder name of an instance's report: its label (`stage` or `stage[axis=value,...]`)
/// made one path part, whatever text the sweep values hold.
pub fn folder_name(label: &str) -> String {
    let name: String = label
        .chars()
        .map(|c| {
            if c == '/' || c == '\\' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    match name.as_str() {
        "" | "." | ".." => format!("_{name}"),
        _ => name,
    }
}

/// Writes `record`'s outputs into `dest` (replacing what was there), verifying each object.
/// Returns the paths written (their final place in `dest`).
pub fn publish(
    cache: &Cache,
    record: &RunRecord,
    dest: &Path,
) -> Result<Vec<PathBuf>, PublishError> {
    let staging = staging_dir(dest)?;
    let mut written = Vec::new();
    let filled = (|| {
        for (name, output) in &record.outputs {
            check_relative_path(name, "the outputs of a result")?;
            let target = staging.path().join(name);
            if output.is_dir {
                cache.objects().materialise_dir(&output.digest, &target)?;
            } else {
                let src = cache.objects().open_verified(&output.digest)?;
                std::fs::copy(&src, &target).map_err(|source| ObjectError::Io {
                    path: target.clone(),
                    source,
                })?;
            }
            written.push(dest.join(name));
        }
        Ok(())
    })();
    if let Err(source) = filled {
        let forgotten = matches!(
            source,
            ObjectError::Corrupt { .. }
                | ObjectError::Missing { .. }
                | ObjectError::BadDigest { .. }
                | ObjectError::UnsafePath { .. }
        ) && cache
            .index()
            .and_then(|mut index| index.forget(&record.key))
            .is_ok();
        return Err(PublishError::Object {
            dest: dest.to_path_buf(),
            source,
            forgotten,
        });
    }
    install_dir(staging, dest)?;
    Ok(written)
}

/// Writes each search's report ([`crate::report::search`]) to `root/search-NAME/`, swapped
/// in whole like a report's folder; returns the folders written.
pub fn publish_searches(
    searches: &[crate::search::SearchState],
    root: &Path,
) -> Result<Vec<std::path::PathBuf>, PublishError> {
    let mut written = Vec::new();
    for state in searches {
        let dest = root.join(folder_name(&format!("search-{}", state.name)));
        let staging = staging_dir(&dest)?;
        crate::report::search::write(state, staging.path()).map_err(|e| PublishError::Io {
            path: dest.clone(),
            source: io::Error::other(e.to_string()),
        })?;
        install_dir(staging, &dest)?;
        written.push(dest);
    }
    Ok(written)
}

/// A fresh folder beside `dest` to fill before [`install_dir`] swaps it in.
pub(crate) fn staging_dir(dest: &Path) -> Result<tempfile::TempDir, PublishError> {
    let parent = checked_parent(dest)?;
    std::fs::create_dir_all(parent).map_err(io_err(parent))?;
    tempfile::Builder::new()
        .prefix(".publishing-")
        .tempdir_in(parent)
        .map_err(io_err(parent))
}

/// Puts the filled `staging` folder at `dest` atomically, under the lock of `dest`'s parent;
/// the previous folder, if any, is deleted afterwards.
pub(crate) fn install_dir(staging: tempfile::TempDir, dest: &Path) -> Result<(), PublishError> {
    let parent = checked_parent(dest)?;
    let _lock = lock_folder(parent)?;
    let staged = staging.keep();
    let result = swap_into_place(&staged, dest);
    // After an exchange `staged` holds the old folder; after a failure, the new one.
    let _ = std::fs::remove_dir_all(&staged);
    result.map_err(io_err(dest))
}

fn swap_into_place(staged: &Path, dest: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(dest) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => std::fs::rename(staged, dest),
        Err(e) => Err(e),
        Ok(meta) if !meta.is_dir() => {
            // A file or a link where the folder belongs: replace it, never follow it.
            std::fs::remove_file(dest)?;
            std::fs::rename(staged, dest)
        }
        Ok(_) => match exchange(staged, dest) {
            Ok(()) => Ok(()),
            // File systems without RENAME_EXCHANGE: move the old folder aside, then rename.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => {
                let aside = staged.with_extension("old");
                std::fs::rename(dest, &aside)?;
                std::fs::rename(staged, dest)?;
                std::fs::remove_dir_all(&aside)
            }
            Err(e) => Err(e),
        },
    }
}

/// Atomically exchanges two paths (Linux `renameat2` with `RENAME_EXCHANGE`).
fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let ca = CString::new(a.as_os_str().as_bytes())?;
    let cb = CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: both are valid NUL-terminated paths; renameat2 reads them and nothing else.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The parent of `dest`, after checking `dest` ends in one plain folder name and climbs nowhere.
fn checked_parent(dest: &Path) -> Result<&Path, PublishError> {
    let plain_end = matches!(dest.components().next_back(), Some(Component::Normal(_)));
    let climbs = dest.components().any(|c| c == Component::ParentDir);
    match dest.parent() {
        Some(parent) if plain_end && !climbs => Ok(parent),
        _ => Err(PublishError::UnsafeDest(dest.to_path_buf())),
    }
}

/// An exclusive `flock` on `folder/.publish.lock`, waited for, released on drop.
fn lock_folder(folder: &Path) -> Result<File, PublishError> {
    let path = folder.join(".publish.lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io_err(&path))?;
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(file);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(PublishError::Io { path, source: err });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::OutputRef;
    use std::collections::BTreeMap;

    fn record(cache: &Cache, content: &[u8]) -> RunRecord {
        let (digest, _) = cache.objects().put_bytes(content).unwrap();
        RunRecord {
            key: "k".repeat(64),
            stage: "report".into(),
            kind: "report".into(),
            pipeline: "p".into(),
            binding: "{}".into(),
            key_json: "{}".into(),
            started: 0.0,
            finished: 0.0,
            duration: 0.0,
            device: "cpu".into(),
            outputs: BTreeMap::from([(
                "table.md".into(),
                OutputRef {
                    digest,
                    is_dir: false,
                },
            )]),
            metrics: BTreeMap::new(),
        }
    }

    #[test]
    fn issue11_concurrent_publishes_never_fail_and_leave_one_whole_folder() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(&dir.path().join("cache"));
        let dest = dir.path().join("reports/p/report");
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let (cache, dest) = (cache.clone(), dest.clone());
                std::thread::spawn(move || {
                    let rec = record(&cache, format!("table {i}").as_bytes());
                    for _ in 0..20 {
                        publish(&cache, &rec, &dest).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let names: Vec<_> = std::fs::read_dir(&dest)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec!["table.md"]);
        let leftovers: Vec<_> = std::fs::read_dir(dest.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "report" && n != ".publish.lock")
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn issue11_corrupt_report_object_keeps_the_old_folder_and_forgets_the_result() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(&dir.path().join("cache"));
        let dest = dir.path().join("reports/p/report");
        let good = record(&cache, b"good table");
        publish(&cache, &good, &dest).unwrap();
        let bad = record(&cache, b"new table");
        let mut index = cache.index().unwrap();
        index
            .record_success(&bad, &[(bad.outputs["table.md"].digest.clone(), 9)])
            .unwrap();
        let path = cache
            .objects()
            .open_verified(&bad.outputs["table.md"].digest)
            .unwrap();
        std::fs::write(path, b"new tablX").unwrap();
        let err = publish(&cache, &bad, &dest).unwrap_err();
        assert!(
            matches!(
                err,
                PublishError::Object {
                    forgotten: true,
                    ..
                }
            ),
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(dest.join("table.md")).unwrap(),
            "good table"
        );
        assert!(index.lookup(&bad.key).unwrap().is_none());
    }

    #[test]
    fn issue11_unsafe_output_names_and_destinations_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(&dir.path().join("cache"));
        let mut rec = record(&cache, b"x");
        let out = rec.outputs.remove("table.md").unwrap();
        rec.outputs.insert("../../escaped".into(), out);
        let dest = dir.path().join("reports/p/report");
        assert!(publish(&cache, &rec, &dest).is_err());
        assert!(!dir.path().join("escaped").exists());
        assert!(!dir.path().join("reports/escaped").exists());
        let rec = record(&cache, b"x");
        let err = publish(&cache, &rec, &dir.path().join("reports/p/..")).unwrap_err();
        assert!(matches!(err, PublishError::UnsafeDest(_)), "{err}");
        assert_eq!(folder_name("eval[name=../../etc]"), "eval[name=.._.._etc]");
    }
}
