//! 1:1 verification: TAR at a FAR.
//!
//! Every (query template, database template) pair is scored by the cosine of the templates'
//! mean embeddings ([`Templates`]); pairs of one identity are genuine, the others impostors.
//! The threshold is set on impostor scores so that FAR <= target ([`super::operating_point`]);
//! TAR is the share of genuine pairs above it. Queries and database come from two models in the
//! compatibility setting (new-model queries against old-model gallery templates).
//!
//! Memory stays bounded: scores are computed a block of query templates at a time, genuine
//! scores are kept (one per genuine pair), impostors only as far as they decide the threshold.

use super::error::MetricsError;
use super::operating_point::{accept_rate, NegativeTail};
use super::scores::for_each_block;
use super::{EmbeddingSet, Exclusion, Templates};

/// TAR at a FAR, with what it was computed from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TarAtFar {
    /// True accept rate at the threshold.
    pub tar: f64,
    /// The FAR asked for.
    pub far_target: f64,
    /// The FAR achieved (at most the target when resolvable).
    pub far: f64,
    /// Pairs scoring strictly above it are accepted.
    pub threshold: f32,
    /// Whether target x impostor pairs >= 1; when false the FAR cannot be measured with this
    /// many impostor pairs and `tar` is the TAR at FAR 0, not at the target.
    pub resolvable: bool,
    /// The number of genuine pairs.
    pub genuine: usize,
    /// The number of impostor pairs.
    pub impostor: usize,
}

/// TAR at `far` from explicit genuine and impostor scores.
pub fn tar_at_far_from_scores(
    genuine: &[f32],
    impostor: &[f32],
    far: f64,
) -> Result<TarAtFar, MetricsError> {
    if genuine.is_empty() || impostor.is_empty() {
        return Err(MetricsError::Unsupported(format!(
            "verification needs genuine and impostor pairs; got {} genuine and {} impostor",
            genuine.len(),
            impostor.len()
        )));
    }
    let mut tail = NegativeTail::new(impostor.len(), far);
    impostor.iter().for_each(|&s| tail.push(s));
    let point = tail.finish();
    Ok(TarAtFar {
        tar: accept_rate(genuine.iter().copied(), point.threshold),
        far_target: far,
        far: point.achieved,
        threshold: point.threshold,
        resolvable: point.resolvable,
        genuine: genuine.len(),
        impostor: impostor.len(),
    })
}

/// TAR at `far` over explicit image pairs `(query row, database row, genuine)`: a split's
/// verification pairs (`pairs_per_class`), scored by the cosine of the two rows (rows are
/// L2-normalised, so the dot product). Every pair is scored once; nothing else is.
pub fn tar_at_far_pairs(
    query: &EmbeddingSet,
    db: &EmbeddingSet,
    pairs: &[(usize, usize, bool)],
    far: f64,
) -> Result<TarAtFar, MetricsError> {
    let mut genuine = Vec::new();
    let mut impostor = Vec::new();
    for &(a, b, is_genuine) in pairs {
        if a >= query.len() || b >= db.len() {
            return Err(MetricsError::Unsupported(format!(
                "verification pair ({a}, {b}) is outside {} query and {} database rows",
                query.len(),
                db.len()
            )));
        }
        let score: f32 = query.row(a).iter().zip(db.row(b)).map(|(x, y)| x * y).sum();
        if is_genuine {
            genuine.push(score);
        } else {
            impostor.push(score);
        }
    }
    tar_at_far_from_scores(&genuine, &impostor, far)
}

/// TAR at `far` of query templates against database templates of `template_size` images per
/// identity (1: single images; 0: one template per identity). With `exclusion.self_match`
/// (query and database are the same images) a template is not paired with itself.
pub fn tar_at_far(
    query: &EmbeddingSet,
    db: &EmbeddingSet,
    far: f64,
    template_size: usize,
    exclusion: Exclusion,
    rows_per_block: usize,
) -> Result<TarAtFar, MetricsError> {
    let q = Templates::build(query, template_size).set;
    let d = Templates::build(db, template_size).set;
    // Impostor pairs are every pair of different identities (exclusions only remove pairs of
    // one identity), so their number is known before scoring.
    let mut per_label = std::collections::HashMap::<i64, usize>::new();
    d.labels
        .iter()
        .for_each(|&l| *per_label.entry(l).or_default() += 1);
    let impostors: usize = q
        .labels
        .iter()
        .map(|l| d.len() - per_label.get(l).copied().unwrap_or(0))
        .sum();
    let mut tail = NegativeTail::new(impostors, far);
    let mut genuine = Vec::new();
    let n = d.len();
    for_each_block(&q, &d, rows_per_block, |first, scores, rows| {
        for r in 0..rows {
            let i = first + r;
            for (j, &s) in scores[r * n..(r + 1) * n].iter().enumerate() {
                if q.labels[i] != d.labels[j] {
                    tail.push(s);
                } else if !exclusion.excludes(i, q.labels[i], -1, j, d.labels[j], -1) {
                    genuine.push(s);
                }
            }
        }
        Ok(())
    })?;
    if genuine.is_empty() || impostors == 0 {
        return Err(MetricsError::Unsupported(format!(
            "verification needs genuine and impostor pairs; got {} genuine and {impostors} impostor \
             (templates of {template_size} images, {} query and {} database templates)",
            genuine.len(),
            q.len(),
            d.len()
        )));
    }
    let point = tail.finish();
    Ok(TarAtFar {
        tar: accept_rate(genuine.iter().copied(), point.threshold),
        far_target: far,
        far: point.achieved,
        threshold: point.threshold,
        resolvable: point.resolvable,
        genuine: genuine.len(),
        impostor: impostors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_pairs_score_only_those_pairs() {
        // Rows 0 and 1 share a label but the only genuine pair given is (0, 2): the (0, 1)
        // match that all-pairs scoring would count is not part of the protocol.
        let set = EmbeddingSet::new(vec![1.0, 1.0, -1.0, 1.0], 1, vec![0, 0, 0, 1], None);
        let pairs = [(0, 2, true), (1, 3, false)];
        let t = tar_at_far_pairs(&set, &set, &pairs, 1e-3).unwrap();
        assert_eq!((t.genuine, t.impostor), (1, 1));
        assert!(!t.resolvable);
        assert_eq!(
            t.tar, 0.0,
            "genuine score -1 is not above the impostor score 1"
        );
        let err = tar_at_far_pairs(&set, &set, &[(0, 9, true)], 1.0).unwrap_err();
        assert!(err.to_string().contains("outside"), "{err}");
    }
    use rand::{Rng, SeedableRng};

    #[test]
    fn hand_worked_tar_at_far() {
        // 5 impostors, FAR 0.2: one may pass; the 2nd largest (0.6) is the threshold.
        // Genuine above 0.6: 0.9, 0.7 (0.6 itself is a tie at the threshold: rejected).
        let t =
            tar_at_far_from_scores(&[0.9, 0.6, 0.7, 0.2], &[0.1, 0.6, 0.8, 0.3, 0.5], 0.2).unwrap();
        assert_eq!(t.threshold, 0.6);
        assert!((t.tar - 0.5).abs() < 1e-12);
        assert!((t.far - 0.2).abs() < 1e-12);
        assert!(t.resolvable);
    }

    #[test]
    fn far_below_one_over_the_impostor_count_is_reported_unresolvable() {
        let t = tar_at_far_from_scores(&[0.9], &[0.1, 0.2], 1e-4).unwrap();
        assert!(!t.resolvable);
        assert_eq!(t.far, 0.0);
    }

    /// Every candidate threshold tried: the best TAR among thresholds with FAR <= target.
    fn brute_force(genuine: &[f32], impostor: &[f32], far: f64) -> f64 {
        let mut candidates: Vec<f32> = genuine.iter().chain(impostor).copied().collect();
        candidates.push(f32::NEG_INFINITY);
        let mut best = 0.0;
        for &t in &candidates {
            let fa = impostor.iter().filter(|&&s| s > t).count() as f64 / impostor.len() as f64;
            if fa <= far + 1e-12 {
                let ta = genuine.iter().filter(|&&s| s > t).count() as f64 / genuine.len() as f64;
                if ta > best {
                    best = ta;
                }
            }
        }
        best
    }

    #[test]
    fn matches_brute_force_on_random_scores_with_ties() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for _ in 0..200 {
            let g: Vec<f32> = (0..rng.random_range(1..30))
                .map(|_| rng.random_range(0..8) as f32)
                .collect();
            let i: Vec<f32> = (0..rng.random_range(1..60))
                .map(|_| rng.random_range(0..8) as f32)
                .collect();
            let far = [0.0, 0.01, 0.05, 0.1, 0.3, 1.0][rng.random_range(0..6)];
            let t = tar_at_far_from_scores(&g, &i, far).unwrap();
            assert!(
                (t.tar - brute_force(&g, &i, far)).abs() < 1e-12,
                "{g:?} {i:?} {far}"
            );
            assert!(t.far <= far + 1e-12);
        }
    }

    #[test]
    fn embedding_pairs_match_explicit_pair_scores() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let make = |rng: &mut rand_chacha::ChaCha8Rng, n: usize| {
            let data = (0..n * 2)
                .map(|_| rng.random_range(-3..=3) as f32)
                .collect();
            EmbeddingSet::new(
                data,
                2,
                (0..n).map(|_| rng.random_range(0..4)).collect(),
                None,
            )
        };
        let q = make(&mut rng, 9);
        let db = make(&mut rng, 11);
        let (mut g, mut im) = (Vec::new(), Vec::new());
        for i in 0..q.len() {
            for j in 0..db.len() {
                let s: f32 = q.row(i).iter().zip(db.row(j)).map(|(a, b)| a * b).sum();
                if q.labels[i] == db.labels[j] {
                    g.push(s)
                } else {
                    im.push(s)
                }
            }
        }
        let expected = tar_at_far_from_scores(&g, &im, 0.1).unwrap();
        for rows in [1, 3, 20] {
            let got = tar_at_far(&q, &db, 0.1, 1, Exclusion::default(), rows).unwrap();
            assert_eq!(got, expected);
        }
    }

    #[test]
    fn a_template_is_not_paired_with_itself() {
        // Two identities, two images each, templates of 2: each side has 2 templates; with
        // self-exclusion the only genuine pairs would be a template with itself.
        let set = EmbeddingSet::new(
            vec![1., 0., 1., 0., 0., 1., 0., 1.],
            2,
            vec![0, 0, 1, 1],
            None,
        );
        let ex = Exclusion {
            self_match: true,
            same_camera: false,
        };
        assert!(matches!(
            tar_at_far(&set, &set, 0.5, 2, ex, 4),
            Err(MetricsError::Unsupported(_))
        ));
        let t = tar_at_far(&set, &set, 0.5, 1, ex, 4).unwrap();
        assert_eq!(
            (t.genuine, t.impostor),
            (4, 8),
            "ordered pairs (0,1) (1,0) (2,3) (3,2)"
        );
    }
}
