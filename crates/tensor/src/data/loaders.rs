//! The three batch loaders stages use: [`EvalLoader`] (evaluation preprocessing, in order),
//! [`TrainLoader`] (re-sampling + augmentation at one resolution, shuffled or class-balanced)
//! and [`DistillLoader`] (P coupled or separate augmentations per image at a teacher and a
//! student resolution, with mixup).
//!
//! All three decode and augment on rayon ahead of the consumer ([`super::prefetch`]) and give
//! CPU tensors, f32, NCHW, ImageNet-normalised. An epoch is a pure function of (seed, epoch):
//! the order comes from a ChaCha8 stream seeded by both, and every image's augmentation from a
//! stream seeded by (seed, epoch, position), so the same call always yields the same batches
//! whatever the number of threads.
//!
//! Training batches drop an incomplete last batch (a batch of one breaks BatchNorm and has no
//! negatives), unless the whole epoch is smaller than one batch.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use tch::Tensor;

use super::augment::{self, stream_seed, AugParams, AugmentConfig};
use super::dataset::Dataset;
use super::image_ops::{normalised_chw, resize_largest_side, EvalView};
use super::prefetch::Prefetch;
use super::DataError;
use super::Resolution;
use super::SplitItem;

/// Finished batches kept ready ahead of the consumer.
const PREFETCH_DEPTH: usize = 2;

fn tensor(data: &[f32], n: usize, size: Resolution) -> Tensor {
    Tensor::from_slice(data).view([n as i64, 3, i64::from(size.height), i64::from(size.width)])
}

// ---------------------------------------------------------------------------------------------
// Evaluation

/// Evaluation batches of a list of items, in order: by default each image's shorter side
/// resized to `s * 8 / 7`, then the centre `s x s` crop (see [`EvalView`]).
pub struct EvalLoader {
    dataset: Arc<dyn Dataset>,
    items: Arc<Vec<SplitItem>>,
    resolution: Resolution,
    view: EvalView,
    batch_size: usize,
    pool: Option<Arc<rayon::ThreadPool>>,
}

impl EvalLoader {
    /// A loader over `items` at `resolution` (a side, or height x width; each at least 1),
    /// `batch_size` images per batch.
    pub fn new(
        dataset: Arc<dyn Dataset>,
        items: &[SplitItem],
        resolution: impl Into<Resolution>,
        batch_size: usize,
    ) -> Self {
        let resolution = resolution.into();
        EvalLoader {
            dataset,
            items: Arc::new(items.to_vec()),
            resolution: Resolution {
                height: resolution.height.max(1),
                width: resolution.width.max(1),
            },
            view: EvalView::default(),
            batch_size: batch_size.max(1),
            pool: None,
        }
    }

    /// Turns images into inputs with `view` instead of the centre crop.
    pub fn with_view(mut self, view: EvalView) -> Self {
        self.view = view;
        self
    }

    /// Decodes on `pool` instead of the global rayon pool.
    pub fn with_pool(mut self, pool: Arc<rayon::ThreadPool>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// Number of batches.
    pub fn num_batches(&self) -> usize {
        self.items.len().div_ceil(self.batch_size)
    }

    /// The batches: `(images [B, 3, h, w], labels)`.
    pub fn iter(&self) -> impl Iterator<Item = Result<(Tensor, Vec<i64>), DataError>> {
        let jobs: Vec<std::ops::Range<usize>> = (0..self.num_batches())
            .map(|b| b * self.batch_size..((b + 1) * self.batch_size).min(self.items.len()))
            .collect();
        let (dataset, items, s, view) = (
            self.dataset.clone(),
            self.items.clone(),
            self.resolution,
            self.view,
        );
        Prefetch::spawn(jobs, PREFETCH_DEPTH, self.pool.clone(), move |range| {
            let images = items[range.clone()]
                .par_iter()
                .map(|item| {
                    let mut out = Vec::new();
                    normalised_chw(&view.apply(&dataset.load(item)?, s), &mut out);
                    Ok(out)
                })
                .collect::<Result<Vec<_>, DataError>>()?;
            let labels = items[range].iter().map(|i| i.label).collect();
            Ok((images.concat(), labels))
        })
        .map(move |r| {
            r.map(|(data, labels): (Vec<f32>, Vec<i64>)| (tensor(&data, labels.len(), s), labels))
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Training

/// How a training epoch picks images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampling {
    /// Every image once per epoch, in a random order.
    Shuffle,
    /// Batches of `batch_size / per_class` classes with `per_class` images each (classes with
    /// fewer images repeat some); each class contributes `max(1, n / per_class)` groups per
    /// epoch and a batch never holds two groups of one class.
    ClassBalanced {
        /// Images per class in a batch.
        per_class: usize,
    },
    /// As [`Sampling::ClassBalanced`], but classes with fewer than `per_class` images are left
    /// out instead of repeating images, as the resolution-asymmetry reference does (SOP has
    /// many classes of 2-3 images, whose repeated images would be trivial positives).
    ClassBalancedDropSmall {
        /// Images per class in a batch.
        per_class: usize,
    },
}

/// Settings of a [`TrainLoader`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrainConfig {
    /// Output size (height x width); images are first re-sampled so their largest side is
    /// its larger side.
    pub resolution: Resolution,
    /// Images per batch.
    pub batch_size: usize,
    /// How images are picked.
    pub sampling: Sampling,
    /// At most this many images per epoch (whole batches), if set.
    pub images_per_epoch: Option<usize>,
    /// Augmentations (mixup is ignored here).
    pub augment: AugmentConfig,
    /// Seed of the order and the augmentations.
    pub seed: u64,
}

/// A training batch.
pub struct Batch {
    /// Images, `[B, 3, r, r]`.
    pub images: Tensor,
    /// Labels as given in the items, `[B]` i64.
    pub labels: Tensor,
    /// Which items (indices into the loader's items) are in the batch, in row order.
    pub indices: Vec<usize>,
    /// The augmentation drawn for each row.
    pub params: Vec<AugParams>,
}

/// Training batches at one resolution. See the module docs.
pub struct TrainLoader {
    dataset: Arc<dyn Dataset>,
    items: Arc<Vec<SplitItem>>,
    config: TrainConfig,
    pool: Option<Arc<rayon::ThreadPool>>,
}

fn check_batch(batch_size: usize, items: usize) -> Result<(), DataError> {
    if batch_size == 0 {
        return Err(DataError::config("batch size must be at least 1"));
    }
    if items == 0 {
        return Err(DataError::config("the partition to train on is empty"));
    }
    Ok(())
}

impl TrainLoader {
    /// A loader over `items`; the configuration is checked here.
    pub fn new(
        dataset: Arc<dyn Dataset>,
        items: &[SplitItem],
        config: TrainConfig,
    ) -> Result<Self, DataError> {
        check_batch(config.batch_size, items.len())?;
        if let Some((per_class, drop_small)) = config.sampling.class_balanced() {
            if per_class == 0
                || config.batch_size % per_class != 0
                || config.batch_size / per_class < 2
            {
                return Err(DataError::config(format!(
                    "class-balanced batches: batch size {} must be a multiple of the {per_class} \
                     images per class, with at least 2 classes per batch",
                    config.batch_size
                )));
            }
            let mut sizes: BTreeMap<i64, usize> = BTreeMap::new();
            items
                .iter()
                .for_each(|i| *sizes.entry(i.label).or_default() += 1);
            let classes = sizes
                .values()
                .filter(|&&n| !drop_small || n >= per_class)
                .count();
            if classes < config.batch_size / per_class {
                let kept = if drop_small {
                    format!(" with at least {per_class} images")
                } else {
                    String::new()
                };
                return Err(DataError::config(format!(
                    "class-balanced batches of {} classes, but the partition has only {classes} classes{kept}",
                    config.batch_size / per_class
                )));
            }
        }
        Ok(TrainLoader {
            dataset,
            items: Arc::new(items.to_vec()),
            config,
            pool: None,
        })
    }

    /// Decodes on `pool` instead of the global rayon pool.
    pub fn with_pool(mut self, pool: Arc<rayon::ThreadPool>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// The batches of `epoch`, as item indices.
    pub fn plan(&self, epoch: u64) -> Vec<Vec<usize>> {
        let mut rng = ChaCha8Rng::seed_from_u64(stream_seed(self.config.seed, epoch, u64::MAX));
        let bs = self.config.batch_size;
        let batches = match self.config.sampling {
            Sampling::Shuffle => {
                let mut order: Vec<usize> = (0..self.items.len()).collect();
                order.shuffle(&mut rng);
                order.chunks(bs).map(<[usize]>::to_vec).collect()
            }
            Sampling::ClassBalanced { per_class } => {
                class_balanced(&self.items, bs, per_class, false, &mut rng)
            }
            Sampling::ClassBalancedDropSmall { per_class } => {
                class_balanced(&self.items, bs, per_class, true, &mut rng)
            }
        };
        finish_plan(batches, bs, self.config.images_per_epoch)
    }

    /// Number of batches per epoch.
    pub fn batches_per_epoch(&self) -> usize {
        self.plan(0).len()
    }

    /// A line for the stage log when `images_per_epoch` asks for more than one pass.
    pub fn capped_epoch_note(&self) -> Option<String> {
        capped_epoch_note(
            self.config.images_per_epoch,
            self.batches_per_epoch(),
            self.config.batch_size,
        )
    }

    /// The batches of `epoch`.
    pub fn epoch(&self, epoch: u64) -> impl Iterator<Item = Result<Batch, DataError>> {
        let plan = self.plan(epoch);
        let bs = self.config.batch_size;
        let (dataset, items, cfg) = (self.dataset.clone(), self.items.clone(), self.config);
        let jobs: Vec<(usize, Vec<usize>)> = plan.into_iter().enumerate().collect();
        Prefetch::spawn(
            jobs,
            PREFETCH_DEPTH,
            self.pool.clone(),
            move |(b, indices)| {
                let rows = indices
                    .par_iter()
                    .enumerate()
                    .map(|(j, &i)| {
                        let mut rng = ChaCha8Rng::seed_from_u64(stream_seed(
                            cfg.seed,
                            epoch,
                            (b * bs + j) as u64,
                        ));
                        let img = resize_largest_side(
                            &dataset.load(&items[i])?,
                            cfg.resolution.largest_side(),
                        );
                        let params = augment::sample(
                            &cfg.augment,
                            img.width(),
                            img.height(),
                            cfg.resolution,
                            &mut rng,
                        );
                        let mut out = Vec::new();
                        augment::apply(&img, &params, cfg.resolution, &mut out);
                        Ok((out, params))
                    })
                    .collect::<Result<Vec<_>, DataError>>()?;
                let labels: Vec<i64> = indices.iter().map(|&i| items[i].label).collect();
                let (data, params): (Vec<Vec<f32>>, Vec<AugParams>) = rows.into_iter().unzip();
                Ok((data.concat(), labels, indices, params))
            },
        )
        .map(move |r| {
            r.map(|(data, labels, indices, params)| Batch {
                images: tensor(&data, labels.len(), cfg.resolution),
                labels: Tensor::from_slice(&labels),
                indices,
                params,
            })
        })
    }
}

/// Groups of `per_class` images of one class, shuffled, packed into batches without repeating
/// a class inside a batch (a group that would repeat one waits for the next batch). With
/// `drop_small`, classes of fewer than `per_class` images give no group.
fn class_balanced(
    items: &[SplitItem],
    bs: usize,
    per_class: usize,
    drop_small: bool,
    rng: &mut ChaCha8Rng,
) -> Vec<Vec<usize>> {
    let mut by_class: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        by_class.entry(item.label).or_default().push(i);
    }
    let mut groups: Vec<(i64, Vec<usize>)> = Vec::new();
    for (label, mut members) in by_class {
        if drop_small && members.len() < per_class {
            continue;
        }
        members.shuffle(rng);
        let n = (members.len() / per_class).max(1);
        for g in 0..n {
            let group = (0..per_class)
                .map(|k| members[(g * per_class + k) % members.len()])
                .collect();
            groups.push((label, group));
        }
    }
    groups.shuffle(rng);
    let per_batch = bs / per_class;
    let mut pending: VecDeque<(i64, Vec<usize>)> = groups.into();
    let mut batches = Vec::new();
    while !pending.is_empty() {
        let mut batch = Vec::with_capacity(bs);
        let mut classes = BTreeSet::new();
        let mut deferred = VecDeque::new();
        while classes.len() < per_batch {
            let Some((label, group)) = pending.pop_front() else {
                break;
            };
            if classes.insert(label) {
                batch.extend(group);
            } else {
                deferred.push_back((label, group));
            }
        }
        deferred.extend(pending);
        pending = deferred;
        if classes.len() < per_batch {
            // Only groups of classes already in this batch are left: a full batch is impossible.
            batches.push(batch);
            break;
        }
        batches.push(batch);
    }
    batches
}

impl Sampling {
    /// `(per_class, drop_small)` for the class-balanced samplings.
    fn class_balanced(self) -> Option<(usize, bool)> {
        match self {
            Sampling::Shuffle => None,
            Sampling::ClassBalanced { per_class } => Some((per_class, false)),
            Sampling::ClassBalancedDropSmall { per_class } => Some((per_class, true)),
        }
    }
}

/// The log line for an `images_per_epoch` above what one pass over the partition gives in
/// whole batches: an epoch is at most one pass (as in the reference code, which caps its
/// epoch at the training set), so asking for more trains on fewer images than asked.
fn capped_epoch_note(cap: Option<usize>, batches: usize, bs: usize) -> Option<String> {
    let cap = cap?;
    (cap / bs > batches).then(|| {
        format!(
            "note: images_per_epoch = {cap}, but an epoch is at most one pass over the \
             partition: {batches} batches of {bs}, {} images per epoch",
            batches * bs
        )
    })
}

/// Drops an incomplete last batch (unless it is the only one) and applies the image cap.
fn finish_plan(mut batches: Vec<Vec<usize>>, bs: usize, cap: Option<usize>) -> Vec<Vec<usize>> {
    if batches.len() > 1 && batches.last().is_some_and(|b| b.len() < bs) {
        batches.pop();
    }
    if let Some(cap) = cap {
        batches.truncate((cap / bs).max(1));
    }
    batches
}

// ---------------------------------------------------------------------------------------------
// Distillation

/// Settings of a [`DistillLoader`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DistillConfig {
    /// The teacher's (large) resolution R, a side or height x width; images are first
    /// re-sampled so that their largest side is R's largest side.
    pub teacher_resolution: Resolution,
    /// The student's (small) resolution r. Coupled views need R's aspect ratio, to within a
    /// pixel of r's width ([`DistillLoader::new`] checks).
    pub student_resolution: Resolution,
    /// Images per batch (B); a batch holds B * P views at each resolution.
    pub batch_size: usize,
    /// Augmentations per image (P).
    pub augmentations: usize,
    /// One draw for both views (coupled) or independent draws (separate).
    pub coupled: bool,
    /// Augmentations, mixup included.
    pub augment: AugmentConfig,
    /// At most this many images per epoch (whole batches), if set.
    pub images_per_epoch: Option<usize>,
    /// Seed of the order and the augmentations.
    pub seed: u64,
}

/// What was drawn for one row of a distillation batch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ViewDraw {
    /// The teacher view's augmentation.
    pub teacher: AugParams,
    /// The student view's augmentation (equal to `teacher` when coupled).
    pub student: AugParams,
    /// The teacher row's mixup weight: row = w * row + (1 - w) * partner row.
    pub teacher_mix: f32,
    /// The student row's mixup weight (equal to `teacher_mix` when coupled).
    pub student_mix: f32,
    /// The row it is mixed with: the same augmentation of the next image in the batch.
    pub partner: usize,
}

/// A distillation batch; row `b * P + i` is augmentation `i` of image `b`.
pub struct DistillBatch {
    /// Teacher views, `[B * P, 3, R_h, R_w]`.
    pub teacher: Tensor,
    /// Student views, `[B * P, 3, r_h, r_w]`.
    pub student: Tensor,
    /// Which items (indices into the loader's items) are in the batch, one per image.
    pub indices: Vec<usize>,
    /// What was drawn for each row.
    pub draws: Vec<ViewDraw>,
}

/// Distillation batches. See the module docs.
pub struct DistillLoader {
    dataset: Arc<dyn Dataset>,
    items: Arc<Vec<SplitItem>>,
    config: DistillConfig,
    pool: Option<Arc<rayon::ThreadPool>>,
}

impl DistillLoader {
    /// A loader over `items`; the configuration is checked here.
    pub fn new(
        dataset: Arc<dyn Dataset>,
        items: &[SplitItem],
        config: DistillConfig,
    ) -> Result<Self, DataError> {
        check_batch(config.batch_size, items.len())?;
        if config.augmentations == 0 {
            return Err(DataError::config(
                "augmentations per image (P) must be at least 1",
            ));
        }
        let (big, small) = (config.teacher_resolution, config.student_resolution);
        if big.pixels() == 0 || small.pixels() == 0 {
            return Err(DataError::config("resolutions must be at least 1 pixel"));
        }
        // One crop box rendered at both sizes: the same aspect ratio, or one view is stretched.
        if config.coupled
            && (f64::from(small.width) - f64::from(small.height) * big.aspect()).abs() >= 1.0
        {
            return Err(DataError::config(format!(
                "coupled views render one crop box at the teacher's {big} and the student's \
                 {small} (height x width), so both need the same aspect ratio (width / height \
                 {:.3} and {:.3}); give the student a width of about {:.0} px, or draw the views \
                 separately (coupled = false)",
                big.aspect(),
                small.aspect(),
                f64::from(small.height) * big.aspect()
            )));
        }
        Ok(DistillLoader {
            dataset,
            items: Arc::new(items.to_vec()),
            config,
            pool: None,
        })
    }

    /// Decodes on `pool` instead of the global rayon pool.
    pub fn with_pool(mut self, pool: Arc<rayon::ThreadPool>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// The batches of `epoch`, as item indices.
    pub fn plan(&self, epoch: u64) -> Vec<Vec<usize>> {
        let mut rng = ChaCha8Rng::seed_from_u64(stream_seed(self.config.seed, epoch, u64::MAX));
        let mut order: Vec<usize> = (0..self.items.len()).collect();
        order.shuffle(&mut rng);
        let bs = self.config.batch_size;
        finish_plan(
            order.chunks(bs).map(<[usize]>::to_vec).collect(),
            bs,
            self.config.images_per_epoch,
        )
    }

    /// Number of batches per epoch.
    pub fn batches_per_epoch(&self) -> usize {
        self.plan(0).len()
    }

    /// A line for the stage log when `images_per_epoch` asks for more than one pass.
    pub fn capped_epoch_note(&self) -> Option<String> {
        capped_epoch_note(
            self.config.images_per_epoch,
            self.batches_per_epoch(),
            self.config.batch_size,
        )
    }

    /// The batches of `epoch`.
    pub fn epoch(&self, epoch: u64) -> impl Iterator<Item = Result<DistillBatch, DataError>> {
        let plan = self.plan(epoch);
        let (dataset, items, cfg) = (self.dataset.clone(), self.items.clone(), self.config);
        let jobs: Vec<(usize, Vec<usize>)> = plan.into_iter().enumerate().collect();
        Prefetch::spawn(
            jobs,
            PREFETCH_DEPTH,
            self.pool.clone(),
            move |(b, indices)| distill_batch(&*dataset, &items, &cfg, epoch, b, indices),
        )
        .map(move |r| {
            r.map(|(t, s, indices, draws)| {
                let rows = draws.len();
                DistillBatch {
                    teacher: tensor(&t, rows, cfg.teacher_resolution),
                    student: tensor(&s, rows, cfg.student_resolution),
                    indices,
                    draws,
                }
            })
        })
    }
}

/// Salt of the mixup weights' random stream.
const MIXUP_SALT: u64 = 0x6D69_7875_7000_0001;

type DistillRows = (Vec<f32>, Vec<f32>, Vec<usize>, Vec<ViewDraw>);

fn distill_batch(
    dataset: &dyn Dataset,
    items: &[SplitItem],
    cfg: &DistillConfig,
    epoch: u64,
    batch: usize,
    indices: Vec<usize>,
) -> Result<DistillRows, DataError> {
    let (big, small, p) = (
        cfg.teacher_resolution,
        cfg.student_resolution,
        cfg.augmentations,
    );
    let per_image = indices
        .par_iter()
        .enumerate()
        .map(|(j, &i)| {
            let position = (batch * cfg.batch_size + j) as u64;
            let mut rng = ChaCha8Rng::seed_from_u64(stream_seed(cfg.seed, epoch, position));
            // Mixup weights come from their own stream, so turning mixup on or off leaves
            // every crop, flip and jitter as it was.
            let mut mix_rng =
                ChaCha8Rng::seed_from_u64(stream_seed(cfg.seed ^ MIXUP_SALT, epoch, position));
            let img = resize_largest_side(&dataset.load(&items[i])?, big.largest_side());
            let (w, h) = img.dimensions();
            let (mut t, mut s, mut draws) = (Vec::new(), Vec::new(), Vec::with_capacity(p));
            for _ in 0..p {
                let tp = augment::sample(&cfg.augment, w, h, big, &mut rng);
                let tm = augment::sample_mixup(cfg.augment.mixup_alpha, &mut mix_rng);
                let (sp, sm) = if cfg.coupled {
                    (tp, tm)
                } else {
                    (
                        augment::sample(&cfg.augment, w, h, small, &mut rng),
                        augment::sample_mixup(cfg.augment.mixup_alpha, &mut mix_rng),
                    )
                };
                augment::apply(&img, &tp, big, &mut t);
                augment::apply(&img, &sp, small, &mut s);
                draws.push((tp, sp, tm, sm));
            }
            Ok((t, s, draws))
        })
        .collect::<Result<Vec<_>, DataError>>()?;

    let n_images = indices.len();
    let mut draws = Vec::with_capacity(n_images * p);
    for (b, (_, _, d)) in per_image.iter().enumerate() {
        for (i, &(tp, sp, tm, sm)) in d.iter().enumerate() {
            let partner = ((b + 1) % n_images) * p + i;
            draws.push(ViewDraw {
                teacher: tp,
                student: sp,
                teacher_mix: tm,
                student_mix: sm,
                partner,
            });
        }
    }
    let (t_rows, s_rows): (Vec<Vec<f32>>, Vec<Vec<f32>>) =
        per_image.into_iter().map(|(t, s, _)| (t, s)).unzip();
    let mut teacher = t_rows.concat();
    let mut student = s_rows.concat();
    if cfg.augment.mixup_alpha > 0.0 && n_images > 1 {
        mix(&mut teacher, 3 * big.pixels(), &draws, |d| d.teacher_mix);
        mix(&mut student, 3 * small.pixels(), &draws, |d| d.student_mix);
    }
    Ok((teacher, student, indices, draws))
}

/// Mixes every row with its partner row: row = w * row + (1 - w) * partner (from the unmixed
/// rows).
fn mix(data: &mut [f32], row_len: usize, draws: &[ViewDraw], weight: impl Fn(&ViewDraw) -> f32) {
    let original = data.to_vec();
    for (r, d) in draws.iter().enumerate() {
        let w = weight(d);
        let partner = &original[d.partner * row_len..(d.partner + 1) * row_len];
        for (v, &q) in data[r * row_len..(r + 1) * row_len].iter_mut().zip(partner) {
            *v = w * *v + (1.0 - w) * q;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(classes: i64, per_class: usize) -> Vec<SplitItem> {
        (0..classes)
            .flat_map(|c| {
                (0..per_class).map(move |i| SplitItem {
                    id: format!("{c}/{i}"),
                    label: c,
                    camera: None,
                })
            })
            .collect()
    }

    /// `count` images of the built-in synthetic set, `per_class` to a label, as split items.
    fn synthetic_images(count: i64, per_class: i64) -> (Arc<dyn Dataset>, Vec<SplitItem>) {
        let dataset: Arc<dyn Dataset> = Arc::new(asymflow::data::SyntheticDataset::new(
            asymflow::data::SyntheticParams::default(),
        ));
        let items = (0..count)
            .map(|i| SplitItem {
                id: format!("synthetic/{i}"),
                label: i / per_class,
                camera: None,
            })
            .collect();
        (dataset, items)
    }

    #[test]
    fn class_balanced_batches_hold_whole_groups_of_distinct_classes() {
        let items = items(6, 5);
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let batches = finish_plan(class_balanced(&items, 6, 2, false, &mut rng), 6, None);
        assert!(!batches.is_empty());
        for batch in &batches {
            assert_eq!(batch.len(), 6);
            let mut count: BTreeMap<i64, usize> = BTreeMap::new();
            for &i in batch {
                *count.entry(items[i].label).or_default() += 1;
            }
            assert_eq!(count.len(), 3, "{count:?}");
            assert!(count.values().all(|&c| c == 2));
        }
    }

    /// An epoch is at most one pass: `images_per_epoch` above it trains on one pass, and the
    /// stage log says so (a validation round once asked for 1280 and 1920 images of a
    /// 960-image partition and got the same student twice).
    #[test]
    fn images_per_epoch_above_one_pass_is_capped_and_noted() {
        let (dataset, all) = synthetic_images(10, 5);
        let loader = |images_per_epoch| {
            TrainLoader::new(
                dataset.clone(),
                &all,
                TrainConfig {
                    resolution: Resolution::square(8),
                    batch_size: 4,
                    sampling: Sampling::Shuffle,
                    images_per_epoch,
                    augment: AugmentConfig::default(),
                    seed: 0,
                },
            )
            .unwrap()
        };
        for (cap, batches, noted) in [
            (None, 2, false),
            (Some(4), 1, false),
            (Some(8), 2, false),
            (Some(11), 2, false),
            (Some(12), 2, true),
            (Some(40), 2, true),
        ] {
            let loader = loader(cap);
            assert_eq!(loader.batches_per_epoch(), batches, "{cap:?}");
            let note = loader.capped_epoch_note();
            assert_eq!(note.is_some(), noted, "{cap:?}: {note:?}");
            if let Some(note) = note {
                assert!(
                    note.contains("2 batches of 4, 8 images per epoch"),
                    "{note}"
                );
            }
        }
    }

    #[test]
    fn a_height_x_width_resolution_gives_batches_of_that_shape() {
        let (dataset, all) = synthetic_images(6, 3);
        let tall = Resolution {
            height: 24,
            width: 12,
        };
        for view in [EvalView::CenterCrop, EvalView::Whole] {
            let loader = EvalLoader::new(dataset.clone(), &all, tall, 4).with_view(view);
            let shapes: Vec<Vec<i64>> = loader.iter().map(|b| b.unwrap().0.size()).collect();
            assert_eq!(
                shapes,
                vec![vec![4, 3, 24, 12], vec![2, 3, 24, 12]],
                "{view:?}"
            );
        }
        let train = TrainLoader::new(
            dataset,
            &all,
            TrainConfig {
                resolution: tall,
                batch_size: 3,
                sampling: Sampling::Shuffle,
                images_per_epoch: None,
                augment: AugmentConfig::default(),
                seed: 0,
            },
        )
        .unwrap();
        let batch = train.epoch(0).next().unwrap().unwrap();
        assert_eq!(batch.images.size(), vec![3, 3, 24, 12]);
    }

    #[test]
    fn distillation_views_take_each_side_of_height_x_width_resolutions() {
        let (dataset, all) = synthetic_images(4, 2);
        let (big, small) = (
            Resolution {
                height: 32,
                width: 16,
            },
            Resolution {
                height: 16,
                width: 8,
            },
        );
        let config = |coupled, student_resolution| DistillConfig {
            teacher_resolution: big,
            student_resolution,
            batch_size: 2,
            augmentations: 3,
            coupled,
            augment: AugmentConfig::default(),
            images_per_epoch: None,
            seed: 1,
        };
        let coupled = DistillLoader::new(dataset.clone(), &all, config(true, small)).unwrap();
        let batch = coupled.epoch(0).next().unwrap().unwrap();
        assert_eq!(batch.teacher.size(), vec![6, 3, 32, 16]);
        assert_eq!(batch.student.size(), vec![6, 3, 16, 8]);
        for d in &batch.draws {
            assert_eq!(d.teacher.crop, d.student.crop, "one box for both views");
            let aspect = d.teacher.crop.w / d.teacher.crop.h;
            assert!(
                // The crop ratio range times the output's 0.5, with slack for whole pixels.
                (0.5 * 0.75 * 0.9..=0.5 * 4.0 / 3.0 * 1.1).contains(&aspect),
                "crops follow the tall aspect: {aspect}"
            );
        }

        // Separate draws crop each view for its own aspect: a square student under a tall
        // teacher.
        let square = Resolution::square(12);
        let separate = DistillLoader::new(dataset.clone(), &all, config(false, square)).unwrap();
        let batch = separate.epoch(0).next().unwrap().unwrap();
        assert_eq!(batch.student.size(), vec![6, 3, 12, 12]);
        for d in &batch.draws {
            let aspect = d.student.crop.w / d.student.crop.h;
            assert!(
                (0.75 * 0.9..=4.0 / 3.0 * 1.1).contains(&aspect),
                "square student crops: {aspect}"
            );
        }

        // Coupled views of different aspect ratios would stretch one of them.
        let err = DistillLoader::new(dataset, &all, config(true, square))
            .err()
            .expect("a square student coupled with a tall teacher is refused")
            .to_string();
        assert!(
            err.contains("32x16") && err.contains("coupled = false"),
            "{err}"
        );
    }

    #[test]
    fn small_classes_repeat_images_or_are_dropped() {
        // Classes 0-3 have 4 images, classes 4-5 only 2.
        let mut all = items(4, 4);
        all.extend(items(6, 2).into_iter().filter(|i| i.label >= 4));
        let seen = |drop_small| {
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            class_balanced(&all, 8, 4, drop_small, &mut rng)
                .into_iter()
                .flatten()
                .map(|i| all[i].label)
                .collect::<BTreeSet<_>>()
        };
        assert!(seen(false).contains(&4), "repeated to fill a group");
        assert_eq!(seen(true), (0..4).collect(), "dropped, not repeated");
        let cfg = |sampling| TrainConfig {
            resolution: Resolution::square(8),
            batch_size: 8,
            sampling,
            images_per_epoch: None,
            augment: AugmentConfig::none(),
            seed: 0,
        };
        let dataset: Arc<dyn Dataset> = Arc::new(asymflow::data::SyntheticDataset::new(
            asymflow::data::SyntheticParams::default(),
        ));
        let few = items(3, 2);
        assert!(TrainLoader::new(
            dataset.clone(),
            &few,
            cfg(Sampling::ClassBalanced { per_class: 4 })
        )
        .is_ok());
        let err = TrainLoader::new(
            dataset,
            &few,
            cfg(Sampling::ClassBalancedDropSmall { per_class: 4 }),
        )
        .err()
        .expect("no class is large enough")
        .to_string();
        assert!(err.contains("with at least 4 images"), "{err}");
    }

    #[test]
    fn image_caps_keep_whole_batches() {
        let batches = vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6]];
        assert_eq!(finish_plan(batches.clone(), 2, None).len(), 3);
        assert_eq!(finish_plan(batches.clone(), 2, Some(4)).len(), 2);
        assert_eq!(finish_plan(vec![vec![0]], 2, None).len(), 1);
    }
}
