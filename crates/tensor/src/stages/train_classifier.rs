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

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tch::{Device, Kind, Tensor};

use super::resume::{load_same, note, refused, upstream};
use super::training::{network, optim_config};
use crate::data::{
    device_feed, AugmentConfig, Dataset, Resolution, Sampling, SplitItem, SplitManifest,
    TrainConfig, TrainLoader,
};
use crate::kind::{read_json, Params, Run, StageContext, StageError};
use crate::nn::precision::{precision_param, Autocast};
use crate::nn::timing::{RunTimes, StepTimes};
use crate::nn::{
    gflops, Classifier, ClassifierConfig, HeadKind, Model, ModelMeta, NetConfig, Optim,
    OptimConfig, Pool, Precision,
};
use crate::TorchResult;
use asymflow::stages::groups::optim;
use asymflow::stages::train_classifier::*;

/// The content of `classes.json`: row `i` of the classifier is label `labels[i]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassList {
    /// Data set labels, in classifier-row order.
    pub labels: Vec<i64>,
}

impl ClassList {
    /// Label -> classifier row.
    pub fn index(&self) -> HashMap<i64, i64> {
        self.labels
            .iter()
            .enumerate()
            .map(|(i, &l)| (l, i as i64))
            .collect()
    }
}

/// The `train-classifier` kind.
pub(crate) struct TrainClassifier;

/// The training settings read from the shared parameters.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    pub net: NetConfig,
    pub head: HeadKind,
    pub scale: f64,
    pub margin: f64,
    pub resolution: Resolution,
    pub epochs: usize,
    pub batch_size: usize,
    /// Cap on the images of an epoch (`None`: all).
    pub images_per_epoch: Option<usize>,
    pub optim: OptimConfig,
    /// The training augmentation (the augmentation group).
    pub augment: AugmentConfig,
    pub seed: u64,
    /// The forward pass's precision (checked against the device when training starts).
    pub precision: Precision,
    /// Seed of the initial weights: `seed` mixed with every other parameter, so two stages
    /// with one `seed` but different roles (old and new model) start from independent
    /// initialisations, as independently trained models do, while a rerun starts identically.
    pub init_seed: i64,
    /// The epochs already trained by the result this run resumes from (0: a fresh start);
    /// the loop runs epochs `start_epoch..epochs` ([`resume`]).
    pub start_epoch: usize,
    /// Those epochs' losses, the start of this run's `loss.json`.
    pub earlier: Vec<EpochLog>,
}

/// Parameters that change how the network computes, not which model it is: left out of
/// [`init_seed`], so a bf16 run starts from the fp32 run's weights (and adding them kept every
/// earlier initialisation).
const NUMERIC_ONLY: &[&str] = &["precision"];

/// Parameters the shared groups added to the classifier kinds, with the value that trains as
/// before they existed.
const ADDED_WITH_GROUPS: &[(&str, f64)] = &[
    ("div_factor", 25.0),
    ("jitter", 0.0),
    ("images_per_epoch", 0.0),
];

/// The parameters as the classifier kinds spelled them before the shared groups
/// (`augment`, `one_cycle`; no `div_factor`, `jitter`, `images_per_epoch` at their neutral
/// values), so a model's initial weights depend on its role, never on the vocabulary: the
/// rename kept every initialisation.
fn first_spelling(params: &Params) -> BTreeMap<String, Value> {
    let mut role = params.0.clone();
    role.retain(|name, _| !NUMERIC_ONLY.contains(&name.as_str()));
    if let Some(geometric) = role.remove("geometric") {
        role.insert("augment".into(), geometric);
    }
    if let Some(schedule) = role.remove("schedule") {
        role.insert(
            "one_cycle".into(),
            Value::Bool(schedule.as_str() == Some("one-cycle")),
        );
    }
    for (name, neutral) in ADDED_WITH_GROUPS {
        if role.get(*name).and_then(Value::as_f64) == Some(*neutral) {
            role.remove(*name);
        }
    }
    role.retain(|name, value| !added_later_at_default(name, value));
    role
}

/// Whether `name` is an optimiser parameter added after the first wave
/// ([`ParamDecl::added_later`]: `momentum`, `milestones`, ...) holding its default: left out
/// of the role as it is left out of the key, so adding it kept every initialisation.
///
/// [`ParamDecl::added_later`]: asymflow::kind::ParamDecl::added_later
fn added_later_at_default(name: &str, value: &Value) -> bool {
    let group = optim::params(optim::OptimDefaults {
        optimizer: "\"adamw\"",
        lr: "1.0",
        weight_decay: "0.0",
    });
    group
        .iter()
        .any(|d| d.name == name && !d.keyed_at_default && !d.keyed_value(value))
}

pub(crate) fn init_seed(params: &Params) -> i64 {
    let text = serde_json::to_string(&first_spelling(params)).unwrap_or_default();
    let hash = blake3::hash(text.as_bytes());
    let bytes: [u8; 8] = hash.as_bytes()[..8].try_into().unwrap_or([0; 8]);
    (u64::from_le_bytes(bytes) >> 1) as i64
}

impl Setup {
    /// The settings of the classifier kinds' parameters `p`, with the initial weights' seed
    /// ([`init_seed`] of the stage's parameters).
    pub fn new(p: &ClassifierParams, init_seed: i64) -> Result<Setup, StageError> {
        let head = &p.head;
        let batching = p.batching;
        Ok(Setup {
            net: network(&p.network, Pool::Avg)?,
            head: HeadKind::parse(head)
                .ok_or_else(|| StageError::bad_param("head", format!("unknown `{head}`")))?,
            scale: p.scale,
            margin: p.margin,
            resolution: p.resolution,
            epochs: batching.epochs,
            batch_size: batching.batch_size,
            images_per_epoch: batching.images_per_epoch,
            optim: optim_config(&p.optim),
            augment: p.augment,
            seed: p.seed as u64,
            precision: precision_param(&p.precision)?,
            init_seed,
            start_epoch: 0,
            earlier: Vec::new(),
        })
    }

    /// The classifier configuration for `classes` classes.
    pub fn classifier(&self, classes: usize) -> ClassifierConfig {
        ClassifierConfig {
            kind: self.head,
            classes: classes as i64,
            dim: self.net.embed_dim,
            scale: self.scale,
            margin: if self.head == HeadKind::Cosface {
                self.margin
            } else {
                0.0
            },
        }
    }

    /// A fresh model (seeded) with a head over `classes` classes.
    pub fn model(&self, classes: usize, device: Device) -> Model {
        tch::manual_seed(self.init_seed);
        Model::new(
            ModelMeta::new(self.net.clone(), Some(self.classifier(classes))),
            device,
        )
    }

    /// The training loader over `items`.
    pub fn loader(
        &self,
        dataset: Arc<dyn Dataset>,
        items: &[SplitItem],
    ) -> Result<TrainLoader, StageError> {
        Ok(TrainLoader::new(
            dataset,
            items,
            TrainConfig {
                resolution: self.resolution,
                batch_size: self.batch_size.min(items.len()),
                sampling: Sampling::Shuffle,
                images_per_epoch: self.images_per_epoch,
                augment: self.augment,
                seed: self.seed,
            },
        )?)
    }
}

/// A training partition: its items, the data set they come from, and its classes.
pub(crate) type TrainingData = (Vec<SplitItem>, Arc<dyn Dataset>, ClassList);

/// Partition `partition` of the `split` input, its data set and its classes (sorted labels).
pub(crate) fn training_items(
    ctx: &StageContext<'_>,
    partition: &str,
) -> Result<TrainingData, StageError> {
    let manifest = SplitManifest::from_input(ctx.input("split")?)?;
    let items = manifest.partition(partition)?.to_vec();
    if items.is_empty() {
        return Err(StageError::bad_param(
            "partition",
            format!("partition `{partition}` is empty"),
        ));
    }
    let mut labels: Vec<i64> = items.iter().map(|i| i.label).collect();
    labels.sort_unstable();
    labels.dedup();
    if labels.len() < 2 {
        return Err(StageError::bad_param(
            "partition",
            format!(
                "partition `{partition}` has {} class; a classifier needs at least 2",
                labels.len()
            ),
        ));
    }
    let dataset = manifest.open(ctx.project_dir())?;
    Ok((items, dataset, ClassList { labels }))
}

/// One epoch of `loss.json` (the report kind draws these as loss curves).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct EpochLog {
    pub epoch: usize,
    pub loss: f64,
    pub influence: f64,
    pub accuracy: f64,
}

/// What one training run measured.
#[derive(Debug, Clone, Default)]
pub(crate) struct TrainStats {
    /// Mean classification loss of the last epoch.
    pub loss: f64,
    /// Mean extra (influence) term of the last epoch, as added to the loss (lambda included).
    pub extra: f64,
    /// Training accuracy of the last epoch (argmax of the logits without margin).
    pub accuracy: f64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Every epoch.
    pub history: Vec<EpochLog>,
    /// Where the time went ([`RunTimes::line`]), for the log.
    pub breakdown: String,
}

/// An extra loss term computed from a batch: `(images, embeddings, raw labels) -> term`.
pub(crate) type ExtraLoss<'a> = dyn FnMut(&Tensor, &Tensor, &[i64]) -> Option<Tensor> + 'a;

/// Trains `model` (embedding network + its head) with cross-entropy on `items` plus `extra`,
/// `setup.epochs` epochs, optimising every trainable variable of `model.vs`.
pub(crate) fn train(
    ctx: &StageContext<'_>,
    setup: &Setup,
    model: &Model,
    loader: &TrainLoader,
    classes: &ClassList,
    extra: &mut ExtraLoss<'_>,
) -> Result<TrainStats, StageError> {
    let start_epoch = setup.start_epoch.min(setup.epochs);
    let steps = (setup.epochs - start_epoch) * loader.batches_per_epoch();
    let optim = Optim::new(
        &model.vs,
        &setup.optim,
        setup.epochs,
        loader.batches_per_epoch(),
    )
    .torch()?;
    let mut optim = optim.starting_at(start_epoch * loader.batches_per_epoch());
    let head = model
        .classifier
        .as_ref()
        .ok_or_else(|| StageError::Other("internal: a classifier model without a head".into()))?;
    let device = crate::worker::torch_device(ctx.device());
    if device.is_cuda() {
        tch::Cuda::cudnn_set_benchmark(true);
    }
    let start = Instant::now();
    let mut trainer = Trainer {
        ctx,
        model,
        head,
        index: classes.index(),
        device,
        precision: setup.precision,
        times: RunTimes::start(),
        step_times: StepTimes::default(),
        images: 0,
    };
    let mut stats = TrainStats {
        history: setup.earlier.clone(),
        ..TrainStats::default()
    };
    ctx.progress_start(steps as u64, "batches");
    for epoch in start_epoch..setup.epochs {
        let sums = trainer.epoch(&mut optim, loader, epoch, extra)?;
        sums.record(&mut stats, epoch, start)?;
    }
    stats.breakdown = trainer.times.line(&trainer.step_times, trainer.images);
    Ok(stats)
}

/// What stays fixed over a classifier training run's batches (the network, its head, the
/// label -> row map, where and in which precision it computes) and where its time goes.
struct Trainer<'a, 'c> {
    ctx: &'a StageContext<'c>,
    model: &'a Model,
    head: &'a Classifier,
    /// Label -> classifier row.
    index: HashMap<i64, i64>,
    device: Device,
    precision: Precision,
    times: RunTimes,
    step_times: StepTimes,
    /// Images trained on.
    images: usize,
}

/// One epoch's sums over its batches.
#[derive(Debug, Default)]
struct EpochSums {
    loss: f64,
    extra: f64,
    correct: i64,
    seen: usize,
    batches: usize,
}

impl Trainer<'_, '_> {
    /// One epoch of `loader`: a step of `optim` on every batch.
    fn epoch(
        &mut self,
        optim: &mut Optim,
        loader: &TrainLoader,
        epoch: usize,
        extra: &mut ExtraLoss<'_>,
    ) -> Result<EpochSums, StageError> {
        let mut sums = EpochSums::default();
        let mut feed = device_feed(loader.epoch(epoch as u64), self.device);
        while let Some(batch) = self.times.data(|| feed.next()) {
            self.ctx.check_cancelled()?;
            let batch = batch?;
            self.batch(optim, &batch.images, &batch.labels, extra, &mut sums)?;
            self.ctx.progress_tick();
        }
        Ok(sums)
    }

    /// One batch: the forward pass with the cross-entropy and `extra`, the optimiser's step,
    /// and the batch's sums.
    fn batch(
        &mut self,
        optim: &mut Optim,
        images: &Tensor,
        labels: &Tensor,
        extra: &mut ExtraLoss<'_>,
        sums: &mut EpochSums,
    ) -> Result<(), StageError> {
        let raw: Vec<i64> = Vec::<i64>::try_from(labels).torch()?;
        let dense = self.rows(&raw)?;
        let targets = Tensor::from_slice(&dense).to_device(self.device);
        self.images += raw.len();
        let (model, head, precision) = (self.model, self.head, self.precision);
        let (emb, loss) = self.step_times.forward(|| {
            let emb = precision.fp32(&precision.run(|| model.net.forward_t(images, true)));
            let ce = head.loss(&emb, &targets);
            let mut loss = ce.shallow_clone();
            if let Some(term) = extra(images, &emb, &raw) {
                sums.extra += term.double_value(&[]);
                loss += term;
            }
            sums.loss += ce.double_value(&[]);
            (emb, loss)
        });
        self.step_times.step(|| optim.zero_grad());
        self.step_times.backward(|| loss.backward());
        self.step_times.step(|| optim.step());
        let predicted = tch::no_grad(|| head.logits(&emb, None).argmax(-1, false));
        sums.correct += predicted
            .eq_tensor(&targets)
            .to_kind(Kind::Int64)
            .sum(Kind::Int64)
            .int64_value(&[]);
        sums.seen += raw.len();
        sums.batches += 1;
        Ok(())
    }

    /// The classifier rows of data set labels `raw`.
    fn rows(&self, raw: &[i64]) -> Result<Vec<i64>, StageError> {
        raw.iter()
            .map(|l| {
                self.index.get(l).copied().ok_or_else(|| {
                    StageError::Other(format!("internal: label {l} missing from the class list"))
                })
            })
            .collect()
    }
}

impl EpochSums {
    /// The epoch's means into `stats` (and its history), refused when the loss is not finite.
    fn record(
        &self,
        stats: &mut TrainStats,
        epoch: usize,
        start: Instant,
    ) -> Result<(), StageError> {
        let b = self.batches.max(1) as f64;
        stats.loss = self.loss / b;
        stats.extra = self.extra / b;
        stats.accuracy = self.correct as f64 / self.seen.max(1) as f64;
        stats.seconds = start.elapsed().as_secs_f64();
        stats.history.push(EpochLog {
            epoch: epoch + 1,
            loss: stats.loss,
            influence: stats.extra,
            accuracy: stats.accuracy,
        });
        if !stats.loss.is_finite() {
            return Err(StageError::Other(format!(
                "training diverged at epoch {epoch} (loss {}); lower `lr`",
                stats.loss
            )));
        }
        Ok(())
    }
}

/// The model a run continues from when its `resume` input is connected (ASHA's promotion of a
/// trial; [`super::resume`] says how it departs from training straight through): the upstream
/// result's weights and classifier, after checking that it is the same network over the same
/// classes and trained fewer epochs. `setup` then starts at the upstream's epoch count, with
/// its losses as the start of the history. `None` when `resume` is not connected: a fresh
/// start. `train-bct` resumes the same way.
pub(crate) fn resume(
    ctx: &mut StageContext<'_>,
    setup: &mut Setup,
    classes: &ClassList,
    device: Device,
) -> Result<Option<Model>, StageError> {
    let Some((input, done)) = upstream(ctx, setup.epochs)? else {
        return Ok(None);
    };
    tch::manual_seed(setup.init_seed);
    let expected = ModelMeta::new(
        setup.net.clone(),
        Some(setup.classifier(classes.labels.len())),
    );
    let model = load_same(&input, &expected, device)?;
    let theirs: ClassList = read_json(input.output(CLASSES_OUTPUT)?)?;
    if theirs != *classes {
        return Err(refused(format!(
            "stage `{}` was trained on other classes than this stage's partition",
            input.stage
        )));
    }
    let history: Vec<EpochLog> = read_json(input.output(LOSS_OUTPUT)?)?;
    if history.len() != done {
        return Err(refused(format!(
            "stage `{}` logged {} epochs in {LOSS_OUTPUT}, expected {done}",
            input.stage,
            history.len()
        )));
    }
    ctx.log(note(&input, done));
    setup.start_epoch = done;
    setup.earlier = history;
    Ok(Some(model))
}

/// Records the metrics every classifier-training stage reports and saves the checkpoint.
pub(crate) fn finish(
    ctx: &mut StageContext<'_>,
    setup: &Setup,
    model: &Model,
    classes: &ClassList,
    stats: &TrainStats,
) -> Result<(), StageError> {
    ctx.metric("train_loss", stats.loss);
    ctx.metric("train_accuracy", stats.accuracy);
    ctx.telemetry("train_seconds", stats.seconds);
    ctx.metric("classes", classes.labels.len() as f64);
    ctx.metric("gflops", gflops(&setup.net, setup.resolution));
    ctx.log(format!(
        "{} epochs in {:.1} s: loss {:.4}, training accuracy {:.3}, {} classes",
        setup.epochs,
        stats.seconds,
        stats.loss,
        stats.accuracy,
        classes.labels.len()
    ));
    ctx.log(stats.breakdown.clone());
    model.save(ctx.out_dir())?;
    ctx.write_json(LOSS_OUTPUT, &stats.history)?;
    ctx.write_json(CLASSES_OUTPUT, classes)
}

impl Run for TrainClassifier {
    fn run(&self, ctx: &mut StageContext<'_>) -> Result<(), StageError> {
        let p = ClassifierParams::from_params(ctx.params())?;
        let mut setup = Setup::new(&p, init_seed(ctx.params()))?;
        super::training::note_precision(ctx, setup.precision);
        let (items, dataset, classes) = training_items(ctx, &p.partition)?;
        ctx.log(format!(
            "training on `{}`: {} images of {} classes",
            p.partition,
            items.len(),
            classes.labels.len()
        ));
        let device = crate::worker::torch_device(ctx.device());
        let model = match resume(ctx, &mut setup, &classes, device)? {
            Some(model) => model,
            None => setup.model(classes.labels.len(), device),
        };
        let loader = setup.loader(dataset, &items)?;
        if let Some(note) = loader.capped_epoch_note() {
            ctx.log(note);
        }
        let stats = train(ctx, &setup, &model, &loader, &classes, &mut |_, _, _| None)?;
        finish(ctx, &setup, &model, &classes, &stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asymflow::stages::testing::params_with_defaults;
    use serde_json::json;

    /// The settings of `params`, as the runner makes them.
    fn setup_of(params: &Params) -> Result<Setup, StageError> {
        Setup::new(&ClassifierParams::from_params(params)?, init_seed(params))
    }

    #[test]
    fn augmentation_follows_crop_min_and_flip() {
        let params = params_with_defaults(
            &asymflow::stages::train_classifier::TrainClassifier,
            json!({"crop_min": 0.6, "flip": false}),
        );
        let setup = setup_of(&params).unwrap();
        assert_eq!(setup.augment.crop_scale, (0.6, 1.0));
        assert!(!setup.augment.flip);
        assert!(setup.augment.geometric);

        let defaults = setup_of(&params_with_defaults(
            &asymflow::stages::train_classifier::TrainClassifier,
            json!({}),
        ))
        .unwrap();
        assert_eq!(defaults.augment, AugmentConfig::default());

        let off = params_with_defaults(
            &asymflow::stages::train_classifier::TrainClassifier,
            json!({"geometric": false, "flip": false}),
        );
        let off = setup_of(&off).unwrap().augment;
        assert_eq!((off.geometric, off.flip), (false, false));
    }

    /// The first wave's `init_seed`: a hash of the parameters as they were spelled then.
    fn first_wave_init_seed(map: serde_json::Value) -> i64 {
        let text = serde_json::to_string(&map).unwrap();
        let hash = blake3::hash(text.as_bytes());
        (u64::from_le_bytes(hash.as_bytes()[..8].try_into().unwrap()) >> 1) as i64
    }

    #[test]
    fn the_shared_groups_kept_every_initialisation() {
        let stage = &asymflow::stages::train_classifier::TrainClassifier;
        let mut spelled_then = serde_json::Map::new();
        for (name, value) in params_with_defaults(stage, json!({"partition": "train-50"})).0 {
            spelled_then.insert(name, value);
        }
        for added in [
            "div_factor",
            "jitter",
            "images_per_epoch",
            "precision",
            "momentum",
            "nesterov",
            "milestones",
            "gamma",
            "warmup_epochs",
        ] {
            spelled_then.remove(added);
        }
        let geometric = spelled_then.remove("geometric").unwrap();
        spelled_then.insert("augment".into(), geometric);
        spelled_then.remove("schedule");
        spelled_then.insert("one_cycle".into(), json!(true));

        let now = params_with_defaults(stage, json!({"partition": "train-50"}));
        assert_eq!(
            init_seed(&now),
            first_wave_init_seed(serde_json::Value::Object(spelled_then))
        );
        let other = params_with_defaults(stage, json!({"partition": "train", "jitter": 0.2}));
        assert_ne!(init_seed(&now), init_seed(&other));
        let sgd = params_with_defaults(
            stage,
            json!({"partition": "train-50", "optimizer": "sgd", "momentum": 0.5}),
        );
        let adamw_momentum =
            params_with_defaults(stage, json!({"partition": "train-50", "momentum": 0.5}));
        assert_ne!(init_seed(&now), init_seed(&sgd));
        assert_ne!(init_seed(&now), init_seed(&adamw_momentum));
    }

    #[test]
    fn a_crop_min_outside_the_unit_interval_is_refused_by_name() {
        for bad in [0.0, -0.5, 1.5] {
            let params = params_with_defaults(
                &asymflow::stages::train_classifier::TrainClassifier,
                json!({ "crop_min": bad }),
            );
            let err = setup_of(&params).unwrap_err().to_string();
            assert!(err.contains("crop_min"), "{err}");
        }
    }
}
