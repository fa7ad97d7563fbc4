//! The tensor side of what the network stages share: the network and optimiser
//! configurations, from the engine's typed parameter groups (`asymflow::stages::groups`), the
//! precision note, and what a run counts over its epochs ([`Tally`]). The rest (opening the
//! split, augmentation parameters, the loss curve) is the engine's, re-exported here.

pub use asymflow::stages::groups::batching::Batching;
pub use asymflow::stages::training::*;

use asymflow::stages::groups::network::NetworkParams;
use asymflow::stages::groups::optim::{OptimParams, Optimizer, Schedule};

use crate::kind::{StageContext, StageError};
use crate::nn::precision::Autocast;
use crate::nn::timing::RunTimes;
use crate::nn::{
    Arch, NetConfig, Optim, OptimConfig, OptimKind, Pool, Precision, ScheduleConfig, Stem,
};
use crate::TorchResult;

/// The optimiser group ([`OptimParams`]) as the optimiser's configuration.
pub fn optim_config(group: &OptimParams) -> OptimConfig {
    let schedule = match group.schedule.clone() {
        Schedule::OneCycle { div_factor } => ScheduleConfig::OneCycle { div_factor },
        Schedule::Constant { warmup_epochs } => ScheduleConfig::Stepped {
            milestones: Vec::new(),
            gamma: 1.0,
            warmup_epochs,
        },
        Schedule::MultiStep {
            milestones,
            gamma,
            warmup_epochs,
        } => ScheduleConfig::Stepped {
            milestones,
            gamma,
            warmup_epochs,
        },
    };
    OptimConfig {
        kind: match group.optimizer {
            Optimizer::Adam => OptimKind::Adam,
            Optimizer::Adamw => OptimKind::Adamw,
            Optimizer::Sgd { momentum, nesterov } => OptimKind::Sgd { momentum, nesterov },
        },
        lr: group.lr,
        weight_decay: group.weight_decay,
        schedule,
    }
}

/// `optim` with GeM's `p` trained as `gem_p_lr_scale` and `gem_p_decay` say ([`GemParams`],
/// checked when read), for a network that has GeM pooling (other networks have no `p`).
pub fn gem_group(optim: Optim, net: &NetConfig, gem: GemParams) -> Optim {
    if net.pool == Pool::Gem {
        optim.with_gem_group(gem.lr_scale, gem.decay)
    } else {
        optim
    }
}

/// Logs, when the stage starts, that `precision` runs slowly on this stage's device
/// ([`Autocast::note`]: bf16 on a CPU without bf16 instructions).
pub fn note_precision(ctx: &mut StageContext<'_>, precision: Precision) {
    if let Some(note) = precision.note(crate::worker::torch_device(ctx.device())) {
        ctx.log(note);
    }
}

/// What `train-teacher` and `distill` count over their epochs: the loss curve, where the time
/// went, the images seen.
pub(crate) struct Tally {
    /// The epochs' losses, written as `loss.json`.
    pub(crate) curve: LossCurve,
    /// Time spent waiting for data, against the steps' own ([`RunTimes::line`]).
    pub(crate) times: RunTimes,
    /// Images trained on.
    pub(crate) images: usize,
}

impl Tally {
    /// Nothing counted yet; the run's clock starts now.
    pub(crate) fn start() -> Tally {
        Tally {
            curve: LossCurve::default(),
            times: RunTimes::start(),
            images: 0,
        }
    }
}

/// The optimiser settings of a loop that accumulates gradients (`train-teacher`, `distill`).
pub(crate) struct LoopOptim<'a> {
    /// The optimiser group.
    pub(crate) optim: &'a OptimParams,
    /// GeM's `p` learning-rate scale and decay.
    pub(crate) gem: GemParams,
    /// The run's epochs (the schedule spans them all).
    pub(crate) epochs: usize,
    /// `accumulate` as written (clamped here to the batches of an epoch).
    pub(crate) accumulate: usize,
}

/// The optimiser of `vs` (with GeM's group for a GeM `net`) scheduled over the epochs' steps
/// of `batches` batches each, at the start of epoch `start_epoch` (0 unless resumed), and the
/// `accumulate` to use, clamped to the batches of an epoch (the clamp's warning logged).
pub(crate) fn accumulating_optim(
    ctx: &mut StageContext<'_>,
    settings: LoopOptim<'_>,
    vs: &tch::nn::VarStore,
    net: &NetConfig,
    batches: usize,
    start_epoch: usize,
) -> Result<(Optim, usize), StageError> {
    let (accumulate, warning) = clamp_accumulate(settings.accumulate, batches);
    if let Some(warning) = warning {
        ctx.log(warning);
    }
    let steps_per_epoch = batches.div_ceil(accumulate);
    let optim = Optim::new(
        vs,
        &optim_config(settings.optim),
        settings.epochs,
        steps_per_epoch,
    )
    .torch()?;
    let optim = gem_group(optim, net, settings.gem).starting_at(start_epoch * steps_per_epoch);
    Ok((optim, accumulate))
}

/// The `accumulate` a run uses: at most the batches an epoch has. An epoch ends with a step
/// on whatever has accumulated, so with fewer batches than `accumulate` every step would be a
/// partial one with its gradient scaled down by `batches / accumulate` (a shrunk SOP run with
/// `accumulate = 20` trained a far worse teacher that way). Returns the value and, when it
/// was clamped, the warning to log.
pub fn clamp_accumulate(accumulate: usize, batches: usize) -> (usize, Option<String>) {
    let batches = batches.max(1);
    if accumulate <= batches {
        return (accumulate, None);
    }
    (
        batches,
        Some(format!(
            "warning: accumulate = {accumulate} but an epoch has only {batches} batches; \
             accumulating {batches} (one full step per epoch)"
        )),
    )
}

/// The network group ([`NetworkParams`]) with `pool` as a [`NetConfig`]: GeM pooling
/// normalises its output inside the network, average pooling (the BCT head) does not.
pub fn network(group: &NetworkParams, pool: Pool) -> Result<NetConfig, StageError> {
    let arch = Arch::parse(&group.arch).ok_or_else(|| {
        StageError::bad_param("arch", format!("expected one of {}", ARCHS.join(", ")))
    })?;
    let stem = Stem::parse(&group.stem).ok_or_else(|| {
        StageError::bad_param("stem", format!("expected one of {}", STEMS.join(", ")))
    })?;
    let cfg = NetConfig {
        arch,
        width: group.width,
        stem,
        pool,
        embed_dim: group.embed_dim,
        gem_p: 3.0,
        pool_l2n: pool == Pool::Gem,
        embed_relu: group.embed_relu,
    };
    cfg.validate()
        .map_err(|e| StageError::bad_param("arch", e))?;
    Ok(cfg)
}

/// The network group and `pool` as a [`NetConfig`] (`train-teacher`).
pub fn net_config(pool: &str, group: &NetworkParams) -> Result<NetConfig, StageError> {
    let pool = Pool::parse(pool).ok_or_else(|| {
        StageError::bad_param("pool", format!("expected one of {}", POOLS.join(", ")))
    })?;
    network(group, pool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use asymflow::stages::testing::params_of as params;
    use serde_json::json;

    #[test]
    fn accumulation_is_clamped_to_the_batches_of_an_epoch() {
        assert_eq!(clamp_accumulate(4, 10), (4, None));
        assert_eq!(clamp_accumulate(10, 10), (10, None));
        let (n, warning) = clamp_accumulate(20, 3);
        assert_eq!(n, 3);
        assert!(warning.unwrap().contains("only 3 batches"));
        assert_eq!(
            clamp_accumulate(20, 0).0,
            1,
            "an empty epoch still steps alone"
        );
    }

    #[test]
    fn optimiser_and_network_parameters_are_checked() {
        let good = params(&[
            ("optimizer", json!("adamw")),
            ("lr", json!(1e-3)),
            ("weight_decay", json!(0.0)),
            ("schedule", json!("one-cycle")),
            ("div_factor", json!(25.0)),
            ("epochs", json!(16)),
            ("momentum", json!(0.9)),
            ("nesterov", json!(false)),
            ("milestones", json!([])),
            ("gamma", json!(0.1)),
            ("warmup_epochs", json!(0)),
        ]);
        let cfg = optim_config(&OptimParams::read(&good).unwrap());
        assert_eq!(cfg.schedule, ScheduleConfig::OneCycle { div_factor: 25.0 });
        assert_eq!(cfg.kind, OptimKind::Adamw);
        let mut bct = good.clone();
        for (name, value) in [
            ("optimizer", json!("sgd")),
            ("nesterov", json!(true)),
            ("schedule", json!("multi-step")),
            ("milestones", json!([8, 12, 14])),
        ] {
            bct.0.insert(name.into(), value);
        }
        let cfg = optim_config(&OptimParams::read(&bct).unwrap());
        assert_eq!(
            cfg.kind,
            OptimKind::Sgd {
                momentum: 0.9,
                nesterov: true
            }
        );
        assert_eq!(
            cfg.schedule,
            ScheduleConfig::Stepped {
                milestones: vec![8, 12, 14],
                gamma: 0.1,
                warmup_epochs: 0
            }
        );
        let mut bad = good.clone();
        bad.0.insert("lr".into(), json!(0.0));
        assert!(OptimParams::read(&bad)
            .unwrap_err()
            .to_string()
            .contains("lr"));

        let net = params(&[
            ("arch", json!("resnet34")),
            ("width", json!(8)),
            ("stem", json!("small")),
            ("pool", json!("avg")),
            ("embed_dim", json!(32)),
            ("embed_relu", json!(false)),
        ]);
        let cfg = net_config("avg", &NetworkParams::read(&net).unwrap()).unwrap();
        assert!(!cfg.embed_relu);
        assert_eq!(cfg.arch, Arch::Resnet34);
        assert!(
            !cfg.pool_l2n,
            "average pooling is the BCT head: no inner L2N"
        );
        let mut bad = net.clone();
        bad.0.insert("width".into(), json!(0));
        assert!(NetworkParams::read(&bad)
            .unwrap_err()
            .to_string()
            .contains("width"));
    }
}
