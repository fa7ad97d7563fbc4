//! The folders under `reports/`: the plain `reports/PIPELINE/` and the variants
//! `reports/PIPELINE+DIGEST/` that runs with overrides publish into (DIGEST names the resolved
//! pipeline, [`crate::spec::digest`], so identical variants share one folder). A variant
//! folder holds [`VARIANT_FILE`], which says which pipeline and overrides it is the reports of,
//! so `asymflow reports` can list them readably.
//!
//! Removing a folder ([`remove`]) deletes only what asymflow published: every entry of the
//! folder must be a published report folder (holding [`super::publish::MARKER`]), asymflow's
//! own lock, variant or staging files; anything else (a file of the user's, a link, a folder
//! without the marker) refuses the whole removal and changes nothing. The removal holds the
//! folder's publish lock, so it never races a publish into it.

use std::io;
use std::path::{Path, PathBuf};

use super::publish::{has_marker, lock_folder, PublishError, MARKER};

/// The file in a variant folder that names its pipeline and overrides.
pub(crate) const VARIANT_FILE: &str = ".asymflow-variant";

/// The first line of [`VARIANT_FILE`].
const VARIANT_HEAD: &str = "asymflow publishes the reports of a variant of a pipeline here";

/// The name of the folder a variant of `pipeline` with resolved digest `digest` publishes to.
pub(crate) fn variant_name(pipeline: &str, digest: &str) -> String {
    format!("{pipeline}+{}", &digest[..digest.len().min(8)])
}

/// Why listing or removing report folders failed.
#[derive(Debug, thiserror::Error)]
pub enum FoldersError {
    /// A file-system error.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// No such folder.
    #[error("no report folder `{name}` in {root}{}", hint(.known))]
    Unknown {
        /// The name asked for.
        name: String,
        /// The reports folder.
        root: PathBuf,
        /// The folders there.
        known: Vec<String>,
    },
    /// The name is not one plain folder name.
    #[error("`{0}` is not the name of a folder in reports/ (give a name as `asymflow reports` lists it)")]
    BadName(String),
    /// The folder holds something asymflow did not publish.
    #[error(
        "refusing to delete {path}: {what} is not something asymflow published (no \
         `{MARKER}` in it); nothing was deleted\n  hint: move what is yours out of it, then \
         run this again"
    )]
    NotOurs {
        /// The folder.
        path: PathBuf,
        /// The entry that is not asymflow's.
        what: String,
    },
    /// Locking the folder failed.
    #[error(transparent)]
    Lock(Box<PublishError>),
}

fn hint(known: &[String]) -> String {
    if known.is_empty() {
        " (it holds none)".to_string()
    } else {
        format!("; the folders there are: {}", known.join(", "))
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> FoldersError + '_ {
    move |source| FoldersError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `dir`'s [`VARIANT_FILE`] (replacing it whole): the pipeline and the overrides, as
/// a user would type them, that publish into it.
pub(crate) fn mark_variant(
    dir: &Path,
    pipeline: &str,
    overrides: &str,
) -> Result<(), FoldersError> {
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let path = dir.join(VARIANT_FILE);
    let text = format!("{VARIANT_HEAD}\npipeline: {pipeline}\noverrides: {overrides}\n");
    let mut staged = tempfile::NamedTempFile::new_in(dir).map_err(io_err(dir))?;
    io::Write::write_all(&mut staged, text.as_bytes()).map_err(io_err(&path))?;
    staged.persist(&path).map_err(|e| io_err(&path)(e.error))?;
    Ok(())
}

/// One folder under `reports/`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Folder {
    /// Its name (`toy`, `toy+1a2b3c4d`).
    pub name: String,
    /// Its path.
    pub path: PathBuf,
    /// The pipeline it holds the reports of.
    pub pipeline: String,
    /// The overrides of a variant as typed (`--set a=1`); `None` for a plain folder.
    pub overrides: Option<String>,
    /// The report folders in it (each holding the marker).
    pub reports: usize,
    /// When a report in it was last published (seconds since the epoch), if any.
    pub published: Option<f64>,
    /// Whether everything in it is asymflow's, so [`remove`] would delete it.
    pub removable: bool,
}

impl Folder {
    /// Whether it is a variant (`PIPELINE+DIGEST`) rather than a pipeline's plain folder.
    pub(crate) fn is_variant(&self) -> bool {
        self.overrides.is_some()
    }
}

/// The folders under `root` (`reports/`), by name; empty when there is no such folder.
pub fn list(root: &Path) -> Result<Vec<Folder>, FoldersError> {
    let entries = match std::fs::read_dir(root) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        other => other.map_err(io_err(root))?,
    };
    let mut folders = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_err(root))?;
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_dir && !name.starts_with('.') {
            folders.push(describe(&entry.path(), name)?);
        }
    }
    folders.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(folders)
}

/// What is in the folder `path`.
fn describe(path: &Path, name: String) -> Result<Folder, FoldersError> {
    let (mut reports, mut published) = (0, None::<f64>);
    for entry in std::fs::read_dir(path).map_err(io_err(path))? {
        let entry = entry.map_err(io_err(path))?;
        if entry.file_type().is_ok_and(|t| t.is_dir()) && has_marker(&entry.path()) {
            reports += 1;
            let at = std::fs::metadata(entry.path().join(MARKER))
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_secs_f64());
            if let Some(at) = at {
                published = Some(published.map_or(at, |p| p.max(at)));
            }
        }
    }
    let variant = read_variant(path);
    let (pipeline, overrides) = match (variant, name.split_once('+')) {
        (Some((pipeline, overrides)), _) => (pipeline, Some(overrides)),
        // Published before variant folders named themselves: the overrides are noted in each
        // report's `overrides.txt`.
        (None, Some((pipeline, _))) => (
            pipeline.to_string(),
            Some(noted_overrides(path).unwrap_or_else(|| "(not recorded)".into())),
        ),
        (None, None) => (name.clone(), None),
    };
    Ok(Folder {
        removable: foreign_entry(path)?.is_none(),
        path: path.to_path_buf(),
        name,
        pipeline,
        overrides,
        reports,
        published,
    })
}

/// The pipeline and overrides a [`VARIANT_FILE`] names.
fn read_variant(dir: &Path) -> Option<(String, String)> {
    let text = std::fs::read_to_string(dir.join(VARIANT_FILE)).ok()?;
    let mut lines = text.lines();
    if lines.next()? != VARIANT_HEAD {
        return None;
    }
    let pipeline = lines.next()?.strip_prefix("pipeline: ")?.to_string();
    let overrides = lines.next()?.strip_prefix("overrides: ")?.to_string();
    Some((pipeline, overrides))
}

/// The overrides noted in any report folder's `overrides.txt` under `dir`.
fn noted_overrides(dir: &Path) -> Option<String> {
    std::fs::read_dir(dir).ok()?.flatten().find_map(|e| {
        std::fs::read_to_string(e.path().join("overrides.txt"))
            .ok()
            .map(|t| t.trim().to_string())
    })
}

/// The first entry of `dir` that asymflow did not put there, described; `None` when all are
/// its own.
fn foreign_entry(dir: &Path) -> Result<Option<String>, FoldersError> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map_err(io_err(dir))?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()
        .map_err(io_err(dir))?;
    names.sort();
    for name in names {
        let path = dir.join(&name);
        let text = name.to_string_lossy();
        let meta = std::fs::symlink_metadata(&path).map_err(io_err(&path))?;
        let ours = if meta.file_type().is_symlink() {
            false
        } else if meta.is_dir() {
            has_marker(&path) || text.starts_with(".publishing-")
        } else {
            text == ".publish.lock" || (text == VARIANT_FILE && read_variant(dir).is_some())
        };
        if !ours {
            let kind = if meta.file_type().is_symlink() {
                "the link"
            } else if meta.is_dir() {
                "the folder"
            } else {
                "the file"
            };
            return Ok(Some(format!("{kind} {}", path.display())));
        }
    }
    Ok(None)
}

/// Deletes the folder `name` under `root`, when everything in it is asymflow's (see the module
/// docs); returns its path.
pub fn remove(root: &Path, name: &str) -> Result<PathBuf, FoldersError> {
    let plain = !name.is_empty()
        && !name.contains('/')
        && name != "."
        && name != ".."
        && !name.starts_with('.');
    if !plain {
        return Err(FoldersError::BadName(name.to_string()));
    }
    let path = root.join(name);
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(FoldersError::NotOurs {
                path: path.clone(),
                what: format!("{} itself (a file or link)", path.display()),
            })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(FoldersError::Unknown {
                name: name.to_string(),
                root: root.to_path_buf(),
                known: list(root)?.into_iter().map(|f| f.name).collect(),
            })
        }
        Err(e) => return Err(io_err(&path)(e)),
    }
    let _lock = lock_folder(&path).map_err(|e| FoldersError::Lock(Box::new(e)))?;
    if let Some(what) = foreign_entry(&path)? {
        return Err(FoldersError::NotOurs { path, what });
    }
    std::fs::remove_dir_all(&path).map_err(io_err(&path))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn published(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(MARKER), "asymflow published this folder; test\n").unwrap();
        std::fs::write(dir.join("table.md"), "| a |\n").unwrap();
    }

    #[test]
    fn issue34_variants_are_listed_with_their_overrides_and_only_ours_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("reports");
        published(&root.join("toy/report"));
        let variant = root.join(variant_name("toy", "0123456789abcdef"));
        published(&variant.join("report"));
        mark_variant(&variant, "toy", "--set epochs=1").unwrap();
        std::fs::write(variant.join(".publish.lock"), "").unwrap();
        let folders = list(&root).unwrap();
        assert_eq!(folders.len(), 2);
        assert_eq!(folders[0].name, "toy");
        assert!(!folders[0].is_variant());
        assert_eq!(folders[1].name, "toy+01234567");
        assert_eq!(folders[1].pipeline, "toy");
        assert_eq!(folders[1].overrides.as_deref(), Some("--set epochs=1"));
        assert_eq!(folders[1].reports, 1);
        assert!(folders[1].removable);

        // A file of the user's in a variant refuses the whole removal.
        std::fs::write(variant.join("notes.txt"), "mine").unwrap();
        let err = remove(&root, "toy+01234567").unwrap_err();
        assert!(matches!(err, FoldersError::NotOurs { .. }), "{err}");
        assert!(err.to_string().contains("notes.txt"), "{err}");
        assert!(variant.join("report/table.md").is_file());
        // So does a folder without the marker, and a link.
        std::fs::remove_file(variant.join("notes.txt")).unwrap();
        std::fs::create_dir_all(variant.join("mine")).unwrap();
        std::fs::write(variant.join("mine/x"), "mine").unwrap();
        assert!(remove(&root, "toy+01234567").is_err());
        std::fs::remove_dir_all(variant.join("mine")).unwrap();
        std::os::unix::fs::symlink(dir.path(), variant.join("link")).unwrap();
        assert!(remove(&root, "toy+01234567").is_err());
        std::fs::remove_file(variant.join("link")).unwrap();

        assert_eq!(remove(&root, "toy+01234567").unwrap(), variant);
        assert!(!variant.exists());
        assert!(root.join("toy/report/table.md").is_file());
        for bad in ["", "..", "../x", ".hidden"] {
            assert!(matches!(remove(&root, bad), Err(FoldersError::BadName(_))));
        }
        let err = remove(&root, "nope").unwrap_err();
        assert!(err.to_string().contains("toy"), "{err}");
    }
}
