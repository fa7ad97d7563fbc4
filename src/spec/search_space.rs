//! `[search.NAME.space]`: a search's dimensions, each bound to one stage parameter and drawn
//! from a domain (`log_uniform`, `uniform`, `int`, `choice`, with an optional `step`), as
//! written and checked against the parameter's declared type and range.

use serde_json::Value;

use super::error::SpecError;
use super::model::unknown_key;
use super::source::Loc;
use super::stage::StageSpec;
use super::value::{SKey, SKind, SValue};
use crate::kind::{param_decl, ParamType, Registry};

const DIM_KEYS: &[&str] = &["param", "log_uniform", "uniform", "int", "choice", "step"];
const DOMAIN_KEYS: &[&str] = &["log_uniform", "uniform", "int", "choice"];

/// One dimension of a search space.
#[derive(Debug, Clone)]
pub struct Dim {
    /// Its name in the space (`lr`).
    pub name: String,
    /// The stage whose parameter it sets.
    pub stage: String,
    /// The parameter it sets.
    pub param: String,
    /// The values it may take.
    pub domain: Domain,
    /// Where it is written.
    pub loc: Loc,
}

/// The values a dimension may take.
#[derive(Debug, Clone, PartialEq)]
pub enum Domain {
    /// A float in `[lo, hi]`, uniform, quantised to `lo + k * step` when a step is given.
    Uniform {
        /// Lower end.
        lo: f64,
        /// Upper end.
        hi: f64,
        /// Quantum.
        step: Option<f64>,
    },
    /// A positive float in `[lo, hi]`, uniform in its logarithm.
    LogUniform {
        /// Lower end (> 0).
        lo: f64,
        /// Upper end.
        hi: f64,
    },
    /// An integer in `[lo, hi]` (both included), `lo + k * step`.
    Int {
        /// Lower end.
        lo: i64,
        /// Upper end.
        hi: i64,
        /// Step (>= 1).
        step: i64,
    },
    /// One of the listed values.
    Choice(Vec<Value>),
}

impl Domain {
    /// The points of a finite domain, in order (`None` for a continuous one).
    pub fn points(&self) -> Option<Vec<Value>> {
        match self {
            Domain::Choice(values) => Some(values.clone()),
            Domain::Int { lo, hi, step } => Some(
                (0..)
                    .map(|k| lo + k * step)
                    .take_while(|v| v <= hi)
                    .map(Value::from)
                    .collect(),
            ),
            Domain::Uniform {
                lo,
                hi,
                step: Some(step),
            } => {
                let n = ((hi - lo) / step + 1e-9).floor() as i64;
                Some((0..=n).map(|k| Value::from(lo + k as f64 * step)).collect())
            }
            Domain::Uniform { step: None, .. } | Domain::LogUniform { .. } => None,
        }
    }
}

pub(super) fn read_dim(
    name: &SKey,
    entry: &SValue,
    stages: &[StageSpec],
    registry: &Registry,
) -> Result<Dim, SpecError> {
    let place = format!("search dimension `{}`", name.name);
    let mut param = None;
    let mut domain: Option<(&SKey, &SValue)> = None;
    let mut step = None;
    for (k, v) in entry.expect_table(&place).map_err(|e| {
        e.hint(format!(
            "write `{} = {{ param = \"stages.STAGE.params.P\", uniform = [0.0, 1.0] }}`",
            name.name
        ))
    })? {
        match k.name.as_str() {
            "param" => param = Some(v),
            "step" => step = Some(v),
            d if DOMAIN_KEYS.contains(&d) => {
                if let Some((first, _)) = domain {
                    return Err(SpecError::at(
                        &k.loc,
                        format!("{place} has both `{}` and `{d}`", first.name),
                    )
                    .hint("give one domain per dimension"));
                }
                domain = Some((k, v));
            }
            other => return Err(unknown_key(&k.loc, other, &place, DIM_KEYS)),
        }
    }
    let param_value = param.ok_or_else(|| {
        SpecError::at(&name.loc, format!("{place} has no `param`"))
            .hint("add `param = \"stages.STAGE.params.NAME\"`, the parameter it sets")
    })?;
    let (stage, param_name, decl_ty, decl_range) = read_param_path(param_value, stages, registry)?;
    let (domain_key, domain_value) = domain.ok_or_else(|| {
        SpecError::at(&name.loc, format!("{place} has no domain")).hint(
            "add one of `log_uniform = [LO, HI]`, `uniform = [LO, HI]`, `int = [LO, HI]`, \
             `choice = [A, B, ...]`",
        )
    })?;
    let domain = read_domain(domain_key, domain_value, step)?;
    check_domain_fits(
        &domain,
        domain_value,
        (&decl_ty, decl_range),
        &stage,
        &param_name,
    )?;
    Ok(Dim {
        name: name.name.clone(),
        stage,
        param: param_name,
        domain,
        loc: name.loc.clone(),
    })
}

/// `stages.STAGE.params.P` -> the stage, the parameter and its declared type and range.
fn read_param_path(
    value: &SValue,
    stages: &[StageSpec],
    registry: &Registry,
) -> Result<(String, String, ParamType, Option<crate::kind::Range>), SpecError> {
    let path = value.expect_str("param")?;
    let parts: Vec<&str> = path.split('.').collect();
    let ["stages", stage, "params", param] = parts.as_slice() else {
        return Err(
            SpecError::at(&value.loc, format!("`{path}` is not a parameter path"))
                .hint("write `stages.STAGE.params.NAME`"),
        );
    };
    let spec = stages.iter().find(|s| s.name == *stage).ok_or_else(|| {
        SpecError::at(
            &value.loc,
            format!("`{path}` names unknown stage `{stage}`"),
        )
        .suggest(stage, stages.iter().map(|s| s.name.as_str()))
    })?;
    let kind = registry
        .get(&spec.kind)
        .ok_or_else(|| SpecError::at(&value.loc, format!("stage `{stage}` has unknown kind")))?;
    let decl = param_decl(kind, param).ok_or_else(|| {
        SpecError::at(
            &value.loc,
            format!("`{path}`: kind `{}` has no parameter `{param}`", spec.kind),
        )
        .suggest(param, kind.params().iter().map(|p| p.name))
    })?;
    let mut axes = std::collections::BTreeSet::new();
    if let Some(t) = spec.params.get(*param) {
        t.axes(&mut axes);
    }
    if let Some(axis) = axes.first() {
        return Err(SpecError::at(
            &value.loc,
            format!("`{path}` is swept over `{axis}` already"),
        )
        .hint("a parameter is either swept or searched, not both"));
    }
    Ok((stage.to_string(), param.to_string(), decl.ty, decl.range))
}

/// The domain a `[search]` entry names (`uniform`, `log_uniform`, `int`, else `choice`), read
/// from its value and its optional `step`.
fn read_domain(key: &SKey, value: &SValue, step: Option<&SValue>) -> Result<Domain, SpecError> {
    match key.name.as_str() {
        "uniform" => read_uniform(value, step),
        "log_uniform" => read_log_uniform(value, step),
        "int" => read_int(value, step),
        _ => read_choice(value, step),
    }
}

/// The two numbers `[LO, HI]`, LO < HI, of a `what` range.
fn float_pair(value: &SValue, what: &str) -> Result<(f64, f64), SpecError> {
    let bad = || {
        SpecError::at(
            &value.loc,
            format!("`{what}` takes two numbers [LO, HI] with LO < HI"),
        )
    };
    let SKind::Array(items) = &value.kind else {
        return Err(bad());
    };
    let nums: Vec<f64> = items.iter().filter_map(|v| v.to_json().as_f64()).collect();
    match nums.as_slice() {
        [lo, hi] if items.len() == 2 && lo < hi => Ok((*lo, *hi)),
        _ => Err(bad()),
    }
}

/// A `uniform` domain, quantised by `step` when there is one.
fn read_uniform(value: &SValue, step: Option<&SValue>) -> Result<Domain, SpecError> {
    let (lo, hi) = float_pair(value, "uniform")?;
    let step = match step {
        None => None,
        Some(s) => match s.to_json().as_f64() {
            Some(x) if x > 0.0 && x <= hi - lo => Some(x),
            _ => {
                return Err(SpecError::at(
                    &s.loc,
                    format!("`step` must be a number in (0, {}]", hi - lo),
                ))
            }
        },
    };
    Ok(Domain::Uniform { lo, hi, step })
}

/// A `log_uniform` domain: a positive lower end, and no `step`.
fn read_log_uniform(value: &SValue, step: Option<&SValue>) -> Result<Domain, SpecError> {
    let (lo, hi) = float_pair(value, "log_uniform")?;
    if lo <= 0.0 {
        return Err(SpecError::at(
            &value.loc,
            format!("`log_uniform` needs a positive lower end, found {lo}"),
        )
        .hint("use `uniform` for ranges that include zero"));
    }
    if let Some(s) = step {
        return Err(SpecError::at(&s.loc, "`step` cannot quantise a log scale")
            .hint("use `choice` for a few values, or `uniform` with a step"));
    }
    Ok(Domain::LogUniform { lo, hi })
}

/// An `int` domain: two integers `[LO, HI]`, both included, LO < HI, and a whole `step`.
fn read_int(value: &SValue, step: Option<&SValue>) -> Result<Domain, SpecError> {
    let ints: Vec<i64> = match &value.kind {
        SKind::Array(items) => items
            .iter()
            .filter_map(|v| match v.kind {
                SKind::Int(i) => Some(i),
                _ => None,
            })
            .collect(),
        _ => vec![],
    };
    let [lo, hi] = ints.as_slice() else {
        return Err(SpecError::at(
            &value.loc,
            "`int` takes two integers [LO, HI] (both included)",
        ));
    };
    if lo >= hi {
        return Err(SpecError::at(
            &value.loc,
            format!("`int` needs LO < HI, found [{lo}, {hi}]"),
        ));
    }
    let step = match step {
        None => 1,
        Some(s) => match s.kind {
            SKind::Int(n) if n >= 1 && n <= hi - lo => n,
            _ => {
                return Err(SpecError::at(
                    &s.loc,
                    format!(
                        "`step` of an `int` range must be an integer in [1, {}]",
                        hi - lo
                    ),
                ))
            }
        },
    };
    Ok(Domain::Int {
        lo: *lo,
        hi: *hi,
        step,
    })
}

/// A `choice` domain: a list of distinct values, and no `step`.
fn read_choice(value: &SValue, step: Option<&SValue>) -> Result<Domain, SpecError> {
    if let Some(s) = step {
        return Err(SpecError::at(&s.loc, "`step` does not apply to a `choice`"));
    }
    let SKind::Array(items) = &value.kind else {
        return Err(SpecError::at(&value.loc, "`choice` takes a list of values"));
    };
    if items.is_empty() {
        return Err(SpecError::at(&value.loc, "`choice` has no values"));
    }
    let values: Vec<Value> = items.iter().map(SValue::to_json).collect();
    for (i, v) in values.iter().enumerate() {
        if values[..i].contains(v) {
            return Err(SpecError::at(
                &items[i].loc,
                format!("`choice` lists {v} twice"),
            ));
        }
    }
    Ok(Domain::Choice(values))
}

/// Every value the domain may give is of the parameter's type and in its range.
fn check_domain_fits(
    domain: &Domain,
    value: &SValue,
    (ty, range): (&ParamType, Option<crate::kind::Range>),
    stage: &str,
    param: &str,
) -> Result<(), SpecError> {
    let ends: Vec<Value> = match domain {
        Domain::Choice(values) => values.clone(),
        Domain::Int { lo, hi, .. } => vec![Value::from(*lo), Value::from(*hi)],
        Domain::Uniform { lo, hi, .. } | Domain::LogUniform { lo, hi } => {
            if *ty == ParamType::Int {
                return Err(SpecError::at(
                    &value.loc,
                    format!(
                        "stages.{stage}.params.{param} is an integer; this domain gives floats"
                    ),
                )
                .hint("use `int = [LO, HI]` (with a `step` if needed) or a `choice`"));
            }
            vec![Value::from(*lo), Value::from(*hi)]
        }
    };
    for v in &ends {
        if !ty.accepts(v) {
            return Err(SpecError::at(
                &value.loc,
                format!(
                    "stages.{stage}.params.{param} expects {}, and this domain gives {v}",
                    ty.describe()
                ),
            ));
        }
        if let (Some(range), Some(x)) = (range, v.as_f64()) {
            if !range.contains(x) {
                return Err(SpecError::at(
                    &value.loc,
                    format!(
                        "stages.{stage}.params.{param} must be {}, and this domain reaches {x}",
                        range.describe()
                    ),
                ));
            }
        }
    }
    Ok(())
}
