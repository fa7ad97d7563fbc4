//! What a pipeline running in another process shows from outside: which keys it holds leases
//! on (they are running), and, in each running stage's scratch folder under the cache's
//! `tmp/`, its progress file ([`crate::kind::PROGRESS_FILE`]) and the log it is writing.
//!
//! The scheduler names a scratch folder by the first 16 hex digits of the key and a dash; a
//! key that is not hex never reaches the file system.

use std::collections::HashSet;
use std::path::PathBuf;

use serde::Serialize;

use crate::cache::leases::lease_is_stale;
use crate::cache::store::now;
use crate::cache::{Cache, Index, IndexError};
use crate::kind::{LOG_OUTPUT, PROGRESS_FILE};

/// A running stage's progress: `pos` of `len` `unit` (epochs, batches, steps).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Progress {
    /// Steps done.
    pub pos: u64,
    /// Steps in all.
    pub len: u64,
    /// What a step is.
    pub unit: String,
}

/// The keys a live process holds a lease on, i.e. is computing now.
pub(crate) fn running_keys(index: &Index) -> Result<HashSet<String>, IndexError> {
    let t = now();
    Ok(index
        .leases()?
        .into_iter()
        .filter(|(_, host, pid, liveness, age)| !lease_is_stale(host, *pid, liveness, t - age))
        .map(|(key, ..)| key)
        .collect())
}

/// The scratch folder of the running instance `key`, the newest when several exist.
pub(crate) fn scratch_dir(cache: &Cache, key: &str) -> Option<PathBuf> {
    if key.len() < 16 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let prefix = format!("{}-", &key[..16]);
    std::fs::read_dir(cache.tmp_dir())
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .filter(|e| e.path().is_dir())
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .map(|e| e.path())
}

/// The progress the running instance `key` last reported, if any.
pub fn progress(cache: &Cache, key: &str) -> Option<Progress> {
    let text = std::fs::read_to_string(scratch_dir(cache, key)?.join(PROGRESS_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The log the running instance `key` has written so far, if any.
pub fn log(cache: &Cache, key: &str) -> Option<String> {
    let path = scratch_dir(cache, key)?.join("out").join(LOG_OUTPUT);
    std::fs::read(path)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_read_from_the_newest_scratch_folder_of_a_key() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        let key = "0123456789abcdef".repeat(4);
        let scratch = cache.tmp_dir().join(format!("{}-xyz", &key[..16]));
        std::fs::create_dir_all(scratch.join("out")).unwrap();
        std::fs::write(
            scratch.join(PROGRESS_FILE),
            r#"{"pos": 3, "len": 10, "unit": "epochs", "updated": 1.0}"#,
        )
        .unwrap();
        std::fs::write(scratch.join("out").join(LOG_OUTPUT), "epoch 1\n").unwrap();
        assert_eq!(
            progress(&cache, &key),
            Some(Progress {
                pos: 3,
                len: 10,
                unit: "epochs".into()
            })
        );
        assert_eq!(log(&cache, &key).as_deref(), Some("epoch 1\n"));
        assert_eq!(progress(&cache, "../../etc/passwd0000"), None);
    }
}
