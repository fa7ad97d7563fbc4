//! Places365-Standard as published: the file lists of `filelist_places365-standard.tar` at the
//! root (`categories_places365.txt`: `/a/airfield 0` per class; `places365_train_standard.txt`:
//! `/a/airfield/00000001.jpg 0` per training image; `places365_val.txt`:
//! `Places365_val_00000001.jpg 165` per validation image) and the images as the image archives
//! unpack: `data_256/` and `val_256/` (the 256 x 256 release), or `data_large/` and `val_large/`
//! (the high-resolution one) when the small ones are absent.
//!
//! Class ids are the categories file's (0..364). A training line whose label is not the id of
//! the category its path lies in is an error: the lists and the categories disagree.

use std::collections::BTreeMap;
use std::path::Path;

use super::checks::{int_field, read_lines, require_file, require_images, require_root};
use super::entry::{Entry, Listing, Part};
use crate::data::DataError;

const HINT: &str = "set `root` to the Places365 folder holding categories_places365.txt, \
                    places365_train_standard.txt, places365_val.txt and the images \
                    (data_256/ and val_256/, or data_large/ and val_large/)";

/// The categories file.
pub(crate) const CATEGORIES: &str = "categories_places365.txt";
/// The training list.
pub(crate) const TRAIN_LIST: &str = "places365_train_standard.txt";
/// The validation list.
pub(crate) const VAL_LIST: &str = "places365_val.txt";

/// Lists Places365-Standard at `root`: the training list as [`Part::Train`], the validation
/// list as [`Part::Test`].
pub fn places365(root: &Path) -> Result<Listing, DataError> {
    require_root("places365", root, HINT)?;
    let categories = categories(root)?;
    let (train_dir, val_dir) = image_folders(root)?;
    let mut listing = Listing::default();
    let path = root.join(TRAIN_LIST);
    require_file("places365", &path, HINT)?;
    for (n, line) in read_lines(&path)? {
        let (rel, label) = path_and_label(&path, n, &line, &categories)?;
        let category = rel.rsplit_once('/').map_or("", |(dir, _)| dir);
        if !rel.starts_with('/') || categories[&label] != category {
            return Err(DataError::malformed(
                &path,
                n,
                format!(
                    "`{rel}` is not in the folder of class {label} (`{}`); expected \
                     `/<category>/<file> <label>` with the label of {CATEGORIES}",
                    categories[&label]
                ),
            ));
        }
        listing
            .entries
            .push(entry(format!("{train_dir}{rel}"), label, Part::Train));
    }
    let path = root.join(VAL_LIST);
    require_file("places365", &path, HINT)?;
    for (n, line) in read_lines(&path)? {
        let (rel, label) = path_and_label(&path, n, &line, &categories)?;
        if rel.contains('/') {
            return Err(DataError::malformed(
                &path,
                n,
                format!("expected a file name without folders, found `{rel}`"),
            ));
        }
        listing
            .entries
            .push(entry(format!("{val_dir}/{rel}"), label, Part::Test));
    }
    listing.annotations = vec![CATEGORIES.into(), TRAIN_LIST.into(), VAL_LIST.into()];
    require_images(
        "places365",
        root,
        &listing.entries,
        "the Places365 file lists",
    )?;
    Ok(listing)
}

fn entry(id: String, label: i64, part: Part) -> Entry {
    Entry {
        id,
        label,
        camera: None,
        part,
    }
}

/// `categories_places365.txt`: id -> category folder (`/a/airfield`), ids 0..n-1 each once.
fn categories(root: &Path) -> Result<BTreeMap<i64, String>, DataError> {
    let path = root.join(CATEGORIES);
    require_file("places365", &path, HINT)?;
    let mut categories = BTreeMap::new();
    for (n, line) in read_lines(&path)? {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [name, id] = fields[..] else {
            return Err(DataError::malformed(
                &path,
                n,
                format!("expected `/<letter>/<category> <id>`, found `{line}`"),
            ));
        };
        let id = int_field(&path, n, "id", id)?;
        if id != categories.len() as i64 || !name.starts_with('/') {
            return Err(DataError::malformed(
                &path,
                n,
                format!(
                    "expected `/<letter>/<category> {}` (ids counted from 0 in file order), found `{line}`",
                    categories.len()
                ),
            ));
        }
        categories.insert(id, name.to_string());
    }
    if categories.is_empty() {
        return Err(DataError::BadFile {
            path,
            message: "lists no category".into(),
        });
    }
    Ok(categories)
}

/// `<path> <label>`, the label one of the categories.
fn path_and_label(
    path: &Path,
    n: usize,
    line: &str,
    categories: &BTreeMap<i64, String>,
) -> Result<(String, i64), DataError> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let [rel, label] = fields[..] else {
        return Err(DataError::malformed(
            path,
            n,
            format!("expected `<image path> <label>`, found `{line}`"),
        ));
    };
    let label = int_field(path, n, "label", label)?;
    if !categories.contains_key(&label) {
        return Err(DataError::malformed(
            path,
            n,
            format!(
                "label {label} is not a class of {CATEGORIES} (0..{})",
                categories.len() - 1
            ),
        ));
    }
    Ok((rel.to_string(), label))
}

/// The training and validation image folders: the 256 x 256 release, else the large one.
fn image_folders(root: &Path) -> Result<(&'static str, &'static str), DataError> {
    for (train, val) in [("data_256", "val_256"), ("data_large", "val_large")] {
        if root.join(train).is_dir() {
            require_root("places365", &root.join(val), HINT)?;
            return Ok((train, val));
        }
    }
    Err(DataError::Missing {
        dataset: "places365",
        path: root.join("data_256"),
        hint: HINT.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(train: &str, val: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(CATEGORIES), "/a/airfield 0\n/b/bar/indoor 1\n").unwrap();
        for rel in [
            "data_256/a/airfield/00000001.jpg",
            "data_256/b/bar/indoor/00000001.jpg",
        ] {
            std::fs::create_dir_all(root.join(rel).parent().unwrap()).unwrap();
            std::fs::write(root.join(rel), b"x").unwrap();
        }
        std::fs::create_dir_all(root.join("val_256")).unwrap();
        std::fs::write(root.join("val_256/Places365_val_00000001.jpg"), b"x").unwrap();
        std::fs::write(root.join(TRAIN_LIST), train).unwrap();
        std::fs::write(root.join(VAL_LIST), val).unwrap();
        dir
    }

    const TRAIN: &str = "/a/airfield/00000001.jpg 0\n/b/bar/indoor/00000001.jpg 1\n";

    #[test]
    fn the_lists_give_train_and_val_with_the_categories_ids() {
        let dir = layout(TRAIN, "Places365_val_00000001.jpg 1\n");
        let listing = places365(dir.path()).unwrap();
        let got: Vec<(&str, i64, Part)> = listing
            .entries
            .iter()
            .map(|e| (e.id.as_str(), e.label, e.part))
            .collect();
        assert_eq!(
            got,
            [
                ("data_256/a/airfield/00000001.jpg", 0, Part::Train),
                ("data_256/b/bar/indoor/00000001.jpg", 1, Part::Train),
                ("val_256/Places365_val_00000001.jpg", 1, Part::Test),
            ]
        );
    }

    #[test]
    fn malformed_lines_name_the_file_and_line() {
        let val = "Places365_val_00000001.jpg 0\n";
        let cases = [
            (
                "/a/airfield/00000001.jpg\n",
                val,
                TRAIN_LIST,
                ":1:",
                "expected",
            ),
            (
                "/a/airfield/00000001.jpg zero\n",
                val,
                TRAIN_LIST,
                ":1:",
                "whole number",
            ),
            (
                TRAIN,
                "Places365_val_00000001.jpg 7\n",
                VAL_LIST,
                ":1:",
                "label 7",
            ),
            (
                "\n/a/airfield/00000001.jpg 1\n",
                val,
                TRAIN_LIST,
                ":2:",
                "folder of class 1",
            ),
            (
                TRAIN,
                "val_256/Places365_val_00000001.jpg 0\n",
                VAL_LIST,
                ":1:",
                "without folders",
            ),
        ];
        for (train, val, file, at, what) in cases {
            let dir = layout(train, val);
            let err = places365(dir.path()).unwrap_err().to_string();
            assert!(err.contains(&format!("{file}{at}")), "{err}");
            assert!(err.contains(what), "{err}");
        }
        let dir = layout(TRAIN, val);
        std::fs::write(dir.path().join(CATEGORIES), "/a/airfield 1\n").unwrap();
        let err = places365(dir.path()).unwrap_err().to_string();
        assert!(err.contains(&format!("{CATEGORIES}:1:")), "{err}");
    }
}
