//! Where a search stands: the trials proposed so far, their objectives, and the winner once
//! every trial has one. Built by replaying the search against the cache
//! ([`crate::exec::search`]); shown by `plan`, `why` and `run --json`.

use serde::Serialize;
use serde_json::Value;

use crate::spec::search::{Goal, SearchSpec};

/// One trial.
#[derive(Debug, Clone, Serialize)]
pub struct Trial {
    /// Its number, from 0, in the order proposed.
    pub number: usize,
    /// Dimension name -> value.
    pub values: serde_json::Map<String, Value>,
    /// The objective, once every instance it is the mean of has its metric.
    pub objective: Option<f64>,
    /// How many instances of the objective stage the objective is the mean of.
    pub instances: usize,
    /// Under ASHA: the highest rung the trial has finished (0: the first), whose objective
    /// `objective` is; absent for a search without pruning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rung: Option<usize>,
    /// Under ASHA: the resource that rung trains (`epochs = 6`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<i64>,
}

/// Where an ASHA search stands: every job (a trial at a rung) in the order decided.
#[derive(Debug, Clone, Serialize)]
pub struct PruneState {
    /// `STAGE.PARAM`, the resource.
    pub resource: String,
    /// The resource of each rung.
    pub rungs: Vec<i64>,
    /// The reduction factor.
    pub eta: i64,
    /// Every job so far; its position is its coordinate in the search's dimension.
    pub jobs: Vec<RungJob>,
    /// How many jobs each rung has so far.
    pub counts: Vec<usize>,
}

/// One trial trained to one rung.
#[derive(Debug, Clone, Serialize)]
pub struct RungJob {
    /// The trial.
    pub trial: usize,
    /// The rung.
    pub rung: usize,
    /// Its objective, once every instance it is the mean of has its metric.
    pub objective: Option<f64>,
    /// How many instances of the objective stage the objective is the mean of.
    pub instances: usize,
}

/// A search after replay.
#[derive(Debug, Clone, Serialize)]
pub struct SearchState {
    /// The search's name.
    pub name: String,
    /// `stage.metric`, and `max`/`min`.
    pub objective: String,
    /// `max` or `min`.
    pub goal: &'static str,
    /// The axes the objective is the mean over (those the search does not own).
    pub mean_over: Vec<String>,
    /// The sampler's name.
    pub sampler: &'static str,
    /// The trials asked for.
    pub trials_wanted: usize,
    /// The trials proposed so far, in order.
    pub trials: Vec<Trial>,
    /// Whether every wanted trial has its objective.
    pub finished: bool,
    /// The winning trial's number, once finished.
    pub best: Option<usize>,
    /// Stages that take this search's winner and wait until it is known.
    pub waiting: Vec<String>,
    /// Stages whose parameters take this search's winner (`${search.NAME.best.DIM}`).
    pub takers: Vec<String>,
    /// Under ASHA, its rungs and jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prune: Option<PruneState>,
}

impl SearchState {
    /// A search with no trial yet.
    pub fn new(spec: &SearchSpec) -> Self {
        SearchState {
            name: spec.name.clone(),
            objective: format!("{}.{}", spec.objective.stage, spec.objective.metric),
            goal: spec.objective.goal.name(),
            mean_over: vec![],
            sampler: spec.sampler.name(),
            trials_wanted: spec.trials,
            trials: vec![],
            finished: false,
            best: None,
            waiting: vec![],
            takers: vec![],
            prune: spec.prune.as_ref().map(|a| PruneState {
                resource: format!("{}.{}", a.stage, a.param),
                rungs: a.rungs(),
                eta: a.eta,
                jobs: vec![],
                counts: vec![0; a.rungs().len()],
            }),
        }
    }

    /// The number of the best finished trial (the lowest number among equals); under ASHA
    /// the best of those that reached the highest rung any trial reached, since objectives of
    /// different rungs (different training) do not compare.
    pub(crate) fn best_of(&self, goal: Goal) -> Option<usize> {
        let top = self
            .trials
            .iter()
            .filter(|t| t.objective.is_some())
            .map(|t| t.rung)
            .max()
            .flatten();
        let mut best: Option<(usize, f64)> = None;
        for t in self.trials.iter().filter(|t| t.rung == top) {
            if let Some(v) = t.objective {
                if best.is_none_or(|(_, b)| goal.better(v, b)) {
                    best = Some((t.number, v));
                }
            }
        }
        best.map(|(n, _)| n)
    }

    /// The winning trial, once the search has finished.
    pub fn winner(&self) -> Option<&Trial> {
        self.best.and_then(|n| self.trials.get(n))
    }

    /// `trial 3 (lr = 0.00123, wd = 0), eval.map = 0.53 (max, mean over seed)`.
    pub(crate) fn describe_trial(&self, trial: &Trial) -> String {
        let values: Vec<String> = trial
            .values
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        let objective = match trial.objective {
            Some(v) => format!("{} = {v:.6}", self.objective),
            None => format!("{} not yet known", self.objective),
        };
        let rung = match (&self.prune, trial.rung, trial.resource) {
            (Some(p), Some(r), Some(amount)) => format!(
                " at rung {r} of {} ({} = {amount})",
                p.rungs.len(),
                p.resource
            ),
            _ => String::new(),
        };
        format!(
            "trial {} ({}), {objective}{rung} ({}, mean over {})",
            trial.number,
            values.join(", "),
            self.goal,
            self.mean_over_text()
        )
    }

    /// `seed`, `seed, res`, or `nothing (one instance per trial)`.
    pub(crate) fn mean_over_text(&self) -> String {
        if self.mean_over.is_empty() {
            "nothing (one instance per trial)".into()
        } else {
            self.mean_over.join(", ")
        }
    }
}
