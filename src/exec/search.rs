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
//! Under ASHA (`prune`), a coordinate of the dimension is a job, one trial at one rung: the
//! axis `NAME.rung` holds the rung's resource and is bound into the resource parameter, and
//! the graph connects each promoted job's instance of the resource stage to the job of the
//! rung below through its `resume` input ([`crate::spec::search::ResumeLink`]), so the key of
//! a continued result names the checkpoint it continued from. Which jobs exist is decided by
//! [`crate::search::asha`], batch by batch, replayed the same way.
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
use crate::search::asha::{Job, Next, Scheduler};
use crate::search::{propose, Observation, PruneState, RungJob, SearchState, Trial};
use crate::spec::search::{ResumeLink, SearchSpec, RESUME_SLOT};
use crate::spec::{Axis, PipelineSpec, SpecError, Tpl};

/// Why a search cannot be planned.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SearchError {
    /// A mistake in the pipeline (the objective reads test images, names no metric...).
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The cache index failed while reading trials' results.
    #[error(transparent)]
    Index(#[from] crate::cache::IndexError),
}

/// The pipeline's plan with its searches replayed against `cache` (`None`: no cache yet, so
/// every search stands at its first batch).
pub(crate) fn replay(
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
        if search.prune.is_some() {
            replay_asha(spec, &active, &mut states, si, registry, cache)?;
        } else {
            replay_plain(spec, &active, &mut states, si, registry, cache)?;
        }
    }
    let plan = build(spec, &active, &mut states)?;
    for (search, state) in active.iter().zip(&mut states) {
        check_objective(&plan, search, registry)?;
        state.mean_over = mean_over(&plan, search);
    }
    Ok(plan.with_searches(states))
}

/// Replays one search without pruning: batch by batch, each proposed from the objectives of
/// the batches before, until a batch the cache does not finish.
fn replay_plain(
    spec: &PipelineSpec,
    active: &[&SearchSpec],
    states: &mut [SearchState],
    si: usize,
    registry: &Registry,
    cache: Option<&Cache>,
) -> Result<(), SearchError> {
    let search = active[si];
    let mut history: Vec<Observation> = Vec::new();
    loop {
        let known = states[si].trials.len();
        let batch = search.parallel.min(search.trials.saturating_sub(known));
        if batch == 0 {
            break;
        }
        for number in known..known + batch {
            let values = propose(search, number, &history);
            states[si].trials.push(new_trial(search, number, values));
        }
        let plan = build(spec, active, states)?;
        check_objective(&plan, search, registry)?;
        let Some(cache) = cache else { break };
        let results = read_objectives(&plan, search, registry, cache)?;
        for trial in &mut states[si].trials {
            if let Some(&(objective, instances)) = results.get(&trial.number) {
                trial.objective = objective;
                trial.instances = instances;
            }
        }
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
    state.finished =
        state.trials.len() >= search.trials && state.trials.iter().all(|t| t.objective.is_some());
    if state.finished {
        state.best = state.best_of(search.objective.goal);
    }
    Ok(())
}

fn new_trial(search: &SearchSpec, number: usize, values: Vec<Value>) -> Trial {
    Trial {
        number,
        values: search
            .space
            .iter()
            .map(|d| d.name.clone())
            .zip(values)
            .collect(),
        objective: None,
        instances: 0,
        rung: None,
        resource: None,
    }
}

/// Replays one ASHA search ([`crate::search::asha`]): batches of `parallel` jobs (a new trial,
/// or a trial promoted to the next rung), each decided from the results of the batches before,
/// until a batch the cache does not finish or nothing is left to run. A new trial's values
/// come from the sampler, which sees every trial's rung-0 objective (the one every trial has,
/// from the same training budget).
fn replay_asha(
    spec: &PipelineSpec,
    active: &[&SearchSpec],
    states: &mut [SearchState],
    si: usize,
    registry: &Registry,
    cache: Option<&Cache>,
) -> Result<(), SearchError> {
    let search = active[si];
    let Some(asha) = &search.prune else {
        return Ok(());
    };
    let scheduler = Scheduler {
        rungs: asha.rungs().len(),
        eta: asha.eta as usize,
        goal: search.objective.goal,
    };
    let mut idle = false;
    loop {
        let before = prune_of(&states[si]).jobs.len();
        let history = rung0_history(&states[si]);
        while prune_of(&states[si]).jobs.len() - before < search.parallel {
            let next = scheduler.next(
                &job_view(&states[si]),
                states[si].trials.len(),
                search.trials,
            );
            let state = &mut states[si];
            let job = match next {
                None => break,
                Some(Next::New) => {
                    let number = state.trials.len();
                    let values = propose(search, number, &history);
                    state.trials.push(new_trial(search, number, values));
                    Job {
                        trial: number,
                        rung: 0,
                    }
                }
                Some(Next::Promote { trial, rung }) => Job { trial, rung },
            };
            prune_mut(state).jobs.push(RungJob {
                trial: job.trial,
                rung: job.rung,
                objective: None,
                instances: 0,
            });
        }
        if prune_of(&states[si]).jobs.len() == before {
            idle = true;
            break;
        }
        let plan = build(spec, active, states)?;
        check_objective(&plan, search, registry)?;
        let Some(cache) = cache else { break };
        let results = read_objectives(&plan, search, registry, cache)?;
        let jobs = &mut prune_mut(&mut states[si]).jobs;
        for (coordinate, job) in jobs.iter_mut().enumerate() {
            if let Some(&(objective, instances)) = results.get(&coordinate) {
                job.objective = objective;
                job.instances = instances;
            }
        }
        if jobs[before..].iter().any(|j| j.objective.is_none()) {
            break;
        }
    }
    summarise_rungs(&mut states[si]);
    let state = &mut states[si];
    state.finished = idle
        && state.trials.len() >= search.trials
        && prune_of(state).jobs.iter().all(|j| j.objective.is_some());
    if state.finished {
        state.best = state.best_of(search.objective.goal);
    }
    Ok(())
}

fn prune_of(state: &SearchState) -> &PruneState {
    state
        .prune
        .as_ref()
        .expect("an ASHA search's state has its rungs (SearchState::new)")
}

fn prune_mut(state: &mut SearchState) -> &mut PruneState {
    state
        .prune
        .as_mut()
        .expect("an ASHA search's state has its rungs (SearchState::new)")
}

fn job_view(state: &SearchState) -> Vec<(Job, Option<f64>)> {
    prune_of(state)
        .jobs
        .iter()
        .map(|j| {
            (
                Job {
                    trial: j.trial,
                    rung: j.rung,
                },
                j.objective,
            )
        })
        .collect()
}

/// The finished rung-0 jobs as the sampler's observations, in trial order.
fn rung0_history(state: &SearchState) -> Vec<Observation> {
    let mut done: Vec<(usize, f64)> = prune_of(state)
        .jobs
        .iter()
        .filter(|j| j.rung == 0)
        .filter_map(|j| Some((j.trial, j.objective?)))
        .collect();
    done.sort_by_key(|(t, _)| *t);
    done.into_iter()
        .map(|(t, objective)| Observation {
            values: state.trials[t].values.values().cloned().collect(),
            objective,
        })
        .collect()
}

/// Each trial's highest finished rung, its resource and objective there; the jobs per rung.
fn summarise_rungs(state: &mut SearchState) {
    let Some(prune) = &mut state.prune else {
        return;
    };
    prune.counts = (0..prune.rungs.len())
        .map(|r| prune.jobs.iter().filter(|j| j.rung == r).count())
        .collect();
    for trial in &mut state.trials {
        let top = prune
            .jobs
            .iter()
            .filter(|j| j.trial == trial.number && j.objective.is_some())
            .max_by_key(|j| j.rung);
        trial.rung = top.map(|j| j.rung);
        trial.resource = top.map(|j| prune.rungs[j.rung]);
        trial.objective = top.and_then(|j| j.objective);
        trial.instances = top.map_or(0, |j| j.instances);
    }
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

/// The axes of one search's dimension, and its space bound into the stages' parameters. A
/// coordinate is a trial, or under ASHA a job (a trial at a rung): then the axis `NAME.rung`
/// holds the rung's resource, bound into the resource parameter, and each promoted job's
/// instance of the resource stage resumes from the job of the rung below.
fn add_trial_axes(spec: &mut PipelineSpec, search: &SearchSpec, state: &SearchState) {
    let dimension = format!("search.{}", search.name);
    let coordinates: Vec<(usize, Option<usize>)> = match &state.prune {
        Some(p) => p.jobs.iter().map(|j| (j.trial, Some(j.rung))).collect(),
        None => state.trials.iter().map(|t| (t.number, None)).collect(),
    };
    let mut axis = |name: String, values: Vec<Value>, loc: &crate::spec::Loc| {
        spec.axes.push(Axis {
            name,
            values,
            dimension: dimension.clone(),
            loc: loc.clone(),
        })
    };
    axis(
        format!("{}.trial", search.name),
        coordinates.iter().map(|(t, _)| Value::from(*t)).collect(),
        &search.loc,
    );
    for dim in &search.space {
        axis(
            format!("{}.{}", search.name, dim.name),
            coordinates
                .iter()
                .map(|(t, _)| {
                    state.trials[*t]
                        .values
                        .get(&dim.name)
                        .cloned()
                        .unwrap_or(Value::Null)
                })
                .collect(),
            &dim.loc,
        );
    }
    if let (Some(asha), Some(prune)) = (&search.prune, &state.prune) {
        let rung_axis = format!("{}.rung", search.name);
        axis(
            rung_axis.clone(),
            coordinates
                .iter()
                .map(|(_, r)| Value::from(prune.rungs[r.unwrap_or(0)]))
                .collect(),
            &asha.loc,
        );
        bind(spec, &asha.stage, &asha.param, &rung_axis, &asha.loc);
        spec.resumes.push(ResumeLink {
            stage: asha.stage.clone(),
            slot: RESUME_SLOT.into(),
            dimension: dimension.clone(),
            from: prune
                .jobs
                .iter()
                .map(|j| {
                    let below = j.rung.checked_sub(1)?;
                    prune
                        .jobs
                        .iter()
                        .position(|o| o.trial == j.trial && o.rung == below)
                })
                .collect(),
        });
    }
    for dim in &search.space {
        let axis = format!("{}.{}", search.name, dim.name);
        bind(spec, &dim.stage, &dim.param, &axis, &dim.loc);
    }
}

fn bind(spec: &mut PipelineSpec, stage: &str, param: &str, axis: &str, loc: &crate::spec::Loc) {
    if let Some(stage) = spec.stages.iter_mut().find(|s| s.name == stage) {
        stage
            .params
            .insert(param.to_string(), Tpl::Axis(axis.to_string(), loc.clone()));
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

/// The objective of each coordinate of the search's dimension (a trial, or a job under ASHA)
/// whose objective instances are all cached (the mean of the metric over them), and how many
/// instances it is the mean of.
fn read_objectives(
    plan: &Plan,
    search: &SearchSpec,
    registry: &Registry,
    cache: &Cache,
) -> Result<BTreeMap<usize, (Option<f64>, usize)>, SearchError> {
    let dimension = format!("search.{}", search.name);
    let planned = plan_status(plan, registry, cache)?;
    let mut values: BTreeMap<usize, (Vec<f64>, usize)> = BTreeMap::new();
    for inst in plan.instances_of(&search.objective.stage) {
        let Some(coordinate) = inst.coords.get(&dimension) else {
            continue;
        };
        let entry = values.entry(coordinate).or_default();
        entry.1 += 1;
        let metric = planned[inst.index]
            .record
            .as_ref()
            .and_then(|r| r.metrics.get(&search.objective.metric).copied());
        if let Some(m) = metric {
            entry.0.push(m);
        }
    }
    Ok(values
        .into_iter()
        .map(|(c, (metrics, count))| {
            let mean = (count > 0 && metrics.len() == count)
                .then(|| metrics.iter().sum::<f64>() / count as f64);
            (c, (mean, count))
        })
        .collect())
}

/// Runs a pipeline with searches to the end: `run` computes `plan`, `load` plans the
/// pipeline again (replaying the searches against the cache, [`replay`]); repeated until a
/// replay adds nothing to run. The summary is the last plan's, an instance counted as ran
/// when any round ran its key.
pub(crate) fn drive<E>(
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
        && a.searches().iter().zip(b.searches()).all(|(x, y)| {
            x.trials.len() == y.trials.len()
                && x.finished == y.finished
                && x.prune.as_ref().map(|p| p.jobs.len()) == y.prune.as_ref().map(|p| p.jobs.len())
        })
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
