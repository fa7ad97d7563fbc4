//! `train-bct`: backward-compatible training (Shen et al., CVPR 2020) and its baselines.
//!
//! The new model phi_new is trained on T_new with
//! L = L(w_c_new, phi_new; T_new) + lambda * L_influence, where the influence term runs the new
//! features through the **old model's frozen classifier** w_c_old, so the new embedding stays
//! in the space the old gallery lives in ([`Influence`]):
//! - `t_bct = "old"`: cross-entropy through w_c_old on the images of classes it knows (T_old);
//! - `t_bct = "new"` with `new_classes = "synthesised"`: w_c_old is extended with one row per
//!   new class, the mean old-model feature of that class's training images, and every image
//!   contributes;
//! - `t_bct = "new"` with `new_classes = "kd"`: images of old classes as above; images of new
//!   classes contribute T^2 KL(softmax(w_c_old phi_old / T) || softmax(w_c_old phi_new / T)).
//!
//! A new embedding larger than the old one feeds its first K_old components, L2-normalised
//! again, to w_c_old (and the same truncation is what `evaluate` compares with `truncate`).
//!
//! Baselines, as `method`:
//! - `l2`: 1/2 ||phi_new(x) - phi_old(x)||^2 on T_old;
//! - `lwf` (learning without forgetting, as the BCT paper's baseline): the old model's soft
//!   labels are the pseudo-labels of the newly added data. On the images of T_new \ T_old
//!   (classes absent from the old model's `classes.json`) the term is
//!   T^2 KL(softmax(w_c_old phi_old / T) || softmax(w_c_old phi_new / T)) through the same
//!   **frozen** w_c_old, summed over those images and divided by the batch size; images of
//!   old classes add nothing to it. It differs from `kd` only in leaving out the
//!   cross-entropy on T_old.
//!
//! The old model itself never trains: its variables (its classifier included) are frozen and
//! its features computed in eval mode without gradient.

use super::outputs;
use super::train_classifier::CLASSIFIER_PARAMS;
use crate::kind::{Artifact, InputDecl, OutputDecl, ParamDecl, ParamType, Params, Resource, Stage};

/// The `train-bct` kind.
pub struct TrainBct;

const OWN: &[ParamDecl] = &[
    ParamDecl::optional("method", ParamType::Choice(&["bct", "l2", "lwf"]), "\"bct\"",
        "bct: influence loss through the frozen old classifier; l2 / lwf: the baselines"),
    ParamDecl::optional("t_bct", ParamType::Choice(&["old", "new"]), "\"old\"",
        "bct: images of the influence loss: the old training classes, or all new training data"),
    ParamDecl::optional("new_classes", ParamType::Choice(&["synthesised", "kd"]), "\"synthesised\"",
        "bct with t_bct = \"new\": classes the old classifier lacks get synthesised weights (mean old feature) or distillation"),
    ParamDecl::optional("lambda", ParamType::Float, "1.0", "weight of the influence (or baseline) term"),
    ParamDecl::optional("temperature", ParamType::Float, "2.0", "softmax temperature of kd and lwf"),
];

const PARAMS: &[ParamDecl] = crate::param_list!(CLASSIFIER_PARAMS, OWN);

const INPUTS: &[InputDecl] = &[
    InputDecl {
        name: "split",
        required: true,
        accepts: &[Artifact::Split],
        doc: "the split stage",
    },
    InputDecl {
        name: "old",
        required: true,
        accepts: &[Artifact::Classifier],
        doc:
            "the old model: a train-classifier or train-bct stage (checkpoint with its classifier)",
    },
];

impl Stage for TrainBct {
    fn kind(&self) -> &'static str {
        "train-bct"
    }

    fn impl_version(&self) -> u32 {
        // 2: `train_seconds` is telemetry, no longer in `metrics.json`.
        // 3: `precision` (the key gains a parameter; fp32 results are bit-identical).
        // 4: `lwf` distils through the frozen w_c_old on the images of new classes only (was a
        //    trainable copy of w_c_old on every image).
        // 5: channels-last backbone (nn/resnet.rs): faster; the last bits of every result move.
        5
    }

    fn summary(&self) -> &'static str {
        "trains a new model compatible with an old one (BCT influence loss; l2 and lwf baselines)"
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
