//! The split manifest: the one artifact of a `split` stage, listing each partition's items.
//!
//! Downstream stages read it with [`SplitManifest::from_input`] (or [`SplitManifest::read`]),
//! pick partitions by name and open the data set to load images. The manifest never holds an
//! absolute path unless the pipeline wrote one; for real data it holds a digest of every image's
//! content, so editing an image changes the manifest and so reruns exactly the stages that read
//! it, while moving the data set changes nothing.
//!
//! Partition names: `train`, `test` (retrieval: every test image a query against all others);
//! `train-<p>` nested identity subsets of train (`subsets`); `val-train` / `val-test` (the
//! validation split: the first and second half of the training classes) and `val-train-<p>`
//! (the same `subsets`, nested inside val-train); `query` / `gallery`
//! (provided by Market-1501, or drawn per test class with `gallery_per_class`);
//! `probe-gallery`, `probe-mated`, `probe-non-mated` (open-set identification: the query
//! partition split by whether the probe's class is enrolled in `probe-gallery`); `junk`
//! (images a protocol excludes from evaluation, such as Market-1501 identity -1). Verification
//! pairs are [`SplitManifest::pairs`], indices into `test`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::dataset::{Dataset, DatasetSource};
use super::item::SplitItem;
use super::DataError;
use crate::kind::{InputArtifact, StageError};

/// The file name of the manifest output of a `split` stage.
pub const MANIFEST_OUTPUT: &str = "split.json";

/// Version of the manifest's JSON layout.
pub(crate) const MANIFEST_FORMAT: u32 = 1;

/// Size of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionCount {
    /// Number of items.
    pub items: usize,
    /// Number of distinct labels.
    pub classes: usize,
}

/// A verification pair: indices into the partition [`SplitManifest::pairs_partition`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerificationPair {
    /// Index of the first image.
    pub a: usize,
    /// Index of the second image.
    pub b: usize,
    /// Whether both images have the same label (a genuine pair) or not (an impostor pair).
    pub genuine: bool,
}

/// The output of a `split` stage. See the module docs. Two manifests are equal when their
/// content is (where they were read from does not matter).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SplitManifest {
    /// [`MANIFEST_FORMAT`].
    pub format: u32,
    /// The data set the items come from.
    pub dataset: DatasetSource,
    /// The protocol that made the partitions (`half-classes`, `provided`).
    pub protocol: String,
    /// For real data: blake3 over every image's relative path and content hash (the data
    /// set's fingerprint); `None` for generated data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Items and classes per partition.
    pub counts: BTreeMap<String, PartitionCount>,
    /// Partition name -> items, in a deterministic order.
    pub partitions: BTreeMap<String, Vec<SplitItem>>,
    /// The partition [`SplitManifest::pairs`] index into (`test`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairs_partition: Option<String>,
    /// Verification pairs (genuine and impostor), when requested.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<VerificationPair>,
    /// Where the manifest was read from (for messages).
    #[serde(skip)]
    pub path: Option<PathBuf>,
}

impl PartialEq for SplitManifest {
    fn eq(&self, other: &Self) -> bool {
        (
            &self.format,
            &self.dataset,
            &self.protocol,
            &self.content,
            &self.counts,
        ) == (
            &other.format,
            &other.dataset,
            &other.protocol,
            &other.content,
            &other.counts,
        ) && (&self.partitions, &self.pairs_partition, &self.pairs)
            == (&other.partitions, &other.pairs_partition, &other.pairs)
    }
}

impl SplitManifest {
    /// A manifest of `partitions`, with counts filled in.
    pub fn new(
        dataset: DatasetSource,
        protocol: &str,
        partitions: BTreeMap<String, Vec<SplitItem>>,
    ) -> Self {
        let mut manifest = SplitManifest {
            format: MANIFEST_FORMAT,
            dataset,
            protocol: protocol.to_string(),
            content: None,
            counts: BTreeMap::new(),
            partitions,
            pairs_partition: None,
            pairs: Vec::new(),
            path: None,
        };
        manifest.recount();
        manifest
    }

    /// Recomputes [`SplitManifest::counts`] from the partitions.
    pub(crate) fn recount(&mut self) {
        self.counts = self
            .partitions
            .iter()
            .map(|(name, items)| {
                let classes = items.iter().map(|i| i.label).collect::<BTreeSet<_>>().len();
                (
                    name.clone(),
                    PartitionCount {
                        items: items.len(),
                        classes,
                    },
                )
            })
            .collect();
    }

    /// Reads a manifest file.
    pub fn read(path: &Path) -> Result<SplitManifest, DataError> {
        let text = std::fs::read_to_string(path).map_err(|e| DataError::io(path, e))?;
        let mut manifest: SplitManifest =
            serde_json::from_str(&text).map_err(|e| DataError::BadFile {
                path: path.to_path_buf(),
                message: format!("not a split manifest: {e}"),
            })?;
        if manifest.format != MANIFEST_FORMAT {
            return Err(DataError::BadFile {
                path: path.to_path_buf(),
                message: format!(
                    "manifest format {} but this asymflow reads format {MANIFEST_FORMAT}; rerun the split stage",
                    manifest.format
                ),
            });
        }
        manifest.path = Some(path.to_path_buf());
        Ok(manifest)
    }

    /// Reads the manifest of an upstream `split` instance, taking the data set's `root` from
    /// that instance's current parameters: the split's cache key never holds the root's text
    /// (moving a data set keeps every cache hit), so the manifest may record where the data
    /// set was when the split ran, while the pipeline says where it is now.
    pub fn from_input(input: &InputArtifact) -> Result<SplitManifest, StageError> {
        let mut manifest = SplitManifest::read(input.output(MANIFEST_OUTPUT)?)?;
        if let (DatasetSource::Files { root, .. }, Some(now)) =
            (&mut manifest.dataset, input.params.opt_str("root"))
        {
            *root = now.to_string();
        }
        Ok(manifest)
    }

    /// Writes the manifest as pretty JSON.
    pub fn write(&self, path: &Path) -> Result<(), DataError> {
        let text = serde_json::to_string_pretty(self).expect("a manifest always serialises");
        std::fs::write(path, text).map_err(|e| DataError::io(path, e))
    }

    /// The items of partition `name`; the error lists the partitions that exist.
    pub fn partition(&self, name: &str) -> Result<&[SplitItem], DataError> {
        self.partitions
            .get(name)
            .map(Vec::as_slice)
            .ok_or_else(|| DataError::UnknownPartition {
                path: self
                    .path
                    .clone()
                    .unwrap_or_else(|| PathBuf::from("<split manifest>")),
                name: name.to_string(),
                available: self
                    .partitions
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// Opens the data set the items come from; a relative root resolves against
    /// `project_dir`.
    pub fn open(&self, project_dir: &Path) -> Result<Arc<dyn Dataset>, DataError> {
        self.dataset.open(project_dir)
    }

    /// A human summary (`asymflow show`): the data set, protocol and a line per partition.
    pub fn summary(&self) -> String {
        let source = match &self.dataset {
            DatasetSource::Synthetic(p) => format!(
                "synthetic: {} classes x {} images at {} px, detail_scale {}, seed {}",
                p.classes, p.per_class, p.image_size, p.detail_scale, p.seed
            ),
            DatasetSource::Files { layout, root } => format!("{} at {root}", layout.name()),
        };
        let mut out = format!("{source}\nprotocol: {}\n", self.protocol);
        let width = self.counts.keys().map(String::len).max().unwrap_or(0);
        for (name, c) in &self.counts {
            out.push_str(&format!(
                "  {name:width$}  {:>7} images  {:>6} classes\n",
                c.items, c.classes
            ));
        }
        if !self.pairs.is_empty() {
            let genuine = self.pairs.iter().filter(|p| p.genuine).count();
            out.push_str(&format!(
                "  pairs over {}: {genuine} genuine, {} impostor\n",
                self.pairs_partition.as_deref().unwrap_or("test"),
                self.pairs.len() - genuine
            ));
        }
        out
    }
}

/// Labels mapped to dense classifier indices `0..C` in increasing label order, plus the
/// sorted distinct labels (index -> original label).
pub fn dense_labels(items: &[SplitItem]) -> (Vec<i64>, Vec<i64>) {
    let classes: Vec<i64> = items
        .iter()
        .map(|i| i.label)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let dense = items
        .iter()
        .map(|i| {
            classes
                .binary_search(&i.label)
                .expect("label is among the classes") as i64
        })
        .collect();
    (dense, classes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::SyntheticParams;

    fn item(id: &str, label: i64) -> SplitItem {
        SplitItem {
            id: id.into(),
            label,
            camera: None,
        }
    }

    #[test]
    fn manifests_round_trip_and_name_partitions_in_errors() {
        let mut parts = BTreeMap::new();
        parts.insert(
            "train".to_string(),
            vec![item("synthetic/0", 0), item("synthetic/1", 0)],
        );
        parts.insert("test".to_string(), vec![item("synthetic/2", 1)]);
        let m = SplitManifest::new(
            DatasetSource::Synthetic(SyntheticParams::default()),
            "half-classes",
            parts,
        );
        assert_eq!(
            m.counts["train"],
            PartitionCount {
                items: 2,
                classes: 1
            }
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(MANIFEST_OUTPUT);
        m.write(&path).unwrap();
        let back = SplitManifest::read(&path).unwrap();
        assert_eq!(back.partitions, m.partitions);
        assert_eq!(back.partition("test").unwrap().len(), 1);
        let err = back.partition("query").unwrap_err().to_string();
        assert!(
            err.contains("query") && err.contains("test, train"),
            "{err}"
        );
        assert!(back.summary().contains("train"));
    }

    #[test]
    fn dense_labels_follow_label_order() {
        let items = [item("a", 17), item("b", 3), item("c", 17)];
        assert_eq!(dense_labels(&items), (vec![1, 0, 1], vec![3, 17]));
    }
}
