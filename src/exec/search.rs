//! Searches as graph expansion over time.
//!
//! A `[search.NAME]` adds one dimension to the pipeline, `search.NAME`, whose coordinates are
//! its trials: axes `NAME.trial` (the trial's number) and `NAME.DIM` (one per dimension of the
//! space, zipped), bound into the parameters the space names. The graph then fans the searched
//! stages and everything downstream of them out over the trials, exactly as it does over a
//! sweep, so a trial is ordinary instances: keyed by their parameters and inputs (the trial's
//! number is in the binding, never in a key), cached, pushed, pulled, shown by every command.
//!
//! Which trials exist is decided by [`replay`]: batch by batch (`parallel` trials a batch), the
//! sampler proposes from the objectives of the finished batches ([`crate::search::propose`]),
//! and the objectives are read from the cache. Replay stops at the first batch the cache does
//! not finish, so the plan holds the trials known so far plus the next batch, and nothing else.
//! [`drive`] runs that plan, replays again, and repeats until the replay adds nothing: the same
//! search run twice proposes the same trials and finds them all cached; a search killed with
//! `kill -9` replays to where it stopped; raising `trials` appends batches.
//!
//! Stages that take `${search.NAME.best.DIM}` (and what reads them) are left out of the plan
//! until the search has finished; the plan's [`SearchState`]s name them ("waits for search
//! NAME").

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::lineage::{describe_chain, test_chain};
use super::plan_status::plan_status;
use super::{RunSummary, Status};
use crate::cache::Cache;
use crate::graph::Plan;
use crate::kind::Registry;
use crate::search::{propose, Observation, SearchState, Trial};
use crate::spec::search::SearchSpec;
use crate::spec::{Axis, PipelineSpec, SpecError, Tpl};

/// Why a search cannot be planned.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// A mistake in the pipeline (the objective reads test images, names no metric...).
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The cache index failed while reading trials' results.
    #[error(transparent)]
    Index(#[from] crate::cache::IndexError),
}

/// The pipeline's plan with its searches replayed against `cache` (`None`: no cache yet, so
/// every search stands at its first batch).
pub fn replay(
    spec: &PipelineSpec,
    registry: &Registry,
    cache: Option<&Cache>,
) -> Result<Plan, SearchError> {
    let active: Vec<&SearchSpec> = spec
        .searches
        .iter()
        .filter(|s| spec.stage(&s.objective.stage).is_some())
        .collect();
    if active.is_empty() {
        return Ok(Plan::build(spec.clone())?);
    }
    let mut states: Vec<SearchState> = active.iter().map(|s| SearchState::new(s)).collect();
    for (si, search) in active.iter().enumerate() {
        let mut history: Vec<Observation> = Vec::new();
        loop {
            let known = states[si].trials.len();
            let batch = search.parallel.min(search.trials.saturating_sub(known));
            if batch == 0 {
                break;
            }
            for number in known..known + batch {
                let values = propose(search, number, &history);
                states[si].trials.push(Trial {
                    number,
                    values: search
                        .space
                        .iter()
                        .map(|d| d.name.clone())
                        .zip(values)
                        .collect(),
                    objective: None,
                    instances: 0,
                });
            }
            let plan = build(spec, &active, &mut states)?;
            check_objective(&plan, search, registry)?;
            let Some(cache) = cache else { break };
            read_objectives(&plan, search, &mut states[si], registry, cache)?;
            let done = &states[si].trials[known..];
            if done.iter().any(|t| t.objective.is_none()) {
                break;
            }
            history.extend(done.iter().map(|t| Observation {
                values: t.values.values().cloned().collect(),
                objective: t.objective.unwrap_or(f64::NAN),
            }));
        }
        let state = &mut states[si];
        state.finished = state.trials.len() >= search.trials
            && state.trials.iter().all(|t| t.objective.is_some());
        if state.finished {
            state.best = state.best_of(search.objective.goal);
        }
    }
    let plan = build(spec, &active, &mut states)?;
    for (search, state) in active.iter().zip(&mut states) {
        check_objective(&plan, search, registry)?;
        state.mean_over = mean_over(&plan, search);
    }
    Ok(plan.with_searches(states))
}

/// The axes the objective is the mean over: those its instances have that the search does
/// not own.
fn mean_over(plan: &Plan, search: &SearchSpec) -> Vec<String> {
    let own = format!("{}.", search.name);
    let axes: BTreeSet<&String> = plan
        .instances_of(&search.objective.stage)
        .flat_map(|i| i.binding.keys())
        .filter(|k| !k.starts_with(&own))
        .collect();
    axes.into_iter().cloned().collect()
}

/// The plan of `spec` with the searches' trials so far as a dimension each, winners bound
/// where known, and the stages waiting for a winner left out (named in the states).
fn build(
    spec: &PipelineSpec,
    active: &[&SearchSpec],
    states: &mut [SearchState],
) -> Result<Plan, SpecError> {
    let mut out = spec.clone();
    for (search, state) in active.iter().zip(states.iter()) {
        add_trial_axes(&mut out, search, state);
    }
    for state in states.iter_mut() {
        state.takers = out
            .stages
            .iter()
            .filter(|stage| {
                let mut refs = Vec::new();
                stage.params.values().for_each(|t| t.best_refs(&mut refs));
                refs.iter().any(|(s, _, _)| *s == state.name)
            })
            .map(|stage| stage.name.clone())
            .collect();
    }
    let winner = |search: &str, dim: &str| -> Option<Value> {
        let state = states.iter().find(|s| s.name == search)?;
        state.winner()?.values.get(dim).cloned()
    };
    for stage in &mut out.stages {
        for tpl in stage.params.values_mut() {
            *tpl = tpl.with_best(&winner);
        }
    }
    let waiting = waiting_stages(&out);
    for state in states.iter_mut() {
        state.waiting = waiting
            .iter()
            .filter(|(_, s)| **s == state.name)
            .map(|(stage, _)| stage.clone())
            .collect();
    }
    out.stages.retain(|s| !waiting.contains_key(&s.name));
    Plan::build(out)
}

/// The axes of one search's dimension, and its space bound into the stages' parameters.
fn add_trial_axes(spec: &mut PipelineSpec, search: &SearchSpec, state: &SearchState) {
    let dimension = format!("search.{}", search.name);
    spec.axes.push(Axis {
        name: format!("{}.trial", search.name),
        values: state.trials.iter().map(|t| Value::from(t.number)).collect(),
        dimension: dimension.clone(),
        loc: search.loc.clone(),
    });
    for dim in &search.space {
        let axis = format!("{}.{}", search.name, dim.name);
        spec.axes.push(Axis {
            name: axis.clone(),
            values: state
                .trials
                .iter()
                .map(|t| t.values.get(&dim.name).cloned().unwrap_or(Value::Null))
                .collect(),
            dimension: dimension.clone(),
            loc: dim.loc.clone(),
        });
        if let Some(stage) = spec.stages.iter_mut().find(|s| s.name == dim.stage) {
            stage
                .params
                .insert(dim.param.clone(), Tpl::Axis(axis, dim.loc.clone()));
        }
    }
}

/// Stages that still take an unknown winner, and every stage downstream of one, each with
/// the search it waits for.
fn waiting_stages(spec: &PipelineSpec) -> BTreeMap<String, String> {
    let mut waiting: BTreeMap<String, String> = BTreeMap::new();
    loop {
        let before = waiting.len();
        for stage in &spec.stages {
            if waiting.contains_key(&stage.name) {
                continue;
            }
            let mut refs = Vec::new();
            stage.params.values().for_each(|t| t.best_refs(&mut refs));
            let upstream = stage
                .inputs
                .iter()
                .flat_map(|i| i.stages.iter())
                .find_map(|u| waiting.get(u).cloned());
            if let Some(search) = refs.first().map(|(s, _, _)| s.to_string()).or(upstream) {
                waiting.insert(stage.name.clone(), search);
            }
        }
        if waiting.len() == before {
            return waiting;
        }
    }
}

/// The objective's instances per trial: metric recorded, no test image in their lineage.
fn check_objective(plan: &Plan, search: &SearchSpec, registry: &Registry) -> Result<(), SpecError> {
    let objective = &search.objective;
    for inst in plan.instances_of(&objective.stage) {
        if let Some(chain) = test_chain(plan, inst.index) {
            return Err(SpecError::at(
                &objective.loc,
                format!(
                    "search `{}` would tune on test images: {}",
                    search.name,
                    describe_chain(plan, &chain)
                ),
            )
            .hint(
                "score the search on a validation partition (split with `validation = true`, \
                 train on `val-train`, embed `val-test`) and use test once, after the search",
            ));
        }
        let declared = registry
            .get(&inst.kind)
            .and_then(|k| k.records(&inst.params));
        if let Some(names) = declared {
            if !crate::kind::declares_metric(names.iter().map(String::as_str), &objective.metric) {
                return Err(SpecError::at(
                    &objective.loc,
                    format!(
                        "stage `{}` records no metric `{}`",
                        objective.stage, objective.metric
                    ),
                )
                .suggest(&objective.metric, names.iter().map(String::as_str)));
            }
        }
    }
    Ok(())
}

/// Fills in the objective of every trial of `state` whose objective instances are all
/// cached: the mean of the metric over them.
fn read_objectives(
    plan: &Plan,
    search: &SearchSpec,
    state: &mut SearchState,
    registry: &Registry,
    cache: &Cache,
) -> Result<(), SearchError> {
    let dimension = format!("search.{}", search.name);
    let planned = plan_status(plan, registry, cache)?;
    let mut values: BTreeMap<usize, (Vec<f64>, usize)> = BTreeMap::new();
    for inst in plan.instances_of(&search.objective.stage) {
        let Some(&trial) = inst.coords.get(&dimension) else {
            continue;
        };
        let entry = values.entry(trial).or_default();
        entry.1 += 1;
        let metric = planned[inst.index]
            .record
            .as_ref()
            .and_then(|r| r.metrics.get(&search.objective.metric).copied());
        if let Some(m) = metric {
            entry.0.push(m);
        }
    }
    for trial in &mut state.trials {
        let Some((metrics, count)) = values.get(&trial.number) else {
            continue;
        };
        trial.instances = *count;
        if *count > 0 && metrics.len() == *count {
            trial.objective = Some(metrics.iter().sum::<f64>() / *count as f64);
        }
    }
    Ok(())
}

/// Runs a pipeline with searches to the end: `run` computes `plan`, `load` plans the
/// pipeline again (replaying the searches against the cache, [`replay`]); repeated until a
/// replay adds nothing to run. The summary is the last plan's, an instance counted as ran
/// when any round ran its key.
pub fn drive<E>(
    mut plan: Plan,
    load: &mut dyn FnMut() -> Result<Plan, E>,
    run: &mut dyn FnMut(&Plan) -> Result<RunSummary, E>,
) -> Result<(Plan, RunSummary), E> {
    let mut ran: BTreeMap<String, (String, Option<f64>)> = BTreeMap::new();
    loop {
        let summary = run(&plan)?;
        for outcome in &summary.instances {
            if let (Status::Ran, Some(key)) = (&outcome.status, &outcome.key) {
                ran.insert(key.clone(), (outcome.reason.clone(), outcome.seconds));
            }
        }
        if !summary.success() {
            return Ok((plan, merge(summary, &ran)));
        }
        let next = load()?;
        if same_trials(&plan, &next) {
            return Ok((next, merge(summary, &ran)));
        }
        plan = next;
    }
}

/// Whether two replays stand at the same place (no new trial, no winner newly known).
fn same_trials(a: &Plan, b: &Plan) -> bool {
    a.instances().len() == b.instances().len()
        && a.searches().len() == b.searches().len()
        && a.searches()
            .iter()
            .zip(b.searches())
            .all(|(x, y)| x.trials.len() == y.trials.len() && x.finished == y.finished)
}

fn merge(mut summary: RunSummary, ran: &BTreeMap<String, (String, Option<f64>)>) -> RunSummary {
    for outcome in &mut summary.instances {
        if outcome.status != Status::Cached {
            continue;
        }
        if let Some((reason, seconds)) = outcome.key.as_ref().and_then(|k| ran.get(k)) {
            outcome.status = Status::Ran;
            outcome.reason = reason.clone();
            outcome.seconds = *seconds;
        }
    }
    summary
}
