//! Cars196 in either of its two published layouts:
//!
//! - the metric-learning release: `cars_annos.mat`, a struct array `annotations` with fields
//!   `relative_im_path` (`car_ims/000001.jpg`), `class` (1..196) and `test`;
//! - the devkit release most mirrors ship: `cars_train/` and `cars_test/` with
//!   `devkit/cars_train_annos.mat` and `cars_test_annos_withlabels.mat` (at the root or in
//!   `devkit/`), struct arrays `annotations` with fields `fname` and `class`. Both halves
//!   together are the same 16,185 images.
//!
//! The `test` flag and the train/test folders are the classification split, not used by the
//! metric-learning protocol, which trains on classes 1-98 and tests on 99-196
//! (`half-classes`).

use std::path::Path;

use super::checks::{require_file, require_images, require_root};
use super::entry::{Entry, Listing, Part};
use super::mat::{read_mat, MatValue};
use crate::data::DataError;

const HINT: &str = "set `root` to the folder holding cars_annos.mat and car_ims/ (the \
                    metric-learning release), or cars_train/, cars_test/, \
                    devkit/cars_train_annos.mat and cars_test_annos_withlabels.mat (the devkit \
                    release)";

const TEST_HINT: &str = "the devkit's own cars_test_annos.mat has no classes: put \
                         cars_test_annos_withlabels.mat (published with the devkit) at the root \
                         or in devkit/";

/// Lists Cars196 at `root`, in whichever layout it has.
pub fn cars196(root: &Path) -> Result<Listing, DataError> {
    require_root("cars196", root, HINT)?;
    if !root.join("cars_annos.mat").is_file() && root.join("devkit/cars_train_annos.mat").is_file()
    {
        return devkit(root);
    }
    let path = root.join("cars_annos.mat");
    require_file("cars196", &path, HINT)?;
    let vars = read_mat(&path)?;
    let bad = |message: String| DataError::BadFile {
        path: path.clone(),
        message,
    };
    let annotations = vars
        .get("annotations")
        .ok_or_else(|| bad("has no variable `annotations`".into()))?;
    let mut entries = Vec::with_capacity(annotations.len());
    for i in 0..annotations.len() {
        let rel = annotations
            .field(i, "relative_im_path")
            .and_then(|v| v.text())
            .ok_or_else(|| {
                bad(format!(
                    "annotation {}: no text field `relative_im_path`",
                    i + 1
                ))
            })?;
        let class = annotations
            .field(i, "class")
            .and_then(|v| v.scalar())
            .ok_or_else(|| {
                bad(format!(
                    "annotation {} ({rel}): no numeric field `class`",
                    i + 1
                ))
            })?;
        if class.fract() != 0.0 || class < 1.0 {
            return Err(bad(format!(
                "annotation {} ({rel}): class {class} is not 1, 2, ...",
                i + 1
            )));
        }
        entries.push(Entry {
            id: rel.trim().to_string(),
            label: class as i64,
            camera: None,
            part: Part::Unsplit,
        });
    }
    if entries.is_empty() {
        return Err(bad("`annotations` is empty".into()));
    }
    require_images("cars196", root, &entries, "cars_annos.mat")?;
    Ok(Listing {
        entries,
        annotations: vec!["cars_annos.mat".into()],
    })
}

/// The devkit layout: train images then test images, each listed by `fname` and `class`.
fn devkit(root: &Path) -> Result<Listing, DataError> {
    let train = root.join("devkit/cars_train_annos.mat");
    let test = [
        "cars_test_annos_withlabels.mat",
        "devkit/cars_test_annos_withlabels.mat",
    ]
    .iter()
    .map(|rel| root.join(rel))
    .find(|p| p.is_file())
    .ok_or_else(|| DataError::Missing {
        dataset: "cars196",
        path: root.join("cars_test_annos_withlabels.mat"),
        hint: TEST_HINT.to_string(),
    })?;
    let mut entries = Vec::new();
    let mut annotations = Vec::new();
    for (path, folder) in [(train, "cars_train"), (test, "cars_test")] {
        let vars = read_mat(&path)?;
        let bad = |message: String| DataError::BadFile {
            path: path.clone(),
            message,
        };
        let list = vars
            .get("annotations")
            .ok_or_else(|| bad("has no variable `annotations`".into()))?;
        if list.is_empty() {
            return Err(bad("`annotations` is empty".into()));
        }
        for i in 0..list.len() {
            let (name, class) = devkit_row(list, i).map_err(bad)?;
            entries.push(Entry {
                id: format!("{folder}/{name}"),
                label: class,
                camera: None,
                part: Part::Unsplit,
            });
        }
        let rel = path.strip_prefix(root).unwrap_or(&path);
        annotations.push(rel.to_string_lossy().replace('\\', "/"));
    }
    require_images("cars196", root, &entries, "the devkit annotations")?;
    Ok(Listing {
        entries,
        annotations,
    })
}

/// `fname` and `class` of annotation `i` of a devkit file.
fn devkit_row(list: &MatValue, i: usize) -> Result<(String, i64), String> {
    let name = list
        .field(i, "fname")
        .and_then(|v| v.text())
        .ok_or_else(|| format!("annotation {}: no text field `fname`", i + 1))?;
    let class = list
        .field(i, "class")
        .and_then(|v| v.scalar())
        .ok_or_else(|| format!("annotation {} ({name}): no numeric field `class`", i + 1))?;
    if class.fract() != 0.0 || class < 1.0 {
        return Err(format!(
            "annotation {} ({name}): class {class} is not 1, 2, ...",
            i + 1
        ));
    }
    Ok((name.trim().to_string(), class as i64))
}
