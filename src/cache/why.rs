//! Why an instance is dirty: a typed [`DirtyReason`] per difference between the closest key
//! the cache holds a result of (or, with none, the key it last ran with) and its key now
//! ("params.lambda_t 0.7 -> 0.8", "input teacher changed", "IMPL_VERSION 3 -> 4"), like
//! cargo's `DirtyReason`. `Display` gives the words; `Serialize`
//! gives `plan --json` and `why --json` the structure.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::key::StageKey;

/// One reason an instance must run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum DirtyReason {
    /// No run of this stage and binding is recorded.
    New,
    /// The result is recorded but some of its objects are gone from the store.
    OutputsMissing,
    /// The last run with this key failed.
    LastRunFailed {
        /// The first line of its error.
        error: String,
    },
    /// `--force` asked for it.
    Forced,
    /// The key it last ran with equals this one, but that result is gone (forgotten, collected).
    ResultGone,
    /// This very key's result was removed by `cache forget` (or `cache verify`, `cache gc`).
    Forgotten,
    /// The cache index could not be read: reported, never folded into "new".
    IndexError {
        /// What went wrong.
        message: String,
    },
    /// The cache key format changed (every key did).
    KeyFormat {
        /// Before.
        old: u32,
        /// Now.
        new: u32,
    },
    /// The stage's kind changed.
    Kind {
        /// Before.
        old: String,
        /// Now.
        new: String,
    },
    /// The kind's `IMPL_VERSION` changed: its code computes something else now.
    ImplVersion {
        /// Before.
        old: u32,
        /// Now.
        new: u32,
    },
    /// A parameter was added.
    ParamAdded {
        /// Its name.
        name: String,
        /// Its value.
        value: Value,
    },
    /// A parameter changed.
    ParamChanged {
        /// Its name.
        name: String,
        /// Before.
        old: Value,
        /// Now.
        new: Value,
    },
    /// A parameter was removed.
    ParamRemoved {
        /// Its name.
        name: String,
    },
    /// An input slot was connected.
    InputAdded {
        /// The slot.
        slot: String,
    },
    /// An input slot was disconnected.
    InputRemoved {
        /// The slot.
        slot: String,
    },
    /// A gathered input has another number of instances.
    InputCount {
        /// The slot.
        slot: String,
        /// Before.
        old: usize,
        /// Now.
        new: usize,
    },
    /// Upstream results changed content.
    InputChanged {
        /// The slot.
        slot: String,
        /// How many of its instances changed.
        changed: usize,
        /// Of how many.
        of: usize,
    },
    /// External content (data-set files, weights) changed: the differing fingerprint paths.
    ExternalContent {
        /// Up to five paths, then "... N more".
        paths: Vec<String>,
    },
}

impl std::fmt::Display for DirtyReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DirtyReason::New => f.write_str("new"),
            DirtyReason::OutputsMissing => f.write_str("outputs missing from the object store"),
            DirtyReason::LastRunFailed { error } => write!(f, "last run failed: {error}"),
            DirtyReason::Forced => f.write_str("forced (--force)"),
            DirtyReason::ResultGone => f.write_str("result no longer in the cache"),
            DirtyReason::Forgotten => f.write_str(
                "forgotten (its result was removed by `cache forget`, `cache verify` or `cache gc`)",
            ),
            DirtyReason::IndexError { message } => {
                write!(f, "the cache index could not be read: {message}")
            }
            DirtyReason::KeyFormat { old, new } => write!(f, "cache key format {old} -> {new}"),
            DirtyReason::Kind { old, new } => write!(f, "kind {old} -> {new}"),
            DirtyReason::ImplVersion { old, new } => write!(f, "IMPL_VERSION {old} -> {new}"),
            DirtyReason::ParamAdded { name, value } => {
                write!(f, "params.{name} added ({})", show(value))
            }
            DirtyReason::ParamChanged { name, old, new } => {
                write!(f, "params.{name} {} -> {}", show(old), show(new))
            }
            DirtyReason::ParamRemoved { name } => write!(f, "params.{name} removed"),
            DirtyReason::InputAdded { slot } => write!(f, "input {slot} added"),
            DirtyReason::InputRemoved { slot } => write!(f, "input {slot} removed"),
            DirtyReason::InputCount { slot, old, new } => {
                write!(f, "input {slot}: {old} -> {new} instances")
            }
            DirtyReason::InputChanged { slot, of: 1, .. } => write!(f, "input {slot} changed"),
            DirtyReason::InputChanged { slot, changed, of } => {
                write!(f, "input {slot} changed ({changed} of {of})")
            }
            DirtyReason::ExternalContent { paths } => {
                write!(f, "external content changed: {}", paths.join(", "))
            }
        }
    }
}

/// The reasons as one line, `; `-separated.
pub fn join(reasons: &[DirtyReason]) -> String {
    reasons
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The differences between an older key of an instance and its key now, most telling first.
/// Empty when the keys are equal.
pub(crate) fn explain(old: &StageKey, new: &StageKey) -> Vec<DirtyReason> {
    let mut reasons = Vec::new();
    if old.format != new.format {
        reasons.push(DirtyReason::KeyFormat {
            old: old.format,
            new: new.format,
        });
    }
    if old.kind != new.kind {
        reasons.push(DirtyReason::Kind {
            old: old.kind.clone(),
            new: new.kind.clone(),
        });
    }
    if old.impl_version != new.impl_version {
        reasons.push(DirtyReason::ImplVersion {
            old: old.impl_version,
            new: new.impl_version,
        });
    }
    for (name, value) in &new.params {
        match old.params.get(name) {
            None => reasons.push(DirtyReason::ParamAdded {
                name: name.clone(),
                value: value.clone(),
            }),
            Some(before) if before != value => reasons.push(DirtyReason::ParamChanged {
                name: name.clone(),
                old: before.clone(),
                new: value.clone(),
            }),
            Some(_) => {}
        }
    }
    for name in old.params.keys().filter(|n| !new.params.contains_key(*n)) {
        reasons.push(DirtyReason::ParamRemoved { name: name.clone() });
    }
    for (slot, inputs) in &new.inputs {
        match old.inputs.get(slot) {
            None => reasons.push(DirtyReason::InputAdded { slot: slot.clone() }),
            Some(before) if before.len() != inputs.len() => reasons.push(DirtyReason::InputCount {
                slot: slot.clone(),
                old: before.len(),
                new: inputs.len(),
            }),
            Some(before) if before != inputs => reasons.push(DirtyReason::InputChanged {
                slot: slot.clone(),
                changed: before.iter().zip(inputs).filter(|(a, b)| a != b).count(),
                of: inputs.len(),
            }),
            Some(_) => {}
        }
    }
    for slot in old.inputs.keys().filter(|s| !new.inputs.contains_key(*s)) {
        reasons.push(DirtyReason::InputRemoved { slot: slot.clone() });
    }
    if old.fingerprint != new.fingerprint {
        let mut paths = Vec::new();
        diff_paths(
            "fingerprint",
            &old.fingerprint,
            &new.fingerprint,
            &mut paths,
        );
        let mut paths: Vec<String> = paths
            .into_iter()
            .map(|p| with_file_names(&p, &new.params))
            .collect();
        if paths.len() > 5 {
            let n = paths.len();
            paths.truncate(5);
            paths.push(format!("... {} more", n - 5));
        }
        reasons.push(DirtyReason::ExternalContent { paths });
    }
    reasons
}

/// A fingerprint difference told with the files it is about, from the params that name them:
/// `fingerprint.content "3f.." -> "9a.."` of a split reading `data/faces` becomes
/// `data/faces: an image's content changed (fingerprint.content)`; an import's
/// `fingerprint.file` names its `file`. Other differences are left as they are.
fn with_file_names(diff: &str, params: &BTreeMap<String, Value>) -> String {
    let param = |name: &str| {
        params
            .get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let field = diff.split(' ').next().unwrap_or(diff);
    let rest = diff[field.len()..].trim();
    match (field, param("root"), param("file")) {
        ("fingerprint.content", Some(root), _) => {
            format!("{root}: an image's content changed, or images were renamed ({field})")
        }
        ("fingerprint.images", Some(root), _) => format!("{root}: images {rest}"),
        (f, Some(root), _) if f.starts_with("fingerprint.annotations.") => {
            let file = &f["fingerprint.annotations.".len()..];
            let what = if matches!(rest, "added" | "removed") {
                rest
            } else {
                "changed"
            };
            format!("{root}/{file} {what}")
        }
        ("fingerprint.file", _, Some(file)) => format!("{file} changed ({field})"),
        _ => diff.to_string(),
    }
}

fn show(value: &Value) -> String {
    match value {
        Value::String(s) => format!("\"{s}\""),
        v => v.to_string(),
    }
}

fn diff_paths(path: &str, old: &Value, new: &Value, out: &mut Vec<String>) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get(k) {
                    Some(before) if before == v => {}
                    Some(before) => diff_paths(&format!("{path}.{k}"), before, v, out),
                    None => out.push(format!("{path}.{k} added")),
                }
            }
            for k in a.keys().filter(|k| !b.contains_key(*k)) {
                out.push(format!("{path}.{k} removed"));
            }
        }
        (a, b) if a != b => match (a, b) {
            (Value::Array(_), _)
            | (_, Value::Array(_))
            | (Value::Object(_), _)
            | (_, Value::Object(_)) => out.push(format!("{path} changed")),
            _ => out.push(format!("{path} {} -> {}", show(a), show(b))),
        },
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    #[test]
    fn a_data_edit_is_told_with_the_folder_or_file_it_is_in() {
        let split = BTreeMap::from([("root".to_string(), serde_json::json!("data/faces"))]);
        let told = super::with_file_names("fingerprint.content \"3f\" -> \"9a\"", &split);
        assert!(
            told.starts_with("data/faces: an image's content changed"),
            "{told}"
        );
        let told = super::with_file_names(
            "fingerprint.annotations.labels.csv \"3f\" -> \"9a\"",
            &split,
        );
        assert_eq!(told, "data/faces/labels.csv changed");
        let import = BTreeMap::from([("file".to_string(), serde_json::json!("w/t.pt"))]);
        let told = super::with_file_names("fingerprint.file \"3f\" -> \"9a\"", &import);
        assert_eq!(told, "w/t.pt changed (fingerprint.file)");
    }

    use super::*;
    use crate::cache::key::{InputKey, KEY_FORMAT};

    fn key() -> StageKey {
        StageKey {
            format: KEY_FORMAT,
            kind: "distill".into(),
            impl_version: 3,
            params: BTreeMap::from([("lambda_t".into(), Value::from(0.7))]),
            inputs: BTreeMap::from([(
                "teacher".into(),
                vec![InputKey {
                    outputs: BTreeMap::from([("m".into(), "aa".into())]),
                    identity: Value::Null,
                }],
            )]),
            fingerprint: Value::Null,
        }
    }

    #[test]
    fn reasons_name_each_changed_field() {
        let old = key();
        let mut new = key();
        assert!(explain(&old, &new).is_empty());
        new.params.insert("lambda_t".into(), Value::from(0.8));
        new.impl_version = 4;
        new.inputs.get_mut("teacher").unwrap()[0]
            .outputs
            .insert("m".into(), "bb".into());
        let reasons = explain(&old, &new);
        assert_eq!(
            join(&reasons),
            "IMPL_VERSION 3 -> 4; params.lambda_t 0.7 -> 0.8; input teacher changed"
        );
        assert_eq!(
            reasons[1],
            DirtyReason::ParamChanged {
                name: "lambda_t".into(),
                old: Value::from(0.7),
                new: Value::from(0.8),
            }
        );
    }

    #[test]
    fn reasons_serialise_tagged_with_their_fields() {
        let json = serde_json::to_value(DirtyReason::ImplVersion { old: 3, new: 4 }).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"reason": "impl-version", "old": 3, "new": 4})
        );
        let json = serde_json::to_value(DirtyReason::New).unwrap();
        assert_eq!(json, serde_json::json!({"reason": "new"}));
    }
}
