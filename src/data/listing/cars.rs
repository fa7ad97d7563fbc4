//! Cars196: the published annotation file `cars_annos.mat`, a struct array `annotations` with
//! fields `relative_im_path` (`car_ims/000001.jpg`), `class` (1..196) and `test` (the
//! classification split, not used by the metric-learning protocol, which trains on classes
//! 1-98 and tests on 99-196: `half-classes`).

use std::path::Path;

use super::{read_mat, require_file, require_images, require_root, Entry, Listing, Part};
use crate::data::DataError;

const HINT: &str = "set `root` to the folder holding cars_annos.mat and car_ims/";

/// Lists Cars196 at `root`.
pub fn cars196(root: &Path) -> Result<Listing, DataError> {
    require_root("cars196", root, HINT)?;
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
