//! `train-teacher`: the database network, trained at the large resolution with labels.
//!
//! Losses: `triplet` (the paper's: distance-weighted negatives, margin on squared distances)
//! and the classifier losses `norm-softmax` / `cosface` (a cosine head with a scale; the paper
//! notes the teacher may equally be trained with losses that do not compare pairs, and at the
//! quickstart's scale they train more reliably). Batches hold `per_class` images of each of
//! `batch_size / per_class` classes (0: plain shuffling). AdamW with the one-cycle schedule by
//! default. Outputs `model.safetensors` + `model.json` (with the head, if any) and `loss.json`.

use serde_json::{json, Value};

use super::groups::augment::{self, AugmentDefaults};
use super::groups::batching::{self, Batching, BatchingDefaults};
use super::groups::network::{self, NetworkDefaults, NetworkParams};
use super::groups::optim::{self, OptimDefaults, OptimParams};
use super::outputs;
use super::training::*;
use crate::data::AugmentConfig;
use crate::kind::{
    Artifact, FingerprintEnv, InputDecl, OutputDecl, ParamDecl, ParamType, Params, Resolution,
    Resource, Stage, StageError,
};

/// See the module docs.
pub struct TrainTeacher;

/// `mining`: where the triplet loss's negatives come from.
pub(crate) const MINING: ParamDecl = ParamDecl::optional(
    "mining",
    ParamType::Choice(&["batch", "pool"]),
    "\"batch\"",
    "triplet: negatives from the batch, or from a pool of training images embedded in eval mode at the start of each epoch (the reference's mine_dist)",
);

/// `pool_size`: the most images in `mining = "pool"`'s pool.
pub(crate) const POOL_SIZE: ParamDecl = ParamDecl::optional(
    "pool_size",
    ParamType::Int,
    "20000",
    "mining = \"pool\": training images drawn into each epoch's pool (at most the partition)",
)
.at_least(1.0);

const OWN: &[ParamDecl] = &[
    ParamDecl::optional(
        "partition",
        ParamType::Str,
        "\"train\"",
        "partition of the split to train on",
    ),
    ParamDecl::optional(
        "resolution",
        ParamType::Resolution,
        "448",
        "training input size: s (square) or [height, width]; images re-sampled so their largest side is the larger of the two, crops keep its aspect ratio",
    )
    .at_least(1.0),
    ParamDecl::optional(
        "pool",
        ParamType::Choice(POOLS),
        "\"gem\"",
        "global pooling",
    ),
    ParamDecl::optional(
        "pretrained",
        ParamType::Path,
        "\"\"",
        "torchvision ImageNet weights (.safetensors); empty: random init",
    ),
    ParamDecl::optional(
        "loss",
        ParamType::Choice(&["triplet", "norm-softmax", "cosface"]),
        "\"triplet\"",
        "teacher loss",
    ),
    ParamDecl::optional(
        "margin",
        ParamType::Float,
        "0.7",
        "triplet: margin on squared Euclidean distances",
    ),
    ParamDecl::optional(
        "negatives",
        ParamType::Int,
        "4",
        "triplet: negatives drawn per anchor",
    ),
    MINING,
    POOL_SIZE,
    ParamDecl::optional(
        "scale",
        ParamType::Float,
        "30.0",
        "norm-softmax / cosface: scale s",
    ),
    ParamDecl::optional("cos_margin", ParamType::Float, "0.4", "cosface: margin m"),
    ParamDecl::optional(
        "per_class",
        ParamType::Int,
        "4",
        "images per class in a batch (0: plain shuffling)",
    )
    .at_least(0.0),
    ParamDecl::optional(
        "small_classes",
        ParamType::Choice(&["repeat", "drop"]),
        "\"repeat\"",
        "classes with fewer than per_class images: repeat some of their images, or drop them (the reference)",
    ),
    ParamDecl::optional(
        "freeze_bn",
        ParamType::Bool,
        "false",
        "keep BatchNorm statistics frozen",
    ),
    ParamDecl::optional(
        "seed",
        ParamType::Int,
        "0",
        "seed of initialisation, batches and sampling",
    ),
    ACCUMULATE,
    GEM_P_LR_SCALE,
    GEM_P_DECAY,
    PRECISION,
];

const PARAMS: &[ParamDecl] = crate::param_list!(
    OWN,
    &network::params(NetworkDefaults {
        arch: "\"resnet50\"",
        embed_dim: "512",
    }),
    &optim::params(OptimDefaults {
        optimizer: "\"adamw\"",
        lr: "1e-4",
        weight_decay: "1e-4",
    }),
    &augment::params(AugmentDefaults { jitter: "0.0" }),
    &batching::params(BatchingDefaults {
        epochs: "200",
        batch_size: "200",
        images_per_epoch: "0",
    }),
);

const INPUTS: &[InputDecl] = &[
    InputDecl {
        name: "split",
        required: true,
        accepts: &[Artifact::Split],
        doc: "a split stage",
    },
    super::training::resume_input(
        "continue from this train-teacher result (same network and head, fewer epochs) \
         instead of a fresh start: ASHA connects it to promote a trial; keyed only when \
         connected",
    ),
];

impl Stage for TrainTeacher {
    fn kind(&self) -> &'static str {
        "train-teacher"
    }
    fn impl_version(&self) -> u32 {
        // 2: `accumulate` is clamped to the batches of an epoch (was a partial step per epoch).
        // 3: `precision` (the key gains a parameter; fp32 results are bit-identical).
        // 4: `gem_p_lr_scale`, `gem_p_decay` (the key gains them; the defaults train as 3).
        // 5: `mining`, `pool_size` (the key gains them; `mining = "batch"` trains as 4).
        // 6: channels-last backbone (nn/resnet.rs): faster; the last bits of every result move.
        // 7: `loss.json` no longer holds each epoch's wall-clock `seconds` (now in the log), so
        //    a bit-identical retrain cuts off early below it.
        7
    }
    fn summary(&self) -> &'static str {
        "train the database network (triplet or cosine-classifier loss) at the large resolution"
    }
    fn params(&self) -> &'static [ParamDecl] {
        PARAMS
    }
    fn inputs(&self) -> &'static [InputDecl] {
        INPUTS
    }
    fn outputs(&self) -> &'static [OutputDecl] {
        &[outputs::MODEL_WEIGHTS, outputs::MODEL_META, outputs::LOSSES]
    }
    fn records(&self, _params: &Params) -> Option<Vec<String>> {
        crate::kind::declared(&["final_loss", "gflops", "resolution"])
    }
    fn resource(&self, _params: &Params) -> Resource {
        Resource::Device
    }
    fn fingerprint(
        &self,
        params: &Params,
        env: &FingerprintEnv<'_>,
    ) -> Result<Option<Value>, StageError> {
        Ok(weight_fingerprint(params, "pretrained", env)?.map(|(k, v)| json!({ k: v })))
    }
}

/// The kind's parameters, read once ([`crate::kind::typed`]); the runner takes this, never a
/// name. Choices stay in pipeline spelling: the runner maps them, with its messages.
#[derive(Debug, Clone)]
pub struct TrainTeacherParams {
    /// `partition`.
    pub partition: String,
    /// `resolution`.
    pub resolution: Resolution,
    /// `pool`.
    pub pool: String,
    /// `pretrained`, `None` when empty.
    pub pretrained: Option<String>,
    /// `loss`.
    pub loss: String,
    /// `margin` (triplet).
    pub margin: f64,
    /// `negatives` (triplet).
    pub negatives: i64,
    /// `mining`.
    pub mining: String,
    /// `pool_size` (`mining = "pool"`).
    pub pool_size: i64,
    /// `scale` (cosine heads).
    pub scale: f64,
    /// `cos_margin` (cosface).
    pub cos_margin: f64,
    /// `per_class`.
    pub per_class: i64,
    /// `small_classes`.
    pub small_classes: String,
    /// `freeze_bn`.
    pub freeze_bn: bool,
    /// `seed`.
    pub seed: i64,
    /// `accumulate`: at least 1.
    pub accumulate: usize,
    /// `gem_p_lr_scale`, `gem_p_decay`.
    pub gem: GemParams,
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

impl TrainTeacherParams {
    /// Reads every parameter of the kind.
    pub fn from_params(params: &Params) -> Result<Self, StageError> {
        Ok(TrainTeacherParams {
            partition: params.str("partition")?.to_string(),
            resolution: params.resolution("resolution")?,
            pool: params.str("pool")?.to_string(),
            pretrained: opt_path(params, "pretrained"),
            loss: params.str("loss")?.to_string(),
            margin: params.float("margin")?,
            negatives: params.int("negatives")?,
            mining: params.str("mining")?.to_string(),
            pool_size: params.int("pool_size")?,
            scale: params.float("scale")?,
            cos_margin: params.float("cos_margin")?,
            per_class: params.int("per_class")?,
            small_classes: params.str("small_classes")?.to_string(),
            freeze_bn: params.bool("freeze_bn")?,
            seed: params.int("seed")?,
            accumulate: positive(params, "accumulate")?,
            gem: GemParams::read(params)?,
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
        assert_reads_match_declaration(&TrainTeacher, json!({}), TrainTeacherParams::from_params);
    }
}
