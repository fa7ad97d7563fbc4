//! `import`: embeddings made elsewhere, as a stand-in for an `embed` stage.
//!
//! Reads a `.safetensors` file with `embeddings` (`[N, D]`, any float type) and `labels`
//! (`[N]`, any integer type), optionally `cameras` and `items` (one integer id per image: two
//! files with equal `items` are the same images, so `evaluate` excludes each query from its
//! own database; without them it does so only when told), checks them, L2-normalises the rows (unless
//! told not to) and writes the same `embeddings.safetensors` output `embed` writes, so
//! `evaluate` cannot tell them apart. The file's content hash is part of the key, never its
//! path. `gflops` and `resolution`, when given, become metrics like `embed`'s (so a report can
//! plot the imported model's query cost; `resolution` is a side or `[height, width]`, and the
//! metric is its height, as `embed`'s).

use tch::{Kind, Tensor};

use super::embed::write_embeddings;
use super::training::resolve;
use crate::kind::{Run, StageContext, StageError};
use crate::nn::l2n;
use crate::TorchResult;
use asymflow::stages::embed::EMBEDDINGS_OUTPUT;
use asymflow::stages::import::ImportParams;

/// See the module docs.
pub(crate) struct Import;

impl Run for Import {
    fn run(&self, ctx: &mut StageContext<'_>) -> Result<(), StageError> {
        let p = ImportParams::from_params(ctx.params())?;
        let path = resolve(ctx, &p.file);
        let bad = |msg: String| StageError::bad_param("file", format!("{}: {msg}", path.display()));
        let tensors = Tensor::read_safetensors(&path)
            .map_err(|e| bad(format!("not a safetensors file: {e}")))?;
        let get = |name: &str| {
            tensors
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| t.shallow_clone())
        };
        let names = || {
            tensors
                .iter()
                .map(|(n, _)| n.clone())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let emb = get("embeddings")
            .ok_or_else(|| bad(format!("no `embeddings` tensor (it has: {})", names())))?;
        let labels = get("labels")
            .ok_or_else(|| bad(format!("no `labels` tensor (it has: {})", names())))?;
        if emb.dim() != 2 || !emb.is_floating_point() {
            return Err(bad(format!(
                "`embeddings` must be a float [N, D] matrix, got {:?} {:?}",
                emb.kind(),
                emb.size()
            )));
        }
        let n = emb.size()[0];
        let as_ids = |t: &Tensor, name: &str| -> Result<Vec<i64>, StageError> {
            if t.dim() != 1 || t.size()[0] != n || t.is_floating_point() {
                return Err(bad(format!(
                    "`{name}` must be an integer vector of {n} entries, got {:?} {:?}",
                    t.kind(),
                    t.size()
                )));
            }
            Vec::<i64>::try_from(&t.to_kind(Kind::Int64)).torch()
        };
        let labels = as_ids(&labels, "labels")?;
        let cameras = match get("cameras") {
            Some(c) => as_ids(&c, "cameras")?,
            None => vec![-1; n as usize],
        };
        let items = get("items").map(|t| as_ids(&t, "items")).transpose()?;
        let mut emb = emb.to_kind(Kind::Float);
        if emb.isfinite().logical_not().any().int64_value(&[]) != 0 {
            return Err(bad("`embeddings` holds NaN or infinite values".into()));
        }
        if p.normalize {
            emb = l2n(&emb);
        }
        write_embeddings(
            &ctx.out_path(EMBEDDINGS_OUTPUT),
            &emb,
            &labels,
            &cameras,
            items.as_deref(),
        )?;
        ctx.log(format!(
            "imported {n} embeddings of {} dimensions",
            emb.size()[1]
        ));
        ctx.metric("count", n as f64);
        let gflops = p.gflops;
        if gflops > 0.0 {
            ctx.metric("gflops", gflops);
        }
        if let Some(resolution) = p.resolution {
            ctx.log(format!("made at {resolution} px"));
            ctx.metric("resolution", f64::from(resolution.height));
        }
        Ok(())
    }
}
