//! The embedding network: backbone, pooling, projection, L2 normalisation.
//!
//! `f(x) = L2N(W . L2N(GeM_p(F(x))) + b)` (docs/METHODS.md), with `W: C -> embed_dim`; with
//! `embed_relu` a ReLU sits between the projection and the L2N (BCT's Table 3), so every
//! component of the embedding is non-negative. Variables:
//! the backbone's torchvision names at the root, `pool.p` for GeM's exponent, `proj.weight` and
//! `proj.bias` for the projection.
//!
//! `train` only switches BatchNorm between batch statistics (updating the running ones) and the
//! running statistics; the network has no dropout. Training with frozen BatchNorm statistics
//! (the reference code's option) is therefore `forward_t(xs, false)` with gradients enabled.

use tch::nn::{self, ModuleT};
use tch::Tensor;

use super::config::{NetConfig, Pool};
use super::gem::{l2n, Gem};
use super::resnet::ResNet;

/// Backbone + pooling + projection + L2N. See the module docs.
#[derive(Debug)]
pub struct EmbeddingNet {
    cfg: NetConfig,
    backbone: ResNet,
    gem: Option<Gem>,
    proj: nn::Linear,
}

impl EmbeddingNet {
    /// Creates every variable under `path`, initialised as torchvision (backbone) and PyTorch's
    /// `nn.Linear` (projection) do.
    ///
    /// # Panics
    /// When `cfg` fails [`NetConfig::validate`]; builders from user input validate first.
    pub fn new(path: &nn::Path, cfg: &NetConfig) -> Self {
        if let Err(e) = cfg.validate() {
            panic!("invalid NetConfig: {e}");
        }
        let backbone = ResNet::new(path, cfg);
        let gem = (cfg.pool == Pool::Gem).then(|| Gem::new(&(path / "pool"), cfg.gem_p));
        let proj = nn::linear(
            path / "proj",
            cfg.feature_dim(),
            cfg.embed_dim,
            Default::default(),
        );
        EmbeddingNet {
            cfg: cfg.clone(),
            backbone,
            gem,
            proj,
        }
    }

    /// The configuration it was built from.
    pub fn config(&self) -> &NetConfig {
        &self.cfg
    }

    /// The backbone.
    pub fn backbone(&self) -> &ResNet {
        &self.backbone
    }

    /// The pooled feature `[B, C]` (after the inner L2N when `pool_l2n`).
    pub fn pooled(&self, xs: &Tensor, train: bool) -> Tensor {
        let fmap = self.backbone.forward_t(xs, train);
        let pooled = match &self.gem {
            Some(gem) => gem.forward(&fmap),
            None => fmap.mean_dim([2i64, 3].as_slice(), false, None),
        };
        if self.cfg.pool_l2n {
            l2n(&pooled)
        } else {
            pooled
        }
    }

    /// The projection's output (through the ReLU when `embed_relu`) before the final L2N,
    /// `[B, embed_dim]`.
    pub fn forward_raw(&self, xs: &Tensor, train: bool) -> Tensor {
        let projected = self.pooled(xs, train).apply(&self.proj);
        if self.cfg.embed_relu {
            projected.relu()
        } else {
            projected
        }
    }

    /// The L2-normalised embedding `[B, embed_dim]`.
    pub fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        l2n(&self.forward_raw(xs, train))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::config::{Arch, Stem};

    fn tiny() -> NetConfig {
        NetConfig {
            arch: Arch::Resnet18,
            width: 8,
            stem: Stem::Small,
            pool: Pool::Gem,
            embed_dim: 16,
            gem_p: 3.0,
            pool_l2n: true,
            embed_relu: false,
        }
    }

    #[test]
    fn embeddings_are_unit_length_and_named_as_documented() {
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let net = EmbeddingNet::new(&vs.root(), &tiny());
        let xs = Tensor::randn([3, 3, 16, 16], tch::kind::FLOAT_CPU);
        let ys = net.forward_t(&xs, true);
        assert_eq!(ys.size(), [3, 16]);
        let norms = ys.norm_scalaropt_dim(2, [1i64].as_slice(), false);
        for i in 0..3 {
            assert!((norms.double_value(&[i]) - 1.0).abs() < 1e-4);
        }
        let vars = vs.variables();
        assert_eq!(vars["pool.p"].size(), [1]);
        assert_eq!(vars["proj.weight"].size(), [16, 64]);
        assert_eq!(vars["proj.bias"].size(), [16]);
    }

    #[test]
    fn train_mode_updates_running_statistics_and_eval_mode_does_not() {
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let net = EmbeddingNet::new(&vs.root(), &tiny());
        let xs = Tensor::randn([4, 3, 16, 16], tch::kind::FLOAT_CPU) + 2.0;
        let before = vs.variables()["bn1.running_mean"].copy();
        let _ = tch::no_grad(|| net.forward_t(&xs, false));
        assert!(vs.variables()["bn1.running_mean"].equal(&before));
        let _ = tch::no_grad(|| net.forward_t(&xs, true));
        assert!(!vs.variables()["bn1.running_mean"].equal(&before));
    }

    #[test]
    fn embed_relu_makes_every_component_non_negative_and_changes_nothing_else() {
        let xs = Tensor::randn([6, 3, 16, 16], tch::kind::FLOAT_CPU);
        let plain_vs = nn::VarStore::new(tch::Device::Cpu);
        let plain = EmbeddingNet::new(&plain_vs.root(), &tiny());
        let relu_cfg = NetConfig {
            embed_relu: true,
            ..tiny()
        };
        let mut relu_vs = nn::VarStore::new(tch::Device::Cpu);
        let relu = EmbeddingNet::new(&relu_vs.root(), &relu_cfg);
        relu_vs.copy(&plain_vs).unwrap();
        let (a, b) = tch::no_grad(|| (plain.forward_t(&xs, false), relu.forward_t(&xs, false)));
        assert!(
            a.min().double_value(&[]) < 0.0,
            "the plain embedding has negative parts"
        );
        assert!(b.min().double_value(&[]) >= 0.0, "{b}");
        // Same weights: the ReLU embedding is the plain raw output clamped at 0, normalised.
        let raw = tch::no_grad(|| plain.forward_raw(&xs, false)).clamp_min(0.0);
        let expected =
            raw.shallow_clone() / (raw.norm_scalaropt_dim(2, [1i64].as_slice(), true) + 1e-6);
        assert!(b.allclose(&expected, 1e-5, 1e-6, false));
        assert_eq!(relu_vs.variables().len(), plain_vs.variables().len());
    }

    #[test]
    fn avg_pool_without_inner_l2n() {
        let cfg = NetConfig {
            pool: Pool::Avg,
            pool_l2n: false,
            ..tiny()
        };
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let net = EmbeddingNet::new(&vs.root(), &cfg);
        assert!(!vs.variables().contains_key("pool.p"));
        let xs = Tensor::randn([2, 3, 16, 16], tch::kind::FLOAT_CPU);
        assert_eq!(net.forward_t(&xs, false).size(), [2, 16]);
    }
}
