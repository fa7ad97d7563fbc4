//! The file-hash memo: data-set fingerprints hash every file of a data set, so the index
//! remembers each file's content hash against its metadata and rehashes only what changed.
//!
//! The remembered stamp is what git's index compares: size, mtime, ctime, device and inode.
//! A rewrite at the same size whose mtime is put back (`touch -r`) still changes the ctime,
//! which no user can set, and a file replaced by another (a rename over it) changes the inode.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Mutex;

use rusqlite::{params, OptionalExtension};

use super::objects::hash_file;
use super::store::{Index, IndexError};

/// The metadata a remembered hash is valid for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileStamp {
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Status-change time, nanoseconds since the epoch.
    pub ctime_ns: i64,
    /// The device holding the file.
    pub dev: u64,
    /// The inode.
    pub ino: u64,
}

impl FileStamp {
    /// The stamp of `meta`.
    pub fn of(meta: &std::fs::Metadata) -> FileStamp {
        FileStamp {
            size: meta.len(),
            mtime_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
            ctime_ns: meta.ctime() * 1_000_000_000 + meta.ctime_nsec(),
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }
}

impl Index {
    /// A remembered content hash of `path`, if its stamp is unchanged.
    pub(crate) fn remembered_hash(
        &self,
        path: &str,
        stamp: &FileStamp,
    ) -> Result<Option<String>, IndexError> {
        Ok(self
            .conn
            .query_row(
                "SELECT digest FROM file_hashes WHERE path = ?1 AND size = ?2 AND mtime_ns = ?3
                 AND ctime_ns = ?4 AND dev = ?5 AND ino = ?6",
                params![
                    path,
                    stamp.size as i64,
                    stamp.mtime_ns,
                    stamp.ctime_ns,
                    stamp.dev as i64,
                    stamp.ino as i64
                ],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// Remembers the content hash of `path` at this stamp.
    pub(crate) fn remember_hash(
        &self,
        path: &str,
        stamp: &FileStamp,
        digest: &str,
    ) -> Result<(), IndexError> {
        self.conn.execute(
            "INSERT OR REPLACE INTO file_hashes (path, size, mtime_ns, ctime_ns, dev, ino, digest)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                path,
                stamp.size as i64,
                stamp.mtime_ns,
                stamp.ctime_ns,
                stamp.dev as i64,
                stamp.ino as i64,
                digest
            ],
        )?;
        Ok(())
    }
}

/// Memoised file hashing through the index, for data-set fingerprints.
pub(crate) struct IndexHasher {
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
        let stamp = FileStamp::of(&std::fs::metadata(path)?);
        let key = path.to_string_lossy();
        let lock = || self.index.lock().unwrap_or_else(|p| p.into_inner());
        if let Ok(Some(digest)) = lock().remembered_hash(&key, &stamp) {
            return Ok(digest);
        }
        // Hash without holding the lock, so callers can hash files in parallel.
        let (digest, _) = hash_file(path)?;
        // A file changed while it was hashed is not remembered: the digest may mix versions.
        if std::fs::metadata(path).is_ok_and(|m| FileStamp::of(&m) == stamp) {
            let _ = lock().remember_hash(&key, &stamp, &digest);
        }
        Ok(digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::FileHasher;

    #[test]
    fn issue11_memo_sees_a_same_size_rewrite_with_the_mtime_put_back() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("img.png");
        std::fs::write(&file, b"aaaa").unwrap();
        let hasher = IndexHasher::new(Index::open(&dir.path().join("cache")).unwrap());
        let first = hasher.hash_file(&file).unwrap();
        assert_eq!(hasher.hash_file(&file).unwrap(), first, "remembered");
        let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
        // Let the clock move so the ctime of the rewrite differs even on coarse clocks.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&file, b"bbbb").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        assert_eq!(std::fs::metadata(&file).unwrap().modified().unwrap(), mtime);
        let second = hasher.hash_file(&file).unwrap();
        assert_ne!(second, first, "a stale hash was served");
        assert_eq!(second, blake3::hash(b"bbbb").to_hex().to_string());
    }
}
