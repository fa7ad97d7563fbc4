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
//!
//! Asked about many objects at once ([`ShardDirs::have_files`]), a shard folder asked about
//! for a good part of its entries is listed once instead: a listing reads a folder's names
//! many to a system call, where each `fstatat` is a system call and a path look-up. Only a
//! regular file the listing shows is taken as present; every other name is checked as
//! [`ShardDirs::has_file`] checks one, so a listing too can make a check slower, never wrong.

use std::collections::HashSet;
use std::ffi::{CString, OsString};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// How many listed entries cost about as much as one `fstatat` (measured on ext4: see
/// `have_files`' use in `plan`); a folder is listed when the names asked of it are at least
/// its estimated entries over this.
const LISTED_PER_STAT: u64 = 8;

/// Bytes of a folder's size per entry, for estimating its entries without listing it: ext4
/// spends 72 to 120 bytes on an entry of a 62-character name, so this over-estimates there,
/// and a folder is listed only when it surely pays.
const FOLDER_BYTES_PER_ENTRY: u64 = 64;

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

    /// For each of `names` (a shard and the rest of a checked digest), whether it is a regular
    /// file, as [`Self::has_file`] answers; a shard asked about for at least
    /// 1/[`LISTED_PER_STAT`] of its estimated entries is listed once instead.
    pub(crate) fn have_files(&self, names: &[(&str, &str)]) -> Vec<bool> {
        let mut by_shard: Vec<Vec<usize>> = vec![Vec::new(); 256];
        let mut found = vec![false; names.len()];
        for (at, (shard, _)) in names.iter().enumerate() {
            match usize::from_str_radix(shard, 16) {
                Ok(s) if s < 256 && shard.len() == 2 => by_shard[s].push(at),
                _ => found[at] = self.has_file(shard, names[at].1),
            }
        }
        for asked in by_shard.iter().filter(|asked| !asked.is_empty()) {
            let shard = names[asked[0]].0;
            let listed = self
                .worth_listing(shard, asked.len())
                .then(|| self.files_in(shard));
            for &at in asked {
                let name = names[at].1;
                found[at] = listed
                    .as_ref()
                    .is_some_and(|files| files.contains(std::ffi::OsStr::new(name)))
                    || self.has_file(shard, name);
            }
        }
        found
    }

    /// Whether listing `shard` costs less than `asked` checks one by one, its entries
    /// estimated from its size.
    fn worth_listing(&self, shard: &str, asked: usize) -> bool {
        self.dir(shard)
            .and_then(|dir| dir.metadata().ok())
            .is_some_and(|m| asked as u64 * LISTED_PER_STAT >= m.len() / FOLDER_BYTES_PER_ENTRY)
    }

    /// The names of the regular files in `shard` (its entries' types as the listing gives
    /// them: a link or an entry of unknown type is left out, to be checked by name).
    fn files_in(&self, shard: &str) -> HashSet<OsString> {
        let Ok(entries) = std::fs::read_dir(self.root.join(shard)) else {
            return HashSet::new();
        };
        entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.file_name())
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

    /// Asked about many names at once, the answers are [`ShardDirs::has_file`]'s, whether a
    /// shard is listed (most of it asked) or not (one name of many): for files, a folder, a
    /// link to a file and to nothing, a missing shard and names that are not shards.
    #[test]
    fn many_names_at_once_are_answered_as_one_by_one() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let listed = root.join("ab");
        std::fs::create_dir(&listed).unwrap();
        for i in 0..4 {
            std::fs::write(listed.join(format!("f{i}")), b"x").unwrap();
        }
        std::fs::create_dir(listed.join("dir")).unwrap();
        std::os::unix::fs::symlink(listed.join("f0"), listed.join("link")).unwrap();
        std::os::unix::fs::symlink(listed.join("nowhere"), listed.join("dangling")).unwrap();
        let big = root.join("cd");
        std::fs::create_dir(&big).unwrap();
        for i in 0..4000 {
            std::fs::write(big.join(format!("{i:062}")), b"").unwrap();
        }
        let mut names: Vec<(&str, &str)> = ["f0", "f1", "f3", "f9", "dir", "link", "dangling"]
            .iter()
            .map(|n| ("ab", *n))
            .collect();
        let one_of_many = format!("{:062}", 17);
        let absent = format!("{:062}", 4001);
        names.extend([("cd", one_of_many.as_str()), ("cd", absent.as_str())]);
        names.extend([("ef", "f0"), ("zz", "f0"), ("abc", "f0"), ("ab", "f1")]);
        let dirs = ShardDirs::new(root);
        assert!(dirs.worth_listing("ab", 8) && !dirs.worth_listing("cd", 2));
        let one_by_one: Vec<bool> = names.iter().map(|(s, n)| dirs.has_file(s, n)).collect();
        assert_eq!(dirs.have_files(&names), one_by_one);
        assert_eq!(
            one_by_one,
            [true, true, true, false, false, true, false, true, false, false, false, false, true]
        );
    }
}
