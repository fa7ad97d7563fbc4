//! A set of embeddings with their identity labels and cameras, as the `embed` stage writes it.
//!
//! The file format is the agreed `embeddings.safetensors`: `embeddings` f32 [N, D],
//! `labels` i64 [N], `cameras` i64 [N] (-1 where unknown) and, where the images are known,
//! `items` i64 [N]: one id per image ([`item_id`]). Kept as plain vectors so metric code and
//! brute-force test references read it without libtorch; [`crate::metrics::scores`] moves
//! blocks into libtorch for the matrix products.
//!
//! Item ids are what decides that two sets are the same images (so a query is excluded from
//! its own database). Labels and cameras cannot: a query and a gallery partition with the
//! same label sequence are different images, and treating them as one drops a genuine match.

use std::path::Path;

use tch::{Kind, Tensor};

use super::error::MetricsError;

/// Embeddings (row-major, `len() x dim`), labels and cameras of one image set.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingSet {
    /// Row-major `[N, D]` values.
    pub data: Vec<f32>,
    /// D, the embedding size.
    pub dim: usize,
    /// Identity (class) label of each row.
    pub labels: Vec<i64>,
    /// Camera of each row, -1 where unknown.
    pub cameras: Vec<i64>,
    /// The image of each row ([`item_id`]), where the file records it.
    pub items: Option<Vec<i64>>,
}

/// The id of one image: the first 8 bytes of blake3 over the data set's identity (`scope`:
/// its content fingerprint, or its generator's parameters) and the image's id in the split
/// manifest. Equal for the same image embedded by any model, at any resolution.
pub fn item_id(scope: &str, id: &str) -> i64 {
    let mut hasher = blake3::Hasher::new();
    hasher.update(scope.as_bytes());
    hasher.update(&[0]);
    hasher.update(id.as_bytes());
    let bytes = hasher.finalize();
    i64::from_le_bytes(bytes.as_bytes()[..8].try_into().expect("8 bytes"))
}

impl EmbeddingSet {
    /// A set from its parts; cameras default to unknown (-1).
    ///
    /// # Panics
    /// When the lengths disagree (a programming error, never a user's).
    pub fn new(data: Vec<f32>, dim: usize, labels: Vec<i64>, cameras: Option<Vec<i64>>) -> Self {
        let n = labels.len();
        assert_eq!(
            data.len(),
            n * dim,
            "embedding data is not labels.len() x dim"
        );
        let cameras = cameras.unwrap_or_else(|| vec![-1; n]);
        assert_eq!(cameras.len(), n, "one camera per label");
        EmbeddingSet {
            data,
            dim,
            labels,
            cameras,
            items: None,
        }
    }

    /// The same set with the image id of each row.
    ///
    /// # Panics
    /// When the count differs from the rows' (a programming error, never a user's).
    pub fn with_items(mut self, items: Vec<i64>) -> Self {
        assert_eq!(items.len(), self.len(), "one item id per row");
        self.items = Some(items);
        self
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }

    /// Whether every row's camera is known.
    pub fn has_cameras(&self) -> bool {
        self.cameras.iter().all(|&c| c >= 0)
    }

    /// Whether `other` holds the same images in the same order: both record item ids and they
    /// are equal. Two models embedding one split partition give such a pair; a query is then
    /// excluded from its own database. Without item ids on both sides this is false, whatever
    /// the labels say (see [`Self::looks_like`]).
    pub fn same_items(&self, other: &EmbeddingSet) -> bool {
        match (&self.items, &other.items) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }

    /// Whether the sets have equal labels and cameras but no item ids to prove they are the
    /// same images: the case where a user must say so (`exclude_self = "always"`).
    pub fn looks_like(&self, other: &EmbeddingSet) -> bool {
        (self.items.is_none() || other.items.is_none())
            && self.labels == other.labels
            && self.cameras == other.cameras
    }

    /// The first `dim` components of every row, L2-normalised again (x / (||x|| + 1e-6)): how
    /// a BCT model with a larger embedding is compared with an old model of size `dim`.
    pub fn truncated(&self, dim: usize) -> EmbeddingSet {
        if dim >= self.dim {
            return self.clone();
        }
        let mut data = Vec::with_capacity(self.len() * dim);
        for i in 0..self.len() {
            let row = &self.row(i)[..dim];
            let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt() + 1e-6;
            data.extend(row.iter().map(|x| x / norm));
        }
        EmbeddingSet {
            data,
            dim,
            labels: self.labels.clone(),
            cameras: self.cameras.clone(),
            items: self.items.clone(),
        }
    }

    /// Reads an `embeddings.safetensors` file.
    pub fn read(path: &Path) -> Result<Self, MetricsError> {
        let bad = |message: String| MetricsError::BadFile {
            path: path.display().to_string(),
            message,
        };
        let tensors = Tensor::read_safetensors(path).map_err(|e| bad(e.to_string()))?;
        let find = |name: &str| {
            tensors.iter().find(|(n, _)| n == name).map(|(_, t)| t).ok_or_else(|| {
                bad(format!(
                    "no tensor `{name}` (found: {}); embeddings files hold `embeddings`, `labels`, `cameras`",
                    tensors.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
                ))
            })
        };
        let emb = find("embeddings")?;
        let size = emb.size();
        if size.len() != 2 {
            return Err(bad(format!(
                "`embeddings` has shape {size:?}; expected [N, D]"
            )));
        }
        let (n, dim) = (size[0] as usize, size[1] as usize);
        let data: Vec<f32> = Vec::try_from(&emb.to_kind(Kind::Float).contiguous().view(-1))
            .map_err(|e: tch::TchError| bad(e.to_string()))?;
        let labels = find("labels")?;
        if labels.size() != [n as i64] {
            return Err(bad(format!(
                "`labels` has shape {:?}; expected [{n}]",
                labels.size()
            )));
        }
        let labels: Vec<i64> = Vec::try_from(&labels.to_kind(Kind::Int64))
            .map_err(|e: tch::TchError| bad(e.to_string()))?;
        let cameras = match tensors.iter().find(|(name, _)| name == "cameras") {
            Some((_, t)) if t.size() == [n as i64] => Vec::try_from(&t.to_kind(Kind::Int64))
                .map_err(|e: tch::TchError| bad(e.to_string()))?,
            Some((_, t)) => {
                return Err(bad(format!(
                    "`cameras` has shape {:?}; expected [{n}]",
                    t.size()
                )))
            }
            None => vec![-1; n],
        };
        let items = match tensors.iter().find(|(name, _)| name == "items") {
            Some((_, t)) if t.size() == [n as i64] => Some(
                Vec::try_from(&t.to_kind(Kind::Int64))
                    .map_err(|e: tch::TchError| bad(e.to_string()))?,
            ),
            Some((_, t)) => {
                return Err(bad(format!(
                    "`items` has shape {:?}; expected [{n}]",
                    t.size()
                )))
            }
            None => None,
        };
        Ok(EmbeddingSet {
            data,
            dim,
            labels,
            cameras,
            items,
        })
    }

    /// Writes an `embeddings.safetensors` file.
    pub fn write(&self, path: &Path) -> Result<(), MetricsError> {
        let n = self.len() as i64;
        let emb = Tensor::from_slice(&self.data).view([n, self.dim as i64]);
        let labels = Tensor::from_slice(&self.labels);
        let cameras = Tensor::from_slice(&self.cameras);
        let mut tensors = vec![
            ("embeddings", emb),
            ("labels", labels),
            ("cameras", cameras),
        ];
        if let Some(items) = &self.items {
            tensors.push(("items", Tensor::from_slice(items)));
        }
        Tensor::write_safetensors(&tensors, path)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("embeddings.safetensors");
        let set = EmbeddingSet::new(vec![0.6, 0.8, 1.0, 0.0], 2, vec![3, 4], Some(vec![0, -1]));
        set.write(&path).unwrap();
        assert_eq!(EmbeddingSet::read(&path).unwrap(), set);
    }

    #[test]
    fn item_ids_round_trip_and_decide_sameness_not_labels() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("embeddings.safetensors");
        let ids = |names: &[&str]| names.iter().map(|n| item_id("set", n)).collect::<Vec<_>>();
        let query = EmbeddingSet::new(vec![1.0, 0.0], 1, vec![7, 8], None)
            .with_items(ids(&["q/a.jpg", "q/b.jpg"]));
        query.write(&path).unwrap();
        let read = EmbeddingSet::read(&path).unwrap();
        assert_eq!(read, query);
        // The same label sequence over other images is not the same images.
        let gallery = EmbeddingSet::new(vec![0.5, 0.5], 1, vec![7, 8], None)
            .with_items(ids(&["g/a.jpg", "g/b.jpg"]));
        assert!(!query.same_items(&gallery));
        assert!(!query.looks_like(&gallery), "ids prove they differ");
        // The same images embedded by another model are.
        let other_model = EmbeddingSet::new(vec![0.1, 0.2], 1, vec![7, 8], None)
            .with_items(ids(&["q/a.jpg", "q/b.jpg"]));
        assert!(query.same_items(&other_model));
        // Without ids, equal labels prove nothing; the caller is told to decide.
        let bare = EmbeddingSet::new(vec![0.1, 0.2], 1, vec![7, 8], None);
        assert!(!query.same_items(&bare) && query.looks_like(&bare));
        assert_ne!(item_id("one", "x.jpg"), item_id("two", "x.jpg"));
    }

    #[test]
    fn truncation_keeps_the_first_components_renormalised() {
        let set = EmbeddingSet::new(vec![0.6, 0.0, 0.8, 0.0, 0.0, 1.0], 3, vec![1, 2], None);
        let t = set.truncated(2);
        assert_eq!(t.dim, 2);
        assert!((t.row(0)[0] - 1.0).abs() < 1e-5 && t.row(0)[1] == 0.0);
        assert_eq!(t.labels, vec![1, 2]);
    }

    #[test]
    fn a_file_without_labels_is_rejected_with_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.safetensors");
        let emb = Tensor::from_slice(&[1.0f32, 0.0]).view([1, 2]);
        Tensor::write_safetensors(&[("embeddings", &emb)], &path).unwrap();
        let err = EmbeddingSet::read(&path).unwrap_err().to_string();
        assert!(err.contains("no tensor `labels`"), "{err}");
    }
}
