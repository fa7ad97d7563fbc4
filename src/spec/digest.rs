//! The digest of a resolved pipeline: what it computes and how, without where its text came
//! from. Two command lines that resolve to the same pipeline (`--set` of a value the file
//! already holds, or one change spelt two ways) have one digest, so their reports share one
//! folder (`reports/PIPELINE+DIGEST/`, or the plain `reports/PIPELINE/` when the digest is the
//! file's own). Source locations, the file's path and warnings are left out; everything that
//! changes an instance, its wiring, a sweep or a search is in.

use serde_json::{json, Value};

use super::pipeline::PipelineSpec;
use super::search::SearchSpec;
use super::stage::StageSpec;
use super::template::{Piece, Tpl};

/// The blake3 hex digest of `spec` as resolved.
pub(crate) fn resolved_digest(spec: &PipelineSpec) -> String {
    let doc = json!({
        "name": spec.name,
        "axes": spec
            .axes
            .iter()
            .map(|a| json!([a.name, a.dimension, a.values]))
            .collect::<Vec<_>>(),
        "stages": spec.stages.iter().map(stage_json).collect::<Vec<_>>(),
        "searches": spec.searches.iter().map(search_json).collect::<Vec<_>>(),
    });
    blake3::hash(doc.to_string().as_bytes())
        .to_hex()
        .to_string()
}

fn stage_json(stage: &StageSpec) -> Value {
    json!({
        "name": stage.name,
        "kind": stage.kind,
        "params": stage
            .params
            .iter()
            .map(|(k, v)| (k.clone(), tpl_json(v)))
            .collect::<serde_json::Map<_, _>>(),
        "inputs": stage
            .inputs
            .iter()
            .map(|i| json!([i.slot, i.stages]))
            .collect::<Vec<_>>(),
        "gather": stage.gather,
        "timeout": stage.timeout.map(|t| t.as_secs_f64()),
    })
}

fn search_json(search: &SearchSpec) -> Value {
    json!({
        "name": search.name,
        "space": search
            .space
            .iter()
            .map(|d| json!([d.name, d.stage, d.param, format!("{:?}", d.domain)]))
            .collect::<Vec<_>>(),
        "objective": [
            search.objective.stage,
            search.objective.metric,
            format!("{:?}", search.objective.goal),
        ],
        "sampler": search.sampler.name(),
        "seed": search.seed,
        "trials": search.trials,
        "parallel": search.parallel,
    })
}

/// A template as JSON, its source locations dropped.
fn tpl_json(tpl: &Tpl) -> Value {
    match tpl {
        Tpl::Lit(v) => json!({ "lit": v }),
        Tpl::Axis(axis, _) => json!({ "axis": axis }),
        Tpl::Concat(pieces, _) => json!({
            "concat": pieces
                .iter()
                .map(|p| match p {
                    Piece::Text(t) => json!({ "text": t }),
                    Piece::Axis(a) => json!({ "axis": a }),
                })
                .collect::<Vec<_>>()
        }),
        Tpl::Array(items) => Value::Array(items.iter().map(tpl_json).collect()),
        Tpl::Table(table) => json!({
            "table": table
                .iter()
                .map(|(k, v)| (k.clone(), tpl_json(v)))
                .collect::<serde_json::Map<_, _>>()
        }),
        Tpl::Best { search, dim, .. } => json!({ "best": [search, dim] }),
    }
}
