//! Code in the key: `kinds.lock` pins, for every built-in stage kind, a digest of the source
//! files it runs, the versions of the external crates that compute for it, and its
//! `IMPL_VERSION`. An edit to those files (or a crate update in `Cargo.lock`) fails this test
//! until someone decides: bump the kind's version (its results change, so the cache recomputes
//! them) or re-pin (a pure refactor). The rule is written at the top of `src/cache/key.rs`.
//!
//! Nobody writes the file lists: they are derived from the code ([`crate::source_graph`]),
//! starting at each kind's roots (its declaration `src/stages/KIND.rs`, its runner
//! `crates/tensor/src/stages/KIND.rs` with the worker's runtime set-up `crates/tensor/src/
//! worker.rs`, the tensor crate's build script and C++ shim when it has one, and the engine's
//! job runner `src/exec/worker.rs`), so adding an import adds the file. The worker binary's
//! `main.rs` only dispatches jobs to the registry of every kind, so it is no root: as one it
//! would make each kind run every other. The lock lists them so a re-pin shows in review what a kind now runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::source_graph::SourceGraph;

const LOCK: &str = "kinds.lock";
const REPIN: &str = "ASYMFLOW_REPIN=1 cargo test --release --test integration kinds_lock";

const HEADER: &str = "\
# kinds.lock: the code each stage kind runs, pinned (the rule is at the top of src/cache/key.rs).
# `sources` (files, relative to the repository root) and `crates` (external crates with their
# dependency closure, from Cargo.lock) are derived from the code by tests/source_graph.rs, from
# each kind's roots; `digest` is blake3 over both; `impl_version` is the kind's IMPL_VERSION.
# A change to a kind's sources fails `cargo test kinds_lock` until you either bump the kind's
# IMPL_VERSION (results change) or re-pin (a pure refactor):
#   ASYMFLOW_REPIN=1 cargo test --release --test integration kinds_lock
";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Pin {
    impl_version: u32,
    digest: String,
    sources: Vec<String>,
    #[serde(default)]
    crates: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Lock {
    kinds: BTreeMap<String, Pin>,
}

/// The roots of `kind`'s walk: what runs it, by the layout's convention.
fn roots(root: &Path, kind: &str) -> Result<Vec<String>, String> {
    let snake = kind.replace('-', "_");
    let declaration = [
        format!("src/stages/{snake}.rs"),
        format!("src/stages/{snake}/mod.rs"),
    ]
    .into_iter()
    .find(|p| root.join(p).is_file())
    .ok_or_else(|| {
        format!(
            "kind `{kind}` has no src/stages/{snake}.rs: the lock finds a kind's code from there"
        )
    })?;
    let mut roots = vec![declaration, "src/exec/worker.rs".to_string()];
    let runner = format!("crates/tensor/src/stages/{snake}.rs");
    if root.join(&runner).is_file() {
        roots.extend([
            runner,
            "crates/tensor/src/worker.rs".into(),
            "crates/tensor/build.rs".into(),
            "crates/tensor/csrc".into(),
        ]);
    }
    Ok(roots)
}

/// A kind's pin as the code stands: its derived sources and crates, and their digest.
fn derive(graph: &SourceGraph, root: &Path, kind: &str, version: u32) -> Result<Pin, String> {
    let reached = graph.reach(&roots(root, kind)?)?;
    let mut hasher = blake3::Hasher::new();
    for rel in &reached.files {
        let content = std::fs::read(root.join(rel)).map_err(|e| format!("{rel}: {e}"))?;
        hasher.update(rel.as_bytes());
        hasher.update(&[0]);
        hasher.update(&(content.len() as u64).to_le_bytes());
        hasher.update(&content);
    }
    for krate in &reached.crates {
        hasher.update(krate.as_bytes());
        hasher.update(&[0]);
    }
    Ok(Pin {
        impl_version: version,
        digest: hasher.finalize().to_hex().to_string(),
        sources: reached.files.into_iter().collect(),
        crates: reached.crates.into_iter().collect(),
    })
}

/// What differs between two lists, for the message: `+added`, `-removed`.
fn list_change(old: &[String], new: &[String]) -> String {
    let (old, new): (BTreeSet<_>, BTreeSet<_>) = (old.iter().collect(), new.iter().collect());
    let mut parts: Vec<String> = new.difference(&old).map(|s| format!("+{s}")).collect();
    parts.extend(old.difference(&new).map(|s| format!("-{s}")));
    parts.join(", ")
}

/// Checks `lock` against the code under `root` and the kinds' current `versions`. Returns the
/// re-pinned lock and every problem, each saying how to resolve it.
fn check(lock: &Lock, root: &Path, versions: &BTreeMap<String, u32>) -> (Lock, Vec<String>) {
    let mut problems = Vec::new();
    let mut pinned = BTreeMap::new();
    let graph = match SourceGraph::workspace(root) {
        Ok(g) => g,
        Err(e) => return (Lock { kinds: pinned }, vec![e]),
    };
    for (kind, version) in versions {
        let now = match derive(&graph, root, kind, *version) {
            Ok(pin) => pin,
            Err(e) => {
                problems.push(format!("kind `{kind}`: {e}"));
                continue;
            }
        };
        match lock.kinds.get(kind) {
            None => problems.push(format!(
                "kind `{kind}` is not in {LOCK}: pin it: {REPIN}"
            )),
            Some(pin) if now.digest != pin.digest && *version == pin.impl_version => {
                let mut what = Vec::new();
                let files = list_change(&pin.sources, &now.sources);
                if !files.is_empty() {
                    what.push(format!("files {files}"));
                }
                let crates = list_change(&pin.crates, &now.crates);
                if !crates.is_empty() {
                    what.push(format!("crates {crates}"));
                }
                if what.is_empty() {
                    what.push(format!("the content of its {} files", now.sources.len()));
                }
                problems.push(format!(
                    "kind `{kind}`: its code changed ({}) but its IMPL_VERSION is still {version}.\n  \
                     If results can change: bump IMPL_VERSION of `{kind}` to {} (cached results are then recomputed), then re-pin.\n  \
                     If this is a pure refactor: re-pin: {REPIN}",
                    what.join("; "),
                    version + 1
                ));
            }
            Some(pin) if *version != pin.impl_version => problems.push(format!(
                "kind `{kind}`: IMPL_VERSION is {version}, {LOCK} pins {}: re-pin to record the bump: {REPIN}",
                pin.impl_version
            )),
            Some(_) => {}
        }
        pinned.insert(kind.clone(), now);
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

/// A two-crate workspace with one kind, `train`, as the real layout has it.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        (
            "Cargo.toml",
            "[package]\nname = \"asymflow\"\n[dependencies]\n",
        ),
        (
            "crates/tensor/Cargo.toml",
            "[package]\nname = \"t\"\n[dependencies]\n",
        ),
        ("src/lib.rs", "pub mod stages;\npub mod nn;\npub mod exec;"),
        ("src/exec/mod.rs", "pub mod worker;"),
        ("src/exec/worker.rs", "pub fn run() {}"),
        ("src/stages/mod.rs", "pub mod train;"),
        ("src/stages/train.rs", "use crate::nn::train::lr;"),
        ("src/nn/mod.rs", "pub mod train;\npub mod groups;"),
        ("src/nn/train.rs", "pub fn lr() -> f64 { 0.1 }"),
        ("src/nn/groups.rs", "pub fn flip() {}"),
    ];
    for (path, text) in files {
        let full = dir.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    }
    dir
}

#[test]
fn kinds_lock_fails_on_an_unversioned_edit_and_passes_after_a_bump_or_repin() {
    let dir = workspace();
    let versions = BTreeMap::from([("train".to_string(), 1)]);
    let (lock, problems) = check(
        &Lock {
            kinds: BTreeMap::new(),
        },
        dir.path(),
        &versions,
    );
    assert!(problems[0].contains("is not in kinds.lock"), "{problems:?}");
    assert_eq!(
        lock.kinds["train"].sources,
        [
            "src/exec/worker.rs",
            "src/nn/train.rs",
            "src/stages/train.rs"
        ],
        "derived from the code"
    );
    assert!(check(&lock, dir.path(), &versions).1.is_empty());

    // An edit deep in a file the kind calls, without a bump: the test fails and says what to do.
    std::fs::write(
        dir.path().join("src/nn/train.rs"),
        "pub fn lr() -> f64 { 0.2 }",
    )
    .unwrap();
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
    // An edit to a file the kind does not call leaves it pinned.
    std::fs::write(dir.path().join("src/nn/groups.rs"), "pub fn flip() { }").unwrap();
    assert!(check(&repinned, dir.path(), &bumped).1.is_empty());
    // A kind without a declaration file fails with a pointer to the layout.
    let more = BTreeMap::from([("train".to_string(), 2), ("new".to_string(), 1)]);
    assert!(check(&repinned, dir.path(), &more).1[0].contains("no src/stages/new.rs"));
}

#[test]
fn kinds_lock_gains_a_file_when_a_kind_imports_it() {
    let dir = workspace();
    let versions = BTreeMap::from([("train".to_string(), 1)]);
    let (lock, _) = check(
        &Lock {
            kinds: BTreeMap::new(),
        },
        dir.path(),
        &versions,
    );
    // The augmentation code joins through one new import; the lock names it.
    std::fs::write(
        dir.path().join("src/stages/train.rs"),
        "use crate::nn::train::lr;\nuse crate::nn::groups::flip;",
    )
    .unwrap();
    let (repinned, problems) = check(&lock, dir.path(), &versions);
    assert!(
        problems[0].contains("files +src/nn/groups.rs"),
        "{problems:?}"
    );
    assert!(repinned.kinds["train"]
        .sources
        .contains(&"src/nn/groups.rs".to_string()));
}

#[test]
fn the_real_kinds_pin_the_code_the_issue_found_missing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let graph = SourceGraph::workspace(root).unwrap();
    let pin = |kind: &str| derive(&graph, root, kind, 0).unwrap();
    let teacher = pin("train-teacher");
    if let Ok(file) = std::env::var("ASYMFLOW_WHY_FILE") {
        let reached = graph.reach(&roots(root, "train-teacher").unwrap()).unwrap();
        eprintln!("{:#?}", SourceGraph::chain(&reached, &file));
    }
    for file in [
        "src/stages/groups/augment.rs",
        "src/stages/groups/optim.rs",
        "src/stages/groups/batching.rs",
        "src/exec/worker.rs",
        "crates/tensor/src/worker.rs",
    ] {
        assert!(
            teacher.sources.contains(&file.to_string()),
            "train-teacher misses {file}"
        );
    }
    assert!(
        teacher.crates.iter().any(|c| c.starts_with("tch ")),
        "{:?}",
        teacher.crates
    );
    let evaluate = pin("evaluate");
    assert!(
        evaluate
            .sources
            .iter()
            .any(|f| f.starts_with("src/metrics/")),
        "evaluate runs the metric registry: {:?}",
        evaluate.sources
    );
    let embed = pin("embed");
    assert!(
        embed
            .sources
            .iter()
            .any(|f| f.starts_with("crates/tensor/src/metrics/")),
        "embed writes item ids through the tensor crate's metrics: {:?}",
        embed.sources
    );
}
