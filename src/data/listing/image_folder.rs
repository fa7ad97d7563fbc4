//! A generic ImageFolder tree, `root/CLASS/**/*.jpg|jpeg|png` (torchvision's layout): classes
//! are the sub-folders of `root` in sorted name order, labelled 0, 1, ...; files with other
//! extensions and files directly under `root` are not images of any class and are ignored, as
//! torchvision does. A class folder without images is an error.

use std::path::Path;

use super::{require_root, Entry, Listing, Part};
use crate::data::DataError;

const HINT: &str = "set `root` to a folder with one sub-folder of images per class";

fn is_image(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .map(|e| matches!(e.to_ascii_lowercase().as_str(), "jpg" | "jpeg" | "png"))
        .unwrap_or(false)
}

fn sorted_dir(dir: &Path) -> Result<Vec<std::fs::DirEntry>, DataError> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| DataError::io(dir, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| DataError::io(dir, e))?;
    entries.sort_by_key(|e| e.file_name());
    Ok(entries)
}

fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) -> Result<(), DataError> {
    for entry in sorted_dir(dir)? {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = format!("{prefix}/{name}");
        if path.is_dir() {
            walk(&path, &rel, out)?;
        } else if is_image(&path) {
            out.push(rel);
        }
    }
    Ok(())
}

/// Lists an ImageFolder tree at `root`.
pub fn image_folder(root: &Path) -> Result<Listing, DataError> {
    require_root("imagefolder", root, HINT)?;
    let mut listing = Listing::default();
    let mut label = 0;
    for entry in sorted_dir(root)? {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        let class = entry.file_name().to_string_lossy().into_owned();
        let mut files = Vec::new();
        walk(&path, &class, &mut files)?;
        if files.is_empty() {
            return Err(DataError::BadFile {
                path,
                message: "class folder holds no .jpg, .jpeg or .png image; remove it or add images"
                    .into(),
            });
        }
        listing.entries.extend(files.into_iter().map(|id| Entry {
            id,
            label,
            camera: None,
            part: Part::Unsplit,
        }));
        label += 1;
    }
    if label == 0 {
        return Err(DataError::BadFile {
            path: root.to_path_buf(),
            message: format!("has no class folders; {HINT}"),
        });
    }
    Ok(listing)
}
