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
//!
//! Both resolutions are a side or `[height, width]`: the teacher's views are rendered at R
//! (by default the teacher stage's own `resolution`), the student's at r. Coupled views crop
//! one box for both, so R and r must share their aspect ratio; `resolution` (the metric) is
//! r's height, as `embed` reports it.

use tch::Device;

use super::training::{
    accumulating_optim, open_partition, resolve, Batching, Epoch, LoopOptim, Tally,
};
use crate::data::{device_feed, DistillConfig, DistillLoader, Resolution};
use crate::kind::{Run, StageContext, StageError};
use crate::nn::checkpoint::{load_pretrained, Model, ModelMeta, META_FILE, WEIGHTS_FILE};
use crate::nn::precision::precision_param;
use crate::nn::train::DistillStep;
use crate::nn::{gflops, Arch, DistillLoss, NetConfig, Stem};
use asymflow::stages::distill::*;

/// See the module docs.
pub(crate) struct Distill;

impl Run for Distill {
    fn run(&self, ctx: &mut StageContext<'_>) -> Result<(), StageError> {
        let p = DistillParams::from_params(ctx.params())?;
        let device = crate::worker::torch_device(ctx.device());
        let loss = distill_loss(&p)?;
        let precision = precision_param(&p.precision)?;
        super::training::note_precision(ctx, precision);
        let chunks = checked_chunks(&p)?;
        if device.is_cuda() {
            tch::Cuda::cudnn_set_benchmark(true);
        }

        let (teacher, teacher_resolution) = seeded_teacher(ctx, &p, device)?;
        let student = self.student(ctx, &p, &teacher)?;
        if student.meta.net.embed_dim != teacher.meta.net.embed_dim {
            return Err(StageError::Other(format!(
                "the student's embedding size {} differs from the teacher's {}; \
                 asymmetric retrieval needs one space",
                student.meta.net.embed_dim, teacher.meta.net.embed_dim
            )));
        }

        let (loader, images) = distill_loader(ctx, &p, teacher_resolution)?;
        let batches = loader.batches_per_epoch();
        let net = student.meta.net.clone();
        let start = super::resume::start(ctx, student, p.batching.epochs)?;
        let mut step = distill_step(ctx, &p, &loader, start.model, teacher, loss, start.epoch)?
            .with_chunks(chunks as i64)
            .with_precision(precision);
        let Batching {
            epochs, batch_size, ..
        } = p.batching;
        let (augmentations, resolution) = (p.augmentations, p.resolution);
        ctx.log(format!(
            "distill: {images} images, {batches} batches/epoch of {batch_size} x {augmentations} views, \
             teacher {teacher_resolution} px -> student {resolution} px, {epochs} epochs"
        ));

        let mut tally = Tally::start();
        tally.curve = start.curve;
        ctx.progress_start((epochs - start.epoch) as u64, "epochs");
        for epoch in start.epoch..epochs {
            let record = distill_epoch(ctx, &mut step, &loader, epoch, device, &mut tally)?;
            step.flush();
            let end = tally.curve.end_epoch(record, step.lr());
            ctx.log(format!(
                "epoch {}: loss {:.5} in {:.1} s",
                epoch + 1,
                end.loss,
                end.seconds
            ));
            ctx.progress_tick();
        }
        finish(ctx, &step, &tally, &net, resolution)
    }
}

/// `chunks`, which must not exceed the images of a batch (each chunk holds whole images).
fn checked_chunks(p: &DistillParams) -> Result<usize, StageError> {
    let (chunks, batch_size) = (p.chunks, p.batching.batch_size);
    if chunks > batch_size {
        return Err(StageError::bad_param(
            "chunks",
            format!(
                "{chunks} groups of whole images cannot be made from a batch of {batch_size} images; \
                 use at most batch_size"
            ),
        ));
    }
    Ok(chunks)
}

/// The frozen teacher from the `teacher` input, and the resolution its views are rendered at
/// (`teacher_resolution`, or the teacher stage's own `resolution`). libtorch's generator is
/// seeded with `seed` just before the teacher loads: the student's initial weights draw from
/// it next.
fn seeded_teacher(
    ctx: &StageContext<'_>,
    p: &DistillParams,
    device: Device,
) -> Result<(Model, Resolution), StageError> {
    let teacher_input = ctx.input("teacher")?.clone();
    let teacher_resolution = match p.teacher_resolution {
        None => teacher_resolution_of(&teacher_input).ok_or_else(|| {
            StageError::bad_param(
                "teacher_resolution",
                format!(
                    "stage `{}` has no `resolution` parameter; set it here",
                    teacher_input.stage
                ),
            )
        })?,
        Some(resolution) => resolution,
    };
    tch::manual_seed(p.seed);
    let teacher = Model::load(
        teacher_input.output(WEIGHTS_FILE)?,
        teacher_input.output(META_FILE)?,
        device,
    )?;
    Ok((teacher, teacher_resolution))
}

/// The loader of the training partition's paired views (teacher's at `teacher_resolution`,
/// student's at `resolution`), with the partition's size.
fn distill_loader(
    ctx: &StageContext<'_>,
    p: &DistillParams,
    teacher_resolution: Resolution,
) -> Result<(DistillLoader, usize), StageError> {
    let (dataset, items) = open_partition(ctx, "split", &p.partition)?;
    let loader = DistillLoader::new(
        dataset,
        &items,
        DistillConfig {
            teacher_resolution,
            student_resolution: p.resolution,
            batch_size: p.batching.batch_size,
            augmentations: p.augmentations,
            coupled: p.coupled,
            augment: p.augment,
            images_per_epoch: p.batching.images_per_epoch,
            seed: p.seed as u64,
        },
    )?;
    Ok((loader, items.len()))
}

/// The distillation step of `student` from `teacher`: `accumulate` clamped to the loader's
/// batches, and the student's optimiser (with GeM's group) scheduled over the epochs' steps,
/// at the start of epoch `start_epoch` (0 unless resumed).
fn distill_step(
    ctx: &mut StageContext<'_>,
    p: &DistillParams,
    loader: &DistillLoader,
    student: Model,
    teacher: Model,
    loss: DistillLoss,
    start_epoch: usize,
) -> Result<DistillStep, StageError> {
    let batches = loader.batches_per_epoch();
    if let Some(note) = loader.capped_epoch_note() {
        ctx.log(note);
    }
    let settings = LoopOptim {
        optim: &p.optim,
        gem: p.gem,
        epochs: p.batching.epochs,
        accumulate: p.accumulate,
    };
    let (optim, accumulate) = accumulating_optim(
        ctx,
        settings,
        &student.vs,
        &student.meta.net,
        batches,
        start_epoch,
    )?;
    Ok(DistillStep::new(
        student,
        teacher,
        optim,
        loss,
        p.augmentations as i64,
        p.freeze_bn,
        accumulate,
    ))
}

/// One epoch: every batch's step, its loss terms recorded.
fn distill_epoch(
    ctx: &StageContext<'_>,
    step: &mut DistillStep,
    loader: &DistillLoader,
    epoch: usize,
    device: Device,
    tally: &mut Tally,
) -> Result<Epoch, StageError> {
    let mut record = Epoch::begin(epoch);
    let mut batches = device_feed(loader.epoch(epoch as u64), device);
    while let Some(batch) = tally.times.data(|| batches.next()) {
        ctx.check_cancelled()?;
        let batch = batch?;
        tally.images += batch.indices.len();
        let terms = step.batch(&batch.teacher, &batch.student);
        let mut parts = Vec::with_capacity(3);
        parts.extend(terms.abs.map(|v| ("abs", v)));
        parts.extend(terms.rel_ts.map(|v| ("rel_ts", v)));
        parts.extend(terms.rel_ss.map(|v| ("rel_ss", v)));
        record.add(terms.total.double_value(&[]), &parts)?;
    }
    Ok(record)
}

/// Writes `loss.json` and the student, and reports the run's time and metrics.
fn finish(
    ctx: &mut StageContext<'_>,
    step: &DistillStep,
    tally: &Tally,
    net: &NetConfig,
    resolution: Resolution,
) -> Result<(), StageError> {
    tally.curve.write(ctx)?;
    step.student.save(ctx.out_dir())?;
    ctx.log(tally.times.line(&step.times(), tally.images));
    ctx.metric(
        "final_loss",
        tally
            .curve
            .epochs
            .last()
            .map(|e| e.loss)
            .unwrap_or(f64::NAN),
    );
    ctx.metric("gflops", gflops(net, resolution));
    ctx.metric("resolution", f64::from(resolution.height));
    Ok(())
}

impl Distill {
    /// The student network, initialised as `init` says.
    fn student(
        &self,
        ctx: &mut StageContext<'_>,
        p: &DistillParams,
        teacher: &Model,
    ) -> Result<Model, StageError> {
        let device = crate::worker::torch_device(ctx.device());
        let mut net: NetConfig = teacher.meta.net.clone();
        match p.arch.as_str() {
            "teacher" => {}
            name => {
                net.arch =
                    Arch::parse(name).ok_or_else(|| StageError::bad_param("arch", "unknown"))?
            }
        }
        match p.width {
            0 => {}
            w if w > 0 => net.width = w,
            w => {
                return Err(StageError::bad_param(
                    "width",
                    format!("must be positive (or 0), got {w}"),
                ))
            }
        }
        match p.stem.as_str() {
            "teacher" => {}
            name => {
                net.stem =
                    Stem::parse(name).ok_or_else(|| StageError::bad_param("stem", "unknown"))?
            }
        }
        let student = match p.init.as_str() {
            "teacher" => {
                if net != teacher.meta.net {
                    return Err(StageError::bad_param(
                        "init",
                        "a student of another architecture cannot start from the teacher's weights; \
                         use init = \"imagenet\" or \"random\"",
                    ));
                }
                let student = Model::new(ModelMeta::new(net, None), device);
                crate::nn::checkpoint::copy_vars(&teacher.vs, &student.vs)?;
                student
            }
            "imagenet" => {
                let path = p.pretrained.as_deref().ok_or_else(|| {
                    StageError::bad_param("pretrained", "init = \"imagenet\" needs a weight file")
                })?;
                let student = Model::new(ModelMeta::new(net, None), device);
                let loaded = load_pretrained(&student.vs, &resolve(ctx, path))?;
                ctx.log(format!(
                    "student: loaded {} tensors from {path}",
                    loaded.len()
                ));
                student
            }
            "checkpoint" => {
                let input = ctx.input("init").map_err(|_| {
                    StageError::bad_param(
                        "init",
                        "init = \"checkpoint\" needs the `init` input connected",
                    )
                })?;
                let source = Model::load(
                    input.output(WEIGHTS_FILE)?,
                    input.output(META_FILE)?,
                    device,
                )?;
                let student = Model::new(ModelMeta::new(source.meta.net.clone(), None), device);
                crate::nn::checkpoint::copy_vars(&source.vs, &student.vs)?;
                student
            }
            "random" => Model::new(ModelMeta::new(net, None), device),
            other => {
                return Err(StageError::bad_param(
                    "init",
                    format!("unknown `{other}`; use teacher, imagenet, checkpoint or random"),
                ))
            }
        };
        Ok(student)
    }
}

/// The enabled terms and weights from `losses`, `lambda_t`, `lambda_s`.
fn distill_loss(p: &DistillParams) -> Result<DistillLoss, StageError> {
    let terms = &p.losses;
    if terms.is_empty() {
        return Err(StageError::bad_param(
            "losses",
            "enable at least one of abs, rel_ts, rel_ss",
        ));
    }
    for t in terms {
        if !LOSS_TERMS.contains(&t.as_str()) {
            return Err(StageError::bad_param(
                "losses",
                format!("unknown term `{t}`; use abs, rel_ts, rel_ss"),
            ));
        }
    }
    let on = |name: &str| terms.iter().any(|t| t == name);
    Ok(DistillLoss {
        abs: on("abs"),
        lambda_t: if on("rel_ts") { Some(p.lambda_t) } else { None },
        lambda_s: if on("rel_ss") { Some(p.lambda_s) } else { None },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use asymflow::stages::testing::params_with_defaults;
    use serde_json::{json, Value};

    fn params(losses: Value) -> DistillParams {
        let p = params_with_defaults(
            &asymflow::stages::distill::Distill,
            json!({ "losses": losses }),
        );
        DistillParams::from_params(&p).unwrap()
    }

    #[test]
    fn any_subset_of_loss_terms_can_be_enabled() {
        let all = distill_loss(&params(json!(["abs", "rel_ts", "rel_ss"]))).unwrap();
        assert_eq!(
            all,
            DistillLoss {
                abs: true,
                lambda_t: Some(0.7),
                lambda_s: Some(0.7)
            }
        );
        let rel = distill_loss(&params(json!(["rel_ss"]))).unwrap();
        assert_eq!(
            rel,
            DistillLoss {
                abs: false,
                lambda_t: None,
                lambda_s: Some(0.7)
            }
        );
        let err = distill_loss(&params(json!([]))).unwrap_err().to_string();
        assert!(err.contains("at least one"), "{err}");
    }

    #[test]
    fn precision_defaults_to_fp32_and_unknown_spellings_are_refused() {
        use crate::nn::precision::precision_param;
        use crate::nn::Precision;
        let p = params(json!(["abs"]));
        assert_eq!(precision_param(&p.precision).unwrap(), Precision::Fp32);
        assert_eq!(precision_param("bf16").unwrap(), Precision::Bf16);
        let err = precision_param("fp16").unwrap_err().to_string();
        assert!(
            err.contains("precision") && err.contains("expected one of fp32, bf16"),
            "{err}"
        );
    }
}
