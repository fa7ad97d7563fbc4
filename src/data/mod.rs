//! Data: everything between images on disk and pixels in memory (no tensors).
//!
//! - [`synthetic`]: the built-in fine-grained generator (the quickstart's data, no download).
//! - [`listing`]: real data sets in their published layouts (CUB-200-2011, Cars196, Stanford
//!   Online Products, Market-1501, ImageFolder).
//! - [`dataset`]: the [`Dataset`] trait (item -> image) and [`DatasetSource`], how a manifest
//!   names its data set.
//! - [`SplitItem`]: one image as a split lists it (id, label, camera). The input size type,
//!   [`Resolution`], is a parameter type and lives in `kind` (re-exported here).
//! - [`protocol`] and [`manifest`]: split protocols and the [`SplitManifest`] a `split` stage
//!   writes and every training, embedding and evaluation stage reads.
//! - [`fingerprint`]: what a split's cache key holds about real data (content, never paths).
//! - [`image_ops`]: decoding, Pillow-exact antialiased resampling, evaluation preprocessing,
//!   training re-sampling, ImageNet normalisation.
//! - [`augment`]: random resized crops, flips, colour jitter, mixup weights; coupled draws.
//! - the loaders that turn images into batches of tensors are in the tensor crate
//!   (`asymflow_tensor::data`).
//! - [`export`]: a data set or partition written as an ImageFolder tree of PNGs.
//!
//! Errors are [`DataError`]s that name the file (and line) concerned.

pub mod augment;
pub mod dataset;
mod error;
pub mod export;
pub mod fingerprint;
pub mod image_ops;
mod item;
pub mod listing;
pub mod manifest;
pub mod protocol;
pub mod synthetic;

pub use crate::kind::Resolution;
pub use augment::{AugParams, AugmentConfig};
pub use dataset::{Dataset, DatasetKind, DatasetSource, FileDataset, SyntheticDataset};
pub use error::DataError;
pub(crate) use export::export_image_folder;
pub use fingerprint::DirectHasher;
pub(crate) use fingerprint::FilesFingerprint;
pub use image_ops::EvalView;
pub use item::SplitItem;
pub use manifest::{dense_labels, SplitManifest, VerificationPair, MANIFEST_OUTPUT};
pub use protocol::{Protocol, SplitOptions};
pub use synthetic::{SyntheticParams, GENERATOR_VERSION};
