//! The optimiser and learning-rate schedule group: `optimizer`, `lr`, `weight_decay`,
//! `schedule`, `div_factor`, taken by every training kind.
//!
//! `schedule = "one-cycle"` is PyTorch's `OneCycleLR` with its defaults (warm-up over 30% of
//! the steps from `lr / div_factor`, cosine annealing); `"constant"` keeps `lr`. The
//! classifier kinds once spelled it `one_cycle = true | false`, which still works (an alias).

use serde_json::Value;

use crate::kind::{Alias, AliasRewrite, ParamDecl, ParamType, Params, Range, StageError};

/// The group's name in `asymflow kinds`.
pub const NAME: &str = "optimiser and schedule";

/// Optimiser choices, in pipeline spelling.
pub const OPTIMIZERS: &[&str] = &["adamw", "adam"];
/// Schedule choices, in pipeline spelling.
pub const SCHEDULES: &[&str] = &["one-cycle", "constant"];

/// A kind's defaults, as JSON literals (`"\"adamw\""`, `"1e-4"`).
pub struct OptimDefaults {
    /// `optimizer`.
    pub optimizer: &'static str,
    /// `lr`.
    pub lr: &'static str,
    /// `weight_decay`.
    pub weight_decay: &'static str,
}

const ONE_CYCLE: &[Alias] = &[Alias {
    old: "one_cycle",
    instead: "schedule = \"one-cycle\" (true) or \"constant\" (false)",
    rewrite: AliasRewrite::Map(one_cycle_as_schedule),
}];

fn one_cycle_as_schedule(value: &Value) -> Result<Vec<(&'static str, Value)>, String> {
    match value.as_bool() {
        Some(true) => Ok(vec![("schedule", Value::from("one-cycle"))]),
        Some(false) => Ok(vec![("schedule", Value::from("constant"))]),
        None => Err("`one_cycle` took true or false".into()),
    }
}

/// The group's declarations with `d`'s defaults.
pub const fn params(d: OptimDefaults) -> [ParamDecl; 5] {
    [
        ParamDecl::optional(
            "optimizer",
            ParamType::Choice(OPTIMIZERS),
            d.optimizer,
            "optimiser (AdamW: decoupled weight decay)",
        )
        .in_group(NAME),
        ParamDecl::optional("lr", ParamType::Float, d.lr, "peak learning rate")
            .within(Range::above(0.0))
            .in_group(NAME),
        ParamDecl::optional(
            "weight_decay",
            ParamType::Float,
            d.weight_decay,
            "weight decay (decoupled for AdamW)",
        )
        .at_least(0.0)
        .in_group(NAME),
        ParamDecl::optional(
            "schedule",
            ParamType::Choice(SCHEDULES),
            "\"one-cycle\"",
            "learning-rate schedule (one-cycle: PyTorch's OneCycleLR defaults)",
        )
        .in_group(NAME)
        .aliased(ONE_CYCLE),
        ParamDecl::optional(
            "div_factor",
            ParamType::Float,
            "25.0",
            "one-cycle: the first learning rate is lr / div_factor",
        )
        .within(Range::above(0.0))
        .in_group(NAME),
    ]
}

/// The optimiser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Optimizer {
    /// Adam with L2 weight decay in the gradient.
    Adam,
    /// AdamW: decoupled weight decay.
    Adamw,
}

/// The learning-rate schedule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Schedule {
    /// One-cycle from `lr / div_factor`.
    OneCycle {
        /// The first learning rate is `lr / div_factor`.
        div_factor: f64,
    },
    /// `lr` throughout.
    Constant,
}

/// The group's values, checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OptimParams {
    /// `optimizer`.
    pub optimizer: Optimizer,
    /// `lr`: positive and finite.
    pub lr: f64,
    /// `weight_decay`: at least 0.
    pub weight_decay: f64,
    /// `schedule` with `div_factor`.
    pub schedule: Schedule,
}

impl OptimParams {
    /// Reads and checks the group.
    pub fn read(params: &Params) -> Result<OptimParams, StageError> {
        let optimizer = match params.str("optimizer")? {
            "adam" => Optimizer::Adam,
            "adamw" => Optimizer::Adamw,
            other => {
                return Err(StageError::bad_param(
                    "optimizer",
                    format!("`{other}`: expected one of {}", OPTIMIZERS.join(", ")),
                ))
            }
        };
        let lr = params.float("lr")?;
        if !(lr > 0.0 && lr.is_finite()) {
            return Err(StageError::bad_param(
                "lr",
                format!("must be a positive number, got {lr}"),
            ));
        }
        let weight_decay = params.float("weight_decay")?;
        if !(weight_decay >= 0.0 && weight_decay.is_finite()) {
            return Err(StageError::bad_param(
                "weight_decay",
                format!("must be a non-negative number, got {weight_decay}"),
            ));
        }
        let schedule = match params.str("schedule")? {
            "constant" => Schedule::Constant,
            "one-cycle" => {
                let div_factor = params.float("div_factor")?;
                if !(div_factor > 0.0 && div_factor.is_finite()) {
                    return Err(StageError::bad_param(
                        "div_factor",
                        format!("must be a positive number, got {div_factor}"),
                    ));
                }
                Schedule::OneCycle { div_factor }
            }
            other => {
                return Err(StageError::bad_param(
                    "schedule",
                    format!("`{other}`: expected one of {}", SCHEDULES.join(", ")),
                ))
            }
        };
        Ok(OptimParams {
            optimizer,
            lr,
            weight_decay,
            schedule,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::testing::params_of;
    use serde_json::json;

    fn good() -> Params {
        params_of(&[
            ("optimizer", json!("adamw")),
            ("lr", json!(1e-3)),
            ("weight_decay", json!(0.0)),
            ("schedule", json!("one-cycle")),
            ("div_factor", json!(10.0)),
        ])
    }

    #[test]
    fn the_group_reads_into_typed_values() {
        let p = OptimParams::read(&good()).unwrap();
        assert_eq!(p.optimizer, Optimizer::Adamw);
        assert_eq!(p.schedule, Schedule::OneCycle { div_factor: 10.0 });
        let mut constant = good();
        constant.0.insert("schedule".into(), json!("constant"));
        constant.0.insert("div_factor".into(), json!(-1.0));
        assert_eq!(
            OptimParams::read(&constant).unwrap().schedule,
            Schedule::Constant,
            "div_factor only matters to one-cycle"
        );
    }

    #[test]
    fn bad_values_name_the_parameter() {
        for (name, value) in [
            ("lr", json!(0.0)),
            ("weight_decay", json!(-1.0)),
            ("div_factor", json!(0.0)),
        ] {
            let mut p = good();
            p.0.insert(name.into(), value);
            let err = OptimParams::read(&p).unwrap_err().to_string();
            assert!(err.contains(name), "{err}");
        }
    }

    #[test]
    fn one_cycle_maps_onto_schedule() {
        assert_eq!(
            one_cycle_as_schedule(&json!(true)).unwrap(),
            vec![("schedule", json!("one-cycle"))]
        );
        assert_eq!(
            one_cycle_as_schedule(&json!(false)).unwrap(),
            vec![("schedule", json!("constant"))]
        );
        assert!(one_cycle_as_schedule(&json!("yes")).is_err());
    }
}
