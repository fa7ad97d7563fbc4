//! The source files a stage kind runs, derived from the code itself, for `kinds.lock`.
//!
//! Starting from a kind's roots (its declaration file, its runner in the tensor crate, the
//! worker code that runs every job), the walk follows every path the code names: `use` trees
//! and paths written inline (`crate::`, `super::`, `self::`, a child module, the other crate by
//! its name). A path resolves to the deepest module file it reaches; when the item it names is
//! only re-exported there (`pub use x::Item`), the walk follows the re-export instead of taking
//! the whole parent module, so `use crate::kind::Params` pins `kind/params.rs` and not every
//! file under `kind/`. Every file reached is read whole and walked in turn. `mod` declarations
//! alone are not edges: a module is in a kind's sources when something the kind runs names it.
//!
//! The walk errs on the side of more files: trailing comments and strings that spell a path
//! count as references (only whole comment lines are skipped), and a file is taken whole, not
//! item by item. A file too many makes the lock ask about an edit that cannot change results
//! (re-pin); a file too few would let a result change under an unchanged key, which is the
//! bug the lock exists to prevent.
//!
//! One boundary: the walk does not enter `src/cache/` ([`STORAGE`]). The cache stores results
//! and never computes them; what it adds to a result's identity is the key's layout, pinned by
//! the golden test in `src/cache/key.rs` and `KEY_FORMAT`, and its integrity is the reliability
//! suite's to guard. Walking into it would tie every kind to the remote's and the index's code,
//! and a lock that fails on every storage edit teaches re-pinning without reading.
//!
//! External crates: every dependency of the crate (from its `Cargo.toml`) that a reached file
//! names (`tch::`, `use image::...`), with its whole dependency closure from `Cargo.lock`
//! (an image decoder's version moves pixels as much as our own code does).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Folders (relative to the workspace root) the walk does not enter; see the module docs.
pub const STORAGE: &[&str] = &["src/cache/"];

/// One crate of the workspace: the name other crates use for it and its source folder.
#[derive(Debug, Clone)]
pub struct CrateSrc {
    /// The crate's name in paths (`asymflow`, `asymflow_tensor`).
    pub name: String,
    /// The folder holding `lib.rs`, relative to the workspace root.
    pub src: PathBuf,
    /// Its dependencies' names as written in paths (`-` as `_`), from its `Cargo.toml`.
    pub deps: BTreeSet<String>,
    /// Its package name in `Cargo.lock`, whose entry says which version of each dependency
    /// it uses when several are locked.
    pub package: String,
}

/// What a kind's roots reach.
#[derive(Debug, Default, PartialEq)]
pub struct Reached {
    /// Source files, relative to the workspace root, sorted.
    pub files: BTreeSet<String>,
    /// External crates named by those files, as `name version`, with their dependency closure.
    pub crates: BTreeSet<String>,
    /// For each file but the roots, the file that first named it: the chain that explains
    /// why a file is in a kind's sources.
    pub via: BTreeMap<String, String>,
}

/// A module: its crate (index into the crate list) and its path below the crate root.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Module {
    krate: usize,
    path: Vec<String>,
}

/// The workspace's module files and the walk over them.
#[derive(Clone)]
pub struct SourceGraph {
    root: PathBuf,
    crates: Vec<CrateSrc>,
    /// `Cargo.lock`'s packages: (name, version) -> dependency specs (`name` or `name version`).
    lock: BTreeMap<(String, String), Vec<String>>,
    /// Folders paths do not resolve into ([`STORAGE`] for a kind's walk; none for
    /// [`SourceGraph::imports`]).
    skip: &'static [&'static str],
}

impl SourceGraph {
    /// The graph of the workspace at `root` over `crates`, with `Cargo.lock`'s packages.
    pub fn new(root: &Path, crates: Vec<CrateSrc>) -> Result<Self, String> {
        let lock_text = std::fs::read_to_string(root.join("Cargo.lock")).unwrap_or_default();
        Ok(SourceGraph {
            root: root.to_path_buf(),
            crates,
            lock: parse_cargo_lock(&lock_text)?,
            skip: STORAGE,
        })
    }

    /// The workspace at `root`: the engine crate (`src/`) and the tensor crate
    /// (`crates/tensor/src/`), each with the dependencies its `Cargo.toml` lists.
    pub fn workspace(root: &Path) -> Result<Self, String> {
        let crates = vec![
            CrateSrc {
                name: "asymflow".into(),
                src: "src".into(),
                deps: manifest_deps(&root.join("Cargo.toml"))?,
                package: "asymflow".into(),
            },
            CrateSrc {
                name: "asymflow_tensor".into(),
                src: "crates/tensor/src".into(),
                deps: manifest_deps(&root.join("crates/tensor/Cargo.toml"))?,
                package: "asymflow-tensor".into(),
            },
        ];
        Self::new(root, crates)
    }

    /// Everything reachable from `roots` (files relative to the workspace root; a folder
    /// stands for every file below it, taken whole, not walked into for `.rs` edges unless it
    /// holds Rust).
    pub fn reach(&self, roots: &[String]) -> Result<Reached, String> {
        let mut reached = Reached::default();
        let mut queue: Vec<(PathBuf, Option<String>)> = Vec::new();
        for root in roots {
            let path = self.root.join(root);
            if path.is_dir() {
                for file in files_below(&path)? {
                    queue.push((file, None));
                }
            } else if path.is_file() {
                queue.push((path, None));
            } else {
                return Err(format!("`{root}` does not exist"));
            }
        }
        let mut seen = BTreeSet::new();
        let mut direct_crates = BTreeSet::new();
        let mut named = |krate: usize, dep: &str| {
            if let Some(id) = self.direct_package(krate, dep) {
                direct_crates.insert(id);
            }
        };
        while let Some((file, parent)) = queue.pop() {
            if !seen.insert(file.clone()) {
                continue;
            }
            let rel = self.relative(&file);
            if let Some(parent) = parent {
                reached.via.insert(rel.clone(), parent);
            }
            reached.files.insert(rel.clone());
            if file.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let text =
                std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
            let Some(module) = self.module_of(&file) else {
                continue;
            };
            let code = code_lines(&text);
            for path in referenced_paths(&code) {
                for target in self.resolve(&module, &path, 0)? {
                    queue.push((target, Some(format!("{rel} ({})", path.join("::")))));
                }
            }
            for dep in &self.crates[module.krate].deps {
                let workspace_crate = self.crates.iter().any(|c| &c.name == dep);
                if !workspace_crate && names_crate(&code, dep) {
                    named(module.krate, dep);
                }
            }
        }
        reached.crates = self.crate_closure(&direct_crates);
        Ok(reached)
    }

    /// The files `file` (relative to the workspace root) names directly, in every folder
    /// ([`STORAGE`] included), each path resolved as the walk resolves it: to the file that
    /// defines the item, through re-exports; a `pub use` counts only where the file's own code
    /// uses the name. Test modules and comment lines are not code, and a file never names
    /// itself.
    pub fn imports(&self, file: &str) -> Result<BTreeSet<String>, String> {
        let everywhere = SourceGraph {
            skip: &[],
            ..self.clone()
        };
        let path = self.root.join(file);
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let Some(module) = self.module_of(&path) else {
            return Ok(BTreeSet::new());
        };
        let mut out = BTreeSet::new();
        for referenced in referenced_paths(&code_lines(&text)) {
            for target in everywhere.resolve(&module, &referenced, 0)? {
                let target = self.relative(&target);
                if target != file {
                    out.insert(target);
                }
            }
        }
        Ok(out)
    }

    /// Every `.rs` file of the workspace's crates, relative to the root, sorted.
    pub fn rust_files(&self) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        for c in &self.crates {
            for file in files_below(&self.root.join(&c.src))? {
                if file.extension().is_some_and(|x| x == "rs") {
                    out.push(self.relative(&file));
                }
            }
        }
        out.sort();
        Ok(out)
    }

    fn relative(&self, file: &Path) -> String {
        file.strip_prefix(&self.root)
            .unwrap_or(file)
            .to_string_lossy()
            .replace('\\', "/")
    }

    /// The module a file is, when it is a module file of one of the crates (`main.rs` is its
    /// binary's root, read as the crate root).
    fn module_of(&self, file: &Path) -> Option<Module> {
        for (krate, c) in self.crates.iter().enumerate() {
            let Ok(rel) = file.strip_prefix(self.root.join(&c.src)) else {
                continue;
            };
            let mut path: Vec<String> = rel
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            let last = path.pop()?;
            match last.as_str() {
                "lib.rs" | "main.rs" | "mod.rs" => {}
                name => path.push(name.strip_suffix(".rs")?.to_string()),
            }
            return Some(Module { krate, path });
        }
        None
    }

    /// The file of a module, if it exists.
    fn file_of(&self, module: &Module) -> Option<PathBuf> {
        let src = self.root.join(&self.crates[module.krate].src);
        if module.path.is_empty() {
            return Some(src.join("lib.rs")).filter(|p| p.is_file());
        }
        let joined: PathBuf = module.path.iter().collect();
        let flat = src.join(&joined).with_extension("rs");
        if flat.is_file() {
            return Some(flat);
        }
        Some(src.join(joined).join("mod.rs")).filter(|p| p.is_file())
    }

    /// The files a path written in `from` names. Unresolvable paths (an external crate, a
    /// local variable that happens to precede `::`) name none.
    fn resolve(
        &self,
        from: &Module,
        path: &[String],
        depth: usize,
    ) -> Result<Vec<PathBuf>, String> {
        if depth > 32 {
            return Ok(Vec::new());
        }
        let Some((krate, mut segments)) = self.absolute(from, path) else {
            return Ok(Vec::new());
        };
        // The deepest module file the path reaches.
        let mut module = Module {
            krate,
            path: Vec::new(),
        };
        while let Some(next) = segments.first() {
            let mut deeper = module.clone();
            deeper.path.push(next.clone());
            if self.file_of(&deeper).is_none() {
                break;
            }
            module = deeper;
            segments.remove(0);
        }
        let Some(file) = self.file_of(&module) else {
            return Ok(Vec::new());
        };
        if self
            .skip
            .iter()
            .any(|s| self.relative(&file).starts_with(s))
        {
            return Ok(Vec::new());
        }
        // An item that the module only re-exports: follow the re-export.
        if let Some(item) = segments.first().filter(|s| s.as_str() != "*") {
            let text =
                std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
            if let Some(target) = reexport_of(&code_lines(&text), item) {
                let mut followed = target;
                followed.extend(segments[1..].iter().cloned());
                return self.resolve(&module, &followed, depth + 1);
            }
        }
        Ok(vec![file])
    }

    /// The chain of files that brought `file` in, from a root.
    #[allow(dead_code)]
    pub fn chain(reached: &Reached, file: &str) -> Vec<String> {
        let mut out = vec![file.to_string()];
        let mut at = file.to_string();
        while let Some(parent) = reached.via.get(&at) {
            out.push(parent.clone());
            at = parent.split(' ').next().unwrap_or_default().to_string();
            if out.len() > 64 {
                break;
            }
        }
        out
    }

    /// A path as (crate, segments below its root), from the module it is written in.
    fn absolute(&self, from: &Module, path: &[String]) -> Option<(usize, Vec<String>)> {
        let first = path.first()?;
        let rest = path[1..].to_vec();
        match first.as_str() {
            "crate" => Some((from.krate, rest)),
            "self" => Some((from.krate, [from.path.clone(), rest].concat())),
            "super" => {
                let mut base = from.path.clone();
                let mut rest = path;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
                Some((from.krate, [base, rest.to_vec()].concat()))
            }
            name => {
                if let Some(k) = self.crates.iter().position(|c| c.name == name) {
                    return Some((k, rest));
                }
                // A child module of the current one (2018 paths).
                let mut child = from.clone();
                child.path.push(name.to_string());
                self.file_of(&child)
                    .map(|_| (from.krate, [from.path.clone(), path.to_vec()].concat()))
            }
        }
    }

    /// The locked package (name, version) that crate `krate` uses for dependency `dep` (its
    /// name as written in paths).
    fn direct_package(&self, krate: usize, dep: &str) -> Option<(String, String)> {
        let own = self
            .lock
            .iter()
            .find(|((name, _), _)| *name == self.crates[krate].package)
            .map(|(_, deps)| deps);
        let spec = own
            .into_iter()
            .flatten()
            .find(|spec| {
                spec.split(' ')
                    .next()
                    .is_some_and(|n| n.replace('-', "_") == dep)
            })
            .cloned()
            .or_else(|| {
                self.lock
                    .keys()
                    .find(|(name, _)| name.replace('-', "_") == dep)
                    .map(|(name, _)| name.clone())
            })?;
        self.package_of(&spec)
    }

    /// The package a dependency spec of `Cargo.lock` names: `name version`, or `name` when only
    /// one version is locked.
    fn package_of(&self, spec: &str) -> Option<(String, String)> {
        let mut parts = spec.split(' ');
        let name = parts.next()?;
        let version = parts.next();
        self.lock
            .keys()
            .find(|(n, v)| n == name && version.is_none_or(|want| want == v))
            .cloned()
    }

    /// The packages named, with their dependency closure, as `name version`.
    fn crate_closure(&self, direct: &BTreeSet<(String, String)>) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let mut queue: Vec<(String, String)> = direct.iter().cloned().collect();
        let mut seen = BTreeSet::new();
        while let Some(id) = queue.pop() {
            if !seen.insert(id.clone()) {
                continue;
            }
            let Some(deps) = self.lock.get(&id) else {
                continue;
            };
            if self.crates.iter().all(|c| c.package != id.0) {
                out.insert(format!("{} {}", id.0, id.1));
            }
            queue.extend(deps.iter().filter_map(|spec| self.package_of(spec)));
        }
        out
    }
}

/// Every file below `dir`, sorted.
fn files_below(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))? {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The code a kind can run: the text without whole comment lines (`//`, `//!`, `///`: doc
/// links are not code) and without `#[cfg(test)]` modules (unit tests never run in a stage).
fn code_lines(text: &str) -> String {
    let code = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    without_test_modules(&code)
}

/// `code` with each `#[cfg(test)] mod NAME { ... }` blanked out (braces matched; braces in
/// strings or chars inside a test module may end the match early, which only keeps more code).
fn without_test_modules(code: &str) -> String {
    let mut out = code.to_string();
    let mut from = 0;
    while let Some(at) = out[from..].find("#[cfg(test)]") {
        let start = from + at;
        let after = start + "#[cfg(test)]".len();
        let rest = out[after..].trim_start();
        let is_module = rest.starts_with("mod ") || rest.starts_with("pub mod ");
        let open = out[after..].find('{').map(|o| after + o);
        let (true, Some(open)) = (is_module, open) else {
            from = after;
            continue;
        };
        if out[after..open].contains(';') {
            from = after;
            continue;
        }
        let mut depth = 0usize;
        let mut end = out.len();
        for (i, c) in out[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        let blank: String = out[start..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(start..end, &blank);
        from = start + blank.len();
    }
    out
}

/// Whether code names the external crate `dep` (`dep::` or `use dep` / `extern crate dep`).
fn names_crate(code: &str, dep: &str) -> bool {
    let mut from = 0;
    while let Some(at) = code[from..].find(dep) {
        let start = from + at;
        let end = start + dep.len();
        from = end;
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let after = &code[end..];
        if after.starts_with("::") || after.starts_with(';') || after.starts_with(" as ") {
            return true;
        }
    }
    false
}

/// Every path the code names: the leaves of its `use` trees and each inline `a::b::c`. A
/// `pub use` is only a name given to others, so its leaves count when the file's own code uses
/// that name (a `mod.rs` that re-exports every kind does not depend on every kind).
fn referenced_paths(code: &str) -> Vec<Vec<String>> {
    let decls = use_decls(code);
    let mut rest = code.to_string();
    for d in decls.iter().rev() {
        rest.replace_range(d.span.clone(), &" ".repeat(d.span.len()));
    }
    let used: BTreeSet<String> = words(&rest).into_iter().map(|(_, w)| w).collect();
    let mut paths = Vec::new();
    for decl in &decls {
        for (bound, path) in flatten_use_aliased(&decl.tree) {
            if !decl.public || used.contains(&bound) || bound == "*" {
                paths.push(path);
            }
        }
    }
    paths.extend(inline_paths(&rest));
    paths
}

/// One `use` declaration: where it stands, whether it re-exports, and its tree.
struct UseDecl {
    span: std::ops::Range<usize>,
    public: bool,
    tree: String,
}

/// Every `use` declaration (`pub use`, `pub(crate) use` too) at a statement start.
fn use_decls(code: &str) -> Vec<UseDecl> {
    let mut out = Vec::new();
    for (at, word) in words(code) {
        if word != "use" {
            continue;
        }
        let before = code[..at].trim_end();
        let public = before.ends_with("pub") || before.ends_with(')');
        let statement_start = matches!(
            before.chars().next_back(),
            None | Some(';' | '}' | '{' | ']')
        );
        if !(public || statement_start) {
            continue;
        }
        let body = at + 3;
        let Some(end) = code[body..].find(';') else {
            continue;
        };
        out.push(UseDecl {
            span: at..body + end + 1,
            public,
            tree: code[body..body + end].to_string(),
        });
    }
    out
}

/// Word tokens (identifier-like) with their byte offsets.
fn words(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in code.char_indices() {
        let word_char = c.is_alphanumeric() || c == '_';
        match (word_char, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, code[s..i].to_string()));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, code[s..].to_string()));
    }
    out
}

/// The leaf paths of one use tree: `a::{b, c::{d, e as f}, self}` gives `a::b`, `a::c::d`,
/// `a::c::e`, `a`.
fn flatten_use(tree: &str) -> Vec<Vec<String>> {
    fn walk(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
        let tree = tree.trim();
        if tree.is_empty() {
            return;
        }
        if let Some(open) = tree.find('{') {
            let head = tree[..open].trim().trim_end_matches("::");
            let mut base = prefix.to_vec();
            base.extend(segments(head));
            let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
            for part in split_top(inner) {
                walk(&base, &part, out);
            }
            return;
        }
        let path = tree.split(" as ").next().unwrap_or(tree);
        let mut full = prefix.to_vec();
        for s in segments(path) {
            if s == "self" && !full.is_empty() {
                continue;
            }
            full.push(s);
        }
        if !full.is_empty() {
            out.push(full);
        }
    }
    let mut out = Vec::new();
    walk(&[], tree, &mut out);
    out
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .map(|s| s.trim().trim_start_matches("::").to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// `a, b::{c, d}, e` split at the top-level commas.
fn split_top(inner: &str) -> Vec<String> {
    let (mut depth, mut start, mut out) = (0, 0, Vec::new());
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(inner[start..i].to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(inner[start..].to_string());
    out
}

/// Paths written inline: a word followed by `::` and more words (`crate::data::Dataset`,
/// `super::outputs::LOSSES`, `training::positive`).
fn inline_paths(code: &str) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let tokens = words(code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let (at, ref word) = tokens[i];
        // The start of a path: not itself after `::`.
        if code[..at].ends_with("::") {
            i += 1;
            continue;
        }
        let mut path = vec![word.clone()];
        let mut end = at + word.len();
        let mut j = i + 1;
        while j < tokens.len() && bytes.get(end..end + 2) == Some(b"::") && tokens[j].0 == end + 2 {
            path.push(tokens[j].1.clone());
            end = tokens[j].0 + tokens[j].1.len();
            j += 1;
        }
        if path.len() > 1 {
            out.push(path);
        }
        i = j.max(i + 1);
    }
    out
}

/// Where a module's `pub use` sends `item`, if it re-exports it (by its own name or an alias).
fn reexport_of(code: &str, item: &str) -> Option<Vec<String>> {
    use_decls(code)
        .into_iter()
        .filter(|d| d.public)
        .flat_map(|d| flatten_use_aliased(&d.tree))
        .find(|(bound, _)| bound == item)
        .map(|(_, path)| path)
}

/// The leaves of a use tree as (the name they bind, the path).
fn flatten_use_aliased(tree: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let aliases: BTreeMap<String, String> = tree
        .split([',', '{', '}'])
        .filter_map(|part| {
            let (path, alias) = part.split_once(" as ")?;
            let last = segments(path).pop()?;
            Some((last, alias.trim().to_string()))
        })
        .collect();
    for path in flatten_use(tree) {
        let Some(last) = path.last().cloned() else {
            continue;
        };
        let bound = aliases.get(&last).cloned().unwrap_or(last);
        out.push((bound, path));
    }
    out
}

/// A manifest's `[dependencies]` names, as written in paths.
fn manifest_deps(manifest: &Path) -> Result<BTreeSet<String>, String> {
    let text =
        std::fs::read_to_string(manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let doc: toml::Table =
        toml::from_str(&text).map_err(|e| format!("{}: {e}", manifest.display()))?;
    Ok(doc
        .get("dependencies")
        .and_then(|d| d.as_table())
        .map(|t| t.keys().map(|k| k.replace('-', "_")).collect())
        .unwrap_or_default())
}

/// `Cargo.lock`'s packages: (name, version) -> dependency specs.
fn parse_cargo_lock(text: &str) -> Result<BTreeMap<(String, String), Vec<String>>, String> {
    if text.is_empty() {
        return Ok(BTreeMap::new());
    }
    let doc: toml::Table = toml::from_str(text).map_err(|e| format!("Cargo.lock: {e}"))?;
    let mut out = BTreeMap::new();
    for package in doc
        .get("package")
        .and_then(|p| p.as_array())
        .into_iter()
        .flatten()
    {
        let field = |k: &str| package.get(k).and_then(|v| v.as_str()).unwrap_or_default();
        let deps = package
            .get("dependencies")
            .and_then(|d| d.as_array())
            .into_iter()
            .flatten()
            .filter_map(|d| d.as_str())
            // `name version (source)`: the source adds nothing once the version is known.
            .map(|d| d.split(" (").next().unwrap_or(d).to_string())
            .collect();
        out.insert(
            (field("name").to_string(), field("version").to_string()),
            deps,
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, text).unwrap();
        }
        dir
    }

    fn graph(dir: &Path) -> SourceGraph {
        let krate = |name: &str, src: &str, deps: &[&str]| CrateSrc {
            name: name.into(),
            src: src.into(),
            deps: deps.iter().map(|d| d.to_string()).collect(),
            package: name.into(),
        };
        SourceGraph::new(
            dir,
            vec![
                krate("eng", "src", &["image"]),
                krate("ten", "t/src", &["tch"]),
            ],
        )
        .unwrap()
    }

    fn reach(dir: &Path, roots: &[&str]) -> BTreeSet<String> {
        let roots: Vec<String> = roots.iter().map(|r| r.to_string()).collect();
        graph(dir).reach(&roots).unwrap().files
    }

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn adding_an_import_adds_the_file() {
        let dir = tree(&[
            (
                "src/lib.rs",
                "pub mod stages;\npub mod nn;\npub mod report;",
            ),
            ("src/stages/mod.rs", "pub mod train;"),
            (
                "src/stages/train.rs",
                "use crate::nn::optim::Sgd;\nfn run() {}",
            ),
            ("src/nn/mod.rs", "pub mod optim;\npub mod augment;"),
            ("src/nn/optim.rs", "pub struct Sgd;"),
            ("src/nn/augment.rs", "pub fn flip() {}"),
            ("src/report/mod.rs", "pub fn table() {}"),
        ]);
        assert_eq!(
            reach(dir.path(), &["src/stages/train.rs"]),
            set(&["src/nn/optim.rs", "src/stages/train.rs"])
        );
        // One new inline call, no `use`: the file joins the kind's sources.
        std::fs::write(
            dir.path().join("src/stages/train.rs"),
            "use crate::nn::optim::Sgd;\nfn run() { crate::nn::augment::flip() }",
        )
        .unwrap();
        assert_eq!(
            reach(dir.path(), &["src/stages/train.rs"]),
            set(&[
                "src/nn/augment.rs",
                "src/nn/optim.rs",
                "src/stages/train.rs"
            ])
        );
    }

    #[test]
    fn reexports_are_followed_and_files_are_walked_transitively_across_crates() {
        let dir = tree(&[
            ("src/lib.rs", "pub mod kind;\npub mod data;"),
            (
                "src/kind/mod.rs",
                "mod params;\nmod context;\npub use params::{Params, Value as V};\npub use self::context::Ctx;\npub fn here() {}",
            ),
            ("src/kind/params.rs", "use super::super::data::Resolution;\npub struct Params;"),
            ("src/kind/context.rs", "pub struct Ctx;"),
            ("src/data/mod.rs", "pub mod resolution;\npub use resolution::Resolution;"),
            ("src/data/resolution.rs", "pub struct Resolution;"),
            ("t/src/lib.rs", "pub mod stages;\npub(crate) use eng::kind;"),
            ("t/src/stages/mod.rs", "pub mod embed;"),
            (
                "t/src/stages/embed.rs",
                "use crate::kind::{Params, V};\nfn f() { let t = tch::Tensor::zeros(); }",
            ),
        ]);
        let files = reach(dir.path(), &["t/src/stages/embed.rs"]);
        assert_eq!(
            files,
            set(&[
                "src/data/resolution.rs",
                "src/kind/params.rs",
                "t/src/stages/embed.rs"
            ]),
            "kind/mod.rs only re-exports what embed names; context.rs is not named"
        );
        // Naming an item defined in a mod.rs takes the mod.rs whole.
        std::fs::write(
            dir.path().join("t/src/stages/embed.rs"),
            "fn f() { crate::kind::here() }",
        )
        .unwrap();
        let files = reach(dir.path(), &["t/src/stages/embed.rs"]);
        assert!(files.contains("src/kind/mod.rs"), "{files:?}");
        assert!(
            !files.contains("src/kind/context.rs"),
            "a re-export the mod.rs's own code does not use is only a name: {files:?}"
        );
        // Once its own code uses a re-exported name, the file behind it comes along.
        std::fs::write(
            dir.path().join("src/kind/mod.rs"),
            "mod params;\nmod context;\npub use params::{Params, Value as V};\npub use self::context::Ctx;\npub fn here() -> Ctx { Ctx }",
        )
        .unwrap();
        let files = reach(dir.path(), &["t/src/stages/embed.rs"]);
        assert!(files.contains("src/kind/context.rs"), "{files:?}");
    }

    #[test]
    fn named_external_crates_come_with_their_dependency_closure() {
        let dir = tree(&[
            ("src/lib.rs", "pub mod a;"),
            ("src/a.rs", "use image::GenericImage;"),
            (
                "Cargo.lock",
                "version = 4\n\n[[package]]\nname = \"image\"\nversion = \"0.25.1\"\ndependencies = [\"zune-jpeg\"]\n\n[[package]]\nname = \"zune-jpeg\"\nversion = \"0.4.2\"\n\n[[package]]\nname = \"tch\"\nversion = \"0.24.0\"\n",
            ),
        ]);
        let reached = graph(dir.path()).reach(&["src/a.rs".to_string()]).unwrap();
        assert_eq!(reached.crates, set(&["image 0.25.1", "zune-jpeg 0.4.2"]));
        // Two locked versions of one crate: the crate's own entry says which it uses.
        std::fs::write(
            dir.path().join("Cargo.lock"),
            "version = 4\n\n[[package]]\nname = \"eng\"\nversion = \"0.1.0\"\ndependencies = [\"image 0.25.1\"]\n\n[[package]]\nname = \"image\"\nversion = \"0.24.9\"\n\n[[package]]\nname = \"image\"\nversion = \"0.25.1\"\ndependencies = [\"zune-jpeg\"]\n\n[[package]]\nname = \"zune-jpeg\"\nversion = \"0.4.2\"\n",
        )
        .unwrap();
        let reached = graph(dir.path()).reach(&["src/a.rs".to_string()]).unwrap();
        assert_eq!(reached.crates, set(&["image 0.25.1", "zune-jpeg 0.4.2"]));
    }

    #[test]
    fn unit_test_modules_are_not_code_a_kind_runs() {
        let dir = tree(&[
            ("src/lib.rs", "pub mod kind;\npub mod stages;"),
            (
                "src/kind.rs",
                "pub fn declared() {}\n#[cfg(test)]\nmod tests {\n    fn t() { crate::stages::registry(); }\n}\npub fn after() { crate::stages::other(); }",
            ),
            ("src/stages/mod.rs", "pub mod other_file;\npub fn registry() {}\npub use other_file::other;"),
            ("src/stages/other_file.rs", "pub fn other() {}"),
        ]);
        let files = reach(dir.path(), &["src/kind.rs"]);
        assert_eq!(
            files,
            set(&["src/kind.rs", "src/stages/other_file.rs"]),
            "the test module's call is not followed; code after it still is"
        );
    }

    #[test]
    fn use_trees_flatten_with_self_aliases_and_nesting() {
        let leaves = flatten_use("crate::kind::{self, a::{B, C as D}, E}");
        let text: Vec<String> = leaves.iter().map(|p| p.join("::")).collect();
        assert_eq!(
            text,
            vec![
                "crate::kind",
                "crate::kind::a::B",
                "crate::kind::a::C",
                "crate::kind::E"
            ]
        );
    }
}
