//! `train-teacher`: the database network, trained at the large resolution with labels.
//!
//! Losses: `triplet` (the paper's: distance-weighted negatives, margin on squared distances)
//! and the classifier losses `norm-softmax` / `cosface` (a cosine head with a scale; the paper
//! notes the teacher may equally be trained with losses that do not compare pairs, and at the
//! quickstart's scale they train more reliably). Batches hold `per_class` images of each of
//! `batch_size / per_class` classes (0: plain shuffling). AdamW with the one-cycle schedule by
//! default. Outputs `model.safetensors` + `model.json` (with the head, if any) and `loss.json`.
//!
//! With `mining = "pool"` (the triplet loss only), every epoch starts by mining each anchor's
//! negatives from a pool of at most `pool_size` training images embedded in evaluation mode
//! ([`crate::nn::mining_pool`], which says how this follows the reference); the mined images
//! then come with their anchors' batches ([`crate::data::negatives`]).

use std::sync::Arc;
use std::time::Instant;

use tch::{Device, Tensor};

use super::training::{
    accumulating_optim, net_config, open_partition, resolve, Batching, Epoch, LoopOptim, LossCurve,
    Tally,
};
use crate::data::negatives::{NegativeBatch, NegativeLoader};
use crate::data::{
    dense_labels, device_feed, DataError, Dataset, DeviceFeed, EvalLoader, Resolution, Sampling,
    SplitItem, TrainConfig, TrainLoader,
};
use crate::kind::{Run, StageContext, StageError};
use crate::nn::checkpoint::{load_pretrained, Model, ModelMeta};
use crate::nn::mining_pool::{draw_pool, mine_epoch, pool_candidates, EpochNegatives, PoolMining};
use crate::nn::precision::precision_param;
use crate::nn::train::{TeacherLoss, TeacherStep};
use crate::nn::{gflops, ClassifierConfig, HeadKind, NetConfig, Precision};
use crate::TorchResult;
use asymflow::stages::train_teacher::TrainTeacherParams;

/// See the module docs.
pub(crate) struct TrainTeacher;

impl Run for TrainTeacher {
    fn run(&self, ctx: &mut StageContext<'_>) -> Result<(), StageError> {
        let p = TrainTeacherParams::from_params(ctx.params())?;
        let (mut teacher, curve) = Teacher::set_up(ctx, &p)?;
        let mut tally = Tally::start();
        tally.curve = curve;
        let first = tally.curve.epochs.len();
        ctx.progress_start((teacher.epochs - first) as u64, "epochs");
        for epoch in first..teacher.epochs {
            let record = teacher.epoch(ctx, epoch, &mut tally)?;
            teacher.step.flush();
            let end = tally.curve.end_epoch(record, teacher.step.lr());
            ctx.log(format!(
                "epoch {}: loss {:.4} in {:.1} s",
                epoch + 1,
                end.loss,
                end.seconds
            ));
            ctx.progress_tick();
        }
        teacher.finish(ctx, &tally)
    }
}

/// A teacher run, set up: the data and its loaders, the network in its training step, and
/// what the epochs read from the parameters.
struct Teacher {
    net: NetConfig,
    /// The partition's classes, sorted (the classifier's rows).
    classes: Vec<i64>,
    loss: TeacherLoss,
    pool_mining: Option<PoolMining>,
    dataset: Arc<dyn Dataset>,
    items: Vec<SplitItem>,
    /// Every item's label.
    labels: Vec<i64>,
    /// The items a mining pool is drawn from ([`pool_candidates`]).
    candidates: Vec<usize>,
    loader: TrainLoader,
    negative_loader: NegativeLoader,
    step: TeacherStep,
    device: Device,
    seed: i64,
    resolution: Resolution,
    batch_size: usize,
    epochs: usize,
}

impl Teacher {
    /// Reads the partition, checks the loss and its sampling, builds the network (seeded, then
    /// the pretrained weights, or the `resume` input's), the loaders and the optimiser, in this
    /// order, and logs the plan. Returns the loss curve so far (empty unless resumed).
    fn set_up(
        ctx: &mut StageContext<'_>,
        p: &TrainTeacherParams,
    ) -> Result<(Teacher, LossCurve), StageError> {
        let net = net_config(&p.pool, &p.network)?;
        let seed = p.seed;
        let Batching {
            epochs,
            batch_size,
            images_per_epoch,
        } = p.batching;
        let resolution = p.resolution;
        let (dataset, items) = open_partition(ctx, "split", &p.partition)?;
        let (_, classes) = dense_labels(&items);

        let loss_name = p.loss.clone();
        let (head, loss) = teacher_loss(p, &loss_name, &net, classes.len())?;
        let pool_mining = pool_mining(p, &loss_name)?;
        let sampling = sampling(p, batch_size)?;

        let (model, precision, device) = seeded_model(ctx, p, &net, head)?;
        let start = super::resume::start(ctx, model, epochs)?;
        let augment = p.augment;
        let loader = TrainLoader::new(
            dataset.clone(),
            &items,
            TrainConfig {
                resolution,
                batch_size,
                sampling,
                images_per_epoch,
                augment,
                seed: seed as u64,
            },
        )?;
        let negative_loader =
            NegativeLoader::new(dataset.clone(), &items, resolution, augment, seed as u64);
        let labels: Vec<i64> = items.iter().map(|i| i.label).collect();
        let candidates = match sampling {
            Sampling::ClassBalancedDropSmall { per_class } => pool_candidates(&labels, per_class),
            _ => pool_candidates(&labels, 0),
        };
        let batches = loader.batches_per_epoch();
        let step = training_step(ctx, p, &net, &loader, start.model, loss, start.epoch)?
            .with_precision(precision);
        ctx.log(format!(
            "train-teacher: {} images of {} classes, {batches} batches/epoch, {epochs} epochs, loss {loss_name}",
            items.len(),
            classes.len()
        ));
        if let Some(mining) = &pool_mining {
            ctx.log(format!(
                "mining: {} negatives per anchor from a pool of {} of {} images each epoch",
                mining.negatives,
                mining.pool_size.min(candidates.len()),
                candidates.len()
            ));
        }
        let teacher = Teacher {
            net,
            classes,
            loss,
            pool_mining,
            dataset,
            items,
            labels,
            candidates,
            loader,
            negative_loader,
            step,
            device,
            seed,
            resolution,
            batch_size,
            epochs,
        };
        Ok((teacher, start.curve))
    }

    /// One epoch: the negatives mined (with `mining = "pool"`), then every batch's step.
    fn epoch(
        &mut self,
        ctx: &mut StageContext<'_>,
        epoch: usize,
        tally: &mut Tally,
    ) -> Result<Epoch, StageError> {
        let mut record = Epoch::begin(epoch);
        let mut negatives = self.mined_negatives(ctx, epoch)?;
        let mut batches = device_feed(self.loader.epoch(epoch as u64), self.device);
        while let Some(batch) = tally.times.data(|| batches.next()) {
            ctx.check_cancelled()?;
            let batch = batch?;
            let labels = match self.loss {
                TeacherLoss::Classifier => {
                    dense(&batch.labels, &self.classes)?.to_device(self.device)
                }
                TeacherLoss::Triplet { .. } => batch.labels.to_device(self.device),
            };
            tally.images += batch.indices.len();
            let value = match negatives.as_mut() {
                Some(feed) => {
                    let negs = tally.times.data(|| feed.next()).ok_or_else(|| {
                        StageError::Other("mining: fewer negative batches than batches".into())
                    })??;
                    self.step.batch_pool(
                        &batch.images,
                        &labels,
                        &negs.images,
                        &negs.index,
                        &negs.valid,
                    )?
                }
                None => self.step.batch(&batch.images, &labels),
            };
            record.add(value, &[])?;
        }
        Ok(record)
    }

    /// The negatives of `epoch`'s batches, on the device: mined from the epoch's pool by the
    /// network as it stands ([`mine_epoch`]); `None` with `mining = "batch"`.
    fn mined_negatives(
        &self,
        ctx: &mut StageContext<'_>,
        epoch: usize,
    ) -> Result<
        Option<DeviceFeed<impl Iterator<Item = Result<NegativeBatch, DataError>>>>,
        StageError,
    > {
        let Some(mining) = &self.pool_mining else {
            return Ok(None);
        };
        let mined = Instant::now();
        let pool = draw_pool(
            &self.candidates,
            mining.pool_size,
            self.seed as u64,
            epoch as u64,
        );
        let plan = self.loader.plan(epoch as u64);
        let embed = |needed: &[usize]| {
            embed_items(
                ctx,
                &self.step,
                &self.dataset,
                &self.items,
                needed,
                self.resolution,
                self.batch_size,
            )
        };
        let chosen: EpochNegatives =
            mine_epoch(&plan, &self.labels, &pool, mining, epoch as u64, embed)?;
        ctx.log(format!(
            "epoch {}: mined negatives from {} pool images in {:.2} s",
            epoch + 1,
            pool.len(),
            mined.elapsed().as_secs_f64()
        ));
        Ok(Some(device_feed(
            self.negative_loader
                .epoch(epoch as u64, chosen, mining.negatives),
            self.device,
        )))
    }

    /// Writes `loss.json` and the model, and reports the run's time and metrics.
    fn finish(&self, ctx: &mut StageContext<'_>, tally: &Tally) -> Result<(), StageError> {
        tally.curve.write(ctx)?;
        self.step.model.save(ctx.out_dir())?;
        ctx.log(tally.times.line(&self.step.times(), tally.images));
        let last = tally
            .curve
            .epochs
            .last()
            .map(|e| e.loss)
            .unwrap_or(f64::NAN);
        ctx.metric("final_loss", last);
        ctx.metric("gflops", gflops(&self.net, self.resolution));
        ctx.metric("resolution", f64::from(self.resolution.height));
        Ok(())
    }
}

/// The network on this stage's device, in the run's precision (noted in the log when slow
/// here): its weights drawn from `seed`, then the `pretrained` ones loaded over them.
fn seeded_model(
    ctx: &mut StageContext<'_>,
    p: &TrainTeacherParams,
    net: &NetConfig,
    head: Option<ClassifierConfig>,
) -> Result<(Model, Precision, Device), StageError> {
    let device = crate::worker::torch_device(ctx.device());
    let precision = precision_param(&p.precision)?;
    super::training::note_precision(ctx, precision);
    if device.is_cuda() {
        tch::Cuda::cudnn_set_benchmark(true);
    }
    tch::manual_seed(p.seed);
    let model = Model::new(ModelMeta::new(net.clone(), head), device);
    if let Some(path) = &p.pretrained {
        let loaded = load_pretrained(&model.vs, &resolve(ctx, path))?;
        ctx.log(format!("loaded {} tensors from {path}", loaded.len()));
    }
    Ok((model, precision, device))
}

/// The training step of `model`: `accumulate` clamped to the loader's batches, and the
/// optimiser (with GeM's group) scheduled over the epochs' steps, at the start of epoch
/// `start_epoch` (0 unless resumed).
fn training_step(
    ctx: &mut StageContext<'_>,
    p: &TrainTeacherParams,
    net: &NetConfig,
    loader: &TrainLoader,
    model: Model,
    loss: TeacherLoss,
    start_epoch: usize,
) -> Result<TeacherStep, StageError> {
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
    let (optim, accumulate) =
        accumulating_optim(ctx, settings, &model.vs, net, batches, start_epoch)?;
    Ok(TeacherStep::new(
        model,
        optim,
        loss,
        p.freeze_bn,
        accumulate,
    )?)
}

/// The classifier head (none for the triplet loss) and the loss `loss_name` trains with.
fn teacher_loss(
    p: &TrainTeacherParams,
    loss_name: &str,
    net: &NetConfig,
    classes: usize,
) -> Result<(Option<ClassifierConfig>, TeacherLoss), StageError> {
    let per_class = p.per_class;
    let head = match loss_name {
        "triplet" => None,
        other => Some(ClassifierConfig {
            kind: HeadKind::parse(other).ok_or_else(|| {
                StageError::bad_param(
                    "loss",
                    format!("unknown loss `{other}`; use triplet, norm-softmax or cosface"),
                )
            })?,
            classes: classes as i64,
            dim: net.embed_dim,
            scale: p.scale,
            margin: p.cos_margin,
        }),
    };
    let loss = match head {
        None => {
            if per_class < 2 {
                return Err(StageError::bad_param(
                    "per_class",
                    "the triplet loss needs at least 2 images per class in a batch",
                ));
            }
            TeacherLoss::Triplet {
                margin: p.margin,
                negatives: p.negatives.max(1),
            }
        }
        Some(_) => TeacherLoss::Classifier,
    };
    Ok((head, loss))
}

/// How batches are drawn: `per_class` images of each class (whole classes that are too small
/// repeated or dropped, as `small_classes` says), or plain shuffling for `per_class = 0`.
fn sampling(p: &TrainTeacherParams, batch_size: usize) -> Result<Sampling, StageError> {
    let per_class = p.per_class;
    Ok(if per_class > 0 {
        if batch_size % per_class as usize != 0 || batch_size < 2 * per_class as usize {
            return Err(StageError::bad_param(
                "batch_size",
                format!(
                    "must be a multiple of per_class ({per_class}) holding at least two classes"
                ),
            ));
        }
        let per_class = per_class as usize;
        match p.small_classes.as_str() {
            "drop" => Sampling::ClassBalancedDropSmall { per_class },
            "repeat" => Sampling::ClassBalanced { per_class },
            other => {
                return Err(StageError::bad_param(
                    "small_classes",
                    format!("expected \"repeat\" or \"drop\", got \"{other}\""),
                ))
            }
        }
    } else {
        Sampling::Shuffle
    })
}

/// `mining` and `pool_size`: `Some` when negatives are mined from a pool, which only the
/// triplet loss uses.
fn pool_mining(p: &TrainTeacherParams, loss: &str) -> Result<Option<PoolMining>, StageError> {
    match p.mining.as_str() {
        "batch" => Ok(None),
        "pool" if loss != "triplet" => Err(StageError::bad_param(
            "mining",
            format!(
                "mining = \"pool\" mines negatives for the triplet loss, but loss = \"{loss}\"; \
                 set loss = \"triplet\" or mining = \"batch\""
            ),
        )),
        "pool" => {
            let pool_size = p.pool_size;
            if pool_size < 1 {
                return Err(StageError::bad_param(
                    "pool_size",
                    format!("must be at least 1, got {pool_size}"),
                ));
            }
            Ok(Some(PoolMining {
                pool_size: pool_size as usize,
                negatives: p.negatives.max(1) as usize,
                seed: p.seed as u64,
            }))
        }
        other => Err(StageError::bad_param(
            "mining",
            format!("expected \"batch\" or \"pool\", got \"{other}\""),
        )),
    }
}

/// The embeddings `[n, D]` of `items[needed]` by the model being trained, in evaluation mode
/// without gradients, preprocessed for evaluation at the training resolution (no random
/// augmentation), in the order of `needed`.
fn embed_items(
    ctx: &StageContext<'_>,
    step: &TeacherStep,
    dataset: &Arc<dyn Dataset>,
    items: &[SplitItem],
    needed: &[usize],
    resolution: Resolution,
    batch_size: usize,
) -> Result<Tensor, StageError> {
    let subset: Vec<SplitItem> = needed.iter().map(|&i| items[i].clone()).collect();
    let device = step.model.vs.device();
    let mut parts = Vec::new();
    for batch in EvalLoader::new(dataset.clone(), &subset, resolution, batch_size).iter() {
        ctx.check_cancelled()?;
        let (images, _) = batch?;
        parts.push(step.embed_eval(&images.to_device(device)));
    }
    if parts.is_empty() {
        return Err(StageError::Other(
            "mining: no pool or anchor image to embed".into(),
        ));
    }
    Ok(Tensor::cat(&parts, 0))
}

/// Labels mapped to classifier indices through the sorted class list.
fn dense(labels: &Tensor, classes: &[i64]) -> Result<Tensor, StageError> {
    let raw = Vec::<i64>::try_from(labels).torch()?;
    let idx = raw
        .iter()
        .map(|l| {
            classes.binary_search(l).map(|i| i as i64).map_err(|_| {
                StageError::Other(format!("label {l} is not among the partition's classes"))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Tensor::from_slice(&idx))
}
