//! `embed`: the embeddings of one partition of a split by one checkpoint at one resolution.
//!
//! Its own cached stage, so a database embedded once serves every evaluation that uses it.
//! Evaluation preprocessing by `view`: `center-crop` (shorter side to `s * 8 / 7`, centre
//! `s x s` crop, for networks trained on random resized crops) or `whole` (the whole image
//! resized to `s x s`, the view of a network trained without crops); the network in eval
//! mode. Output `embeddings.safetensors`: `embeddings` f32 `[N, D]` (L2-normalised),
//! `labels` i64 `[N]`, `cameras` i64 `[N]` (-1 where unknown). Metrics: `gflops` (one forward
//! pass at the resolution), `resolution`, `count`.

use std::path::Path;

use tch::{Kind, Tensor};

use super::training::{open_partition, positive};
use crate::kind::{InputDecl, ParamDecl, ParamType, Params, Resource, Stage, StageContext, StageError};
use crate::data::{EvalLoader, EvalView};
use crate::nn::checkpoint::{Model, META_FILE, WEIGHTS_FILE};
use crate::nn::gflops;

/// File name of the embeddings output.
pub const EMBEDDINGS_OUTPUT: &str = "embeddings.safetensors";

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
        ParamType::Int,
        "224",
        "resolution s of the network's input",
    ),
    ParamDecl::optional(
        "view",
        ParamType::Choice(EvalView::NAMES),
        "\"center-crop\"",
        "center-crop: shorter side to s*8/7, centre s x s crop; whole: the whole image resized to s x s (models trained without crops)",
    ),
    ParamDecl::optional(
        "batch_size",
        ParamType::Int,
        "64",
        "images per forward pass",
    ),
];

const INPUTS: &[InputDecl] = &[
    InputDecl {
        name: "split",
        required: true,
        doc: "a split stage",
    },
    InputDecl {
        name: "model",
        required: true,
        doc: "a checkpoint (train-teacher or distill stage)",
    },
];

impl Stage for Embed {
    fn kind(&self) -> &'static str {
        "embed"
    }
    fn impl_version(&self) -> u32 {
        1
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
    fn resource(&self, _params: &Params) -> Resource {
        Resource::Device
    }

    fn run(&self, ctx: &mut StageContext<'_>) -> Result<(), StageError> {
        let p = ctx.params().clone();
        let resolution = positive(&p, "resolution")?;
        let batch_size = positive(&p, "batch_size")?;
        let device = ctx.device();
        let input = ctx.input("model")?.clone();
        let model = Model::load(
            input.output(WEIGHTS_FILE)?,
            input.output(META_FILE)?,
            device,
        )?;
        let (dataset, items) = open_partition(ctx, "split", p.str("partition")?)?;
        let view = EvalView::parse(p.str("view")?).ok_or_else(|| {
            StageError::bad_param("view", "expected \"center-crop\" or \"whole\"")
        })?;
        let loader =
            EvalLoader::new(dataset, &items, resolution as u32, batch_size).with_view(view);
        ctx.progress_start(loader.num_batches() as u64, "batches");
        let mut parts = Vec::new();
        let mut labels = Vec::with_capacity(items.len());
        for batch in loader.iter() {
            ctx.check_cancelled()?;
            let (images, batch_labels) = batch?;
            let emb = tch::no_grad(|| model.net.forward_t(&images.to_device(device), false));
            parts.push(emb.to_device(tch::Device::Cpu).to_kind(Kind::Float));
            labels.extend(batch_labels);
            ctx.progress_tick();
        }
        let dim = model.meta.net.embed_dim;
        let embeddings = if parts.is_empty() {
            Tensor::zeros([0, dim], tch::kind::FLOAT_CPU)
        } else {
            Tensor::cat(&parts, 0)
        };
        let cameras: Vec<i64> = items.iter().map(|i| i.camera.unwrap_or(-1)).collect();
        write_embeddings(
            &ctx.out_path(EMBEDDINGS_OUTPUT),
            &embeddings,
            &labels,
            &cameras,
        )?;
        ctx.log(format!(
            "embedded {} images at {resolution} px ({dim}-d)",
            labels.len()
        ));
        ctx.metric("gflops", gflops(&model.meta.net, resolution as i64));
        ctx.metric("resolution", resolution as f64);
        ctx.metric("count", labels.len() as f64);
        Ok(())
    }
}

/// Writes the embeddings output (`embeddings`, `labels`, `cameras`).
pub fn write_embeddings(
    path: &Path,
    embeddings: &Tensor,
    labels: &[i64],
    cameras: &[i64],
) -> Result<(), StageError> {
    let n = embeddings.size()[0];
    if labels.len() as i64 != n || cameras.len() as i64 != n {
        return Err(StageError::Other(format!(
            "{} embeddings but {} labels and {} cameras",
            n,
            labels.len(),
            cameras.len()
        )));
    }
    let tensors = [
        ("embeddings", embeddings.to_kind(Kind::Float).contiguous()),
        ("labels", Tensor::from_slice(labels)),
        ("cameras", Tensor::from_slice(cameras)),
    ];
    Tensor::write_safetensors(&tensors, path)?;
    Ok(())
}
