//! The checks every lister makes before it trusts a layout: the root and each annotation file
//! exist, annotation lines are read with their line numbers and integer fields parsed with the
//! line named, and every listed image exists inside the root (a symbolic link is followed only
//! when it resolves inside it). Shared by the listers, so each stops at the first problem with
//! the same kind of message; nothing is skipped silently.

use std::path::{Path, PathBuf};

use super::entry::Entry;
use crate::data::DataError;

/// `Err(Missing)` unless `root` is a folder.
pub(crate) fn require_root(
    dataset: &'static str,
    root: &Path,
    hint: &str,
) -> Result<(), DataError> {
    if root.is_dir() {
        Ok(())
    } else {
        Err(DataError::Missing {
            dataset,
            path: root.to_path_buf(),
            hint: hint.to_string(),
        })
    }
}

/// `Err(Missing)` unless `path` is a file.
pub(crate) fn require_file(
    dataset: &'static str,
    path: &Path,
    hint: &str,
) -> Result<(), DataError> {
    if path.is_file() {
        Ok(())
    } else {
        Err(DataError::Missing {
            dataset,
            path: path.to_path_buf(),
            hint: hint.to_string(),
        })
    }
}

/// Reads a text annotation file into (1-based line number, line) pairs, blank lines dropped.
pub(crate) fn read_lines(path: &Path) -> Result<Vec<(usize, String)>, DataError> {
    let text = std::fs::read_to_string(path).map_err(|e| DataError::io(path, e))?;
    Ok(text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, l.trim().to_string()))
        .collect())
}

/// Checks that every listed image exists, naming the first that does not.
pub(crate) fn require_images(
    dataset: &'static str,
    root: &Path,
    entries: &[Entry],
    listed_in: &str,
) -> Result<(), DataError> {
    let real_root = std::fs::canonicalize(root).map_err(|e| DataError::io(root, e))?;
    for e in entries {
        let path: PathBuf = root.join(&e.id);
        let climbs = Path::new(&e.id)
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)));
        if climbs {
            return Err(DataError::BadFile {
                path,
                message: format!(
                    "listed in {listed_in} with a path that leaves the data set root; \
                     image paths must be relative, without `..`"
                ),
            });
        }
        if path.is_file() && !std::fs::canonicalize(&path).is_ok_and(|p| p.starts_with(&real_root))
        {
            check_link(&real_root, &path)?;
        }
        if !path.is_file() {
            return Err(DataError::Missing {
                dataset,
                path,
                hint: format!("the image is listed in {listed_in} but missing on disk"),
            });
        }
    }
    Ok(())
}

/// Refuses a symbolic link whose target is missing or lies outside the real `root`.
pub(crate) fn check_link(root: &Path, link: &Path) -> Result<(), DataError> {
    let target = std::fs::canonicalize(link).map_err(|e| DataError::BadFile {
        path: link.to_path_buf(),
        message: format!("symbolic link cannot be followed ({e}); remove it or fix its target"),
    })?;
    if target.starts_with(root) {
        return Ok(());
    }
    Err(DataError::BadFile {
        path: link.to_path_buf(),
        message: format!(
            "symbolic link leads outside the data set root, to {}; copy the files into the root, \
             or point `root` at the folder that holds them",
            target.display()
        ),
    })
}

/// Parses an integer field of an annotation line.
pub(crate) fn int_field(
    path: &Path,
    line: usize,
    what: &str,
    text: &str,
) -> Result<i64, DataError> {
    text.parse().map_err(|_| {
        DataError::malformed(path, line, format!("{what} `{text}` is not a whole number"))
    })
}
