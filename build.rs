//! The engine's build script.
//!
//! - Records the git commit asymflow is built from (`ASYMFLOW_GIT_COMMIT`), for the provenance
//!   stored with every result; it reruns only when the checked-out commit changes.
//! - The engine binary links no libtorch. Its integration tests and benchmarks do (they run the
//!   tensor kinds in-process through the `asymflow-tensor` dev-dependency), so they alone get an
//!   rpath to libtorch, as the worker binary does (`crates/tensor/build.rs`).

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let commit = git_dir(Path::new(".")).and_then(|dir| head_commit(&dir));
    println!(
        "cargo:rustc-env=ASYMFLOW_GIT_COMMIT={}",
        commit.unwrap_or_else(|| "unknown".into())
    );
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    if let Ok(libtorch) = std::env::var("LIBTORCH") {
        let lib = Path::new(&libtorch).join("lib");
        println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{}", lib.display());
        println!("cargo:rustc-link-arg-benches=-Wl,-rpath,{}", lib.display());
    }
}

/// The git folder: `.git`, or where a worktree's `.git` file points.
fn git_dir(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    if dot_git.is_dir() {
        return Some(dot_git);
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let dir = PathBuf::from(text.strip_prefix("gitdir:")?.trim());
    Some(if dir.is_absolute() {
        dir
    } else {
        root.join(dir)
    })
}

/// The commit HEAD names, registering every file it was read from for reruns.
fn head_commit(git_dir: &Path) -> Option<String> {
    let head_path = git_dir.join("HEAD");
    println!("cargo:rerun-if-changed={}", head_path.display());
    let head = std::fs::read_to_string(&head_path).ok()?;
    let Some(reference) = head.trim().strip_prefix("ref:") else {
        return Some(head.trim().to_string());
    };
    let reference = reference.trim();
    // A worktree keeps its HEAD privately but its refs in the common folder.
    let common = std::fs::read_to_string(git_dir.join("commondir"))
        .map(|c| git_dir.join(c.trim()))
        .unwrap_or_else(|_| git_dir.to_path_buf());
    let loose = common.join(reference);
    println!("cargo:rerun-if-changed={}", loose.display());
    if let Ok(commit) = std::fs::read_to_string(&loose) {
        return Some(commit.trim().to_string());
    }
    let packed_path = common.join("packed-refs");
    println!("cargo:rerun-if-changed={}", packed_path.display());
    let packed = std::fs::read_to_string(packed_path).ok()?;
    packed.lines().find_map(|line| {
        let (commit, name) = line.split_once(' ')?;
        (name == reference).then(|| commit.to_string())
    })
}
