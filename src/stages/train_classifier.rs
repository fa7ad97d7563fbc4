//! `train-classifier`: an embedding network trained with a classification loss (softmax,
//! normalised softmax with scale s, or CosFace with margin m), the way BCT's models are trained.
//!
//! It produces the old model phi_old (on an identity subset such as `train-50`) and the
//! paragon phi_new* (on all of `train`, without BCT). The checkpoint keeps the trained
//! classifier (`classifier.*` in `model.safetensors`) because BCT's influence loss runs new
//! features through it; `classes.json` maps each classifier row to the data set's label, so a
//! later model trained on a superset knows which of its classes the old classifier has.
//!
//! The network is the BCT head of docs/METHODS.md: backbone, global average pooling, a linear layer
//! to D, L2 normalisation (`pool = "avg"`, no inner normalisation). The training loop here is
//! shared with `train-bct`, which adds its influence term to the same loss.

use super::groups::augment::{self, AugmentDefaults};
use super::groups::batching::{self, Batching, BatchingDefaults};
use super::groups::network::{self, NetworkDefaults, NetworkParams};
use super::groups::optim::{self, OptimDefaults, OptimParams};
use super::outputs;
use super::training::{resume_input, PRECISION};
use crate::data::AugmentConfig;
use crate::kind::{
    Artifact, InputDecl, OutputDecl, ParamDecl, ParamType, Params, Resolution, Resource, Stage,
    StageError,
};

/// The parameters of `train-classifier` outside the shared groups.
const OWN: &[ParamDecl] = &[
    ParamDecl::optional(
        "partition",
        ParamType::Str,
        "\"train\"",
        "split partition to train on (e.g. \"train-50\" for an old model on half the identities)",
    ),
    ParamDecl::optional(
        "head",
        ParamType::Choice(&["softmax", "norm-softmax", "cosface"]),
        "\"norm-softmax\"",
        "classification loss",
    ),
    ParamDecl::optional(
        "scale",
        ParamType::Float,
        "30.0",
        "scale s of the cosine heads",
    ),
    ParamDecl::optional(
        "margin",
        ParamType::Float,
        "0.4",
        "CosFace margin m (cosface only)",
    ),
    ParamDecl::optional(
        "resolution",
        ParamType::Resolution,
        "224",
        "training input size: s (square) or [height, width] (crops keep its aspect ratio)",
    )
    .at_least(1.0),
    ParamDecl::optional(
        "seed",
        ParamType::Int,
        "0",
        "seed of initialisation, order and augmentation",
    ),
    PRECISION,
];

/// Every parameter of `train-classifier`, which `train-bct` takes too (before its own).
pub(crate) const CLASSIFIER_PARAMS: &[ParamDecl] = crate::param_list!(
    OWN,
    &network::params(NetworkDefaults {
        arch: "\"resnet18\"",
        embed_dim: "128",
    }),
    &optim::params(OptimDefaults {
        optimizer: "\"adam\"",
        lr: "2e-3",
        weight_decay: "0.0",
    }),
    &augment::params(AugmentDefaults { jitter: "0.0" }),
    &batching::params(BatchingDefaults {
        epochs: "30",
        batch_size: "128",
        images_per_epoch: "0",
    }),
);

/// The output naming the data set label of each classifier row.
pub const CLASSES_OUTPUT: &str = super::outputs::CLASSES.file;

/// The `train-classifier` kind.
pub struct TrainClassifier;

const INPUTS: &[InputDecl] = &[
    InputDecl {
        name: "split",
        required: true,
        accepts: &[Artifact::Split],
        doc: "the split stage",
    },
    resume_input(
        "continue from this train-classifier result (same network and classes, fewer epochs) \
         instead of a fresh start: ASHA connects it to promote a trial; keyed only when \
         connected",
    ),
];

/// The output holding the per-epoch losses.
pub const LOSS_OUTPUT: &str = super::outputs::LOSSES.file;

/// The metrics every classifier training (`train-classifier`, `train-bct`) records.
pub(crate) const CLASSIFIER_METRICS: &[&str] = &[
    "train_loss",
    "train_accuracy",
    "train_seconds",
    "classes",
    "gflops",
];

impl Stage for TrainClassifier {
    fn kind(&self) -> &'static str {
        "train-classifier"
    }

    fn impl_version(&self) -> u32 {
        // 2: `train_seconds` is telemetry, no longer in `metrics.json`.
        // 3: `precision` (the key gains a parameter; fp32 results are bit-identical).
        // 4: channels-last backbone (nn/resnet.rs): faster; the last bits of every result move.
        4
    }

    fn summary(&self) -> &'static str {
        "trains an embedding network with a classification loss (softmax, normalised softmax, CosFace)"
    }

    fn params(&self) -> &'static [ParamDecl] {
        CLASSIFIER_PARAMS
    }

    fn inputs(&self) -> &'static [InputDecl] {
        INPUTS
    }

    fn outputs(&self) -> &'static [OutputDecl] {
        &[
            outputs::MODEL_WEIGHTS,
            outputs::MODEL_META,
            outputs::CLASSES,
            outputs::LOSSES,
        ]
    }
    fn records(&self, _params: &Params) -> Option<Vec<String>> {
        crate::kind::declared(CLASSIFIER_METRICS)
    }

    fn resource(&self, _params: &Params) -> Resource {
        Resource::Device
    }
}

/// The parameters of `train-classifier` ([`CLASSIFIER_PARAMS`], which `train-bct` takes too),
/// read once ([`crate::kind::typed`]); the runners take this, never a name.
#[derive(Debug, Clone)]
pub struct ClassifierParams {
    /// `partition`.
    pub partition: String,
    /// `head`, in pipeline spelling.
    pub head: String,
    /// `scale`.
    pub scale: f64,
    /// `margin`.
    pub margin: f64,
    /// `resolution`.
    pub resolution: Resolution,
    /// `seed`.
    pub seed: i64,
    /// `precision`, in pipeline spelling (the worker checks it can run it).
    pub precision: String,
    /// The network group.
    pub network: NetworkParams,
    /// The optimiser group.
    pub optim: OptimParams,
    /// The augmentation group.
    pub augment: AugmentConfig,
    /// The batching group.
    pub batching: Batching,
}

impl ClassifierParams {
    /// Reads every parameter of [`CLASSIFIER_PARAMS`].
    pub fn from_params(params: &Params) -> Result<Self, StageError> {
        Ok(ClassifierParams {
            partition: params.str("partition")?.to_string(),
            head: params.str("head")?.to_string(),
            scale: params.float("scale")?,
            margin: params.float("margin")?,
            resolution: params.resolution("resolution")?,
            seed: params.int("seed")?,
            precision: params.str("precision")?.to_string(),
            network: NetworkParams::read(params)?,
            optim: OptimParams::read(params)?,
            augment: augment::augment_config(params)?,
            batching: Batching::read(params)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::typed::assert_reads_match_declaration;
    use serde_json::json;

    #[test]
    fn the_struct_reads_what_the_kind_declares() {
        assert_reads_match_declaration(&TrainClassifier, json!({}), ClassifierParams::from_params);
    }
}
