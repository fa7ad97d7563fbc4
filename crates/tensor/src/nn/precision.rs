//! The numeric precision of a training or embedding run (`precision = "fp32" | "bf16"`).
//!
//! `fp32` runs every operation in single precision, exactly as before the parameter existed.
//! `bf16` runs the forward pass and the losses under CUDA autocast in bfloat16: matrix
//! products and convolutions in bf16 on the tensor cores, reductions and normalisations in
//! fp32 as libtorch's autocast lists decide; the weights, their gradients and the optimiser
//! stay fp32. bfloat16 keeps fp32's exponent range, so unlike fp16 it needs no loss scaling.
//!
//! bf16 is refused on CPU with a clear error when the stage starts: libtorch's CPU autocast
//! would run, but slower than fp32 on the CPUs this runs on, and a silently different numeric
//! path on CPU would give a result that is neither the fp32 one nor the GPU's.

use tch::{Device, Tensor};

use super::NnError;

/// The precision of the forward pass. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// Single precision everywhere (the default).
    #[default]
    Fp32,
    /// bfloat16 autocast on CUDA.
    Bf16,
}

/// The spellings of [`Precision`] in pipeline files.
pub const PRECISIONS: &[&str] = &["fp32", "bf16"];

#[cfg(asymflow_bf16)]
extern "C" {
    fn asymflow_autocast_cuda_bf16();
    fn asymflow_autocast_cuda_is_bf16() -> std::os::raw::c_int;
}

impl Precision {
    /// Parses a pipeline's spelling (`"fp32"`, `"bf16"`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "fp32" => Some(Precision::Fp32),
            "bf16" => Some(Precision::Bf16),
            _ => None,
        }
    }

    /// The pipeline spelling.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16",
        }
    }

    /// Checks that this precision can run on `device`: bf16 needs CUDA (and a worker built
    /// with the autocast shim, which every build through `scripts/libtorch.sh` is).
    pub fn check(self, device: Device) -> Result<Self, NnError> {
        match (self, device) {
            (Precision::Fp32, _) => Ok(self),
            (Precision::Bf16, Device::Cuda(_)) if cfg!(asymflow_bf16) => Ok(self),
            (Precision::Bf16, Device::Cuda(_)) => Err(NnError::Precision(
                "precision = \"bf16\": this worker was built without libtorch's headers \
                 (LIBTORCH unset at build time); rebuild after `. scripts/libtorch.sh`"
                    .into(),
            )),
            (Precision::Bf16, _) => Err(NnError::Precision(
                "precision = \"bf16\" needs a CUDA device, but this stage runs on the CPU; \
                 use precision = \"fp32\" on CPU (or run on a GPU machine)"
                    .into(),
            )),
        }
    }

    /// Runs `f` (a forward pass and its loss) in this precision. Gradients computed from the
    /// result flow back through the autocast casts into the fp32 weights.
    pub fn run<T>(self, f: impl FnOnce() -> T) -> T {
        match self {
            Precision::Fp32 => f(),
            Precision::Bf16 => {
                set_cuda_autocast_bf16();
                tch::autocast(true, f)
            }
        }
    }
}

impl Precision {
    /// `x` as fp32 for what follows the forward pass (losses, metrics, saved embeddings): the
    /// same tensor under fp32, a cast (which keeps the gradient path) under bf16.
    pub fn fp32(self, x: &Tensor) -> Tensor {
        match self {
            Precision::Fp32 => x.shallow_clone(),
            Precision::Bf16 => x.to_kind(tch::Kind::Float),
        }
    }
}

/// The `precision` parameter of a stage that runs on `device`: parsed, and refused with the fix
/// when it cannot run there.
pub fn precision_param(
    params: &crate::kind::Params,
    device: Device,
) -> Result<Precision, crate::kind::StageError> {
    let name = params.str("precision")?;
    let precision = Precision::parse(name).ok_or_else(|| {
        crate::kind::StageError::bad_param(
            "precision",
            format!("`{name}`: expected one of {}", PRECISIONS.join(", ")),
        )
    })?;
    precision
        .check(device)
        .map_err(|e| crate::kind::StageError::bad_param("precision", e.to_string()))
}

/// Makes bfloat16 the CUDA autocast dtype of this thread.
fn set_cuda_autocast_bf16() {
    #[cfg(asymflow_bf16)]
    // SAFETY: a plain libtorch call without arguments or pointers (csrc/autocast.cpp).
    unsafe {
        asymflow_autocast_cuda_bf16()
    }
}

/// Whether this thread's CUDA autocast dtype is bfloat16 (`None` without the shim).
#[cfg(asymflow_bf16)]
pub fn cuda_autocast_is_bf16() -> Option<bool> {
    // SAFETY: a plain libtorch getter (csrc/autocast.cpp).
    Some(unsafe { asymflow_autocast_cuda_is_bf16() } != 0)
}

/// Whether this thread's CUDA autocast dtype is bfloat16 (`None` without the shim).
#[cfg(not(asymflow_bf16))]
pub fn cuda_autocast_is_bf16() -> Option<bool> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Kind;

    #[test]
    fn spellings_round_trip_and_unknown_ones_are_refused() {
        for name in PRECISIONS {
            assert_eq!(Precision::parse(name).unwrap().name(), *name);
        }
        assert_eq!(Precision::parse("fp16"), None);
        assert_eq!(Precision::default(), Precision::Fp32);
    }

    #[test]
    fn bf16_is_refused_on_cpu_with_the_fix() {
        assert_eq!(Precision::Fp32.check(Device::Cpu).unwrap(), Precision::Fp32);
        let err = Precision::Bf16.check(Device::Cpu).unwrap_err().to_string();
        assert!(err.contains("needs a CUDA device"), "{err}");
        assert!(err.contains("precision = \"fp32\""), "{err}");
    }

    #[test]
    fn the_shim_sets_the_cuda_autocast_dtype_without_a_gpu() {
        let setter = std::thread::spawn(|| {
            set_cuda_autocast_bf16();
            cuda_autocast_is_bf16()
        });
        assert_eq!(setter.join().unwrap(), Some(true));
        // The dtype is per thread: a fresh thread still has libtorch's default (fp16).
        let fresh = std::thread::spawn(cuda_autocast_is_bf16);
        assert_eq!(fresh.join().unwrap(), Some(false));
    }

    #[test]
    fn fp32_runs_the_closure_unchanged() {
        let x = Tensor::randn([4, 4], (Kind::Float, Device::Cpu));
        let y = Precision::Fp32.run(|| x.matmul(&x));
        assert_eq!(y.kind(), Kind::Float);
        assert!(y.equal(&x.matmul(&x)));
    }
}
