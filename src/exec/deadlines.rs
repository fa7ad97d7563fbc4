//! When a local job has waited too long: the three clocks the local executor watches so that
//! no worker can hang a run.
//!
//! - **the stage's `timeout`**: a job running longer than its stage allows fails;
//! - **the heartbeat**: a worker sends a line at least every [`super::protocol::HEARTBEAT_EVERY`]
//!   while it lives; one silent for [`silence_limit`] while running a job is hung or stopped
//!   (a frozen process, a pipe held open by a dead worker's child) and is killed;
//! - **Ctrl-C's grace**: a job asked to stop that has not stopped after [`CANCEL_GRACE`] is
//!   killed, so the first Ctrl-C (or SIGTERM) never waits forever.
//!
//! This file only decides; the executor kills and reports.

use std::time::{Duration, Instant};

/// How long a cancelled job may take to stop (a training stage stops at its next batch).
pub(crate) const CANCEL_GRACE: Duration = Duration::from_secs(10);

/// How long a worker running a job may stay silent before it counts as hung: several missed
/// heartbeats, so a loaded machine never trips it. `ASYMFLOW_WORKER_SILENCE` (seconds)
/// overrides it.
pub(crate) fn silence_limit() -> Duration {
    std::env::var("ASYMFLOW_WORKER_SILENCE")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(DEFAULT_SILENCE, Duration::from_secs_f64)
}

const DEFAULT_SILENCE: Duration = Duration::from_secs(60);

/// The clocks of one running job.
#[derive(Debug, Clone)]
pub(crate) struct Clocks {
    /// When it was submitted.
    pub(crate) started: Instant,
    /// Its stage's `timeout`.
    pub(crate) timeout: Option<Duration>,
    /// When it was asked to stop.
    pub(crate) cancelled: Option<Instant>,
    /// When its worker last said anything (`None`: it runs in the engine).
    pub(crate) heard: Option<Instant>,
}

/// Why a job is overdue.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Overdue {
    /// It ran past its stage's `timeout`.
    TimedOut(Duration),
    /// Its worker said nothing for this long.
    Silent(Duration),
    /// It did not stop within [`CANCEL_GRACE`] of being asked to.
    IgnoredCancel,
}

impl Clocks {
    /// The clocks of a job submitted at `now`.
    pub(crate) fn new(now: Instant, timeout: Option<Duration>, in_worker: bool) -> Self {
        Clocks {
            started: now,
            timeout,
            cancelled: None,
            heard: in_worker.then_some(now),
        }
    }

    /// Whether the job is overdue at `now`, and why (the cancel grace first: an interrupted
    /// run reports interruptions, not failures).
    pub(crate) fn overdue(&self, now: Instant, silence: Duration) -> Option<Overdue> {
        if let Some(cancelled) = self.cancelled {
            if now.saturating_duration_since(cancelled) > CANCEL_GRACE {
                return Some(Overdue::IgnoredCancel);
            }
        }
        if let Some(timeout) = self.timeout {
            if now.saturating_duration_since(self.started) > timeout {
                return Some(Overdue::TimedOut(timeout));
            }
        }
        let quiet = now.saturating_duration_since(self.heard?);
        (quiet > silence).then_some(Overdue::Silent(quiet))
    }
}

/// A duration for messages: `90s`, `2.5s`, `1500ms`.
pub(crate) fn shown(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SILENCE: Duration = Duration::from_secs(60);

    #[test]
    fn a_job_is_overdue_past_its_timeout_only() {
        let t0 = Instant::now();
        let clocks = Clocks::new(t0, Some(Duration::from_secs(5)), false);
        assert_eq!(clocks.overdue(t0 + Duration::from_secs(4), SILENCE), None);
        assert_eq!(
            clocks.overdue(t0 + Duration::from_secs(6), SILENCE),
            Some(Overdue::TimedOut(Duration::from_secs(5)))
        );
        let unlimited = Clocks::new(t0, None, false);
        assert_eq!(
            unlimited.overdue(t0 + Duration::from_secs(1 << 20), SILENCE),
            None
        );
    }

    #[test]
    fn a_silent_worker_is_overdue_and_each_line_resets_the_clock() {
        let t0 = Instant::now();
        let mut clocks = Clocks::new(t0, None, true);
        assert_eq!(clocks.overdue(t0 + Duration::from_secs(59), SILENCE), None);
        clocks.heard = Some(t0 + Duration::from_secs(59));
        assert_eq!(clocks.overdue(t0 + Duration::from_secs(100), SILENCE), None);
        assert_eq!(
            clocks.overdue(t0 + Duration::from_secs(120), SILENCE),
            Some(Overdue::Silent(Duration::from_secs(61)))
        );
    }

    #[test]
    fn a_cancelled_job_gets_a_grace_then_counts_as_interrupted_before_anything_else() {
        let t0 = Instant::now();
        let mut clocks = Clocks::new(t0, Some(Duration::from_secs(1)), true);
        clocks.cancelled = Some(t0);
        let late = t0 + CANCEL_GRACE + Duration::from_secs(1);
        assert_eq!(clocks.overdue(late, SILENCE), Some(Overdue::IgnoredCancel));
    }

    #[test]
    fn durations_are_shown_short() {
        assert_eq!(shown(Duration::from_secs(90)), "90s");
        assert_eq!(shown(Duration::from_millis(2500)), "2.5s");
        assert_eq!(shown(Duration::from_millis(300)), "300ms");
    }
}
