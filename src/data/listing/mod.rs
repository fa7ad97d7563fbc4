//! Real data sets in their published on-disk layouts, one file per layout. Each lister reads
//! the layout's annotation files (or folder structure) and returns a [`Listing`]: every image's
//! id (its path relative to the root, `/`-separated), label, camera where known, and which
//! part of a provided split it belongs to.
//!
//! Listers check that the root and every listed image exist, and stop at the first malformed
//! line with its line number; nothing is skipped silently. Decoding happens later, when a
//! loader reads an image, and an undecodable image is an error naming the file.

mod cars;
mod cub;
pub mod ijbc;
mod image_folder;
mod imagenet;
mod market;
mod mat;
mod places;
mod sop;

pub use cars::cars196;
pub use cub::cub200;
pub use ijbc::ijbc;
pub use image_folder::image_folder;
pub use imagenet::imagenet;
pub use market::market1501;
pub use mat::{read_mat, MatValue};
pub use places::places365;
pub use sop::sop;

use std::path::{Path, PathBuf};

use super::DataError;

/// Which part of a data set's provided split an image belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Part {
    /// No provided split (CUB, Cars, ImageFolder: split by classes).
    Unsplit,
    /// Provided training set (SOP `Ebay_train.txt`, Market `bounding_box_train`, ImageNet
    /// `train/`, Places365 `places365_train_standard.txt`).
    Train,
    /// Provided test set (SOP `Ebay_test.txt`; the validation sets of ImageNet and Places365).
    Test,
    /// Provided query set (Market `query`).
    Query,
    /// Provided gallery (Market `bounding_box_test`, distractors included).
    Gallery,
    /// Images the protocol excludes from evaluation (Market identity -1).
    Junk,
}

/// One image of a real data set.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Path relative to the root, `/`-separated.
    pub id: String,
    /// Class or identity id as the data set numbers it.
    pub label: i64,
    /// Camera id, where the data set records one (Market-1501).
    pub camera: Option<i64>,
    /// Part of the provided split.
    pub part: Part,
}

/// Every image of a data set plus the annotation files that determined the listing.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// Images, in the order of the annotation files (or sorted paths).
    pub entries: Vec<Entry>,
    /// Annotation files read, relative to the root.
    pub annotations: Vec<String>,
}

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
            image_folder::check_link(&real_root, &path)?;
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
