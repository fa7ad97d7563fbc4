//! ILSVRC-2012 (ImageNet-1k) as published: the training images one folder per WordNet id
//! (`train/n01440764/n01440764_10026.JPEG`, as `ILSVRC2012_img_train.tar`'s per-class archives
//! unpack), the 50,000 validation images flat (`val/ILSVRC2012_val_00000001.JPEG`, as
//! `ILSVRC2012_img_val.tar` unpacks) and their labels in `LOC_val_solution.csv`, the
//! validation ground truth ImageNet publishes with the localisation challenge's files
//! (`ImageId,PredictionString`, each prediction string a list of `wnid x_min y_min x_max y_max`
//! boxes, all of the image's class).
//!
//! Without `LOC_val_solution.csv`, the validation labels come from the development kit as
//! `ILSVRC2012_devkit_t12.tar.gz` unpacks: `ILSVRC2012_devkit_t12/data/
//! ILSVRC2012_validation_ground_truth.txt` (line i: the `ILSVRC2012_ID` of
//! `ILSVRC2012_val_<i>.JPEG`) and `meta.mat` (the struct array `synsets`, whose `ILSVRC2012_ID`
//! and `WNID` fields map those ids to WordNet ids).
//!
//! Class ids are the WordNet ids in sorted order, 0..999: the order of torchvision's
//! `ImageFolder` and of `LOC_synset_mapping.txt` (not the devkit's `ILSVRC2012_ID` order), so
//! "the first 500 classes" (the BCT paper's old training set) is the same set whichever of
//! those a user compares with.

use std::collections::BTreeMap;
use std::path::Path;

use super::checks::{int_field, read_lines, require_file, require_images, require_root};
use super::entry::{Entry, Listing, Part};
use super::mat::{read_mat, MatValue};
use crate::data::DataError;

const HINT: &str = "set `root` to the ILSVRC-2012 folder holding `train/` (one folder per \
                    WordNet id), `val/` (the validation images) and their labels: \
                    `LOC_val_solution.csv`, or the unpacked devkit `ILSVRC2012_devkit_t12/`";

/// The devkit's validation labels and class metadata.
pub(crate) const DEVKIT_TRUTH: &str =
    "ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt";
/// The devkit's class metadata.
pub(crate) const DEVKIT_META: &str = "ILSVRC2012_devkit_t12/data/meta.mat";

/// The validation labels file.
pub(crate) const VAL_LABELS: &str = "LOC_val_solution.csv";

/// Lists ILSVRC-2012 at `root`: `train/` as [`Part::Train`], `val/` as [`Part::Test`].
pub fn imagenet(root: &Path) -> Result<Listing, DataError> {
    require_root("imagenet", root, HINT)?;
    let train_dir = root.join("train");
    require_root("imagenet", &train_dir, HINT)?;
    let classes = class_folders(&train_dir)?;
    let mut listing = Listing::default();
    for (label, wnid) in classes.values().enumerate() {
        let files = images_in(&train_dir.join(wnid))?;
        if files.is_empty() {
            return Err(DataError::BadFile {
                path: train_dir.join(wnid),
                message: "class folder holds no .JPEG image; remove it or unpack its archive"
                    .into(),
            });
        }
        listing.entries.extend(files.into_iter().map(|f| Entry {
            id: format!("train/{wnid}/{f}"),
            label: label as i64,
            camera: None,
            part: Part::Train,
        }));
    }
    let labels: BTreeMap<&str, i64> = classes
        .values()
        .enumerate()
        .map(|(i, w)| (w.as_str(), i as i64))
        .collect();
    let path = root.join(VAL_LABELS);
    let listed_in = if path.is_file() || !root.join(DEVKIT_TRUTH).is_file() {
        require_file("imagenet", &path, HINT)?;
        listing.entries.extend(validation(&path, &labels)?);
        listing.annotations.push(VAL_LABELS.to_string());
        VAL_LABELS
    } else {
        listing.entries.extend(devkit_validation(root, &labels)?);
        listing
            .annotations
            .extend([DEVKIT_TRUTH.to_string(), DEVKIT_META.to_string()]);
        DEVKIT_TRUTH
    };
    require_images("imagenet", root, &listing.entries, listed_in)?;
    Ok(listing)
}

/// The sub-folders of `train/`, sorted (the key and the value are the WordNet id).
fn class_folders(train: &Path) -> Result<BTreeMap<String, String>, DataError> {
    let mut classes = BTreeMap::new();
    for entry in std::fs::read_dir(train).map_err(|e| DataError::io(train, e))? {
        let entry = entry.map_err(|e| DataError::io(train, e))?;
        if entry.path().is_dir() {
            let name = entry.file_name().to_string_lossy().into_owned();
            classes.insert(name.clone(), name);
        }
    }
    if classes.is_empty() {
        return Err(DataError::BadFile {
            path: train.to_path_buf(),
            message: format!("has no class folders; {HINT}"),
        });
    }
    Ok(classes)
}

/// The image files directly in `dir`, sorted by name.
fn images_in(dir: &Path) -> Result<Vec<String>, DataError> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| DataError::io(dir, e))? {
        let entry = entry.map_err(|e| DataError::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let ext = Path::new(&name)
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        if matches!(ext.as_deref(), Some("jpeg" | "jpg" | "png")) && entry.path().is_file() {
            files.push(name);
        }
    }
    files.sort();
    Ok(files)
}

/// The validation images of `LOC_val_solution.csv`, each labelled by the WordNet id of its
/// first box (every box of an image names the same class).
fn validation(path: &Path, labels: &BTreeMap<&str, i64>) -> Result<Vec<Entry>, DataError> {
    let mut lines = read_lines(path)?.into_iter();
    match lines.next() {
        Some((_, header)) if header == "ImageId,PredictionString" => {}
        Some((n, other)) => {
            return Err(DataError::malformed(
                path,
                n,
                format!("expected the header `ImageId,PredictionString`, found `{other}`"),
            ))
        }
        None => {
            return Err(DataError::BadFile {
                path: path.to_path_buf(),
                message: "is empty".into(),
            })
        }
    }
    let mut entries = Vec::new();
    for (n, line) in lines {
        let Some((image, boxes)) = line.split_once(',') else {
            return Err(DataError::malformed(
                path,
                n,
                format!("expected `<ImageId>,<wnid> <x_min> <y_min> <x_max> <y_max> ...`, found `{line}`"),
            ));
        };
        let wnid = boxes.split_whitespace().next().unwrap_or("");
        if image.is_empty() || image.contains(['/', '\\']) || wnid.is_empty() {
            return Err(DataError::malformed(
                path,
                n,
                format!("expected `<ImageId>,<wnid> <x_min> <y_min> <x_max> <y_max> ...`, found `{line}`"),
            ));
        }
        let label = *labels.get(wnid).ok_or_else(|| {
            DataError::malformed(
                path,
                n,
                format!("class `{wnid}` has no folder in train/; the validation labels must name training classes"),
            )
        })?;
        entries.push(Entry {
            id: format!("val/{image}.JPEG"),
            label,
            camera: None,
            part: Part::Test,
        });
    }
    entries.sort_by(|a, b| a.id.cmp(&b.id));
    if let Some(w) = entries.windows(2).find(|w| w[0].id == w[1].id) {
        return Err(DataError::BadFile {
            path: path.to_path_buf(),
            message: format!("lists {} twice", w[0].id),
        });
    }
    Ok(entries)
}

/// The validation images of the devkit's ground truth, line i naming the `ILSVRC2012_ID` of
/// `ILSVRC2012_val_<i>.JPEG`, mapped to WordNet ids through `meta.mat`.
fn devkit_validation(root: &Path, labels: &BTreeMap<&str, i64>) -> Result<Vec<Entry>, DataError> {
    let meta_path = root.join(DEVKIT_META);
    require_file("imagenet", &meta_path, HINT)?;
    let vars = read_mat(&meta_path)?;
    let bad_meta = |message: String| DataError::BadFile {
        path: meta_path.clone(),
        message,
    };
    let synsets = vars
        .get("synsets")
        .ok_or_else(|| bad_meta("has no variable `synsets`".into()))?;
    let mut wnid_of: BTreeMap<i64, String> = BTreeMap::new();
    for i in 0..synsets.len() {
        let id = synsets.field(i, "ILSVRC2012_ID").and_then(MatValue::scalar);
        let wnid = synsets.field(i, "WNID").and_then(MatValue::text);
        let (Some(id), Some(wnid)) = (id, wnid) else {
            return Err(bad_meta(format!(
                "synsets({}): expected a numeric `ILSVRC2012_ID` and a text `WNID`",
                i + 1
            )));
        };
        wnid_of.insert(id as i64, wnid.trim().to_string());
    }
    let path = root.join(DEVKIT_TRUTH);
    let mut entries = Vec::new();
    for (image, (n, line)) in read_lines(&path)?.into_iter().enumerate() {
        if n != image + 1 {
            return Err(DataError::malformed(
                &path,
                image + 1,
                "blank line: line i holds the ILSVRC2012_ID of ILSVRC2012_val_<i>.JPEG",
            ));
        }
        let id = int_field(&path, n, "ILSVRC2012_ID", &line)?;
        let wnid = wnid_of.get(&id).ok_or_else(|| {
            DataError::malformed(
                &path,
                n,
                format!("ILSVRC2012_ID {id} is not in {DEVKIT_META}"),
            )
        })?;
        let label = *labels.get(wnid.as_str()).ok_or_else(|| {
            DataError::malformed(
                &path,
                n,
                format!("class {id} (`{wnid}`) has no folder in train/; the validation labels must name training classes"),
            )
        })?;
        entries.push(Entry {
            id: format!("val/ILSVRC2012_val_{n:08}.JPEG"),
            label,
            camera: None,
            part: Part::Test,
        });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(solution: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (wnid, file) in [("n02", "n02_1.JPEG"), ("n01", "n01_1.JPEG")] {
            std::fs::create_dir_all(dir.path().join("train").join(wnid)).unwrap();
            std::fs::write(dir.path().join("train").join(wnid).join(file), b"x").unwrap();
        }
        std::fs::create_dir_all(dir.path().join("val")).unwrap();
        for i in 1..=2 {
            let name = format!("ILSVRC2012_val_{i:08}.JPEG");
            std::fs::write(dir.path().join("val").join(name), b"x").unwrap();
        }
        std::fs::write(dir.path().join(VAL_LABELS), solution).unwrap();
        dir
    }

    #[test]
    fn classes_are_the_sorted_wordnet_ids_and_val_takes_its_labels_from_the_csv() {
        let dir = layout(
            "ImageId,PredictionString\nILSVRC2012_val_00000002,n02 1 2 3 4 n02 5 6 7 8\n\
             ILSVRC2012_val_00000001,n01 1 2 3 4\n",
        );
        let listing = imagenet(dir.path()).unwrap();
        let got: Vec<(&str, i64, Part)> = listing
            .entries
            .iter()
            .map(|e| (e.id.as_str(), e.label, e.part))
            .collect();
        assert_eq!(
            got,
            [
                ("train/n01/n01_1.JPEG", 0, Part::Train),
                ("train/n02/n02_1.JPEG", 1, Part::Train),
                ("val/ILSVRC2012_val_00000001.JPEG", 0, Part::Test),
                ("val/ILSVRC2012_val_00000002.JPEG", 1, Part::Test),
            ]
        );
    }

    #[test]
    fn malformed_validation_lines_name_the_file_and_line() {
        let cases = [
            ("ImageId PredictionString\n", ":1:", "header"),
            (
                "ImageId,PredictionString\nILSVRC2012_val_00000001\n",
                ":2:",
                "expected",
            ),
            (
                "ImageId,PredictionString\nILSVRC2012_val_00000001,\n",
                ":2:",
                "expected",
            ),
            (
                "ImageId,PredictionString\n\nILSVRC2012_val_00000001,n09 1 2 3 4\n",
                ":3:",
                "n09",
            ),
        ];
        for (text, at, what) in cases {
            let dir = layout(text);
            let err = imagenet(dir.path()).unwrap_err().to_string();
            assert!(err.contains(&format!("{VAL_LABELS}{at}")), "{err}");
            assert!(err.contains(what), "{err}");
        }
        let dir = layout("ImageId,PredictionString\nILSVRC2012_val_00000003,n01 1 2 3 4\n");
        let err = imagenet(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("ILSVRC2012_val_00000003.JPEG") && err.contains("missing"),
            "{err}"
        );
    }
}
