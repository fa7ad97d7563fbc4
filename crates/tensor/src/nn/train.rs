//! One optimisation step of each training method, on batches already on the device.
//!
//! The stages (`train-teacher`, `distill`) feed these from the data loaders; the benchmark
//! feeds them random tensors of the same shapes. Keeping the step here means the benchmark
//! measures exactly the code the pipelines run.
//!
//! Gradient accumulation: a step object is called once per loader batch; gradients of
//! `accumulate` consecutive batches are summed (each loss scaled by `1/accumulate`) before one
//! optimiser step, so the effective batch is `batch * accumulate`.

use tch::{Kind, Tensor};

use super::checkpoint::Model;
use super::distill_loss::{DistillLoss, DistillTerms};
use super::optim::Optim;
use super::triplet::triplet_loss;
use super::NnError;

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
}

impl Accumulator {
    fn new(optim: Optim, accumulate: usize) -> Self {
        Accumulator {
            optim,
            accumulate: accumulate.max(1),
            pending: 0,
        }
    }

    /// Clears the gradients when a new accumulation starts.
    fn begin(&mut self) {
        if self.pending == 0 {
            self.optim.zero_grad();
        }
    }

    /// Back-propagates `loss` (scaled) and steps once `accumulate` batches are in.
    fn backward(&mut self, loss: &Tensor) {
        (loss / self.accumulate as f64).backward();
        self.pending += 1;
        if self.pending == self.accumulate {
            self.optim.step();
            self.pending = 0;
        }
    }

    /// Applies gradients still pending from an incomplete accumulation.
    fn flush(&mut self) {
        if self.pending > 0 {
            self.optim.step();
            self.pending = 0;
        }
    }
}

/// Trains a teacher (an embedding network, with a head for classifier losses).
pub struct TeacherStep {
    /// The model being trained.
    pub model: Model,
    steps: Accumulator,
    loss: TeacherLoss,
    freeze_bn: bool,
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
        })
    }

    /// Forward and backward on one batch (`images` `[B, 3, r, r]`, `labels` i64 `[B]`, both
    /// on the model's device); steps the optimiser every `accumulate` batches. Returns the
    /// batch loss.
    pub fn batch(&mut self, images: &Tensor, labels: &Tensor) -> f64 {
        self.steps.begin();
        let emb = self.model.net.forward_t(images, !self.freeze_bn);
        let loss = match self.loss {
            TeacherLoss::Triplet { margin, negatives } => {
                triplet_loss(&emb, labels, margin, negatives)
            }
            TeacherLoss::Classifier => match &self.model.classifier {
                Some(head) => head.loss(&emb, labels),
                None => unreachable!("checked in TeacherStep::new"),
            },
        };
        let value = loss.double_value(&[]);
        self.steps.backward(&loss);
        value
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
        }
    }

    /// The teacher's embeddings of a batch: eval mode, no gradient.
    pub fn teacher_embed(&self, images: &Tensor) -> Tensor {
        tch::no_grad(|| self.teacher.net.forward_t(images, false))
    }

    /// Forward and backward on one batch: the teacher view `[B*P, 3, R, R]` and the student
    /// view `[B*P, 3, r, r]`, rows image-major. Steps every `accumulate` batches. Returns the
    /// value of each loss term.
    pub fn batch(&mut self, teacher_view: &Tensor, student_view: &Tensor) -> DistillTerms {
        self.steps.begin();
        let t = self.teacher_embed(teacher_view);
        let s = self.student.net.forward_t(student_view, !self.freeze_bn);
        let terms = self.loss.compute(&s, &t, self.augmentations);
        self.steps.backward(&terms.total);
        terms
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
    use crate::nn::optim::{OptimConfig, OptimKind};
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
        }
    }

    fn adam(lr: f64) -> OptimConfig {
        OptimConfig {
            kind: OptimKind::Adam,
            lr,
            weight_decay: 0.0,
            one_cycle: false,
            div_factor: 25.0,
        }
    }

    fn distill_setup(loss: DistillLoss) -> DistillStep {
        tch::manual_seed(0);
        let teacher = Model::new(ModelMeta::new(net(), None), Device::Cpu);
        let student = Model::new(ModelMeta::new(net(), None), Device::Cpu);
        crate::nn::checkpoint::copy_vars(&teacher.vs, &student.vs).unwrap();
        let optim = Optim::new(&student.vs, &adam(1e-3), 10).unwrap();
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
        let optim = Optim::new(&model.vs, &adam(2e-3), 10).unwrap();
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
        let optim = Optim::new(&no_head.vs, &adam(1e-3), 1).unwrap();
        assert!(TeacherStep::new(no_head, optim, TeacherLoss::Classifier, false, 1).is_err());
    }
}
