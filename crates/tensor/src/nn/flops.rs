//! Query cost: the FLOPs of one forward pass at a resolution, from the network's layers.
//!
//! Counted as the vision literature counts them (torchvision's model table, fvcore, the
//! paper's Figures 1 and 4): one multiply-accumulate of a convolution or linear layer is one
//! FLOP; BatchNorm, ReLU, pooling and normalisation are left out (a fraction of a percent).
//! ResNet-50 at 224 px is 4.09 GFLOPs in that convention. The count walks the same
//! [`ResNetPlan`] the network is built from.

use super::config::NetConfig;
use super::resnet::ResNetPlan;
use crate::data::Resolution;

/// FLOPs of one forward pass of one image of `resolution` (a side, or height x width; see the
/// module docs).
pub fn flops(cfg: &NetConfig, resolution: impl Into<Resolution>) -> f64 {
    let size = resolution.into();
    let (conv, _, _) =
        ResNetPlan::new(cfg).conv_macs_rect(i64::from(size.height), i64::from(size.width));
    conv + (cfg.feature_dim() * cfg.embed_dim) as f64
}

/// [`flops`] in GFLOPs.
pub fn gflops(cfg: &NetConfig, resolution: impl Into<Resolution>) -> f64 {
    flops(cfg, resolution) / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::config::{Arch, Pool, Stem};

    #[test]
    fn a_height_x_width_input_costs_its_pixels() {
        let cfg = NetConfig {
            arch: Arch::Resnet18,
            width: 8,
            stem: Stem::Imagenet,
            pool: Pool::Gem,
            embed_dim: 16,
            gem_p: 3.0,
            pool_l2n: true,
            embed_relu: false,
        };
        let square = flops(&cfg, 128);
        assert_eq!(flops(&cfg, Resolution::square(128)), square);
        let tall = flops(
            &cfg,
            Resolution {
                height: 256,
                width: 128,
            },
        );
        let wide = flops(
            &cfg,
            Resolution {
                height: 128,
                width: 256,
            },
        );
        assert_eq!(tall, wide, "convolutions cost the same either way round");
        let head = (cfg.feature_dim() * cfg.embed_dim) as f64;
        let ratio = (tall - head) / (square - head);
        assert!(
            (ratio - 2.0).abs() < 1e-9,
            "256 x 128 is twice 128 x 128: {ratio}"
        );
    }

    #[test]
    fn tiny_network_matches_a_hand_count() {
        // ResNet-18, width 2, small stem, 8x8 input, 4-d embedding.
        let cfg = NetConfig {
            arch: Arch::Resnet18,
            width: 2,
            stem: Stem::Small,
            pool: Pool::Gem,
            embed_dim: 4,
            gem_p: 3.0,
            pool_l2n: true,
            embed_relu: false,
        };
        let stem = 8 * 8 * 2 * 3 * 9; // 3x3, 3 -> 2 channels, 8x8 output
        let layer1 = 4 * (8 * 8 * 2 * 2 * 9); // four 3x3 convs, 2 -> 2, 8x8
                                              // Each later stage: strided 3x3 (c -> 2c), 3x3 (2c -> 2c), 1x1 strided shortcut,
                                              // then a block of two 3x3 (2c -> 2c), at output side s.
        let stage = |c: i64, s: i64| {
            let o = 2 * c;
            s * s * (o * c * 9 + o * o * 9 + o * c + 2 * o * o * 9)
        };
        let total = stem + layer1 + stage(2, 4) + stage(4, 2) + stage(8, 1) + 16 * 4;
        assert_eq!(total, 37_312);
        assert_eq!(flops(&cfg, 8), total as f64);
    }

    #[test]
    fn resnet50_at_224_is_the_published_figure() {
        // torchvision: 4.09 GFLOPs including the 2048 x 1000 classifier; ours has a
        // 2048 x 512 projection instead.
        let cfg = NetConfig::paper(Arch::Resnet50);
        let g = gflops(&cfg, 224) - 2048.0 * 512.0 / 1e9 + 2048.0 * 1000.0 / 1e9;
        assert!((g - 4.09).abs() < 0.01, "{g}");
        // torchvision's table: resnet101 7.80 and resnet152 11.51 GFLOPs at 224 px.
        for (arch, published) in [(Arch::Resnet101, 7.80), (Arch::Resnet152, 11.51)] {
            let g =
                gflops(&NetConfig::paper(arch), 224) - 2048.0 * 512.0 / 1e9 + 2048.0 * 1000.0 / 1e9;
            assert!((g - published).abs() < 0.01, "{arch:?}: {g}");
        }
        // Quarter the pixels, about a quarter of the cost.
        let ratio = flops(&cfg, 448) / flops(&cfg, 224);
        assert!((ratio - 4.0).abs() < 0.05, "{ratio}");
    }
}
