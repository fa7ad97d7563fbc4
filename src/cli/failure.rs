//! How a stage failure reads: the instance, the error with cache object paths replaced by the
//! input they belong to, a hint where one is known, and the params as a list.
//!
//! A stage sees its inputs as files in the object store, so its errors name paths such as
//! `cache/objects/14/e72c…`; the user never wrote those and cannot act on them. The input
//! that produced the object (its stage, instance and output name) is what they wrote.

use crate::cache::{Cache, Index};
use crate::graph::Instance;

/// The lines printed for a failed instance, after the run.
pub fn describe(cache: &Cache, index: Option<&Index>, inst: &Instance, reason: &str) -> String {
    let message = name_objects(cache, index, reason);
    let mut out = format!("failed: {}\n  error: {message}", inst.label());
    if let Some(hint) = hint(&message) {
        out.push_str(&format!("\n  hint: {hint}"));
    }
    if !inst.params.0.is_empty() {
        out.push_str("\n  params:");
        for (name, value) in &inst.params.0 {
            out.push_str(&format!("\n    {name} = {value}"));
        }
    }
    out
}

/// Replaces every object path in `text` with "input STAGE[...] (`OUTPUT`)" where the index
/// knows the object's producer.
fn name_objects(cache: &Cache, index: Option<&Index>, text: &str) -> String {
    let mut out = String::new();
    let mut at = 0;
    for mention in cache.objects().mentions_in(text) {
        out.push_str(&text[at..mention.span.start]);
        let path = &text[mention.span.clone()];
        out.push_str(&producer(index, &mention.digest).unwrap_or_else(|| path.to_string()));
        at = mention.span.end;
    }
    out.push_str(&text[at..]);
    out
}

/// "input `split` (`split.json`)" for the object `digest`, when the index knows its producer.
fn producer(index: Option<&Index>, digest: &str) -> Option<String> {
    let index = index?;
    if digest.len() < 16 {
        return None;
    }
    let key = index.runs_referencing(digest).ok()?.into_iter().next()?;
    let record = index.lookup(&key).ok()??;
    let output = record
        .outputs
        .iter()
        .find(|(_, o)| o.digest == digest)
        .map(|(name, _)| name.clone())
        .unwrap_or_default();
    let binding: std::collections::BTreeMap<String, serde_json::Value> =
        serde_json::from_str(&record.binding).unwrap_or_default();
    Some(format!(
        "input {} (`{output}`)",
        super::common::label(&record.stage, &binding)
    ))
}

/// A fix for errors whose cause is known.
fn hint(message: &str) -> Option<String> {
    if let Some(start) = message.find("no partition `train-") {
        let rest = &message[start + "no partition `train-".len()..];
        let percent: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        if !percent.is_empty() {
            return Some(format!(
                "the split has no {percent}% training subset: add `subsets = [{percent}]` to the \
                 params of the split stage"
            ));
        }
    }
    if message.contains("no partition `") {
        return Some("name one of the partitions the split has (listed above)".into());
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_missing_subset_is_explained() {
        let hint = super::hint("x: no partition `train-50`; it has: train, test").unwrap();
        assert!(hint.contains("subsets = [50]"), "{hint}");
    }

    #[test]
    fn object_paths_without_an_index_are_kept() {
        let cache = crate::cache::Cache::new(std::path::Path::new("/c"));
        let text = "/c/objects/14/e72cab: no partition `a`";
        assert_eq!(super::name_objects(&cache, None, text), text);
    }
}
