//! `embed`: the embeddings of one partition of a split by one checkpoint at one resolution.
//!
//! Its own cached stage, so a database embedded once serves every evaluation that uses it.
//! `resolution` is one side `s` (an `s x s` square) or `[height, width]` (re-ID's `[256, 128]`).
//! Evaluation preprocessing by `view`: `center-crop` (the image scaled, aspect ratio kept, to
//! cover `round(h * 8 / 7) x round(w * 8 / 7)`, then the centre `h x w` crop; for a square,
//! torchvision's shorter side to `s * 8 / 7` and centre crop; for networks trained on random
//! resized crops) or `whole` (the whole image resized to `h x w`, the view of a network
//! trained without crops); the network in eval mode. Output `embeddings.safetensors`:
//! `embeddings` f32 `[N, D]` (L2-normalised), `labels` i64 `[N]`, `cameras` i64 `[N]` (-1 where
//! unknown). Metrics: `gflops` (one forward pass at the resolution), `resolution` (the
//! height: the side of a square), `count`.

use super::outputs;
use super::training::{positive, PRECISION};
use crate::data::EvalView;
use crate::kind::{
    Artifact, InputDecl, OutputDecl, ParamDecl, ParamType, Params, Resolution, Resource, Stage,
    StageError,
};

/// File name of the embeddings output.
pub const EMBEDDINGS_OUTPUT: &str = super::outputs::EMBEDDINGS.file;

/// See the module docs.
pub struct Embed;

const PARAMS: &[ParamDecl] = &[
    ParamDecl::optional(
        "partition",
        ParamType::Str,
        "\"test\"",
        "partition of the split to embed",
    ),
    ParamDecl::optional(
        "resolution",
        ParamType::Resolution,
        "224",
        "the network's input: s (an s x s square) or [height, width] (e.g. [256, 128] for re-ID)",
    )
    .at_least(1.0),
    ParamDecl::optional(
        "view",
        ParamType::Choice(EvalView::NAMES),
        "\"center-crop\"",
        "center-crop: scaled to cover (h*8/7, w*8/7), centre h x w crop; whole: the whole image resized to h x w (models trained without crops)",
    ),
    ParamDecl::optional(
        "batch_size",
        ParamType::Int,
        "64",
        "images per forward pass",
    )
    .at_least(1.0),
    PRECISION,
];

const INPUTS: &[InputDecl] = &[
    InputDecl {
        name: "split",
        required: true,
        accepts: &[Artifact::Split],
        doc: "a split stage",
    },
    InputDecl {
        name: "model",
        required: true,
        accepts: &[Artifact::Model],
        doc: "a checkpoint (train-teacher or distill stage)",
    },
];

impl Stage for Embed {
    fn kind(&self) -> &'static str {
        "embed"
    }
    fn impl_version(&self) -> u32 {
        // 2: the output records each row's image (`items`): how `evaluate` tells same images.
        // 3: `precision` (the key gains a parameter; fp32 results are bit-identical).
        // 4: channels-last backbone (nn/resnet.rs): faster; the last bits of every result move.
        4
    }
    fn summary(&self) -> &'static str {
        "embed one partition with one checkpoint at one resolution"
    }
    fn params(&self) -> &'static [ParamDecl] {
        PARAMS
    }
    fn inputs(&self) -> &'static [InputDecl] {
        INPUTS
    }
    fn outputs(&self) -> &'static [OutputDecl] {
        &[outputs::EMBEDDINGS]
    }
    fn records(&self, _params: &Params) -> Option<Vec<String>> {
        crate::kind::declared(&["gflops", "resolution", "count"])
    }
    fn resource(&self, _params: &Params) -> Resource {
        Resource::Device
    }
}

/// The kind's parameters, read once ([`crate::kind::typed`]); the runner takes this, never a
/// name.
#[derive(Debug, Clone)]
pub struct EmbedParams {
    /// `partition`.
    pub partition: String,
    /// `resolution`.
    pub resolution: Resolution,
    /// `view`, in pipeline spelling (one of [`EvalView::NAMES`]).
    pub view: String,
    /// `batch_size`: at least 1.
    pub batch_size: usize,
    /// `precision`, in pipeline spelling (the worker checks it can run it).
    pub precision: String,
}

impl EmbedParams {
    /// Reads every parameter of the kind.
    pub fn from_params(params: &Params) -> Result<Self, StageError> {
        Ok(EmbedParams {
            partition: params.str("partition")?.to_string(),
            resolution: params.resolution("resolution")?,
            view: params.str("view")?.to_string(),
            batch_size: positive(params, "batch_size")?,
            precision: params.str("precision")?.to_string(),
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
        assert_reads_match_declaration(&Embed, json!({}), EmbedParams::from_params);
    }
}
