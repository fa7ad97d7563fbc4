//! `update-gain`: the empirical compatibility criterion and the update gain (BCT) from three
//! evaluate instances: M(new, old) (new-model queries against the old gallery), M(old, old)
//! and M(new*, new*) (the paragon, trained without BCT, backfilled).
//!
//! Per metric M it records `diff_M` = M(new, old) - M(old, old) (the paired difference, so a
//! seed sweep reports it per seed and as a mean), `criterion_M` (1 when M(new, old) >
//! M(old, old), else 0) and `gain_M` only where G is applicable (criterion holds and the
//! paragon improves on the old model). Where it is not, no number is recorded, and
//! `update_gain.json` and `reasons.json` (which reports footnote) say why. A metric one of
//! the evaluations declined (TAR at FAR 1e-4 on a set with too few impostor pairs) is declined
//! here too, all three of its numbers, with that evaluation's reason.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::outputs;
use crate::kind::{
    Artifact, InputArtifact, InputDecl, OutputDecl, ParamDecl, ParamType, Params, Run, Stage,
    StageContext, StageError,
};
use crate::metrics::{registry, update_gain};

/// The details output of `update-gain`.
pub(crate) const UPDATE_GAIN_OUTPUT: &str = super::outputs::UPDATE_GAIN.file;

/// The `update-gain` kind.
#[derive(Clone)]
pub(crate) struct UpdateGainStage;

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

/// The kind's parameters, read once ([`crate::kind::typed`]); the runner takes this, never a
/// name.
#[derive(Debug, Clone)]
pub(crate) struct UpdateGainParams {
    /// `metrics`: empty for every quality metric the three evaluations share.
    metrics: Vec<String>,
}

impl UpdateGainParams {
    /// Reads every parameter of the kind.
    pub(crate) fn from_params(params: &Params) -> Result<Self, StageError> {
        Ok(UpdateGainParams {
            metrics: params.strs("metrics")?,
        })
    }
}

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
        // 3: a metric an evaluation declined is declined here with that reason (was an error).
        // 4: a gain that is not applicable says why with the draw's numbers, for the report's
        //    footnote naming the failing seeds.
        4
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
    fn records(&self, _params: &crate::kind::Params) -> Option<Vec<String>> {
        let (diff, criterion, gain) = (registry::DIFF, registry::CRITERION, registry::GAIN);
        Some(vec![diff.named("*"), criterion.named("*"), gain.named("*")])
    }
}

/// A compared metric of one evaluation: its value, or why the evaluation has none.
enum Measured {
    Value(f64),
    Declined(String),
}

/// What the three evaluations hold: each slot's metrics and declined metrics.
struct Evaluations<'a> {
    inputs: [(&'static str, &'a InputArtifact, BTreeMap<String, String>); 3],
}

impl<'a> Evaluations<'a> {
    fn read(
        new_old: &'a InputArtifact,
        old_old: &'a InputArtifact,
        new_new: &'a InputArtifact,
    ) -> Result<Self, StageError> {
        Ok(Evaluations {
            inputs: [
                ("new_old", new_old, new_old.reasons()?),
                ("old_old", old_old, old_old.reasons()?),
                ("new_new", new_new, new_new.reasons()?),
            ],
        })
    }

    /// The compared metrics every evaluation either measured or declined.
    fn shared(&self) -> Vec<String> {
        let known = |(_, a, reasons): &(&str, &InputArtifact, BTreeMap<String, String>)| {
            a.metrics
                .keys()
                .chain(reasons.keys())
                .filter(|k| registry::compared(k))
                .cloned()
                .collect::<BTreeSet<String>>()
        };
        let mut names = known(&self.inputs[0]);
        for input in &self.inputs[1..] {
            names = names.intersection(&known(input)).cloned().collect();
        }
        names.into_iter().collect()
    }

    /// `metric` in each slot (new_old, old_old, new_new): the values, or the first slot's
    /// reason for having none. A metric neither measured nor declined is an error naming it.
    fn values(&self, metric: &str) -> Result<Result<[f64; 3], String>, StageError> {
        let mut values = [0.0; 3];
        for (i, (slot, input, reasons)) in self.inputs.iter().enumerate() {
            match measured(input, reasons, slot, metric)? {
                Measured::Value(v) => values[i] = v,
                Measured::Declined(why) => {
                    return Ok(Err(format!(
                        "`{slot}` (stage `{}`) has no {metric}: {why}",
                        input.stage
                    )))
                }
            }
        }
        Ok(Ok(values))
    }

    /// Each slot's compared metrics, for the error when the three share none.
    fn describe(&self) -> String {
        self.inputs
            .iter()
            .map(|(slot, a, _)| {
                let compared: Vec<&str> = a
                    .metrics
                    .keys()
                    .filter(|k| registry::compared(k))
                    .map(String::as_str)
                    .collect();
                format!("{slot} (stage `{}`): {}", a.stage, compared.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

fn measured(
    input: &InputArtifact,
    reasons: &BTreeMap<String, String>,
    slot: &str,
    metric: &str,
) -> Result<Measured, StageError> {
    if let Some(v) = input.metrics.get(metric) {
        return Ok(Measured::Value(*v));
    }
    if let Some(why) = reasons.get(metric) {
        return Ok(Measured::Declined(why.clone()));
    }
    value(input, slot, metric).map(Measured::Value)
}

/// Why G has no value on this draw, with the numbers that decide it, so a report's footnote
/// says which draws fail and by how much ("seed=1: the criterion fails: ...").
fn not_applicable(g: &crate::metrics::UpdateGain, no: f64, oo: f64, nn: f64) -> String {
    if !g.criterion {
        format!(
            "the criterion fails: M(new, old) {no:.4} <= M(old, old) {oo:.4}, so G is not defined"
        )
    } else {
        format!(
            "the paragon does not improve on the old model: M(new*, new*) {nn:.4} <= M(old, old) \
             {oo:.4}, so G is not defined"
        )
    }
}

impl Run for UpdateGainStage {
    fn run(&self, ctx: &mut StageContext<'_>) -> Result<(), StageError> {
        let new_old = ctx.input("new_old")?.clone();
        let old_old = ctx.input("old_old")?.clone();
        let new_new = ctx.input("new_new")?.clone();
        let evaluations = Evaluations::read(&new_old, &old_old, &new_new)?;
        let mut names = UpdateGainParams::from_params(ctx.params())?.metrics;
        if names.is_empty() {
            names = evaluations.shared();
            if names.is_empty() {
                return Err(StageError::Other(format!(
                    "update-gain: the three evaluations share no quality metric (map, r1, \
                     tar_at_far, ...): {}; connect evaluate stages of one protocol",
                    evaluations.describe()
                )));
            }
        }
        let mut details = serde_json::Map::new();
        for m in &names {
            let [no, oo, nn] = match evaluations.values(m)? {
                Ok(values) => values,
                Err(why) => {
                    for derived in [&registry::DIFF, &registry::CRITERION, &registry::GAIN] {
                        ctx.decline(&derived.named(m), why.clone())?;
                    }
                    details.insert(m.clone(), json!({ "declined": why }));
                    continue;
                }
            };
            let g = update_gain(no, oo, nn);
            ctx.metric(&registry::DIFF.named(m), g.difference);
            ctx.metric(
                &registry::CRITERION.named(m),
                if g.criterion { 1.0 } else { 0.0 },
            );
            match (g.gain, g.not_applicable) {
                (Some(gain), _) => ctx.metric(&registry::GAIN.named(m), gain),
                (None, _) => {
                    ctx.decline(&registry::GAIN.named(m), not_applicable(&g, no, oo, nn))?
                }
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

    #[test]
    fn the_struct_reads_what_the_kind_declares() {
        crate::kind::typed::assert_reads_match_declaration(
            &UpdateGainStage,
            json!({}),
            UpdateGainParams::from_params,
        );
    }

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
        let declined: BTreeMap<String, String> =
            crate::kind::read_json(&out.path().join("reasons.json")).unwrap();
        assert_eq!(
            declined["gain_r1"],
            "the criterion fails: M(new, old) 0.2000 <= M(old, old) 0.3000, so G is not defined"
        );
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

    #[test]
    fn a_metric_an_evaluation_declined_is_declined_with_its_reason() {
        let dir = tempfile::tempdir().unwrap();
        let reasons = dir.path().join("reasons.json");
        std::fs::write(
            &reasons,
            r#"{"tar_at_far": "FAR 1e-4 needs 10000 impostor pairs; there are 120"}"#,
        )
        .unwrap();
        let verification = |stage: &str, tar: Option<f64>| {
            let mut a = artifact(stage, stage, &[]);
            match tar {
                Some(v) => {
                    a.metrics.insert("tar_at_far".into(), v);
                }
                None => {
                    a.outputs.insert("reasons.json".into(), reasons.clone());
                }
            }
            a
        };
        let (metrics, out) = run_stage(
            &UpdateGainStage,
            &UpdateGainStage,
            json!({}),
            &[
                ("new_old", vec![verification("no", Some(0.5))]),
                ("old_old", vec![verification("oo", None)]),
                ("new_new", vec![verification("nn", Some(0.7))]),
            ],
        )
        .unwrap();
        assert!(metrics.is_empty(), "{metrics:?}");
        let declined: BTreeMap<String, String> =
            crate::kind::read_json(&out.path().join("reasons.json")).unwrap();
        for name in ["diff_tar_at_far", "criterion_tar_at_far", "gain_tar_at_far"] {
            assert!(
                declined[name].contains("`old_old` (stage `oo`) has no tar_at_far: FAR 1e-4 needs"),
                "{declined:?}"
            );
        }
    }

    #[test]
    fn evaluations_of_different_protocols_are_an_error_listing_what_each_has() {
        let mut tar = artifact("ver", "ver", &[]);
        tar.metrics.insert("tar_at_far".into(), 0.5);
        let err = run_stage(
            &UpdateGainStage,
            &UpdateGainStage,
            json!({}),
            &[
                ("new_old", vec![tar]),
                ("old_old", vec![eval("oo", 0.4, 0.3)]),
                ("new_new", vec![eval("nn", 0.6, 0.5)]),
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("new_old (stage `ver`): tar_at_far"), "{err}");
        assert!(err.contains("old_old (stage `oo`): map, r1"), "{err}");
    }
}
