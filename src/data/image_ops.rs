//! Image operations shared by every data set and loader: decoding, antialiased resampling,
//! evaluation preprocessing, training re-sampling and ImageNet normalisation.
//!
//! Resampling follows Pillow's `Image.resize` (which torchvision's `Resize` and
//! `RandomResizedCrop` call on PIL images) step for step, so that a model trained or
//! evaluated here sees the same pixels as one fed by the reference PyTorch code:
//! - separable convolution, horizontal pass first, the intermediate rounded to 8 bits;
//! - when shrinking, the filter's support is widened by the scale factor (this is the
//!   antialiasing: each output pixel averages every input pixel it covers, so fine detail
//!   smaller than an output pixel is removed instead of aliasing into moire);
//! - weights normalised per output pixel, then quantised to 22-bit fixed point with Pillow's
//!   rounding, and the sum rounded and clipped to 0..=255.
//!
//! A resampling *region* (`[x0, y0, x1, y1]` in source pixels, fractional allowed) is
//! Pillow's `box` argument: resizing a region of the image gives exactly the pixels of
//! resizing the whole image and cropping, without computing the discarded ones. Evaluation
//! preprocessing and random resized crops use it.

use std::path::Path;

use image::RgbImage;

use super::DataError;
use crate::kind::Resolution;

/// The ImageNet channel means (RGB), applied after scaling pixels to `[0, 1]`.
pub(crate) const IMAGENET_MEAN: [f32; 3] = [0.485, 0.456, 0.406];
/// The ImageNet channel standard deviations (RGB).
pub(crate) const IMAGENET_STD: [f32; 3] = [0.229, 0.224, 0.225];

/// A resampling filter (Pillow's names and definitions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// Triangle filter, support 1 (`Image.BILINEAR`; torchvision's default).
    Bilinear,
    /// Cubic convolution with a = -0.5, support 2 (`Image.BICUBIC`).
    Bicubic,
}

impl Filter {
    fn support(self) -> f64 {
        match self {
            Filter::Bilinear => 1.0,
            Filter::Bicubic => 2.0,
        }
    }

    fn weight(self, x: f64) -> f64 {
        let x = x.abs();
        match self {
            Filter::Bilinear => {
                if x < 1.0 {
                    1.0 - x
                } else {
                    0.0
                }
            }
            Filter::Bicubic => {
                const A: f64 = -0.5;
                if x < 1.0 {
                    ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
                } else if x < 2.0 {
                    (((x - 5.0) * x + 8.0) * x - 4.0) * A
                } else {
                    0.0
                }
            }
        }
    }
}

/// Reads and decodes a JPEG or PNG file into 8-bit RGB (grey and alpha images converted).
pub(crate) fn decode_file(path: &Path) -> Result<RgbImage, DataError> {
    let bytes = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
    decode_bytes(&bytes, path)
}

/// Decodes an in-memory JPEG or PNG file; `path` only names it in errors.
pub(crate) fn decode_bytes(bytes: &[u8], path: &Path) -> Result<RgbImage, DataError> {
    let format = image::guess_format(bytes).map_err(|e| DataError::Decode {
        path: path.to_path_buf(),
        message: format!("{e} (expected a JPEG or PNG file)"),
    })?;
    let img =
        image::load_from_memory_with_format(bytes, format).map_err(|e| DataError::Decode {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    Ok(match img {
        image::DynamicImage::ImageRgb8(rgb) => rgb,
        other => other.to_rgb8(),
    })
}

const PRECISION_BITS: u32 = 32 - 8 - 2;

/// Fixed-point filter taps for one axis: output pixel `i` reads `len[i]` inputs from
/// `start[i]` with weights `weights[i * ksize ..]`.
struct Taps {
    start: Vec<usize>,
    len: Vec<usize>,
    ksize: usize,
    weights: Vec<i32>,
}

/// Pillow's `precompute_coeffs` followed by its fixed-point conversion.
fn taps(in_size: usize, in0: f64, in1: f64, out_size: usize, filter: Filter) -> Taps {
    let scale = (in1 - in0) / out_size as f64;
    let filterscale = scale.max(1.0);
    let support = filter.support() * filterscale;
    let ksize = support.ceil() as usize * 2 + 1;
    let mut taps = Taps {
        start: Vec::with_capacity(out_size),
        len: Vec::with_capacity(out_size),
        ksize,
        weights: vec![0; out_size * ksize],
    };
    let mut k = vec![0.0f64; ksize];
    for xx in 0..out_size {
        let center = in0 + (xx as f64 + 0.5) * scale;
        let ss = 1.0 / filterscale;
        // `as i64` truncates toward zero, as the C cast in Pillow does.
        let xmin = ((center - support + 0.5) as i64).max(0);
        let xmax = ((center + support + 0.5) as i64).min(in_size as i64);
        let n = (xmax - xmin).max(0) as usize;
        let mut total = 0.0;
        for (x, w) in k.iter_mut().enumerate().take(n) {
            *w = filter.weight((x as f64 + xmin as f64 - center + 0.5) * ss);
            total += *w;
        }
        let row = &mut taps.weights[xx * ksize..(xx + 1) * ksize];
        for x in 0..n {
            let w = if total != 0.0 { k[x] / total } else { k[x] };
            let fixed = w * f64::from(1u32 << PRECISION_BITS);
            row[x] = if fixed < 0.0 {
                (fixed - 0.5).trunc()
            } else {
                (fixed + 0.5).trunc()
            } as i32;
        }
        taps.start.push(xmin as usize);
        taps.len.push(n);
    }
    taps
}

#[inline]
fn clip8(acc: i32) -> u8 {
    (acc >> PRECISION_BITS).clamp(0, 255) as u8
}

/// Resamples the region `[x0, y0, x1, y1]` (source pixels; fractions allowed) of `src` to
/// `out_w x out_h` pixels, exactly as Pillow's `src.resize((out_w, out_h), filter, box)`.
///
/// # Panics
/// When the output size is zero or the region is empty: callers derive both from checked
/// parameters.
pub(crate) fn resample(
    src: &RgbImage,
    region: [f64; 4],
    out_w: u32,
    out_h: u32,
    filter: Filter,
) -> RgbImage {
    assert!(out_w > 0 && out_h > 0, "resample to an empty image");
    let [x0, y0, x1, y1] = region;
    assert!(x1 > x0 && y1 > y0, "resample of an empty region {region:?}");
    let (in_w, in_h) = (src.width() as usize, src.height() as usize);
    let (ow, oh) = (out_w as usize, out_h as usize);
    let h_taps = taps(in_w, x0, x1, ow, filter);
    let v_taps = taps(in_h, y0, y1, oh, filter);

    // Rows of the source the vertical pass reads.
    let row_first = v_taps.start.iter().copied().min().unwrap_or(0);
    let row_last = (0..oh)
        .map(|i| v_taps.start[i] + v_taps.len[i])
        .max()
        .unwrap_or(0);
    let rows = row_last.saturating_sub(row_first);

    // Horizontal pass into an 8-bit intermediate of `rows` rows.
    let srcbuf = src.as_raw();
    let mut tmp = vec![0u8; rows * ow * 3];
    for r in 0..rows {
        let in_row = &srcbuf[(row_first + r) * in_w * 3..(row_first + r + 1) * in_w * 3];
        let out_row = &mut tmp[r * ow * 3..(r + 1) * ow * 3];
        for xx in 0..ow {
            let start = h_taps.start[xx];
            let w = &h_taps.weights[xx * h_taps.ksize..xx * h_taps.ksize + h_taps.len[xx]];
            let mut acc = [1i32 << (PRECISION_BITS - 1); 3];
            for (k, &wk) in w.iter().enumerate() {
                let p = &in_row[(start + k) * 3..(start + k) * 3 + 3];
                // Wrapping ops: the sums stay far inside i32 (as in Pillow), and without
                // overflow checks the loop vectorises in debug-asserting builds too.
                acc[0] = acc[0].wrapping_add(i32::from(p[0]).wrapping_mul(wk));
                acc[1] = acc[1].wrapping_add(i32::from(p[1]).wrapping_mul(wk));
                acc[2] = acc[2].wrapping_add(i32::from(p[2]).wrapping_mul(wk));
            }
            out_row[xx * 3] = clip8(acc[0]);
            out_row[xx * 3 + 1] = clip8(acc[1]);
            out_row[xx * 3 + 2] = clip8(acc[2]);
        }
    }

    // Vertical pass, accumulating whole rows so the inner loop runs over contiguous bytes.
    let stride = ow * 3;
    let mut out = vec![0u8; oh * stride];
    let mut acc = vec![0i32; stride];
    for yy in 0..oh {
        acc.iter_mut().for_each(|a| *a = 1 << (PRECISION_BITS - 1));
        let start = v_taps.start[yy] - row_first;
        let w = &v_taps.weights[yy * v_taps.ksize..yy * v_taps.ksize + v_taps.len[yy]];
        for (k, &wk) in w.iter().enumerate() {
            let row = &tmp[(start + k) * stride..(start + k + 1) * stride];
            for (a, &p) in acc.iter_mut().zip(row) {
                *a = a.wrapping_add(i32::from(p).wrapping_mul(wk));
            }
        }
        for (o, &a) in out[yy * stride..(yy + 1) * stride].iter_mut().zip(&acc) {
            *o = clip8(a);
        }
    }
    RgbImage::from_raw(out_w, out_h, out).expect("buffer size matches the dimensions")
}

/// Resizes the whole image to `out_w x out_h`.
pub fn resize(src: &RgbImage, out_w: u32, out_h: u32, filter: Filter) -> RgbImage {
    let region = [0.0, 0.0, f64::from(src.width()), f64::from(src.height())];
    resample(src, region, out_w, out_h, filter)
}

/// The size an image of `w x h` gets when its shorter side is resized to `short`, the longer
/// side truncated as torchvision's `Resize(int)` does.
pub(crate) fn shorter_side_size(w: u32, h: u32, short: u32) -> (u32, u32) {
    if w <= h {
        (
            short,
            ((u64::from(short) * u64::from(h)) / u64::from(w)) as u32,
        )
    } else {
        (
            ((u64::from(short) * u64::from(w)) / u64::from(h)) as u32,
            short,
        )
    }
}

/// The shorter side evaluation resizes to before the centre crop: `round(s * 8 / 7)`.
pub(crate) fn eval_resize_side(s: u32) -> u32 {
    ((f64::from(s) * 8.0 / 7.0).round() as u32).max(s)
}

/// Evaluation preprocessing: the shorter side resized to `s * 8 / 7`, then the centre
/// `s x s` crop (torchvision's `Resize(round(s*8/7))` + `CenterCrop(s)`). Only the cropped
/// pixels are computed.
pub(crate) fn eval_preprocess(src: &RgbImage, s: u32) -> RgbImage {
    let (w, h) = (src.width(), src.height());
    let (rw, rh) = shorter_side_size(w, h, eval_resize_side(s));
    // torchvision's CenterCrop offsets: int(round((size - s) / 2)).
    let left = ((f64::from(rw) - f64::from(s)) / 2.0).round();
    let top = ((f64::from(rh) - f64::from(s)) / 2.0).round();
    let sx = f64::from(w) / f64::from(rw);
    let sy = f64::from(h) / f64::from(rh);
    let region = [
        left * sx,
        top * sy,
        (left + f64::from(s)) * sx,
        (top + f64::from(s)) * sy,
    ];
    resample(src, region, s, s, Filter::Bilinear)
}

/// Evaluation preprocessing for a non-square `h x w` input: the image scaled (aspect ratio
/// kept) just enough to cover `round(h * 8 / 7) x round(w * 8 / 7)`, then the centre `h x w`
/// crop. For a square this is [`eval_preprocess`]'s shorter side to `s * 8 / 7`, which is
/// what squares keep using, bit for bit.
fn eval_preprocess_rect(src: &RgbImage, size: Resolution) -> RgbImage {
    let (w, h) = (f64::from(src.width()), f64::from(src.height()));
    let (cover_h, cover_w) = (
        f64::from(eval_resize_side(size.height)),
        f64::from(eval_resize_side(size.width)),
    );
    let scale = (cover_h / h).max(cover_w / w);
    let (rw, rh) = ((w * scale).floor().max(1.0), (h * scale).floor().max(1.0));
    let (out_w, out_h) = (f64::from(size.width), f64::from(size.height));
    let left = ((rw - out_w) / 2.0).round();
    let top = ((rh - out_h) / 2.0).round();
    let (sx, sy) = (w / rw, h / rh);
    let region = [left * sx, top * sy, (left + out_w) * sx, (top + out_h) * sy];
    resample(src, region, size.width, size.height, Filter::Bilinear)
}

/// How evaluation turns an image into the network's `h x w` input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EvalView {
    /// The shorter side resized to `s * 8 / 7`, then the centre `s x s` crop: torchvision's
    /// evaluation for networks trained with random resized crops.
    #[default]
    CenterCrop,
    /// The whole image resized to `s x s`: the view a network trained without crops saw
    /// (the synthetic identity set, whose stripe period is part of the identity, so the
    /// centre crop's 8/7 zoom turns one identity into another).
    Whole,
}

impl EvalView {
    /// The pipeline spellings, in the order of [`EvalView::parse`].
    pub(crate) const NAMES: &'static [&'static str] = &["center-crop", "whole"];

    /// Parses a pipeline spelling.
    pub fn parse(name: &str) -> Option<EvalView> {
        match name {
            "center-crop" => Some(EvalView::CenterCrop),
            "whole" => Some(EvalView::Whole),
            _ => None,
        }
    }

    /// The `h x w` input of `src` (`s x s` for a square `size`).
    pub fn apply(self, src: &RgbImage, size: impl Into<Resolution>) -> RgbImage {
        let size = size.into();
        match self {
            EvalView::CenterCrop if size.is_square() => eval_preprocess(src, size.height),
            EvalView::CenterCrop => eval_preprocess_rect(src, size),
            EvalView::Whole => {
                let region = [0.0, 0.0, f64::from(src.width()), f64::from(src.height())];
                resample(src, region, size.width, size.height, Filter::Bilinear)
            }
        }
    }
}

/// Training re-sampling: the image resized (aspect ratio kept) so that its largest side is
/// `r`; images already that small are kept as they are, like the reference code's data
/// preparation.
pub fn resize_largest_side(src: &RgbImage, r: u32) -> RgbImage {
    let (w, h) = (src.width(), src.height());
    if w.max(h) <= r {
        return src.clone();
    }
    let (nw, nh) = if w >= h {
        (
            r,
            ((f64::from(h) * f64::from(r) / f64::from(w)).round() as u32).max(1),
        )
    } else {
        (
            ((f64::from(w) * f64::from(r) / f64::from(h)).round() as u32).max(1),
            r,
        )
    };
    resize(src, nw, nh, Filter::Bilinear)
}

/// Writes `img` as planar CHW floats scaled to `[0, 1]` into `out` (length `3 * w * h`).
pub(crate) fn to_unit_chw(img: &RgbImage, out: &mut [f32]) {
    let n = (img.width() * img.height()) as usize;
    assert_eq!(out.len(), 3 * n, "output buffer of the wrong size");
    let (r, rest) = out.split_at_mut(n);
    let (g, b) = rest.split_at_mut(n);
    for (i, p) in img.as_raw().chunks_exact(3).enumerate() {
        r[i] = f32::from(p[0]) / 255.0;
        g[i] = f32::from(p[1]) / 255.0;
        b[i] = f32::from(p[2]) / 255.0;
    }
}

/// ImageNet normalisation in place of planar CHW `[0, 1]` floats.
pub(crate) fn normalise_chw(data: &mut [f32]) {
    let n = data.len() / 3;
    for (c, plane) in data.chunks_exact_mut(n).enumerate() {
        let (mean, inv_std) = (IMAGENET_MEAN[c], 1.0 / IMAGENET_STD[c]);
        for v in plane {
            *v = (*v - mean) * inv_std;
        }
    }
}

/// `img` as ImageNet-normalised planar CHW floats, appended to `out`.
pub fn normalised_chw(img: &RgbImage, out: &mut Vec<f32>) {
    let start = out.len();
    out.resize(start + 3 * (img.width() * img.height()) as usize, 0.0);
    to_unit_chw(img, &mut out[start..]);
    normalise_chw(&mut out[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(values: &[u8]) -> RgbImage {
        let mut img = RgbImage::new(values.len() as u32, 1);
        for (x, &v) in values.iter().enumerate() {
            img.put_pixel(x as u32, 0, image::Rgb([v, v, v]));
        }
        img
    }

    fn reds(img: &RgbImage) -> Vec<u8> {
        img.pixels().map(|p| p[0]).collect()
    }

    /// Halving a 4-pixel row with the bilinear filter, worked by hand from Pillow's algorithm:
    /// scale 2 widens the triangle's support to 2 input pixels. Output pixel 0 is centred at
    /// x = 1.0 and reads inputs 0..3 (xmin = trunc(1 - 2 + 0.5) = 0, xmax = trunc(3.5) = 3)
    /// with weights tri((x - 1 + 0.5) / 2) = 0.75, 0.75, 0.25, normalised to 3/7, 3/7, 1/7:
    /// (0*3 + 100*3 + 200*1) / 7 = 71.43 -> 71. Output pixel 1 is centred at 3.0 and reads
    /// inputs 1..4 with weights 1/7, 3/7, 3/7: (100 + 3*200 + 3*255) / 7 = 209.29 -> 209.
    /// (Pillow 13 gives [71, 209] for `Image.resize((2, 1), Image.BILINEAR)` of this row.)
    #[test]
    fn halving_matches_pillows_bilinear_by_hand() {
        let out = resize(&row(&[0, 100, 200, 255]), 2, 1, Filter::Bilinear);
        assert_eq!(reds(&out), vec![71, 209]);
    }

    /// Upsampling 2 -> 4 pixels keeps the support at 1 pixel (no antialiasing needed): output
    /// centres at 0.25, 0.75, 1.25, 1.75 in source coordinates. Pixel 0 reads input 0 only
    /// (xmin = trunc(-0.25) = 0, xmax = trunc(1.75) = 1), so it is 0; pixel 1 blends inputs 0
    /// and 1 with weights tri(-0.25) = 0.75 and tri(0.75) = 0.25: 0.25 * 200 = 50; pixels 2
    /// and 3 mirror them.
    #[test]
    fn upsampling_interpolates_linearly() {
        let out = resize(&row(&[0, 200]), 4, 1, Filter::Bilinear);
        assert_eq!(reds(&out), vec![0, 50, 150, 200]);
    }

    /// Antialiasing: a one-pixel checkerboard shrunk 4x is a flat grey, not a moire pattern;
    /// a plain (non-antialiased) 2-tap bilinear would sample only black or only white.
    /// (Pillow gives 118, then 128 throughout, then 137 at the far border.)
    #[test]
    fn shrinking_averages_fine_detail_away() {
        let values: Vec<u8> = (0..64).map(|i| if i % 2 == 0 { 0 } else { 255 }).collect();
        let out = resize(&row(&values), 16, 1, Filter::Bilinear);
        for v in reds(&out) {
            assert!((115..=140).contains(&v), "{v}");
        }
    }

    #[test]
    fn resampling_a_region_equals_resizing_then_cropping() {
        let mut img = RgbImage::new(40, 30);
        for (x, y, p) in img.enumerate_pixels_mut() {
            *p = image::Rgb([(x * 6) as u8, (y * 8) as u8, ((x * y) % 251) as u8]);
        }
        let full = resize(&img, 20, 15, Filter::Bicubic);
        let part = resample(&img, [10.0, 8.0, 30.0, 24.0], 10, 8, Filter::Bicubic);
        for y in 0..8 {
            for x in 0..10 {
                assert_eq!(part.get_pixel(x, y), full.get_pixel(x + 5, y + 4));
            }
        }
    }

    #[test]
    fn eval_preprocessing_resizes_the_shorter_side_then_crops_the_centre() {
        assert_eq!(eval_resize_side(224), 256);
        assert_eq!(shorter_side_size(500, 375, 256), (341, 256));
        // A wide image with a bright centre column: the crop keeps the middle.
        let mut img = RgbImage::new(70, 35);
        for y in 0..35 {
            for x in 30..40 {
                img.put_pixel(x, y, image::Rgb([255, 255, 255]));
            }
        }
        let out = eval_preprocess(&img, 28);
        assert_eq!((out.width(), out.height()), (28, 28));
        // 35 -> 32 (28 * 8 / 7), 70 -> 64, crop offset 18: the column 30..40 maps to
        // 27.4..36.6 in the resized image, i.e. 9.4..18.6 in the crop.
        assert_eq!(out.get_pixel(14, 14)[0], 255);
        assert_eq!(out.get_pixel(2, 14)[0], 0);
        assert_eq!(out.get_pixel(25, 14)[0], 0);
    }

    #[test]
    fn a_tall_view_has_height_x_width_and_the_centre_crop_keeps_the_middle() {
        // A 64 x 128 person-shaped image: left half red, right half blue.
        let img = RgbImage::from_fn(64, 128, |x, _| {
            if x < 32 {
                image::Rgb([255, 0, 0])
            } else {
                image::Rgb([0, 0, 255])
            }
        });
        let tall = Resolution {
            height: 32,
            width: 16,
        };
        for view in [EvalView::Whole, EvalView::CenterCrop] {
            let out = view.apply(&img, tall);
            assert_eq!(out.dimensions(), (16, 32), "{view:?}");
            assert_eq!(out.get_pixel(0, 16)[0], 255, "{view:?}: left edge red");
            assert_eq!(out.get_pixel(15, 16)[2], 255, "{view:?}: right edge blue");
        }
        // The centre crop of a tall input cuts 1/8 of the height, as the square one does.
        let crop = eval_preprocess_rect(&img, tall);
        let rows = eval_resize_side(32);
        assert_eq!(rows, 37);
        assert_eq!(crop.dimensions(), (16, 32));
        // A square through the general path matches the square path.
        let square =
            RgbImage::from_fn(40, 30, |x, y| image::Rgb([(x * 6) as u8, (y * 8) as u8, 7]));
        assert_eq!(
            eval_preprocess_rect(&square, Resolution::square(16)),
            eval_preprocess(&square, 16)
        );
    }

    #[test]
    fn the_whole_view_keeps_every_pixel_where_the_centre_crop_zooms() {
        // A 32 px image with a one-pixel white border: the whole view at 32 px is the image
        // itself; the centre crop (37 px, then the middle 32) cuts the border away.
        let mut img = RgbImage::new(32, 32);
        for i in 0..32 {
            for (x, y) in [(i, 0), (i, 31), (0, i), (31, i)] {
                img.put_pixel(x, y, image::Rgb([255, 255, 255]));
            }
        }
        img.put_pixel(9, 20, image::Rgb([10, 200, 30]));
        assert_eq!(EvalView::Whole.apply(&img, 32), img);
        let crop = EvalView::CenterCrop.apply(&img, 32);
        assert!(
            crop.get_pixel(0, 16)[0] < 128,
            "the border survived the crop"
        );
        assert_eq!(EvalView::parse("whole"), Some(EvalView::Whole));
        assert_eq!(EvalView::parse("center-crop"), Some(EvalView::CenterCrop));
        assert_eq!(EvalView::parse("centre"), None);
    }

    #[test]
    fn largest_side_resampling_keeps_aspect_and_small_images() {
        let img = RgbImage::new(100, 50);
        let out = resize_largest_side(&img, 40);
        assert_eq!((out.width(), out.height()), (40, 20));
        let small = RgbImage::new(20, 10);
        assert_eq!(resize_largest_side(&small, 40).dimensions(), (20, 10));
    }

    #[test]
    fn normalisation_uses_imagenet_statistics() {
        let mut img = RgbImage::new(1, 1);
        img.put_pixel(0, 0, image::Rgb([255, 0, 128]));
        let mut out = Vec::new();
        normalised_chw(&img, &mut out);
        assert!((out[0] - (1.0 - 0.485) / 0.229).abs() < 1e-5);
        assert!((out[1] - (0.0 - 0.456) / 0.224).abs() < 1e-5);
        assert!((out[2] - (128.0 / 255.0 - 0.406) / 0.225).abs() < 1e-5);
    }

    #[test]
    fn undecodable_bytes_name_the_file() {
        let err = decode_bytes(b"not an image", Path::new("birds/x.jpg")).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("birds/x.jpg"), "{text}");
    }
}
