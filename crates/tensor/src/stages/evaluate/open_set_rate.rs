//! A positive rate at a target rate of negatives (TAR at FAR, TPIR at FPIR), as every
//! protocol of `evaluate` that measures one checks its target and records it (its IJB-C
//! layout included): measured when the negatives there are can resolve the target, otherwise
//! declined with the reason.

use serde_json::{json, Value};

use crate::kind::{StageContext, StageError};
use crate::metrics;
use asymflow::metrics::registry::{
    MetricDef, FAR_ACHIEVED, GENUINE_PAIRS, IMPOSTOR_PAIRS, TAR_AT_FAR,
};

/// The fewest negatives at which a rate target can be met: one negative above the threshold
/// must be within the rate.
fn needed(rate: f64) -> u64 {
    (1.0 / rate - 1e-6).ceil().max(1.0) as u64
}

/// A positive rate at a target rate of negatives (TAR at FAR, TPIR at FPIR), recorded alike by
/// both protocols: the metric when the target is measurable with the negatives there are,
/// otherwise declined with the reason (and the rate at 0 in the log and `evaluation.json`).
pub(super) struct OpenSetRate {
    pub(super) metric: &'static MetricDef,
    /// The positive rate's name (`TAR`), the target's (`FAR`), and what the negatives are.
    pub(super) positive: &'static str,
    pub(super) rate: &'static str,
    pub(super) negatives: &'static str,
    pub(super) target: f64,
    pub(super) available: u64,
    pub(super) value: f64,
    pub(super) resolvable: bool,
}

impl OpenSetRate {
    /// Records the metric (logging `measured`) or declines it; writes it to `details` either
    /// way (`null` when declined).
    pub(super) fn record(
        &self,
        ctx: &mut StageContext<'_>,
        details: &mut serde_json::Map<String, Value>,
        measured: String,
    ) -> Result<(), StageError> {
        let (name, target) = (self.metric.name, self.target);
        if self.resolvable {
            ctx.metric(name, self.value);
            ctx.log(measured);
        } else {
            let note = format!(
                "{} {target:e} is below 1 / {} {}: not measurable here, no {name} recorded \
                 ({} at {} 0 is {:.4})",
                self.rate, self.available, self.negatives, self.positive, self.rate, self.value
            );
            ctx.log(&note);
            details.insert("note".into(), json!(note));
            ctx.decline(
                name,
                format!(
                    "{} {target:e} needs at least {} {}; there are {}",
                    self.rate,
                    needed(target),
                    self.negatives,
                    self.available
                ),
            )?;
        }
        let value = if self.resolvable {
            json!(self.value)
        } else {
            Value::Null
        };
        details.insert(name.into(), value);
        Ok(())
    }
}

/// Records a TAR at FAR, whichever protocol measured it: the pair counts and the achieved FAR
/// as metrics, the TAR (or why it is declined), and the same numbers in `details`.
pub(super) fn record_tar(
    ctx: &mut StageContext<'_>,
    details: &mut serde_json::Map<String, Value>,
    far: f64,
    t: &metrics::TarAtFar,
    summary: String,
) -> Result<(), StageError> {
    ctx.metric(GENUINE_PAIRS.name, t.genuine as f64);
    ctx.metric(IMPOSTOR_PAIRS.name, t.impostor as f64);
    ctx.metric(FAR_ACHIEVED.name, t.far);
    OpenSetRate {
        metric: &TAR_AT_FAR,
        positive: "TAR",
        rate: "FAR",
        negatives: "impostor pairs",
        target: far,
        available: t.impostor as u64,
        value: t.tar,
        resolvable: t.resolvable,
    }
    .record(ctx, details, summary)?;
    details.insert("far_target".into(), json!(far));
    details.insert("far_achieved".into(), json!(t.far));
    details.insert("threshold".into(), json!(t.threshold));
    details.insert("genuine_pairs".into(), json!(t.genuine));
    details.insert("impostor_pairs".into(), json!(t.impostor));
    Ok(())
}

/// `v`, the value of rate parameter `name`, checked.
pub(super) fn rate(v: f64, name: &str) -> Result<f64, StageError> {
    if v.is_nan() || v <= 0.0 || v > 1.0 {
        return Err(StageError::bad_param(
            name,
            format!("{v}: a rate in (0, 1], e.g. 1e-4"),
        ));
    }
    Ok(v)
}
