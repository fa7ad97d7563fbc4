//! Optimisers (Adam, AdamW) and the one-cycle learning-rate schedule with PyTorch's defaults.
//!
//! [`OneCycle`] reproduces `torch.optim.lr_scheduler.OneCycleLR` (two phases, cosine
//! annealing, `pct_start` 0.3, `div_factor` 25, `final_div_factor` 1e4, beta1 cycled
//! 0.95 -> 0.85 -> 0.95), evaluated at a step number so a schedule never drifts from its
//! formula. [`Optim`] applies it before every optimiser step.

use serde::{Deserialize, Serialize};
use tch::nn::{self, OptimizerConfig};

use super::gem::GEM_GROUP;

/// Which optimiser.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OptimKind {
    /// Adam (L2 weight decay added to the gradient).
    Adam,
    /// AdamW (decoupled weight decay).
    Adamw,
}

impl OptimKind {
    /// Parses the pipeline spelling (`adam`, `adamw`).
    pub fn parse(name: &str) -> Option<OptimKind> {
        match name {
            "adam" => Some(OptimKind::Adam),
            "adamw" => Some(OptimKind::Adamw),
            _ => None,
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
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OptimConfig {
    /// Adam or AdamW.
    pub kind: OptimKind,
    /// Peak learning rate (the constant one without a schedule).
    pub lr: f64,
    /// Weight decay.
    pub weight_decay: f64,
    /// Whether to follow the one-cycle schedule (else a constant learning rate).
    pub one_cycle: bool,
    /// `div_factor` of the one-cycle schedule.
    pub div_factor: f64,
}

/// An optimiser over a variable store's trainable variables, with its schedule.
pub struct Optim {
    opt: nn::Optimizer,
    schedule: Option<OneCycle>,
    step: usize,
    lr: f64,
    gem_lr_scale: f64,
}

impl Optim {
    /// Builds the optimiser for `total_steps` steps over `vs`'s trainable variables.
    pub fn new(
        vs: &nn::VarStore,
        cfg: &OptimConfig,
        total_steps: usize,
    ) -> Result<Self, tch::TchError> {
        let opt = match cfg.kind {
            OptimKind::Adam => nn::adam(0.9, 0.999, cfg.weight_decay).build(vs, cfg.lr)?,
            OptimKind::Adamw => nn::adamw(0.9, 0.999, cfg.weight_decay).build(vs, cfg.lr)?,
        };
        let schedule = cfg.one_cycle.then(|| OneCycle {
            div_factor: cfg.div_factor,
            ..OneCycle::new(cfg.lr, total_steps)
        });
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
            let (lr, beta1) = s.at(self.step.min(s.total_steps.saturating_sub(1)));
            self.opt.set_lr(lr);
            self.opt.set_momentum(beta1);
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

    /// The learning rate the next step uses (the peak one without a schedule).
    pub fn lr(&self) -> Option<f64> {
        self.schedule
            .map(|s| s.at(self.step.min(s.total_steps.saturating_sub(1))).0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                one_cycle: schedule,
                div_factor: 1.0,
            };
            let mut opt = Optim::new(&vs, &cfg, 100)
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
            one_cycle: true,
            div_factor: 25.0,
        };
        let mut opt = Optim::new(&vs, &cfg, 50).unwrap();
        assert!((opt.lr().unwrap() - 0.02).abs() < 1e-12);
        for _ in 0..50 {
            opt.zero_grad();
            (&x * &x).sum(tch::Kind::Float).backward();
            opt.step();
        }
        assert!(x.double_value(&[0]).abs() < 0.5, "{}", x.double_value(&[0]));
    }
}
