//! Where a query's positives land in its ranking, without sorting the whole database.
//!
//! Items are ordered by score, highest first; equal scores by database index, lowest first
//! (deterministic ties). Excluded items are removed before ranking. Every retrieval metric
//! (AP of both kinds, R@k) depends only on the 0-based ranks of the positives, and those come
//! from sorting the R positives and, for each negative, a binary search for how many positives
//! precede it: O(N log R) per query instead of O(N log N).

use std::cmp::Ordering;

/// Orders scores totally, with
/// -0.0 equal to +0.0, so a tie stays a tie whichever way a matrix product rounded its sign.
#[inline]
fn cmp_scores(a: f32, b: f32) -> Ordering {
    (a + 0.0).total_cmp(&(b + 0.0))
}

/// Whether item `(score_a, index_a)` is ranked before `(score_b, index_b)`.
#[inline]
pub fn precedes(score_a: f32, index_a: usize, score_b: f32, index_b: usize) -> bool {
    match cmp_scores(score_a, score_b) {
        Ordering::Greater => true,
        Ordering::Less => false,
        Ordering::Equal => index_a < index_b,
    }
}

/// The role of a database item for one query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Same identity: a correct match.
    Positive,
    /// Another identity.
    Negative,
    /// Removed from the ranking.
    Excluded,
}

/// The 0-based ranks (excluded items removed) of every positive in one query's score row,
/// ascending. `role(j)` classifies database item `j`. `scratch` is reused between calls.
pub fn positive_ranks(
    scores: &[f32],
    role: impl Fn(usize) -> Role,
    scratch: &mut Scratch,
) -> Vec<usize> {
    let Scratch {
        positives,
        negatives_before,
    } = scratch;
    positives.clear();
    for (j, &s) in scores.iter().enumerate() {
        if role(j) == Role::Positive {
            positives.push((s, j));
        }
    }
    if positives.is_empty() {
        return Vec::new();
    }
    positives.sort_unstable_by(|a, b| cmp_scores(b.0, a.0).then(a.1.cmp(&b.1)));
    negatives_before.clear();
    negatives_before.resize(positives.len() + 1, 0);
    for (j, &s) in scores.iter().enumerate() {
        if role(j) == Role::Negative {
            // How many positives come before this negative.
            let k = positives.partition_point(|&(ps, pj)| precedes(ps, pj, s, j));
            negatives_before[k] += 1;
        }
    }
    let mut ranks = Vec::with_capacity(positives.len());
    let mut negatives = 0;
    for (position, &count) in negatives_before.iter().take(positives.len()).enumerate() {
        negatives += count;
        ranks.push(position + negatives);
    }
    ranks
}

/// Buffers reused across queries by [`positive_ranks`].
#[derive(Debug, Default)]
pub struct Scratch {
    positives: Vec<(f32, usize)>,
    negatives_before: Vec<usize>,
}

/// The best-ranked item among those `keep(j)` accepts: `(index, score)`, ties to the lowest
/// index; `None` when nothing is kept.
pub fn top1(scores: &[f32], keep: impl Fn(usize) -> bool) -> Option<(usize, f32)> {
    let mut best: Option<(usize, f32)> = None;
    for (j, &s) in scores.iter().enumerate() {
        if keep(j) && best.is_none_or(|(bj, bs)| precedes(s, j, bs, bj)) {
            best = Some((j, s));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_force(scores: &[f32], roles: &[Role]) -> Vec<usize> {
        let mut order: Vec<usize> = (0..scores.len())
            .filter(|&j| roles[j] != Role::Excluded)
            .collect();
        order.sort_by(|&a, &b| scores[b].partial_cmp(&scores[a]).unwrap().then(a.cmp(&b)));
        order
            .iter()
            .enumerate()
            .filter(|(_, &j)| roles[j] == Role::Positive)
            .map(|(r, _)| r)
            .collect()
    }

    #[test]
    fn hand_worked_ranking_with_a_tie_and_an_excluded_item() {
        use Role::*;
        // Order: j=1 (0.9, excluded), j=0 (0.8, P), j=3 (0.5, N), j=2 (0.5, P) tie -> index 2
        // first, j=4 (0.1, P).
        let scores = [0.8, 0.9, 0.5, 0.5, 0.1];
        let roles = [Positive, Excluded, Positive, Negative, Positive];
        let ranks = positive_ranks(&scores, |j| roles[j], &mut Scratch::default());
        assert_eq!(ranks, vec![0, 1, 3]);
    }

    #[test]
    fn matches_a_full_sort_on_random_rows_with_many_ties() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut scratch = Scratch::default();
        for _ in 0..300 {
            let n = rng.random_range(1..40);
            let scores: Vec<f32> = (0..n)
                .map(|_| rng.random_range(0..5) as f32 * 0.25)
                .collect();
            let roles: Vec<Role> = (0..n)
                .map(|_| match rng.random_range(0..5) {
                    0 => Role::Excluded,
                    1 | 2 => Role::Positive,
                    _ => Role::Negative,
                })
                .collect();
            assert_eq!(
                positive_ranks(&scores, |j| roles[j], &mut scratch),
                brute_force(&scores, &roles)
            );
        }
    }

    #[test]
    fn top1_breaks_ties_by_index_and_skips_dropped_items() {
        let scores = [0.3, 0.7, 0.7, 0.9];
        assert_eq!(top1(&scores, |j| j != 3), Some((1, 0.7)));
        assert_eq!(top1(&scores, |_| false), None);
    }
}
