//! The batching group: `epochs`, `batch_size`, `images_per_epoch`, taken by every training
//! kind. (`accumulate`, gradient accumulation over batches, is declared once in
//! [`crate::stages::training::ACCUMULATE`] and taken by the kinds whose loops accumulate.)

use crate::kind::{ParamDecl, ParamType, Params, StageError};

/// The group's name in `asymflow kinds`.
pub const NAME: &str = "batching";

/// A kind's defaults, as JSON literals.
pub struct BatchingDefaults {
    /// `epochs`.
    pub epochs: &'static str,
    /// `batch_size`.
    pub batch_size: &'static str,
    /// `images_per_epoch` (0: all).
    pub images_per_epoch: &'static str,
}

/// The group's declarations with `d`'s defaults.
pub const fn params(d: BatchingDefaults) -> [ParamDecl; 3] {
    [
        ParamDecl::optional("epochs", ParamType::Int, d.epochs, "training epochs")
            .at_least(1.0)
            .in_group(NAME),
        ParamDecl::optional(
            "batch_size",
            ParamType::Int,
            d.batch_size,
            "images per batch (distill: each gives P views)",
        )
        .at_least(1.0)
        .in_group(NAME),
        ParamDecl::optional(
            "images_per_epoch",
            ParamType::Int,
            d.images_per_epoch,
            "cap on the images of an epoch, drawn afresh each epoch (0: all)",
        )
        .at_least(0.0)
        .in_group(NAME),
    ]
}

/// The group's values, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batching {
    /// `epochs`: at least 1.
    pub epochs: usize,
    /// `batch_size`: at least 1.
    pub batch_size: usize,
    /// `images_per_epoch`, `None` for all.
    pub images_per_epoch: Option<usize>,
}

impl Batching {
    /// Reads and checks the group.
    pub fn read(params: &Params) -> Result<Batching, StageError> {
        let at_least = |name: &str, low: i64| -> Result<usize, StageError> {
            let value = params.int(name)?;
            if value < low {
                return Err(StageError::bad_param(
                    name,
                    format!("must be at least {low}, got {value}"),
                ));
            }
            Ok(value as usize)
        };
        let cap = at_least("images_per_epoch", 0)?;
        Ok(Batching {
            epochs: at_least("epochs", 1)?,
            batch_size: at_least("batch_size", 1)?,
            images_per_epoch: (cap > 0).then_some(cap),
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
            ("epochs", json!(3)),
            ("batch_size", json!(16)),
            ("images_per_epoch", json!(0)),
        ]);
        assert_eq!(
            Batching::read(&good).unwrap(),
            Batching {
                epochs: 3,
                batch_size: 16,
                images_per_epoch: None
            }
        );
        for (name, value) in [
            ("epochs", json!(0)),
            ("batch_size", json!(0)),
            ("images_per_epoch", json!(-5)),
        ] {
            let mut bad = good.clone();
            bad.0.insert(name.into(), value);
            let err = Batching::read(&bad).unwrap_err().to_string();
            assert!(err.contains(name), "{err}");
        }
    }
}
