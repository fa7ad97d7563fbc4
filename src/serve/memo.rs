//! Pipeline states kept between requests, so that a page of a 100,000-instance sweep does not
//! plan the whole sweep again when nothing it shows can have changed (planning it took two
//! seconds; a page is read in a fraction of one).
//!
//! A kept state is served again only when everything it was computed from is checked to be
//! the same, on every request:
//! - the pipeline as resolved ([`crate::spec::digest::resolved_digest`] of the file read
//!   again, templates and defaults included);
//! - the index: the same file (device and inode) with no commit by any process since the state
//!   was computed (SQLite's `data_version` on a connection this memo holds, read before the
//!   state was computed, so a commit during the computation also counts); results, failures,
//!   leases and searches' trials are all in the index;
//! - the external data of every instance whose kind fingerprints it (data-set files, weights),
//!   fingerprinted again as `plan` does;
//! - the object store: no object added or removed since (its folders' change times, read
//!   before the state was computed; a file removed from it by hand makes its instance
//!   to-run at once, as `plan` would say);
//! - nothing is running: a state with a running instance is never kept, since its progress
//!   moves without a commit.
//!
//! Anything else computes the state afresh, exactly as a request without the memo did. At most
//! [`KEPT`] states are held (the most recently served), so a server over many large pipelines
//! holds a few of them, not all.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Mutex, PoisonError, TryLockError};

use serde_json::Value;

use super::state::{PipelineState, Status};
use crate::cache::{Cache, Index, IndexHasher};
use crate::exec::freshness::fingerprint;
use crate::kind::Registry;
use crate::spec::digest::resolved_digest;
use crate::spec::PipelineSpec;

/// How many pipeline states are kept.
pub(crate) const KEPT: usize = 4;

/// Which index, and how many commits into it: equal versions mean an unchanged index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IndexVersion {
    dev: u64,
    ino: u64,
    data_version: i64,
}

/// What a state was computed from, besides external data: the pipeline as resolved, the
/// index's version and the object store's change stamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sources {
    spec_digest: String,
    version: IndexVersion,
    store: [u8; 32],
}

/// One kept state and what it was computed from.
struct Kept {
    sources: Sources,
    /// The fingerprint of each instance whose kind has one, by instance index.
    fingerprints: Vec<(usize, Value)>,
    state: Arc<PipelineState>,
    /// When it was last served (a counter), for evicting the oldest.
    used: u64,
}

/// The kept states of one server.
#[derive(Default)]
pub(crate) struct StateMemo {
    /// The connection `data_version` is read on, and the index file it was opened on.
    watch: Mutex<Option<(Index, u64, u64)>>,
    kept: Mutex<(u64, HashMap<String, Kept>)>,
    /// Per pipeline, the lock a request holds while it computes the pipeline's state.
    gates: Mutex<HashMap<String, Arc<Mutex<()>>>>,
}

impl StateMemo {
    /// What a state of `spec` computed now rests on, or `None` when there is no index, or it
    /// or the store cannot be read (then nothing is kept or served from the memo). Read before
    /// the state is computed, so a change during the computation is seen next time.
    pub(crate) fn sources(&self, spec: &PipelineSpec, cache: &Cache) -> Option<Sources> {
        let path = cache.dir().join("index.sqlite");
        let meta = std::fs::metadata(&path).ok()?;
        let (dev, ino) = (meta.dev(), meta.ino());
        let mut watch = self.watch.lock().ok()?;
        if !matches!(&*watch, Some((_, d, i)) if (*d, *i) == (dev, ino)) {
            *watch = Some((cache.index().ok()?, dev, ino));
        }
        let (index, ..) = watch.as_ref()?;
        let version = IndexVersion {
            dev,
            ino,
            data_version: index.data_version().ok()?,
        };
        Some(Sources {
            spec_digest: resolved_digest(spec),
            version,
            store: cache.objects().change_stamp()?,
        })
    }

    /// The lock a request holds while it computes the state of pipeline `name`: one computes,
    /// the others wait and then find what it kept.
    pub(crate) fn gate(&self, name: &str) -> Arc<Mutex<()>> {
        let mut gates = self.gates.lock().unwrap_or_else(PoisonError::into_inner);
        gates.entry(name.to_string()).or_default().clone()
    }

    /// Whether a request is computing the state of pipeline `name` now.
    pub(crate) fn computing(&self, name: &str) -> bool {
        matches!(self.gate(name).try_lock(), Err(TryLockError::WouldBlock))
    }

    /// The kept state of pipeline `name`, if it was computed from `sources` and its external
    /// data is unchanged.
    pub(crate) fn get(
        &self,
        name: &str,
        sources: &Sources,
        cache: &Cache,
        registry: &Registry,
    ) -> Option<Arc<PipelineState>> {
        let (state, fingerprints) = {
            let mut kept = self.kept.lock().ok()?;
            let (clock, states) = &mut *kept;
            let entry = states.get_mut(name)?;
            if entry.sources != *sources {
                return None;
            }
            *clock += 1;
            entry.used = *clock;
            (entry.state.clone(), entry.fingerprints.clone())
        };
        (fingerprints_of(&state, cache, registry)? == fingerprints).then_some(state)
    }

    /// Keeps `state`, computed from `sources`, unless something in it runs.
    pub(crate) fn keep(
        &self,
        name: &str,
        sources: Sources,
        state: Arc<PipelineState>,
        cache: &Cache,
        registry: &Registry,
    ) {
        if state.instances.iter().any(|s| s.status == Status::Running) {
            return;
        }
        let Some(fingerprints) = fingerprints_of(&state, cache, registry) else {
            return;
        };
        let Ok(mut kept) = self.kept.lock() else {
            return;
        };
        let (clock, states) = &mut *kept;
        *clock += 1;
        states.insert(
            name.to_string(),
            Kept {
                sources,
                fingerprints,
                state,
                used: *clock,
            },
        );
        while states.len() > KEPT {
            let oldest = states
                .iter()
                .min_by_key(|(_, k)| k.used)
                .map(|(name, _)| name.clone());
            if let Some(oldest) = oldest {
                states.remove(&oldest);
            }
        }
    }
}

/// The fingerprint of each instance whose kind has one (`None` when one cannot be taken).
fn fingerprints_of(
    state: &PipelineState,
    cache: &Cache,
    registry: &Registry,
) -> Option<Vec<(usize, Value)>> {
    let hasher = IndexHasher::new(cache.index().ok()?);
    let mut out = Vec::new();
    for (i, inst) in state.plan.instances().iter().enumerate() {
        let taken = fingerprint(&state.plan, inst, registry, &hasher).ok()?;
        if !taken.is_null() {
            out.push((i, taken));
        }
    }
    Some(out)
}
