//! `asymflow plan`: every instance as cached or to run, and why, without running anything.
//!
//! A planned instance shares its instance's parameters and binding, and the names of its
//! stage and kind with the other instances of its stage: a plan of a 100,000-instance sweep
//! holds one copy of each, not three.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;

use super::freshness::{
    fingerprint, instance_key, outputs_in_store, outputs_present, reasons_after_lookup,
};
use crate::cache::remote::Remote;
use crate::cache::{Cache, IndexHasher, RunRecord};
use crate::graph::Plan;
use crate::kind::Registry;

/// One instance in a plan.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedInstance {
    /// `stage[axis=value,...]`, as printed everywhere.
    pub label: String,
    /// The stage.
    pub stage: Arc<str>,
    /// Its kind.
    pub kind: Arc<str>,
    /// Its parameters as the stage receives them: templates merged, vars and sweep values
    /// interpolated, `--set` applied, defaults filled in (known before it runs).
    pub params: Arc<crate::kind::Params>,
    /// Its sweep binding.
    pub binding: crate::graph::Binding,
    /// The key, when its inputs are known.
    pub key: Option<String>,
    /// `cached`, `on-remote` (the team's remote holds it; `run` pulls it) or `to-run`.
    pub status: &'static str,
    /// Why it runs (empty when cached), in words.
    pub reason: String,
    /// Why it runs, typed (empty when cached, or when its inputs must run first).
    pub reasons: Vec<crate::cache::why::DirtyReason>,
    /// Its recorded result, when cached ([`plan_status`]; [`plan_status_with`] keeps none).
    /// Not serialised; boxed, as most planned instances of a large sweep have none.
    #[serde(skip)]
    pub record: Option<Box<RunRecord>>,
}

/// One `Arc<str>` per distinct name.
#[derive(Default)]
struct Names(HashMap<String, Arc<str>>);

impl Names {
    fn of(&mut self, name: &str) -> Arc<str> {
        if let Some(shared) = self.0.get(name) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(name);
        self.0.insert(name.to_string(), shared.clone());
        shared
    }
}

impl PlannedInstance {
    /// `inst` with its resolved params, to run, no key or reason yet.
    fn of(inst: &crate::graph::Instance, names: &mut Names) -> Self {
        PlannedInstance {
            label: inst.label(),
            stage: names.of(&inst.stage),
            kind: names.of(&inst.kind),
            params: inst.params.clone(),
            binding: inst.binding.clone(),
            key: None,
            status: "to-run",
            reason: String::new(),
            reasons: Vec::new(),
            record: None,
        }
    }
}

/// Whether `planned` cannot run as the pipeline stands (its external data cannot be read).
pub(crate) fn cannot_run(planned: &PlannedInstance) -> bool {
    planned.reason.starts_with(FINGERPRINT_FAILED)
}

const FINGERPRINT_FAILED: &str = "fingerprint failed";

/// Computes the status of every instance of `plan`, in plan order.
pub fn plan_status(
    plan: &Plan,
    registry: &Registry,
    cache: &Cache,
) -> Result<Vec<PlannedInstance>, crate::cache::IndexError> {
    statuses(plan, registry, cache, None, true)
}

/// [`plan_status`] for `asymflow plan`, also asking `remote` about each local miss: a valid
/// record there is `on-remote`, and its outputs key the instances downstream. A planned
/// instance keeps no record (`plan` shows none): a record for every cached instance of a
/// 100,000-instance sweep was most of what `plan` of it held.
pub fn plan_status_with(
    plan: &Plan,
    registry: &Registry,
    cache: &Cache,
    remote: Option<&Remote>,
) -> Result<Vec<PlannedInstance>, crate::cache::IndexError> {
    statuses(plan, registry, cache, remote, false)
}

/// The status of every instance, asking `remote` about local misses when given, each cached
/// planned instance with its record when `keep_records`.
fn statuses(
    plan: &Plan,
    registry: &Registry,
    cache: &Cache,
    remote: Option<&Remote>,
    keep_records: bool,
) -> Result<Vec<PlannedInstance>, crate::cache::IndexError> {
    let index = cache.index()?;
    let _snapshot = index.read_snapshot()?;
    let hasher = IndexHasher::new(cache.index()?);
    let pipeline = &plan.spec().name;
    // Which instances have a result (cached or on the remote), and that result where an
    // instance downstream needs it to compute its key: a sweep of 100,000 leaves has no
    // consumer, and a copy of every record beside the one each planned instance holds doubled
    // what `plan` of it kept in memory.
    let consumed = consumed(plan);
    let mut known = vec![false; plan.instances().len()];
    let mut records: Vec<Option<Box<RunRecord>>> = vec![None; plan.instances().len()];
    let mut out: Vec<Option<PlannedInstance>> = vec![None; plan.instances().len()];
    let mut names = Names::default();
    for &i in plan.order() {
        let inst = &plan.instances()[i];
        let missing: Vec<usize> = inst
            .inputs
            .values()
            .flatten()
            .copied()
            .filter(|&u| !known[u])
            .collect();
        let planned = PlannedInstance::of(inst, &mut names);
        let planned = if let Some(&u) = missing.first() {
            PlannedInstance {
                reason: format!("input {} runs first", plan.instances()[u].label()),
                ..planned
            }
        } else {
            match fingerprint(plan, inst, registry, &hasher) {
                Err(e) => PlannedInstance {
                    reason: format!("{FINGERPRINT_FAILED}: {e}"),
                    ..planned
                },
                Ok(fp) => {
                    let upstream = |u: usize| records[u].as_deref().cloned();
                    let key = instance_key(plan, inst, registry, &upstream, fp)
                        .expect("inputs are known and the kind is registered");
                    let digest = key.digest();
                    // Whether a result is recorded, and then whether its outputs are in the
                    // store; the record itself only where it is kept or keys an instance
                    // downstream (otherwise its outputs are all that is read).
                    let (present, record) = if keep_records || consumed[i] {
                        match index.lookup(&digest)? {
                            Some(record) => (
                                Some(outputs_present(cache, &record)),
                                Some(Box::new(record)),
                            ),
                            None => (None, None),
                        }
                    } else {
                        let outputs = index.outputs_of(&digest)?;
                        (outputs.map(|o| outputs_in_store(cache, &o)), None)
                    };
                    match present {
                        Some(true) => {
                            known[i] = true;
                            let record = match (consumed[i], keep_records, record) {
                                (true, true, Some(record)) => {
                                    records[i] = Some(record.clone());
                                    Some(record)
                                }
                                (true, false, record) => {
                                    records[i] = record;
                                    None
                                }
                                (_, keep, record) => record.filter(|_| keep),
                            };
                            PlannedInstance {
                                key: Some(digest),
                                status: "cached",
                                record,
                                ..planned
                            }
                        }
                        _ => match remote.map(|r| r.lookup(&digest)).transpose() {
                            Err(e) => PlannedInstance {
                                key: Some(digest),
                                reason: format!("warning: the remote's record is not used ({e}); run computes it"),
                                ..planned
                            },
                            Ok(Some(Some(record))) => {
                                known[i] = true;
                                records[i] = Some(Box::new(record));
                                PlannedInstance {
                                    key: Some(digest),
                                    status: "on-remote",
                                    reason: "on the team's remote: `run` pulls it".into(),
                                    ..planned
                                }
                            }
                            Ok(_) => {
                                let reasons = reasons_after_lookup(
                                    &index,
                                    pipeline,
                                    inst,
                                    &key,
                                    &digest,
                                    present == Some(false),
                                );
                                PlannedInstance {
                                    key: Some(digest),
                                    reason: crate::cache::why::join(&reasons),
                                    reasons,
                                    ..planned
                                }
                            }
                        },
                    }
                }
            }
        };
        out[i] = Some(planned);
    }
    Ok(out
        .into_iter()
        .map(|p| p.expect("every instance planned"))
        .collect())
}

/// Whether each instance is an input of another.
fn consumed(plan: &Plan) -> Vec<bool> {
    let mut consumed = vec![false; plan.instances().len()];
    for inst in plan.instances() {
        for &u in inst.inputs.values().flatten() {
            consumed[u] = true;
        }
    }
    consumed
}
