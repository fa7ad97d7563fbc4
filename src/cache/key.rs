//! The stage key: everything that can change a stage instance's output, hashed.
//!
//! # The rule (read this before editing a stage kind or the code it runs)
//!
//! A cached result is reused whenever its key matches, so **anything that can change a
//! result must change its key**, or users get stale results silently. Like cargo's
//! fingerprint module, this states what that means for each kind of change:
//!
//! - **Parameters, inputs, external data** enter the key automatically (see the table below).
//! - **A kind's code** enters through its `IMPL_VERSION`. `kinds.lock` at the repository
//!   root pins, per kind, a digest of the source files it runs (its stage file and the
//!   `nn`/`data`/`metrics`/`report` code it calls) and its version; the test `kinds_lock`
//!   fails when those files change. Then decide:
//!   - the change can alter results (a loss, a default, an augmentation, numerics):
//!     **bump the kind's `IMPL_VERSION`**, which re-keys and recomputes its results, then
//!     re-pin to record the bump;
//!   - it cannot (a rename, a comment, a refactor with identical outputs): **re-pin** with
//!     `ASYMFLOW_REPIN=1 cargo test --release --test integration kinds_lock`, and say so in
//!     the commit message.
//!
//!   When code moves (say into another crate), edit its paths in `kinds.lock` and re-pin.
//! - **The key layout itself** (this file, [`canonical`]) is pinned by the golden test below:
//!   bump [`KEY_FORMAT`] when you change it; every cache is invalidated.
//! - **Provenance** (the asymflow version and commit, libtorch version, device, threads) is
//!   recorded with every result and shown by `show`, but is **never** part of the key: a result
//!   must be reusable across machines, and a bit-identical retrain elsewhere must cut off early.
//!
//! Modelled on cargo's fingerprints and Bazel's action keys: the key is blake3 over the
//! canonical JSON of [`StageKey`]. Two instances with the same key are the same work.
//!
//! | in the key                                        | never in the key                     |
//! |---------------------------------------------------|--------------------------------------|
//! | [`KEY_FORMAT`], the key layout's version           | absolute paths, the project location |
//! | the stage kind and its `IMPL_VERSION`              | the cache location                   |
//! | resolved params, canonical (sorted, `1` == `1.0`)  | file modification times              |
//! | content digests of every input artifact            | host names, user names, process ids  |
//! | for gathered inputs, each input's stage and binding| thread counts, `--jobs`              |
//! | external content the kind fingerprints (data sets, | progress or log settings, `--json`   |
//! |   weight files: relative paths + content hashes)   | the device a stage ran on            |
//! | (nothing else)                                     | `path` params as text (their content |
//! |                                                    |   is in the fingerprint instead)     |
//! |                                                    | a param added later, at its default  |
//!
//! **Adding a parameter to a kind** fills its default into every instance, so it would change
//! the key of every existing result of the kind although none of them changed: a needless
//! miss. Declare it [`ParamDecl::added_later`] when its default computes exactly what the kind
//! computed before it existed: it is then left out of the key while it holds that default
//! (compared canonically), and enters it as soon as a pipeline sets another value. That is
//! sound because a later change of the default is a change of what the kind computes, which
//! needs an `IMPL_VERSION` bump anyway. (The optimiser group's `momentum`, `nesterov`,
//! `milestones`, `gamma` and `warmup_epochs` came this way.) A parameter whose default changes
//! results is an ordinary one: add it and bump `IMPL_VERSION`.
//!
//! `command` stages (`src/stages/command/`, docs/command-stages.md) key through the same
//! fields, with nothing added to the layout: the command as declared (`cmd` with its
//! placeholders unexpanded, `shell`, `code`, `outputs`, `env` names) is the reserved `command`
//! parameter; their fingerprint holds the content hash of every file the `code` patterns take
//! (paths relative to the project), the content hash of the resolved program (`cmd[0]`), and
//! the values of the environment variables `env` lists. Their `resources` parameter is left
//! out ([`crate::kind::Stage::keyed_param`]), as the device and threads are for every kind.
//!
//! Inputs enter by content, not by the upstream key, so a retrained upstream stage that
//! produced byte-identical outputs leaves everything downstream fresh (early cut-off). The
//! upstream's `log.txt` is not an input: logs hold timings.
//!
//! [`ParamDecl::added_later`]: crate::kind::ParamDecl::added_later
//!
//! The golden test at the bottom pins one key. If it fails, keying changed: every user's cache
//! is invalidated. Bump [`KEY_FORMAT`] deliberately and update the golden value, or undo.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Version of the [`StageKey`] layout and canonical form; bumping it invalidates every key.
///
/// 2: the shared parameter groups (`crate::stages::groups`) renamed the classifier kinds'
/// `augment` and `one_cycle` and gave them `div_factor`, `jitter`, `images_per_epoch`; every
/// key changes once, so no cache holds results under two vocabularies.
pub const KEY_FORMAT: u32 = 2;

/// Everything that determines one stage instance's output. See the module docs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StageKey {
    /// [`KEY_FORMAT`] when the key was made.
    pub format: u32,
    /// The stage kind (`train-teacher`, ...).
    pub kind: String,
    /// The kind's `IMPL_VERSION`, bumped by hand when its semantics change.
    pub impl_version: u32,
    /// Resolved parameters in canonical form, `path` params left out.
    pub params: BTreeMap<String, Value>,
    /// Input slot -> one entry per connected upstream instance, in the plan's order.
    pub inputs: BTreeMap<String, Vec<InputKey>>,
    /// External content the kind reads (data-set files, weights), or null.
    pub fingerprint: Value,
}

/// One upstream instance as an input of a key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct InputKey {
    /// Output name -> blake3 digest of its content (`log.txt` excluded).
    pub outputs: BTreeMap<String, String>,
    /// For gathered inputs only: the upstream stage's name and sweep binding, since a gathering
    /// stage (a report) lays its inputs out by them. Null for plain inputs, so renaming an
    /// upstream stage does not retrain its consumers.
    pub identity: Value,
}

impl StageKey {
    /// The canonical JSON text: sorted object keys, integral floats written as integers.
    pub(crate) fn canonical_json(&self) -> String {
        serde_json::to_string(&CanonicalKey(self)).expect("a StageKey always serialises")
    }

    /// The key's hex digest: blake3 of the canonical JSON, streamed into the hasher.
    pub fn digest(&self) -> String {
        let mut hasher = blake3::Hasher::new();
        serde_json::to_writer(&mut hasher, &CanonicalKey(self))
            .expect("a StageKey always serialises");
        hasher.finalize().to_hex().to_string()
    }
}

/// A [`StageKey`] written in its canonical form directly, as `canonical(to_value(key))` would
/// print it (fields in sorted order, each value canonical) without building either tree:
/// `plan` of 100,000 instances spent a third of its time building and dropping them. The
/// test `the_streamed_form_is_the_canonical_form` holds the two to the same text.
struct CanonicalKey<'a>(&'a StageKey);

impl Serialize for CanonicalKey<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        // Destructured, so a field added to `StageKey` cannot be left out here.
        let StageKey {
            format,
            kind,
            impl_version,
            params,
            inputs,
            fingerprint,
        } = self.0;
        let mut map = s.serialize_map(Some(6))?;
        map.serialize_entry("fingerprint", &Canonical(fingerprint))?;
        map.serialize_entry("format", format)?;
        map.serialize_entry("impl_version", impl_version)?;
        map.serialize_entry("inputs", &CanonicalInputs(inputs))?;
        map.serialize_entry("kind", kind)?;
        map.serialize_entry("params", &CanonicalMap(params))?;
        map.end()
    }
}

/// The inputs of a key, canonical.
struct CanonicalInputs<'a>(&'a BTreeMap<String, Vec<InputKey>>);

impl Serialize for CanonicalInputs<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(slot, keys)| (slot, CanonicalSeq(keys))))
    }
}

/// One slot's upstream instances, canonical.
struct CanonicalSeq<'a>(&'a [InputKey]);

impl Serialize for CanonicalSeq<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(CanonicalInput))
    }
}

/// One upstream instance of a key, canonical.
struct CanonicalInput<'a>(&'a InputKey);

impl Serialize for CanonicalInput<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let InputKey { outputs, identity } = self.0;
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("identity", &Canonical(identity))?;
        map.serialize_entry("outputs", outputs)?;
        map.end()
    }
}

/// A map of values, each canonical.
struct CanonicalMap<'a>(&'a BTreeMap<String, Value>);

impl Serialize for CanonicalMap<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, Canonical(v))))
    }
}

/// A value written as [`canonical`] would make it, without making it.
struct Canonical<'a>(&'a Value);

impl Serialize for Canonical<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Number(n) if n.is_f64() => match integral(n.as_f64().unwrap_or(0.0)) {
                Some(i) => s.serialize_i64(i),
                None => n.serialize(s),
            },
            Value::Array(items) => s.collect_seq(items.iter().map(Canonical)),
            Value::Object(map) => s.collect_map(map.iter().map(|(k, v)| (k, Canonical(v)))),
            other => other.serialize(s),
        }
    }
}

/// The integer a float holds, when it holds one that keys as an integer.
fn integral(f: f64) -> Option<i64> {
    (f.fract() == 0.0 && f.abs() < 9.0e15).then_some(f as i64)
}

/// The first 16 characters of a key or digest, for display; shorter text as it is (a key read
/// from a damaged index may be short, and slicing must never panic).
pub fn short_key(key: &str) -> &str {
    key.char_indices().nth(16).map_or(key, |(i, _)| &key[..i])
}

/// The canonical form of a value: objects sorted (serde_json's map is ordered), floats that
/// hold an integer become that integer, so `epochs = 10` and `epochs = 10.0` key alike.
pub fn canonical(value: &Value) -> Value {
    match value {
        Value::Number(n) if n.is_f64() => match integral(n.as_f64().unwrap_or(0.0)) {
            Some(i) => Value::from(i),
            None => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), canonical(v))).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> StageKey {
        StageKey {
            format: KEY_FORMAT,
            kind: "distill".into(),
            impl_version: 3,
            params: BTreeMap::from([
                ("lambda_t".to_string(), Value::from(0.7)),
                ("epochs".to_string(), Value::from(10.0)),
            ]),
            inputs: BTreeMap::from([(
                "teacher".to_string(),
                vec![InputKey {
                    outputs: BTreeMap::from([("model.safetensors".to_string(), "ab".repeat(32))]),
                    identity: Value::Null,
                }],
            )]),
            fingerprint: Value::Null,
        }
    }

    #[test]
    fn golden_key_is_pinned() {
        // Changing this value invalidates every cache: bump KEY_FORMAT when you mean it.
        assert_eq!(
            sample().canonical_json(),
            r#"{"fingerprint":null,"format":2,"impl_version":3,"inputs":{"teacher":[{"identity":null,"outputs":{"model.safetensors":"abababababababababababababababababababababababababababababababab"}}]},"kind":"distill","params":{"epochs":10,"lambda_t":0.7}}"#
        );
        assert_eq!(
            sample().digest(),
            blake3::hash(sample().canonical_json().as_bytes())
                .to_hex()
                .to_string()
        );
        assert_eq!(&sample().digest()[..16], GOLDEN_PREFIX);
    }

    const GOLDEN_PREFIX: &str = "61dedfbe77cce999";

    /// The form `canonical_json` and `digest` stream, against the tree it stands for.
    fn canonical_by_tree(key: &StageKey) -> String {
        canonical(&serde_json::to_value(key).unwrap()).to_string()
    }

    #[test]
    fn the_streamed_form_is_the_canonical_form() {
        let mut key = sample();
        key.params.insert(
            "nested".into(),
            serde_json::json!({"z": [1.0, 2.5, {"b": 3.0, "a": -4.0}], "a": "\u{e9}\"\n"}),
        );
        key.params.insert("big".into(), Value::from(1.0e16));
        key.params.insert("neg".into(), Value::from(-0.0));
        key.params.insert(
            "list".into(),
            serde_json::json!([null, true, "x", 7, -7, 0.1]),
        );
        key.fingerprint = serde_json::json!({"files": {"b.bin": "00", "a.bin": "ff"}, "n": 2.0});
        key.inputs.insert(
            "reports".into(),
            vec![
                InputKey {
                    outputs: BTreeMap::from([("b".into(), "cd".repeat(32)), ("a".into(), "ef".repeat(32))]),
                    identity: serde_json::json!({"stage": "s", "binding": {"seed": 1.0, "lr": 0.5}}),
                },
                InputKey {
                    outputs: BTreeMap::new(),
                    identity: Value::Null,
                },
            ],
        );
        for k in [sample(), key] {
            assert_eq!(k.canonical_json(), canonical_by_tree(&k));
            assert_eq!(
                k.digest(),
                blake3::hash(canonical_by_tree(&k).as_bytes())
                    .to_hex()
                    .to_string()
            );
        }
    }

    #[test]
    fn integer_and_float_spellings_key_alike() {
        let mut a = sample();
        a.params.insert("epochs".into(), Value::from(10));
        assert_eq!(a.digest(), sample().digest());
        a.params.insert("lambda_t".into(), Value::from(0.8));
        assert_ne!(a.digest(), sample().digest());
    }
}
