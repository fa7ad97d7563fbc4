//! The content-addressed object store: every artifact stored once, named by its blake3 digest.
//!
//! Layout: `objects/ab/cdef...` (the first two hex digits shard the folder). Writing is
//! crash-safe: content goes to a temporary file in the same folder, is fsynced, then renamed
//! into place, so an object either exists whole or not at all. Reading verifies: a file whose
//! content no longer matches its name is reported as corrupt and moved to `quarantine/`, never
//! used. A directory output is stored as a manifest object (JSON: relative path -> digest) next
//! to the objects of its files.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::shard_check::ShardCheck;
use super::shard_dirs::ShardDirs;

/// Why reading an object failed.
#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    /// The object is not in the store.
    #[error("object {digest} is missing from {root}")]
    Missing {
        /// Its digest.
        digest: String,
        /// The store.
        root: PathBuf,
    },
    /// The object's content does not match its digest; it was moved to quarantine.
    #[error("object {digest} is corrupt (content hashes to {actual}); moved to {quarantined}")]
    Corrupt {
        /// The expected digest.
        digest: String,
        /// What the content hashes to.
        actual: String,
        /// Where the bad file now is.
        quarantined: PathBuf,
    },
    /// A digest that is not 64 lowercase hex characters (a tampered or foreign index).
    #[error("`{digest}` is not an object digest (64 lowercase hex characters); the cache index may have been tampered with: run `asymflow cache verify`")]
    BadDigest {
        /// The text given as a digest.
        digest: String,
    },
    /// A path in a directory manifest, or an output name, that could leave its folder.
    #[error("unsafe path `{path}` in {place}: paths must be relative, without `..`, empty or `.` parts; the cache may have been tampered with: run `asymflow cache verify`")]
    UnsafePath {
        /// The path as recorded.
        path: String,
        /// Where it was found (`manifest abc...`, `outputs of KEY`).
        place: String,
    },
    /// An output recorded as a folder whose object is not a folder manifest (a tampered or
    /// foreign index: every folder output is stored as a manifest).
    #[error("object {digest} is recorded as a folder but holds a file, not a folder manifest; the cache index may have been tampered with: run `asymflow cache verify`")]
    NotAManifest {
        /// The object's digest.
        digest: String,
    },
    /// An output recorded as a file whose object is a folder manifest.
    #[error("object {digest} is recorded as a file but holds a folder manifest; the cache index may have been tampered with: run `asymflow cache verify`")]
    ManifestAsFile {
        /// The object's digest.
        digest: String,
    },
    /// A file-system error.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> ObjectError + '_ {
    move |source| ObjectError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Whether `digest` is a blake3 hex digest: exactly 64 lowercase hex characters.
pub(crate) fn is_digest(digest: &str) -> bool {
    digest.len() == 64
        && digest
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn check_digest(digest: &str) -> Result<(), ObjectError> {
    if is_digest(digest) {
        Ok(())
    } else {
        Err(ObjectError::BadDigest {
            digest: digest.chars().take(100).collect(),
        })
    }
}

/// Checks a relative path read from the cache (a manifest entry, an output name) before it is
/// joined to a folder: `/`-separated parts, none empty, `.` or `..`, no backslash or NUL, not
/// absolute. Joined to a folder we created, such a path stays inside it.
pub(crate) fn check_relative_path(path: &str, place: &str) -> Result<(), ObjectError> {
    let bad = path.is_empty()
        || path.starts_with('/')
        || path.contains(['\\', '\0'])
        || path
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..");
    if bad {
        return Err(ObjectError::UnsafePath {
            path: path.chars().take(200).collect(),
            place: place.to_string(),
        });
    }
    Ok(())
}

/// A directory output: relative path -> digest of each file. Serialised as
/// `{"entries":[["path","digest"],...]}` and nothing else, so a file object can be told from a
/// manifest ([`ObjectStore::open_file`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// (relative path with `/` separators, digest), sorted by path.
    pub entries: Vec<(String, String)>,
}

/// An object path inside a text: the byte range it spans and the digest it names (possibly
/// a prefix, when the text cut it short).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectMention {
    /// Byte range of the path in the text.
    pub span: std::ops::Range<usize>,
    /// The hex digits of the path after the store's root, without the shard separator.
    pub digest: String,
}

/// One pass's check of whether objects exist ([`ObjectStore::presence`]).
pub type Presence<'a> = Box<dyn FnMut(&str) -> bool + Send + 'a>;

/// Where artifacts live, addressed by content. The engine talks only to this trait, so a store
/// on another machine (a team cache) can stand in for the local folder; no code outside
/// `cache/` builds an object's path.
///
/// Every digest is blake3 hex. Reading verifies: an object whose content no longer matches its
/// digest is an error, never used.
pub trait ObjectStore: std::fmt::Debug + Send + Sync {
    /// Whether the object exists (not verified).
    fn contains(&self, digest: &str) -> bool;

    /// A check of many objects in one pass (`plan` asks about every output of every cached
    /// instance): answers as [`Self::contains`] does, faster where the store can.
    fn presence(&self) -> Presence<'_> {
        Box::new(|digest| self.contains(digest))
    }

    /// The object's size in bytes, if it exists.
    fn size_of(&self, digest: &str) -> Option<u64>;

    /// A value that changes whenever an object is added to or removed from the store, read
    /// without listing it; `None` when the store cannot tell (then nothing may be assumed
    /// unchanged).
    fn change_stamp(&self) -> Option<[u8; 32]> {
        None
    }

    /// Where the object can be opened on this machine, to show a user (`show`), if the store
    /// is local and holds it. Readers that use the content go through [`Self::open_verified`].
    fn local_path(&self, digest: &str) -> Option<PathBuf>;

    /// Stores the file at `src`, consuming it (it may be moved into the store). Returns
    /// (digest, size).
    fn put_file(&self, src: &Path) -> Result<(String, u64), ObjectError>;

    /// Stores `bytes`. Returns (digest, size).
    fn put_bytes(&self, bytes: &[u8]) -> Result<(String, u64), ObjectError>;

    /// A local path holding object `digest`, its content verified against the digest. A
    /// mismatch quarantines the object and is an error.
    fn open_verified(&self, digest: &str) -> Result<PathBuf, ObjectError>;

    /// Moves object `digest` aside (it is corrupt). Returns where it went.
    fn quarantine(&self, digest: &str) -> Result<PathBuf, ObjectError>;

    /// Removes object `digest` (garbage collection).
    fn remove(&self, digest: &str) -> Result<(), ObjectError>;

    /// Every object digest in the store, with its size.
    fn list(&self) -> Result<Vec<(String, u64)>, ObjectError>;

    /// Where `text` (a stage's error message) names objects of this store by path: each
    /// mention's byte range and digest, so a message can name the input instead. A store
    /// with no local paths has none.
    fn mentions_in(&self, text: &str) -> Vec<ObjectMention> {
        let _ = text;
        Vec::new()
    }

    /// The digests of the objects in the store that `keep` rejects: what `cache gc` collects.
    /// Holds only those, and reads no size: a store of two million objects is walked for a
    /// handful of garbage.
    fn digests_not_in(
        &self,
        keep: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<Vec<String>, ObjectError> {
        Ok(self
            .list()?
            .into_iter()
            .map(|(digest, _)| digest)
            .filter(|digest| !keep(digest))
            .collect())
    }

    /// Deletes temporary files that writers killed mid-write left behind; returns how many.
    /// Called by `cache gc` while it holds the cache's exclusive lock.
    fn remove_temporaries(&self) -> Result<usize, ObjectError> {
        Ok(0)
    }

    /// Stores every file under `dir` and a manifest of them. Returns the manifest's
    /// (digest, size) and the digests of its files.
    fn put_dir(&self, dir: &Path) -> Result<(String, u64, Vec<String>), ObjectError> {
        let mut files = Vec::new();
        collect_files(dir, dir, &mut files).map_err(io_err(dir))?;
        files.sort();
        let mut entries = Vec::with_capacity(files.len());
        let mut digests = Vec::with_capacity(files.len());
        for rel in files {
            let (digest, _) = self.put_file(&dir.join(&rel))?;
            digests.push(digest.clone());
            entries.push((rel, digest));
        }
        let manifest = serde_json::to_vec(&Manifest { entries }).expect("manifests serialise");
        let (digest, size) = self.put_bytes(&manifest)?;
        Ok((digest, size, digests))
    }

    /// Reads and verifies a manifest object.
    fn read_manifest(&self, digest: &str) -> Result<Manifest, ObjectError> {
        let path = self.open_verified(digest)?;
        let bytes = fs::read(&path).map_err(io_err(&path))?;
        let manifest: Manifest =
            serde_json::from_slice(&bytes).map_err(|_| ObjectError::NotAManifest {
                digest: digest.to_string(),
            })?;
        let place = format!("manifest {digest}");
        for (rel, file_digest) in &manifest.entries {
            check_relative_path(rel, &place)?;
            check_digest(file_digest)?;
        }
        Ok(manifest)
    }

    /// The verified path of a file output's object, refusing a folder manifest recorded as a
    /// file: a manifest is `{"entries":[...]}` naming objects the store holds, which a file
    /// output that happened to hold the same text could only do by quoting the store itself.
    fn open_file(&self, digest: &str) -> Result<PathBuf, ObjectError> {
        let path = self.open_verified(digest)?;
        let mut head = [0u8; MANIFEST_HEAD.len()];
        let starts_like_a_manifest = File::open(&path)
            .and_then(|mut f| f.read_exact(&mut head))
            .is_ok_and(|()| head[..] == *MANIFEST_HEAD);
        if starts_like_a_manifest {
            if let Ok(manifest) = self.read_manifest(digest) {
                if manifest.entries.iter().all(|(_, d)| self.contains(d)) {
                    return Err(ObjectError::ManifestAsFile {
                        digest: digest.to_string(),
                    });
                }
            }
        }
        Ok(path)
    }

    /// Copies a directory output out of the store into `dest`, verifying every file.
    fn materialise_dir(&self, digest: &str, dest: &Path) -> Result<(), ObjectError> {
        for (rel, file_digest) in self.read_manifest(digest)?.entries {
            let src = self.open_verified(&file_digest)?;
            let target = dest.join(&rel);
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent).map_err(io_err(parent))?;
            }
            if fs::symlink_metadata(&target).is_ok() {
                return Err(ObjectError::UnsafePath {
                    path: rel,
                    place: format!("manifest {digest} (listed twice or over a link)"),
                });
            }
            fs::copy(&src, &target).map_err(io_err(&target))?;
        }
        Ok(())
    }
}

/// How every serialised [`Manifest`] begins.
const MANIFEST_HEAD: &[u8] = b"{\"entries\":[";

/// The content-addressed store in a local cache folder: `objects/ab/cdef...`.
#[derive(Debug, Clone)]
pub(crate) struct LocalObjectStore {
    root: PathBuf,
    /// Its shard folders, held open for presence checks.
    shards: std::sync::Arc<ShardDirs>,
}

/// blake3 of a file's content, streamed.
pub(crate) fn hash_file(path: &Path) -> io::Result<(String, u64)> {
    let mut file = File::open(path)?;
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok((hasher.finalize().to_hex().to_string(), size))
}

impl LocalObjectStore {
    /// The store in `cache_dir/objects` (created on first write).
    pub fn new(cache_dir: &Path) -> Self {
        let root = cache_dir.join("objects");
        LocalObjectStore {
            shards: std::sync::Arc::new(ShardDirs::new(&root)),
            root,
        }
    }

    /// Where the object `digest` lives (whether or not it exists). Only a well-formed digest
    /// has a path, so no text from the index can name a file outside the store.
    fn path(&self, digest: &str) -> Result<PathBuf, ObjectError> {
        check_digest(digest)?;
        Ok(self.root.join(&digest[..2]).join(&digest[2..]))
    }

    /// The shard folder of `dest`, created (and its creation made durable) if new.
    fn shard_dir<'a>(&self, dest: &'a Path) -> Result<&'a Path, ObjectError> {
        let dir = dest.parent().expect("object paths have a shard folder");
        if !dir.is_dir() {
            fs::create_dir_all(dir).map_err(io_err(dir))?;
            sync_dir(&self.root);
            if let Some(cache) = self.root.parent() {
                sync_dir(cache);
            }
        }
        Ok(dir)
    }
}

impl ObjectStore for LocalObjectStore {
    fn contains(&self, digest: &str) -> bool {
        check_digest(digest).is_ok() && self.shards.has_file(&digest[..2], &digest[2..])
    }

    /// Shard folders a pass asks about often are listed ([`ShardCheck`]).
    fn presence(&self) -> Presence<'_> {
        let mut pass = ShardCheck::new(&self.shards);
        Box::new(move |digest| {
            check_digest(digest).is_ok() && pass.has_file(&digest[..2], &digest[2..])
        })
    }

    fn size_of(&self, digest: &str) -> Option<u64> {
        fs::metadata(self.path(digest).ok()?).ok().map(|m| m.len())
    }

    /// The identity and change times of the store's folder and of its 256 shard folders: an
    /// object put or removed changes its shard folder's, a shard folder made or removed the
    /// store's.
    fn change_stamp(&self) -> Option<[u8; 32]> {
        use std::os::unix::fs::MetadataExt;
        let mut stamp = blake3::Hasher::new();
        let shards = (0..=255u8).map(|b| self.root.join(format!("{b:02x}")));
        for dir in std::iter::once(self.root.clone()).chain(shards) {
            match fs::metadata(&dir) {
                Ok(m) => {
                    for n in [m.dev(), m.ino()] {
                        stamp.update(&n.to_le_bytes());
                    }
                    for n in [m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()] {
                        stamp.update(&n.to_le_bytes());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    stamp.update(b"absent");
                }
                Err(_) => return None,
            }
        }
        Some(*stamp.finalize().as_bytes())
    }

    fn local_path(&self, digest: &str) -> Option<PathBuf> {
        self.path(digest).ok().filter(|p| p.exists())
    }

    /// Moves `src` into the store (it must be on the same file system, as a stage's temporary
    /// output folder is). A symbolic link is stored as the content it points to. An object
    /// already in the store is replaced by the new, just-hashed copy rather than trusted: the
    /// old one may be corrupt (deduplication never keeps bad bytes over good ones).
    fn put_file(&self, src: &Path) -> Result<(String, u64), ObjectError> {
        let is_link = fs::symlink_metadata(src)
            .map_err(io_err(src))?
            .file_type()
            .is_symlink();
        if is_link {
            let bytes = fs::read(src).map_err(io_err(src))?;
            let stored = self.put_bytes(&bytes)?;
            fs::remove_file(src).map_err(io_err(src))?;
            return Ok(stored);
        }
        let (digest, size) = hash_file(src).map_err(io_err(src))?;
        let dest = self.path(&digest)?;
        let dir = self.shard_dir(&dest)?;
        File::open(src)
            .and_then(|f| f.sync_all())
            .map_err(io_err(src))?;
        fs::rename(src, &dest).map_err(io_err(&dest))?;
        sync_dir(dir);
        Ok((digest, size))
    }

    /// Writes `bytes` to a temporary file beside the object and renames it into place,
    /// replacing an existing copy (see [`LocalObjectStore::put_file`]).
    fn put_bytes(&self, bytes: &[u8]) -> Result<(String, u64), ObjectError> {
        let digest = blake3::hash(bytes).to_hex().to_string();
        let dest = self.path(&digest)?;
        let dir = self.shard_dir(&dest)?;
        let mut tmp = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .tempfile_in(dir)
            .map_err(io_err(dir))?;
        tmp.write_all(bytes).map_err(io_err(&dest))?;
        tmp.as_file().sync_all().map_err(io_err(&dest))?;
        tmp.persist(&dest).map_err(|e| ObjectError::Io {
            path: dest.clone(),
            source: e.error,
        })?;
        sync_dir(dir);
        Ok((digest, bytes.len() as u64))
    }

    fn open_verified(&self, digest: &str) -> Result<PathBuf, ObjectError> {
        let path = self.path(digest)?;
        if !path.is_file() {
            return Err(ObjectError::Missing {
                digest: digest.into(),
                root: self.root.clone(),
            });
        }
        let (actual, _) = hash_file(&path).map_err(io_err(&path))?;
        if actual != digest {
            let quarantined = self.quarantine(digest)?;
            return Err(ObjectError::Corrupt {
                digest: digest.into(),
                actual,
                quarantined,
            });
        }
        Ok(path)
    }

    /// Moves the object to `quarantine/` beside the store.
    fn quarantine(&self, digest: &str) -> Result<PathBuf, ObjectError> {
        let src = self.path(digest)?;
        let dir = self.root.with_file_name("quarantine");
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let dest = dir.join(digest);
        fs::rename(&src, &dest).map_err(io_err(&src))?;
        Ok(dest)
    }

    fn remove(&self, digest: &str) -> Result<(), ObjectError> {
        let path = self.path(digest)?;
        fs::remove_file(&path).map_err(io_err(&path))
    }

    fn list(&self) -> Result<Vec<(String, u64)>, ObjectError> {
        let mut out = Vec::new();
        self.walk(|digest, path| {
            if let Some(digest) = digest {
                let len = fs::metadata(path).map_err(io_err(path))?.len();
                out.push((digest, len));
            }
            Ok(())
        })?;
        Ok(out)
    }

    fn mentions_in(&self, text: &str) -> Vec<ObjectMention> {
        let root = self.root.to_string_lossy();
        let mut mentions = Vec::new();
        let mut from = 0;
        while let Some(at) = text[from..].find(root.as_ref()) {
            let start = from + at;
            let tail = &text[start + root.len()..];
            let len = tail
                .find(|c: char| !(c.is_ascii_hexdigit() || c == '/'))
                .unwrap_or(tail.len());
            let end = start + root.len() + len;
            mentions.push(ObjectMention {
                span: start..end,
                digest: tail[..len].chars().filter(|c| *c != '/').collect(),
            });
            from = end;
        }
        mentions
    }

    /// The 256 shard folders are read by a few threads at once: reading two million
    /// directory entries is the collection's main cost, and it is system-call bound.
    fn digests_not_in(
        &self,
        keep: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<Vec<String>, ObjectError> {
        let shards = self.shard_folders()?;
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 4);
        let next = std::sync::atomic::AtomicUsize::new(0);
        let found: Vec<Result<Vec<String>, ObjectError>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| {
                        let mut garbage = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some((name, path)) = shards.get(i) else {
                                return Ok(garbage);
                            };
                            unkept_in_shard(name, path, keep, &mut garbage)?;
                        }
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().expect("a shard reader does not panic"))
                .collect()
        });
        let mut garbage = Vec::new();
        for part in found {
            garbage.extend(part?);
        }
        garbage.sort();
        Ok(garbage)
    }

    /// Deletes `.tmp-object*` files left in shard folders by processes that died mid-write.
    /// Only safe while no other process writes to the store (`cache gc` holds the cache's
    /// exclusive lock).
    fn remove_temporaries(&self) -> Result<usize, ObjectError> {
        let mut removed = 0;
        self.walk(|digest, path| {
            let temporary = digest.is_none()
                && path
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(TEMP_PREFIX));
            if temporary {
                fs::remove_file(path).map_err(io_err(path))?;
                removed += 1;
            }
            Ok(())
        })?;
        Ok(removed)
    }
}

/// How temporary files in the store are named, so `cache gc` can find those a crash left.
const TEMP_PREFIX: &str = ".tmp-object";

impl LocalObjectStore {
    /// The shard folders (two hex characters each) with their names.
    fn shard_folders(&self) -> Result<Vec<(String, PathBuf)>, ObjectError> {
        let Ok(entries) = fs::read_dir(&self.root) else {
            return Ok(Vec::new());
        };
        let mut shards = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_err(&self.root))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if name.len() == 2 && path.is_dir() {
                shards.push((name, path));
            }
        }
        Ok(shards)
    }

    /// Calls `visit` with each file in a shard folder: its digest when the name is one.
    fn walk(
        &self,
        mut visit: impl FnMut(Option<String>, &Path) -> Result<(), ObjectError>,
    ) -> Result<(), ObjectError> {
        for (name, shard_path) in self.shard_folders()? {
            for entry in fs::read_dir(&shard_path).map_err(io_err(&shard_path))? {
                let entry = entry.map_err(io_err(&shard_path))?;
                let rest = entry.file_name().to_string_lossy().into_owned();
                let digest = format!("{name}{rest}");
                let digest = is_digest(&digest).then_some(digest);
                visit(digest, &entry.path())?;
            }
        }
        Ok(())
    }
}

/// Adds to `garbage` the digests of the objects in shard folder `path` (named `shard`) that
/// `keep` rejects, building a digest's text in one reused buffer.
fn unkept_in_shard(
    shard: &str,
    path: &Path,
    keep: &(dyn Fn(&str) -> bool + Sync),
    garbage: &mut Vec<String>,
) -> Result<(), ObjectError> {
    let mut digest = String::with_capacity(64);
    for entry in fs::read_dir(path).map_err(io_err(path))? {
        let entry = entry.map_err(io_err(path))?;
        let name = entry.file_name();
        digest.clear();
        digest.push_str(shard);
        digest.push_str(&name.to_string_lossy());
        if is_digest(&digest) && !keep(&digest) {
            garbage.push(digest.clone());
        }
    }
    Ok(())
}

fn collect_files(root: &Path, dir: &Path, out: &mut Vec<String>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            collect_files(root, &path, out)?;
        } else {
            let rel = path.strip_prefix(root).expect("walked from root");
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
    Ok(())
}

/// fsync a folder so a rename into it survives a power cut (best effort).
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_of_object_paths_are_found_with_their_digests() {
        let store = LocalObjectStore::new(Path::new("/c"));
        let text = "open /c/objects/14/e72cab: denied; /c/objects/ab/cd and /d/objects/ef/01";
        let mentions = store.mentions_in(text);
        assert_eq!(mentions.len(), 2, "{mentions:?}");
        assert_eq!(&text[mentions[0].span.clone()], "/c/objects/14/e72cab");
        assert_eq!(mentions[0].digest, "14e72cab");
        assert_eq!(mentions[1].digest, "abcd");
    }

    /// Asked in one pass, objects are found as asked one by one: stored ones, a removed one,
    /// one never stored, and text that is not a digest (never a path).
    #[test]
    fn objects_asked_in_one_pass_are_found_as_one_by_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalObjectStore::new(dir.path());
        let stored: Vec<String> = (0..3000u32)
            .map(|i| store.put_bytes(&i.to_le_bytes()).unwrap().0)
            .collect();
        fs::remove_file(store.path(&stored[5]).unwrap()).unwrap();
        let never = "0".repeat(64);
        let mut asked: Vec<&str> = stored.iter().map(String::as_str).collect();
        asked.extend([never.as_str(), "../../etc/passwd", "ab", ""]);
        let mut pass = store.presence();
        let each: Vec<bool> = asked.iter().map(|d| pass(d)).collect();
        let one_by_one: Vec<bool> = asked.iter().map(|d| store.contains(d)).collect();
        assert_eq!(each, one_by_one);
        assert_eq!(each.iter().filter(|&&found| found).count(), 2999);
        assert!(!each[5]);
    }

    #[test]
    fn the_garbage_is_every_stored_digest_not_kept_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalObjectStore::new(dir.path());
        let digests: Vec<String> = (0..40u32)
            .map(|i| store.put_bytes(&i.to_le_bytes()).unwrap().0)
            .collect();
        let kept: std::collections::HashSet<&str> =
            digests.iter().step_by(3).map(String::as_str).collect();
        // A temporary file and a stray file in a shard folder are not objects.
        let shard = dir.path().join("objects").join(&digests[0][..2]);
        fs::write(shard.join(format!("{TEMP_PREFIX}-1")), b"half").unwrap();
        fs::write(shard.join("README"), b"stray").unwrap();
        let garbage = store.digests_not_in(&|d| kept.contains(d)).unwrap();
        let mut expected: Vec<String> = digests
            .iter()
            .filter(|d| !kept.contains(d.as_str()))
            .cloned()
            .collect();
        expected.sort();
        assert_eq!(garbage, expected);
        assert!(LocalObjectStore::new(&dir.path().join("none"))
            .digests_not_in(&|_| false)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn put_then_read_back_verified() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalObjectStore::new(dir.path());
        let (digest, size) = store.put_bytes(b"hello").unwrap();
        assert_eq!(size, 5);
        assert_eq!(digest, blake3::hash(b"hello").to_hex().to_string());
        let path = store.open_verified(&digest).unwrap();
        assert_eq!(fs::read(path).unwrap(), b"hello");
        assert_eq!(store.list().unwrap(), vec![(digest, 5)]);
    }

    #[test]
    fn a_flipped_byte_is_detected_and_quarantined() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalObjectStore::new(dir.path());
        let (digest, _) = store.put_bytes(b"weights").unwrap();
        fs::write(store.path(&digest).unwrap(), b"weightz").unwrap();
        let err = store.open_verified(&digest).unwrap_err();
        assert!(matches!(err, ObjectError::Corrupt { .. }), "{err}");
        assert!(!store.contains(&digest));
        assert!(matches!(
            store.open_verified(&digest),
            Err(ObjectError::Missing { .. })
        ));
    }

    #[test]
    fn directories_round_trip_through_a_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalObjectStore::new(&dir.path().join("cache"));
        let src = dir.path().join("out");
        fs::create_dir_all(src.join("sub")).unwrap();
        fs::write(src.join("a.txt"), "a").unwrap();
        fs::write(src.join("sub/b.txt"), "b").unwrap();
        let (manifest, _, files) = store.put_dir(&src).unwrap();
        assert_eq!(files.len(), 2);
        let dest = dir.path().join("back");
        store.materialise_dir(&manifest, &dest).unwrap();
        assert_eq!(fs::read_to_string(dest.join("sub/b.txt")).unwrap(), "b");
    }

    #[test]
    fn issue11_tampered_manifest_cannot_write_outside_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalObjectStore::new(&dir.path().join("cache"));
        let (file, _) = store.put_bytes(b"payload").unwrap();
        for evil in [
            "../../escaped",
            "/tmp/abs",
            "a/../../x",
            "a//b",
            "./a",
            "a\\..\\b",
        ] {
            let manifest = Manifest {
                entries: vec![(evil.to_string(), file.clone())],
            };
            let (digest, _) = store
                .put_bytes(&serde_json::to_vec(&manifest).unwrap())
                .unwrap();
            let dest = dir.path().join("work/out");
            let err = store.materialise_dir(&digest, &dest).unwrap_err();
            assert!(
                matches!(err, ObjectError::UnsafePath { .. }),
                "{evil}: {err}"
            );
        }
        assert!(!dir.path().join("escaped").exists());
        assert!(!dir.path().join("work/escaped").exists());
    }

    #[test]
    fn issue11_digests_must_be_64_lowercase_hex() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalObjectStore::new(dir.path());
        let (good, _) = store.put_bytes(b"x").unwrap();
        for bad in [
            "",
            "ab",
            "../../etc/passwd",
            &good.to_uppercase(),
            &format!("{good}0"),
        ] {
            assert!(matches!(
                store.open_verified(bad),
                Err(ObjectError::BadDigest { .. })
            ));
            assert!(!store.contains(bad));
            assert!(store.size_of(bad).is_none());
        }
    }

    #[test]
    fn issue11_dedup_replaces_a_corrupt_existing_object() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalObjectStore::new(dir.path());
        let (digest, _) = store.put_bytes(b"model weights").unwrap();
        fs::write(store.path(&digest).unwrap(), b"model wEights").unwrap();
        // The producer reruns and stores the same content again: the good copy must win.
        let fresh = dir.path().join("fresh.bin");
        fs::write(&fresh, b"model weights").unwrap();
        assert_eq!(store.put_file(&fresh).unwrap().0, digest);
        assert!(store.open_verified(&digest).is_ok());
        fs::write(store.path(&digest).unwrap(), b"model wEights").unwrap();
        store.put_bytes(b"model weights").unwrap();
        assert!(store.open_verified(&digest).is_ok());
    }

    #[test]
    fn issue11_a_linked_file_in_a_folder_output_is_stored_as_its_content() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalObjectStore::new(&dir.path().join("cache"));
        let out = dir.path().join("out");
        fs::create_dir_all(&out).unwrap();
        fs::write(dir.path().join("target.txt"), b"real bytes").unwrap();
        std::os::unix::fs::symlink(dir.path().join("target.txt"), out.join("link.txt")).unwrap();
        let (manifest, _, files) = store.put_dir(&out).unwrap();
        let stored = store.open_verified(&files[0]).unwrap();
        assert!(!fs::symlink_metadata(&stored)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&stored).unwrap(), b"real bytes");
        let back = dir.path().join("back");
        store.materialise_dir(&manifest, &back).unwrap();
        assert_eq!(fs::read(back.join("link.txt")).unwrap(), b"real bytes");
    }
}
