//! Generalised-mean (GeM) pooling with one learnable exponent, and L2 normalisation.
//!
//! `GeM_p(F) = (mean over h,w of clamp(F, 1e-6)^p)^(1/p)`: p = 1 is average pooling, large p
//! approaches max pooling; learning p lets the network choose (Radenovic et al. 2018).

use tch::nn;
use tch::Tensor;

/// The clamp that keeps `F^p` defined and its gradient finite.
pub const GEM_EPS: f64 = 1e-6;

/// The epsilon of [`l2n`], as in the reference code.
pub const L2N_EPS: f64 = 1e-6;

/// `x / (||x||_2 + 1e-6)` along dimension 1 (rows of a `[B, D]` matrix).
pub fn l2n(xs: &Tensor) -> Tensor {
    let norm = xs.norm_scalaropt_dim(2, [1i64].as_slice(), true);
    xs / (norm + L2N_EPS)
}

/// The optimiser parameter group of GeM's `p`, so it can learn at its own rate and without
/// weight decay (see [`crate::nn::optim::Optim::with_gem_group`]); every other weight is in
/// group 0.
pub const GEM_GROUP: usize = 1;

/// GeM pooling: a `[B, C, h, w]` feature map to `[B, C]`.
#[derive(Debug)]
pub struct Gem {
    /// The learnable exponent, a one-element tensor named `p`.
    pub p: Tensor,
}

impl Gem {
    /// Creates `p` (shape `[1]`, the reference code's layout) under `path`, set to `p0`, in
    /// optimiser group [`GEM_GROUP`].
    pub fn new(path: &nn::Path, p0: f64) -> Self {
        Gem {
            p: path
                .set_group(GEM_GROUP)
                .var("p", &[1], nn::Init::Const(p0)),
        }
    }

    /// Pools `[B, C, h, w]` to `[B, C]`.
    pub fn forward(&self, xs: &Tensor) -> Tensor {
        gem(xs, &self.p)
    }
}

/// GeM pooling with exponent `p` (a one-element tensor).
pub fn gem(xs: &Tensor, p: &Tensor) -> Tensor {
    xs.clamp_min(GEM_EPS)
        .pow(p)
        .mean_dim([2i64, 3].as_slice(), false, None)
        .pow(&p.reciprocal())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gem_with_p1_is_average_and_p_is_learnable() {
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let pool = Gem::new(&vs.root(), 1.0);
        let xs = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 6.0]).view([1, 1, 2, 2]);
        let avg = pool.forward(&xs).double_value(&[0, 0]);
        assert!((avg - 3.0).abs() < 1e-5, "{avg}");
        // p = 3: (mean of cubes)^(1/3) = ((1 + 8 + 27 + 216) / 4)^(1/3) = 63^(1/3).
        let cube = gem(&xs, &Tensor::from_slice(&[3.0f32])).double_value(&[0, 0]);
        assert!((cube - 63f64.powf(1.0 / 3.0)).abs() < 1e-4, "{cube}");
        assert_eq!(vs.trainable_variables().len(), 1);
        let loss = pool.forward(&xs).sum(None);
        loss.backward();
        assert!(pool.p.grad().double_value(&[0]).abs() > 0.0);
    }

    #[test]
    fn negative_activations_are_clamped() {
        let xs = Tensor::from_slice(&[-1.0f32, -2.0, 0.0, 0.0]).view([1, 1, 2, 2]);
        let y = gem(&xs, &Tensor::from_slice(&[3.0f32])).double_value(&[0, 0]);
        assert!((y - GEM_EPS).abs() < 1e-9, "{y}");
    }

    #[test]
    fn l2n_gives_unit_rows() {
        let xs = Tensor::from_slice(&[3.0f32, 4.0, 0.0, 2.0]).view([2, 2]);
        let ys = l2n(&xs);
        assert!((ys.double_value(&[0, 0]) - 0.6).abs() < 1e-5);
        assert!((ys.double_value(&[1, 1]) - 1.0).abs() < 1e-5);
    }
}
