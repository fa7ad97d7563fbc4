//! The line-delimited JSON protocol between the engine and a persistent worker process.
//!
//! One JSON object per line, on the worker's stdin (engine -> worker) and stdout (worker ->
//! engine); the worker's stderr is free text (libtorch warnings) that the engine passes on.
//! A worker announces itself with `ready`, then runs one job at a time: the engine sends `job`,
//! the worker answers with any number of `progress` lines and exactly one `done`. `cancel`
//! asks the running job to stop (it still answers `done`); `shutdown`, or the end of stdin,
//! ends the worker after the running job. Bazel's persistent workers speak the same shape of
//! protocol (a request, a response, over the process's own pipes).
//!
//! The worker also sends `heartbeat` every [`HEARTBEAT_EVERY`], from a thread of its own, so
//! the engine can tell a busy worker from a hung or stopped one. The engine trusts nothing on
//! this pipe: a line that is not one of these messages, or that names a job the worker is not
//! running, fails the worker's job and the worker is replaced (see [`super::local`]). The
//! worker writes its protocol lines to its own copy of stdout and points stdout itself at
//! stderr, so nothing a stage or a library prints can land between them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::executor::{Job, JobId, JobOutcome};

/// How often a worker says it is alive.
pub(crate) const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);

/// Engine -> worker.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ToWorker {
    /// Run this job.
    Job {
        /// The scheduler's id for it.
        id: JobId,
        /// The job.
        job: Box<Job>,
    },
    /// Stop job `id` if it is running.
    Cancel {
        /// The job.
        id: JobId,
    },
    /// Exit after the running job.
    Shutdown,
}

/// Worker -> engine.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum FromWorker {
    /// The worker is up.
    Ready {
        /// Its process id.
        pid: u32,
        /// The libtorch it links.
        libtorch: Option<String>,
    },
    /// Progress of the running job.
    Progress {
        /// The job.
        id: JobId,
        /// Steps done.
        position: u64,
        /// Steps in all.
        length: u64,
        /// What is counted.
        message: String,
    },
    /// The job ended.
    Done {
        /// The job.
        id: JobId,
        /// How.
        outcome: Box<JobOutcome>,
    },
    /// The worker is alive (every [`HEARTBEAT_EVERY`]).
    Heartbeat,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line_of_json_tagged_by_type() {
        let line = serde_json::to_string(&ToWorker::Cancel { id: 3 }).unwrap();
        assert_eq!(line, r#"{"type":"cancel","id":3}"#);
        let beat = serde_json::to_string(&FromWorker::Heartbeat).unwrap();
        assert_eq!(beat, r#"{"type":"heartbeat"}"#);
        let back: FromWorker = serde_json::from_str(
            r#"{"type":"progress","id":1,"position":2,"length":10,"message":"batches"}"#,
        )
        .unwrap();
        assert_eq!(
            back,
            FromWorker::Progress {
                id: 1,
                position: 2,
                length: 10,
                message: "batches".into()
            }
        );
    }
}
