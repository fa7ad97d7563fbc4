//! `evaluate`: one evaluation protocol of query embeddings against database embeddings.
//!
//! The two inputs may come from different models (and resolutions): that is how asymmetric
//! setups (student queries against a teacher database) and backward compatibility (new-model
//! queries against an old-model gallery) are measured, as ordinary evaluate instances sharing
//! cached embeddings. When both sides are the same images (the same split partition embedded
//! twice, or one embedding stage on both slots), each query is excluded from its own database.
//!
//! Protocols (docs/METHODS.md): `retrieval` (mAP, standard AP, R@k), `verification` (TAR at FAR over
//! template pairs), `identification` (open-set TPIR at FPIR), `reid` (retrieval with
//! same-identity same-camera gallery items excluded). Metrics are written under the agreed
//! names (`map`, `map_noninterp` (the standard, non-interpolated AP; also written under its
//! old name `map_std`, an alias kept for existing reports: it was never a deviation), `r1`,
//! `r5`, ..., `no_positive`, `query_gflops`, `tar_at_far`,
//! `tpir_at_fpir`); a rate target that cannot be measured with the available negatives is
//! reported as such in `evaluation.json` and recorded as no number. Retrieval and reid write
//! each query's AP and hits to `per_query.json`, what their means average.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::kind::{Run, StageContext, StageError};
use crate::metrics::{self, EmbeddingSet};
use asymflow::metrics::per_query::{self, PerQuery};
use asymflow::metrics::registry::{
    FPIR_ACHIEVED, MAP, MAP_NONINTERP, MAP_STD, MATED_PROBES, NON_MATED_PROBES, NO_POSITIVE,
    QUERIES, QUERY_GFLOPS, RECALL_AT, TPIR_AT_FPIR,
};
use asymflow::stages::evaluate::*;

mod ijbc;
mod metrics_error;
mod open_set_rate;
mod sides;

use metrics_error::metrics_error;
use open_set_rate::{rate, record_tar, OpenSetRate};
use sides::Sides;

/// The `evaluate` kind.
pub(crate) struct Evaluate;

impl Run for Evaluate {
    fn run(&self, ctx: &mut StageContext<'_>) -> Result<(), StageError> {
        let params = EvaluateParams::from_params(ctx.params())?;
        let protocol = EvalProtocol::parse(&params.protocol).ok_or_else(|| {
            StageError::bad_param(
                "protocol",
                format!("use one of {}", EvalProtocol::NAMES.join(", ")),
            )
        })?;
        let (sides, gflops) = Sides::read(ctx, &params)?;
        ctx.log(format!(
            "{}: {} queries x {} database items, {}-d, query excluded from its own database: {}",
            protocol.name(),
            sides.query.len(),
            sides.db.len(),
            sides.query.dim,
            sides.self_match
        ));
        if let Some(g) = gflops {
            ctx.metric(QUERY_GFLOPS.name, g);
        }
        let mut details = serde_json::Map::new();
        details.insert("protocol".into(), json!(protocol.name()));
        details.insert("queries".into(), json!(sides.query.len()));
        details.insert("database".into(), json!(sides.db.len()));
        details.insert("exclude_self".into(), json!(sides.self_match));
        match protocol {
            EvalProtocol::Retrieval | EvalProtocol::Reid => {
                retrieval(ctx, &params, protocol, &sides, &mut details)?
            }
            EvalProtocol::Verification => verification(ctx, &params, &sides, &mut details)?,
            EvalProtocol::Identification => identification(ctx, &params, &sides, &mut details)?,
        }
        ctx.write_json(EVALUATION_OUTPUT, &Value::Object(details))
    }
}

/// `retrieval` and `reid`: mAP, standard AP and R@k (declined with the reason when no query
/// has a positive).
fn retrieval(
    ctx: &mut StageContext<'_>,
    params: &EvaluateParams,
    protocol: EvalProtocol,
    sides: &Sides,
    details: &mut serde_json::Map<String, Value>,
) -> Result<(), StageError> {
    let Sides {
        query, db, rows, ..
    } = sides;
    if layout(params)? == Layout::Ijbc {
        return Err(StageError::bad_param(
            "layout",
            "\"ijbc\" defines face templates for verification and identification; use \
             protocol = \"verification\" or \"identification\", or drop layout",
        ));
    }
    let ks = positive_ks(&params.ks)?;
    let result = if protocol == EvalProtocol::Reid {
        metrics::reid(query, db, &ks, sides.self_match, *rows)
    } else {
        metrics::retrieval(query, db, &ks, sides.exclusion(), *rows)
    }
    .map_err(metrics_error)?;
    if result.queries > 0 {
        ctx.metric(MAP.name, result.map);
        ctx.metric(MAP_NONINTERP.name, result.map_noninterp);
        ctx.metric(MAP_STD.name, result.map_noninterp);
        for (k, v) in &result.recall {
            ctx.metric(&RECALL_AT.named(&k.to_string()), *v);
        }
    } else {
        let reason = format!(
            "no query has a positive in the database ({} queries without one)",
            result.no_positive
        );
        let ks = result
            .recall
            .keys()
            .map(|k| RECALL_AT.named(&k.to_string()));
        let names: Vec<String> = [MAP.name, MAP_NONINTERP.name, MAP_STD.name]
            .map(str::to_string)
            .into_iter()
            .chain(ks)
            .collect();
        for name in names {
            ctx.decline(&name, reason.clone())?;
        }
    }
    ctx.metric(NO_POSITIVE.name, result.no_positive as f64);
    ctx.metric(QUERIES.name, result.queries as f64);
    ctx.log(format!(
        "mAP {:.4} (standard {:.4}), R@{:?} {:?}, {} queries without positives left out",
        result.map,
        result.map_noninterp,
        result.recall.keys().collect::<Vec<_>>(),
        result
            .recall
            .values()
            .map(|v| format!("{v:.4}"))
            .collect::<Vec<_>>(),
        result.no_positive
    ));
    details.insert("map".into(), json!(result.map));
    details.insert("map_noninterp".into(), json!(result.map_noninterp));
    details.insert(
        "recall".into(),
        Value::Object(
            result
                .recall
                .iter()
                .map(|(k, v)| (format!("r{k}"), json!(v)))
                .collect(),
        ),
    );
    details.insert("evaluated_queries".into(), json!(result.queries));
    details.insert("no_positive".into(), json!(result.no_positive));
    write_per_query(ctx, &result, &ks, query.len())
}

/// `per_query.json`: each query's AP, standard AP and hits, which the recorded means average
/// (the format is documented in [`asymflow::metrics::per_query`]).
fn write_per_query(
    ctx: &StageContext<'_>,
    result: &metrics::RetrievalResult,
    ks: &[usize],
    queries: usize,
) -> Result<(), StageError> {
    let per_query = &result.per_query;
    let mut scores = BTreeMap::new();
    scores.insert(
        MAP.name.to_string(),
        per_query.iter().map(|q| q.ap).collect::<Vec<_>>(),
    );
    scores.insert(
        MAP_NONINTERP.name.to_string(),
        per_query.iter().map(|q| q.ap_noninterp).collect(),
    );
    for &k in ks {
        scores.insert(
            RECALL_AT.named(&k.to_string()),
            per_query.iter().map(|q| q.hit(k)).collect(),
        );
    }
    let file = PerQuery {
        format: per_query::FORMAT,
        queries,
        index: per_query.iter().map(|q| q.index).collect(),
        scores,
    };
    let path = ctx.out_path(PER_QUERY_OUTPUT);
    let text = serde_json::to_string(&file)
        .map_err(|e| StageError::Other(format!("serialising {PER_QUERY_OUTPUT}: {e}")))?;
    std::fs::write(&path, text).map_err(|e| StageError::io(path, e))
}

/// `verification`: TAR at FAR over the split's explicit pairs (the `pairs` input) or over all
/// template pairs; declined with the reason when the FAR is below one over the impostors.
fn verification(
    ctx: &mut StageContext<'_>,
    params: &EvaluateParams,
    sides: &Sides,
    details: &mut serde_json::Map<String, Value>,
) -> Result<(), StageError> {
    let Sides {
        query, db, rows, ..
    } = sides;
    if layout(params)? == Layout::Ijbc {
        return ijbc::verification(ctx, params, sides, details);
    }
    let far = rate(params.far, "far")?;
    let size = template_size(params.template_size)?;
    let t = match explicit_pairs(ctx, query, db, size)? {
        Some(pairs) => {
            ctx.log(format!(
                "scoring the split's {} explicit verification pairs",
                pairs.len()
            ));
            details.insert("explicit_pairs".into(), json!(pairs.len()));
            metrics::tar_at_far_pairs(query, db, &pairs, far)
        }
        None => metrics::tar_at_far(query, db, far, size, sides.exclusion(), *rows),
    }
    .map_err(metrics_error)?;
    let summary = format!(
        "TAR {:.4} at FAR {far:e} ({} genuine, {} impostor pairs)",
        t.tar, t.genuine, t.impostor
    );
    record_tar(ctx, details, far, &t, summary)?;
    details.insert("template_size".into(), json!(size));
    Ok(())
}

/// `identification`: open-set TPIR at FPIR and closed-set rank-1; TPIR declined with the
/// reason when the FPIR is below one over the non-mated probes.
fn identification(
    ctx: &mut StageContext<'_>,
    params: &EvaluateParams,
    sides: &Sides,
    details: &mut serde_json::Map<String, Value>,
) -> Result<(), StageError> {
    if layout(params)? == Layout::Ijbc {
        return ijbc::identification(ctx, params, sides, details);
    }
    let fpir = rate(params.fpir, "fpir")?;
    let size = template_size(params.template_size)?;
    let t = metrics::tpir_at_fpir(
        &sides.query,
        &sides.db,
        fpir,
        size,
        sides.exclusion(),
        sides.rows,
    )
    .map_err(metrics_error)?;
    ctx.metric(&RECALL_AT.named("1"), t.rank1);
    ctx.metric(MATED_PROBES.name, t.mated as f64);
    ctx.metric(NON_MATED_PROBES.name, t.non_mated as f64);
    ctx.metric(FPIR_ACHIEVED.name, t.fpir);
    OpenSetRate {
        metric: &TPIR_AT_FPIR,
        positive: "TPIR",
        rate: "FPIR",
        negatives: "non-mated probes",
        target: fpir,
        available: t.non_mated as u64,
        value: t.tpir,
        resolvable: t.resolvable,
    }
    .record(
        ctx,
        details,
        format!(
            "TPIR {:.4} at FPIR {fpir:e}, closed-set rank-1 {:.4}",
            t.tpir, t.rank1
        ),
    )?;
    details.insert("fpir_target".into(), json!(fpir));
    details.insert("fpir_achieved".into(), json!(t.fpir));
    details.insert("threshold".into(), json!(t.threshold));
    details.insert("rank1".into(), json!(t.rank1));
    details.insert("mated_probes".into(), json!(t.mated));
    details.insert("non_mated_probes".into(), json!(t.non_mated));
    details.insert("template_size".into(), json!(size));
    Ok(())
}

/// One verification pair: `(query row, database row, genuine)`.
type ImagePair = (usize, usize, bool);

/// The split's verification pairs as [`ImagePair`]s, when the `pairs`
/// input is connected: both sides must be the pairs' partition (checked by item ids), and
/// pairs are single images, so `template_size` must be 1.
fn explicit_pairs(
    ctx: &StageContext<'_>,
    query: &EmbeddingSet,
    db: &EmbeddingSet,
    template_size: usize,
) -> Result<Option<Vec<ImagePair>>, StageError> {
    if ctx.input_all("pairs").is_empty() {
        return Ok(None);
    }
    let manifest = asymflow::data::SplitManifest::from_input(ctx.input("pairs")?)?;
    let partition = manifest.pairs_partition.as_deref().unwrap_or("test");
    let bad = |message: String| StageError::Input {
        slot: "pairs".into(),
        message,
    };
    if manifest.pairs.is_empty() {
        return Err(bad(
            "the split has no verification pairs: set `pairs_per_class` on the split, or drop the `pairs` input to score all template pairs".into(),
        ));
    }
    if template_size != 1 {
        return Err(StageError::bad_param(
            "template_size",
            format!("{template_size}: explicit pairs are pairs of single images; use 1 (the default) with the `pairs` input"),
        ));
    }
    let scope = super::embed::item_scope(&manifest);
    let ids: Vec<i64> = manifest
        .partition(partition)?
        .iter()
        .map(|i| metrics::item_id(&scope, &i.id))
        .collect();
    for (side, set) in [("query", query), ("database", db)] {
        if set.items.as_deref() != Some(ids.as_slice()) {
            return Err(bad(format!(
                "the {side} embeddings are not the split's `{partition}` partition, which its pairs index; embed that partition of this split on both sides"
            )));
        }
    }
    Ok(Some(
        manifest
            .pairs
            .iter()
            .map(|p| (p.a, p.b, p.genuine))
            .collect(),
    ))
}

fn positive_ks(ks: &[i64]) -> Result<Vec<usize>, StageError> {
    if ks.is_empty() || ks.iter().any(|&k| k < 1) {
        return Err(StageError::bad_param(
            "ks",
            format!("{ks:?}: give one or more k >= 1, e.g. [1, 5, 10]"),
        ));
    }
    Ok(ks.iter().map(|&k| k as usize).collect())
}

/// `layout`: where the face protocols' templates, pairs and galleries come from.
fn layout(params: &EvaluateParams) -> Result<Layout, StageError> {
    let name = params.layout.as_str();
    Layout::parse(name).ok_or_else(|| {
        StageError::bad_param(
            "layout",
            format!("`{name}`: use one of {}", Layout::NAMES.join(", ")),
        )
    })
}

fn template_size(v: i64) -> Result<usize, StageError> {
    usize::try_from(v).map_err(|_| {
        StageError::bad_param(
            "template_size",
            format!("{v}: images per template, >= 0 (0 = one per identity)"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use asymflow::stages::testing::{artifact, run_stage};

    fn write(dir: &std::path::Path, name: &str, set: &EmbeddingSet) -> std::path::PathBuf {
        let sub = dir.join(name);
        std::fs::create_dir_all(&sub).unwrap();
        let path = sub.join(EMBEDDINGS_OUTPUT);
        set.write(&path).unwrap();
        path
    }

    #[test]
    fn retrieval_of_one_stage_against_itself_excludes_each_query() {
        let dir = tempfile::tempdir().unwrap();
        let set = EmbeddingSet::new(vec![1.0, 0.9, 0.95, -1.0], 1, vec![0, 0, 1, 2], None);
        let path = write(dir.path(), "emb", &set);
        let mut emb = artifact("embed", "k1", &[(EMBEDDINGS_OUTPUT, &path)]);
        emb.metrics.insert("gflops".into(), 0.25);
        let (metrics, out) = run_stage(
            &asymflow::stages::evaluate::Evaluate,
            &Evaluate,
            json!({"ks": [1, 2]}),
            &[("query", vec![emb.clone()]), ("database", vec![emb])],
        )
        .unwrap();
        // The hand-worked case of metrics::retrieval's tests.
        assert!((metrics["map"] - 0.625).abs() < 1e-9);
        assert!((metrics["map_noninterp"] - 0.75).abs() < 1e-9);
        assert_eq!(
            metrics["map_std"], metrics["map_noninterp"],
            "the old name is an alias"
        );
        assert_eq!(metrics["r1"], 0.5);
        assert_eq!(metrics["r2"], 1.0);
        assert_eq!(metrics["no_positive"], 2.0);
        assert_eq!(metrics["query_gflops"], 0.25);
        let details: Value = crate::kind::read_json(&out.path().join(EVALUATION_OUTPUT)).unwrap();
        assert_eq!(details["exclude_self"], true);
        // Queries 0 and 1 have a positive: APs 0.25 and 1 (standard 0.5 and 1), first
        // positives at ranks 1 and 0.
        let file = PerQuery::read(&out.path().join(PER_QUERY_OUTPUT)).unwrap();
        assert_eq!((file.queries, file.index.clone()), (4, vec![0, 1]));
        assert_eq!(file.values("map"), Some(&[0.25, 1.0][..]));
        assert_eq!(file.values("map_std"), Some(&[0.5, 1.0][..]));
        assert_eq!(file.values("r1"), Some(&[0.0, 1.0][..]));
        assert_eq!(file.values("r2"), Some(&[1.0, 1.0][..]));
        for name in ["map", "map_noninterp", "r1", "r2"] {
            let values = file.values(name).unwrap();
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            assert_eq!(
                mean, metrics[name],
                "{name}: the mean of its per-query values"
            );
        }
    }

    #[test]
    fn two_models_on_the_same_images_exclude_the_diagonal_too() {
        let dir = tempfile::tempdir().unwrap();
        let ids = vec![
            metrics::item_id("s", "a.jpg"),
            metrics::item_id("s", "b.jpg"),
        ];
        let old = EmbeddingSet::new(vec![1.0, 0.0, 0.0, 1.0], 2, vec![0, 1], None)
            .with_items(ids.clone());
        let new = EmbeddingSet::new(vec![0.0, 1.0, 1.0, 0.0], 2, vec![0, 1], None).with_items(ids);
        let q = artifact(
            "new",
            "a",
            &[(EMBEDDINGS_OUTPUT, &write(dir.path(), "n", &new))],
        );
        let d = artifact(
            "old",
            "b",
            &[(EMBEDDINGS_OUTPUT, &write(dir.path(), "o", &old))],
        );
        let (metrics, _) = run_stage(
            &asymflow::stages::evaluate::Evaluate,
            &Evaluate,
            json!({}),
            &[("query", vec![q.clone()]), ("database", vec![d.clone()])],
        )
        .unwrap();
        assert_eq!(
            metrics["no_positive"], 2.0,
            "each query's only positive is its own image"
        );
        assert!(
            !metrics.contains_key("map"),
            "no query to average over: no number"
        );
        let (metrics, _) = run_stage(
            &asymflow::stages::evaluate::Evaluate,
            &Evaluate,
            json!({"exclude_self": "never"}),
            &[("query", vec![q]), ("database", vec![d])],
        )
        .unwrap();
        assert_eq!(metrics["r1"], 0.0, "new(0) is closest to old(1)");
    }

    /// Query and gallery partitions with the same label sequence are still different images:
    /// the genuine match must stay. Deciding sameness from labels and cameras dropped it (and
    /// in identification turned the mated probe non-mated, through the same exclusion).
    #[test]
    fn identical_label_sequences_of_different_images_are_not_self_matches() {
        let dir = tempfile::tempdir().unwrap();
        let ids = |p: &str| {
            (0..4)
                .map(|i| metrics::item_id("s", &format!("{p}/{i}.jpg")))
                .collect::<Vec<_>>()
        };
        let labels = vec![0, 1, 2, 3];
        let rows = vec![1.0, 0.0, 0.0, 1.0, -1.0, 0.0, 0.0, -1.0];
        let query =
            EmbeddingSet::new(rows.clone(), 2, labels.clone(), None).with_items(ids("query"));
        let gallery = EmbeddingSet::new(rows, 2, labels, None).with_items(ids("gallery"));
        let q = artifact(
            "emb-q",
            "a",
            &[(EMBEDDINGS_OUTPUT, &write(dir.path(), "q", &query))],
        );
        let g = artifact(
            "emb-g",
            "b",
            &[(EMBEDDINGS_OUTPUT, &write(dir.path(), "g", &gallery))],
        );
        let inputs = [("query", vec![q]), ("database", vec![g])];
        let (m, out) = run_stage(
            &asymflow::stages::evaluate::Evaluate,
            &Evaluate,
            json!({"ks": [1]}),
            &inputs,
        )
        .unwrap();
        assert_eq!(m["no_positive"], 0.0, "every query has its gallery image");
        assert_eq!(m["r1"], 1.0);
        let details: Value = crate::kind::read_json(&out.path().join(EVALUATION_OUTPUT)).unwrap();
        assert_eq!(details["exclude_self"], false);
    }

    #[test]
    fn verification_scores_the_splits_explicit_pairs_when_given() {
        use asymflow::data::{
            DatasetKind, DatasetSource, SplitItem, SplitManifest, VerificationPair, MANIFEST_OUTPUT,
        };
        let dir = tempfile::tempdir().unwrap();
        let items: Vec<SplitItem> = [0, 0, 0, 1]
            .iter()
            .enumerate()
            .map(|(i, &label)| SplitItem {
                id: format!("img/{i}.jpg"),
                label,
                camera: None,
            })
            .collect();
        let mut manifest = SplitManifest::new(
            DatasetSource::Files {
                layout: DatasetKind::Cub200,
                root: "data".into(),
            },
            "half-classes",
            [("test".to_string(), items.clone())].into(),
        );
        manifest.content = Some("fixture".into());
        manifest.pairs = vec![
            VerificationPair {
                a: 0,
                b: 2,
                genuine: true,
            },
            VerificationPair {
                a: 1,
                b: 3,
                genuine: false,
            },
        ];
        let split_dir = dir.path().join("split");
        std::fs::create_dir_all(&split_dir).unwrap();
        manifest.write(&split_dir.join(MANIFEST_OUTPUT)).unwrap();
        let split = artifact(
            "split",
            "s",
            &[(MANIFEST_OUTPUT, &split_dir.join(MANIFEST_OUTPUT))],
        );
        let ids: Vec<i64> = items
            .iter()
            .map(|i| metrics::item_id("fixture", &i.id))
            .collect();
        let set =
            EmbeddingSet::new(vec![1.0, -1.0, 1.0, 1.0], 1, vec![0, 0, 0, 1], None).with_items(ids);
        let e = artifact(
            "e",
            "k",
            &[(EMBEDDINGS_OUTPUT, &write(dir.path(), "e", &set))],
        );
        let base = [("query", vec![e.clone()]), ("database", vec![e.clone()])];
        let (all, _) = run_stage(
            &asymflow::stages::evaluate::Evaluate,
            &Evaluate,
            json!({"protocol": "verification", "far": 1.0}),
            &base,
        )
        .unwrap();
        assert_eq!(all["genuine_pairs"], 6.0, "all ordered same-label pairs");
        let with_pairs = [
            ("query", vec![e.clone()]),
            ("database", vec![e.clone()]),
            ("pairs", vec![split]),
        ];
        let (m, out) = run_stage(
            &asymflow::stages::evaluate::Evaluate,
            &Evaluate,
            json!({"protocol": "verification", "far": 1.0}),
            &with_pairs,
        )
        .unwrap();
        assert_eq!((m["genuine_pairs"], m["impostor_pairs"]), (1.0, 1.0));
        assert_eq!(
            m["tar_at_far"], 1.0,
            "the genuine pair (1) is above the impostor (-1)"
        );
        let details: Value = crate::kind::read_json(&out.path().join(EVALUATION_OUTPUT)).unwrap();
        assert_eq!(details["explicit_pairs"], 2);
        let err = run_stage(
            &asymflow::stages::evaluate::Evaluate,
            &Evaluate,
            json!({"protocol": "verification", "template_size": 5}),
            &with_pairs,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("template_size"), "{err}");
    }

    #[test]
    fn a_larger_query_dimension_needs_truncate() {
        let dir = tempfile::tempdir().unwrap();
        let new = EmbeddingSet::new(vec![1.0, 0.0, 0.5, 0.0, 1.0, 0.5], 3, vec![0, 1], None);
        let old = EmbeddingSet::new(vec![1.0, 0.0, 0.0, 1.0, 1.0, 0.0], 2, vec![0, 1, 0], None);
        let q = artifact(
            "new",
            "a",
            &[(EMBEDDINGS_OUTPUT, &write(dir.path(), "n", &new))],
        );
        let d = artifact(
            "old",
            "b",
            &[(EMBEDDINGS_OUTPUT, &write(dir.path(), "o", &old))],
        );
        let inputs = [("query", vec![q]), ("database", vec![d])];
        let err = run_stage(
            &asymflow::stages::evaluate::Evaluate,
            &Evaluate,
            json!({}),
            &inputs,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("3-dimensional but database embeddings are 2-dimensional"),
            "{err}"
        );
        let (metrics, _) = run_stage(
            &asymflow::stages::evaluate::Evaluate,
            &Evaluate,
            json!({"truncate": true}),
            &inputs,
        )
        .unwrap();
        assert_eq!(
            metrics["r1"], 1.0,
            "first two components match each query's class"
        );
    }

    #[test]
    fn an_unmeasurable_far_is_reported_not_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let set = EmbeddingSet::new(vec![1.0, 0.9, -1.0, -0.8], 1, vec![0, 0, 1, 1], None);
        let e = artifact(
            "e",
            "k",
            &[(EMBEDDINGS_OUTPUT, &write(dir.path(), "e", &set))],
        );
        let inputs = [("query", vec![e.clone()]), ("database", vec![e])];
        let (metrics, out) = run_stage(
            &asymflow::stages::evaluate::Evaluate,
            &Evaluate,
            json!({"protocol": "verification"}),
            &inputs,
        )
        .unwrap();
        assert!(!metrics.contains_key("tar_at_far"));
        assert_eq!(metrics["impostor_pairs"], 8.0);
        let details: Value = crate::kind::read_json(&out.path().join(EVALUATION_OUTPUT)).unwrap();
        let note = details["note"].as_str().unwrap();
        assert!(
            note.starts_with(
                "FAR 1e-4 is below 1 / 8 impostor pairs: not measurable here, no tar_at_far \
                 recorded (TAR at FAR 0 is "
            ),
            "{note}"
        );
        assert_eq!(details["tar_at_far"], Value::Null);
        let (metrics, _) = run_stage(
            &asymflow::stages::evaluate::Evaluate,
            &Evaluate,
            json!({"protocol": "verification", "far": 0.125}),
            &inputs,
        )
        .unwrap();
        assert_eq!(metrics["tar_at_far"], 1.0);
    }

    #[test]
    fn reid_without_cameras_says_how_to_fix_it() {
        let dir = tempfile::tempdir().unwrap();
        let set = EmbeddingSet::new(vec![1.0, 0.9], 1, vec![0, 0], None);
        let e = artifact(
            "e",
            "k",
            &[(EMBEDDINGS_OUTPUT, &write(dir.path(), "e", &set))],
        );
        let err = run_stage(
            &asymflow::stages::evaluate::Evaluate,
            &Evaluate,
            json!({"protocol": "reid"}),
            &[("query", vec![e.clone()]), ("database", vec![e])],
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("needs the camera"), "{err}");
    }
}
