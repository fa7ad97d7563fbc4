//! Optimisers (Adam, AdamW, SGD) and learning-rate schedules (one-cycle with PyTorch's
//! defaults, multi-step, linear warm-up).
//!
//! [`OneCycle`] reproduces `torch.optim.lr_scheduler.OneCycleLR` (two phases, cosine
//! annealing, `pct_start` 0.3, `div_factor` 25, `final_div_factor` 1e4, beta1 cycled
//! 0.95 -> 0.85 -> 0.95); [`Stepped`] is `MultiStepLR` stepped once per epoch (the rate times
//! `gamma` for each milestone at or before the current epoch) under a linear warm-up over the
//! first epochs, step by step. Each is evaluated at a step number, so a schedule never drifts
//! from its formula. [`Optim`] applies it before every optimiser step.
//!
//! SGD is libtorch's `torch::optim::SGD`, the same update as `torch.optim.SGD`: weight decay
//! added to the gradient (`g + wd w`), momentum buffer `b = m b + g` (the first step `b = g`),
//! the step `lr b`, or `lr (g + m b)` with Nesterov momentum.

use serde::{Deserialize, Serialize};
use tch::nn::{self, OptimizerConfig};

use super::gem::GEM_GROUP;

/// Which optimiser.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OptimKind {
    /// Adam (L2 weight decay added to the gradient).
    Adam,
    /// AdamW (decoupled weight decay).
    Adamw,
    /// SGD with L2 weight decay in the gradient and (Nesterov) momentum.
    Sgd {
        /// Momentum factor (0: plain SGD).
        momentum: f64,
        /// Nesterov momentum.
        nesterov: bool,
    },
}

/// A constant or multi-step learning rate under a linear warm-up, per optimiser step.
#[derive(Debug, Clone, PartialEq)]
pub struct Stepped {
    /// The rate before any milestone.
    pub lr: f64,
    /// Optimiser steps per epoch.
    pub steps_per_epoch: usize,
    /// Epochs (strictly increasing) at which the rate is multiplied by `gamma`.
    pub milestones: Vec<usize>,
    /// The factor at each milestone.
    pub gamma: f64,
    /// Epochs of linear warm-up.
    pub warmup_epochs: usize,
}

impl Stepped {
    /// The learning rate of step `step` (0-based): `lr * gamma^k` with k the milestones at or
    /// before the step's epoch (`MultiStepLR`), times `(step + 1) / W` during the `W` warm-up
    /// steps, so the last warm-up step reaches the full rate.
    pub fn at(&self, step: usize) -> f64 {
        let per_epoch = self.steps_per_epoch.max(1);
        let epoch = step / per_epoch;
        let passed = self.milestones.iter().filter(|&&m| m <= epoch).count();
        let rate = self.lr * self.gamma.powi(passed as i32);
        let warmup = self.warmup_epochs * per_epoch;
        if step < warmup {
            rate * (step + 1) as f64 / warmup as f64
        } else {
            rate
        }
    }

    /// Whether the rate ever differs from `lr` (else no schedule is applied at all).
    fn varies(&self) -> bool {
        self.warmup_epochs > 0 || !self.milestones.is_empty()
    }
}

/// A learning-rate schedule.
#[derive(Debug, Clone, PartialEq)]
pub enum ScheduleConfig {
    /// One-cycle with this `div_factor`.
    OneCycle {
        /// The first learning rate is `lr / div_factor`.
        div_factor: f64,
    },
    /// Constant (no milestones) or multi-step, after a linear warm-up.
    Stepped {
        /// Epochs at which the rate is multiplied by `gamma` (empty: constant).
        milestones: Vec<usize>,
        /// The factor at each milestone.
        gamma: f64,
        /// Epochs of linear warm-up.
        warmup_epochs: usize,
    },
}

impl ScheduleConfig {
    /// `lr` throughout.
    pub fn constant() -> Self {
        ScheduleConfig::Stepped {
            milestones: Vec::new(),
            gamma: 1.0,
            warmup_epochs: 0,
        }
    }
}

/// The schedule an [`Optim`] follows.
#[derive(Debug, Clone, PartialEq)]
enum Schedule {
    OneCycle(OneCycle),
    Stepped(Stepped),
}

impl Schedule {
    /// `(learning rate, momentum)` of step `step`; the momentum only where the schedule cycles
    /// it (one-cycle).
    fn at(&self, step: usize) -> (f64, Option<f64>) {
        match self {
            Schedule::OneCycle(s) => {
                let (lr, beta1) = s.at(step.min(s.total_steps.saturating_sub(1)));
                (lr, Some(beta1))
            }
            Schedule::Stepped(s) => (s.at(step), None),
        }
    }
}

/// `torch.optim.lr_scheduler.OneCycleLR` (cosine annealing, momentum cycling).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OneCycle {
    /// Peak learning rate.
    pub max_lr: f64,
    /// Number of optimiser steps in the whole run.
    pub total_steps: usize,
    /// Share of the steps spent increasing the learning rate.
    pub pct_start: f64,
    /// Initial learning rate = `max_lr / div_factor`.
    pub div_factor: f64,
    /// Final learning rate = initial / `final_div_factor`.
    pub final_div_factor: f64,
    /// beta1 at the peak learning rate.
    pub base_momentum: f64,
    /// beta1 at the start and the end.
    pub max_momentum: f64,
}

impl OneCycle {
    /// PyTorch's defaults for `max_lr` over `total_steps`.
    pub fn new(max_lr: f64, total_steps: usize) -> Self {
        OneCycle {
            max_lr,
            total_steps,
            pct_start: 0.3,
            div_factor: 25.0,
            final_div_factor: 1e4,
            base_momentum: 0.85,
            max_momentum: 0.95,
        }
    }

    /// `(learning rate, beta1)` for step `step` (0-based; PyTorch's `last_epoch`).
    pub fn at(&self, step: usize) -> (f64, f64) {
        let initial = self.max_lr / self.div_factor;
        let min_lr = initial / self.final_div_factor;
        let total = self.total_steps.max(2) as f64;
        let end1 = self.pct_start * total - 1.0;
        let end2 = total - 1.0;
        let step = step as f64;
        let cos = |start: f64, end: f64, pct: f64| {
            end + (start - end) / 2.0 * ((std::f64::consts::PI * pct).cos() + 1.0)
        };
        if step <= end1 {
            let pct = if end1 > 0.0 { step / end1 } else { 1.0 };
            (
                cos(initial, self.max_lr, pct),
                cos(self.max_momentum, self.base_momentum, pct),
            )
        } else {
            let pct = (step - end1) / (end2 - end1);
            (
                cos(self.max_lr, min_lr, pct),
                cos(self.base_momentum, self.max_momentum, pct),
            )
        }
    }
}

/// How a stage trains: optimiser, peak learning rate, weight decay, schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct OptimConfig {
    /// Adam, AdamW or SGD.
    pub kind: OptimKind,
    /// Peak learning rate (the constant one without a schedule).
    pub lr: f64,
    /// Weight decay.
    pub weight_decay: f64,
    /// The learning-rate schedule.
    pub schedule: ScheduleConfig,
}

/// An optimiser over a variable store's trainable variables, with its schedule.
pub struct Optim {
    opt: nn::Optimizer,
    schedule: Option<Schedule>,
    step: usize,
    lr: f64,
    gem_lr_scale: f64,
}

impl Optim {
    /// Builds the optimiser over `vs`'s trainable variables for `epochs` epochs of
    /// `steps_per_epoch` optimiser steps.
    pub fn new(
        vs: &nn::VarStore,
        cfg: &OptimConfig,
        epochs: usize,
        steps_per_epoch: usize,
    ) -> Result<Self, tch::TchError> {
        let opt = match cfg.kind {
            OptimKind::Adam => nn::adam(0.9, 0.999, cfg.weight_decay).build(vs, cfg.lr)?,
            OptimKind::Adamw => nn::adamw(0.9, 0.999, cfg.weight_decay).build(vs, cfg.lr)?,
            OptimKind::Sgd { momentum, nesterov } => {
                nn::sgd(momentum, 0.0, cfg.weight_decay, nesterov).build(vs, cfg.lr)?
            }
        };
        let schedule = match &cfg.schedule {
            ScheduleConfig::OneCycle { div_factor } => Some(Schedule::OneCycle(OneCycle {
                div_factor: *div_factor,
                ..OneCycle::new(cfg.lr, epochs * steps_per_epoch)
            })),
            ScheduleConfig::Stepped {
                milestones,
                gamma,
                warmup_epochs,
            } => {
                let stepped = Stepped {
                    lr: cfg.lr,
                    steps_per_epoch,
                    milestones: milestones.clone(),
                    gamma: *gamma,
                    warmup_epochs: *warmup_epochs,
                };
                stepped.varies().then_some(Schedule::Stepped(stepped))
            }
        };
        let mut optim = Optim {
            opt,
            schedule,
            step: 0,
            lr: cfg.lr,
            gem_lr_scale: 1.0,
        };
        optim.apply_schedule();
        Ok(optim)
    }

    /// This optimiser with its schedule at step `step`, as if `step` steps had been taken:
    /// how a run resumed after `step` steps continues on the schedule of the whole run. The
    /// optimiser's own state (Adam's moments, SGD's momentum buffer) starts empty: libtorch
    /// keeps it in C++ and tch gives no way to save or restore it.
    pub fn starting_at(mut self, step: usize) -> Self {
        self.step = step;
        self.apply_schedule();
        self
    }

    /// GeM's `p` (optimiser group [`GEM_GROUP`]) at `lr_scale` times the learning rate at
    /// every step, and without weight decay unless `decay`, as the resolution-asymmetry
    /// reference trains it. `(1.0, true)` leaves the optimiser as it was. Only for a network
    /// with GeM pooling (the group must exist).
    pub fn with_gem_group(mut self, lr_scale: f64, decay: bool) -> Self {
        self.gem_lr_scale = lr_scale;
        if !decay {
            self.opt.set_weight_decay_group(GEM_GROUP, 0.0);
        }
        self.apply_schedule();
        self
    }

    fn apply_schedule(&mut self) {
        if let Some(s) = &self.schedule {
            let (lr, momentum) = s.at(self.step);
            self.opt.set_lr(lr);
            if let Some(momentum) = momentum {
                self.opt.set_momentum(momentum);
            }
            self.lr = lr;
        }
        if self.gem_lr_scale != 1.0 {
            self.opt
                .set_lr_group(GEM_GROUP, self.lr * self.gem_lr_scale);
        }
    }

    /// Zeroes every gradient.
    pub fn zero_grad(&mut self) {
        self.opt.zero_grad();
    }

    /// One optimiser step with the current gradients, then advances the schedule.
    pub fn step(&mut self) {
        self.opt.step();
        self.step += 1;
        self.apply_schedule();
    }

    /// The learning rate the next step uses (`None` without a schedule).
    pub fn lr(&self) -> Option<f64> {
        self.schedule.as_ref().map(|s| s.at(self.step).0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Tensor;

    #[test]
    fn one_cycle_matches_pytorch_values() {
        // torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10): lr at steps
        // 0..10 and beta1, printed by PyTorch 2.11.
        let s = OneCycle::new(1.0, 10);
        let (lr0, m0) = s.at(0);
        assert!((lr0 - 0.04).abs() < 1e-12);
        assert!((m0 - 0.95).abs() < 1e-12);
        // end of phase 1 at step pct_start * 10 - 1 = 2: the peak.
        let (lr2, m2) = s.at(2);
        assert!((lr2 - 1.0).abs() < 1e-12);
        assert!((m2 - 0.85).abs() < 1e-12);
        let (lr1, _) = s.at(1);
        assert!((lr1 - 0.52).abs() < 1e-12);
        let (lr9, m9) = s.at(9);
        assert!((lr9 - 4e-6).abs() < 1e-12);
        assert!((m9 - 0.95).abs() < 1e-12);
        let (lr5, _) = s.at(5);
        let expect = 4e-6 + (1.0 - 4e-6) / 2.0 * ((std::f64::consts::PI * 3.0 / 7.0).cos() + 1.0);
        assert!((lr5 - expect).abs() < 1e-12);
    }

    #[test]
    fn gem_p_learns_at_its_own_rate_and_without_decay() {
        // One AdamW step moves a weight by about the learning rate (the gradient's sign), and
        // decoupled decay shrinks a weight whose gradient is zero by lr * wd.
        let run = |scale: f64, decay: bool, schedule: bool| {
            let vs = nn::VarStore::new(tch::Device::Cpu);
            let x = vs.root().var("x", &[1], nn::Init::Const(1.0));
            let p = vs
                .root()
                .set_group(GEM_GROUP)
                .var("p", &[1], nn::Init::Const(3.0));
            let q = vs
                .root()
                .set_group(GEM_GROUP)
                .var("q", &[1], nn::Init::Const(2.0));
            let cfg = OptimConfig {
                kind: OptimKind::Adamw,
                lr: 0.01,
                weight_decay: 0.5,
                schedule: if schedule {
                    ScheduleConfig::OneCycle { div_factor: 1.0 }
                } else {
                    ScheduleConfig::constant()
                },
            };
            let mut opt = Optim::new(&vs, &cfg, 1, 100)
                .unwrap()
                .with_gem_group(scale, decay);
            opt.zero_grad();
            (&x + &p + &q * 0.0).sum(tch::Kind::Float).backward();
            opt.step();
            (
                1.0 - x.double_value(&[0]),
                3.0 - p.double_value(&[0]),
                2.0 - q.double_value(&[0]),
            )
        };
        let (dx, dp, dq) = run(1.0, true, false);
        // lr (1 + wd * w): x at 1.0, p at 3.0.
        assert!((dx - 0.015).abs() < 1e-6, "{dx}");
        assert!((dp - 0.025).abs() < 1e-6, "the same rate and decay: {dp}");
        assert!((dq - 0.01 * 0.5 * 2.0).abs() < 1e-6, "decayed: {dq}");
        let (dx, dp, dq) = run(10.0, false, false);
        // x as before; p: 10 lr, no decay.
        assert!((dx - 0.015).abs() < 1e-6, "{dx}");
        assert!((dp - 0.1).abs() < 1e-6, "ten times the rate: {dp}");
        assert!(dq.abs() < 1e-9, "no decay on the GeM group: {dq}");
        // Under the one-cycle schedule (div_factor 1: the first step at the peak) too.
        let (dx, dp, _) = run(10.0, false, true);
        assert!((dx - 0.015).abs() < 1e-6, "{dx}");
        assert!((dp - 0.1).abs() < 1e-6, "{dp}");
    }

    #[test]
    fn optimiser_follows_the_schedule_and_minimises() {
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let x = vs.root().var("x", &[1], nn::Init::Const(3.0));
        let cfg = OptimConfig {
            kind: OptimKind::Adamw,
            lr: 0.5,
            weight_decay: 0.0,
            schedule: ScheduleConfig::OneCycle { div_factor: 25.0 },
        };
        let mut opt = Optim::new(&vs, &cfg, 1, 50).unwrap();
        assert!((opt.lr().unwrap() - 0.02).abs() < 1e-12);
        for _ in 0..50 {
            opt.zero_grad();
            (&x * &x).sum(tch::Kind::Float).backward();
            opt.step();
        }
        assert!(x.double_value(&[0]).abs() < 0.5, "{}", x.double_value(&[0]));
    }

    #[test]
    fn multi_step_matches_torch_multisteplr_per_epoch() {
        // torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[8, 12, 14], gamma=0.1),
        // stepped once per epoch from lr 0.1: 0.1 for epochs 0-7, 0.01 for 8-11, 0.001 for
        // 12-13, 1e-4 for 14-15.
        let s = Stepped {
            lr: 0.1,
            steps_per_epoch: 5,
            milestones: vec![8, 12, 14],
            gamma: 0.1,
            warmup_epochs: 0,
        };
        let torch = |epoch: usize| match epoch {
            0..=7 => 0.1,
            8..=11 => 0.01,
            12..=13 => 0.001,
            _ => 1e-4,
        };
        for step in 0..16 * 5 {
            let (got, want) = (s.at(step), torch(step / 5));
            assert!((got - want).abs() < 1e-15, "step {step}: {got} vs {want}");
        }
    }

    #[test]
    fn warm_up_ramps_linearly_then_follows_the_schedule() {
        // Two warm-up epochs of 4 steps: lr (k + 1) / 8 for steps 0-7, then the multi-step
        // rate; a milestone inside the warm-up scales the ramp (the factors multiply, as
        // torch's chained schedulers do).
        let s = Stepped {
            lr: 0.8,
            steps_per_epoch: 4,
            milestones: vec![1, 3],
            gamma: 0.5,
            warmup_epochs: 2,
        };
        let want = [
            0.1, 0.2, 0.3, 0.4, // epoch 0: 0.8 (k + 1) / 8
            0.25, 0.3, 0.35, 0.4, // epoch 1: 0.4 (k + 1) / 8
            0.4, 0.4, 0.4, 0.4, // epoch 2: 0.4
            0.2, 0.2, 0.2, 0.2, // epoch 3: 0.2
        ];
        for (step, want) in want.iter().enumerate() {
            let got = s.at(step);
            assert!((got - want).abs() < 1e-12, "step {step}: {got} vs {want}");
        }
    }

    /// One optimiser step on `x = [1, -2]` with the gradient of `sum(c * x)`, `c = [3, 0.5]`,
    /// then a second with the same gradient; the values after each.
    fn two_sgd_steps(momentum: f64, nesterov: bool, weight_decay: f64) -> [[f64; 2]; 2] {
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let x = vs
            .root()
            .var_copy("x", &Tensor::from_slice(&[1.0f32, -2.0]));
        let c = Tensor::from_slice(&[3.0f32, 0.5]);
        let cfg = OptimConfig {
            kind: OptimKind::Sgd { momentum, nesterov },
            lr: 0.1,
            weight_decay,
            schedule: ScheduleConfig::constant(),
        };
        let mut opt = Optim::new(&vs, &cfg, 1, 2).unwrap();
        let mut out = [[0.0; 2]; 2];
        for row in &mut out {
            opt.zero_grad();
            (&x * &c).sum(tch::Kind::Float).backward();
            opt.step();
            *row = [x.double_value(&[0]), x.double_value(&[1])];
        }
        out
    }

    #[test]
    fn sgd_steps_match_torch_sgd_by_hand() {
        let close = |got: [[f64; 2]; 2], want: [[f64; 2]; 2]| {
            for (g, w) in got.iter().flatten().zip(want.iter().flatten()) {
                assert!((g - w).abs() < 1e-6, "{got:?} vs {want:?}");
            }
        };
        // Plain SGD: x - lr g, g = c.
        close(two_sgd_steps(0.0, false, 0.0), [[0.7, -2.05], [0.4, -2.1]]);
        // L2 weight decay in the gradient: g = c + wd x. wd 0.5: step 1 g = [3.5, -0.5]
        // -> [0.65, -1.95]; step 2 g = [3.325, -0.475] -> [0.3175, -1.9025].
        close(
            two_sgd_steps(0.0, false, 0.5),
            [[0.65, -1.95], [0.3175, -1.9025]],
        );
        // Momentum 0.9: b1 = g, b2 = 0.9 g + g = 1.9 g: [0.7, -2.05] then
        // [0.7 - 0.57, -2.05 - 0.095].
        close(
            two_sgd_steps(0.9, false, 0.0),
            [[0.7, -2.05], [0.13, -2.145]],
        );
        // Nesterov: the step is g + m b; b1 = g: 1.9 g, then b2 = 1.9 g: g + 1.71 g = 2.71 g.
        close(
            two_sgd_steps(0.9, true, 0.0),
            [[1.0 - 0.57, -2.0 - 0.095], [0.43 - 0.813, -2.095 - 0.1355]],
        );
    }

    #[test]
    fn an_optimiser_applies_its_schedule_at_every_step() {
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let x = vs.root().var("x", &[1], nn::Init::Const(0.0));
        let cfg = OptimConfig {
            kind: OptimKind::Sgd {
                momentum: 0.0,
                nesterov: false,
            },
            lr: 1.0,
            weight_decay: 0.0,
            schedule: ScheduleConfig::Stepped {
                milestones: vec![1],
                gamma: 0.1,
                warmup_epochs: 1,
            },
        };
        // Two epochs of two steps: rates 0.5, 1.0 (warm-up), then 0.1, 0.1. With gradient 1
        // each step moves x by minus the rate.
        let mut opt = Optim::new(&vs, &cfg, 2, 2).unwrap();
        let mut moved = Vec::new();
        for _ in 0..4 {
            let before = x.double_value(&[0]);
            opt.zero_grad();
            x.sum(tch::Kind::Float).backward();
            opt.step();
            moved.push(before - x.double_value(&[0]));
        }
        for (got, want) in moved.iter().zip([0.5, 1.0, 0.1, 0.1]) {
            assert!((got - want).abs() < 1e-6, "{moved:?}");
        }
        let constant = OptimConfig {
            schedule: ScheduleConfig::constant(),
            ..cfg
        };
        assert_eq!(
            Optim::new(&vs, &constant, 2, 2).unwrap().lr(),
            None,
            "a constant rate sets nothing, as before schedules existed"
        );
    }
}
