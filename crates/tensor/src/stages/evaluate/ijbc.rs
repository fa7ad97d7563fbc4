//! `evaluate` with `layout = "ijbc"`: 1:1 verification and 1:N open-set identification on
//! IJB-C's published templates, pairs and galleries.
//!
//! The `pairs` input is the IJB-C split (`dataset = "ijbc"`); both embedding inputs must be
//! its `test` partition (every face crop), embedded by the query and the database model. The
//! protocol files are read again from the split's data set root
//! ([`asymflow::data::listing::ijbc::IjbcProtocol`]), whose content the split's key holds.
//! Template features and scoring: [`crate::metrics::media_templates`]. 1:N is evaluated
//! against G1 and against G2 separately and the two are averaged, as insightface's
//! `IJB_1N.py` reports its mean TPIR (the per-gallery numbers are in `evaluation.json`).

use std::collections::HashMap;

use serde_json::{json, Value};

use super::metrics_error::metrics_error;
use super::open_set_rate::{rate, record_tar, OpenSetRate};
use super::sides::Sides;
use crate::kind::{StageContext, StageError};
use crate::metrics;
use crate::metrics::media_templates::{tar_at_far_templates, tpir_at_fpir_templates, TemplateMap};
use asymflow::data::listing::ijbc::IjbcProtocol;
use asymflow::data::{DatasetKind, DatasetSource, SplitManifest};
use asymflow::metrics::registry::{
    FPIR_ACHIEVED, MATED_PROBES, NON_MATED_PROBES, RECALL_AT, TPIR_AT_FPIR,
};
use asymflow::stages::evaluate::EvaluateParams;

/// The protocol and each template's face rows in the embeddings.
struct Protocol {
    files: IjbcProtocol,
    map: TemplateMap,
}

fn input_error(message: String) -> StageError {
    StageError::Input {
        slot: "pairs".into(),
        message,
    }
}

impl Protocol {
    /// Reads the split of the `pairs` input and the protocol files under its root, and maps
    /// every face to its row (both sides must be the split's `test` partition, in order).
    fn read(ctx: &StageContext<'_>, sides: &Sides) -> Result<Protocol, StageError> {
        if ctx.input_all("pairs").is_empty() {
            return Err(StageError::bad_param(
                "layout",
                "\"ijbc\" reads IJB-C's protocol files through the `pairs` input: connect the \
                 split stage of dataset = \"ijbc\" as `pairs`",
            ));
        }
        let manifest = SplitManifest::from_input(ctx.input("pairs")?)?;
        let root = match &manifest.dataset {
            DatasetSource::Files {
                layout: DatasetKind::Ijbc,
                root,
            } => ctx.project_dir().join(root),
            _ => {
                return Err(input_error(
                    "layout = \"ijbc\" needs a split of dataset = \"ijbc\" as `pairs`; this \
                     split is of another data set"
                        .into(),
                ))
            }
        };
        let files = IjbcProtocol::read(&root).map_err(|e| input_error(e.to_string()))?;
        let items = manifest.partition("test")?;
        let scope = super::super::embed::item_scope(&manifest);
        let ids: Vec<i64> = items
            .iter()
            .map(|i| metrics::item_id(&scope, &i.id))
            .collect();
        for (side, set) in [("query", &sides.query), ("database", &sides.db)] {
            if set.items.as_deref() != Some(ids.as_slice()) {
                return Err(input_error(format!(
                    "the {side} embeddings are not this IJB-C split's `test` partition; embed \
                     partition = \"test\" of the split connected as `pairs` on both sides"
                )));
            }
        }
        let row: HashMap<&str, usize> = items
            .iter()
            .enumerate()
            .map(|(r, i)| (i.id.as_str(), r))
            .collect();
        let mut map = TemplateMap::new();
        for face in &files.faces {
            let r = *row.get(face.id.as_str()).ok_or_else(|| {
                input_error(format!(
                    "{} is in the protocol files but not in the split; rerun the split",
                    face.id
                ))
            })?;
            map.entry(face.template).or_default().push((r, face.media));
        }
        Ok(Protocol { files, map })
    }
}

/// `template_size` has no say under the IJB-C layout; refuses anything but its default.
fn protocol_templates_only(params: &EvaluateParams) -> Result<(), StageError> {
    match params.template_size {
        1 => Ok(()),
        n => Err(StageError::bad_param(
            "template_size",
            format!("{n}: layout = \"ijbc\" takes its templates from the protocol files; leave template_size at 1"),
        )),
    }
}

/// 1:1: TAR at FAR over `ijbc_template_pair_label.txt`.
pub(super) fn verification(
    ctx: &mut StageContext<'_>,
    params: &EvaluateParams,
    sides: &Sides,
    details: &mut serde_json::Map<String, Value>,
) -> Result<(), StageError> {
    protocol_templates_only(params)?;
    let far = rate(params.far, "far")?;
    let protocol = Protocol::read(ctx, sides)?;
    ctx.log(format!(
        "IJB-C 1:1: {} template pairs over {} templates",
        protocol.files.pairs.len(),
        protocol.map.len()
    ));
    let t = tar_at_far_templates(
        &sides.query,
        &sides.db,
        &protocol.map,
        &protocol.files.pairs,
        far,
    )
    .map_err(metrics_error)?;
    let summary = format!(
        "IJB-C TAR {:.4} at FAR {far:e} ({} genuine, {} impostor template pairs)",
        t.tar, t.genuine, t.impostor
    );
    record_tar(ctx, details, far, &t, summary)?;
    details.insert("layout".into(), json!("ijbc"));
    Ok(())
}

/// 1:N: mixed probes against G1 and against G2, TPIR at FPIR and rank-1 averaged over the two.
pub(super) fn identification(
    ctx: &mut StageContext<'_>,
    params: &EvaluateParams,
    sides: &Sides,
    details: &mut serde_json::Map<String, Value>,
) -> Result<(), StageError> {
    protocol_templates_only(params)?;
    let fpir = rate(params.fpir, "fpir")?;
    let protocol = Protocol::read(ctx, sides)?;
    let pairs = |list: &[asymflow::data::listing::ijbc::IjbcTemplate]| {
        list.iter()
            .map(|t| (t.template, t.subject))
            .collect::<Vec<_>>()
    };
    let probes = pairs(&protocol.files.probes);
    let mut per_gallery = Vec::new();
    for (name, gallery) in ["G1", "G2"].iter().zip(&protocol.files.galleries) {
        let t = tpir_at_fpir_templates(
            &sides.query,
            &sides.db,
            &protocol.map,
            &probes,
            &pairs(gallery),
            fpir,
            sides.rows,
        )
        .map_err(|e| StageError::Other(format!("IJB-C 1:N against {name}: {e}")))?;
        ctx.log(format!(
            "IJB-C 1:N against {name} ({} templates): TPIR {:.4} at FPIR {fpir:e}, rank-1 {:.4} \
             ({} mated, {} non-mated probes)",
            gallery.len(),
            t.tpir,
            t.rank1,
            t.mated,
            t.non_mated
        ));
        details.insert(
            format!("gallery_{}", name.to_lowercase()),
            json!({
                "templates": gallery.len(),
                "tpir_at_fpir": t.tpir,
                "resolvable": t.resolvable,
                "fpir_achieved": t.fpir,
                "threshold": t.threshold,
                "rank1": t.rank1,
                "mated_probes": t.mated,
                "non_mated_probes": t.non_mated,
            }),
        );
        per_gallery.push(t);
    }
    let mean = |f: fn(&metrics::TpirAtFpir) -> f64| per_gallery.iter().map(f).sum::<f64>() / 2.0;
    let mated: usize = per_gallery.iter().map(|t| t.mated).sum();
    let non_mated: usize = per_gallery.iter().map(|t| t.non_mated).sum();
    let rank1 = mean(|t| t.rank1);
    ctx.metric(&RECALL_AT.named("1"), rank1);
    ctx.metric(MATED_PROBES.name, mated as f64);
    ctx.metric(NON_MATED_PROBES.name, non_mated as f64);
    ctx.metric(FPIR_ACHIEVED.name, mean(|t| t.fpir));
    let tpir = mean(|t| t.tpir);
    OpenSetRate {
        metric: &TPIR_AT_FPIR,
        positive: "TPIR",
        rate: "FPIR",
        negatives: "non-mated probes (of the smaller gallery's count)",
        target: fpir,
        available: per_gallery.iter().map(|t| t.non_mated).min().unwrap_or(0) as u64,
        value: tpir,
        resolvable: per_gallery.iter().all(|t| t.resolvable),
    }
    .record(
        ctx,
        details,
        format!("IJB-C TPIR {tpir:.4} at FPIR {fpir:e} (mean of G1 and G2), rank-1 {rank1:.4}"),
    )?;
    details.insert("layout".into(), json!("ijbc"));
    details.insert("fpir_target".into(), json!(fpir));
    details.insert("rank1".into(), json!(rank1));
    details.insert("mated_probes".into(), json!(mated));
    details.insert("non_mated_probes".into(), json!(non_mated));
    Ok(())
}
