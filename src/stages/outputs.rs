//! The output files of the built-in kinds, declared once: each kind's [`Stage::outputs`] lists
//! these declarations, and the code that writes or reads a file names it through them (or
//! through the `*_OUTPUT` constants derived from them), so the artifact contract the spec
//! resolver checks and the files on disk cannot drift apart.
//!
//! [`Stage::outputs`]: crate::kind::Stage::outputs

use crate::data::MANIFEST_OUTPUT;
use crate::kind::{Artifact, OutputDecl};

/// A split's manifest: every item of every partition.
pub(crate) const SPLIT: OutputDecl = OutputDecl::new(
    MANIFEST_OUTPUT,
    Artifact::Split,
    "the partitions, their items and labels",
);

/// A checkpoint's weights.
pub const MODEL_WEIGHTS: OutputDecl = OutputDecl::new(
    "model.safetensors",
    Artifact::Model,
    "the trained network's weights",
);

/// A checkpoint's metadata: how to rebuild the network the weights belong to.
pub const MODEL_META: OutputDecl = OutputDecl::new(
    "model.json",
    Artifact::Model,
    "architecture, width, embedding dimension and pooling of the network",
);

/// The data set label of each classifier row of a classification-trained checkpoint.
pub const CLASSES: OutputDecl = OutputDecl::new(
    "classes.json",
    Artifact::Classifier,
    "the data set label of each classifier row",
);

/// A training's per-epoch losses.
pub const LOSSES: OutputDecl = OutputDecl::new(
    crate::report::loss::LOSS_OUTPUT,
    Artifact::Losses,
    "the per-epoch loss terms",
);

/// Embeddings of one partition.
pub(crate) const EMBEDDINGS: OutputDecl = OutputDecl::new(
    "embeddings.safetensors",
    Artifact::Embeddings,
    "L2-normalised embeddings [N, D], labels, cameras and item ids [N]",
);

/// An evaluation's details.
pub(crate) const EVALUATION: OutputDecl = OutputDecl::new(
    "evaluation.json",
    Artifact::Evaluation,
    "the protocol, counts, and why a metric has no number",
);

/// An evaluation's per-query scores ([`crate::metrics::per_query`]).
pub(crate) const PER_QUERY: OutputDecl = OutputDecl::optional(
    crate::metrics::per_query::PER_QUERY_OUTPUT,
    Artifact::Evaluation,
    "each query's AP and top-k hits, which the mAP and R@k average (retrieval and reid only)",
);

/// Compatibility criteria and update gains.
pub(crate) const UPDATE_GAIN: OutputDecl = OutputDecl::new(
    "update_gain.json",
    Artifact::UpdateGain,
    "per metric: M(new, old), M(old, old), M(new*, new*), the criterion and the gain or why none",
);

/// Why some metrics have no number ([`crate::kind::StageContext::decline`]).
pub(crate) const REASONS: OutputDecl = OutputDecl::optional(
    crate::kind::REASONS_OUTPUT,
    Artifact::Metrics,
    "metric -> why it has no number (only when some metric was declined)",
);
