//! The [`Dataset`] trait (items to images) and [`DatasetSource`], the serialisable
//! description of a data set that a split manifest carries so downstream stages can reopen it.
//!
//! Items are named by ids that never contain an absolute path: a path relative to the data
//! set's root for real data, `synthetic/<index>` for generated images. Moving a data set
//! therefore changes nothing that enters a cache key.

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock};

use image::RgbImage;
use serde::{Deserialize, Serialize};

use super::image_ops::decode_file;
use super::item::SplitItem;
use super::listing::{self, Listing};
use super::synthetic::SyntheticParams;
use super::DataError;

/// A source of images for split items.
pub trait Dataset: Send + Sync {
    /// Decodes the image of `item` as 8-bit RGB.
    fn load(&self, item: &SplitItem) -> Result<RgbImage, DataError>;

    /// A short name for messages (`synthetic`, or the root folder).
    fn name(&self) -> String;
}

/// The layouts the split stage understands (`dataset = "..."`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DatasetKind {
    /// The built-in generator.
    Synthetic,
    /// CUB-200-2011 (`images.txt`, `image_class_labels.txt`, `images/`).
    Cub200,
    /// Cars196 (`cars_annos.mat`, `car_ims/`).
    Cars196,
    /// Stanford Online Products (`Ebay_train.txt`, `Ebay_test.txt`).
    Sop,
    /// Market-1501 (`bounding_box_train/`, `bounding_box_test/`, `query/`).
    Market1501,
    /// A generic `root/CLASS/*.jpg|png` tree.
    Imagefolder,
    /// ILSVRC-2012 (`train/<wnid>/`, `val/`, `LOC_val_solution.csv`).
    Imagenet,
    /// Places365-Standard (`places365_train_standard.txt`, `places365_val.txt`).
    Places365,
    /// IJB-C's face crops and protocol files (`loose_crop/`, `meta/ijbc_face_tid_mid.txt`, ...).
    Ijbc,
}

impl DatasetKind {
    /// Every kind, in the order the `dataset` parameter lists them.
    pub(crate) const ALL: [DatasetKind; 9] = [
        DatasetKind::Synthetic,
        DatasetKind::Cub200,
        DatasetKind::Cars196,
        DatasetKind::Sop,
        DatasetKind::Market1501,
        DatasetKind::Imagefolder,
        DatasetKind::Imagenet,
        DatasetKind::Places365,
        DatasetKind::Ijbc,
    ];

    /// The name used in pipeline files.
    pub fn name(self) -> &'static str {
        match self {
            DatasetKind::Synthetic => "synthetic",
            DatasetKind::Cub200 => "cub200",
            DatasetKind::Cars196 => "cars196",
            DatasetKind::Sop => "sop",
            DatasetKind::Market1501 => "market1501",
            DatasetKind::Imagefolder => "imagefolder",
            DatasetKind::Imagenet => "imagenet",
            DatasetKind::Places365 => "places365",
            DatasetKind::Ijbc => "ijbc",
        }
    }

    /// The kind called `name`.
    pub fn parse(name: &str) -> Result<Self, DataError> {
        DatasetKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                DataError::config(format!(
                    "unknown data set `{name}`; expected one of: {}",
                    DatasetKind::ALL.map(DatasetKind::name).join(", ")
                ))
            })
    }

    /// Lists the images of a real data set at `root` in its published layout.
    ///
    /// # Errors
    /// For `Synthetic`, which has no files; and for every problem with the files.
    pub fn list(self, root: &Path) -> Result<Listing, DataError> {
        match self {
            DatasetKind::Synthetic => Err(DataError::config(
                "synthetic data has no files to list; it is generated",
            )),
            DatasetKind::Cub200 => listing::cub200(root),
            DatasetKind::Cars196 => listing::cars196(root),
            DatasetKind::Sop => listing::sop(root),
            DatasetKind::Market1501 => listing::market1501(root),
            DatasetKind::Imagefolder => listing::image_folder(root),
            DatasetKind::Imagenet => listing::imagenet(root),
            DatasetKind::Places365 => listing::places365(root),
            DatasetKind::Ijbc => listing::ijbc(root),
        }
    }
}

/// Which data set a manifest's items come from: the generator's parameters, or a real data
/// set's layout and its root as written in the pipeline (relative to the project folder, or
/// absolute). The root is informational for `open`; see [`super::SplitManifest::from_input`]
/// for reopening a data set that has moved since the split ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DatasetSource {
    /// Generated images.
    Synthetic(SyntheticParams),
    /// Files under `root` in the layout of `layout`.
    Files {
        /// The layout.
        layout: DatasetKind,
        /// The root folder as written in the pipeline.
        root: String,
    },
}

impl DatasetSource {
    /// Opens the data set; a relative root is resolved against `project_dir`.
    pub fn open(&self, project_dir: &Path) -> Result<Arc<dyn Dataset>, DataError> {
        match self {
            DatasetSource::Synthetic(params) => {
                params.validate()?;
                Ok(Arc::new(SyntheticDataset::new(*params)))
            }
            DatasetSource::Files { layout, root } => {
                let root = project_dir.join(root);
                if !root.is_dir() {
                    return Err(DataError::Missing {
                        dataset: layout.name(),
                        path: root,
                        hint: "set the split stage's `root` to where the data set lives now".into(),
                    });
                }
                Ok(Arc::new(FileDataset { root }))
            }
        }
    }
}

/// Rendered synthetic images are kept in memory when the whole set fits in this many bytes.
/// Rendering (at twice the size, then an antialiased downsampling) would otherwise be redone
/// for every image in every epoch, on the cores the training needs.
const SYNTHETIC_MEMO_BYTES: usize = 512 << 20;

/// Generated images, item ids `synthetic/<index>`. Each image is rendered once per data set
/// value (clones share the renders) when the set fits in [`SYNTHETIC_MEMO_BYTES`].
#[derive(Clone)]
pub struct SyntheticDataset {
    params: SyntheticParams,
    rendered: Option<Arc<Vec<OnceLock<RgbImage>>>>,
}

impl std::fmt::Debug for SyntheticDataset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyntheticDataset")
            .field("params", &self.params)
            .field("memoised", &self.rendered.is_some())
            .finish()
    }
}

impl SyntheticDataset {
    /// The data set of `params` (validate them first).
    pub fn new(params: SyntheticParams) -> Self {
        let side = params.image_size as usize;
        let bytes = params.len().saturating_mul(side * side * 3);
        let rendered = (bytes <= SYNTHETIC_MEMO_BYTES)
            .then(|| Arc::new((0..params.len()).map(|_| OnceLock::new()).collect()));
        SyntheticDataset { params, rendered }
    }

    /// Its parameters.
    pub fn params(&self) -> &SyntheticParams {
        &self.params
    }

    /// Every item, in index order.
    pub fn items(&self) -> Vec<SplitItem> {
        (0..self.params.len())
            .map(|i| SplitItem {
                id: format!("synthetic/{i}"),
                label: self.params.label(i) as i64,
                camera: None,
            })
            .collect()
    }

    /// The index in `synthetic/<index>`.
    pub(crate) fn index_of(&self, id: &str) -> Result<usize, DataError> {
        let bad = |message: String| DataError::BadItem {
            source_name: "synthetic".into(),
            id: id.to_string(),
            message,
        };
        let index: usize = id
            .strip_prefix("synthetic/")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| bad("expected `synthetic/<index>`".into()))?;
        if index >= self.params.len() {
            return Err(bad(format!(
                "index beyond the {} generated images",
                self.params.len()
            )));
        }
        Ok(index)
    }
}

impl Dataset for SyntheticDataset {
    fn load(&self, item: &SplitItem) -> Result<RgbImage, DataError> {
        let index = self.index_of(&item.id)?;
        Ok(match &self.rendered {
            Some(memo) => memo[index]
                .get_or_init(|| self.params.render(index))
                .clone(),
            None => self.params.render(index),
        })
    }

    fn name(&self) -> String {
        "synthetic".into()
    }
}

/// Image files under a root folder, item ids relative to it.
#[derive(Debug, Clone)]
pub struct FileDataset {
    root: PathBuf,
}

impl FileDataset {
    /// The files under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FileDataset { root: root.into() }
    }

    /// The file of item id `id`; ids must be relative paths without `..`.
    pub(crate) fn path_of(&self, id: &str) -> Result<PathBuf, DataError> {
        let rel = Path::new(id);
        if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(DataError::BadItem {
                source_name: self.root.display().to_string(),
                id: id.to_string(),
                message: "item ids are relative paths inside the data set root".into(),
            });
        }
        Ok(self.root.join(rel))
    }
}

impl Dataset for FileDataset {
    fn load(&self, item: &SplitItem) -> Result<RgbImage, DataError> {
        decode_file(&self.path_of(&item.id)?)
    }

    fn name(&self) -> String {
        self.root.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memoised_synthetic_images_equal_fresh_renders() {
        let params = SyntheticParams {
            classes: 3,
            per_class: 2,
            image_size: 16,
            ..Default::default()
        };
        let ds = SyntheticDataset::new(params);
        assert!(ds.rendered.is_some(), "a small set is memoised");
        let shared = ds.clone();
        for item in ds.items() {
            let index = ds.index_of(&item.id).unwrap();
            let first = ds.load(&item).unwrap();
            assert_eq!(first, params.render(index));
            let memo = shared.rendered.as_ref().unwrap();
            assert_eq!(memo[index].get(), Some(&first), "clones share the renders");
        }
        let huge = SyntheticParams {
            classes: 10_000,
            per_class: 100,
            image_size: 224,
            ..Default::default()
        };
        assert!(
            SyntheticDataset::new(huge).rendered.is_none(),
            "150 GB is rendered on demand"
        );
    }

    #[test]
    fn synthetic_ids_round_trip_and_out_of_range_ids_are_errors() {
        let params = SyntheticParams {
            classes: 2,
            per_class: 2,
            image_size: 16,
            ..Default::default()
        };
        let ds = SyntheticDataset::new(params);
        let items = ds.items();
        assert_eq!(items.len(), 4);
        assert_eq!((items[3].id.as_str(), items[3].label), ("synthetic/3", 1));
        assert_eq!(ds.load(&items[3]).unwrap(), params.render(3));
        let bad = SplitItem {
            id: "synthetic/4".into(),
            label: 1,
            camera: None,
        };
        assert!(ds
            .load(&bad)
            .unwrap_err()
            .to_string()
            .contains("synthetic/4"));
    }

    #[test]
    fn file_ids_cannot_escape_the_root() {
        let ds = FileDataset::new("/data/cub");
        assert!(ds.path_of("../etc/passwd").is_err());
        assert!(ds.path_of("/etc/passwd").is_err());
        assert_eq!(
            ds.path_of("images/a.jpg").unwrap(),
            PathBuf::from("/data/cub/images/a.jpg")
        );
    }

    #[test]
    fn kinds_parse_by_name() {
        for kind in DatasetKind::ALL {
            assert_eq!(DatasetKind::parse(kind.name()).unwrap(), kind);
        }
        assert!(DatasetKind::parse("cub")
            .unwrap_err()
            .to_string()
            .contains("cub200"));
    }
}
