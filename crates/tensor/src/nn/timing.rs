//! Where a training run's time goes: data, forward, backward, optimiser step, bookkeeping.
//!
//! The training stages log one line of this breakdown at the end (`log.txt`, which is never
//! part of a key), and the `train_stages` benchmark reads it, so a gap against PyTorch has a
//! name. Each part is wall-clock host time around the calls: on CPU that is the compute itself;
//! on CUDA, kernels run asynchronously, so time shows up where the host waits (the loss value
//! read back after the forward pass), and the split is only indicative.

use std::time::{Duration, Instant};

/// Time spent in each phase of the optimisation steps.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepTimes {
    /// Forward passes and losses (including reading the loss values back).
    pub forward: Duration,
    /// Back-propagation.
    pub backward: Duration,
    /// Optimiser steps and clearing gradients.
    pub step: Duration,
}

impl StepTimes {
    /// Runs `f`, adding its duration to `forward`.
    pub fn forward<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        self.forward += start.elapsed();
        out
    }

    /// Runs `f`, adding its duration to `backward`.
    pub fn backward<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        self.backward += start.elapsed();
        out
    }

    /// Runs `f`, adding its duration to `step`.
    pub fn step<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        self.step += start.elapsed();
        out
    }
}

/// A whole run's breakdown: the steps' phases, the time spent waiting for batches, and the
/// rest of the wall-clock time (bookkeeping: loss curves, progress, checkpoints).
#[derive(Debug, Clone, Copy)]
pub struct RunTimes {
    start: Instant,
    /// Waiting for the loader's next batch and copying it to the device.
    pub data: Duration,
}

/// The log line's prefix, which the benchmark looks for.
pub const BREAKDOWN_PREFIX: &str = "time breakdown:";

impl RunTimes {
    /// Starts the clock.
    pub fn start() -> Self {
        RunTimes {
            start: Instant::now(),
            data: Duration::ZERO,
        }
    }

    /// Runs `f` (fetching a batch), adding its duration to `data`.
    pub fn data<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        self.data += start.elapsed();
        out
    }

    /// One log line: `time breakdown: total 12.30 s, data 1.20 s, forward 4.00 s, backward
    /// 6.00 s, step 0.90 s, bookkeeping 0.20 s, images 5000`.
    pub fn line(&self, steps: &StepTimes, images: usize) -> String {
        let total = self.start.elapsed();
        let known = self.data + steps.forward + steps.backward + steps.step;
        let other = total.saturating_sub(known);
        format!(
            "{BREAKDOWN_PREFIX} total {:.3} s, data {:.3} s, forward {:.3} s, backward {:.3} s, \
             step {:.3} s, bookkeeping {:.3} s, images {images}",
            total.as_secs_f64(),
            self.data.as_secs_f64(),
            steps.forward.as_secs_f64(),
            steps.backward.as_secs_f64(),
            steps.step.as_secs_f64(),
            other.as_secs_f64()
        )
    }
}

/// The parts of a [`RunTimes::line`], in seconds (and the image count), by name; `None` when
/// `line` is not one.
pub fn parse_breakdown(line: &str) -> Option<Vec<(String, f64)>> {
    let rest = line[line.find(BREAKDOWN_PREFIX)? + BREAKDOWN_PREFIX.len()..].trim();
    rest.split(", ")
        .map(|part| {
            let mut words = part.split_whitespace();
            let name = words.next()?.to_string();
            let value = words.next()?.parse().ok()?;
            Some((name, value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_parses_back_and_the_parts_add_up() {
        let mut run = RunTimes::start();
        let mut steps = StepTimes::default();
        run.data(|| std::thread::sleep(Duration::from_millis(2)));
        steps.forward(|| std::thread::sleep(Duration::from_millis(3)));
        steps.backward(|| std::thread::sleep(Duration::from_millis(1)));
        steps.step(|| ());
        let line = run.line(&steps, 64);
        let parts: std::collections::BTreeMap<String, f64> =
            parse_breakdown(&format!("[log] {line}"))
                .unwrap()
                .into_iter()
                .collect();
        assert_eq!(parts["images"], 64.0);
        assert!(
            parts["data"] >= 0.002 && parts["forward"] >= 0.003,
            "{line}"
        );
        let sum = parts["data"]
            + parts["forward"]
            + parts["backward"]
            + parts["step"]
            + parts["bookkeeping"];
        assert!((sum - parts["total"]).abs() < 0.005, "{line}");
        assert!(parse_breakdown("epoch 1: loss 0.5").is_none());
    }
}
