//! The network group: `arch`, `width`, `stem`, `embed_dim`, `embed_relu`, taken by the kinds
//! that build a network from scratch (`train-teacher`, `train-classifier`, `train-bct`).
//! `distill` describes its student relative to its teacher ("teacher" for the same) and
//! declares its own. `embed_relu` (BCT's Table 3) came after results were cached: it is
//! declared [`ParamDecl::added_later`], so at its default (no ReLU, what the networks always
//! computed) no key changes.

use crate::kind::{ParamDecl, ParamType, Params, StageError};

/// The group's name in `asymflow kinds`.
pub const NAME: &str = "network";

/// Architecture choices, in pipeline spelling.
pub const ARCHS: &[&str] = &["resnet18", "resnet34", "resnet50", "resnet101", "resnet152"];
/// Stem choices.
pub const STEMS: &[&str] = &["imagenet", "small"];

/// A kind's defaults, as JSON literals.
pub struct NetworkDefaults {
    /// `arch`.
    pub arch: &'static str,
    /// `embed_dim`.
    pub embed_dim: &'static str,
}

/// The group's declarations with `d`'s defaults.
pub const fn params(d: NetworkDefaults) -> [ParamDecl; 5] {
    [
        ParamDecl::optional("arch", ParamType::Choice(ARCHS), d.arch, "backbone").in_group(NAME),
        ParamDecl::optional(
            "width",
            ParamType::Int,
            "64",
            "base channels (64: torchvision's; 8-16 on a CPU)",
        )
        .at_least(1.0)
        .in_group(NAME),
        ParamDecl::optional(
            "stem",
            ParamType::Choice(STEMS),
            "\"imagenet\"",
            "imagenet: 7x7/2 convolution + max-pool; small: one 3x3/1 convolution (32-64 px images)",
        )
        .in_group(NAME),
        ParamDecl::optional("embed_dim", ParamType::Int, d.embed_dim, "embedding size D")
            .at_least(1.0)
            .in_group(NAME),
        ParamDecl::optional(
            "embed_relu",
            ParamType::Bool,
            "false",
            "a ReLU between the projection and the final L2 normalisation (BCT's Table 3)",
        )
        .in_group(NAME)
        .added_later(),
    ]
}

/// The group's values, checked (the tensor crate maps the names onto its network types).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkParams {
    /// `arch`, one of [`ARCHS`].
    pub arch: String,
    /// `width`: at least 1.
    pub width: i64,
    /// `stem`, one of [`STEMS`].
    pub stem: String,
    /// `embed_dim`: at least 1.
    pub embed_dim: i64,
    /// `embed_relu`: a ReLU on the embedding, before its normalisation.
    pub embed_relu: bool,
}

impl NetworkParams {
    /// Reads and checks the group.
    pub fn read(params: &Params) -> Result<NetworkParams, StageError> {
        let choice = |name: &str, options: &[&str]| -> Result<String, StageError> {
            let value = params.str(name)?;
            if options.contains(&value) {
                Ok(value.to_string())
            } else {
                Err(StageError::bad_param(
                    name,
                    format!("`{value}`: expected one of {}", options.join(", ")),
                ))
            }
        };
        let positive = |name: &str| -> Result<i64, StageError> {
            let value = params.int(name)?;
            if value < 1 {
                return Err(StageError::bad_param(
                    name,
                    format!("must be at least 1, got {value}"),
                ));
            }
            Ok(value)
        };
        Ok(NetworkParams {
            arch: choice("arch", ARCHS)?,
            width: positive("width")?,
            stem: choice("stem", STEMS)?,
            embed_dim: positive("embed_dim")?,
            embed_relu: params.bool("embed_relu")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::testing::params_of;
    use serde_json::json;

    #[test]
    fn the_group_reads_and_checks_its_values() {
        let good = params_of(&[
            ("arch", json!("resnet34")),
            ("width", json!(8)),
            ("stem", json!("small")),
            ("embed_dim", json!(32)),
            ("embed_relu", json!(true)),
        ]);
        let net = NetworkParams::read(&good).unwrap();
        assert_eq!((net.arch.as_str(), net.width), ("resnet34", 8));
        assert!(net.embed_relu);
        for (name, value) in [
            ("width", json!(0)),
            ("embed_dim", json!(-1)),
            ("arch", json!("vgg")),
            ("embed_relu", json!("yes")),
        ] {
            let mut bad = good.clone();
            bad.0.insert(name.into(), value);
            let err = NetworkParams::read(&bad).unwrap_err().to_string();
            assert!(err.contains(name), "{err}");
        }
    }

    #[test]
    fn embed_relu_enters_the_key_only_when_set() {
        let decls = params(NetworkDefaults {
            arch: "\"resnet18\"",
            embed_dim: "128",
        });
        let relu = decls.iter().find(|d| d.name == "embed_relu").unwrap();
        assert!(!relu.keyed_value(&json!(false)), "at its default");
        assert!(relu.keyed_value(&json!(true)), "set");
        for other in decls.iter().filter(|d| d.name != "embed_relu") {
            let default = other.default_value().unwrap();
            assert!(other.keyed_value(&default), "{} stays keyed", other.name);
        }
    }
}
