//! Training augmentations: random resized crop, horizontal flip, colour jitter (SimCLR's
//! colour distortion with a strength), and the mixup weight.
//!
//! Sampling and applying are separate steps: [`sample`] draws an [`AugParams`] for an image
//! size, [`apply`] renders it at any output resolution. That separation is what makes
//! **coupled** augmentation exact: the distillation loader draws once and applies the same
//! parameters at the teacher's and the student's resolution (the same crop box in source
//! pixels resized directly to each size), and the parameters are kept with the batch so tests
//! (and curious users) can check what was drawn.
//!
//! The crop follows torchvision's `RandomResizedCrop` (10 attempts at an area fraction drawn
//! from `crop_scale` and a log-uniform aspect ratio from `crop_ratio`, then a centre-crop
//! fallback). One difference: the box is resampled in place (Pillow's `resize(box=...)`), so
//! the filter may read the pixels just outside the box, where torchvision crops first and
//! clamps at the crop's edge; only the outermost output pixels can differ. The jitter follows SimCLR: with probability 0.8 brightness, contrast and
//! saturation factors in `[1 - 0.8 s, 1 + 0.8 s]` and a hue shift in `[-0.2 s, 0.2 s]` turns,
//! applied in that fixed order (torchvision shuffles the order; a fixed order keeps one draw
//! reproducible across versions); with probability 0.2 a conversion to grey.

use image::RgbImage;
use rand::Rng;
use rand_distr::{Beta, Distribution};
use serde::{Deserialize, Serialize};

use super::image_ops::{normalise_chw, resample, to_unit_chw, Filter};
use crate::kind::Resolution;

/// What to augment and how strongly.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AugmentConfig {
    /// Random resized crops (otherwise the whole image, resized to the output).
    pub geometric: bool,
    /// Range of the crop's area as a fraction of the image.
    pub crop_scale: (f64, f64),
    /// Range of the crop's aspect ratio (width / height).
    pub crop_ratio: (f64, f64),
    /// Horizontal flips with probability 0.5.
    pub flip: bool,
    /// Colour distortion strength s (0: none; the paper uses 0.5).
    pub jitter: f64,
    /// Mixup's Beta(alpha, alpha) parameter (0: no mixup; the paper uses 0.2). Only the
    /// distillation loader mixes.
    pub mixup_alpha: f64,
}

impl Default for AugmentConfig {
    /// Crops covering 25-100% of the image (a wider range than torchvision's 8-100%, whose
    /// smallest crops would cut the synthetic set's shapes and fine birds alike out of the
    /// picture at 32-64 px), flips on, no jitter, no mixup.
    fn default() -> Self {
        AugmentConfig {
            geometric: true,
            crop_scale: (0.25, 1.0),
            crop_ratio: (3.0 / 4.0, 4.0 / 3.0),
            flip: true,
            jitter: 0.0,
            mixup_alpha: 0.0,
        }
    }
}

impl AugmentConfig {
    /// No augmentation at all: the whole image, resized.
    pub fn none() -> Self {
        AugmentConfig {
            geometric: false,
            flip: false,
            ..AugmentConfig::default()
        }
    }
}

/// A crop box in source pixels.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CropBox {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
}

/// Colour jitter factors (identity: 1, 1, 1, 0, false).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Jitter {
    /// Brightness multiplier.
    pub brightness: f32,
    /// Contrast factor (blend with the mean grey level).
    pub contrast: f32,
    /// Saturation factor (blend with the pixel's grey level).
    pub saturation: f32,
    /// Hue shift, in turns.
    pub hue: f32,
    /// Convert to grey (after the other factors).
    pub grayscale: bool,
}

/// One draw of augmentation parameters for one image.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AugParams {
    /// The crop, in the (re-sampled) source image's pixels.
    pub crop: CropBox,
    /// Horizontal flip.
    pub flip: bool,
    /// Colour jitter, if any.
    pub jitter: Option<Jitter>,
}

/// Draws augmentation parameters for a `w x h` image rendered at `out`. Random crops draw
/// their aspect ratio (width / height) from `crop_ratio` times the output's, so a crop for a
/// `256 x 128` input is as tall as the input is (a square output multiplies by exactly 1).
pub fn sample(
    cfg: &AugmentConfig,
    w: u32,
    h: u32,
    out: Resolution,
    rng: &mut impl Rng,
) -> AugParams {
    let crop = if cfg.geometric {
        random_resized_crop(cfg, w, h, out.aspect(), rng)
    } else {
        CropBox {
            x: 0.0,
            y: 0.0,
            w: f64::from(w),
            h: f64::from(h),
        }
    };
    let flip = cfg.flip && rng.random_bool(0.5);
    let jitter = if cfg.jitter > 0.0 {
        let s = cfg.jitter;
        let mut j = Jitter {
            brightness: 1.0,
            contrast: 1.0,
            saturation: 1.0,
            hue: 0.0,
            grayscale: false,
        };
        if rng.random_bool(0.8) {
            let factor = |rng: &mut dyn rand::RngCore, amount: f64| {
                rng.random_range((1.0 - amount).max(0.0)..=1.0 + amount) as f32
            };
            j.brightness = factor(rng, 0.8 * s);
            j.contrast = factor(rng, 0.8 * s);
            j.saturation = factor(rng, 0.8 * s);
            let hue = (0.2 * s).min(0.5);
            j.hue = rng.random_range(-hue..=hue) as f32;
        }
        j.grayscale = rng.random_bool(0.2);
        Some(j)
    } else {
        None
    };
    AugParams { crop, flip, jitter }
}

/// Draws a mixup weight from Beta(alpha, alpha); 1 (no mixing) when alpha is 0.
pub fn sample_mixup(alpha: f64, rng: &mut impl Rng) -> f32 {
    if alpha <= 0.0 {
        return 1.0;
    }
    Beta::new(alpha, alpha)
        .map(|b| b.sample(rng) as f32)
        .unwrap_or(1.0)
}

fn random_resized_crop(
    cfg: &AugmentConfig,
    w: u32,
    h: u32,
    aspect: f64,
    rng: &mut impl Rng,
) -> CropBox {
    let (wf, hf) = (f64::from(w), f64::from(h));
    let area = wf * hf;
    let ratio_range = (cfg.crop_ratio.0 * aspect, cfg.crop_ratio.1 * aspect);
    let (lr0, lr1) = (ratio_range.0.ln(), ratio_range.1.ln());
    for _ in 0..10 {
        let target = area * rng.random_range(cfg.crop_scale.0..=cfg.crop_scale.1);
        let ratio = rng.random_range(lr0..=lr1).exp();
        let cw = (target * ratio).sqrt().round();
        let ch = (target / ratio).sqrt().round();
        if cw > 0.0 && ch > 0.0 && cw <= wf && ch <= hf {
            let y = rng.random_range(0..=(h - ch as u32)) as f64;
            let x = rng.random_range(0..=(w - cw as u32)) as f64;
            return CropBox { x, y, w: cw, h: ch };
        }
    }
    // Fallback: the largest centre crop with an aspect ratio inside the range.
    let in_ratio = wf / hf;
    let (cw, ch) = if in_ratio < ratio_range.0 {
        (wf, (wf / ratio_range.0).round())
    } else if in_ratio > ratio_range.1 {
        ((hf * ratio_range.1).round(), hf)
    } else {
        (wf, hf)
    };
    CropBox {
        x: ((wf - cw) / 2.0).floor(),
        y: ((hf - ch) / 2.0).floor(),
        w: cw,
        h: ch,
    }
}

/// Renders `params` on `img` at `size` (height x width), appending ImageNet-normalised CHW
/// floats to `out`.
pub fn apply(img: &RgbImage, params: &AugParams, size: impl Into<Resolution>, out: &mut Vec<f32>) {
    let size = size.into();
    let c = params.crop;
    let mut view = resample(
        img,
        [c.x, c.y, c.x + c.w, c.y + c.h],
        size.width,
        size.height,
        Filter::Bilinear,
    );
    if params.flip {
        image::imageops::flip_horizontal_in_place(&mut view);
    }
    let start = out.len();
    let n = size.pixels();
    out.resize(start + 3 * n, 0.0);
    let data = &mut out[start..];
    to_unit_chw(&view, data);
    if let Some(j) = &params.jitter {
        jitter(data, n, j);
    }
    normalise_chw(data);
}

fn grey(r: f32, g: f32, b: f32) -> f32 {
    0.299 * r + 0.587 * g + 0.114 * b
}

/// Applies jitter factors to planar CHW `[0, 1]` floats of `n` pixels.
fn jitter(data: &mut [f32], n: usize, j: &Jitter) {
    let (r, rest) = data.split_at_mut(n);
    let (g, b) = rest.split_at_mut(n);
    let clamp = |v: f32| v.clamp(0.0, 1.0);
    if j.brightness != 1.0 {
        for v in r.iter_mut().chain(g.iter_mut()).chain(b.iter_mut()) {
            *v = clamp(*v * j.brightness);
        }
    }
    if j.contrast != 1.0 {
        let mean = (0..n).map(|i| grey(r[i], g[i], b[i])).sum::<f32>() / n as f32;
        for v in r.iter_mut().chain(g.iter_mut()).chain(b.iter_mut()) {
            *v = clamp(mean + j.contrast * (*v - mean));
        }
    }
    if j.saturation != 1.0 {
        for i in 0..n {
            let y = grey(r[i], g[i], b[i]);
            r[i] = clamp(y + j.saturation * (r[i] - y));
            g[i] = clamp(y + j.saturation * (g[i] - y));
            b[i] = clamp(y + j.saturation * (b[i] - y));
        }
    }
    if j.hue != 0.0 {
        for i in 0..n {
            let (h, s, v) = rgb_to_hsv(r[i], g[i], b[i]);
            let (nr, ng, nb) = hsv_to_rgb((h + j.hue).rem_euclid(1.0), s, v);
            (r[i], g[i], b[i]) = (nr, ng, nb);
        }
    }
    if j.grayscale {
        for i in 0..n {
            let y = grey(r[i], g[i], b[i]);
            (r[i], g[i], b[i]) = (y, y, y);
        }
    }
}

fn rgb_to_hsv(r: f32, g: f32, b: f32) -> (f32, f32, f32) {
    let max = r.max(g).max(b);
    let min = r.min(g).min(b);
    let d = max - min;
    let h = if d == 0.0 {
        0.0
    } else if max == r {
        ((g - b) / d).rem_euclid(6.0) / 6.0
    } else if max == g {
        ((b - r) / d + 2.0) / 6.0
    } else {
        ((r - g) / d + 4.0) / 6.0
    };
    let s = if max == 0.0 { 0.0 } else { d / max };
    (h, s, max)
}

fn hsv_to_rgb(h: f32, s: f32, v: f32) -> (f32, f32, f32) {
    let h6 = h * 6.0;
    let i = h6.floor();
    let f = h6 - i;
    let (p, q, t) = (v * (1.0 - s), v * (1.0 - s * f), v * (1.0 - s * (1.0 - f)));
    match i as i32 % 6 {
        0 => (v, t, p),
        1 => (q, v, p),
        2 => (p, v, t),
        3 => (p, q, v),
        4 => (t, p, v),
        _ => (v, p, q),
    }
}

/// A per-image random stream seed from (seed, epoch, position in the epoch): every image's
/// draws are independent of thread scheduling and of the other images.
pub fn stream_seed(seed: u64, epoch: u64, position: u64) -> u64 {
    let mut z = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ epoch.wrapping_mul(0xD1B5_4A32_D192_ED03)
        ^ position.wrapping_mul(0xAEF1_7502_108E_F2D9);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn crops_lie_inside_the_image_and_respect_the_area_range() {
        let cfg = AugmentConfig::default();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..200 {
            let p = sample(&cfg, 60, 40, Resolution::square(32), &mut rng);
            let c = p.crop;
            assert!(
                c.x >= 0.0 && c.y >= 0.0 && c.x + c.w <= 60.0 && c.y + c.h <= 40.0,
                "{c:?}"
            );
            assert!(c.w * c.h <= 2400.0 + 1.0);
        }
    }

    /// Three crops of a 60 x 40 image for a square output, seed 3. Square outputs scale the
    /// ratio range by exactly 1.0, so these are the draws of the square-only code; any change
    /// to them changes every training run's augmentation (and needs an IMPL_VERSION bump).
    const SQUARE_CROPS_BEFORE: [(f64, f64, f64, f64); 3] = [
        (18.0, 1.0, 30.0, 39.0),
        (9.0, 3.0, 29.0, 34.0),
        (4.0, 0.0, 51.0, 40.0),
    ];

    #[test]
    fn crops_for_a_tall_input_have_its_aspect_ratio_and_a_square_keeps_the_old_draws() {
        let cfg = AugmentConfig::default();
        let tall = Resolution {
            height: 256,
            width: 128,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        for _ in 0..200 {
            let c = sample(&cfg, 64, 128, tall, &mut rng).crop;
            let ratio = c.w / c.h;
            // crop_ratio (3/4 .. 4/3) times the input's 1/2, with a pixel of rounding.
            assert!(
                (0.375 * 0.9..=(2.0 / 3.0) * 1.1).contains(&ratio),
                "{c:?}: width / height {ratio}"
            );
            assert!(c.x >= 0.0 && c.y >= 0.0 && c.x + c.w <= 64.0 && c.y + c.h <= 128.0);
        }
        // A square output multiplies the ratio range by exactly 1: a square's draws are
        // pinned.
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let crops: Vec<(f64, f64, f64, f64)> = (0..3)
            .map(|_| {
                let c = sample(&cfg, 60, 40, Resolution::square(32), &mut rng).crop;
                (c.x, c.y, c.w, c.h)
            })
            .collect();
        assert_eq!(crops, SQUARE_CROPS_BEFORE.to_vec());
    }

    #[test]
    fn rendering_a_tall_input_fills_height_x_width() {
        let img = RgbImage::from_pixel(40, 80, image::Rgb([200, 10, 10]));
        let cfg = AugmentConfig::none();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let size = Resolution {
            height: 24,
            width: 12,
        };
        let params = sample(&cfg, 40, 80, size, &mut rng);
        let mut out = Vec::new();
        apply(&img, &params, size, &mut out);
        assert_eq!(out.len(), 3 * 24 * 12);
    }

    #[test]
    fn hsv_round_trips() {
        for &(r, g, b) in &[(0.2f32, 0.5f32, 0.9f32), (1.0, 0.0, 0.0), (0.3, 0.3, 0.3)] {
            let (h, s, v) = rgb_to_hsv(r, g, b);
            let (r2, g2, b2) = hsv_to_rgb(h, s, v);
            assert!((r - r2).abs() < 1e-5 && (g - g2).abs() < 1e-5 && (b - b2).abs() < 1e-5);
        }
    }

    #[test]
    fn flip_mirrors_the_view() {
        let mut img = RgbImage::new(8, 8);
        for y in 0..8 {
            img.put_pixel(0, y, image::Rgb([255, 255, 255]));
        }
        let full = CropBox {
            x: 0.0,
            y: 0.0,
            w: 8.0,
            h: 8.0,
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        apply(
            &img,
            &AugParams {
                crop: full,
                flip: false,
                jitter: None,
            },
            8,
            &mut a,
        );
        apply(
            &img,
            &AugParams {
                crop: full,
                flip: true,
                jitter: None,
            },
            8,
            &mut b,
        );
        assert!(a[0] > 1.0 && a[7] < 0.0);
        assert!(b[7] > 1.0 && b[0] < 0.0);
    }

    #[test]
    fn jitter_changes_colours_and_grayscale_equalises_channels() {
        let mut img = RgbImage::new(4, 4);
        for p in img.pixels_mut() {
            *p = image::Rgb([200, 60, 30]);
        }
        let full = CropBox {
            x: 0.0,
            y: 0.0,
            w: 4.0,
            h: 4.0,
        };
        let j = Jitter {
            brightness: 1.0,
            contrast: 1.0,
            saturation: 1.0,
            hue: 0.0,
            grayscale: true,
        };
        let mut out = Vec::new();
        apply(
            &img,
            &AugParams {
                crop: full,
                flip: false,
                jitter: Some(j),
            },
            4,
            &mut out,
        );
        // Grey pixels, normalised per channel: (y - mean_c) / std_c with one y.
        let y = (out[0] * 0.229) + 0.485;
        assert!(((out[16] * 0.224) + 0.456 - y).abs() < 1e-5);
        let half = Jitter {
            brightness: 0.5,
            grayscale: false,
            ..j
        };
        let mut dim = Vec::new();
        apply(
            &img,
            &AugParams {
                crop: full,
                flip: false,
                jitter: Some(half),
            },
            4,
            &mut dim,
        );
        let red = (dim[0] * 0.229) + 0.485;
        assert!((red - 100.0 / 255.0).abs() < 1e-5, "{red}");
    }

    #[test]
    fn mixup_weights_lie_in_the_unit_interval() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..100 {
            let l = sample_mixup(0.2, &mut rng);
            assert!((0.0..=1.0).contains(&l));
        }
        assert_eq!(sample_mixup(0.0, &mut rng), 1.0);
    }
}
