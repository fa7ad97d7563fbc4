//! The decision threshold for a target false-positive rate (FAR in verification, FPIR in
//! open-set identification), computed from the largest negative scores only.
//!
//! A pair (or probe) is accepted when its score is strictly above the threshold t. With N
//! negatives and a target rate f, at most k = floor(f N) negatives may be accepted; the
//! smallest threshold that achieves it is the (k+1)-th largest negative score: every negative
//! tied with it is rejected, so ties at the threshold never push the rate above the target
//! (the achieved rate can be below it). When f N < 1 the target cannot be measured with N
//! negatives: the threshold is then the largest negative (rate 0) and the point is marked
//! unresolvable, so stages report it as such instead of as a number.
//!
//! Only the k+1 largest negatives are kept ([`NegativeTail`]), so billions of impostor pairs
//! fit in memory.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A threshold and the rate it achieves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OperatingPoint {
    /// The target rate.
    pub target: f64,
    /// Scores strictly above this are accepted (`-inf`: everything is).
    pub threshold: f32,
    /// The achieved rate: accepted negatives / negatives (at most the target when resolvable).
    pub achieved: f64,
    /// Whether target x negatives >= 1, i.e. the target is measurable with this many negatives.
    pub resolvable: bool,
    /// The number of negatives.
    pub negatives: usize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Score(f32);
impl Eq for Score {}
impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Score {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Streams negative scores, keeping only the ones that can decide the threshold.
#[derive(Debug)]
pub struct NegativeTail {
    target: f64,
    total: usize,
    allowed: usize,
    seen: usize,
    heap: BinaryHeap<Reverse<Score>>,
}

impl NegativeTail {
    /// A tail for `total` negatives (known in advance) and a target rate.
    pub fn new(total: usize, target: f64) -> Self {
        // A small tolerance so 1e-2 x 100 counts as 1, not 0.99999.
        let allowed = ((target * total as f64) * (1.0 + 1e-9)).floor() as usize;
        NegativeTail {
            target,
            total,
            allowed,
            seen: 0,
            heap: BinaryHeap::new(),
        }
    }

    /// Adds one negative score.
    #[inline]
    pub fn push(&mut self, score: f32) {
        let score = score + 0.0; // -0.0 and +0.0 are one score
        self.seen += 1;
        if self.allowed >= self.total {
            return;
        }
        let keep = self.allowed + 1;
        if self.heap.len() < keep {
            self.heap.push(Reverse(Score(score)));
        } else if self
            .heap
            .peek()
            .is_some_and(|Reverse(min)| score.total_cmp(&min.0).is_gt())
        {
            self.heap.pop();
            self.heap.push(Reverse(Score(score)));
        }
    }

    /// The operating point.
    ///
    /// # Panics
    /// When the number of pushed scores differs from the total given to [`NegativeTail::new`]
    /// (a programming error).
    pub fn finish(self) -> OperatingPoint {
        assert_eq!(
            self.seen, self.total,
            "NegativeTail: pushed a different number of negatives"
        );
        let resolvable = self.allowed >= 1;
        if self.allowed >= self.total {
            return OperatingPoint {
                target: self.target,
                threshold: f32::NEG_INFINITY,
                achieved: 1.0,
                resolvable,
                negatives: self.total,
            };
        }
        // The heap holds the allowed + 1 largest negatives; its minimum is the threshold.
        let kept: Vec<f32> = self.heap.into_iter().map(|Reverse(Score(s))| s).collect();
        let threshold = kept.iter().copied().fold(f32::INFINITY, f32::min);
        let accepted = kept.iter().filter(|&&s| s > threshold).count();
        OperatingPoint {
            target: self.target,
            threshold,
            achieved: accepted as f64 / self.total as f64,
            resolvable,
            negatives: self.total,
        }
    }
}

/// The operating point of `negatives` at a target rate.
pub fn operating_point(negatives: &[f32], target: f64) -> OperatingPoint {
    let mut tail = NegativeTail::new(negatives.len(), target);
    negatives.iter().for_each(|&s| tail.push(s));
    tail.finish()
}

/// The share of `positives` strictly above `threshold` (0 when there are none).
pub fn accept_rate(positives: impl IntoIterator<Item = f32>, threshold: f32) -> f64 {
    let (mut n, mut hit) = (0usize, 0usize);
    for s in positives {
        n += 1;
        hit += usize::from(s > threshold);
    }
    if n == 0 {
        0.0
    } else {
        hit as f64 / n as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_worked_threshold_with_a_tie() {
        // 10 negatives, target 0.2: at most 2 may pass. Sorted: .9 .8 .8 .7 ...; the 3rd
        // largest is .8, so t = .8 and only .9 passes (the tie at .8 is rejected): rate .1.
        let neg = [0.1, 0.8, 0.2, 0.9, 0.8, 0.7, 0.3, 0.0, 0.4, 0.5];
        let p = operating_point(&neg, 0.2);
        assert_eq!(p.threshold, 0.8);
        assert!((p.achieved - 0.1).abs() < 1e-12);
        assert!(p.resolvable);
    }

    #[test]
    fn a_target_below_one_over_n_is_unresolvable() {
        let neg = [0.1, 0.5, 0.3];
        let p = operating_point(&neg, 0.1);
        assert!(!p.resolvable);
        assert_eq!(p.threshold, 0.5, "nothing may pass: the largest negative");
        assert_eq!(p.achieved, 0.0);
    }

    #[test]
    fn a_target_of_one_accepts_everything() {
        let p = operating_point(&[0.1, 0.2], 1.0);
        assert_eq!(p.threshold, f32::NEG_INFINITY);
        assert_eq!(p.achieved, 1.0);
    }

    #[test]
    fn exact_products_count_as_whole_negatives() {
        // 0.29 x 100 is 28.999999999999996 in floating point; 29 negatives may pass.
        let neg: Vec<f32> = (0..100).map(|i| i as f32).collect();
        let p = operating_point(&neg, 0.29);
        assert_eq!(p.threshold, 70.0);
        assert!((p.achieved - 0.29).abs() < 1e-12);
    }
}
