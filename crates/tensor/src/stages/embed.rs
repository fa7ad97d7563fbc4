//! `embed`: the embeddings of one partition of a split by one checkpoint at one resolution.
//!
//! Its own cached stage, so a database embedded once serves every evaluation that uses it.
//! Evaluation preprocessing by `view`: `center-crop` (shorter side to `s * 8 / 7`, centre
//! `s x s` crop, for networks trained on random resized crops) or `whole` (the whole image
//! resized to `s x s`, the view of a network trained without crops); the network in eval
//! mode. Output `embeddings.safetensors`: `embeddings` f32 `[N, D]` (L2-normalised),
//! `labels` i64 `[N]`, `cameras` i64 `[N]` (-1 where unknown), `items` i64 `[N]` (the image
//! of each row, [`crate::metrics::item_id`]: how `evaluate` knows two sets are the same
//! images). Metrics: `gflops` (one forward
//! pass at the resolution), `resolution`, `count`.

use std::path::Path;

use tch::{Kind, Tensor};

use crate::data::device::tensor_to_device;
use crate::data::{EvalLoader, EvalView};
use crate::kind::{Run, StageContext, StageError};
use crate::metrics::item_id;
use crate::nn::checkpoint::{Model, META_FILE, WEIGHTS_FILE};
use crate::nn::gflops;
use crate::nn::precision::{precision_param, Autocast};
use crate::TorchResult;
use asymflow::stages::embed::*;

/// See the module docs.
pub(crate) struct Embed;

impl Run for Embed {
    fn run(&self, ctx: &mut StageContext<'_>) -> Result<(), StageError> {
        let p = EmbedParams::from_params(ctx.params())?;
        let resolution = p.resolution;
        let batch_size = p.batch_size;
        let device = crate::worker::torch_device(ctx.device());
        let precision = precision_param(&p.precision)?;
        super::training::note_precision(ctx, precision);
        if device.is_cuda() {
            tch::Cuda::cudnn_set_benchmark(true);
        }
        let input = ctx.input("model")?.clone();
        let model = Model::load(
            input.output(WEIGHTS_FILE)?,
            input.output(META_FILE)?,
            device,
        )?;
        let manifest = asymflow::data::SplitManifest::from_input(ctx.input("split")?)?;
        let items = manifest.partition(&p.partition)?.to_vec();
        let dataset = manifest.open(ctx.project_dir())?;
        let scope = item_scope(&manifest);
        let ids: Vec<i64> = items.iter().map(|i| item_id(&scope, &i.id)).collect();
        let view = EvalView::parse(&p.view).ok_or_else(|| {
            StageError::bad_param("view", "expected \"center-crop\" or \"whole\"")
        })?;
        let loader = EvalLoader::new(dataset, &items, resolution, batch_size).with_view(view);
        ctx.progress_start(loader.num_batches() as u64, "batches");
        let mut parts = Vec::new();
        let mut labels = Vec::with_capacity(items.len());
        for batch in loader.iter() {
            ctx.check_cancelled()?;
            let (images, batch_labels) = batch?;
            let images = tensor_to_device(&images, device);
            let emb = tch::no_grad(|| precision.run(|| model.net.forward_t(&images, false)));
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
            Some(&ids),
        )?;
        ctx.log(format!(
            "embedded {} images at {resolution} px ({dim}-d)",
            labels.len()
        ));
        ctx.metric("gflops", gflops(&model.meta.net, resolution));
        ctx.metric("resolution", f64::from(resolution.height));
        ctx.metric("count", labels.len() as f64);
        Ok(())
    }
}

/// The data set's identity that item ids are scoped to: its content fingerprint for real
/// data (where it lives does not matter), its generator's parameters for synthetic data.
pub(crate) fn item_scope(manifest: &asymflow::data::SplitManifest) -> String {
    manifest.content.clone().unwrap_or_else(|| {
        serde_json::to_string(&manifest.dataset).unwrap_or_else(|_| "unknown".into())
    })
}

/// Writes the embeddings output (`embeddings`, `labels`, `cameras`, and `items` when known).
pub fn write_embeddings(
    path: &Path,
    embeddings: &Tensor,
    labels: &[i64],
    cameras: &[i64],
    items: Option<&[i64]>,
) -> Result<(), StageError> {
    let n = embeddings.size()[0];
    let items_ok = items.is_none_or(|i| i.len() as i64 == n);
    if labels.len() as i64 != n || cameras.len() as i64 != n || !items_ok {
        return Err(StageError::Other(format!(
            "{} embeddings but {} labels, {} cameras and {} item ids",
            n,
            labels.len(),
            cameras.len(),
            items.map_or(n as usize, |i| i.len())
        )));
    }
    let mut tensors = vec![
        ("embeddings", embeddings.to_kind(Kind::Float).contiguous()),
        ("labels", Tensor::from_slice(labels)),
        ("cameras", Tensor::from_slice(cameras)),
    ];
    if let Some(items) = items {
        tensors.push(("items", Tensor::from_slice(items)));
    }
    Tensor::write_safetensors(&tensors, path).torch()?;
    Ok(())
}
