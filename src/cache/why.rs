//! Why an instance is dirty: the fields of its new key that differ from the key it last ran
//! with, in words ("params.lambda_t 0.7 -> 0.8", "input teacher changed", "IMPL_VERSION 3 ->
//! 4"), like cargo's dirty reasons.

use serde_json::Value;

use super::key::StageKey;

/// The differences between the key an instance last ran with and its key now, most telling
/// first. Empty when the keys are equal.
pub fn explain(old: &StageKey, new: &StageKey) -> Vec<String> {
    let mut reasons = Vec::new();
    if old.format != new.format {
        reasons.push(format!("cache key format {} -> {}", old.format, new.format));
    }
    if old.kind != new.kind {
        reasons.push(format!("kind {} -> {}", old.kind, new.kind));
    }
    if old.impl_version != new.impl_version {
        reasons.push(format!(
            "IMPL_VERSION {} -> {}",
            old.impl_version, new.impl_version
        ));
    }
    for (name, value) in &new.params {
        match old.params.get(name) {
            None => reasons.push(format!("params.{name} added ({})", show(value))),
            Some(before) if before != value => {
                reasons.push(format!("params.{name} {} -> {}", show(before), show(value)))
            }
            Some(_) => {}
        }
    }
    for name in old.params.keys().filter(|n| !new.params.contains_key(*n)) {
        reasons.push(format!("params.{name} removed"));
    }
    for (slot, inputs) in &new.inputs {
        match old.inputs.get(slot) {
            None => reasons.push(format!("input {slot} added")),
            Some(before) if before.len() != inputs.len() => reasons.push(format!(
                "input {slot}: {} -> {} instances",
                before.len(),
                inputs.len()
            )),
            Some(before) if before != inputs => {
                let changed = before.iter().zip(inputs).filter(|(a, b)| a != b).count();
                if inputs.len() == 1 {
                    reasons.push(format!("input {slot} changed"));
                } else {
                    reasons.push(format!(
                        "input {slot} changed ({changed} of {})",
                        inputs.len()
                    ));
                }
            }
            Some(_) => {}
        }
    }
    for slot in old.inputs.keys().filter(|s| !new.inputs.contains_key(*s)) {
        reasons.push(format!("input {slot} removed"));
    }
    if old.fingerprint != new.fingerprint {
        let mut paths = Vec::new();
        diff_paths(
            "fingerprint",
            &old.fingerprint,
            &new.fingerprint,
            &mut paths,
        );
        if paths.len() > 5 {
            let n = paths.len();
            paths.truncate(5);
            paths.push(format!("... {} more", n - 5));
        }
        reasons.push(format!("external content changed: {}", paths.join(", ")));
    }
    reasons
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
        assert_eq!(
            explain(&old, &new),
            vec![
                "IMPL_VERSION 3 -> 4",
                "params.lambda_t 0.7 -> 0.8",
                "input teacher changed"
            ]
        );
    }
}
