//! Peak device memory of one optimisation step of a training instance, estimated from its
//! resolved parameters before it runs, so `plan` can say whether a stage at paper settings
//! fits the GPU it is meant for, and what to change when it does not
//! ([`advice`]). Pure arithmetic: no libtorch, nothing read but the parameters.
//!
//! The model, term by term ([`StepMemory::parts`]):
//! - **weights, gradients, optimiser state** of the trained network: 4 bytes per parameter
//!   each, AdamW/Adam keeping two moments and SGD one (none without momentum); under bf16,
//!   autocast's bf16 copy of the weights (2 bytes each) for the forward pass;
//! - **frozen networks** (the distillation's teacher, BCT's old model): their weights;
//! - **inputs**: the batch as the loader hands it to the device (fp32, both views for the
//!   distillation);
//! - **activations**: the images forwarded with gradients at once times the values every
//!   convolution outputs for one image at the resolution ([`network`]) times a measured
//!   number of bytes per such value ([`TRAIN_BYTES_PER_VALUE`]); a frozen network's forward
//!   without gradients holds a few layers at a time, counted as its largest convolution output
//!   times [`NOGRAD_BYTES_PER_LARGEST`], and happens before the student's forward, so the
//!   larger of the two counts.
//!
//! What it leaves out, and why: a classifier head (its classes are known only once the split
//! has run; 512 x 11,318 SOP classes would add 0.1 GiB in AdamW), the CUDA context and
//! cuDNN's workspace (a few hundred MiB; [`advice`] keeps a margin for them), fragmentation
//! of the CUDA caching allocator.
//!
//! The constants were measured on a CPU (glibc, libtorch's CPU autograd and oneDNN), where
//! what autograd saves is the same as on a GPU but oneDNN may keep other buffers than cuDNN;
//! `scripts/gpu-check.sh` prints the estimate of a ResNet-50 teacher step at 224 and 448 px
//! and of a distillation step beside the peak PyTorch's CUDA allocator measures for the same
//! step on the device (`crates/tensor/benches/gpu_check.rs`).

pub mod advice;
pub mod instance;
pub mod network;

use serde::Serialize;

use crate::stages::groups::precision::Precision;

pub use network::NetShape;

/// Bytes held through a training step (forward, then backward) per value a convolution
/// outputs for one image, by architecture, in fp32 and under bf16 autocast. Measured, not
/// derived, by `crates/tensor/tests/memory_calibrate.py` (2026-12-06, 2-core AMD EPYC VM
/// under load; the peak is memory, not time, so the load does not enter): the peak resident
/// memory of an AdamW step of the same network in PyTorch with the same libtorch, its growth
/// from 8 to 16 images at 128 px and width 16, divided by the 8 images' convolution outputs.
/// Bottleneck networks hold 2 fp32 values per convolution output (the output and its
/// BatchNorm's), basic-block networks a little more (their add and ReLU outputs are a larger
/// share). Extrapolating to other widths and resolutions assumes that activations grow
/// linearly with the channels (the width) and the pixels (resolution squared), as every
/// convolution, BatchNorm and ReLU output does; `estimates_match_measured_cpu_peaks` in
/// `crates/tensor/tests/memory_estimate.rs` checks the whole estimate against the project's
/// own networks at another width and resolution.
pub(crate) const TRAIN_BYTES_PER_VALUE: &[(&str, f64, f64)] = &[
    ("resnet18", 9.47, 6.06),
    ("resnet34", 8.97, 5.32),
    ("resnet50", 7.97, 4.28),
    ("resnet101", 7.98, 4.17),
    ("resnet152", 7.99, 4.21),
];

/// Bytes held at the peak of a forward pass without gradients (a frozen teacher), per value
/// of the network's largest convolution output, fp32 and bf16; measured by the same script
/// (ResNet-50, its growth from 16 to 32 images at 128 px and width 16).
pub(crate) const NOGRAD_BYTES_PER_LARGEST: (f64, f64) = (16.94, 10.00);

/// A network trained with gradients in a step: its shape and optimiser.
#[derive(Debug, Clone, PartialEq)]
pub struct Trained {
    /// The network.
    pub net: NetShape,
    /// Moments the optimiser keeps per parameter (AdamW/Adam 2, SGD with momentum 1).
    pub moments: u64,
}

/// A network forwarded without gradients in a step, at its own input size.
#[derive(Debug, Clone, PartialEq)]
pub struct Frozen {
    /// The network.
    pub net: NetShape,
    /// Its input `(height, width)`.
    pub input: (u64, u64),
    /// Images (rows) it forwards at once.
    pub rows: u64,
}

/// One training step, as far as memory goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The network trained.
    pub trained: Trained,
    /// Its input `(height, width)`.
    pub input: (u64, u64),
    /// Images it forwards with gradients at once (one backward's worth).
    pub rows: u64,
    /// Pixels of every image the step holds on the device as input, all views.
    pub input_pixels: u64,
    /// A frozen network forwarded in the step, if any.
    pub frozen: Option<Frozen>,
    /// The forward passes' precision.
    pub precision: Precision,
}

/// The estimate of one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepMemory {
    /// Bytes at the peak.
    pub bytes: u64,
    /// The forward passes' precision.
    pub precision: Precision,
    /// Images forwarded with gradients at once.
    pub images: u64,
    /// What the peak is made of, in bytes, largest terms first in [`StepMemory::describe`].
    pub parts: Vec<(&'static str, u64)>,
}

/// Why a step could not be estimated (an architecture the constants do not cover).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no memory estimate for `{0}`: only resnet18 to resnet152 are measured")]
pub struct UnknownArch(pub String);

impl Step {
    /// The estimate.
    pub fn estimate(&self) -> Result<StepMemory, UnknownArch> {
        let net = &self.trained.net;
        let unknown = || UnknownArch(net.arch.clone());
        let params = net.parameters().ok_or_else(unknown)?;
        let cast = if self.precision == Precision::Bf16 {
            2
        } else {
            0
        };
        let training = params * (4 + 4 + 4 * self.trained.moments + cast);
        let inputs = self.input_pixels * 3 * 4;
        let (values, _) = net
            .conv_outputs(self.input.0, self.input.1)
            .ok_or_else(unknown)?;
        let per_value = column(self.precision, train_bytes(&net.arch).ok_or_else(unknown)?);
        let activations = (self.rows as f64 * values as f64 * per_value) as u64;
        let mut parts = vec![
            ("weights, gradients, optimiser", training),
            ("inputs", inputs),
            ("activations", activations),
        ];
        if let Some(frozen) = &self.frozen {
            let unknown = || UnknownArch(frozen.net.arch.clone());
            let weights = frozen.net.parameters().ok_or_else(unknown)? * (4 + cast);
            let (_, largest) = frozen
                .net
                .conv_outputs(frozen.input.0, frozen.input.1)
                .ok_or_else(unknown)?;
            let per_value = column(self.precision, NOGRAD_BYTES_PER_LARGEST);
            let forward = (frozen.rows as f64 * largest as f64 * per_value) as u64;
            parts.push(("frozen weights", weights));
            // The frozen forward ends before the trained one starts: the larger one counts.
            parts.push(("frozen forward (before the activations)", forward));
        }
        let transient = parts.last().filter(|_| self.frozen.is_some()).map(|p| p.1);
        let bytes = parts.iter().map(|p| p.1).sum::<u64>()
            - transient.map_or(0, |forward| forward.min(activations));
        Ok(StepMemory {
            bytes,
            precision: self.precision,
            images: self.rows,
            parts,
        })
    }
}

/// The value of a measured `(fp32, bf16)` row for `precision`.
fn column(precision: Precision, row: (f64, f64)) -> f64 {
    match precision {
        Precision::Fp32 => row.0,
        Precision::Bf16 => row.1,
    }
}

/// The row of [`TRAIN_BYTES_PER_VALUE`] for `arch`.
fn train_bytes(arch: &str) -> Option<(f64, f64)> {
    TRAIN_BYTES_PER_VALUE
        .iter()
        .find(|(a, _, _)| *a == arch)
        .map(|&(_, fp32, bf16)| (fp32, bf16))
}

impl StepMemory {
    /// `peak memory ~ 31.2 GiB (bf16, 40 images per step)`.
    pub fn describe(&self) -> String {
        format!(
            "peak memory ~ {} ({}, {} {} with gradients at once)",
            gib(self.bytes),
            self.precision.name(),
            self.images,
            if self.images == 1 { "image" } else { "images" }
        )
    }
}

/// Bytes in GiB (or MiB below one GiB), one decimal.
pub(crate) fn gib(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else {
        format!("{:.0} MiB", b / (1u64 << 20) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resnet50() -> NetShape {
        NetShape {
            arch: "resnet50".into(),
            width: 64,
            small_stem: false,
            embed_dim: 512,
        }
    }

    fn student(rows: u64, precision: Precision) -> Step {
        Step {
            trained: Trained {
                net: resnet50(),
                moments: 2,
            },
            input: (224, 224),
            rows,
            input_pixels: 1600 * (224 * 224 + 448 * 448),
            frozen: Some(Frozen {
                net: resnet50(),
                input: (448, 448),
                rows,
            }),
            precision,
        }
    }

    fn part(m: &StepMemory, name: &str) -> u64 {
        m.parts.iter().find(|p| p.0 == name).unwrap().1
    }

    #[test]
    fn the_parts_add_up_and_scale_with_the_rows_held_at_once() {
        let whole = student(1600, Precision::Fp32).estimate().unwrap();
        let chunked = student(200, Precision::Fp32).estimate().unwrap();
        let (a, b) = (part(&whole, "activations"), part(&chunked, "activations"));
        assert!(a.abs_diff(8 * b) <= 8, "{a} vs 8 x {b}");
        // AdamW: weights, gradients and two moments, 4 bytes each.
        let params = resnet50().parameters().unwrap();
        assert_eq!(part(&whole, "weights, gradients, optimiser"), 16 * params);
        assert_eq!(
            part(&whole, "inputs"),
            1600 * 3 * 4 * (224 * 224 + 448 * 448)
        );
        // The frozen forward comes before the activations: only the larger counts.
        let sum: u64 = whole.parts.iter().map(|p| p.1).sum();
        let forward = part(&whole, "frozen forward (before the activations)");
        assert_eq!(whole.bytes, sum - forward.min(a));
        let bf16 = student(1600, Precision::Bf16).estimate().unwrap();
        assert!(part(&bf16, "activations") < a);
        assert_eq!(
            part(&bf16, "weights, gradients, optimiser"),
            18 * params,
            "autocast's bf16 copy of the weights"
        );
        assert!(
            whole.describe().starts_with("peak memory ~ "),
            "{}",
            whole.describe()
        );
        assert!(whole
            .describe()
            .ends_with("(fp32, 1600 images with gradients at once)"));
    }

    #[test]
    fn an_unmeasured_architecture_has_no_estimate() {
        let mut step = student(8, Precision::Fp32);
        step.trained.net.arch = "vit".into();
        assert_eq!(
            step.estimate().unwrap_err().to_string(),
            "no memory estimate for `vit`: only resnet18 to resnet152 are measured"
        );
    }
}
