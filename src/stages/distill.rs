//! `distill`: the query network, distilled at the small resolution from the frozen teacher,
//! without labels (Suma & Tolias, WACV 2023).
//!
//! Each image gives P augmentations, coupled by default (the same crop box, flip, colour jitter
//! and mixup weight for the teacher's view at R and the student's at r) or separate. The loss
//! is any subset of `L_abs`, `L_rel-ts` (weight `lambda_t`) and `L_rel-ss` (weight `lambda_s`),
//! exactly as docs/METHODS.md. The student starts from the teacher's weights by default, or from
//! ImageNet weights, another checkpoint (input slot `init`), or random; a lighter `arch` gives
//! network asymmetry (then the initialisation cannot be the teacher). Outputs the student's
//! `model.safetensors` + `model.json` and `loss.json`.

use serde_json::{json, Value};

use super::groups::augment::{self, AugmentDefaults};
use super::groups::batching::{self, Batching, BatchingDefaults};
use super::groups::optim::{self, OptimDefaults, OptimParams};
use super::outputs;
use super::training::*;
use crate::data::AugmentConfig;
use crate::kind::{
    Artifact, FingerprintEnv, InputDecl, OutputDecl, ParamDecl, ParamType, Params, Resolution,
    Resource, Stage, StageError,
};

/// See the module docs.
pub struct Distill;

/// The loss terms, in pipeline spelling.
pub const LOSS_TERMS: &[&str] = &["abs", "rel_ts", "rel_ss"];
const OWN: &[ParamDecl] = &[
    ParamDecl::optional(
        "partition",
        ParamType::Str,
        "\"train\"",
        "partition of the split to distil on (labels unused)",
    ),
    ParamDecl::optional(
        "resolution",
        ParamType::Resolution,
        "224",
        "the student's (query) resolution r: s (square) or [height, width]",
    )
    .at_least(1.0),
    ParamDecl::optional(
        "teacher_resolution",
        ParamType::Resolution,
        "0",
        "the teacher's view resolution R: s or [height, width] (0: the teacher stage's `resolution`); coupled views need r's aspect ratio",
    )
    .at_least(0.0),
    ParamDecl::optional(
        "init",
        ParamType::Choice(&["teacher", "imagenet", "checkpoint", "random"]),
        "\"teacher\"",
        "student initialisation (checkpoint: the `init` input)",
    ),
    ParamDecl::optional(
        "pretrained",
        ParamType::Path,
        "\"\"",
        "init = imagenet: torchvision weights (.safetensors)",
    ),
    ParamDecl::optional(
        "arch",
        ParamType::Choice(&[
            "teacher",
            "resnet18",
            "resnet34",
            "resnet50",
            "resnet101",
            "resnet152",
        ]),
        "\"teacher\"",
        "student backbone (network asymmetry); teacher: the same",
    ),
    ParamDecl::optional(
        "width",
        ParamType::Int,
        "0",
        "student base channels (0: the teacher's)",
    )
    .at_least(0.0),
    ParamDecl::optional(
        "stem",
        ParamType::Choice(&["teacher", "imagenet", "small"]),
        "\"teacher\"",
        "student stem (teacher: the same)",
    ),
    ParamDecl::optional(
        "augmentations",
        ParamType::Int,
        "8",
        "augmentations per image (P)",
    )
    .at_least(1.0),
    ParamDecl::optional(
        "coupled",
        ParamType::Bool,
        "true",
        "one draw for both views (else separate draws)",
    ),
    ParamDecl::optional(
        "mixup",
        ParamType::Float,
        "0.2",
        "mixup Beta(alpha, alpha) (0: off)",
    )
    .at_least(0.0),
    ParamDecl::optional(
        "losses",
        ParamType::List(&ParamType::Choice(LOSS_TERMS)),
        "[\"abs\", \"rel_ts\", \"rel_ss\"]",
        "enabled loss terms: abs, rel_ts, rel_ss",
    ),
    ParamDecl::optional("lambda_t", ParamType::Float, "0.7", "weight of rel_ts"),
    ParamDecl::optional("lambda_s", ParamType::Float, "0.7", "weight of rel_ss"),
    ParamDecl::optional(
        "freeze_bn",
        ParamType::Bool,
        "false",
        "keep the student's BatchNorm statistics frozen",
    ),
    ParamDecl::optional(
        "seed",
        ParamType::Int,
        "0",
        "seed of batches, augmentations and initialisation",
    ),
    ParamDecl::optional(
        "chunks",
        ParamType::Int,
        "1",
        "groups of whole images each batch is forwarded in, gradients added (less memory; BatchNorm sees each group)",
    )
    .at_least(1.0),
    ACCUMULATE,
    GEM_P_LR_SCALE,
    GEM_P_DECAY,
    PRECISION,
];

const PARAMS: &[ParamDecl] = crate::param_list!(
    OWN,
    &optim::params(OptimDefaults {
        optimizer: "\"adamw\"",
        lr: "1.1e-4",
        weight_decay: "1e-4",
    }),
    &augment::params(AugmentDefaults { jitter: "0.5" }),
    &batching::params(BatchingDefaults {
        epochs: "200",
        batch_size: "200",
        images_per_epoch: "8000",
    }),
);

const INPUTS: &[InputDecl] = &[
    InputDecl {
        name: "split",
        required: true,
        accepts: &[Artifact::Split],
        doc: "a split stage",
    },
    InputDecl {
        name: "teacher",
        required: true,
        accepts: &[Artifact::Model],
        doc: "the frozen teacher (a train-teacher or distill stage)",
    },
    InputDecl {
        name: "init",
        required: false,
        accepts: &[Artifact::Model],
        doc: "init = checkpoint: the checkpoint the student starts from",
    },
    super::training::resume_input(
        "continue from this distill result (the same student, fewer epochs) instead of a fresh \
         start: ASHA connects it to promote a trial; keyed only when connected",
    ),
];

impl Stage for Distill {
    fn kind(&self) -> &'static str {
        "distill"
    }
    fn impl_version(&self) -> u32 {
        // 2: `accumulate` is clamped to the batches of an epoch (was a partial step per epoch).
        // 3: `precision` and `chunks` (the key gains them; fp32, chunks = 1 are bit-identical).
        // 4: `gem_p_lr_scale`, `gem_p_decay` (the key gains them; the defaults train as 3).
        // 5: channels-last backbone (nn/resnet.rs): faster; the last bits of every result move.
        // 6: `loss.json` no longer holds each epoch's wall-clock `seconds` (now in the log), so
        //    a bit-identical retrain cuts off early below it.
        6
    }
    fn summary(&self) -> &'static str {
        "distil a small-resolution student from a frozen teacher, without labels"
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
        if params.str("init")? != "imagenet" {
            return Ok(None);
        }
        match weight_fingerprint(params, "pretrained", env)? {
            Some((k, v)) => Ok(Some(json!({ k: v }))),
            None => Err(StageError::bad_param(
                "pretrained",
                "init = \"imagenet\" needs a weight file",
            )),
        }
    }
}

/// The kind's parameters, read once ([`crate::kind::typed`]); the runner takes this, never a
/// name. Choices stay in pipeline spelling: the runner maps them, with its messages.
#[derive(Debug, Clone)]
pub struct DistillParams {
    /// `partition`.
    pub partition: String,
    /// `resolution`: the student's r.
    pub resolution: Resolution,
    /// `teacher_resolution`: `None` for 0 (the teacher stage's own `resolution`).
    pub teacher_resolution: Option<Resolution>,
    /// `init`.
    pub init: String,
    /// `pretrained`, `None` when empty.
    pub pretrained: Option<String>,
    /// `arch` ("teacher": the same).
    pub arch: String,
    /// `width` (0: the teacher's).
    pub width: i64,
    /// `stem` ("teacher": the same).
    pub stem: String,
    /// `augmentations`: at least 1.
    pub augmentations: usize,
    /// `coupled`.
    pub coupled: bool,
    /// `losses`, unchecked (the runner says which terms are wrong).
    pub losses: Vec<String>,
    /// `lambda_t`.
    pub lambda_t: f64,
    /// `lambda_s`.
    pub lambda_s: f64,
    /// `freeze_bn`.
    pub freeze_bn: bool,
    /// `seed`.
    pub seed: i64,
    /// `chunks`: at least 1.
    pub chunks: usize,
    /// `accumulate`: at least 1.
    pub accumulate: usize,
    /// `gem_p_lr_scale`, `gem_p_decay`.
    pub gem: GemParams,
    /// `precision`, in pipeline spelling (the worker checks it can run it).
    pub precision: String,
    /// The optimiser group.
    pub optim: OptimParams,
    /// The augmentation group with `mixup`.
    pub augment: AugmentConfig,
    /// The batching group.
    pub batching: Batching,
}

/// The `resolution` of the teacher stage (`train-teacher` or `distill`, whose declarations
/// both name it), for `teacher_resolution = 0`; `None` when the teacher has none.
pub fn teacher_resolution_of(teacher: &crate::kind::InputArtifact) -> Option<Resolution> {
    teacher
        .params
        .get("resolution")
        .and_then(Resolution::from_value)
}

impl DistillParams {
    /// Reads every parameter of the kind.
    pub fn from_params(params: &Params) -> Result<Self, StageError> {
        let teacher_resolution = match params.get("teacher_resolution").and_then(Value::as_i64) {
            Some(0) => None,
            _ => Some(params.resolution("teacher_resolution")?),
        };
        Ok(DistillParams {
            partition: params.str("partition")?.to_string(),
            resolution: params.resolution("resolution")?,
            teacher_resolution,
            init: params.str("init")?.to_string(),
            pretrained: opt_path(params, "pretrained"),
            arch: params.str("arch")?.to_string(),
            width: params.int("width")?,
            stem: params.str("stem")?.to_string(),
            augmentations: positive(params, "augmentations")?,
            coupled: params.bool("coupled")?,
            losses: params.strs("losses")?,
            lambda_t: params.float("lambda_t")?,
            lambda_s: params.float("lambda_s")?,
            freeze_bn: params.bool("freeze_bn")?,
            seed: params.int("seed")?,
            chunks: positive(params, "chunks")?,
            accumulate: positive(params, "accumulate")?,
            gem: GemParams::read(params)?,
            precision: params.str("precision")?.to_string(),
            optim: OptimParams::read(params)?,
            augment: augment::with_mixup(augment::augment_config(params)?, params.float("mixup")?)?,
            batching: Batching::read(params)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::typed::assert_reads_match_declaration;

    #[test]
    fn the_struct_reads_what_the_kind_declares() {
        assert_reads_match_declaration(&Distill, json!({}), DistillParams::from_params);
    }

    #[test]
    fn paper_defaults_are_declared() {
        let p = DistillParams::from_params(&crate::stages::testing::params_with_defaults(
            &Distill,
            json!({}),
        ))
        .unwrap();
        assert_eq!((p.augmentations, p.lambda_t, p.chunks), (8, 0.7, 1));
        assert_eq!(p.optim.lr, 1.1e-4);
        assert_eq!((p.augment.jitter, p.augment.mixup_alpha), (0.5, 0.2));
        assert_eq!(p.batching.images_per_epoch, Some(8000));
        assert!(p.coupled && p.teacher_resolution.is_none());
    }
}
