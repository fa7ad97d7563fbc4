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
use std::collections::BTreeSet;

#[cfg(any(test, feature = "test-kinds"))]
use super::{ParamType, Params, Stage};

#[cfg(any(test, feature = "test-kinds"))]
pub use super::param_reads::reads_of;

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
