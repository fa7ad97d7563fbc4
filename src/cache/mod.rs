//! The cache: stage keys, the SQLite index, the content-addressed object store, and the
//! explanations of why an instance is dirty.
//!
//! Modelled on Bazel's action cache + content-addressed store: [`key`] says what a result
//! depends on, [`store`] maps keys to output digests and metrics, [`objects`] holds the bytes,
//! [`why`] diffs keys so a user sees what changed. [`remote`] holds the same two things
//! (action cache and objects) on a shared folder or S3, verified on every download.

pub mod key;
pub mod objects;
pub mod remote;
pub mod store;
pub mod why;

use std::path::{Path, PathBuf};

pub use key::{InputKey, StageKey, KEY_FORMAT};
pub use objects::{ObjectError, ObjectStore};
pub use store::{Index, IndexError, Lease, OutputRef, RunRecord};

/// A cache folder: `index.sqlite`, `objects/`, `tmp/` (stage scratch), `quarantine/`.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
    objects: ObjectStore,
}

impl Cache {
    /// The cache in `dir` (created on first use).
    pub fn new(dir: &Path) -> Self {
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        Cache {
            objects: ObjectStore::new(&dir),
            dir,
        }
    }

    /// The cache folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The object store.
    pub fn objects(&self) -> &ObjectStore {
        &self.objects
    }

    /// Opens a connection to the index (one per thread).
    pub fn index(&self) -> Result<Index, IndexError> {
        Index::open(&self.dir)
    }

    /// Scratch space for running stages, on the same file system as the objects so outputs
    /// are moved in, not copied.
    pub fn tmp_dir(&self) -> PathBuf {
        self.dir.join("tmp")
    }
}

/// Memoised file hashing through the index, for data-set fingerprints.
pub struct IndexHasher {
    index: std::sync::Mutex<Index>,
}

impl IndexHasher {
    /// A hasher remembering into `index`.
    pub fn new(index: Index) -> Self {
        IndexHasher {
            index: std::sync::Mutex::new(index),
        }
    }
}

impl crate::kind::FileHasher for IndexHasher {
    fn hash_file(&self, path: &Path) -> std::io::Result<String> {
        let meta = std::fs::metadata(path)?;
        let mtime_ns = meta
            .modified()?
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        let key = path.to_string_lossy();
        let lock = || self.index.lock().unwrap_or_else(|p| p.into_inner());
        if let Ok(Some(digest)) = lock().remembered_hash(&key, meta.len(), mtime_ns) {
            return Ok(digest);
        }
        // Hash without holding the lock, so callers can hash files in parallel.
        let (digest, _) = objects::hash_file(path)?;
        let _ = lock().remember_hash(&key, meta.len(), mtime_ns, &digest);
        Ok(digest)
    }
}
