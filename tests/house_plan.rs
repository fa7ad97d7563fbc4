//! The house plan, checked on the code: no import circle between files, and the engine's
//! top-level modules in layers that never import upward (docs/architecture.md, "Layers").
//!
//! Imports are read as the `kinds.lock` walk reads them ([`SourceGraph::imports`]): every
//! `use` and every inline path, each resolved to the file that defines the item (through
//! re-exports); a `mod.rs` that only re-exports its children does not depend on them, and unit
//! test modules are not code. A circle found here is named with the import that closes it, so
//! the fix (move the shared item down a layer, or split the file that both sides need) is in
//! the message.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::source_graph::SourceGraph;

/// The engine's top-level modules, lowest first. A file may import from its own module and
/// from the modules before it, never from one after it. `kind` (the stage protocol) and
/// `metrics` (the metric registry, plain data) are the ground floor.
const LAYERS: &[&str] = &[
    "metrics", "kind", "config", "data", "spec", "search", "graph", "select", "cache", "report",
    "stages", "exec", "serve", "cli", "lib",
];

/// The top-level module of an engine file (`src/spec/search.rs` -> `spec`, `src/graph.rs` ->
/// `graph`; the crate roots are `lib`), or `None` outside `src/`.
fn layer_of(file: &str) -> Option<&str> {
    let rest = file.strip_prefix("src/")?;
    let first = rest.split('/').next()?;
    Some(match first {
        "lib.rs" | "main.rs" => "lib",
        other => other.strip_suffix(".rs").unwrap_or(other),
    })
}

fn workspace() -> SourceGraph {
    SourceGraph::workspace(Path::new(env!("CARGO_MANIFEST_DIR"))).expect("the workspace reads")
}

/// A crate root holds module declarations only; a path into it names a `#[macro_export]`ed
/// macro, which the language places at the root whichever file defines it.
fn is_crate_root(file: &str) -> bool {
    file.ends_with("src/lib.rs") || file.ends_with("src/main.rs")
}

/// Every file's direct imports, crate roots left out.
fn import_graph(graph: &SourceGraph) -> BTreeMap<String, BTreeSet<String>> {
    graph
        .rust_files()
        .expect("the sources list")
        .into_iter()
        .map(|f| {
            let mut imports = graph.imports(&f).expect("the file reads");
            imports.retain(|t| !is_crate_root(t));
            (f, imports)
        })
        .collect()
}

/// The strongly connected components of more than one file (Tarjan's algorithm).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.edges.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn no_two_files_import_each_other_even_through_others() {
    let edges = import_graph(&workspace());
    let found = circles(&edges);
    let described: Vec<String> = found
        .iter()
        .map(|component| {
            let inside: BTreeSet<&String> = component.iter().collect();
            let links: Vec<String> = component
                .iter()
                .flat_map(|f| {
                    edges[f]
                        .iter()
                        .filter(|t| inside.contains(t))
                        .map(move |t| format!("{f} -> {t}"))
                })
                .collect();
            format!("{} files: {}", component.len(), links.join("; "))
        })
        .collect();
    assert!(
        described.is_empty(),
        "import circles:\n{}",
        described.join("\n")
    );
}

#[test]
fn lower_layers_never_import_upward() {
    let edges = import_graph(&workspace());
    let rank = |layer: &str| LAYERS.iter().position(|l| *l == layer);
    let mut upward = Vec::new();
    let mut unplaced = BTreeSet::new();
    for (file, imports) in &edges {
        let Some(from) = layer_of(file) else { continue };
        for target in imports {
            let Some(to) = layer_of(target) else { continue };
            match (rank(from), rank(to)) {
                (Some(a), Some(b)) if b > a => {
                    upward.push(format!("{file} ({from}) -> {target} ({to})"))
                }
                (None, _) => {
                    unplaced.insert(from.to_string());
                }
                (_, None) => {
                    unplaced.insert(to.to_string());
                }
                _ => {}
            }
        }
    }
    assert!(
        unplaced.is_empty(),
        "modules missing from LAYERS (place each in the list): {unplaced:?}"
    );
    assert!(
        upward.is_empty(),
        "imports from a lower layer into a higher one (layers, lowest first: {}):\n{}",
        LAYERS.join(", "),
        upward.join("\n")
    );
}

#[test]
fn a_circle_and_an_upward_import_are_found() {
    let edges: BTreeMap<String, BTreeSet<String>> = [
        ("src/a.rs", vec!["src/b.rs"]),
        ("src/b.rs", vec!["src/c.rs"]),
        ("src/c.rs", vec!["src/a.rs"]),
        ("src/d.rs", vec!["src/a.rs"]),
    ]
    .into_iter()
    .map(|(f, to)| {
        (
            f.to_string(),
            to.into_iter().map(String::from).collect::<BTreeSet<_>>(),
        )
    })
    .collect();
    assert_eq!(
        circles(&edges),
        vec![vec![
            "src/a.rs".to_string(),
            "src/b.rs".to_string(),
            "src/c.rs".to_string()
        ]]
    );
    assert_eq!(layer_of("src/spec/search.rs"), Some("spec"));
    assert_eq!(layer_of("src/graph.rs"), Some("graph"));
    assert_eq!(layer_of("src/main.rs"), Some("lib"));
    assert_eq!(layer_of("crates/tensor/src/lib.rs"), None);
}
