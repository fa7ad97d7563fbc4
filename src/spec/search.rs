//! `[search.NAME]`: a hyper-parameter search, as written and checked.
//!
//! A search owns named dimensions (`[search.NAME.space]`), each bound to one stage parameter
//! (`param = "stages.STAGE.params.P"`) and drawn from a domain (`log_uniform`, `uniform`,
//! `int`, `choice`, with an optional `step`). Its trials become ordinary instances (see
//! [`crate::exec::search`]); this module only reads the table, so that every mistake (a bad
//! range, an unknown parameter path, an unknown sampler) is an error at its place before
//! anything runs.

use serde_json::Value;

use super::error::SpecError;
use super::model::unknown_key;
use super::source::Loc;
use super::value::{SKey, SKind, SValue};
use super::StageSpec;
use crate::kind::{param_decl, ParamType, Registry};

/// One `[search.NAME]` table.
#[derive(Debug, Clone)]
pub struct SearchSpec {
    /// Its name (`${search.NAME.best.P}`).
    pub name: String,
    /// Where it is declared.
    pub loc: Loc,
    /// The dimensions, in written order.
    pub space: Vec<Dim>,
    /// What the trials are scored by.
    pub objective: Objective,
    /// How trials are proposed.
    pub sampler: SamplerKind,
    /// The sampler's seed.
    pub seed: u64,
    /// How many trials in all.
    pub trials: usize,
    /// How many trials may run at once (trials are proposed in batches of this size).
    pub parallel: usize,
    /// Early stopping (`prune = { kind = "asha", ... }`), when asked for.
    pub prune: Option<Asha>,
}

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
/// that can resume declares it: `crate::stages::train_classifier::RESUME_INPUT`).
pub const RESUME_SLOT: &str = "resume";

/// An edge within one stage, across one dimension: the instance at coordinate `i` of
/// `dimension` takes the instance of the same stage at coordinate `from[i]` (same coordinates
/// otherwise) through input `slot`. ASHA's promotions are these ([`crate::exec::search`]); the
/// graph adds them when it expands `stage` ([`crate::graph::Plan::build`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ResumeLink {
    /// The stage.
    pub stage: String,
    /// The input slot (`resume`).
    pub slot: String,
    /// The dimension the edge crosses (`search.NAME`).
    pub dimension: String,
    /// Coordinate -> the coordinate it resumes from (`None`: starts fresh).
    pub from: Vec<Option<usize>>,
}

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

/// What a search optimises: one metric of one stage, reduced by the mean over the instances
/// of that stage each trial has (the axes the search does not own, such as `seed`).
#[derive(Debug, Clone)]
pub struct Objective {
    /// The stage.
    pub stage: String,
    /// The metric.
    pub metric: String,
    /// Maximise or minimise.
    pub goal: Goal,
    /// Where it is written.
    pub loc: Loc,
}

/// The direction of an objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goal {
    /// Larger is better.
    Max,
    /// Smaller is better.
    Min,
}

/// The samplers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SamplerKind {
    /// Every point of a finite space, in order.
    Grid,
    /// Independent uniform draws.
    Random,
    /// The tree-structured Parzen estimator, as Optuna defines it.
    Tpe,
}

impl SamplerKind {
    /// Its name in a pipeline file.
    pub fn name(self) -> &'static str {
        match self {
            SamplerKind::Grid => "grid",
            SamplerKind::Random => "random",
            SamplerKind::Tpe => "tpe",
        }
    }
}

impl Goal {
    /// `max` or `min`.
    pub fn name(self) -> &'static str {
        match self {
            Goal::Max => "max",
            Goal::Min => "min",
        }
    }

    /// Whether `a` is better than `b`.
    pub fn better(self, a: f64, b: f64) -> bool {
        match self {
            Goal::Max => a > b,
            Goal::Min => a < b,
        }
    }
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

const SEARCH_KEYS: &[&str] = &[
    "objective",
    "sampler",
    "seed",
    "trials",
    "parallel",
    "space",
    "prune",
    "description",
];

const OBJECTIVE_KEYS: &[&str] = &["stage", "metric", "goal"];
const DIM_KEYS: &[&str] = &["param", "log_uniform", "uniform", "int", "choice", "step"];
const DOMAIN_KEYS: &[&str] = &["log_uniform", "uniform", "int", "choice"];
const SAMPLERS: &[&str] = &["grid", "random", "tpe"];

/// Reads every `[search.NAME]` table, checked against the resolved stages.
pub fn read_searches(
    entries: &[(SKey, SValue)],
    stages: &[StageSpec],
    axis_names: &[&str],
    registry: &Registry,
) -> Result<Vec<SearchSpec>, SpecError> {
    let mut searches: Vec<SearchSpec> = Vec::new();
    for (key, value) in entries {
        super::names::check_name(&key.name, "search name", &key.loc)?;
        if axis_names.contains(&key.name.as_str()) {
            return Err(SpecError::at(
                &key.loc,
                format!("search `{}` has the name of a sweep axis", key.name),
            )
            .hint("name the search differently"));
        }
        let search = read_search(key, value, stages, registry)?;
        for dim in &search.space {
            let taken = searches
                .iter()
                .flat_map(|s| s.space.iter())
                .chain(search.space.iter().take_while(|d| d.name != dim.name))
                .find(|d| d.stage == dim.stage && d.param == dim.param);
            if let Some(other) = taken {
                return Err(SpecError::at(
                    &dim.loc,
                    format!(
                        "stages.{}.params.{} is already searched by dimension `{}`",
                        dim.stage, dim.param, other.name
                    ),
                ));
            }
        }
        searches.push(search);
    }
    Ok(searches)
}

fn read_search(
    key: &SKey,
    value: &SValue,
    stages: &[StageSpec],
    registry: &Registry,
) -> Result<SearchSpec, SpecError> {
    let what = format!("[search.{}]", key.name);
    let mut objective = None;
    let mut sampler = SamplerKind::Tpe;
    let mut seed = 0u64;
    let mut trials = None;
    let mut parallel = 1usize;
    let mut space = None;
    let mut prune = None;
    for (k, v) in value.expect_table(&what)? {
        match k.name.as_str() {
            "objective" => objective = Some(read_objective(v, stages, &what)?),
            "sampler" => sampler = read_sampler(v)?,
            "seed" => seed = positive_int(v, "seed", 0)? as u64,
            "trials" => trials = Some((positive_int(v, "trials", 1)? as usize, v.loc.clone())),
            "parallel" => parallel = positive_int(v, "parallel", 1)? as usize,
            "space" => space = Some(v),
            "description" => {}
            "prune" => prune = Some(v),
            other => return Err(unknown_key(&k.loc, other, &what, SEARCH_KEYS)),
        }
    }
    let objective = objective.ok_or_else(|| {
        SpecError::at(&key.loc, format!("{what} has no `objective`"))
            .hint("add `objective = { stage = \"STAGE\", metric = \"METRIC\", goal = \"max\" }`")
    })?;
    let space_value = space.ok_or_else(|| {
        SpecError::at(&key.loc, format!("{what} has no space")).hint(format!(
            "add a table [search.{}.space] with entries like \
             `lr = {{ param = \"stages.STAGE.params.lr\", log_uniform = [1e-4, 1e-2] }}`",
            key.name
        ))
    })?;
    let mut dims = Vec::new();
    for (name, entry) in space_value.expect_table(&format!("{what} space"))? {
        dims.push(read_dim(name, entry, stages, registry)?);
    }
    if dims.is_empty() {
        return Err(SpecError::at(
            &space_value.loc,
            format!("{what} has an empty space"),
        ));
    }
    let grid_size = grid_size(&dims);
    let trials_given = trials.clone();
    let trials = match (trials, sampler) {
        (Some((n, _)), _) => n,
        (None, SamplerKind::Grid) => grid_size.unwrap_or(0),
        (None, _) => {
            return Err(SpecError::at(&key.loc, format!("{what} has no `trials`"))
                .hint("add `trials = N`, the number of trials to run"))
        }
    };
    let prune = match prune {
        Some(v) => Some(super::search_prune::read_prune(
            v, &dims, stages, registry, &what,
        )?),
        None => None,
    };
    if sampler == SamplerKind::Grid {
        check_grid(&dims, grid_size, &key.loc)?;
        if let (Some(size), Some((n, loc))) = (grid_size, &trials_given) {
            if *n > size {
                return Err(SpecError::at(
                    loc,
                    format!("the grid has {size} points, fewer than `trials = {n}`"),
                )
                .hint(format!(
                    "ask for at most {size} trials, or leave `trials` out"
                )));
            }
        }
    }
    Ok(SearchSpec {
        name: key.name.clone(),
        loc: key.loc.clone(),
        space: dims,
        objective,
        sampler,
        seed,
        trials,
        parallel,
        prune,
    })
}

/// The number of points of a grid over `dims`, when every dimension is finite.
fn grid_size(dims: &[Dim]) -> Option<usize> {
    dims.iter().try_fold(1usize, |n, d| {
        d.domain.points().and_then(|p| n.checked_mul(p.len()))
    })
}

fn check_grid(dims: &[Dim], size: Option<usize>, loc: &Loc) -> Result<(), SpecError> {
    if let Some(dim) = dims.iter().find(|d| d.domain.points().is_none()) {
        return Err(SpecError::at(
            &dim.loc,
            format!(
                "the grid sampler needs finite dimensions, and `{}` is continuous",
                dim.name
            ),
        )
        .hint("give it a `step`, make it a `choice`, or use sampler = \"random\" or \"tpe\""));
    }
    if size.is_none_or(|n| n > crate::graph::MAX_INSTANCES) {
        return Err(SpecError::at(loc, "the grid of this search is too large")
            .hint("use fewer values, or sampler = \"tpe\""));
    }
    Ok(())
}

pub(super) fn positive_int(value: &SValue, what: &str, min: i64) -> Result<i64, SpecError> {
    match value.kind {
        SKind::Int(n) if n >= min => Ok(n),
        _ => Err(SpecError::at(
            &value.loc,
            format!(
                "`{what}` must be an integer of at least {min}, found {}",
                value.to_json()
            ),
        )),
    }
}

fn read_sampler(value: &SValue) -> Result<SamplerKind, SpecError> {
    match value.expect_str("sampler")? {
        "grid" => Ok(SamplerKind::Grid),
        "random" => Ok(SamplerKind::Random),
        "tpe" => Ok(SamplerKind::Tpe),
        other => Err(
            SpecError::at(&value.loc, format!("unknown sampler `{other}`"))
                .suggest(other, SAMPLERS.iter().copied()),
        ),
    }
}

fn read_objective(
    value: &SValue,
    stages: &[StageSpec],
    what: &str,
) -> Result<Objective, SpecError> {
    let place = format!("{what} objective");
    let (mut stage, mut metric, mut goal) = (None, None, None);
    for (k, v) in value.expect_table(&place)? {
        match k.name.as_str() {
            "stage" => stage = Some(v),
            "metric" => metric = Some(v),
            "goal" => goal = Some(v),
            other => return Err(unknown_key(&k.loc, other, &place, OBJECTIVE_KEYS)),
        }
    }
    let missing = |key: &str| {
        SpecError::at(&value.loc, format!("{place} has no `{key}`"))
            .hint("write `objective = { stage = \"STAGE\", metric = \"METRIC\", goal = \"max\" }`")
    };
    let stage_value = stage.ok_or_else(|| missing("stage"))?;
    let stage = stage_value.expect_str("objective stage")?.to_string();
    if !stages.iter().any(|s| s.name == stage) {
        return Err(SpecError::at(
            &stage_value.loc,
            format!("the objective names unknown stage `{stage}`"),
        )
        .suggest(&stage, stages.iter().map(|s| s.name.as_str())));
    }
    let metric = metric
        .ok_or_else(|| missing("metric"))?
        .expect_str("objective metric")?
        .to_string();
    let goal = match goal {
        None => return Err(missing("goal")),
        Some(v) => match v.expect_str("objective goal")? {
            "max" => Goal::Max,
            "min" => Goal::Min,
            other => {
                return Err(SpecError::at(&v.loc, format!("unknown goal `{other}`"))
                    .suggest(other, ["max", "min"]))
            }
        },
    };
    Ok(Objective {
        stage,
        metric,
        goal,
        loc: value.loc.clone(),
    })
}

fn read_dim(
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
