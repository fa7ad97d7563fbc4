//! The file-hash memo: data-set fingerprints hash every file of a data set, so the index
//! remembers each file's content hash against its metadata and rehashes only what changed.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{params, OptionalExtension};

use super::objects::hash_file;
use super::store::{Index, IndexError};

impl Index {
    /// A remembered content hash of `path`, if its size and mtime are unchanged.
    pub fn remembered_hash(
        &self,
        path: &str,
        size: u64,
        mtime_ns: i64,
    ) -> Result<Option<String>, IndexError> {
        Ok(self
            .conn
            .query_row(
                "SELECT digest FROM file_hashes WHERE path = ?1 AND size = ?2 AND mtime_ns = ?3",
                params![path, size as i64, mtime_ns],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// Remembers the content hash of `path` at this size and mtime.
    pub fn remember_hash(
        &self,
        path: &str,
        size: u64,
        mtime_ns: i64,
        digest: &str,
    ) -> Result<(), IndexError> {
        self.conn.execute(
            "INSERT OR REPLACE INTO file_hashes (path, size, mtime_ns, digest) VALUES (?1, ?2, ?3, ?4)",
            params![path, size as i64, mtime_ns, digest],
        )?;
        Ok(())
    }
}

/// Memoised file hashing through the index, for data-set fingerprints.
pub struct IndexHasher {
    index: Mutex<Index>,
}

impl IndexHasher {
    /// A hasher remembering into `index`.
    pub fn new(index: Index) -> Self {
        IndexHasher {
            index: Mutex::new(index),
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
        let (digest, _) = hash_file(path)?;
        let _ = lock().remember_hash(&key, meta.len(), mtime_ns, &digest);
        Ok(digest)
    }
}
