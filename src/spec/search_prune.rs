//! `prune = { kind = "asha", resource = "epochs", min = 2, max = 24, eta = 3 }`: a search's
//! early stopping, as written and checked.
//!
//! The resource is the `epochs` of one searched stage; each rung binds it to the rung's
//! amount, and a promoted trial's instance of that stage continues from the lower rung's
//! result through the kind's `resume` input (every training kind has one). So the stage's kind
//! must have that slot, the parameter must be `epochs` (a resumed run trains the epochs its
//! lower rung did not), neither swept nor searched, and the stage must not connect `resume`
//! itself: every such mistake is an error here, at its place, before anything runs.

use super::error::SpecError;
use super::model::unknown_key;
use super::search_space::Dim;
use super::source::Loc;
use super::stage::StageSpec;
use super::value::SValue;
use crate::kind::{param_decl, ParamType, Registry};

const PRUNE_KEYS: &[&str] = &["kind", "resource", "min", "max", "eta"];
const PRUNERS: &[&str] = &["asha"];

/// `prune = { kind = "asha", resource = "epochs", min = 2, max = 24, eta = 3 }`: asynchronous
/// successive halving over one integer parameter of one searched stage (see
/// [`crate::search::asha`]).
#[derive(Debug, Clone)]
pub struct Asha {
    /// The stage whose parameter is the resource (it must have a `resume` input slot).
    pub stage: String,
    /// The resource parameter (`epochs`).
    pub param: String,
    /// The resource of the first rung.
    pub min: i64,
    /// The resource of the last rung.
    pub max: i64,
    /// The reduction factor: the best 1/eta of a rung is promoted to eta times the resource.
    pub eta: i64,
    /// Where it is written.
    pub loc: Loc,
}

impl Asha {
    /// The resource of each rung: `min * eta^k` while below `max`, then `max`
    /// (2, 6, 18, 24 for min 2, eta 3, max 24), as Ray Tune's ASHA places its milestones.
    pub fn rungs(&self) -> Vec<i64> {
        let mut out = Vec::new();
        let mut r = self.min;
        while r < self.max {
            out.push(r);
            r = r.saturating_mul(self.eta);
        }
        out.push(self.max);
        out
    }
}

/// The slot through which a promoted trial continues from its lower rung's result (a kind
/// that can resume declares it: `crate::stages::training::RESUME_INPUT`).
pub(crate) const RESUME_SLOT: &str = "resume";

/// The one parameter a resumed run can continue along.
const EPOCHS: &str = "epochs";

/// Reads and checks a search's `prune` table against its space and the stages.
pub(super) fn read_prune(
    value: &SValue,
    space: &[Dim],
    stages: &[StageSpec],
    registry: &Registry,
    what: &str,
) -> Result<Asha, SpecError> {
    let place = format!("{what} prune");
    let (mut kind, mut resource, mut min, mut max, mut eta) = (None, None, None, None, 3);
    for (k, v) in value.expect_table(&place).map_err(|e| {
        e.hint("write `prune = { kind = \"asha\", resource = \"epochs\", min = 2, max = 24, eta = 3 }`")
    })? {
        match k.name.as_str() {
            "kind" => kind = Some(v),
            "resource" => resource = Some(v),
            "min" => min = Some(v.expect_int_at_least("min", 1)?),
            "max" => max = Some((v.expect_int_at_least("max", 1)?, v)),
            "eta" => eta = v.expect_int_at_least("eta", 2)?,
            other => return Err(unknown_key(&k.loc, other, &place, PRUNE_KEYS)),
        }
    }
    let missing = |key: &str| {
        SpecError::at(&value.loc, format!("{place} has no `{key}`")).hint(
            "write `prune = { kind = \"asha\", resource = \"epochs\", min = 2, max = 24, eta = 3 }`",
        )
    };
    let kind_value = kind.ok_or_else(|| missing("kind"))?;
    let kind_name = kind_value.expect_str("prune kind")?;
    if !PRUNERS.contains(&kind_name) {
        return Err(
            SpecError::at(&kind_value.loc, format!("unknown pruner `{kind_name}`"))
                .suggest(kind_name, PRUNERS.iter().copied()),
        );
    }
    let resource = resource.ok_or_else(|| missing("resource"))?;
    let min = min.ok_or_else(|| missing("min"))?;
    let (max, max_value) = max.ok_or_else(|| missing("max"))?;
    if max <= min {
        return Err(SpecError::at(
            &max_value.loc,
            format!("`max` ({max}) must be larger than `min` ({min})"),
        )
        .hint("ASHA trains every trial `min`, and the best ones up to `max`"));
    }
    let (stage, param) = resource_param(resource, space, stages, registry)?;
    Ok(Asha {
        stage,
        param,
        min,
        max,
        eta,
        loc: value.loc.clone(),
    })
}

/// The stage and parameter `resource` names: `epochs` (the one searched stage that has it) or
/// `stages.STAGE.params.epochs`; checked as the module says.
fn resource_param(
    value: &SValue,
    space: &[Dim],
    stages: &[StageSpec],
    registry: &Registry,
) -> Result<(String, String), SpecError> {
    let text = value.expect_str("prune resource")?;
    let mut searched: Vec<&str> = Vec::new();
    for d in space {
        if !searched.contains(&d.stage.as_str()) {
            searched.push(&d.stage);
        }
    }
    let (stage_name, param) = match text.split('.').collect::<Vec<_>>().as_slice() {
        ["stages", stage, "params", param] => (stage.to_string(), param.to_string()),
        [param] => {
            let having: Vec<&str> = searched
                .iter()
                .copied()
                .filter(|s| {
                    stage_of(stages, s)
                        .and_then(|spec| registry.get(&spec.kind))
                        .is_some_and(|k| param_decl(k, param).is_some())
                })
                .collect();
            match having.as_slice() {
                [one] => (one.to_string(), param.to_string()),
                [] => {
                    return Err(SpecError::at(
                        &value.loc,
                        format!(
                            "no searched stage ({}) has a parameter `{param}`",
                            searched.join(", ")
                        ),
                    )
                    .hint("name the resource as `stages.STAGE.params.epochs`"))
                }
                many => {
                    return Err(SpecError::at(
                        &value.loc,
                        format!(
                            "several searched stages have a parameter `{param}`: {}",
                            many.join(", ")
                        ),
                    )
                    .hint(format!(
                        "write `resource = \"stages.{}.params.{param}\"`",
                        many[0]
                    )))
                }
            }
        }
        _ => {
            return Err(
                SpecError::at(&value.loc, format!("`{text}` is not a resource parameter"))
                    .hint("write `epochs` or `stages.STAGE.params.epochs`"),
            )
        }
    };
    if !searched.contains(&stage_name.as_str()) {
        return Err(SpecError::at(
            &value.loc,
            format!("stage `{stage_name}` is not searched: no dimension of the space sets its parameters"),
        )
        .hint("the resource must belong to a stage the trials train"));
    }
    let spec = stage_of(stages, &stage_name).ok_or_else(|| {
        SpecError::at(&value.loc, format!("unknown stage `{stage_name}`"))
            .suggest(&stage_name, stages.iter().map(|s| s.name.as_str()))
    })?;
    check_resource(value, spec, &param, space, registry)?;
    Ok((stage_name, param))
}

fn stage_of<'a>(stages: &'a [StageSpec], name: &str) -> Option<&'a StageSpec> {
    stages.iter().find(|s| s.name == name)
}

/// The resource is the `epochs` of a kind that can resume, neither swept nor searched, and the
/// stage leaves its `resume` slot to the search.
fn check_resource(
    value: &SValue,
    spec: &StageSpec,
    param: &str,
    space: &[Dim],
    registry: &Registry,
) -> Result<(), SpecError> {
    let kind = registry.get(&spec.kind).ok_or_else(|| {
        SpecError::at(
            &value.loc,
            format!("stage `{}` has unknown kind", spec.name),
        )
    })?;
    let decl = param_decl(kind, param).ok_or_else(|| {
        SpecError::at(
            &value.loc,
            format!("kind `{}` has no parameter `{param}`", spec.kind),
        )
        .suggest(param, kind.params().iter().map(|p| p.name))
    })?;
    if decl.ty != ParamType::Int {
        return Err(SpecError::at(
            &value.loc,
            format!(
                "the resource must be an integer parameter; stages.{}.params.{param} is {}",
                spec.name,
                decl.ty.describe()
            ),
        ));
    }
    if !kind.inputs().iter().any(|i| i.name == RESUME_SLOT) {
        return Err(SpecError::at(
            &value.loc,
            format!(
                "kind `{}` cannot continue from a checkpoint (it has no `{RESUME_SLOT}` input), \
                 so ASHA cannot promote its trials",
                spec.kind
            ),
        )
        .hint(
            "prune a search whose resource is the `epochs` of a training kind (train-classifier, \
             train-bct, train-teacher, distill), or remove `prune`",
        ));
    }
    if param != EPOCHS {
        return Err(SpecError::at(
            &value.loc,
            format!(
                "the resource must be `{EPOCHS}`: a promoted trial continues its lower rung's \
                 run for more epochs; `{param}` cannot be continued that way"
            ),
        ));
    }
    if spec.inputs.iter().any(|i| i.slot == RESUME_SLOT) {
        return Err(SpecError::at(
            &value.loc,
            format!(
                "stage `{}` connects `{RESUME_SLOT}` itself; under ASHA the search connects it",
                spec.name
            ),
        ));
    }
    if let Some(dim) = space
        .iter()
        .find(|d| d.stage == spec.name && d.param == param)
    {
        return Err(SpecError::at(
            &dim.loc,
            format!("`{param}` is ASHA's resource and cannot also be searched"),
        ));
    }
    let mut axes = std::collections::BTreeSet::new();
    if let Some(t) = spec.params.get(param) {
        t.axes(&mut axes);
    }
    if let Some(axis) = axes.first() {
        return Err(SpecError::at(
            &value.loc,
            format!(
                "stages.{}.params.{param} is swept over `{axis}` already",
                spec.name
            ),
        )
        .hint("ASHA sets the resource per rung; write a plain value"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_resume_slot_is_the_one_the_training_kinds_declare() {
        assert_eq!(super::RESUME_SLOT, crate::stages::training::RESUME_INPUT);
        for kind in crate::stages::registry().kinds() {
            let epochs = kind.params().iter().any(|p| p.name == super::EPOCHS);
            let resumes = kind.inputs().iter().any(|i| i.name == super::RESUME_SLOT);
            assert_eq!(
                epochs,
                resumes,
                "kind `{}`: every kind with `epochs` can resume, and only those",
                kind.kind()
            );
        }
    }
}
