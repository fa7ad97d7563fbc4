//! Walking a pipeline's keys without running anything, for the commands that move results
//! between caches (`pull`, `push`, `export`, `remote status`).
//!
//! A key depends on the digests of its inputs' outputs, so the keys of a pipeline can only be
//! computed in plan order, from records: the walk computes each instance's key once all its
//! inputs have a record, and asks the caller what the record of that key is (the local one, one
//! pulled from the remote, none). An instance whose inputs have no record has no key yet.

use std::collections::BTreeMap;

use super::freshness::{fingerprint, instance_key, outputs_present};
use crate::cache::remote::Remote;
use crate::cache::{Cache, IndexError, IndexHasher, RunRecord};
use crate::graph::{Instance, Plan};
use crate::kind::Registry;

/// One instance as the walk saw it.
#[derive(Debug, Clone)]
pub struct Walked {
    /// Its position in the plan.
    pub index: usize,
    /// `stage[axis=v]`.
    pub label: String,
    /// Its key, when its inputs have records.
    pub key: Option<String>,
    /// The record the caller chose for it.
    pub record: Option<RunRecord>,
}

/// Walks `plan` in order. For an instance whose key can be computed, `visit` gets the
/// instance, its key and the local record (when the local cache holds the result with every
/// object present) and returns the record to use for it, if any.
pub fn walk<E: From<IndexError>>(
    plan: &Plan,
    registry: &Registry,
    cache: &Cache,
    mut visit: impl FnMut(&Instance, &str, Option<RunRecord>) -> Result<Option<RunRecord>, E>,
) -> Result<Vec<Walked>, E> {
    let index = cache.index()?;
    let hasher = IndexHasher::new(cache.index()?);
    let mut records: Vec<Option<RunRecord>> = vec![None; plan.instances().len()];
    let mut out = Vec::with_capacity(plan.instances().len());
    for &i in plan.order() {
        let inst = &plan.instances()[i];
        let ready = inst
            .inputs
            .values()
            .flatten()
            .all(|&u| records[u].is_some());
        let key = if ready {
            fingerprint(plan, inst, registry, &hasher)
                .ok()
                .and_then(|fp| {
                    let upstream = |u: usize| records[u].clone();
                    instance_key(plan, inst, registry, &upstream, fp).map(|k| k.digest())
                })
        } else {
            None
        };
        if let Some(key) = &key {
            let local = index.lookup(key)?.filter(|r| outputs_present(cache, r));
            records[i] = visit(inst, key, local)?;
        }
        out.push(Walked {
            index: i,
            label: inst.label(),
            key,
            record: records[i].clone(),
        });
    }
    Ok(out)
}

/// Where one instance's result is, as `remote status` reports it.
#[derive(Debug, Clone)]
pub(crate) struct RemoteState {
    /// `stage[axis=v]`.
    pub label: String,
    /// Its key, when its inputs have records (local or on the remote).
    pub key: Option<String>,
    /// Whether the local cache holds the result with every object present.
    pub local: bool,
    /// `on remote`, `not on remote`, `rejected: WHY`, or `unknown (...)` for an instance
    /// without a key.
    pub remote: String,
}

/// Walks `plan`, asking `remote` about every instance whose key can be computed. Each
/// instance's record is read once: whether the remote holds it, and the record the walk keys
/// the instances downstream with (the local one first, else the remote's).
pub(crate) fn remote_states(
    plan: &Plan,
    registry: &Registry,
    cache: &Cache,
    remote: &Remote,
) -> Result<Vec<RemoteState>, IndexError> {
    let mut seen: BTreeMap<usize, (bool, String)> = BTreeMap::new();
    let walked = walk(plan, registry, cache, |inst, key, local| {
        let on_remote = remote.lookup(key);
        let state = match &on_remote {
            Ok(Some(_)) => "on remote".to_string(),
            Ok(None) => "not on remote".to_string(),
            Err(e) => format!("rejected: {e}"),
        };
        seen.insert(inst.index, (local.is_some(), state));
        Ok::<_, IndexError>(match (local, on_remote) {
            (Some(local), _) => Some(local),
            (None, Ok(found)) => found,
            (None, Err(_)) => None,
        })
    })?;
    Ok(walked
        .into_iter()
        .map(|w| {
            let (local, remote) = seen.remove(&w.index).unwrap_or_else(|| {
                (
                    false,
                    "unknown (an input is neither local nor on the remote)".to_string(),
                )
            });
            RemoteState {
                label: w.label,
                key: w.key,
                local,
                remote,
            }
        })
        .collect())
}
