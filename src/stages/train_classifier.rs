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

use super::outputs;
use crate::kind::{Artifact, InputDecl, OutputDecl, ParamDecl, ParamType, Params, Resource, Stage};

/// The parameters `train-classifier` and `train-bct` share, then the kind's own.
macro_rules! classifier_params {
    ($($extra:expr),* $(,)?) => {
        &[
            ParamDecl::optional("partition", ParamType::Str, "\"train\"",
                "split partition to train on (e.g. \"train-50\" for an old model on half the identities)"),
            ParamDecl::optional("arch", ParamType::Choice(&["resnet18", "resnet34", "resnet50"]), "\"resnet18\"", "backbone"),
            ParamDecl::optional("width", ParamType::Int, "64", "base channels (64 in the paper; 8-16 on CPU)"),
            ParamDecl::optional("stem", ParamType::Choice(&["imagenet", "small"]), "\"imagenet\"",
                "imagenet: 7x7/2 + max-pool; small: one 3x3 convolution (32-64 px images)"),
            ParamDecl::optional("embed_dim", ParamType::Int, "128", "embedding dimension D (128 in the BCT paper)"),
            ParamDecl::optional("head", ParamType::Choice(&["softmax", "norm-softmax", "cosface"]), "\"norm-softmax\"",
                "classification loss"),
            ParamDecl::optional("scale", ParamType::Float, "30.0", "scale s of the cosine heads"),
            ParamDecl::optional("margin", ParamType::Float, "0.4", "CosFace margin m (cosface only)"),
            ParamDecl::optional("resolution", ParamType::Resolution, "224",
                "training input size: s (square) or [height, width] (crops keep its aspect ratio)").at_least(1.0),
            ParamDecl::optional("epochs", ParamType::Int, "30", "training epochs").at_least(1.0),
            ParamDecl::optional("batch_size", ParamType::Int, "128", "images per batch").at_least(1.0),
            ParamDecl::optional("optimizer", ParamType::Choice(&["adam", "adamw"]), "\"adam\"", "optimiser"),
            ParamDecl::optional("lr", ParamType::Float, "2e-3", "peak learning rate"),
            ParamDecl::optional("weight_decay", ParamType::Float, "0.0", "weight decay"),
            ParamDecl::optional("one_cycle", ParamType::Bool, "true", "one-cycle schedule (else constant)"),
            ParamDecl::optional("augment", ParamType::Bool, "true", "random resized crops (and flips, see `flip`)"),
            ParamDecl::optional("crop_min", ParamType::Float, "0.25",
                "smallest random crop, as a share of the image's area (0 < crop_min <= 1)").share(),
            ParamDecl::optional("flip", ParamType::Bool, "true",
                "horizontal flips; off where mirroring changes identity (the synthetic set's stripe angles)"),
            ParamDecl::optional("seed", ParamType::Int, "0", "seed of initialisation, order and augmentation"),
            $crate::stages::training::PRECISION,
            $($extra),*
        ]
    };
}
pub(crate) use classifier_params;

/// The output naming the data set label of each classifier row.
pub const CLASSES_OUTPUT: &str = super::outputs::CLASSES.file;

/// The `train-classifier` kind.
pub struct TrainClassifier;

const PARAMS: &[ParamDecl] = classifier_params!();

const INPUTS: &[InputDecl] = &[InputDecl {
    name: "split",
    required: true,
    accepts: &[Artifact::Split],
    doc: "the split stage",
}];

/// The output holding the per-epoch losses.
pub const LOSS_OUTPUT: &str = super::outputs::LOSSES.file;

impl Stage for TrainClassifier {
    fn kind(&self) -> &'static str {
        "train-classifier"
    }

    fn impl_version(&self) -> u32 {
        // 2: `train_seconds` is telemetry, no longer in `metrics.json`.
        // 3: `precision` (the key gains a parameter; fp32 results are bit-identical).
        3
    }

    fn summary(&self) -> &'static str {
        "trains an embedding network with a classification loss (softmax, normalised softmax, CosFace)"
    }

    fn params(&self) -> &'static [ParamDecl] {
        PARAMS
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

    fn resource(&self, _params: &Params) -> Resource {
        Resource::Device
    }
}
