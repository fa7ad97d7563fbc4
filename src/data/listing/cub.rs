//! CUB-200-2011: `images.txt` (`<image id> <path under images/>`) and
//! `image_class_labels.txt` (`<image id> <class id 1..200>`). No provided split is used: the
//! metric-learning protocol trains on classes 1-100 and tests on 101-200 (`half-classes`).

use std::collections::HashMap;
use std::path::Path;

use super::checks::{int_field, read_lines, require_file, require_images, require_root};
use super::entry::{Entry, Listing, Part};
use crate::data::DataError;

const HINT: &str = "set `root` to the CUB_200_2011 folder (holding images.txt, \
                    image_class_labels.txt and images/)";

/// Lists CUB-200-2011 at `root`.
pub fn cub200(root: &Path) -> Result<Listing, DataError> {
    require_root("cub200", root, HINT)?;
    let images_txt = root.join("images.txt");
    let labels_txt = root.join("image_class_labels.txt");
    require_file("cub200", &images_txt, HINT)?;
    require_file("cub200", &labels_txt, HINT)?;

    let mut labels: HashMap<i64, i64> = HashMap::new();
    for (n, line) in read_lines(&labels_txt)? {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [id, class] = fields[..] else {
            return Err(DataError::malformed(
                &labels_txt,
                n,
                format!("expected `<image id> <class id>`, found `{line}`"),
            ));
        };
        let id = int_field(&labels_txt, n, "image id", id)?;
        let class = int_field(&labels_txt, n, "class id", class)?;
        if labels.insert(id, class).is_some() {
            return Err(DataError::malformed(
                &labels_txt,
                n,
                format!("image id {id} repeated"),
            ));
        }
    }

    let mut entries = Vec::new();
    let mut seen = HashMap::new();
    for (n, line) in read_lines(&images_txt)? {
        let Some((id, path)) = line.split_once(char::is_whitespace) else {
            return Err(DataError::malformed(
                &images_txt,
                n,
                format!("expected `<image id> <path>`, found `{line}`"),
            ));
        };
        let id = int_field(&images_txt, n, "image id", id)?;
        if seen.insert(id, n).is_some() {
            return Err(DataError::malformed(
                &images_txt,
                n,
                format!("image id {id} repeated"),
            ));
        }
        let label = *labels.get(&id).ok_or_else(|| {
            DataError::malformed(
                &images_txt,
                n,
                format!("image id {id} has no class in image_class_labels.txt"),
            )
        })?;
        entries.push(Entry {
            id: format!("images/{}", path.trim()),
            label,
            camera: None,
            part: Part::Unsplit,
        });
    }
    if entries.is_empty() {
        return Err(DataError::BadFile {
            path: images_txt,
            message: "lists no images".into(),
        });
    }
    require_images("cub200", root, &entries, "images.txt")?;
    Ok(Listing {
        entries,
        annotations: vec!["images.txt".into(), "image_class_labels.txt".into()],
    })
}
