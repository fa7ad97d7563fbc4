//! The local store's shard folders (`objects/ab/`), held open so that asking whether an object
//! exists costs one `fstatat` on a name of 62 characters instead of a lookup of the whole
//! path from the root: `plan` asks it for every output of every cached instance (300,000
//! times for a 100,000-instance sweep), and the path walk was most of that time.
//!
//! Only a positive answer is taken from an open folder. A shard folder that does not exist
//! yet is not remembered as missing (the next check opens it again), and an object the open
//! folder does not have is looked up again by its whole path: if the folder was removed and
//! made anew since it was opened, the old handle sees nothing, and the path finds the object
//! in the new one. So a held handle can make a check slower, never wrong.

use std::collections::HashSet;
use std::ffi::CString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// One lazily opened handle per shard folder (`00` to `ff`).
#[derive(Debug)]
pub(crate) struct ShardDirs {
    root: PathBuf,
    open: Vec<OnceLock<File>>,
}

impl ShardDirs {
    /// The shard folders under `root` (none is opened yet).
    pub(crate) fn new(root: &Path) -> Self {
        ShardDirs {
            root: root.to_path_buf(),
            open: (0..256).map(|_| OnceLock::new()).collect(),
        }
    }

    /// Whether `shard/name` is a regular file (a symbolic link is followed, as
    /// [`Path::is_file`] does). `shard` is two lower-case hex digits and `name` the rest of a
    /// checked digest.
    pub(crate) fn has_file(&self, shard: &str, name: &str) -> bool {
        if let (Some(dir), Ok(c_name)) = (self.dir(shard), CString::new(name)) {
            // SAFETY: `dir` is an open folder, `c_name` a NUL-terminated name, `stat` is
            // written by the call before it is read.
            let found = unsafe {
                let mut stat: libc::stat = std::mem::zeroed();
                libc::fstatat(dir.as_raw_fd(), c_name.as_ptr(), &mut stat, 0) == 0
                    && (stat.st_mode & libc::S_IFMT) == libc::S_IFREG
            };
            if found {
                return true;
            }
        }
        self.root.join(shard).join(name).is_file()
    }

    /// The size in bytes of `shard`'s folder, what its entries are estimated from without
    /// listing it (`None` when it cannot be opened).
    pub(crate) fn size_of(&self, shard: &str) -> Option<u64> {
        self.dir(shard)?.metadata().ok().map(|m| m.len())
    }

    /// The names of the regular files in `shard` that are the rest of a digest, as bytes (an
    /// entry of another type, a link included, or of unknown type is left out, to be checked
    /// by name).
    pub(crate) fn files_in(&self, shard: &str) -> HashSet<[u8; 31]> {
        let Ok(entries) = std::fs::read_dir(self.root.join(shard)) else {
            return HashSet::new();
        };
        entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| digest_rest(e.file_name().to_str()?))
            .collect()
    }

    /// The open handle of `shard`, opening it if it exists.
    fn dir(&self, shard: &str) -> Option<&File> {
        let slot = self.open.get(usize::from_str_radix(shard, 16).ok()?)?;
        if let Some(dir) = slot.get() {
            return Some(dir);
        }
        let dir = File::open(self.root.join(shard)).ok()?;
        Some(slot.get_or_init(|| dir))
    }
}

/// The 31 bytes that `name`, the last 62 lower-case hex digits of a digest, spells.
pub(crate) fn digest_rest(name: &str) -> Option<[u8; 31]> {
    let hex = name.as_bytes();
    if hex.len() != 62 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 31];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = digit(hex[2 * i])? << 4 | digit(hex[2 * i + 1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presence_is_seen_through_an_open_folder_and_a_folder_made_anew() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let dirs = ShardDirs::new(root);
        assert!(!dirs.has_file("ab", "cd"), "no shard folder yet");
        std::fs::create_dir(root.join("ab")).unwrap();
        assert!(!dirs.has_file("ab", "cd"));
        std::fs::write(root.join("ab/cd"), b"x").unwrap();
        assert!(
            dirs.has_file("ab", "cd"),
            "a folder made after a miss is opened"
        );
        std::fs::create_dir(root.join("ab/ef")).unwrap();
        assert!(!dirs.has_file("ab", "ef"), "a folder is not a file");
        // The held folder removed and made anew: the object in the new one is found.
        std::fs::remove_dir_all(root.join("ab")).unwrap();
        assert!(!dirs.has_file("ab", "cd"));
        std::fs::create_dir(root.join("ab")).unwrap();
        std::fs::write(root.join("ab/cd"), b"x").unwrap();
        assert!(dirs.has_file("ab", "cd"));
        assert!(!dirs.has_file("zz", "cd"), "not a shard name");
    }
}
