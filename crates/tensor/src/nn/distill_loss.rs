//! The three distillation losses of the resolution-asymmetry paper, exactly as docs/METHODS.md.
//!
//! Student and teacher embeddings come as `[B * P, D]` rows ordered image-major (row `b*P + i`
//! is augmentation `i` of image `b`), L2-normalised. With `eps = 1e-6`:
//!
//! - `L_abs    = sum_b (1/P) sum_i (1 - s_bi . t_bi + eps)^2`
//! - `L_rel-ts = sum_b sum_{i != j} (s_bi . t_bj - t_bi . t_bj + eps)^2 / (P (P - 1))`
//! - `L_rel-ss = sum_b sum_{i != j} (s_bi . s_bj - t_bi . t_bj + eps)^2 / (P (P - 1))`
//!
//! The relational terms compare augmentations of the same image with each other only; with
//! `P = 1` there is no pair and they are 0. The teacher's embeddings are expected detached
//! (computed under no-grad); nothing here sends gradient to them.

use tch::{Kind, Tensor};

/// The `eps` inside every squared term, as in the reference code.
pub const DISTILL_EPS: f64 = 1e-6;

fn grouped(xs: &Tensor, p: i64) -> Tensor {
    let size = xs.size();
    xs.view([size[0] / p, p, size[1]])
}

/// `L_abs`.
pub fn abs_loss(s: &Tensor, t: &Tensor, p: i64) -> Tensor {
    let dots = (grouped(s, p) * grouped(t, p)).sum_dim_intlist([-1i64].as_slice(), false, None);
    (dots.neg() + (1.0 + DISTILL_EPS))
        .pow_tensor_scalar(2)
        .mean_dim([-1i64].as_slice(), false, None)
        .sum(Kind::Float)
}

/// Sum over images and ordered pairs `i != j` of `(a_ij - b_ij + eps)^2`, over `P (P - 1)`.
fn relational(a: &Tensor, b: &Tensor, p: i64) -> Tensor {
    if p < 2 {
        return a.sum(Kind::Float) * 0.0;
    }
    let off = Tensor::eye(p, (Kind::Float, a.device())).neg() + 1.0;
    let sq =
        (a - b + DISTILL_EPS)
            .pow_tensor_scalar(2)
            .sum_dim_intlist([0i64].as_slice(), false, None);
    (sq * off).sum(Kind::Float) / (p * (p - 1)) as f64
}

/// `L_rel-ts`: student-to-teacher similarities match teacher-to-teacher ones.
pub fn rel_ts_loss(s: &Tensor, t: &Tensor, p: i64) -> Tensor {
    let (s, t) = (grouped(s, p), grouped(t, p));
    let tt = t.bmm(&t.transpose(1, 2));
    relational(&s.bmm(&t.transpose(1, 2)), &tt, p)
}

/// `L_rel-ss`: student-to-student similarities match teacher-to-teacher ones.
pub fn rel_ss_loss(s: &Tensor, t: &Tensor, p: i64) -> Tensor {
    let (s, t) = (grouped(s, p), grouped(t, p));
    let tt = t.bmm(&t.transpose(1, 2));
    relational(&s.bmm(&s.transpose(1, 2)), &tt, p)
}

/// Which terms are on and their weights: `L = [abs] L_abs + lambda_t L_rel-ts + lambda_s
/// L_rel-ss`, any subset enabled (the ablations).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DistillLoss {
    /// Whether `L_abs` is on (weight 1).
    pub abs: bool,
    /// Weight of `L_rel-ts`, `None` when off.
    pub lambda_t: Option<f64>,
    /// Weight of `L_rel-ss`, `None` when off.
    pub lambda_s: Option<f64>,
}

/// The value of each enabled term (detached scalars, for the loss curve) and the total.
#[derive(Debug)]
pub struct DistillTerms {
    /// The weighted sum, with gradient.
    pub total: Tensor,
    /// `L_abs`, when on.
    pub abs: Option<f64>,
    /// `L_rel-ts` (unweighted), when on.
    pub rel_ts: Option<f64>,
    /// `L_rel-ss` (unweighted), when on.
    pub rel_ss: Option<f64>,
}

impl DistillLoss {
    /// Computes every enabled term on `[B * P, D]` student and teacher embeddings.
    pub fn compute(&self, s: &Tensor, t: &Tensor, p: i64) -> DistillTerms {
        let mut total = s.sum(Kind::Float) * 0.0;
        let mut terms = DistillTerms {
            total: Tensor::new(),
            abs: None,
            rel_ts: None,
            rel_ss: None,
        };
        if self.abs {
            let l = abs_loss(s, t, p);
            terms.abs = Some(l.double_value(&[]));
            total += l;
        }
        if let Some(w) = self.lambda_t {
            let l = rel_ts_loss(s, t, p);
            terms.rel_ts = Some(l.double_value(&[]));
            total += l * w;
        }
        if let Some(w) = self.lambda_s {
            let l = rel_ss_loss(s, t, p);
            terms.rel_ss = Some(l.double_value(&[]));
            total += l * w;
        }
        terms.total = total;
        terms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// B = 1 image, P = 2 augmentations, D = 2.
    fn batch() -> (Tensor, Tensor, [[f64; 2]; 2], [[f64; 2]; 2]) {
        let s = [[1.0, 0.0], [0.6, 0.8]];
        let t = [[0.0, 1.0], [0.8, 0.6]];
        let flat = |m: &[[f64; 2]; 2]| {
            Tensor::from_slice(&m.iter().flatten().map(|&x| x as f32).collect::<Vec<_>>())
                .view([2, 2])
        };
        (flat(&s), flat(&t), s, t)
    }

    fn dot(a: [f64; 2], b: [f64; 2]) -> f64 {
        a[0] * b[0] + a[1] * b[1]
    }

    #[test]
    fn each_term_matches_the_formula_by_hand() {
        let (st, tt, s, t) = batch();
        let e = DISTILL_EPS;
        let abs = ((1.0 - dot(s[0], t[0]) + e).powi(2) + (1.0 - dot(s[1], t[1]) + e).powi(2)) / 2.0;
        assert!((abs_loss(&st, &tt, 2).double_value(&[]) - abs).abs() < 1e-5);
        let mut ts = 0.0;
        let mut ss = 0.0;
        for (i, j) in [(0, 1), (1, 0)] {
            ts += (dot(s[i], t[j]) - dot(t[i], t[j]) + e).powi(2);
            ss += (dot(s[i], s[j]) - dot(t[i], t[j]) + e).powi(2);
        }
        assert!((rel_ts_loss(&st, &tt, 2).double_value(&[]) - ts / 2.0).abs() < 1e-5);
        assert!((rel_ss_loss(&st, &tt, 2).double_value(&[]) - ss / 2.0).abs() < 1e-5);
        let all = DistillLoss {
            abs: true,
            lambda_t: Some(0.7),
            lambda_s: Some(0.5),
        };
        let terms = all.compute(&st, &tt, 2);
        let expect = abs + 0.7 * ts / 2.0 + 0.5 * ss / 2.0;
        assert!((terms.total.double_value(&[]) - expect).abs() < 1e-5);
        assert!(terms.rel_ss.is_some() && terms.abs.is_some());
    }

    #[test]
    fn terms_sum_over_images_and_pair_only_within_an_image() {
        // Two images: the loss is the sum of the per-image losses, so cross-image pairs
        // never enter.
        let s = Tensor::randn([6, 4], tch::kind::FLOAT_CPU);
        let t = Tensor::randn([6, 4], tch::kind::FLOAT_CPU);
        for f in [abs_loss, rel_ts_loss, rel_ss_loss] {
            let whole = f(&s, &t, 3).double_value(&[]);
            let parts = f(&s.narrow(0, 0, 3), &t.narrow(0, 0, 3), 3).double_value(&[])
                + f(&s.narrow(0, 3, 3), &t.narrow(0, 3, 3), 3).double_value(&[]);
            assert!((whole - parts).abs() < 1e-4, "{whole} vs {parts}");
        }
        assert_eq!(rel_ts_loss(&s, &t, 1).double_value(&[]), 0.0);
    }
}
