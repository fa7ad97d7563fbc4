//! The augmentation group: `geometric`, `crop_min`, `flip`, `jitter`, taken by every training
//! kind (`distill` adds `mixup`, which only its loader mixes).
//!
//! The classifier kinds once spelled the first `augment`, where `false` also turned flips
//! off; the alias keeps that meaning (`augment = false` is `geometric = false, flip = false`).

use serde_json::Value;

use crate::data::AugmentConfig;
use crate::kind::{Alias, AliasRewrite, ParamDecl, ParamType, Params, Range, StageError};

/// The group's name in `asymflow kinds`.
pub const NAME: &str = "augmentation";

/// A kind's defaults, as JSON literals.
pub struct AugmentDefaults {
    /// `jitter` (the distillation recipe uses 0.5; training from labels none).
    pub jitter: &'static str,
}

const AUGMENT: &[Alias] = &[Alias {
    old: "augment",
    instead:
        "geometric = true | false (and flip = false where `augment = false` meant no flips either)",
    rewrite: AliasRewrite::Map(augment_as_geometric),
}];

fn augment_as_geometric(value: &Value) -> Result<Vec<(&'static str, Value)>, String> {
    match value.as_bool() {
        Some(true) => Ok(vec![("geometric", Value::Bool(true))]),
        Some(false) => Ok(vec![
            ("geometric", Value::Bool(false)),
            ("flip", Value::Bool(false)),
        ]),
        None => Err("`augment` took true or false".into()),
    }
}

/// The group's declarations with `d`'s defaults.
pub const fn params(d: AugmentDefaults) -> [ParamDecl; 4] {
    [
        ParamDecl::optional(
            "geometric",
            ParamType::Bool,
            "true",
            "random resized crops (else the whole image, resized)",
        )
        .in_group(NAME)
        .aliased(AUGMENT),
        ParamDecl::optional(
            "crop_min",
            ParamType::Float,
            "0.25",
            "smallest random crop, as a share of the image's area (torchvision's default 0.08)",
        )
        .share()
        .in_group(NAME),
        ParamDecl::optional(
            "flip",
            ParamType::Bool,
            "true",
            "horizontal flips; off where mirroring changes the class (the synthetic set's stripe angles)",
        )
        .in_group(NAME),
        ParamDecl::optional(
            "jitter",
            ParamType::Float,
            d.jitter,
            "colour distortion strength in [0, 1] (0: off)",
        )
        .within(Range::closed(0.0, 1.0))
        .in_group(NAME),
    ]
}

/// The group's values as the loaders' configuration (no mixup: see [`with_mixup`]).
pub(crate) fn augment_config(params: &Params) -> Result<AugmentConfig, StageError> {
    let jitter = params.float("jitter")?;
    if !(0.0..=1.0).contains(&jitter) {
        return Err(StageError::bad_param(
            "jitter",
            format!("colour distortion strength in [0, 1], got {jitter}"),
        ));
    }
    let crop_min = params.float("crop_min")?;
    if !(crop_min > 0.0 && crop_min <= 1.0) {
        return Err(StageError::bad_param(
            "crop_min",
            format!("{crop_min}: the smallest crop's share of the image must be in (0, 1]"),
        ));
    }
    Ok(AugmentConfig {
        geometric: params.bool("geometric")?,
        crop_scale: (crop_min, 1.0),
        flip: params.bool("flip")?,
        jitter,
        mixup_alpha: 0.0,
        ..AugmentConfig::default()
    })
}

/// `config` with mixup's Beta(alpha, alpha), `mixup` of the kinds that declare it (`distill`).
pub(crate) fn with_mixup(config: AugmentConfig, alpha: f64) -> Result<AugmentConfig, StageError> {
    if !(alpha >= 0.0 && alpha.is_finite()) {
        return Err(StageError::bad_param(
            "mixup",
            "Beta(alpha, alpha): alpha must be >= 0 (0 = off)",
        ));
    }
    Ok(AugmentConfig {
        mixup_alpha: alpha,
        ..config
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::testing::params_of;
    use serde_json::json;

    fn good() -> Params {
        params_of(&[
            ("geometric", json!(true)),
            ("flip", json!(true)),
            ("jitter", json!(0.0)),
            ("crop_min", json!(0.08)),
        ])
    }

    #[test]
    fn the_crop_scale_comes_from_crop_min() {
        assert_eq!(augment_config(&good()).unwrap().crop_scale, (0.08, 1.0));
        let mut bad = good();
        bad.0.insert("crop_min".into(), json!(0.0));
        let err = augment_config(&bad).unwrap_err().to_string();
        assert!(err.contains("crop_min"), "{err}");
    }

    #[test]
    fn no_geometry_and_no_flips_is_no_augmentation() {
        let mut p = good();
        p.0.insert("geometric".into(), json!(false));
        p.0.insert("flip".into(), json!(false));
        let cfg = augment_config(&p).unwrap();
        let none = AugmentConfig::none();
        assert_eq!(
            (cfg.geometric, cfg.flip, cfg.jitter, cfg.mixup_alpha),
            (none.geometric, none.flip, none.jitter, none.mixup_alpha)
        );
    }

    #[test]
    fn augment_false_keeps_its_old_meaning() {
        assert_eq!(
            augment_as_geometric(&json!(false)).unwrap(),
            vec![("geometric", json!(false)), ("flip", json!(false))]
        );
        assert_eq!(
            augment_as_geometric(&json!(true)).unwrap(),
            vec![("geometric", json!(true))]
        );
    }
}
