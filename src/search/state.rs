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
        }
    }

    /// The number of the best finished trial (the lowest number among equals).
    pub fn best_of(&self, goal: Goal) -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        for t in &self.trials {
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
    pub fn describe_trial(&self, trial: &Trial) -> String {
        let values: Vec<String> = trial
            .values
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        let objective = match trial.objective {
            Some(v) => format!("{} = {v:.6}", self.objective),
            None => format!("{} not yet known", self.objective),
        };
        format!(
            "trial {} ({}), {objective} ({}, mean over {})",
            trial.number,
            values.join(", "),
            self.goal,
            self.mean_over_text()
        )
    }

    /// `seed`, `seed, res`, or `nothing (one instance per trial)`.
    pub fn mean_over_text(&self) -> String {
        if self.mean_over.is_empty() {
            "nothing (one instance per trial)".into()
        } else {
            self.mean_over.join(", ")
        }
    }
}
