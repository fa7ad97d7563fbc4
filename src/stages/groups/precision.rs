//! The `precision` parameter (`"fp32" | "bf16"`), taken by every kind that runs a network, and
//! [`Precision`], its value. Declared here, below the stages and the memory estimate, because
//! both read it: the tensor kinds run it (asymflow-tensor's `nn::precision` adds the autocast
//! through an extension trait) and `plan`'s memory estimate ([`crate::exec::memory`]) sizes a
//! step by it.
//!
//! `fp32` runs every operation in single precision. `bf16` runs the forward pass under
//! bfloat16 autocast, on CUDA and on CPU alike; the weights, their gradients and the
//! optimiser stay fp32.

use serde::Serialize;

use crate::kind::{ParamDecl, ParamType};

/// The spellings of [`Precision`] in pipeline files.
pub const PRECISIONS: &[&str] = &["fp32", "bf16"];

/// `precision`, shared by the kinds that run a network: `fp32`, or `bf16` autocast on CUDA and
/// CPU (see asymflow-tensor's `nn::precision`).
pub(crate) const PRECISION: ParamDecl = ParamDecl::optional(
    "precision",
    ParamType::Choice(PRECISIONS),
    "\"fp32\"",
    "fp32, or bf16: bfloat16 autocast of the forward pass (fast on GPUs and on CPUs with AVX512-BF16 or AMX)",
);

/// The precision of the forward pass. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Single precision everywhere (the default).
    #[default]
    Fp32,
    /// bfloat16 autocast of the forward pass (CUDA and CPU); weights, gradients and optimiser
    /// stay fp32.
    Bf16,
}

impl Precision {
    /// Parses a pipeline's spelling (`"fp32"`, `"bf16"`); `None` for another spelling.
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip_and_unknown_ones_are_refused() {
        for name in PRECISIONS {
            assert_eq!(Precision::parse(name).unwrap().name(), *name);
        }
        assert_eq!(Precision::parse("fp16"), None);
        assert_eq!(Precision::default(), Precision::Fp32);
        assert_eq!(
            serde_json::to_value([Precision::Fp32, Precision::Bf16]).unwrap(),
            serde_json::json!(["fp32", "bf16"])
        );
    }

    #[test]
    fn the_parameter_offers_every_spelling_and_defaults_to_fp32() {
        assert_eq!(PRECISION.name, "precision");
        assert!(matches!(PRECISION.ty, ParamType::Choice(c) if c == PRECISIONS));
        assert_eq!(PRECISION.default, Some("\"fp32\""));
    }
}
