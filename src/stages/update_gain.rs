//! `update-gain`: the empirical compatibility criterion and the update gain (BCT) from three
//! evaluate instances: M(new, old) (new-model queries against the old gallery), M(old, old)
//! and M(new*, new*) (the paragon, trained without BCT, backfilled).
//!
//! Per metric M it records `diff_M` = M(new, old) - M(old, old) (the paired difference, so a
//! seed sweep reports it per seed and as a mean), `criterion_M` (1 when M(new, old) >
//! M(old, old), else 0) and `gain_M` only where G is applicable (criterion holds and the
//! paragon improves on the old model). Where it is not, no number is recorded, and
//! `update_gain.json` and `reasons.json` (which reports footnote) say why.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::outputs;
use crate::kind::{
    Artifact, InputArtifact, InputDecl, OutputDecl, ParamDecl, ParamType, Run, Stage, StageContext,
    StageError,
};
use crate::metrics::{registry, update_gain};

/// The details output of `update-gain`.
pub const UPDATE_GAIN_OUTPUT: &str = super::outputs::UPDATE_GAIN.file;

/// The `update-gain` kind.
#[derive(Clone)]
pub struct UpdateGainStage;

const PARAMS: &[ParamDecl] = &[ParamDecl::optional(
    "metrics",
    ParamType::List(&ParamType::Str),
    "[]",
    "metrics to compare; empty = every quality metric (map, map_noninterp, map_std, r<k>, tar_at_far, tpir_at_fpir) all three inputs have",
)];

const INPUTS: &[InputDecl] = &[
    InputDecl {
        name: "new_old",
        required: true,
        accepts: &[Artifact::Evaluation],
        doc: "evaluate: new-model queries, old-model gallery",
    },
    InputDecl {
        name: "old_old",
        required: true,
        accepts: &[Artifact::Evaluation],
        doc: "evaluate: the old model on both sides",
    },
    InputDecl {
        name: "new_new",
        required: true,
        accepts: &[Artifact::Evaluation],
        doc: "evaluate: the paragon new* on both sides (no BCT)",
    },
];

fn value(input: &InputArtifact, slot: &str, metric: &str) -> Result<f64, StageError> {
    input.metrics.get(metric).copied().ok_or_else(|| StageError::Input {
        slot: slot.to_string(),
        message: format!(
            "stage `{}` recorded no metric `{metric}` (it has: {}); name metrics all three evaluations record",
            input.stage,
            input.metrics.keys().cloned().collect::<Vec<_>>().join(", ")
        ),
    })
}

impl Stage for UpdateGainStage {
    fn kind(&self) -> &'static str {
        "update-gain"
    }

    fn impl_version(&self) -> u32 {
        // 2: a gain that is not applicable is declined with its reason (`reasons.json`).
        2
    }

    fn summary(&self) -> &'static str {
        "compatibility criterion M(new,old) > M(old,old) and update gain G per metric"
    }

    fn params(&self) -> &'static [ParamDecl] {
        PARAMS
    }

    fn inputs(&self) -> &'static [InputDecl] {
        INPUTS
    }

    fn outputs(&self) -> &'static [OutputDecl] {
        &[outputs::UPDATE_GAIN, outputs::REASONS]
    }
}

impl Run for UpdateGainStage {
    fn run(&self, ctx: &mut StageContext<'_>) -> Result<(), StageError> {
        let new_old = ctx.input("new_old")?.clone();
        let old_old = ctx.input("old_old")?.clone();
        let new_new = ctx.input("new_new")?.clone();
        let mut names = ctx.params().strs("metrics")?;
        if names.is_empty() {
            let shared = |a: &InputArtifact| -> BTreeSet<String> {
                a.metrics
                    .keys()
                    .filter(|k| registry::compared(k))
                    .cloned()
                    .collect()
            };
            names = shared(&new_old)
                .intersection(&shared(&old_old))
                .cloned()
                .collect::<BTreeSet<_>>()
                .intersection(&shared(&new_new))
                .cloned()
                .collect();
            if names.is_empty() {
                return Err(StageError::Other(
                    "update-gain: the three evaluations share no quality metric (map, r1, tar_at_far, ...); \
                     connect evaluate stages of one protocol"
                        .into(),
                ));
            }
        }
        let mut details = serde_json::Map::new();
        for m in &names {
            let (no, oo, nn) = (
                value(&new_old, "new_old", m)?,
                value(&old_old, "old_old", m)?,
                value(&new_new, "new_new", m)?,
            );
            let g = update_gain(no, oo, nn);
            ctx.metric(&registry::DIFF.named(m), g.difference);
            ctx.metric(
                &registry::CRITERION.named(m),
                if g.criterion { 1.0 } else { 0.0 },
            );
            match (g.gain, g.not_applicable) {
                (Some(gain), _) => ctx.metric(&registry::GAIN.named(m), gain),
                (None, reason) => ctx.decline(
                    &registry::GAIN.named(m),
                    format!(
                        "G is not applicable: {}",
                        reason.unwrap_or("no reason given")
                    ),
                )?,
            }
            ctx.log(format!(
                "{m}: new/old {no:.4}, old/old {oo:.4}, new*/new* {nn:.4}: criterion {}, G {}",
                if g.criterion { "holds" } else { "fails" },
                g.gain.map_or_else(
                    || format!("not applicable ({})", g.not_applicable.unwrap_or("")),
                    |v| format!("{v:.3}")
                )
            ));
            details.insert(
                m.clone(),
                json!({
                    "new_old": no,
                    "old_old": oo,
                    "new_new": nn,
                    "difference": g.difference,
                    "criterion": g.criterion,
                    "gain": g.gain,
                    "not_applicable": g.not_applicable,
                }),
            );
        }
        ctx.write_json(UPDATE_GAIN_OUTPUT, &Value::Object(details))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::testing::{artifact, run_stage};

    fn eval(stage: &str, map: f64, r1: f64) -> InputArtifact {
        let mut a = artifact(stage, stage, &[]);
        a.metrics.insert("map".into(), map);
        a.metrics.insert("r1".into(), r1);
        a.metrics.insert("no_positive".into(), 0.0);
        a
    }

    #[test]
    fn gain_where_the_criterion_holds_and_none_where_it_fails() {
        let (metrics, out) = run_stage(
            &UpdateGainStage,
            &UpdateGainStage,
            json!({}),
            &[
                ("new_old", vec![eval("no", 0.46, 0.20)]),
                ("old_old", vec![eval("oo", 0.40, 0.30)]),
                ("new_new", vec![eval("nn", 0.60, 0.50)]),
            ],
        )
        .unwrap();
        assert!((metrics["gain_map"] - 0.3).abs() < 1e-12);
        assert_eq!(metrics["criterion_map"], 1.0);
        assert_eq!(metrics["criterion_r1"], 0.0);
        assert!((metrics["diff_r1"] + 0.1).abs() < 1e-12);
        assert!(
            !metrics.contains_key("gain_r1"),
            "G is not a number where the criterion fails"
        );
        assert!(
            !metrics.contains_key("gain_no_positive"),
            "counts are not compared"
        );
        let details: Value = crate::kind::read_json(&out.path().join(UPDATE_GAIN_OUTPUT)).unwrap();
        assert_eq!(details["r1"]["gain"], Value::Null);
        assert!(details["r1"]["not_applicable"]
            .as_str()
            .unwrap()
            .contains("criterion fails"));
    }

    #[test]
    fn a_named_metric_missing_upstream_is_an_error_naming_it() {
        let err = run_stage(
            &UpdateGainStage,
            &UpdateGainStage,
            json!({"metrics": ["tar_at_far"]}),
            &[
                ("new_old", vec![eval("no", 0.4, 0.2)]),
                ("old_old", vec![eval("oo", 0.4, 0.3)]),
                ("new_new", vec![eval("nn", 0.6, 0.5)]),
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("no metric `tar_at_far`"), "{err}");
    }
}
