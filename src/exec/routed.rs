//! [`Routed`]: two executors behind one, jobs sent by resource class.
//!
//! With `--executor slurm`, the stages that need a GPU go to the cluster while the cheap CPU
//! stages (split, evaluate, report) run on the login node, unless the profile says to submit
//! them too. The scheduler sees one [`Executor`]; this struct remembers where each job went,
//! so progress, outcomes and cancels reach the right one.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::executor::{Executor, ExecutorError, ExternalJob, Job, JobEvent, JobId};
use crate::kind::Resource;

/// Which executor takes a class.
pub(crate) type Route = Box<dyn Fn(Resource) -> bool>;

/// See the module docs.
pub(crate) struct Routed {
    remote: Box<dyn Executor>,
    local: Box<dyn Executor>,
    to_remote: Route,
    placed: HashMap<JobId, bool>,
}

impl Routed {
    /// Jobs of the classes `to_remote` picks go to `remote`, the others to `local`.
    pub fn new(remote: Box<dyn Executor>, local: Box<dyn Executor>, to_remote: Route) -> Self {
        Routed {
            remote,
            local,
            to_remote,
            placed: HashMap::new(),
        }
    }

    fn pick(&mut self, remote: bool) -> &mut dyn Executor {
        if remote {
            self.remote.as_mut()
        } else {
            self.local.as_mut()
        }
    }
}

impl Executor for Routed {
    fn has_room(&self, class: Resource) -> bool {
        if (self.to_remote)(class) {
            self.remote.has_room(class)
        } else {
            self.local.has_room(class)
        }
    }

    fn submit(&mut self, id: JobId, job: Job) -> Result<(), ExecutorError> {
        let remote = (self.to_remote)(job.resources.class);
        self.pick(remote).submit(id, job)?;
        self.placed.insert(id, remote);
        Ok(())
    }

    fn flush(&mut self) {
        self.remote.flush();
        self.local.flush();
    }

    fn external_job(&self, id: JobId) -> Option<ExternalJob> {
        match self.placed.get(&id) {
            Some(true) => self.remote.external_job(id),
            Some(false) => self.local.external_job(id),
            None => None,
        }
    }

    /// Jobs outside the engine are the remote executor's: only it can follow one.
    fn adopt(&mut self, id: JobId, job: Job, external: &ExternalJob) -> Result<(), ExecutorError> {
        self.remote.adopt(id, job, external)?;
        self.placed.insert(id, true);
        Ok(())
    }

    fn next_event(&mut self, timeout: Duration) -> Option<JobEvent> {
        // The local executor answers at once when it has something; the cluster's polling has
        // its own pace, so each gets a share of the wait.
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(event) = self.local.next_event(Duration::from_millis(10)) {
                return self.settle(event);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if let Some(event) = self.remote.next_event(left.min(Duration::from_millis(40))) {
                return self.settle(event);
            }
            if Instant::now() >= deadline {
                return None;
            }
        }
    }

    fn cancel(&mut self, id: JobId) {
        if let Some(&remote) = self.placed.get(&id) {
            self.pick(remote).cancel(id);
        }
    }

    fn shutdown(&mut self) {
        self.remote.shutdown();
        self.local.shutdown();
    }
}

impl Routed {
    fn settle(&mut self, event: JobEvent) -> Option<JobEvent> {
        if let JobEvent::Finished { id, .. } = &event {
            self.placed.remove(id);
        }
        Some(event)
    }
}
