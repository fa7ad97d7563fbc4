//! One optimisation step of each training method, on batches already on the device.
//!
//! The stages (`train-teacher`, `distill`) feed these from the data loaders; the benchmark
//! feeds them random tensors of the same shapes. Keeping the step here means the benchmark
//! measures exactly the code the pipelines run.
//!
//! Gradient accumulation: a step object is called once per loader batch; gradients of
//! `accumulate` consecutive batches are summed (each loss scaled by `1/accumulate`) before one
//! optimiser step, so the effective batch is `batch * accumulate`.
//!
//! Chunking (distillation's `chunks`): one batch of B images x P views is split into groups of
//! whole images, each forwarded and back-propagated on its own, and the gradients add up
//! before the step. The distillation losses are sums over images of terms that look only at
//! one image's P views, so the gradient is the same as the whole batch's (to rounding) while
//! the activations held at once shrink by the number of chunks. The one difference: in
//! training mode BatchNorm normalises each chunk with that chunk's statistics, as it does per
//! GPU under data parallelism; with `freeze_bn` the result is exactly the unchunked one.
//!
//! Precision: forward passes run under [`Autocast::run`]; the embeddings are cast back to fp32
//! before any loss, so losses, gradients of the weights and the optimiser stay fp32.

use tch::{Kind, Tensor};

use super::checkpoint::Model;
use super::distill_loss::{DistillLoss, DistillTerms};
use super::optim::Optim;
use super::precision::Autocast;
use super::timing::StepTimes;
use super::triplet::{pool_triplet_loss, triplet_loss};
use super::{NnError, Precision};

/// The teacher's loss.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TeacherLoss {
    /// Triplet loss with distance-weighted negatives.
    Triplet {
        /// Margin on squared Euclidean distances.
        margin: f64,
        /// Negatives drawn per anchor.
        negatives: i64,
    },
    /// Cross-entropy through the model's classification head (normalised softmax or
    /// CosFace, whatever the head is).
    Classifier,
}

/// Gradient accumulation over an optimiser: gradients of `accumulate` consecutive batches are
/// summed, each loss scaled by `1/accumulate`, before one optimiser step.
struct Accumulator {
    optim: Optim,
    accumulate: usize,
    pending: usize,
    times: StepTimes,
}

impl Accumulator {
    fn new(optim: Optim, accumulate: usize) -> Self {
        Accumulator {
            optim,
            accumulate: accumulate.max(1),
            pending: 0,
            times: StepTimes::default(),
        }
    }

    /// Clears the gradients when a new accumulation starts.
    fn begin(&mut self) {
        if self.pending == 0 {
            let optim = &mut self.optim;
            self.times.step(|| optim.zero_grad());
        }
    }

    /// Back-propagates `loss` (scaled by `1/accumulate`) without stepping: one chunk of a batch.
    fn backward_part(&mut self, loss: &Tensor) {
        let scale = self.accumulate as f64;
        self.times.backward(|| (loss / scale).backward());
    }

    /// Counts a finished batch and steps once `accumulate` batches are in.
    fn end_batch(&mut self) {
        self.pending += 1;
        if self.pending == self.accumulate {
            let optim = &mut self.optim;
            self.times.step(|| optim.step());
            self.pending = 0;
        }
    }

    /// Back-propagates a whole batch's `loss` (scaled) and steps once `accumulate` batches are in.
    fn backward(&mut self, loss: &Tensor) {
        self.backward_part(loss);
        self.end_batch();
    }

    /// Applies gradients still pending from an incomplete accumulation.
    fn flush(&mut self) {
        if self.pending > 0 {
            let optim = &mut self.optim;
            self.times.step(|| optim.step());
            self.pending = 0;
        }
    }
}

/// Rows `[start, start + len)` of `images` images split into `chunks` groups of whole images,
/// as even as possible (the first `images % chunks` groups one image larger).
pub fn chunk_ranges(images: i64, chunks: i64) -> Vec<(i64, i64)> {
    let chunks = chunks.clamp(1, images.max(1));
    let (base, extra) = (images / chunks, images % chunks);
    let mut start = 0;
    (0..chunks)
        .map(|c| {
            let len = base + i64::from(c < extra);
            let range = (start, len);
            start += len;
            range
        })
        .filter(|&(_, len)| len > 0)
        .collect()
}

/// Trains a teacher (an embedding network, with a head for classifier losses).
pub struct TeacherStep {
    /// The model being trained.
    pub model: Model,
    steps: Accumulator,
    loss: TeacherLoss,
    freeze_bn: bool,
    precision: Precision,
}

impl TeacherStep {
    /// Sets up training; `optim` was built over `model.vs`.
    pub fn new(
        model: Model,
        optim: Optim,
        loss: TeacherLoss,
        freeze_bn: bool,
        accumulate: usize,
    ) -> Result<Self, NnError> {
        if loss == TeacherLoss::Classifier && model.classifier.is_none() {
            return Err(NnError::Checkpoint(
                "a classifier loss needs a model with a classification head".into(),
            ));
        }
        Ok(TeacherStep {
            model,
            steps: Accumulator::new(optim, accumulate),
            loss,
            freeze_bn,
            precision: Precision::Fp32,
        })
    }

    /// Runs the forward passes in `precision` (fp32 unless set).
    pub fn with_precision(mut self, precision: Precision) -> Self {
        self.precision = precision;
        self
    }

    /// Forward and backward on one batch (`images` `[B, 3, r, r]`, `labels` i64 `[B]`, both
    /// on the model's device); steps the optimiser every `accumulate` batches. Returns the
    /// batch loss.
    pub fn batch(&mut self, images: &Tensor, labels: &Tensor) -> f64 {
        self.steps.begin();
        let (model, precision, train) = (&self.model, self.precision, !self.freeze_bn);
        let (loss, value) = self.steps.times.forward(|| {
            let emb = precision.fp32(&precision.run(|| model.net.forward_t(images, train)));
            let loss = match self.loss {
                TeacherLoss::Triplet { margin, negatives } => {
                    triplet_loss(&emb, labels, margin, negatives)
                }
                TeacherLoss::Classifier => match &model.classifier {
                    Some(head) => head.loss(&emb, labels),
                    None => unreachable!("checked in TeacherStep::new"),
                },
            };
            let value = loss.double_value(&[]);
            (loss, value)
        });
        self.steps.backward(&loss);
        value
    }

    /// Forward and backward on one batch whose triplet negatives were mined from a pool
    /// ([`super::mining_pool`]): `images` the anchors `[B, 3, h, w]` with `labels`, `negatives`
    /// the mined images `[M, 3, h, w]`, `index` i64 `[B, K]` the row of `negatives` that is
    /// anchor `b`'s `k`-th negative where `valid` (bool `[B, K]`). Anchors and negatives go
    /// through one forward pass. Needs the triplet loss; steps as [`TeacherStep::batch`].
    pub fn batch_pool(
        &mut self,
        images: &Tensor,
        labels: &Tensor,
        negatives: &Tensor,
        index: &Tensor,
        valid: &Tensor,
    ) -> Result<f64, NnError> {
        let TeacherLoss::Triplet { margin, .. } = self.loss else {
            return Err(NnError::Checkpoint(
                "negatives mined from a pool need the triplet loss".into(),
            ));
        };
        self.steps.begin();
        let (model, precision, train) = (&self.model, self.precision, !self.freeze_bn);
        let b = images.size()[0];
        let m = negatives.size()[0];
        let (loss, value) = self.steps.times.forward(|| {
            let all = if m > 0 {
                Tensor::cat(&[images, negatives], 0)
            } else {
                images.shallow_clone()
            };
            let emb = precision.fp32(&precision.run(|| model.net.forward_t(&all, train)));
            let anchors = emb.narrow(0, 0, b);
            let loss = if m > 0 {
                let k = index.size()[1];
                let neg = emb
                    .narrow(0, b, m)
                    .index_select(0, &index.reshape([-1]))
                    .view([b, k, -1]);
                pool_triplet_loss(&anchors, labels, &neg, valid, margin)
            } else {
                // No anchor has a negative: no triplet, a zero loss with a zero gradient.
                anchors.sum(Kind::Float) * 0.0
            };
            let value = loss.double_value(&[]);
            (loss, value)
        });
        self.steps.backward(&loss);
        Ok(value)
    }

    /// Embeddings of `images` by the model in evaluation mode, without gradients, fp32 (as
    /// mining embeds its pool).
    pub fn embed_eval(&self, images: &Tensor) -> Tensor {
        let precision = self.precision;
        precision.fp32(&tch::no_grad(|| {
            precision.run(|| self.model.net.forward_t(images, false))
        }))
    }

    /// Time spent in each phase so far.
    pub fn times(&self) -> StepTimes {
        self.steps.times
    }

    /// Applies gradients still pending from an incomplete accumulation (end of an epoch).
    pub fn flush(&mut self) {
        self.steps.flush();
    }

    /// The learning rate of the next step (`None` without a schedule).
    pub fn lr(&self) -> Option<f64> {
        self.steps.optim.lr()
    }
}

/// Distils a student from a frozen teacher, without labels.
pub struct DistillStep {
    /// The student being trained.
    pub student: Model,
    /// The frozen teacher (eval mode, never receives a gradient).
    pub teacher: Model,
    steps: Accumulator,
    loss: DistillLoss,
    augmentations: i64,
    freeze_bn: bool,
    chunks: i64,
    precision: Precision,
}

impl DistillStep {
    /// Sets up distillation; `optim` was built over `student.vs`. The teacher's variables are
    /// frozen here.
    pub fn new(
        student: Model,
        mut teacher: Model,
        optim: Optim,
        loss: DistillLoss,
        augmentations: i64,
        freeze_bn: bool,
        accumulate: usize,
    ) -> Self {
        teacher.vs.freeze();
        DistillStep {
            student,
            teacher,
            steps: Accumulator::new(optim, accumulate),
            loss,
            augmentations,
            freeze_bn,
            chunks: 1,
            precision: Precision::Fp32,
        }
    }

    /// Splits each batch into `chunks` groups of whole images (see the module docs; 1: off).
    pub fn with_chunks(mut self, chunks: i64) -> Self {
        self.chunks = chunks.max(1);
        self
    }

    /// Runs the forward passes in `precision` (fp32 unless set).
    pub fn with_precision(mut self, precision: Precision) -> Self {
        self.precision = precision;
        self
    }

    /// The teacher's embeddings of a batch: eval mode, no gradient, fp32.
    pub fn teacher_embed(&self, images: &Tensor) -> Tensor {
        let precision = self.precision;
        precision.fp32(&tch::no_grad(|| {
            precision.run(|| self.teacher.net.forward_t(images, false))
        }))
    }

    /// Forward and backward on one batch: the teacher view `[B*P, 3, R, R]` and the student
    /// view `[B*P, 3, r, r]`, rows image-major, in `chunks` groups of whole images. Steps
    /// every `accumulate` batches. Returns the value of each loss term over the whole batch.
    pub fn batch(&mut self, teacher_view: &Tensor, student_view: &Tensor) -> DistillTerms {
        self.steps.begin();
        let p = self.augmentations;
        let images = teacher_view.size()[0] / p;
        let mut sum: Option<DistillTerms> = None;
        for (start, len) in chunk_ranges(images, self.chunks) {
            let tv = teacher_view.narrow(0, start * p, len * p);
            let sv = student_view.narrow(0, start * p, len * p);
            let terms = self.chunk_terms(&tv, &sv);
            self.steps.backward_part(&terms.total);
            sum = Some(match sum {
                None => DistillTerms {
                    total: terms.total.detach(),
                    ..terms
                },
                Some(acc) => add_terms(acc, terms),
            });
        }
        self.steps.end_batch();
        sum.unwrap_or_else(|| DistillTerms {
            total: Tensor::from(0.0f32),
            abs: None,
            rel_ts: None,
            rel_ss: None,
        })
    }

    /// The loss terms of one chunk, with gradient to the student.
    fn chunk_terms(&mut self, teacher_view: &Tensor, student_view: &Tensor) -> DistillTerms {
        let mut times = self.steps.times;
        let terms = times.forward(|| {
            let t = self.teacher_embed(teacher_view);
            let (precision, train) = (self.precision, !self.freeze_bn);
            let s =
                precision.fp32(&precision.run(|| self.student.net.forward_t(student_view, train)));
            self.loss.compute(&s, &t, self.augmentations)
        });
        self.steps.times = times;
        terms
    }

    /// Time spent in each phase so far.
    pub fn times(&self) -> StepTimes {
        self.steps.times
    }

    /// Applies gradients still pending from an incomplete accumulation.
    pub fn flush(&mut self) {
        self.steps.flush();
    }

    /// The learning rate of the next step (`None` without a schedule).
    pub fn lr(&self) -> Option<f64> {
        self.steps.optim.lr()
    }
}

/// The sum of two chunks' terms (values add: every term is a sum over images).
fn add_terms(a: DistillTerms, b: DistillTerms) -> DistillTerms {
    let add = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => Some(x + y),
        (x, y) => x.or(y),
    };
    DistillTerms {
        total: a.total + b.total.detach(),
        abs: add(a.abs, b.abs),
        rel_ts: add(a.rel_ts, b.rel_ts),
        rel_ss: add(a.rel_ss, b.rel_ss),
    }
}

/// Embeds `images` in eval mode without gradient, in chunks of `chunk` rows.
pub fn embed_eval(model: &Model, images: &Tensor, chunk: i64) -> Tensor {
    tch::no_grad(|| {
        let n = images.size()[0];
        let parts: Vec<Tensor> = (0..n)
            .step_by(chunk.max(1) as usize)
            .map(|i| {
                model
                    .net
                    .forward_t(&images.narrow(0, i, chunk.min(n - i)), false)
            })
            .collect();
        Tensor::cat(&parts, 0).to_kind(Kind::Float)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::checkpoint::ModelMeta;
    use crate::nn::classifier::{ClassifierConfig, HeadKind};
    use crate::nn::config::{Arch, NetConfig, Pool, Stem};
    use crate::nn::optim::{OptimConfig, OptimKind, ScheduleConfig};
    use tch::Device;

    fn net() -> NetConfig {
        NetConfig {
            arch: Arch::Resnet18,
            width: 8,
            stem: Stem::Small,
            pool: Pool::Gem,
            embed_dim: 16,
            gem_p: 3.0,
            pool_l2n: true,
            embed_relu: false,
        }
    }

    fn adam(lr: f64) -> OptimConfig {
        OptimConfig {
            kind: OptimKind::Adam,
            lr,
            weight_decay: 0.0,
            schedule: ScheduleConfig::constant(),
        }
    }

    fn distill_setup(loss: DistillLoss) -> DistillStep {
        tch::manual_seed(0);
        let teacher = Model::new(ModelMeta::new(net(), None), Device::Cpu);
        let student = Model::new(ModelMeta::new(net(), None), Device::Cpu);
        crate::nn::checkpoint::copy_vars(&teacher.vs, &student.vs).unwrap();
        let optim = Optim::new(&student.vs, &adam(1e-3), 1, 10).unwrap();
        DistillStep::new(student, teacher, optim, loss, 2, false, 1)
    }

    #[test]
    fn gradients_reach_the_student_and_never_the_teacher() {
        let all = DistillLoss {
            abs: true,
            lambda_t: Some(0.7),
            lambda_s: Some(0.7),
        };
        let mut step = distill_setup(all);
        let tv = Tensor::randn([4, 3, 16, 16], tch::kind::FLOAT_CPU);
        let sv = tv.upsample_bilinear2d([8, 8], false, None, None);
        let teacher_before: Vec<(String, Tensor)> = step
            .teacher
            .vs
            .variables()
            .into_iter()
            .map(|(k, v)| (k, v.copy()))
            .collect();
        let terms = step.batch(&tv, &sv);
        assert!(terms.abs.unwrap() > 0.0);
        for (name, var) in step.teacher.vs.variables() {
            assert!(!var.requires_grad(), "teacher variable {name} is trainable");
            assert!(
                !var.grad().defined(),
                "teacher variable {name} received a gradient"
            );
        }
        for (name, before) in teacher_before {
            assert!(
                step.teacher.vs.variables()[&name].equal(&before),
                "teacher {name} changed"
            );
        }
        let grads: f64 = step
            .student
            .vs
            .trainable_variables()
            .iter()
            .map(|v| v.grad().abs().sum(Kind::Float).double_value(&[]))
            .sum();
        assert!(grads > 0.0);
    }

    #[test]
    fn distillation_steps_lower_the_loss() {
        let mut step = distill_setup(DistillLoss {
            abs: true,
            lambda_t: None,
            lambda_s: None,
        });
        let tv = Tensor::randn([8, 3, 16, 16], tch::kind::FLOAT_CPU);
        let sv = tv.upsample_bilinear2d([8, 8], false, None, None);
        let first = step.batch(&tv, &sv).abs.unwrap();
        let mut last = first;
        for _ in 0..8 {
            last = step.batch(&tv, &sv).abs.unwrap();
        }
        assert!(last < first * 0.8, "{first} -> {last}");
    }

    /// Every trainable variable's gradient and value, by name.
    fn state(model: &Model) -> Vec<(String, Tensor, Tensor)> {
        let mut vars: Vec<_> = model
            .vs
            .variables()
            .into_iter()
            .filter(|(_, v)| v.requires_grad())
            .map(|(name, v)| (name, v.grad().copy(), v.detach().copy()))
            .collect();
        vars.sort_by(|a, b| a.0.cmp(&b.0));
        vars
    }

    #[test]
    fn chunks_split_batches_into_whole_images() {
        assert_eq!(chunk_ranges(8, 1), vec![(0, 8)]);
        assert_eq!(chunk_ranges(8, 2), vec![(0, 4), (4, 4)]);
        assert_eq!(chunk_ranges(7, 3), vec![(0, 3), (3, 2), (5, 2)]);
        assert_eq!(
            chunk_ranges(2, 5),
            vec![(0, 1), (1, 1)],
            "at most one chunk per image"
        );
        assert_eq!(chunk_ranges(3, 0), vec![(0, 3)]);
    }

    #[test]
    fn one_step_in_two_chunks_equals_one_step_in_one() {
        let all = DistillLoss {
            abs: true,
            lambda_t: Some(0.7),
            lambda_s: Some(0.7),
        };
        // BatchNorm frozen (eval statistics): then chunking is exact up to rounding. Both runs
        // start from one set of weights, copied (tests share libtorch's global seed).
        let weights = Model::new(ModelMeta::new(net(), None), Device::Cpu);
        let setup = |chunks: i64| {
            let teacher = Model::new(ModelMeta::new(net(), None), Device::Cpu);
            let student = Model::new(ModelMeta::new(net(), None), Device::Cpu);
            crate::nn::checkpoint::copy_vars(&weights.vs, &teacher.vs).unwrap();
            crate::nn::checkpoint::copy_vars(&weights.vs, &student.vs).unwrap();
            let optim = Optim::new(&student.vs, &adam(1e-3), 1, 10).unwrap();
            DistillStep::new(student, teacher, optim, all, 2, true, 1).with_chunks(chunks)
        };
        let tv = Tensor::randn([8, 3, 16, 16], tch::kind::FLOAT_CPU);
        let sv = tv.upsample_bilinear2d([8, 8], false, None, None);
        let mut whole = setup(1);
        let mut split = setup(2);
        let (a, b) = (whole.batch(&tv, &sv), split.batch(&tv, &sv));
        for (x, y) in [(a.abs, b.abs), (a.rel_ts, b.rel_ts), (a.rel_ss, b.rel_ss)] {
            let (x, y) = (x.unwrap(), y.unwrap());
            assert!((x - y).abs() <= 1e-6 * x.abs().max(1.0), "{x} vs {y}");
        }
        let (sa, sb) = (state(&whole.student), state(&split.student));
        assert_eq!(sa.len(), sb.len());
        let scale = sa
            .iter()
            .map(|(_, g, _)| g.abs().max().double_value(&[]))
            .fold(0.0, f64::max);
        for ((name, ga, wa), (_, gb, wb)) in sa.iter().zip(&sb) {
            assert!(ga.defined() && gb.defined(), "{name} got no gradient");
            // Sums over the 8 images added in another order: fp32 rounding only.
            let gdiff = (ga - gb).abs().max().double_value(&[]) / scale;
            assert!(
                gdiff <= 1e-6,
                "{name}: gradients differ by {gdiff} of the largest"
            );
            // Adam's first step is lr * g / (|g| + 1e-8): where |g| is near 0 it amplifies
            // rounding, so the weights are compared where the gradient is a real signal.
            let signal = ga.abs().gt(1e-6 * scale).to_kind(Kind::Float);
            let wdiff = ((wa - wb).abs() * signal).max().double_value(&[]);
            assert!(wdiff <= 1e-6, "{name}: weights differ by {wdiff}");
        }
        assert!(
            sa.iter()
                .any(|(_, ga, _)| ga.abs().sum(Kind::Float).double_value(&[]) > 0.0),
            "the step had a gradient at all"
        );
    }

    #[test]
    fn fp32_steps_are_bit_identical_to_the_plain_loop() {
        let all = DistillLoss {
            abs: true,
            lambda_t: Some(0.7),
            lambda_s: Some(0.7),
        };
        let tv = Tensor::randn([8, 3, 16, 16], tch::kind::FLOAT_CPU);
        let sv = tv.upsample_bilinear2d([8, 8], false, None, None);
        // The step as the stages run it: fp32, one chunk.
        let mut step = distill_setup(all)
            .with_precision(Precision::Fp32)
            .with_chunks(1);
        // The loop written out by hand, as the stages ran before `precision` and `chunks`,
        // from the same weights (copied: tests share libtorch's global seed).
        let teacher = Model::new(ModelMeta::new(net(), None), Device::Cpu);
        let student = Model::new(ModelMeta::new(net(), None), Device::Cpu);
        crate::nn::checkpoint::copy_vars(&step.teacher.vs, &teacher.vs).unwrap();
        crate::nn::checkpoint::copy_vars(&step.teacher.vs, &student.vs).unwrap();
        for _ in 0..2 {
            step.batch(&tv, &sv);
        }
        let mut optim = Optim::new(&student.vs, &adam(1e-3), 1, 10).unwrap();
        for _ in 0..2 {
            optim.zero_grad();
            let t = tch::no_grad(|| teacher.net.forward_t(&tv, false));
            let s = student.net.forward_t(&sv, true);
            all.compute(&s, &t, 2).total.backward();
            optim.step();
        }
        for ((name, ga, wa), (_, gb, wb)) in state(&step.student).iter().zip(&state(&student)) {
            assert!(wa.equal(wb), "{name}: weights differ");
            assert!(ga.equal(gb), "{name}: gradients differ");
        }

        let head = ClassifierConfig {
            kind: HeadKind::NormSoftmax,
            classes: 2,
            dim: 16,
            scale: 16.0,
            margin: 0.0,
        };
        let images = Tensor::randn([4, 3, 16, 16], tch::kind::FLOAT_CPU);
        let labels = Tensor::from_slice(&[0i64, 0, 1, 1]);
        let a = Model::new(ModelMeta::new(net(), Some(head.clone())), Device::Cpu);
        let b = Model::new(ModelMeta::new(net(), Some(head)), Device::Cpu);
        crate::nn::checkpoint::copy_vars(&a.vs, &b.vs).unwrap();
        let optim = Optim::new(&a.vs, &adam(2e-3), 1, 10).unwrap();
        let mut step = TeacherStep::new(a, optim, TeacherLoss::Classifier, false, 1)
            .unwrap()
            .with_precision(Precision::Fp32);
        let mut optim = Optim::new(&b.vs, &adam(2e-3), 1, 10).unwrap();
        for _ in 0..2 {
            step.batch(&images, &labels);
            optim.zero_grad();
            let emb = b.net.forward_t(&images, true);
            b.classifier
                .as_ref()
                .unwrap()
                .loss(&emb, &labels)
                .backward();
            optim.step();
        }
        for ((name, ga, wa), (_, gb, wb)) in state(&step.model).iter().zip(&state(&b)) {
            assert!(wa.equal(wb), "{name}: weights differ");
            assert!(ga.equal(gb), "{name}: gradients differ");
        }
    }

    #[test]
    fn teacher_with_a_classifier_head_learns_a_tiny_batch() {
        tch::manual_seed(0);
        let head = ClassifierConfig {
            kind: HeadKind::NormSoftmax,
            classes: 2,
            dim: 16,
            scale: 16.0,
            margin: 0.0,
        };
        let model = Model::new(ModelMeta::new(net(), Some(head)), Device::Cpu);
        let optim = Optim::new(&model.vs, &adam(2e-3), 1, 10).unwrap();
        let mut step = TeacherStep::new(model, optim, TeacherLoss::Classifier, false, 2).unwrap();
        let images = Tensor::randn([4, 3, 16, 16], tch::kind::FLOAT_CPU);
        let labels = Tensor::from_slice(&[0i64, 0, 1, 1]);
        let first = step.batch(&images, &labels);
        let mut last = first;
        for _ in 0..11 {
            last = step.batch(&images, &labels);
        }
        step.flush();
        assert!(last < first, "{first} -> {last}");
        let no_head = Model::new(ModelMeta::new(net(), None), Device::Cpu);
        let optim = Optim::new(&no_head.vs, &adam(1e-3), 1, 1).unwrap();
        assert!(TeacherStep::new(no_head, optim, TeacherLoss::Classifier, false, 1).is_err());
    }
}
