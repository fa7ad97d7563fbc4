//! Triplet loss with distance-weighted negative sampling (Wu et al. 2017), the teacher loss of
//! the resolution-asymmetry paper.
//!
//! Within a batch (several images per class): every same-class image is a positive of an
//! anchor; `negatives` negatives per anchor are drawn without replacement with probability
//! proportional to the inverse of the density of pairwise distances on the unit sphere, so
//! negatives are spread over all distances instead of only the hardest (which collapses
//! training) or the easiest (which teaches nothing):
//!
//! `d = clamp(sqrt(2 - 2 s), min 0.5)`,
//! `log q^-1(d) = (2 - n) log d - ((n - 3) / 2) log(1 - d^2 / 4)`, n = embedding size;
//! weight 0 for same-class images, then `+ 1e-6`, normalised.
//!
//! The loss of a triplet is `max(0, |a - p|^2 - |a - n|^2 + margin)` on squared Euclidean
//! distances; the batch loss is the mean over all (anchor, positive, negative) triplets. (The
//! reference code sums over anchor-positive pairs instead, a constant factor for a fixed batch
//! layout that Adam's step size does not see.) Sampling runs on detached embeddings with
//! libtorch's generator, so `tch::manual_seed` makes it reproducible.
//!
//! With negatives mined from a pool instead (`mining = "pool"`, [`super::mining_pool`]),
//! [`pool_triplet_loss`] takes each anchor's negatives as extra embeddings: the positives are
//! still the anchor's same-class images in the batch, and the same density weights
//! ([`log_inverse_density`]) chose the negatives.

use tch::{Kind, Tensor};

/// Floor of the sampling distances, as in the reference code.
pub const MIN_SAMPLING_DISTANCE: f64 = 0.5;

/// Added to every sampling weight before normalising.
pub const SAMPLING_FLOOR: f64 = 1e-6;

/// `log q(d)^-1` of every pair, from cosine similarities `sim` of unit vectors of size
/// `dim`: the log of the (unnormalised) sampling weight of a negative at that distance.
pub fn log_inverse_density(sim: &Tensor, dim: i64) -> Tensor {
    let n = dim as f64;
    let d = (sim * -2.0 + 2.0)
        .clamp_min(0.0)
        .sqrt()
        .clamp_min(MIN_SAMPLING_DISTANCE);
    d.log() * (2.0 - n)
        - (d.pow_tensor_scalar(2) * -0.25 + 1.0)
            .clamp_min(1e-12)
            .log()
            * ((n - 3.0) / 2.0)
}

/// Sampling probabilities `[B, B]` of negatives for every anchor (rows sum to 1).
pub fn negative_weights(emb: &Tensor, labels: &Tensor) -> Tensor {
    let emb = emb.detach();
    let log_q = log_inverse_density(&emb.matmul(&emb.tr()), emb.size()[1]);
    let same = same_class(labels);
    let masked = log_q.masked_fill(&same, f64::NEG_INFINITY);
    let row_max = masked.amax([1i64].as_slice(), true).clamp_min(-1e30);
    let w = (masked - row_max).exp().masked_fill(&same, 0.0) + SAMPLING_FLOOR;
    &w / w.sum_dim_intlist([1i64].as_slice(), true, Kind::Float)
}

fn same_class(labels: &Tensor) -> Tensor {
    labels.unsqueeze(1).eq_tensor(&labels.unsqueeze(0))
}

/// The triplet loss of a batch of L2-normalised embeddings `[B, D]` with labels (i64 `[B]`).
/// Anchors without a positive or a negative in the batch contribute nothing; a batch with no
/// valid triplet gives 0 (with a gradient of 0).
pub fn triplet_loss(emb: &Tensor, labels: &Tensor, margin: f64, negatives: i64) -> Tensor {
    let b = emb.size()[0];
    let k = negatives.clamp(1, (b - 1).max(1));
    let same = same_class(labels);
    let eye = Tensor::eye(b, (Kind::Bool, emb.device()));
    let positive = same.logical_and(&eye.logical_not());

    let neg_idx = tch::no_grad(|| negative_weights(emb, labels).multinomial(k, false));
    let neg_valid = same.gather(1, &neg_idx, false).logical_not();

    let d2 = squared_distances(emb);
    let d_an = d2.gather(1, &neg_idx, false);
    let hinge = (d2.unsqueeze(2) - d_an.unsqueeze(1) + margin).relu();
    let mask = positive
        .unsqueeze(2)
        .logical_and(&neg_valid.unsqueeze(1))
        .to_kind(Kind::Float);
    (hinge * &mask).sum(Kind::Float) / mask.sum(Kind::Float).clamp_min(1.0)
}

/// The triplet loss with negatives from outside the batch: `emb` `[B, D]` the anchors (labels
/// i64 `[B]`), `neg_emb` `[B, K, D]` each anchor's `K` negatives, `valid` bool `[B, K]` which
/// of them exist (an anchor may have fewer than `K` in a small pool). Every same-class image of
/// the batch is a positive; the loss is the mean over all valid (anchor, positive, negative)
/// triplets, 0 (with a gradient of 0) when there is none.
pub fn pool_triplet_loss(
    emb: &Tensor,
    labels: &Tensor,
    neg_emb: &Tensor,
    valid: &Tensor,
    margin: f64,
) -> Tensor {
    let b = emb.size()[0];
    let same = same_class(labels);
    let eye = Tensor::eye(b, (Kind::Bool, emb.device()));
    let positive = same.logical_and(&eye.logical_not());
    let d2 = squared_distances(emb);
    let d_an = (neg_emb - emb.unsqueeze(1))
        .pow_tensor_scalar(2)
        .sum_dim_intlist([2i64].as_slice(), false, Kind::Float);
    let hinge = (d2.unsqueeze(2) - d_an.unsqueeze(1) + margin).relu();
    let mask = positive
        .unsqueeze(2)
        .logical_and(&valid.unsqueeze(1))
        .to_kind(Kind::Float);
    (hinge * &mask).sum(Kind::Float) / mask.sum(Kind::Float).clamp_min(1.0)
}

/// Squared Euclidean distances `[B, B]` between the rows of `emb`.
fn squared_distances(emb: &Tensor) -> Tensor {
    let sq = emb
        .pow_tensor_scalar(2)
        .sum_dim_intlist([1i64].as_slice(), false, Kind::Float);
    (sq.unsqueeze(1) + sq.unsqueeze(0) - emb.matmul(&emb.tr()) * 2.0).clamp_min(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(angle_deg: f64) -> [f32; 2] {
        let a = angle_deg.to_radians();
        [a.cos() as f32, a.sin() as f32]
    }

    #[test]
    fn matches_a_hand_computed_batch() {
        // Two classes of two images on the unit circle; with 2 negatives per anchor every
        // other-class image is drawn (same-class ones only with the 1e-6 floor), so the loss
        // is determined.
        let pts = [unit(0.0), unit(30.0), unit(100.0), unit(150.0)];
        let flat: Vec<f32> = pts.iter().flatten().copied().collect();
        let emb = Tensor::from_slice(&flat).view([4, 2]);
        let labels = Tensor::from_slice(&[0i64, 0, 1, 1]);
        let margin = 0.7;
        let d2 = |i: usize, j: usize| {
            let (a, b) = (pts[i], pts[j]);
            ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)) as f64
        };
        let class = [0, 0, 1, 1];
        let mut total = 0.0;
        let mut count = 0.0;
        for a in 0..4 {
            for p in 0..4 {
                if p == a || class[p] != class[a] {
                    continue;
                }
                for n in 0..4 {
                    if class[n] != class[a] {
                        total += (d2(a, p) - d2(a, n) + margin).max(0.0);
                        count += 1.0;
                    }
                }
            }
        }
        tch::manual_seed(0);
        let loss = triplet_loss(&emb, &labels, margin, 2).double_value(&[]);
        assert!(
            (loss - total / count).abs() < 1e-5,
            "{loss} vs {}",
            total / count
        );
    }

    #[test]
    fn pool_loss_matches_a_hand_computed_batch_and_ignores_missing_negatives() {
        // Anchors: two classes of two images; each anchor has two negative slots, the second
        // of anchor 3 missing (its embedding is far inside the margin and must not count).
        let anchors = [unit(0.0), unit(20.0), unit(90.0), unit(120.0)];
        let negs = [
            [unit(60.0), unit(180.0)],
            [unit(100.0), unit(40.0)],
            [unit(10.0), unit(200.0)],
            [unit(300.0), unit(119.0)],
        ];
        let valid = [[true, true], [true, true], [true, true], [true, false]];
        let class = [0, 0, 1, 1];
        let margin = 0.5;
        let d2 = |a: [f32; 2], b: [f32; 2]| ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)) as f64;
        let (mut total, mut count) = (0.0, 0.0);
        for a in 0..4 {
            for p in 0..4 {
                if p == a || class[p] != class[a] {
                    continue;
                }
                for k in 0..2 {
                    if valid[a][k] {
                        total += (d2(anchors[a], anchors[p]) - d2(anchors[a], negs[a][k]) + margin)
                            .max(0.0);
                        count += 1.0;
                    }
                }
            }
        }
        let flat: Vec<f32> = anchors.iter().flatten().copied().collect();
        let emb = Tensor::from_slice(&flat).view([4, 2]);
        let flat: Vec<f32> = negs.iter().flatten().flatten().copied().collect();
        let neg_emb = Tensor::from_slice(&flat).view([4, 2, 2]);
        let flat: Vec<bool> = valid.iter().flatten().copied().collect();
        let valid = Tensor::from_slice(&flat).view([4, 2]);
        let labels = Tensor::from_slice(&[0i64, 0, 1, 1]);
        let loss = pool_triplet_loss(&emb, &labels, &neg_emb, &valid, margin).double_value(&[]);
        assert!(total > 0.0);
        assert!(
            (loss - total / count).abs() < 1e-5,
            "{loss} vs {}",
            total / count
        );

        let none = Tensor::zeros([4, 2], (Kind::Bool, tch::Device::Cpu));
        let empty = pool_triplet_loss(&emb, &labels, &neg_emb, &none, margin);
        assert_eq!(empty.double_value(&[]), 0.0);
    }

    #[test]
    fn sampling_never_weights_same_class_and_favours_the_density_inverse() {
        let emb = Tensor::randn([6, 8], tch::kind::FLOAT_CPU);
        let emb = crate::nn::gem::l2n(&emb);
        let labels = Tensor::from_slice(&[0i64, 0, 1, 1, 2, 2]);
        let w = negative_weights(&emb, &labels);
        for a in 0..6 {
            let row: f64 = (0..6).map(|j| w.double_value(&[a, j])).sum();
            assert!((row - 1.0).abs() < 1e-5);
            for j in 0..6 {
                if a / 2 == j / 2 {
                    assert!(w.double_value(&[a, j]) < 1e-5);
                }
            }
        }
    }

    #[test]
    fn gradient_flows_and_a_step_lowers_the_loss() {
        // Fixed points and 7 negatives per anchor of 8 images: every other-class image is
        // drawn whatever the generator's state (tests share it across threads), so both losses
        // see the same triplets.
        let values: Vec<f32> = (0..32)
            .map(|i| ((i * 37 % 17) as f32 - 8.0) / 4.0)
            .collect();
        let raw = Tensor::from_slice(&values)
            .view([8, 4])
            .set_requires_grad(true);
        let labels = Tensor::from_slice(&[0i64, 0, 1, 1, 2, 2, 3, 3]);
        let loss = triplet_loss(&crate::nn::gem::l2n(&raw), &labels, 0.7, 7);
        loss.backward();
        let grad = raw.grad();
        assert!(grad.abs().sum(Kind::Float).double_value(&[]) > 0.0);
        let stepped = tch::no_grad(|| &raw - grad * 0.05);
        let after = triplet_loss(&crate::nn::gem::l2n(&stepped), &labels, 0.7, 7);
        assert!(after.double_value(&[]) < loss.double_value(&[]));
    }
}
