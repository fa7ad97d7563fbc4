//! What Slurm says about a job: its state words, and the three tools' output parsed into them.
//!
//! Parsing is kept apart from running the tools so each format is tested on captured text:
//! `squeue -h -r -t all -j IDS -o '%i|%T|%r|%N'` (one line per job, or per element of a job
//! array as `ARRAYID_INDEX`, that slurmctld still holds),
//! `scontrol show job -o ID` (one line of `Key=Value` words, for a job that left squeue's
//! view) and `sacct -n -P -X -j IDS -o JobID,State,ExitCode` (only where accounting
//! exists: it remembers jobs slurmctld has purged; `JobID` names array elements as squeue
//! does).

use std::collections::BTreeMap;

/// A Slurm job state (`squeue`'s `%T`, `scontrol`'s `JobState`, `sacct`'s `State`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SlurmState {
    /// Waiting for resources or priority.
    Pending,
    /// Nodes are booting for it.
    Configuring,
    /// Running.
    Running,
    /// Finished; the epilog still runs.
    Completing,
    /// Suspended (by an administrator, or by gang scheduling).
    Suspended,
    /// Put back in the queue (by a preemption, a node failure, `scontrol requeue`).
    Requeued,
    /// Requeued and held.
    RequeueHold,
    /// Any other state in which the job still lives (`RESIZING`, `STOPPED`, `SIGNALING`,
    /// `STAGE_OUT`, `RESV_DEL_HOLD`, `REQUEUE_FED`, `SPECIAL_EXIT`).
    OtherActive(String),
    /// Exit code 0.
    Completed,
    /// A non-zero exit code.
    Failed,
    /// Ran past its time limit.
    Timeout,
    /// Killed for using more memory than it asked for.
    OutOfMemory,
    /// Its node failed.
    NodeFail,
    /// Preempted; terminal unless the cluster requeues it.
    Preempted,
    /// Cancelled (`scancel`).
    Cancelled,
    /// Its node failed to boot.
    BootFail,
    /// Missed its deadline.
    Deadline,
    /// Any other terminal state (`REVOKED`).
    OtherEnded(String),
}

impl SlurmState {
    /// Parses a state word; `sacct` writes `CANCELLED by 1000`, so only the first word counts.
    pub fn parse(word: &str) -> SlurmState {
        let word = word
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_uppercase();
        let word = word.trim_end_matches('+');
        match word {
            "PENDING" | "PD" => SlurmState::Pending,
            "CONFIGURING" | "CF" => SlurmState::Configuring,
            "RUNNING" | "R" => SlurmState::Running,
            "COMPLETING" | "CG" => SlurmState::Completing,
            "SUSPENDED" | "S" => SlurmState::Suspended,
            "REQUEUED" | "RQ" => SlurmState::Requeued,
            "REQUEUE_HOLD" | "RH" => SlurmState::RequeueHold,
            "COMPLETED" | "CD" => SlurmState::Completed,
            "FAILED" | "F" => SlurmState::Failed,
            "TIMEOUT" | "TO" => SlurmState::Timeout,
            "OUT_OF_MEMORY" | "OOM" => SlurmState::OutOfMemory,
            "NODE_FAIL" | "NF" => SlurmState::NodeFail,
            "PREEMPTED" | "PR" => SlurmState::Preempted,
            "CANCELLED" | "CA" => SlurmState::Cancelled,
            "BOOT_FAIL" | "BF" => SlurmState::BootFail,
            "DEADLINE" | "DL" => SlurmState::Deadline,
            "REVOKED" | "RV" => SlurmState::OtherEnded(word.to_string()),
            other => SlurmState::OtherActive(other.to_string()),
        }
    }

    /// Whether the job has ended (or, for [`SlurmState::Preempted`], may have).
    pub fn ended(&self) -> bool {
        matches!(
            self,
            SlurmState::Completed
                | SlurmState::Failed
                | SlurmState::Timeout
                | SlurmState::OutOfMemory
                | SlurmState::NodeFail
                | SlurmState::Preempted
                | SlurmState::Cancelled
                | SlurmState::BootFail
                | SlurmState::Deadline
                | SlurmState::OtherEnded(_)
        )
    }

    /// Whether the job waits in the queue (first, or again after a requeue).
    pub fn queued(&self) -> bool {
        matches!(
            self,
            SlurmState::Pending
                | SlurmState::Configuring
                | SlurmState::Requeued
                | SlurmState::RequeueHold
        )
    }

    /// Slurm's own word for the state.
    pub fn word(&self) -> &str {
        match self {
            SlurmState::Pending => "PENDING",
            SlurmState::Configuring => "CONFIGURING",
            SlurmState::Running => "RUNNING",
            SlurmState::Completing => "COMPLETING",
            SlurmState::Suspended => "SUSPENDED",
            SlurmState::Requeued => "REQUEUED",
            SlurmState::RequeueHold => "REQUEUE_HOLD",
            SlurmState::Completed => "COMPLETED",
            SlurmState::Failed => "FAILED",
            SlurmState::Timeout => "TIMEOUT",
            SlurmState::OutOfMemory => "OUT_OF_MEMORY",
            SlurmState::NodeFail => "NODE_FAIL",
            SlurmState::Preempted => "PREEMPTED",
            SlurmState::Cancelled => "CANCELLED",
            SlurmState::BootFail => "BOOT_FAIL",
            SlurmState::Deadline => "DEADLINE",
            SlurmState::OtherActive(w) | SlurmState::OtherEnded(w) => w,
        }
    }
}

/// One job as a tool reported it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sighting {
    /// Its state.
    pub state: SlurmState,
    /// Why it waits (`Priority`, `Resources`), when it does.
    pub reason: Option<String>,
    /// Where it runs or ran.
    pub nodes: Option<String>,
    /// `EXIT:SIGNAL` (`1:0`), where the tool knows it.
    pub exit_code: Option<String>,
    /// How many times it was requeued (`scontrol`'s `Restarts`).
    pub restarts: Option<u32>,
}

impl Sighting {
    fn of(state: SlurmState) -> Sighting {
        Sighting {
            state,
            reason: None,
            nodes: None,
            exit_code: None,
            restarts: None,
        }
    }
}

fn some(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty() && s != "None" && s != "(null)" && s != "n/a").then(|| s.to_string())
}

/// The `-o` format [`parse_squeue`] reads.
pub(crate) const SQUEUE_FORMAT: &str = "%i|%T|%r|%N";

/// Parses `squeue -h -o '%i|%T|%r|%N'`: job id -> sighting. Lines it cannot read are skipped.
pub(crate) fn parse_squeue(text: &str) -> BTreeMap<String, Sighting> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.trim().split('|').collect();
        if fields.len() < 2 || fields[0].is_empty() {
            continue;
        }
        let mut s = Sighting::of(SlurmState::parse(fields[1]));
        s.reason = fields.get(2).and_then(|r| some(r));
        s.nodes = fields.get(3).and_then(|n| some(n));
        out.insert(fields[0].to_string(), s);
    }
    out
}

/// Parses `scontrol show job -o ID` (one job on one line of `Key=Value` words).
pub(crate) fn parse_scontrol(text: &str) -> Option<(String, Sighting)> {
    let mut fields = BTreeMap::new();
    for word in text.split_whitespace() {
        if let Some((k, v)) = word.split_once('=') {
            fields.entry(k).or_insert(v);
        }
    }
    let id = fields.get("JobId")?.to_string();
    let mut s = Sighting::of(SlurmState::parse(fields.get("JobState")?));
    s.reason = fields.get("Reason").and_then(|r| some(r));
    s.nodes = fields.get("NodeList").and_then(|n| some(n));
    s.exit_code = fields.get("ExitCode").and_then(|e| some(e));
    s.restarts = fields.get("Restarts").and_then(|r| r.parse().ok());
    Some((id, s))
}

/// The `-o` format [`parse_sacct`] reads.
pub(crate) const SACCT_FORMAT: &str = "JobID,State,ExitCode";

/// Parses `sacct -n -P -X -o JobID,State,ExitCode`: job id -> sighting. With several
/// records of one id (a requeued job), the last one counts; steps (`7.batch`) and array
/// elements not yet started (`7_[3-9]`) are skipped.
pub(crate) fn parse_sacct(text: &str) -> BTreeMap<String, Sighting> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.trim().split('|').collect();
        if fields.len() < 2
            || fields[0].is_empty()
            || fields[0].contains('.')
            || fields[0].contains('[')
        {
            continue;
        }
        let mut s = Sighting::of(SlurmState::parse(fields[1]));
        s.exit_code = fields.get(2).and_then(|e| some(e));
        out.insert(fields[0].to_string(), s);
    }
    out
}

/// Parses `sbatch --parsable` output: `ID` or `ID;CLUSTER`.
pub(crate) fn parse_sbatch(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).rfind(|l| !l.is_empty())?;
    let id = line.split(';').next()?.trim();
    (!id.is_empty() && id.chars().all(|c| c.is_ascii_digit())).then(|| id.to_string())
}

/// Whether a tool's error says the job id is unknown (purged, or never existed).
pub(crate) fn unknown_job(stderr: &str) -> bool {
    stderr.contains("Invalid job id")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squeue_lines_become_sightings() {
        let text = "1|RUNNING|None|localhost\n2|PENDING|Resources|\n3|COMPLETED|None|localhost\n\
                    garbage\n";
        let jobs = parse_squeue(text);
        assert_eq!(jobs.len(), 3);
        assert_eq!(jobs["1"].state, SlurmState::Running);
        assert_eq!(jobs["1"].nodes.as_deref(), Some("localhost"));
        assert_eq!(jobs["2"].reason.as_deref(), Some("Resources"));
        assert_eq!(jobs["2"].nodes, None);
        assert!(jobs["3"].state.ended());
    }

    #[test]
    fn scontrol_one_liner_gives_state_exit_code_and_restarts() {
        // Captured from slurmctld 22.05.8 (shortened).
        let text = "JobId=41 JobName=asymflow-teacher-ab UserId=root(0) JobState=TIMEOUT \
                    Reason=TimeLimit Dependency=(null) Requeue=1 Restarts=2 BatchFlag=1 \
                    ExitCode=0:15 NodeList=node7 StdOut=/c/slurm/ab/41.log";
        let (id, s) = parse_scontrol(text).unwrap();
        assert_eq!(id, "41");
        assert_eq!(s.state, SlurmState::Timeout);
        assert_eq!(s.exit_code.as_deref(), Some("0:15"));
        assert_eq!(s.restarts, Some(2));
        assert_eq!(s.reason.as_deref(), Some("TimeLimit"));
        assert_eq!(
            parse_scontrol("slurm_load_jobs error: Invalid job id specified"),
            None
        );
    }

    #[test]
    fn sacct_keeps_allocations_and_the_last_record() {
        let text =
            "7|PREEMPTED|0:0\n7|COMPLETED|0:0\n7.batch|COMPLETED|0:0\n8|CANCELLED by 0|0:0\n\
                    9_0|TIMEOUT|0:15\n9_[1-4%2]|PENDING|0:0\n";
        let jobs = parse_sacct(text);
        assert_eq!(jobs.len(), 3);
        assert_eq!(jobs["9_0"].state, SlurmState::Timeout);
        assert_eq!(jobs["7"].state, SlurmState::Completed);
        assert_eq!(jobs["8"].state, SlurmState::Cancelled);
    }

    #[test]
    fn every_state_word_round_trips_and_is_classified() {
        let ended = [
            "COMPLETED",
            "FAILED",
            "TIMEOUT",
            "OUT_OF_MEMORY",
            "NODE_FAIL",
            "PREEMPTED",
            "CANCELLED",
            "BOOT_FAIL",
            "DEADLINE",
            "REVOKED",
        ];
        let active = [
            "PENDING",
            "CONFIGURING",
            "RUNNING",
            "COMPLETING",
            "SUSPENDED",
            "REQUEUED",
            "REQUEUE_HOLD",
            "RESIZING",
            "STAGE_OUT",
        ];
        for w in ended {
            let s = SlurmState::parse(w);
            assert!(s.ended(), "{w}");
            assert_eq!(s.word(), w);
        }
        for w in active {
            let s = SlurmState::parse(w);
            assert!(!s.ended(), "{w}");
            assert_eq!(s.word(), w);
        }
        assert_eq!(SlurmState::parse("CD"), SlurmState::Completed);
        assert!(SlurmState::parse("REQUEUED").queued());
    }

    #[test]
    fn sbatch_parsable_output_gives_the_id() {
        assert_eq!(parse_sbatch("1234\n").as_deref(), Some("1234"));
        assert_eq!(parse_sbatch("1234;cluster-a\n").as_deref(), Some("1234"));
        assert_eq!(parse_sbatch("Submitted batch job 1234\n"), None);
        assert_eq!(parse_sbatch(""), None);
    }
}
