//! `[search.NAME]`: a hyper-parameter search, as written and checked.
//!
//! A search owns named dimensions (`[search.NAME.space]`, read by [`super::search_space`]),
//! each bound to one stage parameter, and optionally early stopping ([`super::search_prune`]).
//! Its trials become ordinary instances (see
//! [`crate::exec::search`]); this module only reads the table, so that every mistake (a bad
//! range, an unknown parameter path, an unknown sampler) is an error at its place before
//! anything runs.

use super::error::SpecError;
use super::model::unknown_key;
use super::search_space::read_dim;
use super::source::Loc;
use super::stage::StageSpec;
use super::sweep::MAX_INSTANCES;
use super::value::{SKey, SValue};
use crate::kind::Registry;

pub(crate) use super::search_prune::{Asha, RESUME_SLOT};
pub use super::search_space::{Dim, Domain};

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
const SAMPLERS: &[&str] = &["grid", "random", "tpe"];

/// Reads every `[search.NAME]` table, checked against the resolved stages.
pub(crate) fn read_searches(
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
            "seed" => seed = v.expect_int_at_least("seed", 0)? as u64,
            "trials" => {
                trials = Some((v.expect_int_at_least("trials", 1)? as usize, v.loc.clone()))
            }
            "parallel" => parallel = v.expect_int_at_least("parallel", 1)? as usize,
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
    if size.is_none_or(|n| n > MAX_INSTANCES) {
        return Err(SpecError::at(loc, "the grid of this search is too large")
            .hint("use fewer values, or sampler = \"tpe\""));
    }
    Ok(())
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
