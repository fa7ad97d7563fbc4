//! ASHA: asynchronous successive halving (Li et al., "A System for Massively Parallel
//! Hyperparameter Tuning", 2020), as a pure function of the jobs so far.
//!
//! A job is one trial trained to one rung's resource. Every trial starts at rung 0; whenever
//! a worker is free, the scheduler looks from the highest rung down for a trial among the best
//! `floor(n / eta)` of the `n` finished jobs of rung `k` that is not yet at rung `k + 1`, and
//! promotes it (it continues from its rung-`k` result); only when no rung has one does it start
//! a new trial, until `trials` have started.
//!
//! Two choices make it replayable from the cache, which Ray Tune's and the paper's
//! asynchronous versions are not (they promote in the order results happen to arrive):
//!
//! - the jobs are decided in batches of `parallel` from the results of the batches before, in
//!   job order (the same rule as the samplers' batches), so the same cache always gives the
//!   same next jobs;
//! - a rung promotes at most `floor(n / eta)` trials. The paper's rule can promote more (a
//!   trial promoted early, from few results, may later drop out of the top `1/eta` while the
//!   new top still has one to promote); with the cap, 27 trials with `eta = 3` train exactly
//!   27 / 9 / 3 / 1 jobs per rung, the compute of synchronous successive halving, while
//!   promotions still happen as soon as a rung's results allow (an early promotion can still
//!   be a trial that would not be in the final top third: the price of not waiting).
//!
//! Ties go to the lower trial number; a NaN objective ranks last.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::spec::search::Goal;

/// One trial trained to one rung.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Job {
    /// The trial.
    pub trial: usize,
    /// The rung (0: the first, `min` of the resource).
    pub rung: usize,
}

/// What to run next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Start a new trial at rung 0.
    New,
    /// Continue this trial at this rung from its result at the rung below.
    Promote {
        /// The trial.
        trial: usize,
        /// The rung it is promoted to.
        rung: usize,
    },
}

/// The scheduler's settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scheduler {
    /// How many rungs (the last one trains `max`).
    pub rungs: usize,
    /// The reduction factor.
    pub eta: usize,
    /// The objective's direction.
    pub goal: Goal,
}

impl Scheduler {
    /// The next job, given every job so far with its objective once finished (jobs not yet
    /// finished count as taken), `started` trials and `wanted` in all; `None` when there is
    /// nothing to run until a job finishes (or at all).
    pub fn next(&self, jobs: &[(Job, Option<f64>)], started: usize, wanted: usize) -> Option<Next> {
        for rung in (0..self.rungs.saturating_sub(1)).rev() {
            if let Some(trial) = self.promotable(jobs, rung) {
                return Some(Next::Promote {
                    trial,
                    rung: rung + 1,
                });
            }
        }
        (started < wanted).then_some(Next::New)
    }

    /// The best trial of rung `rung`'s top `1/eta` not yet at the rung above, while the rung
    /// has promoted fewer than `floor(n / eta)`.
    fn promotable(&self, jobs: &[(Job, Option<f64>)], rung: usize) -> Option<usize> {
        let mut done: Vec<(usize, f64)> = jobs
            .iter()
            .filter(|(j, _)| j.rung == rung)
            .filter_map(|(j, v)| Some((j.trial, (*v)?)))
            .collect();
        let quota = done.len() / self.eta.max(2);
        let above: BTreeSet<usize> = jobs
            .iter()
            .filter(|(j, _)| j.rung == rung + 1)
            .map(|(j, _)| j.trial)
            .collect();
        if above.len() >= quota {
            return None;
        }
        done.sort_by(|a, b| self.rank(a, b));
        done.iter()
            .take(quota)
            .map(|(t, _)| *t)
            .find(|t| !above.contains(t))
    }

    /// Better first (NaN last), then the lower trial number.
    fn rank(&self, a: &(usize, f64), b: &(usize, f64)) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        let key = |v: f64| match self.goal {
            _ if v.is_nan() => f64::INFINITY,
            Goal::Max => -v,
            Goal::Min => v,
        };
        key(a.1)
            .partial_cmp(&key(b.1))
            .unwrap_or(Ordering::Equal)
            .then(a.0.cmp(&b.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search of `trials` trials to the end in batches of `parallel`, every job's
    /// objective `score(trial, rung)`; returns the jobs in the order they were decided.
    fn simulate(
        s: &Scheduler,
        trials: usize,
        parallel: usize,
        score: impl Fn(usize, usize) -> f64,
    ) -> Vec<Job> {
        let mut jobs: Vec<(Job, Option<f64>)> = Vec::new();
        let mut started = 0;
        loop {
            let before = jobs.len();
            while jobs.len() - before < parallel {
                match s.next(&jobs, started, trials) {
                    None => break,
                    Some(Next::New) => {
                        jobs.push((
                            Job {
                                trial: started,
                                rung: 0,
                            },
                            None,
                        ));
                        started += 1;
                    }
                    Some(Next::Promote { trial, rung }) => jobs.push((Job { trial, rung }, None)),
                }
            }
            if jobs.len() == before {
                return jobs.into_iter().map(|(j, _)| j).collect();
            }
            for (j, v) in &mut jobs[before..] {
                *v = Some(score(j.trial, j.rung));
            }
        }
    }

    fn counts(jobs: &[Job], rungs: usize) -> Vec<usize> {
        (0..rungs)
            .map(|r| jobs.iter().filter(|j| j.rung == r).count())
            .collect()
    }

    /// A deterministic scramble, so the trials' quality has no order.
    fn noise(trial: usize) -> f64 {
        ((trial as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as f64 / (1u64 << 24) as f64
    }

    #[test]
    fn twenty_seven_trials_with_eta_three_train_27_9_3_1() {
        let s = Scheduler {
            rungs: 4,
            eta: 3,
            goal: Goal::Max,
        };
        for parallel in [1, 2, 4, 27] {
            let jobs = simulate(&s, 27, parallel, |t, r| noise(t) + r as f64 * 0.01);
            assert_eq!(counts(&jobs, 4), vec![27, 9, 3, 1], "parallel = {parallel}");
        }
        let min = Scheduler {
            goal: Goal::Min,
            ..s
        };
        let jobs = simulate(&min, 27, 3, |t, _| noise(t));
        assert_eq!(counts(&jobs, 4), vec![27, 9, 3, 1]);
    }

    #[test]
    fn with_every_result_known_the_best_third_is_promoted() {
        let s = Scheduler {
            rungs: 2,
            eta: 3,
            goal: Goal::Min,
        };
        // All 9 trials in one batch: the promotions are the 3 lowest scores.
        let jobs = simulate(&s, 9, 9, |t, _| noise(t));
        let mut promoted: Vec<usize> = jobs
            .iter()
            .filter(|j| j.rung == 1)
            .map(|j| j.trial)
            .collect();
        promoted.sort_unstable();
        let mut best: Vec<usize> = (0..9).collect();
        best.sort_by(|a, b| noise(*a).partial_cmp(&noise(*b)).unwrap());
        let mut best3 = best[..3].to_vec();
        best3.sort_unstable();
        assert_eq!(promoted, best3);
    }

    #[test]
    fn a_promotion_comes_before_a_new_trial_as_soon_as_a_rung_allows_it() {
        let s = Scheduler {
            rungs: 3,
            eta: 3,
            goal: Goal::Max,
        };
        let jobs = simulate(&s, 9, 1, |t, _| t as f64);
        // After trials 0, 1, 2 finish rung 0, the best (2) is promoted before trial 3 starts.
        assert_eq!(jobs[3], Job { trial: 2, rung: 1 });
        // Replaying gives the same jobs.
        assert_eq!(jobs, simulate(&s, 9, 1, |t, _| t as f64));
        // Fewer trials than eta: nothing is promoted.
        assert_eq!(
            counts(&simulate(&s, 2, 1, |t, _| t as f64), 3),
            vec![2, 0, 0]
        );
    }

    #[test]
    fn nan_ranks_last_and_ties_go_to_the_lower_trial() {
        let s = Scheduler {
            rungs: 2,
            eta: 3,
            goal: Goal::Max,
        };
        let jobs = simulate(&s, 3, 3, |t, _| if t == 0 { f64::NAN } else { 1.0 });
        assert_eq!(jobs[3], Job { trial: 1, rung: 1 });
    }
}
