//! The description of an embedding network, as stored next to every checkpoint (`model.json`)
//! and written in pipelines as stage parameters.
//!
//! One serde struct is the single source of truth: the network builder, the FLOP counter and
//! the checkpoint loader all read it, so a checkpoint can always be rebuilt from its JSON.

use serde::{Deserialize, Serialize};

/// The backbone architecture (torchvision's ResNet family).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    /// ResNet-18: basic blocks, [2, 2, 2, 2].
    Resnet18,
    /// ResNet-34: basic blocks, [3, 4, 6, 3].
    Resnet34,
    /// ResNet-50: bottleneck blocks, [3, 4, 6, 3].
    Resnet50,
    /// ResNet-101: bottleneck blocks, [3, 4, 23, 3].
    Resnet101,
    /// ResNet-152: bottleneck blocks, [3, 8, 36, 3].
    Resnet152,
}

impl Arch {
    /// Parses the pipeline spelling (`"resnet18"`, ...).
    pub fn parse(name: &str) -> Option<Arch> {
        match name {
            "resnet18" => Some(Arch::Resnet18),
            "resnet34" => Some(Arch::Resnet34),
            "resnet50" => Some(Arch::Resnet50),
            "resnet101" => Some(Arch::Resnet101),
            "resnet152" => Some(Arch::Resnet152),
            _ => None,
        }
    }

    /// Blocks per stage.
    pub fn blocks(self) -> [usize; 4] {
        match self {
            Arch::Resnet18 => [2, 2, 2, 2],
            Arch::Resnet34 | Arch::Resnet50 => [3, 4, 6, 3],
            Arch::Resnet101 => [3, 4, 23, 3],
            Arch::Resnet152 => [3, 8, 36, 3],
        }
    }

    /// Whether the blocks are bottlenecks (1x1, 3x3, 1x1 with expansion 4).
    pub fn bottleneck(self) -> bool {
        matches!(self, Arch::Resnet50 | Arch::Resnet101 | Arch::Resnet152)
    }

    /// Output channels of a block relative to its base width.
    pub fn expansion(self) -> i64 {
        if self.bottleneck() {
            4
        } else {
            1
        }
    }
}

/// The first layers of the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stem {
    /// torchvision's: 7x7 convolution with stride 2, then a 3x3 max-pool with stride 2.
    Imagenet,
    /// For images of 32-64 px: one 3x3 convolution with stride 1 and no max-pool.
    Small,
}

impl Stem {
    /// Parses the pipeline spelling.
    pub fn parse(name: &str) -> Option<Stem> {
        match name {
            "imagenet" => Some(Stem::Imagenet),
            "small" => Some(Stem::Small),
            _ => None,
        }
    }
}

/// Global pooling of the last feature map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pool {
    /// Generalised mean with one learnable exponent (metric learning head).
    Gem,
    /// Global average pooling (classification head of BCT).
    Avg,
}

impl Pool {
    /// Parses the pipeline spelling.
    pub fn parse(name: &str) -> Option<Pool> {
        match name {
            "gem" => Some(Pool::Gem),
            "avg" => Some(Pool::Avg),
            _ => None,
        }
    }
}

fn default_gem_p() -> f64 {
    3.0
}

fn default_true() -> bool {
    true
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// An embedding network: backbone, pooling, projection, L2 normalisation.
///
/// `f(x) = L2N(W . L2N(pool(F(x))) + b)`; the inner L2N is skipped when `pool_l2n` is false
/// (the BCT head: average pooling, then a plain linear layer), and `embed_relu` puts a ReLU
/// between the projection and the outer L2N (`L2N(ReLU(W . ... + b))`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetConfig {
    /// The backbone.
    pub arch: Arch,
    /// Base channels of the first stage (64 in the papers; 8-16 for CPU runs).
    pub width: i64,
    /// The stem.
    pub stem: Stem,
    /// The pooling.
    pub pool: Pool,
    /// Size of the embedding (the projection's output).
    pub embed_dim: i64,
    /// Initial GeM exponent (learnable).
    #[serde(default = "default_gem_p")]
    pub gem_p: f64,
    /// Whether the pooled vector is L2-normalised before the projection.
    #[serde(default = "default_true")]
    pub pool_l2n: bool,
    /// Whether a ReLU follows the projection, before the final L2N (BCT's Table 3: "a ReLU on
    /// the embedding"). Left out of `model.json` when false, so earlier checkpoints' files
    /// read and write unchanged.
    #[serde(default, skip_serializing_if = "is_false")]
    pub embed_relu: bool,
}

impl NetConfig {
    /// The papers' metric-learning network: the given arch at width 64, ImageNet stem, GeM,
    /// 512-d.
    pub fn paper(arch: Arch) -> Self {
        NetConfig {
            arch,
            width: 64,
            stem: Stem::Imagenet,
            pool: Pool::Gem,
            embed_dim: 512,
            gem_p: 3.0,
            pool_l2n: true,
            embed_relu: false,
        }
    }

    /// Channels of the last feature map (512 for R18/R34, 2048 for R50/R101/R152 at width 64).
    pub fn feature_dim(&self) -> i64 {
        self.width * 8 * self.arch.expansion()
    }

    /// Checks the values a builder relies on; the message says which field and how to fix it.
    pub fn validate(&self) -> Result<(), String> {
        if self.width < 1 {
            return Err(format!("width must be at least 1, got {}", self.width));
        }
        if self.embed_dim < 1 {
            return Err(format!(
                "embed_dim must be at least 1, got {}",
                self.embed_dim
            ));
        }
        if !(self.gem_p.is_finite() && self.gem_p > 0.0) {
            return Err(format!(
                "gem_p must be a positive number, got {}",
                self.gem_p
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trip_uses_pipeline_spellings() {
        let cfg = NetConfig::paper(Arch::Resnet50);
        let json = serde_json::to_value(&cfg).unwrap();
        assert_eq!(json["arch"], "resnet50");
        assert_eq!(json["stem"], "imagenet");
        assert_eq!(json["pool"], "gem");
        let back: NetConfig = serde_json::from_value(json).unwrap();
        assert_eq!(back, cfg);
        assert_eq!(cfg.feature_dim(), 2048);
        assert_eq!(NetConfig::paper(Arch::Resnet18).feature_dim(), 512);
        for (arch, name) in [
            (Arch::Resnet101, "resnet101"),
            (Arch::Resnet152, "resnet152"),
        ] {
            assert_eq!(Arch::parse(name), Some(arch));
            assert_eq!(serde_json::to_value(arch).unwrap(), name);
            assert_eq!(NetConfig::paper(arch).feature_dim(), 2048);
        }
    }

    #[test]
    fn unknown_fields_and_bad_values_are_rejected() {
        let bad = serde_json::json!({"arch": "resnet18", "width": 8, "stem": "small",
            "pool": "gem", "embed_dim": 16, "depth": 3});
        assert!(serde_json::from_value::<NetConfig>(bad).is_err());
        let mut cfg = NetConfig::paper(Arch::Resnet18);
        cfg.width = 0;
        assert!(cfg.validate().unwrap_err().contains("width"));
    }
}
