//! The cache-wide lock that keeps `cache gc` from racing running work.
//!
//! A run stores its outputs in the object store before it records them in the index, so for a
//! moment those objects are referenced by nothing; a garbage collection in that moment would
//! delete them and leave a result whose objects are gone. Every process that writes results
//! holds `cache/lock` shared for as long as it runs; `cache gc` holds it exclusively, so the two
//! never overlap. The lock is an advisory `flock`: the kernel releases it when its holder exits,
//! even by `kill -9`, so a crash never leaves the cache locked.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Why the cache lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the lock in a conflicting mode.
    #[error("{path} is locked by another asymflow ({what}); try again when it finishes")]
    Busy {
        /// The lock file.
        path: PathBuf,
        /// Who typically holds it in that mode.
        what: &'static str,
    },
    /// The lock file could not be opened or locked.
    #[error("cannot lock {path}: {source}")]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

/// A held cache lock; released when dropped (or when the process exits).
#[derive(Debug)]
pub struct CacheLock {
    _file: File,
}

/// How to take the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// Running work: many at once, never with a garbage collection.
    Shared,
    /// Garbage collection: alone.
    Exclusive,
}

impl CacheLock {
    /// Takes the lock of the cache in `cache_dir`. Shared waits for a running garbage
    /// collection to finish (they are short); exclusive fails at once when work is running,
    /// since that may last hours.
    pub(crate) fn acquire(cache_dir: &Path, mode: LockMode) -> Result<CacheLock, LockError> {
        let path = cache_dir.join("lock");
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(cache_dir).map_err(io)?;
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io)?;
        let op = match mode {
            LockMode::Shared => libc::LOCK_SH,
            LockMode::Exclusive => libc::LOCK_EX | libc::LOCK_NB,
        };
        loop {
            // SAFETY: flock on a file descriptor we own; it does not touch memory.
            let r = unsafe { libc::flock(file.as_raw_fd(), op) };
            if r == 0 {
                return Ok(CacheLock { _file: file });
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => {
                    return Err(LockError::Busy {
                        path,
                        what: "a run is using this cache",
                    })
                }
                _ => return Err(LockError::Io { path, source: err }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_holders_coexist_and_exclude_the_collector() {
        let dir = tempfile::tempdir().unwrap();
        let a = CacheLock::acquire(dir.path(), LockMode::Shared).unwrap();
        let b = CacheLock::acquire(dir.path(), LockMode::Shared).unwrap();
        let busy = CacheLock::acquire(dir.path(), LockMode::Exclusive).unwrap_err();
        assert!(matches!(busy, LockError::Busy { .. }), "{busy}");
        drop((a, b));
        let gc = CacheLock::acquire(dir.path(), LockMode::Exclusive).unwrap();
        drop(gc);
    }
}
