//! Retrieval: mAP (trapezoidal and standard AP) and R@k of queries against a database.
//!
//! For the j-th positive (0-based) at rank r_j (0-based, excluded items removed) of a query
//! with R positives:
//! - `map` (the revisited-Oxford evaluation used by the resolution-asymmetry reference code,
//!   trapezoidal rule): AP = sum_j [ (r_j == 0 ? 1 : j / r_j) + (j + 1) / (r_j + 1) ] / (2 R);
//! - `map_noninterp` (standard non-interpolated AP): AP = (1/R) sum_j (j + 1) / (r_j + 1);
//! - R@k: 1 when the first positive is among the top k (r_0 < k).
//!
//! Queries without a positive are left out of every mean and counted in `no_positive`. Each
//! mean is the sum of the queries' values in query order divided by their count, and the
//! values themselves are returned ([`QueryScore`]), so a report can resample the queries and
//! recompute a mean exactly as it was computed here.

use std::collections::BTreeMap;

use rayon::prelude::*;

use super::error::MetricsError;
use super::ranking::{positive_ranks, Role, Scratch};
use super::scores::for_each_block;
use super::{EmbeddingSet, Exclusion};

/// Retrieval results averaged over the queries that have at least one positive.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrievalResult {
    /// Mean trapezoidal AP.
    pub map: f64,
    /// Mean standard AP.
    pub map_noninterp: f64,
    /// k -> R@k.
    pub recall: BTreeMap<usize, f64>,
    /// Queries that have at least one positive (the denominator of every mean).
    pub queries: usize,
    /// Queries without any positive in the database (after exclusions), left out.
    pub no_positive: usize,
    /// The scores of each query that has a positive, in query order: what every mean above
    /// averages (a report resamples them for a bootstrap interval).
    pub per_query: Vec<QueryScore>,
}

/// One query's share of the retrieval means.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueryScore {
    /// The query's row in the query embeddings.
    pub index: usize,
    /// Trapezoidal AP (the query's share of `map`).
    pub ap: f64,
    /// Standard AP (its share of `map_noninterp`).
    pub ap_noninterp: f64,
    /// The 0-based rank of its first positive: it is a hit at k when `first_rank < k`.
    pub first_rank: usize,
}

impl QueryScore {
    /// 1 when the first positive is among the top `k`, else 0 (the query's share of R@k).
    pub fn hit(&self, k: usize) -> f64 {
        f64::from(u8::from(self.first_rank < k))
    }
}

/// Trapezoidal AP from the ascending 0-based ranks of the positives.
pub fn average_precision_trapezoid(ranks: &[usize]) -> f64 {
    let r = ranks.len() as f64;
    let mut sum = 0.0;
    for (j, &rank) in ranks.iter().enumerate() {
        let before = if rank == 0 {
            1.0
        } else {
            j as f64 / rank as f64
        };
        let after = (j + 1) as f64 / (rank + 1) as f64;
        sum += before + after;
    }
    sum / (2.0 * r)
}

/// Standard (non-interpolated) AP from the ascending 0-based ranks of the positives.
pub fn average_precision(ranks: &[usize]) -> f64 {
    let sum: f64 = ranks
        .iter()
        .enumerate()
        .map(|(j, &r)| (j + 1) as f64 / (r + 1) as f64)
        .sum();
    sum / ranks.len() as f64
}

/// The mean of `values` as every retrieval metric is computed: summed in order, divided by
/// their count (1 when there are none). A report's bootstrap recomputes it the same way.
pub fn mean_in_order(values: impl Iterator<Item = f64>, count: usize) -> f64 {
    values.sum::<f64>() / count.max(1) as f64
}

/// Evaluates every query of `query` against `db`, `rows_per_block` queries at a time
/// ([`super::scores::block_rows`] sizes it from a memory budget), for R@k at every `ks`.
pub fn retrieval(
    query: &EmbeddingSet,
    db: &EmbeddingSet,
    ks: &[usize],
    exclusion: Exclusion,
    rows_per_block: usize,
) -> Result<RetrievalResult, MetricsError> {
    let mut scored: Vec<Option<QueryScore>> = Vec::with_capacity(query.len());
    for_each_block(query, db, rows_per_block, |first, scores, rows| {
        let n = db.len();
        let block: Vec<Option<QueryScore>> = (0..rows)
            .into_par_iter()
            .map_init(Scratch::default, |scratch, r| {
                let i = first + r;
                let (ql, qc) = (query.labels[i], query.cameras[i]);
                let role = |j: usize| {
                    if exclusion.excludes(i, ql, qc, j, db.labels[j], db.cameras[j]) {
                        Role::Excluded
                    } else if db.labels[j] == ql {
                        Role::Positive
                    } else {
                        Role::Negative
                    }
                };
                let ranks = positive_ranks(&scores[r * n..(r + 1) * n], role, scratch);
                (!ranks.is_empty()).then(|| QueryScore {
                    index: i,
                    ap: average_precision_trapezoid(&ranks),
                    ap_noninterp: average_precision(&ranks),
                    first_rank: ranks[0],
                })
            })
            .collect();
        scored.extend(block);
        Ok(())
    })?;
    let no_positive = scored.iter().filter(|s| s.is_none()).count();
    let per_query: Vec<QueryScore> = scored.into_iter().flatten().collect();
    Ok(means(per_query, ks, no_positive))
}

/// The means over the queries that have a positive, each summed in query order.
fn means(per_query: Vec<QueryScore>, ks: &[usize], no_positive: usize) -> RetrievalResult {
    let n = per_query.len();
    RetrievalResult {
        map: mean_in_order(per_query.iter().map(|q| q.ap), n),
        map_noninterp: mean_in_order(per_query.iter().map(|q| q.ap_noninterp), n),
        recall: ks
            .iter()
            .map(|&k| (k, mean_in_order(per_query.iter().map(|q| q.hit(k)), n)))
            .collect(),
        queries: n,
        no_positive,
        per_query,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn hand_worked_average_precisions() {
        // Positives at ranks 0 and 2 (R = 2):
        // trapezoid: [(1 + 1/1) + (1/2 + 2/3)] / 4 = (2 + 7/6) / 4 = 19/24
        // standard: (1/1 + 2/3) / 2 = 5/6
        assert!((average_precision_trapezoid(&[0, 2]) - 19.0 / 24.0).abs() < 1e-12);
        assert!((average_precision(&[0, 2]) - 5.0 / 6.0).abs() < 1e-12);
        // One positive at rank 3: trapezoid (0/3 + 1/4) / 2 = 1/8, standard 1/4.
        assert!((average_precision_trapezoid(&[3]) - 0.125).abs() < 1e-12);
        assert!((average_precision(&[3]) - 0.25).abs() < 1e-12);
        // Perfect ranking: both are 1.
        assert_eq!(average_precision_trapezoid(&[0, 1, 2]), 1.0);
        assert_eq!(average_precision(&[0, 1, 2]), 1.0);
    }

    #[test]
    fn hand_worked_retrieval_with_self_exclusion_and_a_lonely_query() {
        // 1-d embeddings; labels 0,0,1,2. Query 3 (label 2) has no positive once it is
        // excluded from its own database.
        let set = EmbeddingSet::new(vec![1.0, 0.9, 0.95, -1.0], 1, vec![0, 0, 1, 2], None);
        let ex = Exclusion {
            self_match: true,
            same_camera: false,
        };
        let res = retrieval(&set, &set, &[1, 2], ex, 1).unwrap();
        assert_eq!(
            res.no_positive, 2,
            "queries 2 and 3 have no other item of their class"
        );
        assert_eq!(res.queries, 2);
        // Query 0 scores the others 0.9 (j=1), 0.95 (j=2), -1 (j=3): order 2, 1, 3, so its
        // positive j=1 is at rank 1. Query 1 scores 0.9 (j=0), 0.855 (j=2), -0.9 (j=3): its
        // positive j=0 is at rank 0.
        // Trapezoid AP: q0 (0/1 + 1/2) / 2 = 0.25, q1 = 1: mean 0.625. Standard: 0.5, 1: 0.75.
        assert!((res.map - 0.625).abs() < 1e-9, "{res:?}");
        assert!((res.map_noninterp - 0.75).abs() < 1e-9);
        assert_eq!(res.recall[&1], 0.5);
        assert_eq!(res.recall[&2], 1.0);
    }

    /// Full similarity matrix, full sort per query: the reference the blocked code must match.
    fn brute_force(
        q: &EmbeddingSet,
        db: &EmbeddingSet,
        ks: &[usize],
        ex: Exclusion,
    ) -> RetrievalResult {
        let (mut map, mut map_noninterp, mut queries, mut none) = (0.0, 0.0, 0, 0);
        let mut hits = vec![0usize; ks.len()];
        for i in 0..q.len() {
            let score =
                |j: usize| -> f32 { q.row(i).iter().zip(db.row(j)).map(|(a, b)| a * b).sum() };
            let mut order: Vec<usize> = (0..db.len())
                .filter(|&j| {
                    !ex.excludes(i, q.labels[i], q.cameras[i], j, db.labels[j], db.cameras[j])
                })
                .collect();
            order.sort_by(|&a, &b| score(b).partial_cmp(&score(a)).unwrap().then(a.cmp(&b)));
            let ranks: Vec<usize> = order
                .iter()
                .enumerate()
                .filter(|(_, &j)| db.labels[j] == q.labels[i])
                .map(|(r, _)| r)
                .collect();
            if ranks.is_empty() {
                none += 1;
                continue;
            }
            queries += 1;
            // Written out independently of the functions under test.
            let r = ranks.len() as f64;
            let mut trap = 0.0;
            let mut std = 0.0;
            for (j, &rank) in ranks.iter().enumerate() {
                let prec_after = (j + 1) as f64 / (rank + 1) as f64;
                let prec_before = if rank == 0 {
                    1.0
                } else {
                    j as f64 / rank as f64
                };
                trap += (prec_before + prec_after) / 2.0;
                std += prec_after;
            }
            map += trap / r;
            map_noninterp += std / r;
            for (h, &k) in hits.iter_mut().zip(ks) {
                if order.iter().take(k).any(|&j| db.labels[j] == q.labels[i]) {
                    *h += 1;
                }
            }
        }
        let d = queries.max(1) as f64;
        RetrievalResult {
            map: map / d,
            map_noninterp: map_noninterp / d,
            recall: ks
                .iter()
                .zip(&hits)
                .map(|(&k, &h)| (k, h as f64 / d))
                .collect(),
            queries,
            no_positive: none,
            per_query: Vec::new(),
        }
    }

    /// Small-integer embeddings: dot products are exact in f32, so ties are real ties in both
    /// implementations.
    fn random_set(
        rng: &mut impl Rng,
        n: usize,
        dim: usize,
        classes: i64,
        cameras: i64,
    ) -> EmbeddingSet {
        let data = (0..n * dim)
            .map(|_| rng.random_range(-2..=2) as f32)
            .collect();
        let labels = (0..n).map(|_| rng.random_range(0..classes)).collect();
        let cams = (0..n).map(|_| rng.random_range(0..cameras)).collect();
        EmbeddingSet::new(data, dim, labels, Some(cams))
    }

    fn assert_close(a: &RetrievalResult, b: &RetrievalResult) {
        assert_eq!(a.queries, b.queries);
        assert_eq!(a.no_positive, b.no_positive);
        assert!((a.map - b.map).abs() < 1e-9, "{a:?} vs {b:?}");
        assert!(
            (a.map_noninterp - b.map_noninterp).abs() < 1e-9,
            "{a:?} vs {b:?}"
        );
        for (k, v) in &a.recall {
            assert!((v - b.recall[k]).abs() < 1e-12, "R@{k}: {a:?} vs {b:?}");
        }
    }

    /// The per-query scores of `a` give its means exactly (summed in query order), cover the
    /// queries that have a positive, and are in query order.
    fn assert_per_query_gives_the_means(a: &RetrievalResult) {
        let n = a.per_query.len();
        assert_eq!(n, a.queries);
        assert!(a.per_query.windows(2).all(|w| w[0].index < w[1].index));
        let sum = |f: &dyn Fn(&QueryScore) -> f64| a.per_query.iter().map(f).sum::<f64>();
        assert_eq!(a.map, sum(&|q| q.ap) / n.max(1) as f64);
        assert_eq!(a.map_noninterp, sum(&|q| q.ap_noninterp) / n.max(1) as f64);
        for (&k, &v) in &a.recall {
            assert_eq!(v, sum(&|q| q.hit(k)) / n.max(1) as f64, "R@{k}");
        }
    }

    #[test]
    fn matches_brute_force_across_block_sizes_ties_and_exclusions() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let ks = [1, 2, 5, 10];
        for trial in 0..12 {
            let db = random_set(&mut rng, 37, 3, 12, 3);
            let (q, self_match) = if trial % 2 == 0 {
                (db.clone(), true)
            } else {
                (random_set(&mut rng, 23, 3, 14, 3), false)
            };
            let ex = Exclusion {
                self_match,
                same_camera: trial % 3 == 0,
            };
            let reference = brute_force(&q, &db, &ks, ex);
            assert!(
                reference.no_positive > 0 || trial % 2 == 0,
                "the test covers lonely queries"
            );
            let whole = retrieval(&q, &db, &ks, ex, q.len()).unwrap();
            assert_per_query_gives_the_means(&whole);
            for rows in [1, 4, 7, q.len(), q.len() + 5] {
                let blocked = retrieval(&q, &db, &ks, ex, rows).unwrap();
                assert_close(&blocked, &reference);
                assert_eq!(
                    blocked, whole,
                    "block size {rows} changes nothing, to the bit"
                );
            }
        }
    }
}
