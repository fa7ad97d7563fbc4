//! What a pipeline running in another process shows from outside: which keys it holds leases
//! on (they are running), and, in each running stage's scratch folder under the cache's
//! `tmp/`, its progress file ([`crate::kind::PROGRESS_FILE`]) and the log it is writing.
//!
//! A training stage writes its `loss.json` only when it ends, but it logs every epoch as it
//! ends (`epoch 3: loss 0.41 in 2.0 s` from `train-teacher` and `distill`, `epoch 3/8: loss
//! 0.41` from `test-train`, the same line from a worker). [`loss_so_far`] reads those lines
//! back, so the dashboard draws the loss of a running stage epoch by epoch without a new
//! file format, and without a kind writing anything it does not write already.
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

/// The (epoch, loss) points of the `epoch N: loss X` and `epoch N/M: loss X` lines of `log`,
/// in order (a later line for the same epoch replaces an earlier one).
pub(crate) fn loss_so_far(log: &str) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = Vec::new();
    for line in log.lines() {
        let Some(point) = epoch_loss(line.trim()) else {
            continue;
        };
        match points.iter_mut().find(|p| p.0 == point.0) {
            Some(p) => *p = point,
            None => points.push(point),
        }
    }
    points
}

/// `(N, X)` from `epoch N: loss X...` or `epoch N/M: loss X...`.
fn epoch_loss(line: &str) -> Option<(f64, f64)> {
    let rest = line.strip_prefix("epoch ")?;
    let (epoch, rest) = rest.split_once(':')?;
    let epoch = epoch.split('/').next()?.trim().parse::<u64>().ok()?;
    let value = rest.trim_start().strip_prefix("loss ")?;
    let value = value
        .split(|c: char| c.is_whitespace() || c == ',')
        .next()?
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())?;
    Some((epoch as f64, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loss_so_far_is_read_from_the_epoch_lines_of_a_log() {
        let log = "training 3 epochs\nepoch 1: loss 2.50000 in 1.2 s\nepoch 2/3: loss 1.25\n\
                   epoch 2/3: loss 1.5\nepoch x: loss 3\nepoch 3: loss nan in 1 s\nloss 4\n";
        assert_eq!(loss_so_far(log), vec![(1.0, 2.5), (2.0, 1.5)]);
        assert!(loss_so_far("").is_empty());
    }

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
