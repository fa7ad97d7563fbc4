//! One image of a data set as a split sees it: its id, its label, its camera.
//!
//! Its own file because both sides use it: a [`super::Dataset`] loads an item's pixels, and a
//! [`super::SplitManifest`] lists items per partition; neither imports the other for it.

use serde::{Deserialize, Serialize};

/// One image of a partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SplitItem {
    /// Path relative to the data set root (`/`-separated), or `synthetic/<index>`.
    pub id: String,
    /// The data set's own class or identity id (CUB 1..200, synthetic 0..classes, Market
    /// identity, 0 for distractors). Use [`super::dense_labels`] for classifier indices.
    pub label: i64,
    /// Camera id where the data set records one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub camera: Option<i64>,
}
