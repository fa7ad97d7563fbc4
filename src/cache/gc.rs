//! Garbage collection of a cache folder (`asymflow cache gc`): which results are forgotten,
//! which objects no kept result reaches, and what killed runs left behind.
//!
//! A team's cache grows for years, so the collection is built for a million results and two
//! million objects: the reachable set is streamed from the index's `outputs` table alone
//! (rows exist only for successful results; a row left by anything else keeps its object, the
//! safe side) into a set of 32-byte digests, and the store reports the digests that set does
//! not hold, reading no size except of what is collected. The dry run computes exactly the
//! same sets and deletes nothing. Everything runs under the cache's exclusive lock, so no run
//! whose objects are stored but not yet recorded is alive beside it.

use std::collections::{BTreeSet, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use super::{Cache, Index, IndexError, LockError, LockMode, ObjectError};

/// What to collect.
#[derive(Debug, Clone, Default)]
pub struct GcRequest {
    /// Compute and report everything, delete nothing.
    pub dry_run: bool,
    /// Forget results that finished more than this many days ago.
    pub older_than_days: Option<f64>,
    /// Forget every result whose key is not here (the keys the kept pipelines use).
    pub kept_keys: Option<BTreeSet<String>>,
}

/// What was (or, in a dry run, would be) collected.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcOutcome {
    /// Results forgotten, by age or because no kept pipeline uses them.
    pub forgotten: usize,
    /// Objects no remaining result reaches.
    pub objects: usize,
    /// Their bytes.
    pub freed_bytes: u64,
    /// Scratch folders and files under `tmp/` left by killed runs.
    pub scratch: usize,
    /// Temporary object files left by killed writers (always 0 in a dry run, which does not
    /// look for them).
    pub temporaries: usize,
}

/// A garbage-collection failure.
#[derive(Debug, thiserror::Error)]
pub enum GcError {
    /// The cache is locked by a run.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The index failed.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The object store failed.
    #[error(transparent)]
    Objects(#[from] ObjectError),
    /// A scratch folder could not be removed.
    #[error("cache gc: cannot remove {path}: {source}")]
    Scratch {
        /// The folder or file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Collects `cache` as `request` says.
pub fn collect(cache: &Cache, request: &GcRequest) -> Result<GcOutcome, GcError> {
    let _lock = cache.lock(LockMode::Exclusive)?;
    let mut index = cache.index()?;
    let forgotten = results_to_forget(&index, request)?;
    if !request.dry_run {
        for key in &forgotten {
            index.forget(key)?;
        }
    }
    let reachable = reachable_objects(&index, cache, &forgotten)?;
    let unreferenced = cache
        .objects()
        .digests_not_in(&|digest| reachable.contains(&digest_bytes(digest)))?;
    let mut freed_bytes = 0u64;
    for digest in &unreferenced {
        freed_bytes += cache.objects().size_of(digest).unwrap_or(0);
        if !request.dry_run {
            cache.objects().remove(digest)?;
            index.forget_object(digest)?;
        }
    }
    let scratch = clear_scratch(cache, request.dry_run)?;
    let temporaries = if request.dry_run {
        0
    } else {
        index.drop_stale_leases()?;
        cache.objects().remove_temporaries()?
    };
    Ok(GcOutcome {
        forgotten: forgotten.len(),
        objects: unreferenced.len(),
        freed_bytes,
        scratch,
        temporaries,
    })
}

/// The keys of the results the request forgets: finished before its cut-off, or unused by the
/// kept pipelines.
fn results_to_forget(index: &Index, request: &GcRequest) -> Result<BTreeSet<String>, GcError> {
    let mut forgotten = BTreeSet::new();
    if let Some(days) = request.older_than_days {
        let cutoff = super::now() - days * 86_400.0;
        forgotten.extend(index.runs_finished_before(cutoff)?);
    }
    if let Some(kept) = &request.kept_keys {
        index.each_output_digest(true, |key, _, _| {
            if let Some(key) = key.filter(|k| !kept.contains(*k)) {
                if !forgotten.contains(key) {
                    forgotten.insert(key.to_string());
                }
            }
        })?;
    }
    Ok(forgotten)
}

/// A set of digests as their 32 bytes. They are blake3 outputs, uniformly distributed, so the
/// first eight bytes are already a good hash: hashing them again (SipHash, three million
/// times) would be the set's main cost.
type DigestSet = HashSet<[u8; 32], BuildHasherDefault<FirstBytes>>;

/// The hasher of [`DigestSet`]: the first eight bytes written.
#[derive(Default)]
struct FirstBytes(u64);

impl Hasher for FirstBytes {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut head = [0u8; 8];
        let n = bytes.len().min(8);
        head[..n].copy_from_slice(&bytes[..n]);
        self.0 ^= u64::from_le_bytes(head);
    }
}

/// The objects the results not in `forgotten` reach: their outputs and the files of their
/// directory outputs.
fn reachable_objects(
    index: &Index,
    cache: &Cache,
    forgotten: &BTreeSet<String>,
) -> Result<DigestSet, GcError> {
    let mut reachable = DigestSet::default();
    let mut directories = Vec::new();
    index.each_output_digest(!forgotten.is_empty(), |key, digest, is_dir| {
        if key.is_some_and(|k| forgotten.contains(k)) {
            return;
        }
        if is_dir {
            directories.push(digest.to_string());
        }
        reachable.insert(digest_bytes(digest));
    })?;
    for digest in directories {
        if let Ok(manifest) = cache.objects().read_manifest(&digest) {
            reachable.extend(manifest.entries.iter().map(|(_, d)| digest_bytes(d)));
        }
    }
    Ok(reachable)
}

/// Removes (or, in a dry run, counts) what killed runs left under `tmp/`. With the exclusive
/// lock held no run is alive, so every entry there is a leftover.
fn clear_scratch(cache: &Cache, dry_run: bool) -> Result<usize, GcError> {
    let mut scratch = 0usize;
    let Ok(entries) = std::fs::read_dir(cache.tmp_dir()) else {
        return Ok(0);
    };
    for entry in entries.flatten() {
        scratch += 1;
        if dry_run {
            continue;
        }
        let path = entry.path();
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(|source| GcError::Scratch {
            path: path.display().to_string(),
            source,
        })?;
    }
    Ok(scratch)
}

/// A digest's bytes, for a compact set; text that is not 64 lowercase hex characters (a
/// damaged index row) maps to its blake3, which names no object in the store.
fn digest_bytes(digest: &str) -> [u8; 32] {
    let hex = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let bytes = digest.as_bytes();
    let mut out = [0u8; 32];
    if bytes.len() != 64 {
        return *blake3::hash(bytes).as_bytes();
    }
    for (i, pair) in bytes.chunks(2).enumerate() {
        match (hex(pair[0]), hex(pair[1])) {
            (Some(a), Some(b)) => out[i] = a << 4 | b,
            _ => return *blake3::hash(bytes).as_bytes(),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_maps_to_its_bytes_and_anything_else_to_no_digest() {
        let d = "00ff".repeat(16);
        let bytes = digest_bytes(&d);
        assert_eq!(bytes[0], 0x00);
        assert_eq!(bytes[1], 0xff);
        assert_eq!(bytes[31], 0xff);
        let upper = d.to_uppercase();
        assert_ne!(digest_bytes(&upper), bytes, "store digests are lowercase");
        assert_ne!(digest_bytes("short"), bytes);
    }

    #[test]
    fn the_digest_set_finds_what_it_holds_and_nothing_else() {
        let mut set = DigestSet::default();
        for i in 0..1000u32 {
            set.insert(*blake3::hash(&i.to_le_bytes()).as_bytes());
        }
        assert!((0..1000u32).all(|i| set.contains(blake3::hash(&i.to_le_bytes()).as_bytes())));
        assert!(!(1000..2000u32).any(|i| set.contains(blake3::hash(&i.to_le_bytes()).as_bytes())));
    }
}
