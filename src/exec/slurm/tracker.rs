//! Following one Slurm job: a pure state machine from what the tools and the job's files say
//! at each poll to what the engine is told (a line worth showing, or how the job ended).
//!
//! No processes and no clock here, so every transition is a unit test. The rules:
//!
//! - A result file saying `done` wins whatever Slurm says: the outputs are in the object store
//!   and the outcome is complete (a job can be killed in its epilog after writing it).
//! - The exit status comes from the job's files, never from accounting, so a cluster without
//!   `sacct` works. A job that ended `COMPLETED` or `FAILED` with no result yet is given a few
//!   polls for the file to appear (shared filesystems cache directory listings).
//! - `TIMEOUT`, `OUT_OF_MEMORY`, `NODE_FAIL`, `BOOT_FAIL`, `DEADLINE` and an outside `scancel`
//!   end the job with Slurm's state and job id; a `scancel` this run asked for is
//!   [`FailureReason::Interrupted`].
//! - `PREEMPTED` ends it only when seen twice in a row: a cluster that requeues preempted jobs
//!   shows it `PENDING` again, and a requeued job is followed under its same id, not lost.
//! - A job no tool knows any more and that left no files (purged by slurmctld, no accounting)
//!   is given a few polls, then reported as lost.

use crate::exec::executor::{FailureReason, JobFailure, JobOutcome};

use super::layout::ResultFile;
use super::state::{Sighting, SlurmState};

/// Polls a finished job may go without its result file before it counts as missing.
pub(crate) const RESULT_GRACE_POLLS: u32 = 3;

/// Polls a job may go unknown to every tool before it counts as lost.
pub(crate) const LOST_GRACE_POLLS: u32 = 3;

/// What one poll found about one job.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Facts {
    /// What `squeue`, `scontrol` or `sacct` said; `None` when none of them knows the job.
    pub sighting: Option<Sighting>,
    /// The result file, if there is one.
    pub result: Option<ResultFile>,
    /// The exit status the batch script recorded, if there is one.
    pub exit: Option<i32>,
}

/// What the engine is told after a poll.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// A line worth showing (the job started, was requeued, ...).
    Note(String),
    /// The job ended. Failures come without a log tail; the caller adds it.
    Finished(Box<JobOutcome>),
}

/// One followed job.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tracker {
    /// Slurm's job id.
    pub slurm_id: String,
    /// The state last seen.
    pub last: Option<SlurmState>,
    /// Why it waits, as last seen (`Priority`, `ReqNodeNotAvail, ...`).
    pub reason: Option<String>,
    /// Requeues seen (by this tracker, or reported by `scontrol`).
    pub restarts: u32,
    /// Whether this run asked Slurm to cancel it.
    pub cancel_requested: bool,
    preempted_polls: u32,
    waiting_for_result: u32,
    unknown_polls: u32,
}

impl Tracker {
    /// Follows job `slurm_id`.
    pub fn new(slurm_id: impl Into<String>) -> Tracker {
        Tracker {
            slurm_id: slurm_id.into(),
            last: None,
            reason: None,
            restarts: 0,
            cancel_requested: false,
            preempted_polls: 0,
            waiting_for_result: 0,
            unknown_polls: 0,
        }
    }

    /// Takes in one poll's facts; what to tell the engine.
    pub(crate) fn observe(&mut self, facts: &Facts) -> Vec<Step> {
        let mut steps = Vec::new();
        if let Some(ResultFile::Outcome(outcome)) = &facts.result {
            if matches!(**outcome, JobOutcome::Done(_)) {
                steps.push(Step::Finished(outcome.clone()));
                return steps;
            }
        }
        let Some(sighting) = &facts.sighting else {
            if let Some(step) = self.unknown(facts) {
                steps.push(step);
            }
            return steps;
        };
        self.unknown_polls = 0;
        self.reason = sighting.reason.clone();
        let state = &sighting.state;
        if let Some(note) = self.transition(sighting) {
            steps.push(Step::Note(note));
        }
        if *state == SlurmState::Preempted && !self.cancel_requested {
            self.preempted_polls += 1;
            if self.preempted_polls < 2 {
                self.last = Some(state.clone());
                return steps;
            }
        } else {
            self.preempted_polls = 0;
        }
        self.last = Some(state.clone());
        if !state.ended() {
            return steps;
        }
        if let Some(step) = self.ended(sighting, facts) {
            steps.push(step);
        }
        steps
    }

    /// A note for a change of state worth showing.
    fn transition(&mut self, s: &Sighting) -> Option<String> {
        let id = &self.slurm_id;
        let was = self.last.as_ref();
        if was == Some(&s.state) {
            return None;
        }
        if let Some(r) = s.restarts {
            if r > self.restarts {
                self.restarts = r;
                return Some(format!(
                    "Slurm job {id} was requeued (restart {r}); following it"
                ));
            }
        }
        let was_running = matches!(
            was,
            Some(SlurmState::Running | SlurmState::Completing | SlurmState::Preempted)
        );
        match &s.state {
            st if st.queued() && was_running => {
                self.restarts += 1;
                Some(format!(
                    "Slurm job {id} was requeued (restart {}); following it",
                    self.restarts
                ))
            }
            SlurmState::Running if !matches!(was, Some(SlurmState::Completing)) => {
                Some(match &s.nodes {
                    Some(n) => format!("Slurm job {id} is running on {n}"),
                    None => format!("Slurm job {id} is running"),
                })
            }
            SlurmState::Suspended => Some(format!("Slurm job {id} is suspended")),
            SlurmState::Preempted if !self.cancel_requested => Some(format!(
                "Slurm job {id} was preempted; waiting to see whether Slurm requeues it"
            )),
            _ => None,
        }
    }

    /// The job ended in `s.state` (which Slurm reports).
    fn ended(&mut self, s: &Sighting, facts: &Facts) -> Option<Step> {
        let id = self.slurm_id.clone();
        let failed = |state: &str, message: String| {
            finish(JobOutcome::Failed(JobFailure {
                reason: FailureReason::Executor {
                    job_id: id.clone(),
                    state: state.to_string(),
                },
                message,
                log_tail: None,
            }))
        };
        let exit_note = s
            .exit_code
            .as_ref()
            .map(|c| format!(", exit code {c}"))
            .unwrap_or_default();
        match &s.state {
            SlurmState::Completed | SlurmState::Failed => {
                match &facts.result {
                    Some(ResultFile::Outcome(outcome)) => {
                        return Some(Step::Finished(outcome.clone()))
                    }
                    Some(ResultFile::Unreadable(why)) => {
                        return Some(crashed(format!(
                            "Slurm job {id} wrote an unreadable result ({why})"
                        )))
                    }
                    None => {}
                }
                if self.cancel_requested {
                    return Some(interrupted(&id));
                }
                if facts.exit.is_none() && self.waiting_for_result < RESULT_GRACE_POLLS {
                    self.waiting_for_result += 1;
                    return None;
                }
                let status = facts
                    .exit
                    .map(|c| format!("its command exited with status {c}"))
                    .unwrap_or_else(|| "its batch script did not finish".to_string());
                Some(if s.state == SlurmState::Completed {
                    crashed(format!(
                        "Slurm job {id} COMPLETED without a result file ({status}): the job \
                         command must write one with --result"
                    ))
                } else {
                    failed(
                        "FAILED",
                        format!("Slurm job {id} FAILED{exit_note} without a result ({status})"),
                    )
                })
            }
            SlurmState::Cancelled if self.cancel_requested => Some(interrupted(&id)),
            SlurmState::Cancelled => Some(failed(
                "CANCELLED",
                format!(
                    "Slurm job {id} was CANCELLED from outside this run (scancel, or an \
                     administrator)"
                ),
            )),
            SlurmState::Timeout => Some(failed(
                "TIMEOUT",
                format!("Slurm job {id} hit its TIMEOUT (raise `time` in the profile's class)"),
            )),
            SlurmState::OutOfMemory => Some(failed(
                "OUT_OF_MEMORY",
                format!("Slurm job {id} ran OUT_OF_MEMORY (raise `mem` in the profile's class)"),
            )),
            SlurmState::NodeFail => Some(failed(
                "NODE_FAIL",
                format!("Slurm job {id} ended with NODE_FAIL (its node failed)"),
            )),
            SlurmState::Preempted => Some(failed(
                "PREEMPTED",
                format!("Slurm job {id} was PREEMPTED and not requeued"),
            )),
            other => Some(failed(
                other.word(),
                format!("Slurm job {id} ended {}{exit_note}", other.word()),
            )),
        }
    }

    /// No tool knows the job: its files decide, after a few polls of patience.
    fn unknown(&mut self, facts: &Facts) -> Option<Step> {
        let id = self.slurm_id.clone();
        match &facts.result {
            Some(ResultFile::Outcome(outcome)) => return Some(Step::Finished(outcome.clone())),
            Some(ResultFile::Unreadable(why)) => {
                return Some(crashed(format!(
                    "Slurm job {id} wrote an unreadable result ({why})"
                )))
            }
            None => {}
        }
        if self.cancel_requested {
            return Some(interrupted(&id));
        }
        if let Some(code) = facts.exit {
            return Some(finish(JobOutcome::Failed(JobFailure {
                reason: FailureReason::Executor {
                    job_id: id.clone(),
                    state: "FAILED".into(),
                },
                message: format!(
                    "Slurm job {id} ended without a result (its command exited with status \
                     {code})"
                ),
                log_tail: None,
            })));
        }
        self.unknown_polls += 1;
        if self.unknown_polls < LOST_GRACE_POLLS {
            return None;
        }
        Some(finish(JobOutcome::Failed(JobFailure {
            reason: FailureReason::Executor {
                job_id: id.clone(),
                state: "UNKNOWN".into(),
            },
            message: format!(
                "Slurm no longer knows job {id} (last seen {}) and it left no result",
                self.last.as_ref().map(SlurmState::word).unwrap_or("never")
            ),
            log_tail: None,
        })))
    }
}

/// Lines libtorch appends to an error: the C++ frames of where it was raised. They make a
/// CUDA failure kilobytes long and say nothing a user can act on.
fn native_frame(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("Exception raised from")
        || t.starts_with("frame #")
        || t.starts_with("note: run with `RUST_BACKTRACE")
        || t.starts_with("stack backtrace:")
        || (t.starts_with("at ") && t.contains(".rs:"))
        || t.chars().next().is_some_and(|c| c.is_ascii_digit())
            && t.contains(": ")
            && t.contains("::")
}

/// A failure cut to what a user can act on: libtorch's C++ frames and Rust's backtrace lines
/// dropped from the message and the log tail (then cut to its last
/// [`super::layout::LOG_TAIL_LINES`] lines), the message's first lines kept, and a CUDA
/// failure said to be one, with what to check.
pub(crate) fn condense_failure(failure: &mut JobFailure) {
    let kept: Vec<&str> = failure
        .message
        .lines()
        .take_while(|l| !native_frame(l))
        .filter(|l| !l.trim().is_empty())
        .collect();
    let mut message: String = kept.iter().take(6).copied().collect::<Vec<_>>().join("\n");
    if message.chars().count() > 1200 {
        message = message.chars().take(1200).collect::<String>() + " [...]";
    }
    if message.is_empty() {
        message = failure.message.lines().next().unwrap_or("").to_string();
    }
    let lower = failure.message.to_ascii_lowercase();
    let cuda = lower.contains("cuda") && !message.starts_with("CUDA failed");
    if cuda {
        message = format!(
            "CUDA failed on the node: {message}\n(check that the class asks for a GPU the node \
             has, with `gres` or `gpus` under [executor.slurm.device], that the node's driver \
             matches the libtorch build, and the `setup` line loads CUDA)"
        );
    }
    failure.message = message;
    if let Some(tail) = &failure.log_tail {
        let lines: Vec<&str> = tail.lines().filter(|l| !native_frame(l)).collect();
        let from = lines.len().saturating_sub(super::layout::LOG_TAIL_LINES);
        failure.log_tail = (from < lines.len()).then(|| lines[from..].join("\n"));
    }
}

fn finish(outcome: JobOutcome) -> Step {
    Step::Finished(Box::new(outcome))
}

fn crashed(message: String) -> Step {
    finish(JobOutcome::Failed(JobFailure {
        reason: FailureReason::Crashed,
        message,
        log_tail: None,
    }))
}

fn interrupted(id: &str) -> Step {
    finish(JobOutcome::Failed(JobFailure {
        reason: FailureReason::Interrupted,
        message: format!("Slurm job {id} was cancelled by this run"),
        log_tail: None,
    }))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::cache::Provenance;
    use crate::exec::executor::JobResult;

    fn seen(state: &str) -> Facts {
        Facts {
            sighting: Some(Sighting {
                state: SlurmState::parse(state),
                reason: None,
                nodes: Some("node1".into()),
                exit_code: None,
                restarts: None,
            }),
            result: None,
            exit: None,
        }
    }

    fn done() -> JobOutcome {
        JobOutcome::Done(Box::new(JobResult {
            outputs: BTreeMap::new(),
            metrics: BTreeMap::from([("map".to_string(), 0.5)]),
            started: 1.0,
            finished: 2.0,
            provenance: Provenance::this_build("cpu", 1, ""),
        }))
    }

    fn with_result(mut f: Facts, outcome: JobOutcome) -> Facts {
        f.result = Some(ResultFile::Outcome(Box::new(outcome)));
        f
    }

    fn finished(steps: &[Step]) -> Option<&JobOutcome> {
        steps.iter().find_map(|s| match s {
            Step::Finished(o) => Some(o.as_ref()),
            Step::Note(_) => None,
        })
    }

    fn failure(steps: &[Step]) -> (&FailureReason, &str) {
        match finished(steps) {
            Some(JobOutcome::Failed(f)) => (&f.reason, &f.message),
            other => panic!("expected a failure, got {other:?} from {steps:?}"),
        }
    }

    fn executor_state(steps: &[Step]) -> String {
        match failure(steps).0 {
            FailureReason::Executor { job_id, state } => {
                assert_eq!(job_id, "42");
                state.clone()
            }
            other => panic!("expected an executor failure, got {other:?}"),
        }
    }

    #[test]
    fn a_cuda_failure_is_cut_to_what_a_user_can_act_on() {
        let mut frames = String::from(
            "stage panicked: called `Result::unwrap()` on an `Err` value: Torch(\"CUDA error: \
             no kernel image is available for execution on the device\n",
        );
        frames.push_str("Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:44 (most recent call first):\n");
        for i in 0..80 {
            frames.push_str(&format!(
                "frame #{i}: c10::Error::Error(c10::SourceLocation, std::string) + 0x{i:x} (0x7f in /opt/libtorch/lib/libc10.so)\n"
            ));
        }
        let mut f = JobFailure {
            reason: FailureReason::Stage,
            message: frames.clone(),
            log_tail: Some(format!("epoch 1\n{frames}")),
        };
        assert!(f.message.len() > 6000);
        condense_failure(&mut f);
        assert!(f.message.len() < 800, "{}", f.message);
        assert!(
            f.message
                .starts_with("CUDA failed on the node: stage panicked"),
            "{}",
            f.message
        );
        assert!(f.message.contains("no kernel image"), "{}", f.message);
        assert!(
            f.message.contains("[executor.slurm.device]"),
            "{}",
            f.message
        );
        let tail = f.log_tail.unwrap();
        assert!(!tail.contains("frame #"), "{tail}");
        assert!(tail.starts_with("epoch 1\n"), "{tail}");
        // Any other failure keeps its words.
        let mut plain = JobFailure {
            reason: FailureReason::Stage,
            message: "loss is NaN at epoch 3".into(),
            log_tail: None,
        };
        condense_failure(&mut plain);
        assert_eq!(plain.message, "loss is NaN at epoch 3");
    }

    #[test]
    fn queued_then_running_then_completed_with_a_result() {
        let mut t = Tracker::new("42");
        let mut pending = seen("PENDING");
        pending.sighting.as_mut().unwrap().reason = Some("Priority".into());
        // Queue waits are the executor's to show, for all jobs at once.
        assert_eq!(t.observe(&pending), []);
        assert_eq!(t.reason.as_deref(), Some("Priority"));
        assert_eq!(t.observe(&pending), []);
        assert_eq!(
            t.observe(&seen("RUNNING")),
            [Step::Note("Slurm job 42 is running on node1".into())]
        );
        assert_eq!(t.observe(&seen("COMPLETING")), []);
        let steps = t.observe(&with_result(seen("COMPLETED"), done()));
        assert_eq!(steps, [finish(done())]);
    }

    #[test]
    fn a_stage_failure_from_the_result_file_keeps_its_reason() {
        let mut t = Tracker::new("42");
        let stage = JobOutcome::Failed(JobFailure {
            reason: FailureReason::Stage,
            message: "parameter lr is negative".into(),
            log_tail: None,
        });
        let steps = t.observe(&with_result(seen("FAILED"), stage.clone()));
        assert_eq!(steps, [finish(stage)]);
    }

    #[test]
    fn a_done_result_wins_over_a_late_kill() {
        let mut t = Tracker::new("42");
        let steps = t.observe(&with_result(seen("TIMEOUT"), done()));
        assert_eq!(finished(&steps), Some(&done()));
    }

    #[test]
    fn each_failure_state_is_reported_with_the_job_id() {
        for (state, hint) in [
            ("TIMEOUT", "raise `time`"),
            ("OUT_OF_MEMORY", "raise `mem`"),
            ("NODE_FAIL", "node failed"),
            ("BOOT_FAIL", "BOOT_FAIL"),
            ("DEADLINE", "DEADLINE"),
            ("CANCELLED", "from outside"),
        ] {
            let mut t = Tracker::new("42");
            t.observe(&seen("RUNNING"));
            let steps = t.observe(&seen(state));
            assert_eq!(executor_state(&steps), state);
            let msg = failure(&steps).1;
            assert!(
                msg.contains("job 42") && msg.contains(hint),
                "{state}: {msg}"
            );
        }
    }

    #[test]
    fn failed_without_a_result_waits_for_the_file_then_reports_the_exit_status() {
        let mut t = Tracker::new("42");
        t.observe(&seen("RUNNING"));
        for _ in 0..RESULT_GRACE_POLLS {
            assert_eq!(t.observe(&seen("FAILED")), []);
        }
        let steps = t.observe(&seen("FAILED"));
        assert_eq!(executor_state(&steps), "FAILED");
        // With the exit file there, no waiting.
        let mut t = Tracker::new("42");
        let mut f = seen("FAILED");
        f.exit = Some(139);
        f.sighting.as_mut().unwrap().exit_code = Some("139:0".into());
        let steps = t.observe(&f);
        let msg = failure(&steps).1;
        assert!(
            msg.contains("exit code 139:0") && msg.contains("status 139"),
            "{msg}"
        );
    }

    #[test]
    fn completed_without_a_result_is_a_crash_after_the_grace_polls() {
        let mut t = Tracker::new("42");
        for _ in 0..RESULT_GRACE_POLLS {
            assert_eq!(t.observe(&seen("COMPLETED")), []);
        }
        let steps = t.observe(&seen("COMPLETED"));
        assert_eq!(failure(&steps).0, &FailureReason::Crashed);
        // The file showing up during the grace polls is taken.
        let mut t = Tracker::new("42");
        assert_eq!(t.observe(&seen("COMPLETED")), []);
        assert_eq!(
            t.observe(&with_result(seen("COMPLETED"), done())),
            [finish(done())]
        );
    }

    #[test]
    fn an_unreadable_result_is_a_crash() {
        let mut t = Tracker::new("42");
        let mut f = seen("COMPLETED");
        f.result = Some(ResultFile::Unreadable("x: expected value".into()));
        let steps = t.observe(&f);
        assert_eq!(failure(&steps).0, &FailureReason::Crashed);
    }

    #[test]
    fn a_requeued_job_is_followed_under_its_id() {
        let mut t = Tracker::new("42");
        t.observe(&seen("RUNNING"));
        let steps = t.observe(&seen("PENDING"));
        assert_eq!(
            steps,
            [Step::Note(
                "Slurm job 42 was requeued (restart 1); following it".into()
            )]
        );
        assert!(
            t.observe(&seen("RUNNING"))[0] == Step::Note("Slurm job 42 is running on node1".into())
        );
        assert_eq!(
            t.observe(&with_result(seen("COMPLETED"), done())),
            [finish(done())]
        );
        assert_eq!(t.restarts, 1);
        // scontrol's restart count also tells it, even when the queued state was never seen.
        let mut t = Tracker::new("42");
        t.observe(&seen("RUNNING"));
        let mut again = seen("RUNNING");
        again.sighting.as_mut().unwrap().restarts = Some(1);
        t.last = Some(SlurmState::Pending);
        assert!(matches!(&t.observe(&again)[0], Step::Note(n) if n.contains("requeued")));
    }

    #[test]
    fn preempted_then_requeued_is_followed_and_preempted_twice_ends_it() {
        let mut t = Tracker::new("42");
        t.observe(&seen("RUNNING"));
        let steps = t.observe(&seen("PREEMPTED"));
        assert!(finished(&steps).is_none(), "{steps:?}");
        assert!(matches!(&steps[0], Step::Note(n) if n.contains("preempted")));
        let steps = t.observe(&seen("PENDING"));
        assert!(
            matches!(&steps[0], Step::Note(n) if n.contains("requeued")),
            "{steps:?}"
        );
        t.observe(&seen("RUNNING"));
        assert!(finished(&t.observe(&seen("PREEMPTED"))).is_none());
        let steps = t.observe(&seen("PREEMPTED"));
        assert_eq!(executor_state(&steps), "PREEMPTED");
        assert!(failure(&steps).0.retryable());
    }

    #[test]
    fn a_cancel_this_run_asked_for_is_an_interruption() {
        let mut t = Tracker::new("42");
        t.observe(&seen("PENDING"));
        t.cancel_requested = true;
        let steps = t.observe(&seen("CANCELLED"));
        assert_eq!(failure(&steps).0, &FailureReason::Interrupted);
        // Also when the job vanished before the poll saw it cancelled.
        let mut t = Tracker::new("42");
        t.cancel_requested = true;
        let steps = t.observe(&Facts::default());
        assert_eq!(failure(&steps).0, &FailureReason::Interrupted);
    }

    #[test]
    fn a_purged_job_is_read_from_its_files() {
        let mut t = Tracker::new("42");
        t.observe(&seen("RUNNING"));
        let steps = t.observe(&with_result(Facts::default(), done()));
        assert_eq!(steps, [finish(done())]);
        let mut t = Tracker::new("42");
        let steps = t.observe(&Facts {
            exit: Some(1),
            ..Facts::default()
        });
        assert_eq!(executor_state(&steps), "FAILED");
    }

    #[test]
    fn a_job_nobody_knows_is_lost_after_the_grace_polls() {
        let mut t = Tracker::new("42");
        t.observe(&seen("RUNNING"));
        for _ in 1..LOST_GRACE_POLLS {
            assert_eq!(t.observe(&Facts::default()), []);
        }
        let steps = t.observe(&Facts::default());
        assert_eq!(executor_state(&steps), "UNKNOWN");
        assert!(failure(&steps).1.contains("last seen RUNNING"));
    }
}
