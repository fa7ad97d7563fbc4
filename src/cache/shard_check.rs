//! Many presence checks in one pass over the local store: `plan` of a 100,000-instance sweep
//! asks whether each of 300,000 outputs exists. One by one, each is an `fstatat`, a system
//! call and a path look-up; a listing reads a folder's names many to a system call. So a
//! shard folder is listed once the pass has asked about a good part of its entries (estimated
//! from its size, before listing it), and later checks in it look the name up in the listing.
//!
//! Only a regular file the listing shows is taken as present; every other name is checked
//! as [`ShardDirs::has_file`] checks one (an object put after the listing is found that way),
//! so a listing can make a check slower, never wrong. A listing lives as long as its pass:
//! it holds at most the entries of the folders a pass asked about often, 31 bytes each.

use std::collections::HashSet;

use super::shard_dirs::{digest_rest, ShardDirs};

/// How many listed entries cost about as much as one `fstatat`: a folder is listed once the
/// names asked of it reach its estimated entries over this.
const LISTED_PER_STAT: u64 = 8;

/// Bytes of a folder's size per entry, for estimating its entries without listing it: ext4
/// spends 72 to 120 bytes on an entry of a 62-character name, so this over-estimates there,
/// and a folder is listed only when it surely pays.
const FOLDER_BYTES_PER_ENTRY: u64 = 64;

/// One pass's checks of the shard folders.
pub(crate) struct ShardCheck<'a> {
    dirs: &'a ShardDirs,
    shards: Vec<Shard>,
}

/// What a pass knows of one shard folder.
#[derive(Default)]
struct Shard {
    /// How many names the pass asked about in it.
    asked: u64,
    /// Its estimated entries, read on the first ask (`u64::MAX` when it cannot be opened).
    entries: Option<u64>,
    /// Its regular files, once listed.
    listed: Option<HashSet<[u8; 31]>>,
}

impl<'a> ShardCheck<'a> {
    /// A pass over `dirs`, nothing asked or listed yet.
    pub(crate) fn new(dirs: &'a ShardDirs) -> Self {
        ShardCheck {
            dirs,
            shards: (0..256).map(|_| Shard::default()).collect(),
        }
    }

    /// Whether `shard/name` is a regular file, as [`ShardDirs::has_file`] answers: from the
    /// folder's listing once it is worth making, else by name.
    pub(crate) fn has_file(&mut self, shard: &str, name: &str) -> bool {
        let at = (shard.len() == 2)
            .then(|| usize::from_str_radix(shard, 16).ok())
            .flatten();
        let Some(state) = at.and_then(|at| self.shards.get_mut(at)) else {
            return self.dirs.has_file(shard, name);
        };
        state.asked += 1;
        if state.listed.is_none() {
            let dirs = self.dirs;
            let entries = *state.entries.get_or_insert_with(|| {
                dirs.size_of(shard)
                    .map_or(u64::MAX, |bytes| bytes / FOLDER_BYTES_PER_ENTRY)
            });
            if state.asked.saturating_mul(LISTED_PER_STAT) >= entries {
                state.listed = Some(dirs.files_in(shard));
            }
        }
        let listed = state.listed.as_ref().zip(digest_rest(name));
        listed.is_some_and(|(files, rest)| files.contains(&rest)) || self.dirs.has_file(shard, name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass answers as one check at a time does, before and after a folder is listed: for
    /// files, a folder, a link to a file and to nothing, a name that is no digest, a file put
    /// after the listing, a folder asked about once among thousands of entries (never
    /// listed), a missing shard and names that are not shards.
    #[test]
    fn a_pass_answers_as_one_check_at_a_time() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let name = |i: u32| format!("{i:062x}");
        let small = root.join("ab");
        std::fs::create_dir(&small).unwrap();
        for i in 0..4 {
            std::fs::write(small.join(name(i)), b"x").unwrap();
        }
        std::fs::create_dir(small.join(name(10))).unwrap();
        std::os::unix::fs::symlink(small.join(name(0)), small.join(name(11))).unwrap();
        std::os::unix::fs::symlink(small.join(name(99)), small.join(name(12))).unwrap();
        std::fs::write(small.join("README"), b"x").unwrap();
        let big = root.join("cd");
        std::fs::create_dir(&big).unwrap();
        for i in 0..4000 {
            std::fs::write(big.join(name(i)), b"").unwrap();
        }
        let dirs = ShardDirs::new(root);
        let mut pass = ShardCheck::new(&dirs);
        let mut asked: Vec<(&str, String)> = Vec::new();
        for _ in 0..3 {
            for i in [0, 1, 3, 9, 10, 11, 12] {
                asked.push(("ab", name(i)));
            }
            asked.push(("ab", "README".into()));
        }
        asked.extend([("cd", name(17)), ("cd", name(4001))]);
        asked.extend([("ef", name(0)), ("zz", name(0)), ("abc", name(0))]);
        for (shard, n) in &asked {
            assert_eq!(
                pass.has_file(shard, n),
                dirs.has_file(shard, n),
                "{shard}/{n}"
            );
        }
        assert!(
            pass.shards[0xab].listed.is_some(),
            "asked about often: listed"
        );
        assert!(
            pass.shards[0xcd].listed.is_none(),
            "asked once of 4,000: not listed"
        );
        std::fs::write(small.join(name(20)), b"x").unwrap();
        assert!(pass.has_file("ab", &name(20)), "put after the listing");
    }
}
