//! `asymflow plan`: every instance as cached or to run, and why, without running anything.

use std::collections::BTreeMap;

use serde::Serialize;

use super::freshness::{dirty_reasons, fingerprint, instance_key, outputs_present};
use crate::cache::remote::Remote;
use crate::cache::{Cache, IndexHasher, RunRecord};
use crate::graph::Plan;
use crate::kind::Registry;

/// One instance in a plan.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedInstance {
    /// The stage.
    pub stage: String,
    /// Its sweep binding.
    pub binding: BTreeMap<String, serde_json::Value>,
    /// The key, when its inputs are known.
    pub key: Option<String>,
    /// `cached`, `on-remote` (the team's remote holds it; `run` pulls it) or `to-run`.
    pub status: &'static str,
    /// Why it runs (empty when cached).
    pub reason: String,
    /// Its recorded result, when cached (not serialised).
    #[serde(skip)]
    pub record: Option<RunRecord>,
}

/// Computes the status of every instance of `plan`, in plan order.
pub fn plan_status(
    plan: &Plan,
    registry: &Registry,
    cache: &Cache,
) -> Result<Vec<PlannedInstance>, crate::cache::IndexError> {
    plan_status_with(plan, registry, cache, None)
}

/// [`plan_status`], also asking `remote` about each local miss: a valid record there is
/// `on-remote`, and its outputs key the instances downstream.
pub fn plan_status_with(
    plan: &Plan,
    registry: &Registry,
    cache: &Cache,
    remote: Option<&Remote>,
) -> Result<Vec<PlannedInstance>, crate::cache::IndexError> {
    let index = cache.index()?;
    let hasher = IndexHasher::new(cache.index()?);
    let pipeline = &plan.spec().name;
    let mut records: Vec<Option<RunRecord>> = vec![None; plan.instances().len()];
    let mut out: Vec<Option<PlannedInstance>> = vec![None; plan.instances().len()];
    for &i in plan.order() {
        let inst = &plan.instances()[i];
        let missing: Vec<usize> = inst
            .inputs
            .values()
            .flatten()
            .copied()
            .filter(|&u| records[u].is_none())
            .collect();
        let planned = if let Some(&u) = missing.first() {
            PlannedInstance {
                stage: inst.stage.clone(),
                binding: inst.binding.clone(),
                key: None,
                status: "to-run",
                reason: format!(
                    "input {} will be computed first",
                    plan.instances()[u].label()
                ),
                record: None,
            }
        } else {
            match fingerprint(plan, inst, registry, &hasher) {
                Err(e) => PlannedInstance {
                    stage: inst.stage.clone(),
                    binding: inst.binding.clone(),
                    key: None,
                    status: "to-run",
                    reason: format!("fingerprint failed: {e}"),
                    record: None,
                },
                Ok(fp) => {
                    let upstream = |u: usize| records[u].clone();
                    let key = instance_key(plan, inst, registry, &upstream, fp)
                        .expect("inputs are known and the kind is registered");
                    let digest = key.digest();
                    match index.lookup(&digest)? {
                        Some(record) if outputs_present(cache, &record) => {
                            records[i] = Some(record.clone());
                            PlannedInstance {
                                stage: inst.stage.clone(),
                                binding: inst.binding.clone(),
                                key: Some(digest),
                                status: "cached",
                                reason: String::new(),
                                record: Some(record),
                            }
                        }
                        _ => match remote.and_then(|r| r.lookup(&digest).ok().flatten()) {
                            Some(record) => {
                                records[i] = Some(record);
                                PlannedInstance {
                                    stage: inst.stage.clone(),
                                    binding: inst.binding.clone(),
                                    key: Some(digest),
                                    status: "on-remote",
                                    reason: "on the team's remote: `run` pulls it".into(),
                                    record: None,
                                }
                            }
                            None => PlannedInstance {
                                stage: inst.stage.clone(),
                                binding: inst.binding.clone(),
                                reason: dirty_reasons(&index, cache, pipeline, inst, &key)
                                    .join("; "),
                                key: Some(digest),
                                status: "to-run",
                                record: None,
                            },
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
