//! The Slurm choice of `--executor`: its profile read from the project, the executor a run
//! submits to, and where `plan` says each instance would run ([`Placement`]).

use std::path::Path;

use super::{JobCommand, Request, SlurmExecutor, SlurmProfile};
use crate::exec::choice::{Placement, PlacementTotals};
use crate::exec::estimate::{self, GpuHours};
use crate::exec::executor::{Executor, ExecutorError};
use crate::exec::routed::Routed;
use crate::kind::Resource;

/// The `[executor.slurm]` profile of the project at `project`, checked.
pub(crate) fn project_profile(project: &Path) -> anyhow::Result<SlurmProfile> {
    let file = project.join(crate::config::CONFIG_FILE);
    let config = crate::config::ProjectConfig::load(project)?;
    let table = config
        .executor
        .as_ref()
        .and_then(|t| t.get("slurm"))
        .cloned()
        .ok_or_else(|| {
            anyhow::anyhow!(
                "--executor slurm: no [executor.slurm] profile in {}; add one (partition, \
                 account, time, mem, and gres under [executor.slurm.device]); the README's \
                 `Running on a Slurm cluster` has a worked example",
                file.display()
            )
        })?;
    let profile: SlurmProfile = table
        .try_into()
        .map_err(|e| anyhow::anyhow!("{} [executor.slurm]: {e}", file.display()))?;
    profile
        .validate()
        .map_err(|e| anyhow::anyhow!("{} [executor.slurm]: {e}", file.display()))?;
    Ok(profile)
}

/// The Slurm executor of the project's profile, with the executor `local` makes for the
/// classes the profile does not submit.
pub(crate) fn routed(
    project: &Path,
    max_jobs: Option<usize>,
    local: impl FnOnce() -> Result<Box<dyn Executor>, ExecutorError>,
) -> anyhow::Result<Routed> {
    let profile = project_profile(project)?;
    let exe = std::env::current_exe()?;
    let route = profile.clone();
    let cluster = SlurmExecutor::new(profile, JobCommand::asymflow_exec(&exe), max_jobs)?;
    Ok(Routed::new(
        Box::new(cluster),
        local()?,
        Box::new(move |class| route.submits(class)),
    ))
}

/// Where an instance to run would run under `--executor slurm` (`runs_on` in `plan --json`).
#[derive(Debug, Clone, serde::Serialize)]
#[serde(tag = "executor", rename_all = "lowercase")]
enum Place {
    /// As a Slurm job with these `sbatch` options.
    Slurm {
        /// Its resource class.
        class: Resource,
        /// The options.
        request: Request,
    },
    /// On this machine.
    Local {
        /// Its resource class.
        class: Resource,
    },
}

impl Placement for SlurmProfile {
    fn runs_on(&self, class: Resource) -> serde_json::Value {
        let place = if self.submits(class) {
            Place::Slurm {
                class,
                request: self.request(class),
            }
        } else {
            Place::Local { class }
        };
        serde_json::to_value(place).unwrap_or_default()
    }

    fn describe(&self, class: Resource) -> String {
        self.placement(class)
    }

    fn totals(&self, classes: &[Resource]) -> PlacementTotals {
        let requests: Vec<Request> = classes
            .iter()
            .filter(|c| self.submits(**c))
            .map(|c| self.request(*c))
            .collect();
        let hours = estimate::gpu_hours(&requests);
        PlacementTotals {
            field: "slurm_request",
            json: serde_json::to_value(&hours).unwrap_or_default(),
            line: format!(
                "--executor slurm: {} to Slurm, {} here{}",
                count(requests.len(), "job", "jobs"),
                classes.len() - requests.len(),
                describe_request(&hours)
            ),
        }
    }
}

/// `; they request 12 GPU-hours (time limit x GPUs of 6 jobs)`, or nothing without GPU jobs.
fn describe_request(hours: &GpuHours) -> String {
    if hours.gpu_jobs == 0 {
        return String::new();
    }
    let counted = hours.gpu_jobs - hours.unlimited;
    let mut text = format!(
        "; they request {:.1} GPU-hours (time limit x GPUs of {})",
        hours.gpu_hours,
        count(counted, "job", "jobs")
    );
    if hours.unlimited > 0 {
        text.push_str(&format!(
            "; {} without a time limit not counted",
            count(hours.unlimited, "GPU job", "GPU jobs")
        ));
    }
    text
}

/// `1 job`, `2 jobs`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
