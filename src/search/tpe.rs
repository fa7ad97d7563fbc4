//! The tree-structured Parzen estimator, as Optuna's `TPESampler` defines it with its defaults
//! (univariate, `n_startup_trials = 10`, `n_ei_candidates = 24`, `gamma(n) = min(ceil(0.1 n),
//! 25)`, the prior kernel, magic clip, `default_weights`).
//!
//! Until ten trials have finished, a trial's values are drawn uniformly. After that, the
//! finished trials are split into the best `gamma(n)` ("below") and the rest ("above"); for
//! each dimension on its own, a Parzen estimator `l` is fitted to the values of the best and
//! `g` to the rest ([`super::parzen`]), 24 candidates are drawn from `l`, and the candidate
//! with the largest `l(x) / g(x)` (the expected improvement, up to a monotone transform) is
//! proposed.
//!
//! Why not the `tpe` crate (sile/tpe 0.3): it is sound, but it leaves the start-up trials and
//! the cap on `gamma` to the caller, fixes `gamma` as a fraction without Optuna's cap of 25,
//! and draws from `rand` 0.10's `StdRng`, whose algorithm `rand` does not promise to keep:
//! a seed must replay the same trials for as long as a cache holds them. This module is
//! Optuna's algorithm on a ChaCha8 stream per trial ([`super::random::trial_rng`]).

use rand::Rng;
use serde_json::Value;

use super::parzen::{Parzen, Space};
use super::random::{from_internal, sample_uniform};
use super::Observation;
use crate::spec::search::{Dim, Domain, Goal};

/// Finished trials before TPE replaces uniform sampling (Optuna's `n_startup_trials`).
pub(crate) const STARTUP_TRIALS: usize = 10;
/// Candidates drawn from `l` per proposal (Optuna's `n_ei_candidates`).
pub(crate) const EI_CANDIDATES: usize = 24;

/// Optuna's `default_gamma`: how many of `n` finished trials are "below" (the good ones).
pub fn gamma(n: usize) -> usize {
    ((0.1 * n as f64).ceil() as usize).min(25)
}

/// One trial's values.
pub fn propose(
    dims: &[Dim],
    goal: Goal,
    history: &[Observation],
    rng: &mut impl Rng,
) -> Vec<Value> {
    let finished: Vec<&Observation> = history.iter().filter(|o| o.objective.is_finite()).collect();
    if finished.len() < STARTUP_TRIALS {
        return dims
            .iter()
            .map(|d| sample_uniform(&d.domain, rng))
            .collect();
    }
    let (below, above) = split(&finished, goal);
    dims.iter()
        .enumerate()
        .map(|(i, dim)| propose_dim(&dim.domain, i, &below, &above, rng))
        .collect()
}

/// The best `gamma(n)` trials and the rest, each in trial order (so the weights, which favour
/// recent trials past 25, see them by age as Optuna's do).
fn split<'a>(
    finished: &[&'a Observation],
    goal: Goal,
) -> (Vec<&'a Observation>, Vec<&'a Observation>) {
    let loss = |o: &Observation| match goal {
        Goal::Min => o.objective,
        Goal::Max => -o.objective,
    };
    let mut order: Vec<usize> = (0..finished.len()).collect();
    order.sort_by(|&a, &b| {
        loss(finished[a])
            .total_cmp(&loss(finished[b]))
            .then(a.cmp(&b))
    });
    let n_below = gamma(finished.len());
    let mut below_idx: Vec<usize> = order[..n_below].to_vec();
    let mut above_idx: Vec<usize> = order[n_below..].to_vec();
    below_idx.sort_unstable();
    above_idx.sort_unstable();
    (
        below_idx.iter().map(|&i| finished[i]).collect(),
        above_idx.iter().map(|&i| finished[i]).collect(),
    )
}

fn propose_dim(
    domain: &Domain,
    i: usize,
    below: &[&Observation],
    above: &[&Observation],
    rng: &mut impl Rng,
) -> Value {
    let space = space_of(domain);
    let internal = |obs: &[&Observation]| -> Vec<f64> {
        obs.iter()
            .filter_map(|o| o.values.get(i).and_then(|v| to_internal(domain, v)))
            .collect()
    };
    let l = Parzen::new(&internal(below), space);
    let g = Parzen::new(&internal(above), space);
    let mut best: Option<(f64, f64)> = None;
    for _ in 0..EI_CANDIDATES {
        let x = l.sample(rng);
        let score = l.log_pdf(x) - g.log_pdf(x);
        if best.is_none_or(|(s, _)| score > s) {
            best = Some((score, x));
        }
    }
    let x = best.map_or(0.0, |(_, x)| x);
    let step = match domain {
        Domain::Uniform { step, .. } => *step,
        _ => None,
    };
    from_internal(domain, x, step)
}

/// The internal space of a domain: logarithms for `log_uniform`, indices for a choice.
fn space_of(domain: &Domain) -> Space {
    match domain {
        Domain::Uniform { lo, hi, step } => Space::Numeric {
            low: *lo,
            high: *hi,
            step: *step,
        },
        Domain::LogUniform { lo, hi } => Space::Numeric {
            low: lo.ln(),
            high: hi.ln(),
            step: None,
        },
        Domain::Int { lo, hi, step } => Space::Numeric {
            low: *lo as f64,
            high: *hi as f64,
            step: Some(*step as f64),
        },
        Domain::Choice(values) => Space::Categorical(values.len()),
    }
}

/// A value's internal coordinate; `None` when it is not in the domain (the space was changed
/// since the trial ran), and the trial then says nothing about this dimension.
fn to_internal(domain: &Domain, value: &Value) -> Option<f64> {
    match domain {
        Domain::Choice(values) => values.iter().position(|v| v == value).map(|i| i as f64),
        Domain::LogUniform { lo, hi } => value
            .as_f64()
            .filter(|x| (*lo..=*hi).contains(x))
            .map(f64::ln),
        Domain::Uniform { lo, hi, .. } => value.as_f64().filter(|x| (*lo..=*hi).contains(x)),
        Domain::Int { lo, hi, .. } => value
            .as_i64()
            .filter(|x| (*lo..=*hi).contains(x))
            .map(|x| x as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::random::trial_rng;

    #[test]
    fn gamma_is_optunas() {
        assert_eq!(gamma(10), 1);
        assert_eq!(gamma(11), 2);
        assert_eq!(gamma(1000), 25);
    }

    #[test]
    fn after_the_start_up_trials_proposals_concentrate_near_the_best() {
        let file = std::sync::Arc::new(crate::spec::source::SourceFile {
            path: "t.toml".into(),
            text: String::new(),
        });
        let dims = vec![Dim {
            name: "x".into(),
            stage: "s".into(),
            param: "x".into(),
            domain: Domain::Uniform {
                lo: 0.0,
                hi: 10.0,
                step: None,
            },
            loc: crate::spec::Loc::new(&file, 0..0),
        }];
        let history: Vec<Observation> = (0..40)
            .map(|i| {
                let x = i as f64 / 4.0;
                Observation {
                    values: vec![Value::from(x)],
                    objective: (x - 7.0).powi(2),
                }
            })
            .collect();
        let near = (0..50)
            .filter(|&t| {
                let v = propose(&dims, Goal::Min, &history, &mut trial_rng(1, t));
                (v[0].as_f64().unwrap() - 7.0).abs() < 1.5
            })
            .count();
        // A uniform draw lands within 1.5 of 7 three times in ten.
        assert!(near > 35, "{near} of 50 near the optimum");
    }
}
