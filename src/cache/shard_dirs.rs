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

    /// The open handle of `shard`, opening it if it exists.
    fn dir(&self, shard: &str) -> Option<&File> {
        let slot = &self.open[usize::from_str_radix(shard, 16).ok()?];
        if let Some(dir) = slot.get() {
            return Some(dir);
        }
        let dir = File::open(self.root.join(shard)).ok()?;
        Some(slot.get_or_init(|| dir))
    }
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
