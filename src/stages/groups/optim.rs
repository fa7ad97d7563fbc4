//! The optimiser and learning-rate schedule group: `optimizer`, `lr`, `weight_decay`,
//! `momentum`, `nesterov`, `schedule`, `div_factor`, `milestones`, `gamma`, `warmup_epochs`,
//! taken by every training kind.
//!
//! `optimizer = "sgd"` is `torch.optim.SGD` (weight decay as L2 in the gradient, `momentum`,
//! `nesterov`), as BCT trained. `schedule = "one-cycle"` is PyTorch's `OneCycleLR` with its
//! defaults (warm-up over 30% of the steps from `lr / div_factor`, cosine annealing);
//! `"constant"` keeps `lr`; `"multi-step"` multiplies it by `gamma` at each of `milestones`
//! (epochs), as `MultiStepLR` stepped once per epoch (a single step schedule is one
//! milestone). `warmup_epochs` ramps the rate up linearly, step by step, over the first epochs
//! of a constant or multi-step schedule (one-cycle has its own warm-up and refuses it). The
//! classifier kinds once spelled the schedule `one_cycle = true | false`, which still works
//! (an alias).
//!
//! `momentum`, `nesterov`, `milestones`, `gamma` and `warmup_epochs` came after results were
//! cached: they are declared [`ParamDecl::added_later`], so at their defaults (which compute
//! exactly what the kinds computed before) they stay out of the key.

use serde_json::Value;

use crate::kind::{Alias, AliasRewrite, ParamDecl, ParamType, Params, Range, StageError};

/// The group's name in `asymflow kinds`.
pub const NAME: &str = "optimiser and schedule";

/// Optimiser choices, in pipeline spelling.
pub(crate) const OPTIMIZERS: &[&str] = &["adamw", "adam", "sgd"];
/// Schedule choices, in pipeline spelling.
pub(crate) const SCHEDULES: &[&str] = &["one-cycle", "constant", "multi-step"];

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
pub const fn params(d: OptimDefaults) -> [ParamDecl; 10] {
    [
        ParamDecl::optional(
            "optimizer",
            ParamType::Choice(OPTIMIZERS),
            d.optimizer,
            "optimiser (AdamW: decoupled weight decay; SGD and Adam: L2 in the gradient)",
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
        ParamDecl::optional("momentum", ParamType::Float, "0.9", "sgd: momentum")
            .within(Range::from_below(0.0, 1.0))
            .in_group(NAME)
            .added_later(),
        ParamDecl::optional(
            "nesterov",
            ParamType::Bool,
            "false",
            "sgd: Nesterov momentum (needs momentum > 0)",
        )
        .in_group(NAME)
        .added_later(),
        ParamDecl::optional(
            "schedule",
            ParamType::Choice(SCHEDULES),
            "\"one-cycle\"",
            "learning-rate schedule (one-cycle: PyTorch's OneCycleLR defaults; multi-step: \
             lr times gamma at each of milestones)",
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
        ParamDecl::optional(
            "milestones",
            ParamType::List(&ParamType::Int),
            "[]",
            "multi-step: epochs (increasing, below epochs) at which lr is multiplied by gamma",
        )
        .at_least(1.0)
        .in_group(NAME)
        .added_later(),
        ParamDecl::optional(
            "gamma",
            ParamType::Float,
            "0.1",
            "multi-step: the factor at each milestone",
        )
        .within(Range::above(0.0))
        .in_group(NAME)
        .added_later(),
        ParamDecl::optional(
            "warmup_epochs",
            ParamType::Int,
            "0",
            "constant, multi-step: linear warm-up of lr, per step, over the first epochs",
        )
        .at_least(0.0)
        .in_group(NAME)
        .added_later(),
    ]
}

/// The optimiser.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Optimizer {
    /// Adam with L2 weight decay in the gradient.
    Adam,
    /// AdamW: decoupled weight decay.
    Adamw,
    /// SGD (`torch.optim.SGD`): L2 weight decay in the gradient, heavy-ball or Nesterov
    /// momentum.
    Sgd {
        /// The momentum factor in `[0, 1)` (0: plain SGD).
        momentum: f64,
        /// Nesterov momentum.
        nesterov: bool,
    },
}

/// The learning-rate schedule.
#[derive(Debug, Clone, PartialEq)]
pub enum Schedule {
    /// One-cycle from `lr / div_factor`.
    OneCycle {
        /// The first learning rate is `lr / div_factor`.
        div_factor: f64,
    },
    /// `lr` throughout (after the warm-up).
    Constant {
        /// Epochs of linear warm-up.
        warmup_epochs: usize,
    },
    /// `lr` times `gamma` at each milestone epoch (after the warm-up).
    MultiStep {
        /// Strictly increasing epochs, each at least 1 and below the run's epochs.
        milestones: Vec<usize>,
        /// The factor at each milestone.
        gamma: f64,
        /// Epochs of linear warm-up.
        warmup_epochs: usize,
    },
}

/// The group's values, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct OptimParams {
    /// `optimizer`.
    pub optimizer: Optimizer,
    /// `lr`: positive and finite.
    pub lr: f64,
    /// `weight_decay`: at least 0.
    pub weight_decay: f64,
    /// `schedule` with its own parameters.
    pub schedule: Schedule,
}

impl OptimParams {
    /// Reads and checks the group; `epochs` (the batching group's) bounds the milestones and
    /// the warm-up.
    pub fn read(params: &Params) -> Result<OptimParams, StageError> {
        let epochs = params.usize("epochs")?;
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
        Ok(OptimParams {
            optimizer: read_optimizer(params)?,
            lr,
            weight_decay,
            schedule: read_schedule(params, epochs)?,
        })
    }
}

fn read_optimizer(params: &Params) -> Result<Optimizer, StageError> {
    Ok(match params.str("optimizer")? {
        "adam" => Optimizer::Adam,
        "adamw" => Optimizer::Adamw,
        "sgd" => {
            let momentum = params.float("momentum")?;
            if !(0.0..1.0).contains(&momentum) {
                return Err(StageError::bad_param(
                    "momentum",
                    format!("must be in [0, 1), got {momentum}"),
                ));
            }
            let nesterov = params.bool("nesterov")?;
            if nesterov && momentum == 0.0 {
                return Err(StageError::bad_param(
                    "nesterov",
                    "Nesterov momentum needs momentum > 0 (set momentum, or nesterov = false)",
                ));
            }
            Optimizer::Sgd { momentum, nesterov }
        }
        other => {
            return Err(StageError::bad_param(
                "optimizer",
                format!("`{other}`: expected one of {}", OPTIMIZERS.join(", ")),
            ))
        }
    })
}

fn read_schedule(params: &Params, epochs: usize) -> Result<Schedule, StageError> {
    let warmup_epochs = params.usize("warmup_epochs")?;
    let schedule = params.str("schedule")?;
    if warmup_epochs > 0 && schedule == "one-cycle" {
        return Err(StageError::bad_param(
            "warmup_epochs",
            "one-cycle has its own warm-up (30% of the steps from lr / div_factor); \
             set warmup_epochs = 0, or schedule = \"constant\" or \"multi-step\"",
        ));
    }
    if warmup_epochs > epochs {
        return Err(StageError::bad_param(
            "warmup_epochs",
            format!("{warmup_epochs} is more than the run's {epochs} epochs"),
        ));
    }
    let milestones = params.ints("milestones")?;
    if schedule != "multi-step" && !milestones.is_empty() {
        return Err(StageError::bad_param(
            "milestones",
            format!("only schedule = \"multi-step\" reads milestones (schedule is \"{schedule}\")"),
        ));
    }
    Ok(match schedule {
        "constant" => Schedule::Constant { warmup_epochs },
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
        "multi-step" => {
            let gamma = params.float("gamma")?;
            if !(gamma > 0.0 && gamma.is_finite()) {
                return Err(StageError::bad_param(
                    "gamma",
                    format!("must be a positive number, got {gamma}"),
                ));
            }
            Schedule::MultiStep {
                milestones: check_milestones(&milestones, epochs)?,
                gamma,
                warmup_epochs,
            }
        }
        other => {
            return Err(StageError::bad_param(
                "schedule",
                format!("`{other}`: expected one of {}", SCHEDULES.join(", ")),
            ))
        }
    })
}

/// Milestones as epochs: at least one, strictly increasing, each in `[1, epochs)` (a
/// milestone at or after the last epoch would never lower the rate).
fn check_milestones(milestones: &[i64], epochs: usize) -> Result<Vec<usize>, StageError> {
    let bad = |why: String| StageError::bad_param("milestones", why);
    if milestones.is_empty() {
        return Err(bad(
            "schedule = \"multi-step\" needs at least one milestone (epochs, e.g. [8, 12, 14])"
                .into(),
        ));
    }
    let mut out = Vec::with_capacity(milestones.len());
    for &m in milestones {
        if m < 1 || m as u64 >= epochs as u64 {
            return Err(bad(format!(
                "{m} is not an epoch of the run: each milestone must be in [1, {}) with epochs = \
                 {epochs} (shrinking epochs? shrink the milestones with it)",
                epochs
            )));
        }
        let m = m as usize;
        if out.last().is_some_and(|&last| m <= last) {
            return Err(bad(format!("{milestones:?} must be strictly increasing")));
        }
        out.push(m);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::testing::params_of;
    use serde_json::json;

    fn good() -> Params {
        params_of(&[
            ("epochs", json!(16)),
            ("optimizer", json!("adamw")),
            ("lr", json!(1e-3)),
            ("weight_decay", json!(0.0)),
            ("momentum", json!(0.9)),
            ("nesterov", json!(false)),
            ("schedule", json!("one-cycle")),
            ("div_factor", json!(10.0)),
            ("milestones", json!([])),
            ("gamma", json!(0.1)),
            ("warmup_epochs", json!(0)),
        ])
    }

    fn with(pairs: &[(&str, Value)]) -> Params {
        let mut p = good();
        for (name, value) in pairs {
            p.0.insert(name.to_string(), value.clone());
        }
        p
    }

    #[test]
    fn the_group_reads_into_typed_values() {
        let p = OptimParams::read(&good()).unwrap();
        assert_eq!(p.optimizer, Optimizer::Adamw);
        assert_eq!(p.schedule, Schedule::OneCycle { div_factor: 10.0 });
        let constant = with(&[("schedule", json!("constant")), ("div_factor", json!(-1.0))]);
        assert_eq!(
            OptimParams::read(&constant).unwrap().schedule,
            Schedule::Constant { warmup_epochs: 0 },
            "div_factor only matters to one-cycle"
        );
        let bct = with(&[
            ("optimizer", json!("sgd")),
            ("nesterov", json!(true)),
            ("schedule", json!("multi-step")),
            ("milestones", json!([8, 12, 14])),
            ("warmup_epochs", json!(1)),
        ]);
        let p = OptimParams::read(&bct).unwrap();
        assert_eq!(
            p.optimizer,
            Optimizer::Sgd {
                momentum: 0.9,
                nesterov: true
            }
        );
        assert_eq!(
            p.schedule,
            Schedule::MultiStep {
                milestones: vec![8, 12, 14],
                gamma: 0.1,
                warmup_epochs: 1
            }
        );
    }

    #[test]
    fn bad_values_name_the_parameter() {
        for (name, value) in [
            ("lr", json!(0.0)),
            ("weight_decay", json!(-1.0)),
            ("div_factor", json!(0.0)),
        ] {
            let err = OptimParams::read(&with(&[(name, value)]))
                .unwrap_err()
                .to_string();
            assert!(err.contains(name), "{err}");
        }
    }

    #[test]
    fn schedule_parameters_are_checked_against_the_run() {
        let multi = |milestones: Value| {
            OptimParams::read(&with(&[
                ("schedule", json!("multi-step")),
                ("milestones", milestones),
            ]))
        };
        for (milestones, says) in [
            (json!([]), "at least one milestone"),
            (json!([8, 8]), "strictly increasing"),
            (json!([12, 8]), "strictly increasing"),
            (json!([16]), "[1, 16)"),
            (json!([0]), "[1, 16)"),
        ] {
            let err = multi(milestones).unwrap_err().to_string();
            assert!(err.contains("milestones") && err.contains(says), "{err}");
        }
        assert!(multi(json!([15])).is_ok());
        let err = OptimParams::read(&with(&[("milestones", json!([8]))]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("only schedule = \"multi-step\""), "{err}");
        let err = OptimParams::read(&with(&[("warmup_epochs", json!(2))]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("warmup_epochs") && err.contains("own warm-up"),
            "{err}"
        );
        let err = OptimParams::read(&with(&[
            ("schedule", json!("constant")),
            ("warmup_epochs", json!(17)),
        ]))
        .unwrap_err()
        .to_string();
        assert!(err.contains("more than the run's 16 epochs"), "{err}");
        for (name, value) in [
            ("momentum", json!(1.0)),
            ("momentum", json!(-0.1)),
            ("gamma", json!(0.0)),
        ] {
            let p = with(&[
                ("optimizer", json!("sgd")),
                ("schedule", json!("multi-step")),
                ("milestones", json!([8])),
                (name, value),
            ]);
            let err = OptimParams::read(&p).unwrap_err().to_string();
            assert!(err.contains(name), "{err}");
        }
        let err = OptimParams::read(&with(&[
            ("optimizer", json!("sgd")),
            ("momentum", json!(0.0)),
            ("nesterov", json!(true)),
        ]))
        .unwrap_err()
        .to_string();
        assert!(err.contains("nesterov"), "{err}");
    }

    #[test]
    fn parameters_added_later_leave_the_key_at_their_defaults() {
        let decls = params(OptimDefaults {
            optimizer: "\"adamw\"",
            lr: "1e-3",
            weight_decay: "0.0",
        });
        let decl = |name: &str| *decls.iter().find(|d| d.name == name).unwrap();
        for (name, default, other) in [
            ("momentum", json!(0.9), json!(0.5)),
            ("nesterov", json!(false), json!(true)),
            ("milestones", json!([]), json!([8])),
            ("gamma", json!(0.1), json!(0.5)),
            ("warmup_epochs", json!(0), json!(1)),
        ] {
            assert!(!decl(name).keyed_value(&default), "{name} at its default");
            assert!(decl(name).keyed_value(&other), "{name} set");
        }
        assert!(
            !decl("warmup_epochs").keyed_value(&json!(0.0)),
            "0.0 is the default 0"
        );
        for name in ["optimizer", "lr", "weight_decay", "schedule", "div_factor"] {
            assert!(decl(name).keyed_value(&decl(name).default_value().unwrap()));
        }
    }

    const ADDED: [&str; 5] = [
        "momentum",
        "nesterov",
        "milestones",
        "gamma",
        "warmup_epochs",
    ];

    /// A key's parameter part as `instance_key` builds it (canonical JSON), with `drop`
    /// removed first; and the names it holds.
    fn keyed(
        stage: &dyn crate::kind::Stage,
        overrides: &Value,
        drop: &[&str],
    ) -> (Vec<String>, String) {
        let params = crate::stages::testing::params_with_defaults(stage, overrides.clone());
        let keyed: std::collections::BTreeMap<String, Value> = params
            .0
            .into_iter()
            .filter(|(name, value)| {
                !drop.contains(&name.as_str()) && stage.keyed_value(name, value)
            })
            .map(|(k, v)| (k, crate::cache::key::canonical(&v)))
            .collect();
        (
            keyed.keys().cloned().collect(),
            serde_json::to_string(&keyed).unwrap(),
        )
    }

    #[test]
    fn existing_training_keys_are_unchanged_and_sgd_changes_them() {
        use crate::stages::{distill::Distill, train_bct::TrainBct};
        use crate::stages::{train_classifier::TrainClassifier, train_teacher::TrainTeacher};
        let kinds: [(&dyn crate::kind::Stage, Value); 4] = [
            (&TrainTeacher, json!({})),
            (&Distill, json!({})),
            (&TrainClassifier, json!({"partition": "train"})),
            (&TrainBct, json!({"partition": "train"})),
        ];
        for (stage, overrides) in kinds {
            let kind = stage.summary();
            // Before the five existed, a key held every other declared parameter: the same
            // parameters, with the same values, as now.
            let (names, now) = keyed(stage, &overrides, &[]);
            let (_, before) = keyed(stage, &overrides, &ADDED);
            assert_eq!(now, before, "{kind}: a default key moved");
            for added in ADDED {
                assert!(
                    !names.iter().any(|n| n == added),
                    "{kind}: {added} keyed at its default"
                );
            }
            let mut sgd = overrides.clone();
            sgd["optimizer"] = json!("sgd");
            sgd["nesterov"] = json!(true);
            let (names, changed) = keyed(stage, &sgd, &[]);
            assert_ne!(changed, now, "{kind}");
            assert!(names.iter().any(|n| n == "nesterov"), "{kind}: {names:?}");
            let mut steps = overrides.clone();
            steps["schedule"] = json!("multi-step");
            steps["milestones"] = json!([1]);
            let (names, _) = keyed(stage, &steps, &[]);
            assert!(names.iter().any(|n| n == "milestones"), "{kind}: {names:?}");
            assert!(
                !names.iter().any(|n| n == "gamma"),
                "{kind}: gamma at its default"
            );
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
