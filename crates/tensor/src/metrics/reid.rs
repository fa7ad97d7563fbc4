//! Re-identification (Market-1501 protocol): retrieval of gallery images of the query's
//! identity, with gallery images of the same identity taken by the query's camera excluded
//! (they are "junk": trivially easy matches). Reports mAP and rank-1 like retrieval.

use super::error::MetricsError;
use super::{retrieval, EmbeddingSet, Exclusion, RetrievalResult};

/// Re-identification results: retrieval metrics under the same-camera exclusion.
pub type ReidResult = RetrievalResult;

/// Evaluates `query` against `gallery` under the re-identification protocol. `self_match`
/// additionally excludes each query from its own gallery (same images on both sides).
pub fn reid(
    query: &EmbeddingSet,
    gallery: &EmbeddingSet,
    ks: &[usize],
    self_match: bool,
    rows_per_block: usize,
) -> Result<ReidResult, MetricsError> {
    if !query.has_cameras() || !gallery.has_cameras() {
        return Err(MetricsError::Unsupported(
            "re-identification needs the camera of every image (cameras = -1 in the embeddings); \
             use a data set with camera ids (Market-1501) or the retrieval protocol"
                .into(),
        ));
    }
    retrieval(
        query,
        gallery,
        ks,
        Exclusion {
            self_match,
            same_camera: true,
        },
        rows_per_block,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_camera_matches_do_not_count() {
        // Query: label 1, camera 0. Gallery: the same person on camera 0 (best score, junk),
        // another person (second), the same person on camera 1 (third).
        let q = EmbeddingSet::new(vec![1.0], 1, vec![1], Some(vec![0]));
        let g = EmbeddingSet::new(vec![0.9, 0.8, 0.7], 1, vec![1, 2, 1], Some(vec![0, 0, 1]));
        let r = reid(&q, &g, &[1], false, 8).unwrap();
        assert_eq!(
            r.recall[&1], 0.0,
            "the junk match is removed, the other person is first"
        );
        assert!((r.map_noninterp - 0.5).abs() < 1e-12);
    }

    #[test]
    fn unknown_cameras_are_an_error() {
        let q = EmbeddingSet::new(vec![1.0], 1, vec![1], None);
        assert!(matches!(
            reid(&q, &q, &[1], false, 8),
            Err(MetricsError::Unsupported(_))
        ));
    }
}
