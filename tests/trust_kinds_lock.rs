//! Code in the key: `kinds.lock` pins, for every built-in stage kind, a digest of the source
//! files it runs and its `IMPL_VERSION`. An edit to those files fails this test until someone
//! decides: bump the kind's version (its results change, so the cache recomputes them) or
//! re-pin (a pure refactor). The rule is written at the top of `src/cache/key.rs`.
//!
//! The per-kind file lists live in the lock itself, so moving code (into `crates/tensor`, say)
//! means editing paths there and re-pinning.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

const LOCK: &str = "kinds.lock";
const REPIN: &str = "ASYMFLOW_REPIN=1 cargo test --release --test integration kinds_lock";

const HEADER: &str = "\
# kinds.lock: the code each stage kind runs, pinned (the rule is at the top of src/cache/key.rs).
# `sources` are files and folders (every .rs file below them), relative to the repository root;
# `digest` is blake3 over them; `impl_version` is the kind's IMPL_VERSION when pinned.
# A change to a kind's sources fails `cargo test kinds_lock` until you either bump the kind's
# IMPL_VERSION (results change) or re-pin (a pure refactor):
#   ASYMFLOW_REPIN=1 cargo test --release --test integration kinds_lock
";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Pin {
    impl_version: u32,
    sources: Vec<String>,
    digest: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Lock {
    kinds: BTreeMap<String, Pin>,
}

/// blake3 over every .rs file under `sources` (sorted by path): path, length, content.
fn digest_of(root: &Path, sources: &[String]) -> Result<String, String> {
    fn collect(path: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        if path.is_dir() {
            for entry in std::fs::read_dir(path)? {
                collect(&entry?.path(), out)?;
            }
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path.to_path_buf());
        }
        Ok(())
    }
    let mut files = Vec::new();
    for source in sources {
        let path = root.join(source);
        if !path.exists() {
            return Err(format!(
                "source `{source}` does not exist: point `sources` in {LOCK} at where the code is now, then re-pin: {REPIN}"
            ));
        }
        collect(&path, &mut files).map_err(|e| format!("{source}: {e}"))?;
    }
    files.sort();
    files.dedup();
    let mut hasher = blake3::Hasher::new();
    for file in files {
        let rel = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .to_string_lossy()
            .replace('\\', "/");
        let content = std::fs::read(&file).map_err(|e| format!("{rel}: {e}"))?;
        hasher.update(rel.as_bytes());
        hasher.update(&[0]);
        hasher.update(&(content.len() as u64).to_le_bytes());
        hasher.update(&content);
    }
    Ok(hasher.finalize().to_hex().to_string())
}

/// Checks `lock` against the sources under `root` and the kinds' current `versions`. Returns
/// the re-pinned lock and every problem, each saying how to resolve it.
fn check(lock: &Lock, root: &Path, versions: &BTreeMap<String, u32>) -> (Lock, Vec<String>) {
    let mut problems = Vec::new();
    let mut pinned = BTreeMap::new();
    for (kind, version) in versions {
        let Some(pin) = lock.kinds.get(kind) else {
            problems.push(format!(
                "kind `{kind}` is not in {LOCK}: add a [kinds.{kind}] table with its `sources`, then re-pin: {REPIN}"
            ));
            continue;
        };
        let digest = match digest_of(root, &pin.sources) {
            Ok(d) => d,
            Err(e) => {
                problems.push(format!("kind `{kind}`: {e}"));
                continue;
            }
        };
        if digest != pin.digest && *version == pin.impl_version {
            problems.push(format!(
                "kind `{kind}`: its code changed ({}) but its IMPL_VERSION is still {version}.\n  \
                 If results can change: bump IMPL_VERSION of `{kind}` to {} (cached results are then recomputed), then re-pin.\n  \
                 If this is a pure refactor: re-pin: {REPIN}",
                pin.sources.join(", "),
                version + 1
            ));
        } else if *version != pin.impl_version {
            problems.push(format!(
                "kind `{kind}`: IMPL_VERSION is {version}, {LOCK} pins {}: re-pin to record the bump: {REPIN}",
                pin.impl_version
            ));
        }
        pinned.insert(
            kind.clone(),
            Pin {
                impl_version: *version,
                sources: pin.sources.clone(),
                digest,
            },
        );
    }
    for kind in lock.kinds.keys().filter(|k| !versions.contains_key(*k)) {
        problems.push(format!(
            "{LOCK} pins `{kind}`, which is no longer a kind: remove it, or re-pin: {REPIN}"
        ));
    }
    (Lock { kinds: pinned }, problems)
}

fn render(lock: &Lock) -> String {
    format!("{HEADER}\n{}", toml::to_string_pretty(lock).unwrap())
}

#[test]
fn kinds_lock_pins_the_code_of_every_kind() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(LOCK))
        .unwrap_or_else(|e| panic!("{LOCK}: {e}; create it with: {REPIN}"));
    let lock: Lock = toml::from_str(&text).unwrap_or_else(|e| panic!("{LOCK}: {e}"));
    let versions: BTreeMap<String, u32> = asymflow::stages::registry()
        .kinds()
        .map(|k| (k.kind().to_string(), k.impl_version()))
        .collect();
    let (pinned, problems) = check(&lock, root, &versions);
    if std::env::var("ASYMFLOW_REPIN").is_ok_and(|v| v == "1") {
        std::fs::write(root.join(LOCK), render(&pinned)).unwrap();
        eprintln!("re-pinned {} kinds in {LOCK}", pinned.kinds.len());
        return;
    }
    assert!(
        problems.is_empty(),
        "{LOCK} is out of date:\n{}",
        problems.join("\n")
    );
    assert_eq!(
        render(&pinned),
        text,
        "{LOCK} is not in its canonical form; re-pin: {REPIN}"
    );
}

#[test]
fn kinds_lock_fails_on_an_unversioned_edit_and_passes_after_a_bump_or_repin() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src/nn")).unwrap();
    std::fs::write(dir.path().join("src/nn/train.rs"), "fn lr() -> f64 { 0.1 }").unwrap();
    std::fs::write(dir.path().join("src/kind.rs"), "// the stage").unwrap();
    let sources = vec!["src/kind.rs".to_string(), "src/nn/".to_string()];
    let versions = BTreeMap::from([("train".to_string(), 1)]);
    let lock = Lock {
        kinds: BTreeMap::from([(
            "train".to_string(),
            Pin {
                impl_version: 1,
                sources: sources.clone(),
                digest: digest_of(dir.path(), &sources).unwrap(),
            },
        )]),
    };
    assert!(check(&lock, dir.path(), &versions).1.is_empty());

    // An edit deep in a shared folder, without a bump: the test fails and says what to do.
    std::fs::write(dir.path().join("src/nn/train.rs"), "fn lr() -> f64 { 0.2 }").unwrap();
    let (repinned, problems) = check(&lock, dir.path(), &versions);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("bump IMPL_VERSION of `train` to 2"),
        "{}",
        problems[0]
    );
    assert!(problems[0].contains(REPIN), "{}", problems[0]);
    // Re-pinning (a pure refactor) makes it pass.
    assert!(check(&repinned, dir.path(), &versions).1.is_empty());
    // A bump alone still needs the re-pin that records it; then it passes.
    let bumped = BTreeMap::from([("train".to_string(), 2)]);
    let (repinned, problems) = check(&lock, dir.path(), &bumped);
    assert!(
        problems[0].contains("re-pin to record the bump"),
        "{problems:?}"
    );
    assert!(check(&repinned, dir.path(), &bumped).1.is_empty());
    // A new kind, or moved sources, fail with a pointer to the fix.
    let more = BTreeMap::from([("train".to_string(), 2), ("new".to_string(), 1)]);
    assert!(check(&repinned, dir.path(), &more).1[0].contains("add a [kinds.new] table"));
    std::fs::remove_file(dir.path().join("src/kind.rs")).unwrap();
    assert!(check(&repinned, dir.path(), &bumped).1[0].contains("point `sources`"));
}
