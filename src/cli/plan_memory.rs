//! `plan`'s memory lines: under each training instance to run, the estimated peak device
//! memory of its step ([`crate::exec::memory`]), and with `--device-memory` whether it fits
//! and, when not, what to change:
//!
//! ```text
//! to-run      teacher[seed=0]   new
//!             peak memory ~ 118.3 GiB (fp32, 1200 images with gradients at once)
//!             over the 80.0 GiB device: set precision = "bf16", batch_size = 20, accumulate = 200 (...)
//! ```

use serde_json::{json, Value};

use crate::exec::memory::{self, advice, StepMemory};
use crate::exec::plan_status::{cannot_run, PlannedInstance};
use crate::graph::Plan;

/// One instance's estimate as shown.
pub(crate) struct Shown {
    estimate: Result<StepMemory, String>,
    /// `--device-memory`, in bytes.
    budget: Option<u64>,
    /// Settings that fit `budget`, when the estimate exceeds it.
    advice: Vec<String>,
}

/// The estimate of every training instance to run (`None` for the others).
pub(crate) fn of_plan(
    plan: &Plan,
    planned: &[PlannedInstance],
    budget: Option<u64>,
) -> Vec<Option<Shown>> {
    planned
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if p.status != "to-run" || cannot_run(p) {
                return None;
            }
            let estimate = memory::instance::estimate(plan, i)?;
            let advice = match (&estimate, budget) {
                (Ok(m), Some(b)) if !advice::fits(m.bytes, b) => {
                    memory::instance::advise(plan, i, b)
                }
                _ => Vec::new(),
            };
            Some(Shown {
                estimate,
                budget,
                advice,
            })
        })
        .collect()
}

impl Shown {
    fn over(&self) -> bool {
        matches!((&self.estimate, self.budget), (Ok(m), Some(b)) if !advice::fits(m.bytes, b))
    }

    /// The lines printed under the instance.
    pub(crate) fn lines(&self) -> Vec<String> {
        let m = match &self.estimate {
            Ok(m) => m,
            Err(e) => return vec![format!("peak memory: not estimated ({e})")],
        };
        let mut lines = vec![m.describe()];
        if let (true, Some(budget)) = (self.over(), self.budget) {
            let head = format!(
                "over the {} device (with {} kept free for the CUDA context)",
                memory::gib(budget),
                memory::gib(advice::RESERVE)
            );
            lines.push(match self.advice.first() {
                Some(fix) => format!("{head}: set {fix}"),
                None => format!(
                    "{head}: nothing tried fits; use a smaller resolution, network or batch, or a larger GPU"
                ),
            });
        }
        lines
    }

    /// `plan --json`'s `memory` of the instance.
    pub(crate) fn json(&self) -> Value {
        match &self.estimate {
            Ok(m) => json!({
                "bytes": m.bytes,
                "precision": m.precision,
                "images": m.images,
                "parts": m.parts.iter().map(|(name, bytes)| json!({ "part": name, "bytes": bytes })).collect::<Vec<_>>(),
                "device_memory": self.budget,
                "fits": self.budget.map(|b| advice::fits(m.bytes, b)),
                "advice": self.advice,
            }),
            Err(e) => json!({ "error": e }),
        }
    }
}
