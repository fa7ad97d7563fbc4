//! What to change when a step's estimate exceeds the device's memory, tried on the estimate
//! itself: each suggestion is a setting whose re-estimated step fits. The settings keep what
//! the step computes where the kind allows it: `precision = "bf16"` (the forward in bf16),
//! `train-teacher`'s `batch_size` split into more `accumulate`d batches of whole classes (the
//! same images per optimiser step, each batch still `per_class` positives of each of its
//! classes), `distill`'s `chunks` (the same gradient; see asymflow-tensor's `nn::train`); only
//! the classifier kinds, which accumulate nothing, are told of a smaller batch, which trains
//! differently.

use serde_json::{json, Value};

use crate::kind::Params;

/// Kept free for what the estimate leaves out (the CUDA context, cuDNN's workspace, the
/// caching allocator's fragmentation): a margin chosen, not measured.
pub(crate) const RESERVE: u64 = 1 << 30;

/// The memory a device offers, from `80GiB`, `40GB`, `81920MiB` or a plain number of bytes
/// (GB and MB are powers of ten, GiB and MiB of two).
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kib" => 1024.0,
        "mib" => (1u64 << 20) as f64,
        "gib" | "g" => (1u64 << 30) as f64,
        "tib" => (1u64 << 40) as f64,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        other => {
            return Err(format!(
                "device memory `{text}`: unknown unit `{other}`; write e.g. 80GiB, 40GB or 81920MiB"
            ))
        }
    };
    match number.parse::<f64>() {
        Ok(n) if n > 0.0 => Ok((n * scale) as u64),
        _ => Err(format!(
            "device memory `{text}`: expected a positive size such as 80GiB"
        )),
    }
}

/// Whether `bytes` fits a device of `budget` bytes with [`RESERVE`] to spare.
pub fn fits(bytes: u64, budget: u64) -> bool {
    bytes.saturating_add(RESERVE) <= budget
}

/// Settings of a `kind` instance with `params` whose step fits `budget`, in words, best first;
/// `estimate` re-estimates the step with changed params (`None`: no estimate). Empty when
/// nothing tried fits.
pub(crate) fn advise(
    kind: &str,
    params: &Params,
    estimate: &dyn Fn(&Params) -> Option<u64>,
    budget: u64,
) -> Vec<String> {
    let fit = |changes: &[(&str, Value)]| {
        let mut changed = params.clone();
        for (name, value) in changes {
            changed.0.insert(name.to_string(), value.clone());
        }
        estimate(&changed).is_some_and(|bytes| fits(bytes, budget))
    };
    let mut precisions = vec![params.str("precision").unwrap_or("fp32")];
    if precisions[0] == "fp32" {
        if fit(&[("precision", json!("bf16"))]) {
            return vec!["precision = \"bf16\"".into()];
        }
        precisions.push("bf16");
    }
    let mut found = Vec::new();
    for precision in precisions {
        let with = |mut changes: Vec<(&'static str, Value)>| {
            changes.push(("precision", json!(precision)));
            changes
        };
        let suggestion = match kind {
            "train-teacher" => split_batch(params, |c| fit(&with(c))),
            "distill" => more_chunks(params, |c| fit(&with(c))),
            _ => smaller_batch(params, |c| fit(&with(c))),
        };
        if let Some(text) = suggestion {
            found.push(
                if precision == "bf16" && params.str("precision").ok() != Some("bf16") {
                    format!("precision = \"bf16\", {text}")
                } else {
                    text
                },
            );
            break;
        }
    }
    found
}

/// `train-teacher`: the fewest batches of whole classes `batch_size` splits into that fit,
/// as `batch_size = b, accumulate = a`.
fn split_batch(p: &Params, fit: impl Fn(Vec<(&'static str, Value)>) -> bool) -> Option<String> {
    let batch = p.int("batch_size").ok()?;
    let accumulate = p.int("accumulate").unwrap_or(1);
    // The teacher's sampler needs batches of whole classes, at least two of them.
    let per_class = p.int("per_class").unwrap_or(0).max(1);
    (2..=batch).find_map(|parts| {
        let size = batch / parts;
        let whole = batch % parts == 0 && size % per_class == 0 && size >= 2 * per_class;
        (whole && fit(vec![("batch_size", json!(size)), ("accumulate", json!(accumulate * parts))]))
            .then(|| {
                format!(
                    "batch_size = {size}, accumulate = {} (the same {} images per step, each batch {} whole classes)",
                    accumulate * parts,
                    batch * accumulate,
                    if per_class > 1 { size / per_class } else { size },
                )
            })
    })
}

/// `distill`: the fewest `chunks` that fit.
fn more_chunks(p: &Params, fit: impl Fn(Vec<(&'static str, Value)>) -> bool) -> Option<String> {
    let batch = p.int("batch_size").ok()?;
    let now = p.int("chunks").unwrap_or(1);
    (now + 1..=batch)
        .find(|&c| fit(vec![("chunks", json!(c))]))
        .map(|c| {
            format!(
                "chunks = {c} (the same gradient, {} images per chunk)",
                (batch + c - 1) / c
            )
        })
}

/// The classifier kinds: the largest `batch_size` that fits (they do not accumulate).
fn smaller_batch(p: &Params, fit: impl Fn(Vec<(&'static str, Value)>) -> bool) -> Option<String> {
    let batch = p.int("batch_size").ok()?;
    (1..batch)
        .rev()
        .find(|&b| fit(vec![("batch_size", json!(b))]))
        .map(|b| format!("batch_size = {b} (a smaller batch trains differently)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_both_unit_systems() {
        assert_eq!(parse_size("80GiB").unwrap(), 80 << 30);
        assert_eq!(parse_size("40 GB").unwrap(), 40_000_000_000);
        assert_eq!(parse_size("81920MiB").unwrap(), 80 << 30);
        assert_eq!(parse_size("1.5g").unwrap(), 3 << 29);
        for bad in ["", "GiB", "-3GiB", "80 parsecs"] {
            let err = parse_size(bad).unwrap_err();
            assert!(err.contains("device memory"), "{err}");
        }
    }
}
