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
//! names (`map`, `map_noninterp` (alias `map_std`), `r1`, `r5`, ..., `no_positive`,
//! `query_gflops`, `tar_at_far`,
//! `tpir_at_fpir`; the registry in [`crate::metrics::registry`]); a metric that cannot be
//! measured (a rate target below one over the available negatives, a mean over no query with
//! a positive) is recorded as no number, with its reason in `reasons.json`.

use super::outputs;
use crate::kind::{Artifact, InputDecl, OutputDecl, ParamDecl, ParamType, Stage};

pub use super::embed::EMBEDDINGS_OUTPUT;

/// The details output of `evaluate`.
pub const EVALUATION_OUTPUT: &str = super::outputs::EVALUATION.file;

/// The `evaluate` kind.
pub struct Evaluate;

const PARAMS: &[ParamDecl] = &[
    ParamDecl::optional(
        "protocol",
        ParamType::Choice(&["retrieval", "verification", "identification", "reid"]),
        "\"retrieval\"",
        "evaluation protocol",
    ),
    ParamDecl::optional(
        "ks",
        ParamType::List(&ParamType::Int),
        "[1, 5, 10]",
        "k of each R@k (retrieval, reid); recorded as r1, r5, ...",
    ),
    ParamDecl::optional(
        "far",
        ParamType::Float,
        "1e-4",
        "verification: the FAR of TAR@FAR",
    ),
    ParamDecl::optional(
        "fpir",
        ParamType::Float,
        "1e-2",
        "identification: the FPIR of TPIR@FPIR",
    ),
    ParamDecl::optional(
        "template_size",
        ParamType::Int,
        "1",
        "verification/identification: images per template (mean embedding); 0 = one per identity",
    ),
    ParamDecl::optional(
        "exclude_self",
        ParamType::Choice(&["auto", "always", "never"]),
        "\"auto\"",
        "exclude each query from its own database: auto = when both sides hold the same images",
    ),
    ParamDecl::optional(
        "truncate",
        ParamType::Bool,
        "false",
        "when one side's embeddings are larger, compare their first D components (re-normalised): BCT with a larger new dimension",
    ),
];

const INPUTS: &[InputDecl] = &[
    InputDecl {
        name: "query",
        required: true,
        accepts: &[Artifact::Embeddings],
        doc: "embedding stage of the queries (probes)",
    },
    InputDecl {
        name: "database",
        required: true,
        accepts: &[Artifact::Embeddings],
        doc: "embedding stage of the database (gallery); the same stage for symmetric setups",
    },
    InputDecl {
        name: "pairs",
        required: false,
        accepts: &[Artifact::Split],
        doc: "verification: a split stage whose explicit pairs (`pairs_per_class`) are scored instead of all template pairs",
    },
];

impl Stage for Evaluate {
    fn kind(&self) -> &'static str {
        "evaluate"
    }

    fn impl_version(&self) -> u32 {
        // 2: same images are decided by item ids, no longer by equal label and camera arrays;
        // verification scores a split's explicit pairs when the `pairs` input is given;
        // the standard AP is written as `map_noninterp` too (`map_std` kept as its alias).
        // 3: a metric that cannot be measured is declined with its reason (`reasons.json`).
        3
    }

    fn summary(&self) -> &'static str {
        "evaluates query embeddings against database embeddings (retrieval, verification, identification, reid)"
    }

    fn params(&self) -> &'static [ParamDecl] {
        PARAMS
    }

    fn inputs(&self) -> &'static [InputDecl] {
        INPUTS
    }

    fn outputs(&self) -> &'static [OutputDecl] {
        &[outputs::EVALUATION, outputs::REASONS]
    }
}
