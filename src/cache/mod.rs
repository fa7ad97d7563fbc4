//! The cache: stage keys, the SQLite index, the content-addressed object store, and the
//! explanations of why an instance is dirty.
//!
//! Modelled on Bazel's action cache + content-addressed store: [`key`] says what a result
//! depends on; the SQLite index ([`store`]) holds the action cache ([`results`]: keys to
//! output digests and metrics), the [`leases`] of running work and the file-hash [`memo`];
//! [`objects`] holds the bytes behind the [`ObjectStore`] trait; [`why`] diffs keys so a user
//! sees what changed; nothing outside `cache/` builds an object's path. [`remote`] holds the
//! same two things (action cache and objects) on a shared folder or S3, verified on every
//! download.

pub mod gc;
pub mod key;
pub mod leases;
pub mod lock;
pub mod memo;
pub mod objects;
pub mod provenance;
pub mod remote;
pub mod results;
mod shard_check;
mod shard_dirs;
pub mod store;
pub mod verify;
pub mod why;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use key::{short_key, KEY_FORMAT};

pub(crate) use key::{InputKey, StageKey};
pub(crate) use leases::{ExternalJob, Heartbeat, Lease};
pub(crate) use lock::{CacheLock, LockError, LockMode};
pub(crate) use memo::IndexHasher;
pub(crate) use objects::{LocalObjectStore, ObjectError};
pub use objects::{ObjectStore, Presence};
pub use provenance::Provenance;
pub use results::{OutputRef, RunRecord};
pub use store::now;
pub(crate) use store::{host_name, Index, IndexError};

/// A cache folder: `index.sqlite`, `objects/`, `tmp/` (stage scratch), `quarantine/`.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
    objects: Arc<dyn ObjectStore>,
}

impl Cache {
    /// The cache in `dir` (created on first use), its objects in the local store.
    pub fn new(dir: &Path) -> Self {
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        Cache {
            objects: Arc::new(LocalObjectStore::new(&dir)),
            dir,
        }
    }

    /// The cache folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The object store.
    pub fn objects(&self) -> &dyn ObjectStore {
        self.objects.as_ref()
    }

    /// Takes the cache-wide lock: [`LockMode::Shared`] for running work, exclusive for
    /// `cache gc` (see [`lock`]).
    pub fn lock(&self, mode: LockMode) -> Result<CacheLock, LockError> {
        CacheLock::acquire(&self.dir, mode)
    }

    /// Opens a connection to the index (one per thread).
    pub fn index(&self) -> Result<Index, IndexError> {
        Index::open(&self.dir)
    }

    /// Scratch space for running stages, on the same file system as the objects so outputs
    /// are moved in, not copied.
    pub(crate) fn tmp_dir(&self) -> PathBuf {
        self.dir.join("tmp")
    }
}
