//! Freshness: the key of an instance and whether the cache already holds its result.
//!
//! The rules, in order (the first that applies decides):
//! 1. An instance whose inputs are not all known (an upstream instance must run first) is
//!    dirty: its key cannot be computed until those inputs exist.
//! 2. Otherwise its key is computed ([`instance_key`]); a successful run recorded under that key
//!    whose output objects are all present is a hit ("cached").
//! 3. Otherwise it is dirty, and the reasons are the differences between the new key and the
//!    closest key the cache holds a result of for the same instance (pipeline, stage and
//!    binding; fewest differing fields, the newest among equals), so a one-off `--set` run
//!    does not make every later plan list its change; with no such result, the key it last
//!    ran with; "new" when there is none; "forgotten" when this very key's result was
//!    forgotten; "outputs missing from the object store" when the run is recorded but objects
//!    are gone.
//!
//! Object content is verified when an input is read by a stage that runs (and by `cache
//! verify`), not on every freshness check, so a no-op run stays in milliseconds.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::cache::why::DirtyReason;
use crate::cache::{key::canonical, Cache, Index, InputKey, RunRecord, StageKey, KEY_FORMAT};
use crate::graph::{Instance, Plan};
use crate::kind::{FingerprintEnv, Registry, StageError, LOG_OUTPUT};

/// The key of `inst`, given the records of its upstream instances and its fingerprint.
pub(crate) fn instance_key(
    plan: &Plan,
    inst: &Instance,
    registry: &Registry,
    upstream: &dyn Fn(usize) -> Option<RunRecord>,
    fingerprint: Value,
) -> Option<StageKey> {
    let stage = registry.get(&inst.kind)?;
    let params = inst
        .params
        .0
        .iter()
        .filter(|(name, value)| stage.keyed_value(name, value))
        .map(|(k, v)| (k.clone(), canonical(v)))
        .collect();
    let mut inputs = BTreeMap::new();
    for (slot, ups) in &inst.inputs {
        let mut keys = Vec::with_capacity(ups.len());
        for &u in ups {
            let record = upstream(u)?;
            let outputs = record
                .outputs
                .iter()
                .filter(|(name, _)| name.as_str() != LOG_OUTPUT)
                .map(|(name, o)| (name.clone(), o.digest.clone()))
                .collect();
            let up = &plan.instances()[u];
            let mut identity = if inst.gathers {
                serde_json::json!({ "stage": up.stage, "binding": up.binding })
            } else {
                Value::Null
            };
            if stage.reads_draws() {
                let draws: Vec<String> = plan
                    .draws(u, registry)
                    .into_iter()
                    .map(|d| d.instance)
                    .collect();
                identity = serde_json::json!({ "identity": identity, "draws": draws });
            }
            keys.push(InputKey { outputs, identity });
        }
        inputs.insert(slot.clone(), keys);
    }
    Some(StageKey {
        format: KEY_FORMAT,
        kind: inst.kind.clone(),
        impl_version: stage.impl_version(),
        params,
        inputs,
        fingerprint,
    })
}

/// The fingerprint of external content `inst` reads (null for most kinds).
pub fn fingerprint(
    plan: &Plan,
    inst: &Instance,
    registry: &Registry,
    hasher: &dyn crate::kind::FileHasher,
) -> Result<Value, StageError> {
    let Some(stage) = registry.get(&inst.kind) else {
        return Ok(Value::Null);
    };
    let env = FingerprintEnv {
        project_dir: &plan.spec().project_dir,
        hashes: hasher,
    };
    Ok(stage
        .fingerprint(&inst.params, &env)?
        .map(|v| canonical(&v))
        .unwrap_or(Value::Null))
}

/// Whether every output object of `record` is present in the store.
pub(crate) fn outputs_present(cache: &Cache, record: &RunRecord) -> bool {
    record
        .outputs
        .values()
        .all(|o| cache.objects().contains(&o.digest))
}

/// The binding of an instance as stored in the index (canonical JSON).
pub(crate) fn binding_json(inst: &Instance) -> String {
    serde_json::to_string(&inst.binding).expect("bindings serialise")
}

/// Why `inst` must run, given its new key and that key's digest (hashed once by the caller:
/// `plan` of 10,000 instances spent a tenth of its time hashing each key twice).
pub(crate) fn dirty_reasons(
    index: &Index,
    cache: &Cache,
    pipeline: &str,
    inst: &Instance,
    key: &StageKey,
    digest: &str,
) -> Vec<DirtyReason> {
    let outputs_missing = match index.lookup(digest) {
        Ok(record) => record.is_some_and(|record| !outputs_present(cache, &record)),
        Err(e) => return index_error(e),
    };
    reasons_after_lookup(index, pipeline, inst, key, digest, outputs_missing)
}

fn index_error(e: crate::cache::IndexError) -> Vec<DirtyReason> {
    vec![DirtyReason::IndexError {
        message: e.to_string(),
    }]
}

/// [`dirty_reasons`] where the caller has looked `digest` up already (`plan` does, and a
/// second lookup per instance was a sixth of its queries): `outputs_missing` when a
/// successful run is recorded under it whose outputs are not all in the store.
pub(crate) fn reasons_after_lookup(
    index: &Index,
    pipeline: &str,
    inst: &Instance,
    key: &StageKey,
    digest: &str,
    outputs_missing: bool,
) -> Vec<DirtyReason> {
    debug_assert_eq!(digest, key.digest());
    if outputs_missing {
        return vec![DirtyReason::OutputsMissing];
    }
    match index.failure(digest) {
        Ok(Some(error)) => {
            let first = error.lines().next().unwrap_or("").to_string();
            return vec![DirtyReason::LastRunFailed { error: first }];
        }
        Ok(None) => {}
        Err(e) => return index_error(e),
    }
    match index.was_forgotten(digest) {
        Ok(true) => return vec![DirtyReason::Forgotten],
        Ok(false) => {}
        Err(e) => return index_error(e),
    }
    let binding = binding_json(inst);
    match closest_cached(index, pipeline, &inst.stage, &binding, key) {
        Ok(Some(reasons)) => return reasons,
        Ok(None) => {}
        Err(e) => return index_error(e),
    }
    let last = match index.last_key(pipeline, &inst.stage, &binding) {
        Ok(Some(last)) => last,
        Ok(None) => return vec![DirtyReason::New],
        Err(e) => return index_error(e),
    };
    let old = match index.key_json(&last) {
        Ok(Some(json)) => serde_json::from_str::<StageKey>(&json).ok(),
        Ok(None) => None,
        Err(e) => return index_error(e),
    };
    let Some(old) = old else {
        return vec![DirtyReason::New];
    };
    let reasons = crate::cache::why::explain(&old, key);
    if reasons.is_empty() {
        vec![DirtyReason::ResultGone]
    } else {
        reasons
    }
}

/// How many of an instance's newest results [`closest_cached`] compares (an instance rarely
/// has more variants than this; the newest are the likeliest to be close).
const CLOSEST_OF: usize = 64;

/// The reasons against the cached result of this instance whose key differs from `key` in
/// the fewest fields (the newest among equals); `None` when the instance has none.
fn closest_cached(
    index: &Index,
    pipeline: &str,
    stage: &str,
    binding: &str,
    key: &StageKey,
) -> Result<Option<Vec<DirtyReason>>, crate::cache::IndexError> {
    let results = index.instance_results(pipeline, stage, binding, CLOSEST_OF)?;
    Ok(results
        .iter()
        .filter_map(|(_, json)| serde_json::from_str::<StageKey>(json).ok())
        .map(|old| crate::cache::why::explain(&old, key))
        .filter(|reasons| !reasons.is_empty())
        .min_by_key(Vec::len))
}
