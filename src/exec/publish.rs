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
//!
//! Only what asymflow published is ever replaced. Every published folder holds a marker file,
//! [`MARKER`] (`.asymflow-published`: a line saying so, then the pipeline, the instance and the
//! result's key). A destination that is a file, a link, or a non-empty folder without the
//! marker is the user's: publishing refuses with [`PublishError::NotOurs`] and changes nothing.
//! Reports are never published inside the cache folder ([`check_outside_cache`]).
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
    #[error("publishing {dest}: output `{name}`: {source}{}", if *.forgotten { "; the result was forgotten, so the next run recomputes it" } else { "" })]
    Object {
        /// The report folder.
        dest: PathBuf,
        /// The output.
        name: String,
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
    /// Something asymflow did not publish is where a folder would go.
    #[error(
        "refusing to replace {dest}: it is {what}, and asymflow replaces only the folders it \
         published (they hold `{MARKER}`); nothing was changed\n  hint: publish elsewhere \
         (another `--reports DIR`, another export folder, or rename the report stage) or move \
         {dest} away. If an asymflow older than this marker published it, check that it holds \
         nothing of yours, delete it (`rm -r {dest}`) and run again"
    )]
    NotOurs {
        /// The destination.
        dest: PathBuf,
        /// What is there (`a file`, `a folder asymflow did not publish`).
        what: &'static str,
    },
    /// A reports folder inside the cache folder.
    #[error(
        "refusing to publish into {root}: it is inside the cache folder {cache}, which only \
         asymflow's index and objects may hold\n  hint: pick a `--reports` folder outside the \
         cache (the default is reports/PIPELINE/ in the project)"
    )]
    InsideCache {
        /// The reports folder.
        root: PathBuf,
        /// The cache folder.
        cache: PathBuf,
    },
}

/// The marker file in every folder asymflow publishes; see the module docs.
pub const MARKER: &str = ".asymflow-published";

/// The first line of every [`MARKER`]: what tells asymflow's marker from a stray file.
const MARKER_HEAD: &str = "asymflow published this folder";

/// What a [`MARKER`] names: the published instance and, for a result, its key.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Origin<'a> {
    /// The pipeline's name.
    pub pipeline: &'a str,
    /// The instance's label (`report`, `eval[seed=1]`).
    pub instance: &'a str,
    /// What its content is.
    pub source: Source<'a>,
}

/// What a published folder holds: one result's outputs, or something rendered from several.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// The outputs of the result with this key.
    Result(&'a str),
    /// A report rendered by `asymflow report` or `run --keep-going` from whatever results of
    /// its inputs the cache held (no result of its own).
    Rendered,
    /// A search's report, rendered from its trials' results.
    Search,
}

impl Origin<'_> {
    /// The marker file's text.
    fn marker_text(&self) -> String {
        let source = match self.source {
            Source::Result(key) => format!("key: {key}"),
            Source::Rendered => "rendered: from the cached results of its inputs (by \
                                 `asymflow report` or `run --keep-going`); no result of its own"
                .to_string(),
            Source::Search => "rendered: from the search's trials recorded in the cache; no \
                               result of its own"
                .to_string(),
        };
        format!(
            "{MARKER_HEAD}; it replaces the folder on the next publish. Delete this file to keep \
             the folder: asymflow then refuses to replace it.\npipeline: {}\ninstance: {}\n{source}\n",
            self.pipeline, self.instance,
        )
    }
}

/// Whether `dest` may be replaced: a plain folder name ([`PublishError::UnsafeDest`]
/// otherwise) where there is nothing, an empty folder, or a folder holding asymflow's
/// [`MARKER`]. Links are never followed.
pub(crate) fn check_replaceable(dest: &Path) -> Result<(), PublishError> {
    checked_parent(dest)?;
    let not_ours = |what| {
        Err(PublishError::NotOurs {
            dest: dest.to_path_buf(),
            what,
        })
    };
    let meta = match std::fs::symlink_metadata(dest) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err(dest)(e)),
        Ok(meta) => meta,
    };
    if meta.file_type().is_symlink() {
        return not_ours("a link");
    }
    if !meta.is_dir() {
        return not_ours("a file");
    }
    if has_marker(dest) {
        return Ok(());
    }
    let empty = std::fs::read_dir(dest)
        .map_err(io_err(dest))?
        .next()
        .is_none();
    if empty {
        Ok(())
    } else {
        not_ours("a folder asymflow did not publish (no marker in it)")
    }
}

/// Whether `dir` holds a regular-file [`MARKER`] that begins as asymflow writes it.
pub(crate) fn has_marker(dir: &Path) -> bool {
    use std::io::Read;
    let path = dir.join(MARKER);
    let regular = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file());
    let mut head = [0u8; MARKER_HEAD.len()];
    regular
        && File::open(&path)
            .and_then(|mut f| f.read_exact(&mut head))
            .is_ok_and(|()| head[..] == *MARKER_HEAD.as_bytes())
}

/// Refuses a reports folder that is the cache folder or inside it (links resolved), where a
/// publish could replace the index or objects.
pub(crate) fn check_outside_cache(root: &Path, cache: &Path) -> Result<(), PublishError> {
    if resolved(root).starts_with(resolved(cache)) {
        return Err(PublishError::InsideCache {
            root: root.to_path_buf(),
            cache: cache.to_path_buf(),
        });
    }
    Ok(())
}

/// `path` made absolute with links resolved as far as it exists (a `..` applies to the
/// resolved folder, as the kernel would), the rest appended.
fn resolved(path: &Path) -> PathBuf {
    let absolute = std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for part in absolute.components() {
        match part {
            Component::ParentDir => {
                out = std::fs::canonicalize(&out).unwrap_or(out);
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    for existing in out.ancestors() {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let rest = out.strip_prefix(existing).unwrap_or(Path::new(""));
            return real.join(rest);
        }
    }
    out
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

/// Writes `record`'s outputs into `dest` (replacing a folder asymflow published there, never
/// anything else), verifying each object and that each is the file or folder the record says.
/// Returns the paths written (their final place in `dest`).
pub fn publish(
    cache: &Cache,
    record: &RunRecord,
    dest: &Path,
    instance: &str,
) -> Result<Vec<PathBuf>, PublishError> {
    check_replaceable(dest)?;
    let staging = staging_dir(dest)?;
    let mut written = Vec::new();
    let mut current = String::new();
    let filled = (|| {
        for (name, output) in &record.outputs {
            current.clone_from(name);
            check_relative_path(name, "the outputs of a result")?;
            let target = staging.path().join(name);
            if output.is_dir {
                cache.objects().materialise_dir(&output.digest, &target)?;
            } else {
                let src = cache.objects().open_file(&output.digest)?;
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
                | ObjectError::NotAManifest { .. }
                | ObjectError::ManifestAsFile { .. }
        ) && cache
            .index()
            .and_then(|mut index| index.forget(&record.key))
            .is_ok();
        return Err(PublishError::Object {
            dest: dest.to_path_buf(),
            name: current,
            source,
            forgotten,
        });
    }
    let origin = Origin {
        pipeline: &record.pipeline,
        instance,
        source: Source::Result(&record.key),
    };
    install_dir(staging, dest, &origin)?;
    Ok(written)
}

/// Writes each search's report ([`crate::report::search`]) of `pipeline` to
/// `root/search-NAME/`, swapped in whole and marked like a report's folder; returns the
/// folders written.
pub(crate) fn publish_searches(
    pipeline: &str,
    searches: &[crate::search::SearchState],
    root: &Path,
) -> Result<Vec<std::path::PathBuf>, PublishError> {
    let mut written = Vec::new();
    for state in searches {
        let name = format!("search-{}", state.name);
        let dest = root.join(folder_name(&name));
        let staging = staging_dir(&dest)?;
        crate::report::search::write(state, staging.path()).map_err(|e| PublishError::Io {
            path: dest.clone(),
            source: io::Error::other(e.to_string()),
        })?;
        let origin = Origin {
            pipeline,
            instance: &name,
            source: Source::Search,
        };
        install_dir(staging, &dest, &origin)?;
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

/// Marks the filled `staging` folder as published from `origin` and puts it at `dest`
/// atomically, under the lock of `dest`'s parent; the previous folder, if any, is deleted
/// afterwards. Under the lock, `dest` is checked again ([`check_replaceable`]): nothing that
/// appeared there since is replaced.
pub(crate) fn install_dir(
    staging: tempfile::TempDir,
    dest: &Path,
    origin: &Origin<'_>,
) -> Result<(), PublishError> {
    let marker = staging.path().join(MARKER);
    std::fs::write(&marker, origin.marker_text()).map_err(io_err(&marker))?;
    let parent = checked_parent(dest)?;
    let _lock = lock_folder(parent)?;
    check_replaceable(dest)?;
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
        Ok(meta) if !meta.is_dir() => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "a file or link is where the folder belongs",
        )),
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
pub(crate) fn lock_folder(folder: &Path) -> Result<File, PublishError> {
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
                        publish(&cache, &rec, &dest, "report").unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let mut names: Vec<_> = std::fs::read_dir(&dest)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, vec![MARKER, "table.md"]);
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
        publish(&cache, &good, &dest, "report").unwrap();
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
        let err = publish(&cache, &bad, &dest, "report").unwrap_err();
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
        assert!(publish(&cache, &rec, &dest, "report").is_err());
        assert!(!dir.path().join("escaped").exists());
        assert!(!dir.path().join("reports/escaped").exists());
        let rec = record(&cache, b"x");
        let err = publish(&cache, &rec, &dir.path().join("reports/p/.."), "report").unwrap_err();
        assert!(matches!(err, PublishError::UnsafeDest(_)), "{err}");
        assert_eq!(folder_name("eval[name=../../etc]"), "eval[name=.._.._etc]");
    }

    #[test]
    fn issue28_only_marked_or_empty_folders_are_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(&dir.path().join("cache"));
        let rec = record(&cache, b"table");
        let dest = dir.path().join("paper/notes");
        std::fs::create_dir_all(&dest).unwrap();
        std::fs::write(dest.join("chapter1.tex"), "mine").unwrap();
        let err = publish(&cache, &rec, &dest, "notes").unwrap_err();
        assert!(matches!(err, PublishError::NotOurs { .. }), "{err}");
        assert_eq!(
            std::fs::read_to_string(dest.join("chapter1.tex")).unwrap(),
            "mine"
        );
        // A stray file named like the marker is not asymflow's marker.
        std::fs::write(dest.join(MARKER), "").unwrap();
        assert!(publish(&cache, &rec, &dest, "notes").is_err());
        // An empty folder is taken; what asymflow published is replaced.
        let fresh = dir.path().join("paper/fresh");
        std::fs::create_dir_all(&fresh).unwrap();
        publish(&cache, &rec, &fresh, "fresh").unwrap();
        publish(&cache, &rec, &fresh, "fresh").unwrap();
        let marker = std::fs::read_to_string(fresh.join(MARKER)).unwrap();
        assert!(marker.contains(&format!("key: {}", rec.key)), "{marker}");
        // Links are refused, never followed.
        let link = dir.path().join("paper/link");
        std::os::unix::fs::symlink(&fresh, &link).unwrap();
        let err = publish(&cache, &rec, &link, "link").unwrap_err();
        assert!(err.to_string().contains("it is a link"), "{err}");
    }

    #[test]
    fn issue34_markers_say_what_their_folder_holds() {
        let origin = |source| Origin {
            pipeline: "p",
            instance: "search-lr",
            source,
        };
        let search = origin(Source::Search).marker_text();
        assert!(search.starts_with(MARKER_HEAD), "{search}");
        assert!(
            search.ends_with(
                "rendered: from the search's trials recorded in the cache; no result of its own\n"
            ),
            "{search}"
        );
        assert!(!search.contains("partial"), "{search}");
        let rendered = origin(Source::Rendered).marker_text();
        assert!(
            rendered.contains("cached results of its inputs"),
            "{rendered}"
        );
        let key = "ab".repeat(32);
        let result = origin(Source::Result(&key)).marker_text();
        assert!(result.ends_with(&format!("key: {key}\n")), "{result}");
    }

    #[test]
    fn issue28_reports_inside_the_cache_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        std::fs::create_dir_all(&cache).unwrap();
        for inside in ["cache", "cache/r", "cache/x/../y", "other/../cache/r"] {
            let root = dir.path().join(inside);
            assert!(check_outside_cache(&root, &cache).is_err(), "{inside}");
        }
        for outside in ["reports", "cache2", "cache/../reports"] {
            let root = dir.path().join(outside);
            assert!(check_outside_cache(&root, &cache).is_ok(), "{outside}");
        }
    }

    #[test]
    fn issue28_a_flipped_is_dir_flag_is_named_and_forgets_the_result() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(&dir.path().join("cache"));
        let dest = dir.path().join("reports/p/report");
        // A file recorded as a folder.
        let mut rec = record(&cache, b"table");
        rec.outputs.get_mut("table.md").unwrap().is_dir = true;
        let err = publish(&cache, &rec, &dest, "report").unwrap_err();
        assert!(
            matches!(
                &err,
                PublishError::Object {
                    source: ObjectError::NotAManifest { .. },
                    name,
                    ..
                } if name == "table.md"
            ),
            "{err}"
        );
        // A folder recorded as a file.
        let folder = dir.path().join("plots");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("a.svg"), "<svg/>").unwrap();
        let (digest, _, _) = cache.objects().put_dir(&folder).unwrap();
        let mut rec = record(&cache, b"table");
        rec.outputs.insert(
            "plots".into(),
            OutputRef {
                digest,
                is_dir: false,
            },
        );
        let err = publish(&cache, &rec, &dest, "report").unwrap_err();
        assert!(
            matches!(
                &err,
                PublishError::Object {
                    source: ObjectError::ManifestAsFile { .. },
                    name,
                    ..
                } if name == "plots"
            ),
            "{err}"
        );
        assert!(!dest.exists(), "nothing is published");
        // The flags as recorded publish the folder as a folder.
        rec.outputs.get_mut("plots").unwrap().is_dir = true;
        publish(&cache, &rec, &dest, "report").unwrap();
        assert!(dest.join("plots/a.svg").is_file());
    }
}
