//! Running a forward pass in a [`Precision`] (`precision = "fp32" | "bf16"`): the
//! [`Autocast`] extension of the engine's enum (`asymflow::stages::groups::precision`, where
//! the parameter and its spellings are declared once for the kinds and the memory estimate),
//! with what needs libtorch.
//!
//! `fp32` runs every operation in single precision, exactly as before the parameter existed.
//! `bf16` runs the forward pass under libtorch's autocast in bfloat16, on CUDA and on CPU alike:
//! convolutions and matrix products in bf16, normalisations and reductions as libtorch's
//! autocast lists decide; the losses are computed on fp32 copies of the embeddings, and the
//! weights, their gradients and the optimiser stay fp32. bfloat16 keeps fp32's exponent range,
//! so unlike fp16 it needs no loss scaling.
//!
//! On CPU, bf16 is fast where the CPU has bf16 instructions (AVX512-BF16, and AMX on Sapphire
//! Rapids and later): measured on the 2-core VM (Xeon with AMX), a width-16 ResNet-18 training
//! step at 64 px took 2.74 ms per image against 6.66 in fp32, and an eval forward 0.63 against
//! 1.65 (PyTorch 2.11, the same kernels). Elsewhere oneDNN emulates it and it is slower than
//! fp32, which a stage says in its log when it starts ([`Autocast::note`]). The computation a
//! key names is the same on both (bf16 autocast); only the speed differs.
//!
//! tch's own `autocast` only covers CUDA, in fp16, so the region is entered and left through a
//! small C++ shim (`csrc/autocast.cpp`) compiled against libtorch's headers.

use asymflow::stages::groups::precision::{Precision, PRECISIONS};
use tch::{Device, Tensor};

use super::error::NnError;

#[cfg(asymflow_bf16)]
extern "C" {
    fn asymflow_autocast_bf16_enter() -> std::os::raw::c_int;
    fn asymflow_autocast_bf16_exit(previous: std::os::raw::c_int);
}

/// What a [`Precision`] does with libtorch: checked against this build, noted against the
/// device, and run around a forward pass.
pub trait Autocast: Sized {
    /// Checks that this precision can run here: bf16 needs a worker built with the autocast
    /// shim, which every build through `scripts/libtorch.sh` is.
    fn check(self) -> Result<Self, NnError>;

    /// A line for the stage's log when this precision runs slowly on `device`: bf16 on a CPU
    /// without bf16 instructions.
    fn note(self, device: Device) -> Option<&'static str>;

    /// Runs `f` (a forward pass) in this precision. Gradients computed from the result flow
    /// back through the autocast casts into the fp32 weights.
    fn run<T>(self, f: impl FnOnce() -> T) -> T;

    /// `x` as fp32 for what follows the forward pass (losses, metrics, saved embeddings): the
    /// same tensor under fp32, a cast (which keeps the gradient path) under bf16.
    fn fp32(self, x: &Tensor) -> Tensor;
}

impl Autocast for Precision {
    fn check(self) -> Result<Self, NnError> {
        match self {
            Precision::Bf16 if !cfg!(asymflow_bf16) => Err(NnError::Precision(
                "precision = \"bf16\": this worker was built without libtorch's headers \
                 (LIBTORCH unset at build time); rebuild after `. scripts/libtorch.sh`, \
                 or use precision = \"fp32\""
                    .into(),
            )),
            _ => Ok(self),
        }
    }

    fn note(self, device: Device) -> Option<&'static str> {
        (self == Precision::Bf16 && device == Device::Cpu && !cpu_has_bf16()).then_some(
            "precision = \"bf16\": this CPU has no bf16 instructions (AVX512-BF16 or AMX), so \
             bf16 is emulated and slower than fp32 here; the result is the same computation",
        )
    }

    fn run<T>(self, f: impl FnOnce() -> T) -> T {
        match self {
            Precision::Fp32 => f(),
            Precision::Bf16 => {
                let _region = AutocastBf16::enter();
                f()
            }
        }
    }

    fn fp32(self, x: &Tensor) -> Tensor {
        match self {
            Precision::Fp32 => x.shallow_clone(),
            Precision::Bf16 => x.to_kind(tch::Kind::Float),
        }
    }
}

/// A bfloat16 autocast region on this thread, left when dropped (also on a panic).
struct AutocastBf16 {
    #[cfg(asymflow_bf16)]
    previous: std::os::raw::c_int,
}

impl AutocastBf16 {
    fn enter() -> Self {
        AutocastBf16 {
            #[cfg(asymflow_bf16)]
            // SAFETY: plain libtorch calls on thread-local state (csrc/autocast.cpp).
            previous: unsafe { asymflow_autocast_bf16_enter() },
        }
    }
}

impl Drop for AutocastBf16 {
    fn drop(&mut self) {
        #[cfg(asymflow_bf16)]
        // SAFETY: leaves the region `enter` opened on this thread (csrc/autocast.cpp).
        unsafe {
            asymflow_autocast_bf16_exit(self.previous)
        }
    }
}

/// Whether this CPU has bfloat16 instructions (AVX512-BF16, which every AMX CPU also has).
fn cpu_has_bf16() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("bf16")
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

/// The `precision` parameter of a stage (`name`, as the kind's typed parameters hold it):
/// parsed, and refused with the fix when it cannot run in this worker.
pub fn precision_param(name: &str) -> Result<Precision, crate::kind::StageError> {
    let precision = Precision::parse(name).ok_or_else(|| {
        crate::kind::StageError::bad_param(
            "precision",
            format!("`{name}`: expected one of {}", PRECISIONS.join(", ")),
        )
    })?;
    precision
        .check()
        .map_err(|e| crate::kind::StageError::bad_param("precision", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Kind;

    #[cfg(asymflow_bf16)]
    extern "C" {
        fn asymflow_autocast_is_bf16(cuda: std::os::raw::c_int) -> std::os::raw::c_int;
        fn asymflow_autocast_is_enabled(cuda: std::os::raw::c_int) -> std::os::raw::c_int;
    }

    /// This thread's autocast state for CUDA (`cuda`) or CPU: (enabled, dtype is bfloat16), or
    /// `None` without the shim.
    fn autocast_state(cuda: bool) -> Option<(bool, bool)> {
        #[cfg(asymflow_bf16)]
        {
            let cuda = std::os::raw::c_int::from(cuda);
            // SAFETY: plain libtorch getters (csrc/autocast.cpp).
            Some(unsafe {
                (
                    asymflow_autocast_is_enabled(cuda) != 0,
                    asymflow_autocast_is_bf16(cuda) != 0,
                )
            })
        }
        #[cfg(not(asymflow_bf16))]
        {
            let _ = cuda;
            None
        }
    }

    #[test]
    fn bf16_runs_on_cpu_and_the_note_is_only_for_cpus_without_bf16_instructions() {
        assert_eq!(Precision::Fp32.check().unwrap(), Precision::Fp32);
        assert_eq!(Precision::Bf16.check().unwrap(), Precision::Bf16);
        assert_eq!(Precision::Fp32.note(Device::Cpu), None);
        assert_eq!(Precision::Bf16.note(Device::Cuda(0)), None);
        let note = Precision::Bf16.note(Device::Cpu);
        assert_eq!(note.is_some(), !cpu_has_bf16());
        if let Some(note) = note {
            assert!(note.contains("slower than fp32"), "{note}");
        }
    }

    #[test]
    fn the_bf16_region_turns_cpu_and_cuda_autocast_on_and_restores_them() {
        // A fresh thread: autocast is off, whatever other tests did on theirs; CUDA's dtype is
        // libtorch's default fp16 (CPU's default is already bf16).
        std::thread::spawn(|| {
            assert_eq!(autocast_state(false).map(|s| s.0), Some(false));
            assert_eq!(autocast_state(true), Some((false, false)));
            let inside = Precision::Bf16.run(|| {
                let nested = Precision::Bf16.run(|| autocast_state(false));
                (nested, autocast_state(false), autocast_state(true))
            });
            assert_eq!(
                inside,
                (Some((true, true)), Some((true, true)), Some((true, true)))
            );
            assert_eq!(autocast_state(false).map(|s| s.0), Some(false));
            assert_eq!(autocast_state(true).map(|s| s.0), Some(false));
            let panicked = std::panic::catch_unwind(|| Precision::Bf16.run(|| panic!("in f")));
            assert!(panicked.is_err());
            assert_eq!(
                autocast_state(false).map(|s| s.0),
                Some(false),
                "left on a panic"
            );
        })
        .join()
        .unwrap();
    }

    #[test]
    fn bf16_convolves_in_bfloat16_on_cpu_close_to_fp32() {
        tch::manual_seed(0);
        let x = Tensor::randn([2, 8, 12, 12], (Kind::Float, Device::Cpu));
        let w = Tensor::randn([16, 8, 3, 3], (Kind::Float, Device::Cpu));
        let conv = |x: &Tensor| x.conv2d(&w, None::<Tensor>, [1, 1], [1, 1], [1, 1], 1);
        let exact = conv(&x);
        let low = Precision::Bf16.run(|| conv(&x));
        assert_eq!(low.kind(), Kind::BFloat16);
        let low = Precision::Bf16.fp32(&low);
        assert_eq!(low.kind(), Kind::Float);
        let rel = (&low - &exact).norm().double_value(&[]) / exact.norm().double_value(&[]);
        assert!(rel > 0.0 && rel < 1e-2, "relative error {rel}");
        assert_eq!(Precision::Fp32.run(|| conv(&x)).kind(), Kind::Float);
    }

    #[test]
    fn fp32_runs_the_closure_unchanged() {
        let x = Tensor::randn([4, 4], (Kind::Float, Device::Cpu));
        let y = Precision::Fp32.run(|| x.matmul(&x));
        assert_eq!(y.kind(), Kind::Float);
        assert!(y.equal(&x.matmul(&x)));
    }
}
