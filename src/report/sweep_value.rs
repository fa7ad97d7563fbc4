//! A sweep value as text, the one spelling every table, label, plot and CSV of a report uses.
//!
//! Its own file because layouts, tables, plots, loss curves and the missing-instance note all
//! write sweep values, and none of them is below the others.

/// A sweep value as text: strings without quotes, numbers and booleans as JSON writes them,
/// lists as their items joined by `+` (a `losses = ["abs", "rel_ts"]` axis value reads
/// `abs+rel_ts`, which is also the key `labels` uses for it).
pub(crate) fn value_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(items) => {
            items.iter().map(value_text).collect::<Vec<_>>().join("+")
        }
        other => other.to_string(),
    }
}
