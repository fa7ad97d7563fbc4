//! The `code` of a command stage: `.gitignore`-style patterns naming the project files whose
//! content enters the key, so editing the script reruns the stage and editing anything else
//! does not.
//!
//! The patterns follow `.gitignore` with one difference, so a pattern means one place:
//! - every pattern is anchored at the project folder (`train.py` is the project's own
//!   `train.py`, not every `train.py` below it; write `**/train.py` for that);
//! - `*` and `?` match within one path component, `**` matches any number of them;
//! - a pattern naming a folder (`mylib/`, or `mylib` when it is one) takes everything below it;
//! - `!pattern` takes files back out (later patterns win, as in `.gitignore`);
//! - `__pycache__/`, `*.pyc` and `.git/` are never taken: Python writes them beside the code it
//!   imports, and keying them would rerun a stage because it ran.
//!
//! A positive pattern that matches no file is an error (a typo would otherwise key nothing).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::kind::{FileHasher, StageError};

/// Names never keyed, at any depth.
const ALWAYS_LEFT_OUT: &[&str] = &["__pycache__", ".git", "*.pyc"];

/// How many files the patterns may take, so a pattern like `**` on a data folder fails
/// clearly instead of hashing a data set on every plan.
const MAX_FILES: usize = 20_000;

struct Pattern {
    negated: bool,
    parts: Vec<String>,
    text: String,
}

fn parse(text: &str) -> Pattern {
    let (negated, body) = match text.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let body = body.trim_start_matches('/');
    let mut parts: Vec<String> = body
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .map(str::to_string)
        .collect();
    if body.ends_with('/') {
        parts.push("**".into());
    }
    Pattern {
        negated,
        parts,
        text: text.to_string(),
    }
}

/// Whether `name` (one path component) matches `glob` (`*`, `?`, literal characters).
fn glob(glob: &str, name: &str) -> bool {
    let (g, n): (Vec<char>, Vec<char>) = (glob.chars().collect(), name.chars().collect());
    let (mut gi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if gi < g.len() && (g[gi] == '?' || g[gi] == n[ni]) {
            gi += 1;
            ni += 1;
        } else if gi < g.len() && g[gi] == '*' {
            star = Some(gi);
            mark = ni;
            gi += 1;
        } else if let Some(s) = star {
            gi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    g[gi..].iter().all(|c| *c == '*')
}

/// Whether the path components `path` match the pattern components `parts`; a pattern that
/// matches a folder above the path matches the path too.
fn matches(parts: &[String], path: &[&str]) -> bool {
    match parts.split_first() {
        None => true,
        Some((first, rest)) if first == "**" => {
            (0..=path.len()).any(|skip| matches(rest, &path[skip..]))
        }
        Some((first, rest)) => match path.split_first() {
            Some((name, tail)) => glob(first, name) && matches(rest, tail),
            None => false,
        },
    }
}

fn left_out(path: &[&str]) -> bool {
    path.iter()
        .any(|name| ALWAYS_LEFT_OUT.iter().any(|g| glob(g, name)))
}

/// The literal folder a pattern starts in (the parts before its first glob), so only that
/// part of the project is walked.
fn literal_root(parts: &[String]) -> PathBuf {
    parts
        .iter()
        .take_while(|p| !p.contains(['*', '?', '[']))
        .collect()
}

/// Every file under `dir` (relative to `root`), links followed, in sorted order.
fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), StageError> {
    let full = root.join(dir);
    let meta = match std::fs::metadata(&full) {
        Ok(m) => m,
        Err(_) => return Ok(()),
    };
    if meta.is_file() {
        out.push(dir.to_path_buf());
        return Ok(());
    }
    let mut entries: Vec<_> = std::fs::read_dir(&full)
        .and_then(|d| d.collect::<Result<Vec<_>, _>>())
        .map_err(|e| StageError::io(&full, e))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let rel = dir.join(entry.file_name());
        let name = entry.file_name().to_string_lossy().into_owned();
        if left_out(&[name.as_str()]) {
            continue;
        }
        walk(root, &rel, out)?;
        if out.len() > MAX_FILES {
            return Err(StageError::bad_param(
                "code",
                format!(
                    "the `code` patterns take more than {MAX_FILES} files (under {}); list the \
                     code, not the data",
                    full.display()
                ),
            ));
        }
    }
    Ok(())
}

/// The project files `patterns` take, relative to `project` (components joined by `/`).
pub(super) fn files(project: &Path, patterns: &[String]) -> Result<Vec<String>, StageError> {
    let patterns: Vec<Pattern> = patterns.iter().map(|p| parse(p)).collect();
    let mut candidates = Vec::new();
    let mut roots: Vec<PathBuf> = patterns
        .iter()
        .filter(|p| !p.negated)
        .map(|p| literal_root(&p.parts))
        .collect();
    roots.sort();
    roots.dedup();
    for root in &roots {
        if roots.iter().any(|r| r != root && root.starts_with(r)) {
            continue;
        }
        walk(project, root, &mut candidates)?;
    }
    let mut taken = Vec::new();
    let mut used = vec![false; patterns.len()];
    for rel in candidates {
        let text = rel.to_string_lossy().replace('\\', "/");
        let parts: Vec<&str> = text.split('/').collect();
        if left_out(&parts) {
            continue;
        }
        let mut keep = false;
        for (i, pattern) in patterns.iter().enumerate() {
            if matches(&pattern.parts, &parts) {
                keep = !pattern.negated;
                used[i] |= keep;
            }
        }
        if keep {
            taken.push(text);
        }
    }
    if let Some(unused) = patterns.iter().zip(&used).find(|(p, u)| !p.negated && !**u) {
        return Err(StageError::bad_param(
            "code",
            format!(
                "`code` pattern `{}` matches no file in {} (after the `!` patterns and the \
                 always left out `__pycache__/`, `*.pyc`, `.git/`)",
                unused.0.text,
                project.display()
            ),
        ));
    }
    taken.sort();
    taken.dedup();
    Ok(taken)
}

/// Relative path -> content hash of every file `patterns` take.
pub(super) fn fingerprint(
    project: &Path,
    patterns: &[String],
    hashes: &dyn FileHasher,
) -> Result<BTreeMap<String, String>, StageError> {
    files(project, patterns)?
        .into_iter()
        .map(|rel| {
            let full = project.join(&rel);
            let hash = hashes
                .hash_file(&full)
                .map_err(|e| StageError::io(&full, e))?;
            Ok((rel, hash))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(patterns: &[&str], path: &str) -> bool {
        let parts: Vec<&str> = path.split('/').collect();
        let mut keep = false;
        for p in patterns.iter().map(|p| parse(p)) {
            if matches(&p.parts, &parts) {
                keep = !p.negated;
            }
        }
        keep && !left_out(&parts)
    }

    #[test]
    fn patterns_are_anchored_and_take_folders_whole() {
        assert!(take(&["train.py"], "train.py"));
        assert!(!take(&["train.py"], "sub/train.py"));
        assert!(take(&["**/train.py"], "sub/train.py"));
        assert!(take(&["mylib/"], "mylib/a/b.py"));
        assert!(take(&["mylib"], "mylib/b.py"));
        assert!(take(&["mylib/*.py"], "mylib/b.py"));
        assert!(!take(&["mylib/*.py"], "mylib/x/b.py"));
        assert!(take(&["mylib/**/*.py"], "mylib/x/y/b.py"));
        assert!(take(&["mylib/**/*.py"], "mylib/b.py"));
        assert!(!take(&["mylib/", "!mylib/tests/"], "mylib/tests/t.py"));
        assert!(take(
            &["mylib/", "!mylib/tests/", "mylib/tests/keep.py"],
            "mylib/tests/keep.py"
        ));
        assert!(!take(&["mylib/"], "mylib/__pycache__/b.cpython-312.pyc"));
        assert!(take(&["/a?.py"], "ab.py"));
    }

    #[test]
    fn a_glob_matches_within_one_component() {
        assert!(glob("*.py", "a.py"));
        assert!(glob("*", ""));
        assert!(!glob("*.py", "a.pyc"));
        assert!(glob("a*b*c", "aXXbYc"));
        assert!(!glob("a*b*c", "aXXbY"));
    }
}
