//! A set of embeddings with their identity labels and cameras, as the `embed` stage writes it.
//!
//! The file format is the agreed `embeddings.safetensors`: `embeddings` f32 [N, D],
//! `labels` i64 [N], `cameras` i64 [N] (-1 where unknown). Kept as plain vectors so metric code
//! and brute-force test references read it without libtorch; [`crate::metrics::scores`] moves
//! blocks into libtorch for the matrix products.

use std::path::Path;

use tch::{Kind, Tensor};

use super::MetricsError;

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
        }
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

    /// Whether `other` describes the same images in the same order, as far as the file can
    /// tell: the same count, labels and cameras. Two models embedding one split partition
    /// give such a pair; a query is then excluded from its own database.
    pub fn same_items(&self, other: &EmbeddingSet) -> bool {
        self.labels == other.labels && self.cameras == other.cameras
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
        Ok(EmbeddingSet {
            data,
            dim,
            labels,
            cameras,
        })
    }

    /// Writes an `embeddings.safetensors` file.
    pub fn write(&self, path: &Path) -> Result<(), MetricsError> {
        let n = self.len() as i64;
        let emb = Tensor::from_slice(&self.data).view([n, self.dim as i64]);
        let labels = Tensor::from_slice(&self.labels);
        let cameras = Tensor::from_slice(&self.cameras);
        Tensor::write_safetensors(
            &[
                ("embeddings", &emb),
                ("labels", &labels),
                ("cameras", &cameras),
            ],
            path,
        )?;
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
