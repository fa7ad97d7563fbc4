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
//! a positive) is recorded as no number, with its reason in `reasons.json`. Retrieval and reid
//! also write each query's AP and hits (`per_query.json`, [`crate::metrics::per_query`]), so
//! a report can put a bootstrap interval over the queries on a single evaluation.
//!
//! `layout = "ijbc"` takes the face protocol's templates, 1:1 pairs and 1:N galleries from
//! IJB-C's published files instead of generating them (docs/METHODS.md, "BCT: the
//! experiments"); it came after results were cached, so at its default no key changes.

use super::outputs;
use crate::kind::{
    Artifact, InputDecl, OutputDecl, ParamDecl, ParamType, Params, Stage, StageError,
};
use crate::metrics::registry::names as metric_names;

pub use super::embed::EMBEDDINGS_OUTPUT;

/// The details output of `evaluate`.
pub const EVALUATION_OUTPUT: &str = super::outputs::EVALUATION.file;

/// The per-query scores output of `evaluate` (retrieval and reid).
pub const PER_QUERY_OUTPUT: &str = super::outputs::PER_QUERY.file;

/// The `evaluate` kind.
pub struct Evaluate;

/// An evaluation protocol (`protocol`; docs/METHODS.md, "Metrics").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalProtocol {
    /// mAP, standard AP and R@k of each query against the database.
    Retrieval,
    /// TAR at FAR over template pairs, or over the split's explicit pairs.
    Verification,
    /// Open-set TPIR at FPIR, with closed-set rank-1.
    Identification,
    /// Retrieval without the same identity's gallery items from the query's camera.
    Reid,
}

impl EvalProtocol {
    /// The pipeline spellings, in the order of [`EvalProtocol::parse`].
    pub const NAMES: &'static [&'static str] =
        &["retrieval", "verification", "identification", "reid"];

    /// Parses a pipeline spelling.
    pub fn parse(name: &str) -> Option<EvalProtocol> {
        match name {
            "retrieval" => Some(EvalProtocol::Retrieval),
            "verification" => Some(EvalProtocol::Verification),
            "identification" => Some(EvalProtocol::Identification),
            "reid" => Some(EvalProtocol::Reid),
            _ => None,
        }
    }

    /// The pipeline spelling.
    pub fn name(self) -> &'static str {
        match self {
            EvalProtocol::Retrieval => "retrieval",
            EvalProtocol::Verification => "verification",
            EvalProtocol::Identification => "identification",
            EvalProtocol::Reid => "reid",
        }
    }
}

/// When a query is left out of its own database (`exclude_self`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExcludeSelf {
    /// When both sides hold the same images (one key, or equal item ids).
    Auto,
    /// Always: the sides are the same images in the same order.
    Always,
    /// Never.
    Never,
}

impl ExcludeSelf {
    /// The pipeline spellings, in the order of [`ExcludeSelf::parse`].
    pub const NAMES: &'static [&'static str] = &["auto", "always", "never"];

    /// Parses a pipeline spelling.
    pub fn parse(name: &str) -> Option<ExcludeSelf> {
        match name {
            "auto" => Some(ExcludeSelf::Auto),
            "always" => Some(ExcludeSelf::Always),
            "never" => Some(ExcludeSelf::Never),
            _ => None,
        }
    }
}

/// Where the templates, pairs and galleries of `verification` and `identification` come from
/// (`layout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Templates cut from each identity's images (`template_size`); every template pair, or
    /// the split's explicit pairs; open-set galleries from the split's partitions.
    Generated,
    /// IJB-C's published protocol ([`crate::data::listing::ijbc`]).
    Ijbc,
}

impl Layout {
    /// The pipeline spellings, in the order of [`Layout::parse`].
    pub const NAMES: &'static [&'static str] = &["generated", "ijbc"];

    /// Parses a pipeline spelling.
    pub fn parse(name: &str) -> Option<Layout> {
        match name {
            "generated" => Some(Layout::Generated),
            "ijbc" => Some(Layout::Ijbc),
            _ => None,
        }
    }
}

const PARAMS: &[ParamDecl] = &[
    ParamDecl::optional(
        "protocol",
        ParamType::Choice(EvalProtocol::NAMES),
        "\"retrieval\"",
        "evaluation protocol",
    ),
    ParamDecl::optional(
        "ks",
        ParamType::List(&ParamType::Int),
        "[1, 5, 10]",
        "k of each R@k (retrieval, reid); recorded as r1, r5, ...",
    )
    .at_least(1.0),
    ParamDecl::optional(
        "far",
        ParamType::Float,
        "1e-4",
        "verification: the FAR of TAR@FAR",
    )
    .share(),
    ParamDecl::optional(
        "fpir",
        ParamType::Float,
        "1e-2",
        "identification: the FPIR of TPIR@FPIR",
    )
    .share(),
    ParamDecl::optional(
        "template_size",
        ParamType::Int,
        "1",
        "verification/identification: images per template (mean embedding); 0 = one per identity",
    )
    .at_least(0.0),
    ParamDecl::optional(
        "exclude_self",
        ParamType::Choice(ExcludeSelf::NAMES),
        "\"auto\"",
        "exclude each query from its own database: auto = when both sides hold the same images",
    ),
    ParamDecl::optional(
        "layout",
        ParamType::Choice(Layout::NAMES),
        "\"generated\"",
        "verification/identification: generated = templates of template_size images per identity; ijbc = IJB-C's published templates, 1:1 pairs and 1:N galleries G1/G2 and probes, read through the `pairs` input (a split of dataset = \"ijbc\")",
    )
    .added_later(),
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
        doc: "verification: a split stage whose explicit pairs (`pairs_per_class`) are scored instead of all template pairs; layout = \"ijbc\": the IJB-C split whose protocol files define templates, pairs and galleries",
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
        // 4: retrieval and reid write each query's AP and hits (`per_query.json`), and their
        //    means are summed in query order (deterministic to the last bit).
        4
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
        &[outputs::EVALUATION, outputs::PER_QUERY, outputs::REASONS]
    }
    fn records(&self, params: &Params) -> Option<Vec<String>> {
        use crate::metrics::registry::*;
        let protocol = params.str("protocol").ok().and_then(EvalProtocol::parse)?;
        let mut names: Vec<String> = match protocol {
            EvalProtocol::Verification => {
                metric_names(&[TAR_AT_FAR, GENUINE_PAIRS, IMPOSTOR_PAIRS, FAR_ACHIEVED])
            }
            EvalProtocol::Identification => {
                let mut names =
                    metric_names(&[TPIR_AT_FPIR, MATED_PROBES, NON_MATED_PROBES, FPIR_ACHIEVED]);
                names.push(RECALL_AT.named("1"));
                names
            }
            EvalProtocol::Retrieval | EvalProtocol::Reid => {
                let mut names = metric_names(&[MAP, MAP_NONINTERP, MAP_STD, NO_POSITIVE, QUERIES]);
                let ks = params.ints("ks").ok()?;
                names.extend(ks.iter().map(|k| RECALL_AT.named(&k.to_string())));
                names
            }
        };
        names.push(QUERY_GFLOPS.name.to_string());
        Some(names)
    }
}

/// The kind's parameters, read once ([`crate::kind::typed`]); the runner takes this, never a
/// name. Values stay as declared: the runner checks them against the embeddings, with its
/// messages.
#[derive(Debug, Clone)]
pub struct EvaluateParams {
    /// `protocol`, in pipeline spelling ([`EvalProtocol::parse`]).
    pub protocol: String,
    /// `ks`.
    pub ks: Vec<i64>,
    /// `far`.
    pub far: f64,
    /// `fpir`.
    pub fpir: f64,
    /// `template_size` (0: one per identity).
    pub template_size: i64,
    /// `exclude_self`, in pipeline spelling ([`ExcludeSelf::parse`]).
    pub exclude_self: String,
    /// `truncate`.
    pub truncate: bool,
    /// `layout`, in pipeline spelling ([`Layout::parse`]).
    pub layout: String,
}

impl EvaluateParams {
    /// Reads every parameter of the kind.
    pub fn from_params(params: &Params) -> Result<Self, StageError> {
        Ok(EvaluateParams {
            protocol: params.str("protocol")?.to_string(),
            ks: params.ints("ks")?,
            far: params.float("far")?,
            fpir: params.float("fpir")?,
            template_size: params.int("template_size")?,
            exclude_self: params.str("exclude_self")?.to_string(),
            truncate: params.bool("truncate")?,
            layout: params.str("layout")?.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_struct_reads_what_the_kind_declares() {
        crate::kind::typed::assert_reads_match_declaration(
            &Evaluate,
            serde_json::json!({}),
            EvaluateParams::from_params,
        );
    }

    #[test]
    fn every_declared_spelling_parses_and_names_itself() {
        for &name in EvalProtocol::NAMES {
            let protocol = EvalProtocol::parse(name).expect(name);
            assert_eq!(protocol.name(), name);
        }
        for &name in ExcludeSelf::NAMES {
            assert!(ExcludeSelf::parse(name).is_some(), "{name}");
        }
        assert_eq!(EvalProtocol::parse("retrieval "), None);
        assert_eq!(ExcludeSelf::parse("sometimes"), None);
    }

    #[test]
    fn layout_enters_the_key_only_when_not_generated() {
        let layout = PARAMS.iter().find(|d| d.name == "layout").unwrap();
        assert!(!layout.keyed_value(&serde_json::json!("generated")));
        assert!(layout.keyed_value(&serde_json::json!("ijbc")));
        for &name in Layout::NAMES {
            assert!(Layout::parse(name).is_some(), "{name}");
        }
    }

    fn records(params: serde_json::Value) -> Vec<String> {
        let params: Params = serde_json::from_value(params).unwrap();
        Evaluate.records(&params).unwrap()
    }

    #[test]
    fn the_declared_metrics_follow_the_protocol_and_ks() {
        let retrieval = records(serde_json::json!({"protocol": "retrieval", "ks": [1, 5]}));
        for name in [
            "map",
            "map_noninterp",
            "map_std",
            "r1",
            "r5",
            "query_gflops",
        ] {
            assert!(
                retrieval.contains(&name.to_string()),
                "{name}: {retrieval:?}"
            );
        }
        assert!(!retrieval.contains(&"r10".to_string()));
        let verification = records(serde_json::json!({"protocol": "verification"}));
        assert!(verification.contains(&"tar_at_far".to_string()));
        assert!(!verification.contains(&"map".to_string()));
        let identification = records(serde_json::json!({"protocol": "identification"}));
        assert!(identification.contains(&"tpir_at_fpir".to_string()));
        assert!(identification.contains(&"r1".to_string()));
    }
}
