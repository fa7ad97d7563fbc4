//! Writing a data set (or one partition of a split) as an ImageFolder tree of PNG files, for
//! a look at what a pipeline trains on (`asymflow data export`), or to feed another tool.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::dataset::Dataset;
use super::item::SplitItem;
use super::DataError;

/// The file an item is exported to: `out_dir/<label, 4 digits>/<name>.png`, where the name is
/// the generator index (`000012`) or the item's relative path with `/` turned into `_`.
pub(crate) fn export_path(out_dir: &Path, item: &SplitItem) -> PathBuf {
    let name = match item
        .id
        .strip_prefix("synthetic/")
        .and_then(|n| n.parse::<usize>().ok())
    {
        Some(index) => format!("{index:06}"),
        None => {
            let flat = item.id.replace('/', "_");
            match flat.rsplit_once('.') {
                Some((stem, _)) => stem.to_string(),
                None => flat,
            }
        }
    };
    out_dir
        .join(format!("{:04}", item.label))
        .join(format!("{name}.png"))
}

/// Writes every item of `items` from `dataset` under `out_dir` (see [`export_path`]), in
/// parallel; returns the number of images written.
pub(crate) fn export_image_folder(
    dataset: &dyn Dataset,
    items: &[SplitItem],
    out_dir: &Path,
) -> Result<usize, DataError> {
    items.par_iter().try_for_each(|item| {
        let path = export_path(out_dir, item);
        let dir = path.parent().expect("export paths have a class folder");
        std::fs::create_dir_all(dir).map_err(|e| DataError::io(dir, e))?;
        dataset
            .load(item)?
            .save(&path)
            .map_err(|e| DataError::BadFile {
                path: path.clone(),
                message: format!("cannot write PNG: {e}"),
            })
    })?;
    Ok(items.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{SyntheticDataset, SyntheticParams};

    #[test]
    fn synthetic_images_export_as_an_image_folder() {
        let params = SyntheticParams {
            classes: 2,
            per_class: 2,
            image_size: 16,
            ..Default::default()
        };
        let ds = SyntheticDataset::new(params);
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            export_image_folder(&ds, &ds.items(), dir.path()).unwrap(),
            4
        );
        let back = image::open(dir.path().join("0001/000003.png"))
            .unwrap()
            .to_rgb8();
        assert_eq!(back, params.render(3));
        let listing = crate::data::listing::image_folder(dir.path()).unwrap();
        assert_eq!(listing.entries.len(), 4);
    }

    #[test]
    fn real_items_keep_their_path_in_the_name() {
        let item = SplitItem {
            id: "images/001.A/x.jpg".into(),
            label: 1,
            camera: None,
        };
        assert_eq!(
            export_path(Path::new("/o"), &item),
            PathBuf::from("/o/0001/images_001.A_x.png")
        );
    }
}
