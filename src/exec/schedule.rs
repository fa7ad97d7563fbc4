//! The scheduler's state machine, without I/O: which instances wait, are ready, run, are done,
//! failed or were skipped, and what follows from each event.
//!
//! The driver ([`super::scheduler`]) does everything that touches the world (the index, leases,
//! the executor, the clock) and tells this struct what happened; this struct answers what may
//! happen next. That keeps the rules in one place and testable without processes: an
//! instance is promoted when all its inputs are done, skipped when one failed, never started
//! twice for one key at a time, and once the run is stopping (a failure without
//! `--keep-going`, or Ctrl-C) nothing new starts and whatever never started is skipped. The
//! two ways a finished job goes back to waiting are rules here too: a retry (`--retries`, only
//! for failures that may pass on a second try), and a corrupt input (its producer is
//! recomputed first, at most [`MAX_BAD_INPUT_ROUNDS`] times in a row).

use std::time::Instant;

use crate::cache::why::DirtyReason;
use crate::cache::{RunRecord, StageKey};

/// Where one instance is.
#[derive(Debug, Clone)]
pub(crate) enum State {
    /// Some input is not done yet.
    Waiting,
    /// Its key missed the cache; it may start.
    Ready {
        key: Box<StageKey>,
        digest: String,
        reasons: Vec<DirtyReason>,
    },
    /// Submitted to the executor.
    Running {
        digest: String,
        key_json: String,
        reasons: Vec<DirtyReason>,
        started: Instant,
    },
    /// Its result is in the cache; `ran` holds the seconds and reasons when it ran now.
    Done {
        record: Box<RunRecord>,
        ran: Option<(f64, Vec<DirtyReason>)>,
    },
    /// It failed.
    Failed { reason: String },
    /// It never ran: an input failed, or the run stopped first.
    Skipped { reason: String },
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct Schedule {
    /// Upstream instances of each instance.
    inputs: Vec<Vec<usize>>,
    /// Plan order (topological).
    order: Vec<usize>,
    /// Instance labels, for reasons.
    labels: Vec<String>,
    states: Vec<State>,
    keep_going: bool,
    stopping: bool,
    /// How often a job that may pass on a second try is run again (`--retries`).
    retries: usize,
    /// Retries used, per instance.
    attempts: Vec<usize>,
    /// Corrupt-input rounds, per instance.
    bad_input_rounds: Vec<usize>,
}

/// How often one instance may find a corrupt input and have its producer recomputed before
/// the run gives up on it (a disk that keeps corrupting what is written would loop forever).
pub(crate) const MAX_BAD_INPUT_ROUNDS: usize = 3;

/// Why the instances that never started are skipped when the run stops.
pub(crate) const STOPPED_BY_FAILURE: &str =
    "not started: an earlier stage failed (use --keep-going to run independent branches)";
/// Likewise, after Ctrl-C.
pub(crate) const STOPPED_BY_INTERRUPT: &str = "interrupted (Ctrl-C)";

impl Schedule {
    /// A schedule over instances (with these labels and upstream lists), walked in `order`,
    /// running a job that may pass on a second try up to `retries` more times.
    pub(crate) fn new(
        labels: Vec<String>,
        inputs: Vec<Vec<usize>>,
        order: Vec<usize>,
        keep_going: bool,
        retries: usize,
    ) -> Self {
        let n = inputs.len();
        Schedule {
            inputs,
            order,
            labels,
            states: vec![State::Waiting; n],
            keep_going,
            stopping: false,
            retries,
            attempts: vec![0; n],
            bad_input_rounds: vec![0; n],
        }
    }

    /// Instance `i`'s state.
    pub(crate) fn state(&self, i: usize) -> &State {
        &self.states[i]
    }

    /// The record of a done instance.
    pub(crate) fn record(&self, i: usize) -> Option<&RunRecord> {
        match &self.states[i] {
            State::Done { record, .. } => Some(record),
            _ => None,
        }
    }

    /// Whether nothing new may start.
    pub(crate) fn stopping(&self) -> bool {
        self.stopping
    }

    /// Waiting instances whose inputs are all done, in plan order, to be keyed. Waiting
    /// instances with a failed or skipped input are skipped first; their indices come back as
    /// the second list.
    pub(crate) fn promotable(&mut self) -> (Vec<usize>, Vec<usize>) {
        let mut promotable = Vec::new();
        let mut skipped = Vec::new();
        for idx in 0..self.order.len() {
            let i = self.order[idx];
            if !matches!(self.states[i], State::Waiting) {
                continue;
            }
            let bad = self.inputs[i]
                .iter()
                .copied()
                .find(|&u| matches!(self.states[u], State::Failed { .. } | State::Skipped { .. }));
            if let Some(bad) = bad {
                self.states[i] = State::Skipped {
                    reason: format!("input {} did not complete", self.labels[bad]),
                };
                skipped.push(i);
            } else if self.inputs[i]
                .iter()
                .all(|&u| matches!(self.states[u], State::Done { .. }))
            {
                promotable.push(i);
            }
        }
        (promotable, skipped)
    }

    /// Instance `i`'s key hit the cache.
    pub(crate) fn hit(&mut self, i: usize, record: RunRecord) {
        self.states[i] = State::Done {
            record: Box::new(record),
            ran: None,
        };
    }

    /// Instance `i`'s key missed; it may start.
    pub(crate) fn ready(
        &mut self,
        i: usize,
        key: StageKey,
        digest: String,
        reasons: Vec<DirtyReason>,
    ) {
        self.states[i] = State::Ready {
            key: Box::new(key),
            digest,
            reasons,
        };
    }

    /// Ready instances that may start now, in plan order: none while stopping, and none whose
    /// key is already running (two instances with one key are one piece of work).
    pub(crate) fn startable(&self) -> Vec<usize> {
        if self.stopping {
            return Vec::new();
        }
        let mut taken: Vec<&str> = self
            .states
            .iter()
            .filter_map(|s| match s {
                State::Running { digest, .. } => Some(digest.as_str()),
                _ => None,
            })
            .collect();
        let mut startable = Vec::new();
        for &i in &self.order {
            if let State::Ready { digest, .. } = &self.states[i] {
                if !taken.contains(&digest.as_str()) {
                    taken.push(digest);
                    startable.push(i);
                }
            }
        }
        startable
    }

    /// Instance `i` (ready) was submitted.
    pub(crate) fn start(&mut self, i: usize, key_json: String, now: Instant) {
        let State::Ready {
            digest, reasons, ..
        } = std::mem::replace(&mut self.states[i], State::Waiting)
        else {
            panic!("instance {i} started without being ready");
        };
        self.states[i] = State::Running {
            digest,
            key_json,
            reasons,
            started: now,
        };
    }

    /// Instance `i` ran and its result is recorded.
    pub(crate) fn succeed(&mut self, i: usize, record: RunRecord, seconds: f64) {
        let reasons = match &self.states[i] {
            State::Running { reasons, .. } => reasons.clone(),
            _ => Vec::new(),
        };
        self.states[i] = State::Done {
            record: Box::new(record),
            ran: Some((seconds, reasons)),
        };
    }

    /// Instance `i` failed: without `--keep-going` the run stops launching.
    pub(crate) fn fail(&mut self, i: usize, reason: String) {
        self.states[i] = State::Failed { reason };
        if !self.keep_going {
            self.stopping = true;
        }
    }

    /// Instance `i` was interrupted; the run stops.
    pub(crate) fn interrupted(&mut self, i: usize) {
        self.states[i] = State::Skipped {
            reason: STOPPED_BY_INTERRUPT.into(),
        };
        self.stopping = true;
    }

    /// Instance `i` goes back to waiting (a retry, or its input is being recomputed).
    fn requeue(&mut self, i: usize) {
        self.states[i] = State::Waiting;
    }

    /// Instance `i` failed in a way that may pass on a second try (`retryable`): if retries
    /// are left and the run is not stopping, it goes back to waiting and the attempt number
    /// (from 1) comes back; otherwise `None`, and the caller fails it.
    pub(crate) fn retry(&mut self, i: usize, retryable: bool) -> Option<usize> {
        if !retryable || self.attempts[i] >= self.retries || self.stopping {
            return None;
        }
        self.attempts[i] += 1;
        self.requeue(i);
        Some(self.attempts[i])
    }

    /// How often `retry` may run an instance again.
    pub(crate) fn retries(&self) -> usize {
        self.retries
    }

    /// Instance `i` found its input, the result `producer_key`, corrupt. Within
    /// [`MAX_BAD_INPUT_ROUNDS`] the producer's instances go back to waiting (returned: their
    /// fingerprints are stale too) and so does `i`; after that `None`, and the caller fails it.
    pub(crate) fn recompute_input(&mut self, i: usize, producer_key: &str) -> Option<Vec<usize>> {
        self.bad_input_rounds[i] += 1;
        if self.bad_input_rounds[i] > MAX_BAD_INPUT_ROUNDS {
            return None;
        }
        let reset = self.invalidate(producer_key);
        self.requeue(i);
        Some(reset)
    }

    /// Every done instance whose result is `key` goes back to waiting (its object turned out
    /// corrupt); returns them. Ready instances that consume one of them go back to waiting
    /// too: their keys were computed from a result that is no longer there, and they are
    /// keyed again once it is recomputed (a sweep's other consumers of one corrupt input).
    fn invalidate(&mut self, key: &str) -> Vec<usize> {
        let mut reset = Vec::new();
        for (j, s) in self.states.iter_mut().enumerate() {
            if matches!(s, State::Done { record, .. } if record.key == key) {
                *s = State::Waiting;
                reset.push(j);
            }
        }
        for j in 0..self.states.len() {
            let consumes_reset = self.inputs[j].iter().any(|u| reset.contains(u));
            if consumes_reset && matches!(self.states[j], State::Ready { .. }) {
                self.states[j] = State::Waiting;
            }
        }
        reset
    }

    /// Ctrl-C: nothing new starts. Returns the running instances, to cancel.
    pub(crate) fn cancel(&mut self) -> Vec<usize> {
        self.stopping = true;
        self.running()
    }

    /// The running instances.
    pub(crate) fn running(&self) -> Vec<usize> {
        (0..self.states.len())
            .filter(|&i| matches!(self.states[i], State::Running { .. }))
            .collect()
    }

    /// Whether the run is over: nothing runs, and nothing may start (all settled, or
    /// stopping). `waiting_on_others` says another process holds a lease we wait for.
    pub(crate) fn finished(&self, waiting_on_others: bool) -> bool {
        let running = self
            .states
            .iter()
            .any(|s| matches!(s, State::Running { .. }));
        let pending = self
            .states
            .iter()
            .any(|s| matches!(s, State::Waiting | State::Ready { .. }));
        !running && (self.stopping || (!pending && !waiting_on_others))
    }

    /// Ends the run: whatever never started is skipped with `reason`.
    pub(crate) fn close(&mut self, reason: &str) {
        for s in self.states.iter_mut() {
            if matches!(s, State::Waiting | State::Ready { .. }) {
                *s = State::Skipped {
                    reason: reason.to_string(),
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// a -> b -> c, and d on its own.
    fn schedule(keep_going: bool) -> Schedule {
        Schedule::new(
            ["a", "b", "c", "d"].map(String::from).to_vec(),
            vec![vec![], vec![0], vec![1], vec![]],
            vec![0, 1, 2, 3],
            keep_going,
            2,
        )
    }

    fn record(key: &str) -> RunRecord {
        RunRecord {
            key: key.into(),
            stage: "s".into(),
            kind: "k".into(),
            pipeline: "p".into(),
            binding: "{}".into(),
            key_json: "{}".into(),
            started: 0.0,
            finished: 0.0,
            duration: 0.0,
            device: "cpu".into(),
            outputs: BTreeMap::new(),
            metrics: BTreeMap::new(),
        }
    }

    fn key() -> StageKey {
        serde_json::from_value(serde_json::json!({
            "format": 1, "kind": "k", "impl_version": 1, "params": {}, "inputs": {},
            "fingerprint": null
        }))
        .unwrap()
    }

    fn make_ready(s: &mut Schedule, i: usize, digest: &str) {
        s.ready(i, key(), digest.into(), vec![DirtyReason::New]);
    }

    #[test]
    fn an_instance_is_promoted_when_its_inputs_are_done() {
        let mut s = schedule(false);
        assert_eq!(s.promotable(), (vec![0, 3], vec![]));
        s.hit(0, record("a"));
        assert_eq!(s.promotable().0, vec![1, 3]);
        make_ready(&mut s, 1, "b");
        assert_eq!(s.startable(), vec![1]);
        s.start(1, "{}".into(), Instant::now());
        assert_eq!(s.running(), vec![1]);
        assert!(!s.finished(false));
        s.succeed(1, record("b"), 1.5);
        assert!(matches!(s.state(1), State::Done { ran: Some((t, _)), .. } if *t == 1.5));
        assert_eq!(s.promotable().0, vec![2, 3]);
    }

    #[test]
    fn a_failure_skips_its_dependants_and_stops_the_run_without_keep_going() {
        let mut s = schedule(false);
        make_ready(&mut s, 0, "a");
        make_ready(&mut s, 3, "d");
        s.start(0, "{}".into(), Instant::now());
        s.fail(0, "boom".into());
        assert!(s.stopping());
        assert!(s.startable().is_empty(), "nothing new starts");
        let (_, skipped) = s.promotable();
        assert_eq!(
            skipped,
            vec![1, 2],
            "dependants of dependants too, in one pass"
        );
        assert!(s.finished(false));
        s.close(STOPPED_BY_FAILURE);
        assert!(matches!(s.state(2), State::Skipped { .. }));
        assert!(matches!(s.state(3), State::Skipped { reason } if reason == STOPPED_BY_FAILURE));
    }

    #[test]
    fn keep_going_runs_the_independent_branch() {
        let mut s = schedule(true);
        make_ready(&mut s, 0, "a");
        make_ready(&mut s, 3, "d");
        s.start(0, "{}".into(), Instant::now());
        s.fail(0, "boom".into());
        assert!(!s.stopping());
        assert_eq!(s.startable(), vec![3]);
        s.start(3, "{}".into(), Instant::now());
        s.succeed(3, record("d"), 0.1);
        let (_, skipped) = s.promotable();
        assert_eq!(skipped, vec![1, 2]);
        assert!(s.finished(false));
    }

    #[test]
    fn two_instances_with_one_key_never_run_at_once() {
        let mut s = schedule(false);
        make_ready(&mut s, 0, "same");
        make_ready(&mut s, 3, "same");
        assert_eq!(s.startable(), vec![0]);
        s.start(0, "{}".into(), Instant::now());
        assert!(s.startable().is_empty());
        s.succeed(0, record("same"), 0.1);
        assert_eq!(
            s.startable(),
            vec![3],
            "the second may start once the first is done"
        );
    }

    #[test]
    fn cancel_stops_launching_and_returns_what_runs() {
        let mut s = schedule(false);
        make_ready(&mut s, 0, "a");
        make_ready(&mut s, 3, "d");
        s.start(0, "{}".into(), Instant::now());
        assert_eq!(s.cancel(), vec![0]);
        assert!(s.startable().is_empty());
        assert!(!s.finished(false), "the running job still reports");
        s.interrupted(0);
        assert!(s.finished(false));
        s.close(STOPPED_BY_INTERRUPT);
        assert!(matches!(s.state(3), State::Skipped { reason } if reason == STOPPED_BY_INTERRUPT));
    }

    #[test]
    fn a_corrupt_input_sends_its_producer_and_its_consumer_back_a_bounded_number_of_times() {
        let mut s = schedule(false);
        for round in 1..=MAX_BAD_INPUT_ROUNDS {
            s.hit(0, record("a"));
            make_ready(&mut s, 1, "b");
            s.start(1, "{}".into(), Instant::now());
            assert_eq!(s.recompute_input(1, "a"), Some(vec![0]), "round {round}");
            assert!(matches!(s.state(1), State::Waiting));
            assert_eq!(s.promotable().0, vec![0, 3], "the producer runs first");
        }
        s.hit(0, record("a"));
        make_ready(&mut s, 1, "b");
        s.start(1, "{}".into(), Instant::now());
        assert_eq!(
            s.recompute_input(1, "a"),
            None,
            "then the run gives up on it"
        );
        assert!(matches!(s.state(0), State::Done { .. }));
    }

    #[test]
    fn a_corrupt_input_sends_its_other_ready_consumers_back_to_waiting() {
        // a -> b and a -> c: b and c are two seeds of one consumer of a.
        let mut s = Schedule::new(
            ["a", "b", "c"].map(String::from).to_vec(),
            vec![vec![], vec![0], vec![0]],
            vec![0, 1, 2],
            false,
            0,
        );
        s.hit(0, record("a"));
        assert_eq!(s.promotable().0, vec![1, 2]);
        make_ready(&mut s, 1, "b");
        make_ready(&mut s, 2, "c");
        s.start(1, "{}".into(), Instant::now());
        assert_eq!(s.recompute_input(1, "a"), Some(vec![0]));
        assert!(
            matches!(s.state(2), State::Waiting),
            "c was keyed from a's old result: it waits for the recomputed one"
        );
        assert_eq!(
            s.startable(),
            Vec::<usize>::new(),
            "nothing starts before a"
        );
        assert_eq!(s.promotable().0, vec![0], "a runs first");
        s.hit(0, record("a"));
        assert_eq!(s.promotable().0, vec![1, 2]);
    }

    #[test]
    fn a_retryable_failure_runs_again_up_to_retries_times() {
        let mut s = schedule(true);
        for attempt in 1..=2 {
            make_ready(&mut s, 0, "a");
            s.start(0, "{}".into(), Instant::now());
            assert_eq!(s.retry(0, true), Some(attempt));
            assert!(matches!(s.state(0), State::Waiting));
        }
        make_ready(&mut s, 0, "a");
        s.start(0, "{}".into(), Instant::now());
        assert_eq!(s.retry(0, true), None, "retries used up");
        make_ready(&mut s, 3, "d");
        s.start(3, "{}".into(), Instant::now());
        assert_eq!(s.retry(3, false), None, "a stage error is not retried");
    }

    #[test]
    fn nothing_is_retried_once_the_run_stops() {
        let mut s = schedule(false);
        make_ready(&mut s, 0, "a");
        make_ready(&mut s, 3, "d");
        s.start(0, "{}".into(), Instant::now());
        s.start(3, "{}".into(), Instant::now());
        s.fail(3, "boom".into());
        assert_eq!(s.retry(0, true), None);
    }

    #[test]
    fn waiting_on_another_process_keeps_the_run_open() {
        let mut s = schedule(false);
        make_ready(&mut s, 0, "a");
        assert!(!s.finished(true));
        assert!(!s.finished(false), "a ready instance is still pending");
    }
}
