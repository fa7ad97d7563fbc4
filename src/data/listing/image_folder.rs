//! A generic ImageFolder tree, `root/CLASS/**/*.jpg|jpeg|png` (torchvision's layout): classes
//! are the sub-folders of `root` in sorted name order, labelled 0, 1, ...; files with other
//! extensions and files directly under `root` are not images of any class and are ignored, as
//! torchvision does. A class folder without images is an error.

use std::path::{Path, PathBuf};

use super::checks::{check_link, require_root};
use super::entry::{Entry, Listing, Part};
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

/// Collects the images under `dir`. `ancestors` holds the real paths of the folders being
/// walked, so a link back to one of them (a loop) is found instead of followed forever; every
/// link must resolve inside `root` (the real root), so no file from elsewhere joins the data set
/// unnoticed.
fn walk(
    root: &Path,
    dir: &Path,
    prefix: &str,
    ancestors: &mut Vec<PathBuf>,
    out: &mut Vec<String>,
) -> Result<(), DataError> {
    for entry in sorted_dir(dir)? {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = format!("{prefix}/{name}");
        let is_link = entry
            .file_type()
            .map_err(|e| DataError::io(&path, e))?
            .is_symlink();
        if is_link {
            check_link(root, &path)?;
        }
        if path.is_dir() {
            let real = std::fs::canonicalize(&path).map_err(|e| DataError::io(&path, e))?;
            if let Some(loop_start) = ancestors.iter().find(|a| **a == real) {
                return Err(DataError::BadFile {
                    path,
                    message: format!(
                        "symbolic link loop: it leads back to {}; remove the link",
                        loop_start.display()
                    ),
                });
            }
            ancestors.push(real);
            walk(root, &path, &rel, ancestors, out)?;
            ancestors.pop();
        } else if is_image(&path) {
            out.push(rel);
        }
    }
    Ok(())
}

/// Lists an ImageFolder tree at `root`.
pub fn image_folder(root: &Path) -> Result<Listing, DataError> {
    require_root("imagefolder", root, HINT)?;
    let real_root = std::fs::canonicalize(root).map_err(|e| DataError::io(root, e))?;
    let mut listing = Listing::default();
    let mut label = 0;
    for entry in sorted_dir(root)? {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        if entry.file_type().is_ok_and(|t| t.is_symlink()) {
            check_link(&real_root, &path)?;
        }
        let class = entry.file_name().to_string_lossy().into_owned();
        let mut files = Vec::new();
        let real = std::fs::canonicalize(&path).map_err(|e| DataError::io(&path, e))?;
        walk(
            &real_root,
            &path,
            &class,
            &mut vec![real_root.clone(), real],
            &mut files,
        )?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("root/a/sub")).unwrap();
        std::fs::write(dir.path().join("root/a/x.png"), b"x").unwrap();
        dir
    }

    #[test]
    fn issue11_symlink_loops_in_an_image_folder_are_errors_not_hangs() {
        let dir = tree();
        let root = dir.path().join("root");
        symlink(root.join("a"), root.join("a/sub/back")).unwrap();
        symlink(&root, root.join("a/sub/up")).unwrap();
        let err = image_folder(&root).unwrap_err().to_string();
        assert!(err.contains("loop"), "{err}");
    }

    #[test]
    fn issue11_links_leaving_the_data_root_are_refused() {
        let dir = tree();
        let root = dir.path().join("root");
        std::fs::write(dir.path().join("secret.png"), b"s").unwrap();
        symlink(dir.path().join("secret.png"), root.join("a/leak.png")).unwrap();
        let err = image_folder(&root).unwrap_err().to_string();
        assert!(err.contains("outside the data set root"), "{err}");
        // A link that stays inside the root is fine.
        std::fs::remove_file(root.join("a/leak.png")).unwrap();
        symlink(root.join("a/x.png"), root.join("a/sub/y.png")).unwrap();
        assert_eq!(image_folder(&root).unwrap().entries.len(), 2);
    }
}
