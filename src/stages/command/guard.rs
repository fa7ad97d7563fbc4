//! Catching a command that writes outside its scratch folder, where this can be seen without
//! privileges: the project folder (its code, data, pipelines) is listed before the command
//! starts and after it exits, every file's size and modification time compared, and any file
//! created, changed or removed fails the stage.
//!
//! Limits, honestly: this is a check after the fact, not a sandbox. It does not see writes
//! elsewhere (`/tmp`, the home folder, a network share), nor a write that restores a file's
//! size and time; it leaves out the cache (stages run there), `reports/` (the engine
//! publishes reports there while other stages run) and `__pycache__` folders, and a project of more than
//! [`MAX_ENTRIES`] files is not checked (said in the stage log). A real sandbox needs mount
//! namespaces or a container, which asymflow does not set up; run untrusted code in one.
//! Inputs are a separate check (their objects are re-hashed, [`super::collect`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The most files the check lists.
pub(super) const MAX_ENTRIES: usize = 100_000;

/// Top-level folders never listed, beside the cache (where the command's scratch folder is):
/// version control and published reports. `__pycache__` folders are left out at any depth
/// (Python writes them beside the modules it imports).
const LEFT_OUT: &[&str] = &[".git", "reports"];

type Entry = (u64, Option<SystemTime>, bool);

/// A listing of the project folder.
pub(super) struct Snapshot {
    root: PathBuf,
    skip: PathBuf,
    entries: Option<BTreeMap<PathBuf, Entry>>,
}

impl Snapshot {
    /// Lists `root`, leaving out `cache` (the cache folder) and [`LEFT_OUT`]; `entries` is
    /// `None` when the project is too large to list.
    pub(super) fn take(root: &Path, cache: &Path) -> Snapshot {
        let skip = std::fs::canonicalize(cache).unwrap_or_else(|_| cache.to_path_buf());
        let mut snapshot = Snapshot {
            root: root.to_path_buf(),
            skip,
            entries: None,
        };
        snapshot.entries = snapshot.list();
        snapshot
    }

    /// Whether the listing was taken (the project was small enough).
    pub(super) fn taken(&self) -> bool {
        self.entries.is_some()
    }

    fn list(&self) -> Option<BTreeMap<PathBuf, Entry>> {
        let mut entries = BTreeMap::new();
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(read) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in read.flatten() {
                let path = entry.path();
                let Ok(meta) = entry.metadata() else { continue };
                let top = path.strip_prefix(&self.root).ok()?;
                let first = top.components().next().map(|c| c.as_os_str().to_owned());
                if dir == self.root && first.is_some_and(|f| LEFT_OUT.iter().any(|l| f == *l)) {
                    continue;
                }
                if entry.file_name() == "__pycache__" {
                    continue;
                }
                if meta.is_dir() {
                    let real = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
                    if real == self.skip {
                        continue;
                    }
                    stack.push(path.clone());
                }
                let size = if meta.is_dir() { 0 } else { meta.len() };
                entries.insert(
                    top.to_path_buf(),
                    (size, meta.modified().ok(), meta.is_dir()),
                );
                if entries.len() > MAX_ENTRIES {
                    return None;
                }
            }
        }
        Some(entries)
    }

    /// What changed since the snapshot: created, changed and removed files (folders whose
    /// only change is their listing are left out), at most a few named.
    pub(super) fn changes(&self) -> Vec<String> {
        let (Some(before), Some(after)) = (&self.entries, self.list()) else {
            return Vec::new();
        };
        let mut changes = Vec::new();
        for (path, entry) in &after {
            match before.get(path) {
                None => changes.push(format!("created {}", path.display())),
                Some(old) if !entry.2 && old != entry => {
                    changes.push(format!("changed {}", path.display()))
                }
                _ => {}
            }
        }
        for path in before.keys().filter(|p| !after.contains_key(*p)) {
            changes.push(format!("removed {}", path.display()));
        }
        changes
    }
}
