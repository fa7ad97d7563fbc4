//! Every instance of a pipeline with its status now: `cached` (a hit), `running` (a live
//! process holds its lease), `failed` (its last run under this key failed) or `to-run`, with
//! the engine's reason, its metrics when cached, and the progress of a running stage.
//!
//! A cached instance's whole record (outputs, times, its key's JSON) is read from the index
//! the first time a page asks for it ([`PipelineState::record`]), not with the state: pages
//! show the metrics of every instance but the records of a few, and reading all 100,000
//! records of a large sweep was 0.4 s of its 1.4 s first view. The state is served only while the
//! index is unchanged ([`super::memo`]), so a record read later is the one the state saw.
//!
//! The statuses come from [`crate::exec::plan_status_with`], the same code `asymflow plan` uses,
//! refined by the leases and failures in the index. A project with no cache yet is served as
//! is: every instance is to run, and no index is created.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, OnceLock};

use serde::Serialize;
use serde_json::Value;

use super::error::ServeError;
use super::live::Progress;
use crate::cache::{Index, RunRecord};
use crate::graph::Plan;
use crate::kind::Params;

/// An instance's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Its result is in the cache.
    Cached,
    /// A process is computing it now.
    Running,
    /// Its last run under this key failed.
    Failed,
    /// It would run.
    ToRun,
}

impl Status {
    /// The name pages and the API use.
    pub fn name(self) -> &'static str {
        match self {
            Status::Cached => "cached",
            Status::Running => "running",
            Status::Failed => "failed",
            Status::ToRun => "to-run",
        }
    }
}

/// One instance and what the cache knows about it.
#[derive(Debug, Clone)]
pub struct InstanceState {
    /// Its index in the plan (its id in URLs).
    pub index: usize,
    /// Its status.
    pub status: Status,
    /// Its key, when its inputs are known.
    pub key: Option<String>,
    /// Why it would run (empty when cached).
    pub reason: String,
    /// Its recorded metrics, when cached (its whole record: [`PipelineState::record`]).
    pub metrics: Option<BTreeMap<String, f64>>,
    /// The error of its last run, when failed.
    pub failure: Option<String>,
    /// Progress of a running stage.
    pub progress: Option<Progress>,
}

impl InstanceState {
    /// Instance `i`, to run for `reason`, with no key.
    pub(crate) fn never_ran(i: usize, reason: &str) -> Self {
        InstanceState {
            index: i,
            status: Status::ToRun,
            key: None,
            reason: reason.into(),
            metrics: None,
            failure: None,
            progress: None,
        }
    }
}

/// A pipeline's plan with the state of every instance (in plan index order), or of the
/// instances on one page of its table ([`PipelineState::is_whole`]).
pub struct PipelineState {
    /// The pipeline file's stem (its name in URLs).
    pub name: String,
    /// The expanded pipeline.
    pub plan: Plan,
    /// One per instance, indexed like `plan.instances()`.
    pub instances: Vec<InstanceState>,
    /// Lists derived from every instance, made once per state (a kept state serves many
    /// pages, and each list walks 100,000 instances in a large sweep).
    derived: Derived,
    /// The cached instances' records, each read on first use.
    records: Records,
    /// Whether every instance was planned (else only those of one page of the table were, the
    /// others standing as "not planned yet").
    whole: bool,
}

/// The records of a state's cached instances, read from the index the state was computed
/// with when first asked for.
struct Records {
    /// The index (`None`: the project has no cache yet, so nothing is cached).
    index: Mutex<Option<Index>>,
    /// One slot per instance, its record boxed: each of a sweep's 100,000 slots is then 16
    /// bytes, not about 250, and most are never filled.
    read: Vec<OnceLock<Option<Box<RunRecord>>>>,
}

/// [`PipelineState`]'s derived lists, each made on first use.
#[derive(Default)]
struct Derived {
    axes: OnceLock<Vec<String>>,
    key_params: OnceLock<Vec<String>>,
    metrics: OnceLock<Vec<String>>,
}

/// Status counts: (cached, to run, running, failed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Counts {
    /// Cached.
    pub cached: usize,
    /// To run.
    pub to_run: usize,
    /// Running.
    pub running: usize,
    /// Failed.
    pub failed: usize,
}

impl Counts {
    /// Counts `statuses`.
    pub fn of<'a>(statuses: impl IntoIterator<Item = &'a InstanceState>) -> Counts {
        let mut c = Counts::default();
        for s in statuses {
            match s.status {
                Status::Cached => c.cached += 1,
                Status::Running => c.running += 1,
                Status::Failed => c.failed += 1,
                Status::ToRun => c.to_run += 1,
            }
        }
        c
    }

    /// The status a group with these counts shows: failed, then running, then to run.
    pub(crate) fn overall(&self) -> Status {
        if self.failed > 0 {
            Status::Failed
        } else if self.running > 0 {
            Status::Running
        } else if self.to_run > 0 {
            Status::ToRun
        } else {
            Status::Cached
        }
    }
}

impl PipelineState {
    /// The state of pipeline `name`: `plan` with one state per instance, their records to be
    /// read from `index` when asked for.
    pub(crate) fn new(
        name: &str,
        plan: Plan,
        instances: Vec<InstanceState>,
        index: Option<Index>,
    ) -> Self {
        let records = Records {
            index: Mutex::new(index),
            read: instances.iter().map(|_| OnceLock::new()).collect(),
        };
        PipelineState {
            name: name.to_string(),
            plan,
            instances,
            derived: Derived::default(),
            records,
            whole: true,
        }
    }

    /// The state of pipeline `name` in which only some `instances` were planned: those of the
    /// page a first view shows (the others stand as "not planned yet", and nothing may count
    /// them).
    pub(crate) fn of_rows(
        name: &str,
        plan: Plan,
        instances: Vec<InstanceState>,
        index: Index,
    ) -> Self {
        PipelineState {
            whole: false,
            ..PipelineState::new(name, plan, instances, Some(index))
        }
    }

    /// The plan, the rest dropped.
    pub(crate) fn into_plan(self) -> Plan {
        self.plan
    }

    /// Whether every instance was planned: a state of one page's instances shows that page's
    /// rows and cannot count statuses or choose rows by them.
    pub fn is_whole(&self) -> bool {
        self.whole
    }

    /// The record of instance `i` when it is cached, read from the index on first use. A
    /// record that cannot be read then (the index failing, or the result removed since the
    /// state was computed) is none, as a page shows an instance without one, and is logged.
    pub fn record(&self, i: usize) -> Option<&RunRecord> {
        let s = self.instances.get(i)?;
        if s.status != Status::Cached {
            return None;
        }
        let key = s.key.as_deref()?;
        self.records.read[i]
            .get_or_init(|| {
                let index = self.records.index.lock().ok()?;
                match index.as_ref()?.lookup(key) {
                    Ok(record) => record.map(Box::new),
                    Err(e) => {
                        eprintln!("serve: the record of {} cannot be read: {e}", self.label(i));
                        None
                    }
                }
            })
            .as_deref()
    }

    /// The instance with id `id` (a decimal index), or a 404.
    pub fn instance(&self, id: &str) -> Result<&InstanceState, ServeError> {
        id.parse::<usize>()
            .ok()
            .and_then(|i| self.instances.get(i))
            .ok_or_else(|| {
                ServeError::NotFound(format!(
                    "pipeline `{}` has no instance `{id}`; instances are numbered 0 to {}",
                    self.name,
                    self.instances.len().saturating_sub(1)
                ))
            })
    }

    /// Derives the lists the pipeline page shows (axes, varying parameters, metrics) now,
    /// rather than in the first request that shows them (0.05-0.1 s at 100,000 instances).
    pub(crate) fn derive_lists(&self) {
        self.key_params();
        self.metrics();
    }

    /// The sweep axes any instance is bound on, in the pipeline's order.
    pub fn axes(&self) -> Vec<String> {
        self.derived.axes.get_or_init(|| self.find_axes()).clone()
    }

    fn find_axes(&self) -> Vec<String> {
        let bound: BTreeSet<&String> = self
            .plan
            .instances()
            .iter()
            .flat_map(|i| i.binding.keys())
            .collect();
        self.plan
            .spec()
            .axes
            .iter()
            .map(|a| a.name.clone())
            .filter(|a| bound.contains(a))
            .collect()
    }

    /// Parameters whose value differs between instances of one stage (the swept ones), in
    /// name order, leaving out those named like an axis.
    pub(crate) fn key_params(&self) -> Vec<String> {
        self.derived
            .key_params
            .get_or_init(|| self.find_key_params())
            .clone()
    }

    /// The parameters (other than axes) that take more than one value within a stage: each
    /// instance's compared with the first instance's of its stage, side by side (a stage's
    /// instances have the same names, in order), so a sweep's 100,000 instances are read
    /// without writing out or hashing anything.
    fn find_key_params(&self) -> Vec<String> {
        let axes = self.axes();
        let mut first: Vec<(&str, &Params)> = Vec::new();
        let mut varying: BTreeSet<&str> = BTreeSet::new();
        for inst in self.plan.instances() {
            let Some(&(_, of_first)) = first.iter().find(|(stage, _)| *stage == inst.stage) else {
                first.push((&inst.stage, &inst.params));
                continue;
            };
            if std::ptr::eq(of_first, &*inst.params) {
                continue;
            }
            for (name, value) in &inst.params.0 {
                if of_first.0.get(name) != Some(value) {
                    varying.insert(name);
                }
            }
        }
        varying
            .into_iter()
            .filter(|name| !axes.iter().any(|a| a == name))
            .map(str::to_string)
            .collect()
    }

    /// Every metric any cached instance recorded, in name order.
    pub fn metrics(&self) -> Vec<String> {
        self.derived
            .metrics
            .get_or_init(|| {
                let names: BTreeSet<&String> = self
                    .instances
                    .iter()
                    .filter_map(|s| s.metrics.as_ref())
                    .flat_map(|m| m.keys())
                    .collect();
                names.into_iter().cloned().collect()
            })
            .clone()
    }

    /// `stage[axis=v,...]` of instance `i`.
    pub fn label(&self, i: usize) -> String {
        let inst = &self.plan.instances()[i];
        super::html::label(&inst.stage, &inst.binding)
    }

    /// The value of parameter `name` of instance `i`.
    pub fn param(&self, i: usize, name: &str) -> Option<&Value> {
        self.plan.instances()[i].params.0.get(name)
    }
}
