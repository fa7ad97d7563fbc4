//! The recording half of [`super::typed`]: while [`reads_of`] runs a closure, every name a
//! [`Params`](super::Params) is asked for is noted ([`note_read`], called by every getter).
//! A file of its own because the getters call it and the declaration check built on it
//! (`typed.rs`) reads whole kinds: the parameters import this file, not the stage protocol.
//!
//! The recording is compiled into test builds only (`test-kinds`, which every test build of
//! both crates has); users' binaries pay nothing for it.

#[cfg(any(test, feature = "test-kinds"))]
use std::cell::RefCell;
#[cfg(any(test, feature = "test-kinds"))]
use std::collections::BTreeSet;

#[cfg(any(test, feature = "test-kinds"))]
thread_local! {
    static READS: RefCell<Option<BTreeSet<String>>> = const { RefCell::new(None) };
}

/// Notes that `name` was asked of a [`Params`](super::Params) (a no-op outside [`reads_of`]).
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

/// Runs `f` and returns its result with every parameter name it asked of any
/// [`Params`](super::Params) on this thread (present or not).
#[cfg(any(test, feature = "test-kinds"))]
pub fn reads_of<R>(f: impl FnOnce() -> R) -> (R, BTreeSet<String>) {
    let outer = READS.with(|reads| reads.borrow_mut().replace(BTreeSet::new()));
    let result = f();
    let names = READS.with(|reads| std::mem::replace(&mut *reads.borrow_mut(), outer));
    (result, names.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::Params;
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
