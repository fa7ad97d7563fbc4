//! `asymflow plan`: every instance as cached or to run, and why, without running anything.
//!
//! A planned instance shares its instance's parameters and binding, and the names of its
//! stage and kind with the other instances of its stage: a plan of a 100,000-instance sweep
//! holds one copy of each, not three.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::freshness::{fingerprint, instance_key, reasons_after_lookup};
use crate::cache::remote::Remote;
use crate::cache::{Cache, Index, IndexError, IndexHasher, Presence, RunRecord, StageKey};
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
) -> Result<Vec<PlannedInstance>, IndexError> {
    whole(statuses(plan, registry, cache, None, true, None))
}

/// [`plan_status`] for `asymflow plan`, also asking `remote` about each local miss: a valid
/// record there is `on-remote`, and its outputs key the instances downstream. A planned
/// instance keeps no record (`plan` shows none): a record for every cached instance of a
/// 100,000-instance sweep was most of what `plan` of it held.
pub(crate) fn plan_status_with(
    plan: &Plan,
    registry: &Registry,
    cache: &Cache,
    remote: Option<&Remote>,
) -> Result<Vec<PlannedInstance>, IndexError> {
    whole(statuses(plan, registry, cache, remote, false, None))
}

/// [`plan_status_with`] of the instances `wanted` and those upstream of them, without a remote;
/// every other instance is `None`. An instance's status rests only on the instances upstream of
/// it, so each is planned exactly as the whole plan plans it: the dashboard shows the first page
/// of a 100,000-instance sweep from the 200 instances on it.
pub(crate) fn plan_status_of(
    plan: &Plan,
    registry: &Registry,
    cache: &Cache,
    wanted: &[usize],
) -> Result<Vec<Option<PlannedInstance>>, IndexError> {
    let only = with_upstream(plan, wanted);
    statuses(plan, registry, cache, None, false, Some(&only))
}

/// Every instance planned, as it is when `statuses` was given no subset.
fn whole(
    planned: Result<Vec<Option<PlannedInstance>>, IndexError>,
) -> Result<Vec<PlannedInstance>, IndexError> {
    Ok(planned?
        .into_iter()
        .map(|p| p.expect("every instance planned"))
        .collect())
}

/// Marks `wanted` and every instance upstream of them.
fn with_upstream(plan: &Plan, wanted: &[usize]) -> Vec<bool> {
    let mut marked = vec![false; plan.instances().len()];
    let mut to_mark = wanted.to_vec();
    while let Some(i) = to_mark.pop() {
        if !std::mem::replace(&mut marked[i], true) {
            to_mark.extend(plan.instances()[i].inputs.values().flatten());
        }
    }
    marked
}

/// The status of every instance (of those marked in `only`, when given; the others are `None`),
/// asking `remote` about local misses when given, each cached planned instance with its record
/// when `keep_records`.
///
/// Instances are planned in waves: a wave holds the instances whose inputs were all planned in
/// earlier waves, so its keys can all be computed before any is looked up, and the index is
/// then read in key order. Keys are blake3 digests, so in plan order every lookup lands on a
/// page of the index far from the last; in key order consecutive lookups share pages, and a
/// 100,000-instance sweep reads each page once instead of once per instance.
fn statuses(
    plan: &Plan,
    registry: &Registry,
    cache: &Cache,
    remote: Option<&Remote>,
    keep_records: bool,
    only: Option<&[bool]>,
) -> Result<Vec<Option<PlannedInstance>>, IndexError> {
    let index = cache.index()?;
    let _snapshot = index.read_snapshot()?;
    let hasher = IndexHasher::new(cache.index()?);
    let planner = Planner {
        plan,
        registry,
        cache,
        remote,
        keep_records,
        index: &index,
        hasher: &hasher,
        consumed: consumed(plan),
    };
    let mut so_far = SoFar::new(plan.instances().len());
    for wave in waves(plan, only) {
        let keyings: Vec<Keying> = wave.iter().map(|&i| planner.keying(i, &so_far)).collect();
        let lookups = planner.look_up_in_key_order(&wave, &keyings)?;
        for ((&i, keying), lookup) in wave.iter().zip(keyings).zip(lookups) {
            let planned = planner.decide(i, keying, lookup, &mut so_far)?;
            so_far.out[i] = Some(planned);
        }
    }
    Ok(so_far.out)
}

/// The instances (those marked in `only`, when given) in waves: each instance comes one wave
/// after the latest of its inputs, in plan order within a wave.
fn waves(plan: &Plan, only: Option<&[bool]>) -> Vec<Vec<usize>> {
    let mut level = vec![0usize; plan.instances().len()];
    let mut waves: Vec<Vec<usize>> = Vec::new();
    for &i in plan.order() {
        if only.is_some_and(|only| !only[i]) {
            continue;
        }
        let inst = &plan.instances()[i];
        let at = inst
            .inputs
            .values()
            .flatten()
            .map(|&u| level[u] + 1)
            .max()
            .unwrap_or(0);
        level[i] = at;
        if waves.len() <= at {
            waves.resize_with(at + 1, Vec::new);
        }
        waves[at].push(i);
    }
    waves
}

/// What one planning pass reads from.
struct Planner<'a> {
    plan: &'a Plan,
    registry: &'a Registry,
    cache: &'a Cache,
    remote: Option<&'a Remote>,
    keep_records: bool,
    index: &'a Index,
    hasher: &'a IndexHasher,
    /// Whether each instance is an input of another.
    consumed: Vec<bool>,
}

/// What the planning knows so far, instance by instance.
struct SoFar {
    /// Which instances have a result (cached or on the remote).
    known: Vec<bool>,
    /// That result, where an instance downstream needs it to compute its key: a sweep of
    /// 100,000 leaves has no consumer, and a copy of every record beside the one each planned
    /// instance holds doubled what `plan` of it kept in memory.
    records: Vec<Option<Box<RunRecord>>>,
    /// The planned instances.
    out: Vec<Option<PlannedInstance>>,
    names: Names,
}

impl SoFar {
    fn new(n: usize) -> Self {
        SoFar {
            known: vec![false; n],
            records: vec![None; n],
            out: vec![None; n],
            names: Names::default(),
        }
    }
}

/// An instance's key, or why it has none yet.
enum Keying {
    /// No key: an input runs first, or the external data cannot be fingerprinted.
    Unkeyed(String),
    /// The key's digest, and the fingerprint it was made with (a miss makes the key again to
    /// say why it runs; a wave holds digests, not keys).
    Keyed { digest: String, fingerprint: Value },
}

/// What the index holds for a key.
struct Lookup {
    /// Whether a result is recorded and then whether its outputs are in the store.
    present: Option<bool>,
    /// The record, where it is kept or keys an instance downstream.
    record: Option<Box<RunRecord>>,
}

impl Planner<'_> {
    /// Instance `i`'s key, its inputs having been planned.
    fn keying(&self, i: usize, so_far: &SoFar) -> Keying {
        let inst = &self.plan.instances()[i];
        let missing = inst.inputs.values().flatten().find(|&&u| !so_far.known[u]);
        if let Some(&u) = missing {
            return Keying::Unkeyed(format!(
                "input {} runs first",
                self.plan.instances()[u].label()
            ));
        }
        match fingerprint(self.plan, inst, self.registry, self.hasher) {
            Err(e) => Keying::Unkeyed(format!("{FINGERPRINT_FAILED}: {e}")),
            Ok(fingerprint) => {
                let digest = self.key(i, so_far, fingerprint.clone()).digest();
                Keying::Keyed {
                    digest,
                    fingerprint,
                }
            }
        }
    }

    /// Instance `i`'s key, its inputs known.
    fn key(&self, i: usize, so_far: &SoFar, fingerprint: Value) -> StageKey {
        let upstream = |u: usize| so_far.records[u].as_deref().cloned();
        instance_key(
            self.plan,
            &self.plan.instances()[i],
            self.registry,
            &upstream,
            fingerprint,
        )
        .expect("inputs are known and the kind is registered")
    }

    /// The index's answer for each keyed instance of `wave` (`None` for the others): records
    /// one by one where they are needed, in key order, the outputs of the others many keys to
    /// a query, and whether their outputs are in the store, asked of it in one pass.
    fn look_up_in_key_order(
        &self,
        wave: &[usize],
        keyings: &[Keying],
    ) -> Result<Vec<Option<Lookup>>, IndexError> {
        let mut keyed: Vec<(&str, usize)> = keyings
            .iter()
            .enumerate()
            .filter_map(|(at, k)| match k {
                Keying::Keyed { digest, .. } => Some((digest.as_str(), at)),
                Keying::Unkeyed(_) => None,
            })
            .collect();
        keyed.sort_unstable();
        let mut found: Vec<Option<Lookup>> = keyings.iter().map(|_| None).collect();
        for &(_, at) in &keyed {
            found[at] = Some(Lookup {
                present: None,
                record: None,
            });
        }
        let (with_record, outputs_only): (Vec<_>, Vec<_>) = keyed
            .into_iter()
            .partition(|&(_, at)| self.keep_records || self.consumed[wave[at]]);
        let mut present = self.cache.objects().presence();
        for (digest, at) in with_record {
            if let Some(record) = self.index.lookup(digest)? {
                found[at] = Some(Lookup {
                    present: Some(record.outputs.values().all(|o| present(&o.digest))),
                    record: Some(Box::new(record)),
                });
            }
        }
        for (at, present) in held_and_present(self.index, &mut present, &outputs_only)? {
            found[at] = Some(Lookup {
                present: Some(present),
                record: None,
            });
        }
        Ok(found)
    }

    /// Instance `i` planned from its key and the index's answer, asking the remote about a
    /// miss.
    fn decide(
        &self,
        i: usize,
        keying: Keying,
        lookup: Option<Lookup>,
        so_far: &mut SoFar,
    ) -> Result<PlannedInstance, IndexError> {
        let inst = &self.plan.instances()[i];
        let planned = PlannedInstance::of(inst, &mut so_far.names);
        let (digest, fingerprint) = match keying {
            Keying::Unkeyed(reason) => return Ok(PlannedInstance { reason, ..planned }),
            Keying::Keyed {
                digest,
                fingerprint,
            } => (digest, fingerprint),
        };
        let Lookup { present, record } = lookup.expect("a keyed instance was looked up");
        if present == Some(true) {
            so_far.known[i] = true;
            let record = match (self.consumed[i], self.keep_records, record) {
                (true, true, Some(record)) => {
                    so_far.records[i] = Some(record.clone());
                    Some(record)
                }
                (true, false, record) => {
                    so_far.records[i] = record;
                    None
                }
                (_, keep, record) => record.filter(|_| keep),
            };
            return Ok(PlannedInstance {
                key: Some(digest),
                status: "cached",
                record,
                ..planned
            });
        }
        Ok(match self.remote.map(|r| r.lookup(&digest)).transpose() {
            Err(e) => PlannedInstance {
                key: Some(digest),
                reason: format!("warning: the remote's record is not used ({e}); run computes it"),
                ..planned
            },
            Ok(Some(Some(record))) => {
                so_far.known[i] = true;
                so_far.records[i] = Some(Box::new(record));
                PlannedInstance {
                    key: Some(digest),
                    status: "on-remote",
                    reason: "on the team's remote: `run` pulls it".into(),
                    ..planned
                }
            }
            Ok(_) => {
                let key = self.key(i, so_far, fingerprint);
                let reasons = reasons_after_lookup(
                    self.index,
                    &self.plan.spec().name,
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
        })
    }
}

/// For each of `keyed` (digests with positions) whose result `index` holds, its position and
/// whether the store holds every one of its outputs (asked in `present`, the wave's pass over
/// the store).
fn held_and_present(
    index: &Index,
    present: &mut Presence<'_>,
    keyed: &[(&str, usize)],
) -> Result<Vec<(usize, bool)>, IndexError> {
    let digests: Vec<&str> = keyed.iter().map(|&(digest, _)| digest).collect();
    let mut held = Vec::with_capacity(keyed.len());
    index.outputs_of_each(&digests, |pos, outputs| {
        let all = outputs.values().all(|o| present(&o.digest));
        held.push((keyed[pos].1, all));
    })?;
    Ok(held)
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
