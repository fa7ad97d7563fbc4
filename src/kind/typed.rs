//! A parameter read through a type, declared once.
//!
//! Each kind declares its parameters in a table of [`ParamDecl`]s and reads them in one place:
//! a typed struct in the kind's declaration module (`DistillParams`, ...) whose
//! `from_params` does every string-keyed read; runners take the struct and never a name. What
//! keeps the table and the struct from drifting apart is measured, not asserted: while
//! [`reads_of`] runs a closure, every name [`Params`] is asked for is recorded, and
//! [`assert_reads_match_declaration`] (each kind's unit test) compares the names its
//! constructor reads, over the defaults and every choice of every choice parameter, with the
//! names the kind declares. A parameter declared but never read, or read but never declared,
//! fails that test.
//!
//! The recording is compiled into test builds only (`test-kinds`, which every test build of
//! both crates has); users' binaries pay nothing for it.

#[cfg(any(test, feature = "test-kinds"))]
use std::cell::RefCell;
#[cfg(any(test, feature = "test-kinds"))]
use std::collections::BTreeSet;

#[cfg(any(test, feature = "test-kinds"))]
use super::{ParamType, Params, Stage};

#[cfg(any(test, feature = "test-kinds"))]
thread_local! {
    static READS: RefCell<Option<BTreeSet<String>>> = const { RefCell::new(None) };
}

/// Notes that `name` was asked of a [`Params`] (a no-op outside [`reads_of`]).
#[inline]
pub(crate) fn note_read(name: &str) {
    #[cfg(any(test, feature = "test-kinds"))]
    READS.with(|reads| {
        if let Some(reads) = reads.borrow_mut().as_mut() {
            reads.insert(name.to_string());
        }
    });
    #[cfg(not(any(test, feature = "test-kinds")))]
    let _ = name;
}

/// Runs `f` and returns its result with every parameter name it asked of any [`Params`] on
/// this thread (present or not).
#[cfg(any(test, feature = "test-kinds"))]
pub fn reads_of<R>(f: impl FnOnce() -> R) -> (R, BTreeSet<String>) {
    let outer = READS.with(|reads| reads.borrow_mut().replace(BTreeSet::new()));
    let result = f();
    let names = READS.with(|reads| std::mem::replace(&mut *reads.borrow_mut(), outer));
    (result, names.unwrap_or_default())
}

/// Asserts that `read` (a kind's typed constructor) reads exactly the parameters `stage`
/// declares: run over the declared defaults overlaid with `base` (values for required
/// parameters, or a setting the constructor needs), then once per other option of every
/// choice parameter and once with every boolean flipped, so reads behind a branch count too.
/// Every run must succeed, except where an option fails a check the constructor makes (its
/// reads still count).
///
/// # Panics
/// With the names read but not declared, or declared but never read.
#[cfg(any(test, feature = "test-kinds"))]
pub fn assert_reads_match_declaration<T, E: std::fmt::Display>(
    stage: &dyn Stage,
    base: serde_json::Value,
    read: impl Fn(&Params) -> Result<T, E>,
) {
    let base = with_defaults(stage, base);
    let (first, mut read_names) = reads_of(|| read(&base));
    if let Err(e) = first {
        panic!("{}: the defaults do not read: {e}", stage.kind());
    }
    for variant in variants(stage, &base) {
        read_names.extend(reads_of(|| read(&variant)).1);
    }
    let declared: BTreeSet<String> = stage.params().iter().map(|d| d.name.to_string()).collect();
    let undeclared: Vec<&String> = read_names.difference(&declared).collect();
    let unread: Vec<&String> = declared.difference(&read_names).collect();
    assert!(
        undeclared.is_empty() && unread.is_empty(),
        "{}: read but never declared: {undeclared:?}; declared but never read: {unread:?}",
        stage.kind()
    );
}

/// `stage`'s declared defaults overlaid with `overrides` (a JSON object), as the resolver
/// fills them in.
#[cfg(any(test, feature = "test-kinds"))]
fn with_defaults(stage: &dyn Stage, overrides: serde_json::Value) -> Params {
    let mut params = Params::defaults(stage.params());
    if let serde_json::Value::Object(o) = overrides {
        params.0.extend(o);
    }
    params
}

/// `base` with one choice parameter set to another of its options, or one boolean flipped.
#[cfg(any(test, feature = "test-kinds"))]
fn variants(stage: &dyn Stage, base: &Params) -> Vec<Params> {
    let mut out = Vec::new();
    for decl in stage.params() {
        let values: Vec<serde_json::Value> = match decl.ty {
            ParamType::Choice(options) => options.iter().map(|o| (*o).into()).collect(),
            ParamType::Bool => vec![true.into(), false.into()],
            _ => continue,
        };
        for value in values {
            let mut variant = base.clone();
            variant.0.insert(decl.name.to_string(), value);
            out.push(variant);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_of_read_is_recorded_and_only_inside() {
        let p = Params(
            [("a", json!(1)), ("b", json!("x"))]
                .map(|(k, v)| (k.into(), v))
                .into(),
        );
        let _ = p.int("outside");
        let ((), names) = reads_of(|| {
            let _ = p.int("a");
            let _ = p.str("b");
            let _ = p.opt_str("c");
            let _ = p.get("d");
        });
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(names, ["a", "b", "c", "d"]);
        assert!(reads_of(|| ()).1.is_empty(), "a new recording starts empty");
    }
}
