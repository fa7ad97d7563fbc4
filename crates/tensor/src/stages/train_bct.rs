//! `train-bct`: backward-compatible training (Shen et al., CVPR 2020) and its baselines.
//!
//! The new model phi_new is trained on T_new with
//! L = L(w_c_new, phi_new; T_new) + lambda * L_influence, where the influence term runs the new
//! features through the **old model's frozen classifier** w_c_old, so the new embedding stays
//! in the space the old gallery lives in ([`Influence`]):
//! - `t_bct = "old"`: cross-entropy through w_c_old on the images of classes it knows (T_old);
//! - `t_bct = "new"` with `new_classes = "synthesised"`: w_c_old is extended with one row per
//!   new class, the mean old-model feature of that class's training images, and every image
//!   contributes;
//! - `t_bct = "new"` with `new_classes = "kd"`: images of old classes as above; images of new
//!   classes contribute T^2 KL(softmax(w_c_old phi_old / T) || softmax(w_c_old phi_new / T)).
//!
//! A new embedding larger than the old one feeds its first K_old components, L2-normalised
//! again, to w_c_old (and the same truncation is what `evaluate` compares with `truncate`).
//!
//! Baselines, as `method`:
//! - `l2`: 1/2 ||phi_new(x) - phi_old(x)||^2 on T_old;
//! - `lwf` (learning without forgetting, as the BCT paper's baseline): the old model's soft
//!   labels are the pseudo-labels of the newly added data. On the images of T_new \ T_old
//!   (classes absent from the old model's `classes.json`) the term is
//!   T^2 KL(softmax(w_c_old phi_old / T) || softmax(w_c_old phi_new / T)) through the same
//!   **frozen** w_c_old, summed over those images and divided by the batch size; images of
//!   old classes add nothing to it. It differs from `kd` only in leaving out the
//!   cross-entropy on T_old.
//!
//! The old model itself never trains: its variables (its classifier included) are frozen and
//! its features computed in eval mode without gradient.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tch::{Kind, Tensor};

use super::train_classifier::{
    finish, init_seed, resume, train, training_items, ClassList, Setup, TrainStats,
};
use crate::data::{Dataset, EvalLoader, EvalView, SplitItem};
use crate::kind::{read_json, Run, StageContext, StageError};
use crate::nn::precision::Autocast;
use crate::nn::{l2n, Classifier, ClassifierConfig, Model};
use asymflow::stages::train_bct::{Compatibility, TrainBctParams};
use asymflow::stages::train_classifier::CLASSES_OUTPUT;

/// How the influence term is computed. See the module docs.
#[derive(Debug)]
pub enum InfluenceKind {
    /// Cross-entropy through the frozen (possibly synthesised-extended) old classifier on the
    /// rows whose label it has.
    Classifier,
    /// Cross-entropy on rows of old classes, distillation from the old model on the others.
    Kd {
        /// Softmax temperature.
        temperature: f64,
    },
    /// L2 regression to the old features on rows of old classes.
    L2,
    /// Distillation of the old classifier's soft labels on the rows of new classes only.
    Lwf {
        /// Softmax temperature.
        temperature: f64,
    },
}

/// The influence term of BCT and its baselines.
#[derive(Debug)]
pub struct Influence {
    /// w_c_old, frozen; with synthesised rows appended for `t_bct = "new"`, `synthesised`.
    pub old_head: Classifier,
    /// Label -> row of `old_head`.
    pub class_of: HashMap<i64, i64>,
    /// K_old: the old embedding size, the components of the new feature the old head sees.
    pub k_old: i64,
    /// The rule.
    pub kind: InfluenceKind,
}

fn rows_tensor(rows: &[i64], device: tch::Device) -> Tensor {
    Tensor::from_slice(rows).to_device(device)
}

/// T^2 KL(softmax(teacher / T) || softmax(student / T)) per row.
fn kd_rows(teacher_logits: &Tensor, student_logits: &Tensor, temperature: f64) -> Tensor {
    let log_p = (teacher_logits / temperature).log_softmax(-1, Kind::Float);
    let log_q = (student_logits / temperature).log_softmax(-1, Kind::Float);
    (log_p.exp() * (log_p - log_q)).sum_dim_intlist(-1, false, Kind::Float)
        * (temperature * temperature)
}

impl Influence {
    /// Whether the term needs the old model's features of the batch.
    pub fn needs_old_features(&self) -> bool {
        !matches!(self.kind, InfluenceKind::Classifier)
    }

    /// The new feature as the old classifier sees it: its first K_old components,
    /// L2-normalised again (unchanged when the sizes agree).
    pub fn truncate(&self, new_feats: &Tensor) -> Tensor {
        if new_feats.size()[1] == self.k_old {
            new_feats.shallow_clone()
        } else {
            l2n(&new_feats.narrow(1, 0, self.k_old))
        }
    }

    /// The distillation term of the rows whose class the old classifier lacks (every row not
    /// in `known_rows`): T^2 KL(softmax(w_c_old old / T) || softmax(w_c_old f / T)), summed
    /// over those rows and divided by the batch size. `None` when every row is known.
    fn new_class_kd(
        &self,
        f: &Tensor,
        old_feats: Option<&Tensor>,
        known_rows: &[i64],
        temperature: f64,
    ) -> Option<Tensor> {
        let n = f.size()[0];
        let unknown: Vec<i64> = (0..n).filter(|i| !known_rows.contains(i)).collect();
        if unknown.is_empty() {
            return None;
        }
        let old = old_feats.expect("distillation needs the old features");
        let rows = rows_tensor(&unknown, f.device());
        let teacher = tch::no_grad(|| self.old_head.logits(&old.index_select(0, &rows), None));
        let student = self.old_head.logits(&f.index_select(0, &rows), None);
        Some(kd_rows(&teacher, &student, temperature).sum(Kind::Float) / n as f64)
    }

    /// The (unweighted) influence loss of one batch: new features `[B, D_new]` (with
    /// gradient), the old model's features `[B, K_old]` where [`Self::needs_old_features`],
    /// and the batch's data set labels. `None` when no row of the batch takes part.
    pub fn loss(
        &self,
        new_feats: &Tensor,
        old_feats: Option<&Tensor>,
        labels: &[i64],
    ) -> Option<Tensor> {
        let device = new_feats.device();
        let f = self.truncate(new_feats);
        let known: Vec<(i64, i64)> = labels
            .iter()
            .enumerate()
            .filter_map(|(i, l)| self.class_of.get(l).map(|&c| (i as i64, c)))
            .collect();
        let known_rows: Vec<i64> = known.iter().map(|k| k.0).collect();
        let known_classes: Vec<i64> = known.iter().map(|k| k.1).collect();
        let ce_known = || -> Option<Tensor> {
            if known.is_empty() {
                return None;
            }
            let rows = rows_tensor(&known_rows, device);
            let y = rows_tensor(&known_classes, device);
            Some(self.old_head.loss(&f.index_select(0, &rows), &y))
        };
        match &self.kind {
            InfluenceKind::Classifier => ce_known(),
            InfluenceKind::Kd { temperature } => {
                let n = labels.len() as f64;
                let ce = ce_known().map(|ce| ce * (known.len() as f64 / n));
                let kd = self.new_class_kd(&f, old_feats, &known_rows, *temperature);
                match (ce, kd) {
                    (Some(ce), Some(kd)) => Some(ce + kd),
                    (ce, kd) => ce.or(kd),
                }
            }
            InfluenceKind::L2 => {
                if known.is_empty() {
                    return None;
                }
                let old = old_feats.expect("l2 needs the old features");
                let rows = rows_tensor(&known_rows, device);
                let diff = f.index_select(0, &rows) - old.index_select(0, &rows);
                Some(
                    (diff.square().sum_dim_intlist(-1, false, Kind::Float) * 0.5).mean(Kind::Float),
                )
            }
            InfluenceKind::Lwf { temperature } => {
                self.new_class_kd(&f, old_feats, &known_rows, *temperature)
            }
        }
    }
}

/// The mean of `features` `[N, D]` over the rows of each label in `wanted` (`[len, D]`, in
/// `wanted`'s order). Labels without any row give a zero row.
pub fn class_means(features: &Tensor, labels: &[i64], wanted: &[i64]) -> Tensor {
    let dim = features.size()[1];
    let rows: Vec<Tensor> = wanted
        .iter()
        .map(|w| {
            let idx: Vec<i64> = labels
                .iter()
                .enumerate()
                .filter(|(_, l)| *l == w)
                .map(|(i, _)| i as i64)
                .collect();
            if idx.is_empty() {
                Tensor::zeros([dim], (Kind::Float, features.device()))
            } else {
                features
                    .index_select(0, &rows_tensor(&idx, features.device()))
                    .mean_dim(0, false, Kind::Float)
            }
        })
        .collect();
    if rows.is_empty() {
        Tensor::zeros([0, dim], (Kind::Float, features.device()))
    } else {
        Tensor::stack(&rows, 0)
    }
}

/// w_c_old with one row per new class appended (`means` `[new, K_old]`); a softmax head's
/// bias gets 0 for the new rows. The result carries no gradient.
pub fn synthesised_head(old: &Classifier, means: &Tensor) -> Classifier {
    tch::no_grad(|| {
        let cfg = old.config();
        let weight = Tensor::cat(
            &[old.weight.detach(), means.detach().to_kind(Kind::Float)],
            0,
        );
        let added = means.size()[0];
        let bias = old.bias.as_ref().map(|b| {
            Tensor::cat(
                &[
                    b.detach(),
                    Tensor::zeros([added], (Kind::Float, b.device())),
                ],
                0,
            )
        });
        let cfg = ClassifierConfig {
            classes: cfg.classes + added,
            ..cfg.clone()
        };
        Classifier::from_tensors(&cfg, weight, bias)
    })
}

/// The `train-bct` kind.
pub(crate) struct TrainBct;

/// The old model, frozen, with its class list.
struct OldModel {
    model: Model,
    head: Classifier,
    classes: ClassList,
}

fn load_old(ctx: &StageContext<'_>) -> Result<OldModel, StageError> {
    let input = ctx.input("old")?;
    let mut model = Model::load(
        input.output(crate::nn::checkpoint::WEIGHTS_FILE)?,
        input.output(crate::nn::checkpoint::META_FILE)?,
        crate::worker::torch_device(ctx.device()),
    )?;
    model.vs.freeze();
    let classes: ClassList = read_json(input.output(CLASSES_OUTPUT)?)?;
    let head = match model.classifier.take() {
        Some(h) => h,
        None => {
            return Err(StageError::Input {
                slot: "old".into(),
                message: format!(
                    "stage `{}` saved no classifier; BCT needs the old model's classifier (train it with train-classifier)",
                    input.stage
                ),
            })
        }
    };
    if head.config().classes != classes.labels.len() as i64 {
        return Err(StageError::Input {
            slot: "old".into(),
            message: format!(
                "the classifier has {} rows but classes.json lists {} labels",
                head.config().classes,
                classes.labels.len()
            ),
        });
    }
    Ok(OldModel {
        model,
        head,
        classes,
    })
}

/// The old model's eval-mode features of `items` at `resolution`, with their labels. The view
/// is the whole image, as the training loader shows it before augmentation, because these
/// features stand in for classifier rows that the new model's training features meet.
fn old_features(
    ctx: &StageContext<'_>,
    old: &Model,
    dataset: std::sync::Arc<dyn crate::data::Dataset>,
    items: &[crate::data::SplitItem],
    resolution: crate::data::Resolution,
) -> Result<(Tensor, Vec<i64>), StageError> {
    let loader = EvalLoader::new(dataset, items, resolution, 256).with_view(EvalView::Whole);
    let mut feats = Vec::new();
    let mut labels = Vec::new();
    for batch in loader.iter() {
        ctx.check_cancelled()?;
        let (images, l) = batch?;
        feats.push(tch::no_grad(|| {
            old.net.forward_t(
                &images.to_device(crate::worker::torch_device(ctx.device())),
                false,
            )
        }));
        labels.extend(l);
    }
    Ok((Tensor::cat(&feats, 0), labels))
}

impl Run for TrainBct {
    fn run(&self, ctx: &mut StageContext<'_>) -> Result<(), StageError> {
        let p = TrainBctParams::from_params(ctx.params())?;
        let mut bct = Bct::read(ctx, &p)?;
        let device = crate::worker::torch_device(ctx.device());
        let model = match resume(ctx, &mut bct.setup, &bct.classes, device)? {
            Some(model) => model,
            None => bct.setup.model(bct.classes.labels.len(), device),
        };
        let influence = bct.influence(ctx)?;
        let loader = bct.setup.loader(bct.dataset.clone(), &bct.items)?;
        if let Some(note) = loader.capped_epoch_note() {
            ctx.log(note);
        }
        let old_net = &bct.old.model.net;
        let (precision, lambda) = (bct.setup.precision, bct.lambda);
        let mut extra = |images: &Tensor, emb: &Tensor, labels: &[i64]| -> Option<Tensor> {
            let old_feats = influence.needs_old_features().then(|| {
                precision.fp32(&tch::no_grad(|| {
                    precision.run(|| old_net.forward_t(images, false))
                }))
            });
            influence
                .loss(emb, old_feats.as_ref(), labels)
                .map(|l| l * lambda)
        };
        let stats = train(ctx, &bct.setup, &model, &loader, &bct.classes, &mut extra)?;
        bct.finish(ctx, &model, &stats)
    }
}

/// A BCT run's inputs, read and checked: the training settings and partition, the old model,
/// the rule, and how the training classes divide between the old classifier's and new ones.
struct Bct {
    setup: Setup,
    items: Vec<SplitItem>,
    dataset: Arc<dyn Dataset>,
    classes: ClassList,
    old: OldModel,
    /// K_old: the old embedding size.
    k_old: i64,
    compat: Compatibility,
    lambda: f64,
    temperature: f64,
    /// The old classifier's labels.
    old_set: HashSet<i64>,
    /// The training labels the old classifier lacks, in class-list order.
    new_labels: Vec<i64>,
    /// The training classes the old classifier has.
    shared: usize,
}

impl Bct {
    /// Reads the settings, the partition and the old model, checks that they fit together,
    /// and logs the plan.
    fn read(ctx: &mut StageContext<'_>, p: &TrainBctParams) -> Result<Bct, StageError> {
        let setup = Setup::new(&p.classifier, init_seed(ctx.params()))?;
        super::training::note_precision(ctx, setup.precision);
        let (items, dataset, classes) = training_items(ctx, &p.classifier.partition)?;
        let old = load_old(ctx)?;
        let k_old = old.head.config().dim;
        let compat = compatibility(p, &setup, k_old)?;
        let old_set: HashSet<i64> = old.classes.labels.iter().copied().collect();
        let new_labels: Vec<i64> = classes
            .labels
            .iter()
            .copied()
            .filter(|l| !old_set.contains(l))
            .collect();
        let shared = classes.labels.len() - new_labels.len();
        let bct = Bct {
            setup,
            items,
            dataset,
            classes,
            old,
            k_old,
            compat,
            lambda: p.lambda,
            temperature: p.temperature,
            old_set,
            new_labels,
            shared,
        };
        ctx.log(format!(
            "{}: {} images, {} classes ({} known to the old classifier, {} new), old {k_old}-d, new {}-d, lambda {}",
            compat.method(),
            bct.items.len(),
            bct.classes.labels.len(),
            bct.shared,
            bct.new_labels.len(),
            bct.setup.net.embed_dim,
            bct.lambda
        ));
        bct.check_classes()?;
        Ok(bct)
    }

    /// Refuses a partition on which the rule's term has nothing to work on.
    fn check_classes(&self) -> Result<(), StageError> {
        if self.shared == 0 && self.compat.needs_old_classes() {
            return Err(StageError::bad_param(
                "partition",
                "no training class is known to the old classifier, so T_old is empty; train on a superset of the old model's classes",
            ));
        }
        if self.compat == Compatibility::Lwf && self.new_labels.is_empty() {
            return Err(StageError::bad_param(
                "partition",
                "every training class is known to the old classifier, so T_new \\ T_old is empty and the lwf term is always 0; train on classes the old model was not trained on",
            ));
        }
        Ok(())
    }

    /// The influence term of the rule, through the old classifier (extended with synthesised
    /// rows for `t_bct = "new"`, `new_classes = "synthesised"`).
    fn influence(&self, ctx: &mut StageContext<'_>) -> Result<Influence, StageError> {
        let mut class_of = self.old.classes.index();
        let temperature = self.temperature;
        let kind = match self.compat {
            Compatibility::BctNewKd => InfluenceKind::Kd { temperature },
            Compatibility::BctOld | Compatibility::BctNewSynthesised => InfluenceKind::Classifier,
            Compatibility::L2 => InfluenceKind::L2,
            Compatibility::Lwf => InfluenceKind::Lwf { temperature },
        };
        let mut old_head = Classifier::from_tensors(
            self.old.head.config(),
            self.old.head.weight.shallow_clone(),
            self.old.head.bias.as_ref().map(Tensor::shallow_clone),
        );
        if self.compat == Compatibility::BctNewSynthesised && !self.new_labels.is_empty() {
            old_head = self.synthesise(ctx, &mut class_of)?;
        }
        Ok(Influence {
            old_head,
            class_of,
            k_old: self.k_old,
            kind,
        })
    }

    /// The old classifier with a row per new class, the old model's mean feature of that
    /// class's training images ([`synthesised_head`]); the new rows are added to `class_of`.
    fn synthesise(
        &self,
        ctx: &mut StageContext<'_>,
        class_of: &mut HashMap<i64, i64>,
    ) -> Result<Classifier, StageError> {
        let new_items: Vec<_> = self
            .items
            .iter()
            .filter(|i| !self.old_set.contains(&i.label))
            .cloned()
            .collect();
        let (feats, labels) = old_features(
            ctx,
            &self.old.model,
            self.dataset.clone(),
            &new_items,
            self.setup.resolution,
        )?;
        let means = class_means(&feats, &labels, &self.new_labels);
        let head = synthesised_head(&self.old.head, &means);
        let base = self.old.classes.labels.len() as i64;
        for (i, l) in self.new_labels.iter().enumerate() {
            class_of.insert(*l, base + i as i64);
        }
        ctx.log(format!(
            "synthesised {} classifier rows from old-model class means",
            self.new_labels.len()
        ));
        Ok(head)
    }

    /// Reports the influence term and the classes, then what every classifier stage reports
    /// and writes ([`finish`]).
    fn finish(
        &self,
        ctx: &mut StageContext<'_>,
        model: &Model,
        stats: &TrainStats,
    ) -> Result<(), StageError> {
        let lambda = self.lambda;
        ctx.metric(
            "influence_loss",
            if lambda != 0.0 {
                stats.extra / lambda
            } else {
                0.0
            },
        );
        ctx.metric("old_classes", self.shared as f64);
        ctx.metric("new_classes", self.new_labels.len() as f64);
        finish(ctx, &self.setup, model, &self.classes, stats)
    }
}

/// The rule `method`, `t_bct` and `new_classes` name, after checking that the new embedding
/// is at least the old one's size and that the temperature is positive.
fn compatibility(
    p: &TrainBctParams,
    setup: &Setup,
    k_old: i64,
) -> Result<Compatibility, StageError> {
    if setup.net.embed_dim < k_old {
        return Err(StageError::bad_param(
            "embed_dim",
            format!(
                "{} is smaller than the old model's {k_old}; the new embedding must be at least as large (its first {k_old} components feed the old classifier)",
                setup.net.embed_dim
            ),
        ));
    }
    let temperature = p.temperature;
    if temperature.is_nan() || temperature <= 0.0 {
        return Err(StageError::bad_param(
            "temperature",
            format!("{temperature}: must be positive"),
        ));
    }
    p.compatibility.ok_or_else(|| {
        StageError::bad_param(
            "method",
            "method, t_bct and new_classes: use bct with t_bct old or new (new_classes synthesised or kd), l2 or lwf",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::{
        Arch, HeadKind, ModelMeta, NetConfig, Optim, OptimConfig, OptimKind, Pool, ScheduleConfig,
        Stem,
    };
    use tch::Device;

    fn head(kind: HeadKind, classes: i64, dim: i64) -> Classifier {
        let cfg = ClassifierConfig {
            kind,
            classes,
            dim,
            scale: 4.0,
            margin: 0.0,
        };
        let weight = Tensor::randn([classes, dim], (Kind::Float, Device::Cpu));
        let bias = (kind == HeadKind::Softmax)
            .then(|| Tensor::zeros([classes], (Kind::Float, Device::Cpu)));
        Classifier::from_tensors(&cfg, weight, bias)
    }

    fn tiny(dim: i64, classes: i64) -> Model {
        let net = NetConfig {
            arch: Arch::Resnet18,
            width: 8,
            stem: Stem::Small,
            pool: Pool::Avg,
            embed_dim: dim,
            gem_p: 3.0,
            pool_l2n: false,
            embed_relu: false,
        };
        let cfg = ClassifierConfig {
            kind: HeadKind::NormSoftmax,
            classes,
            dim,
            scale: 4.0,
            margin: 0.0,
        };
        Model::new(ModelMeta::new(net, Some(cfg)), Device::Cpu)
    }

    #[test]
    fn synthesised_weights_equal_the_class_means() {
        let feats = Tensor::from_slice(&[1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0, 3.0, 3.0]).view([4, 2]);
        let means = class_means(&feats, &[5, 5, 7, 7], &[7, 5]);
        let expected = Tensor::from_slice(&[2.0f32, 2.0, 0.5, 0.5]).view([2, 2]);
        assert!(means.allclose(&expected, 1e-6, 1e-6, false));
        let old = head(HeadKind::Softmax, 3, 2);
        let extended = synthesised_head(&old, &means);
        assert_eq!(extended.config().classes, 5);
        assert!(
            extended.weight.narrow(0, 0, 3).equal(&old.weight),
            "old rows kept as they are"
        );
        assert!(extended
            .weight
            .narrow(0, 3, 2)
            .allclose(&expected, 1e-6, 1e-6, false));
        assert_eq!(extended.bias.as_ref().unwrap().size(), [5]);
    }

    #[test]
    fn kd_is_zero_when_new_and_old_features_coincide() {
        tch::manual_seed(1);
        let feats = l2n(&Tensor::randn([6, 4], (Kind::Float, Device::Cpu)));
        let influence = Influence {
            old_head: head(HeadKind::NormSoftmax, 3, 4),
            class_of: HashMap::from([(10, 0)]),
            k_old: 4,
            kind: InfluenceKind::Kd { temperature: 2.0 },
        };
        // Labels 11, 12 are new classes: their rows take the kd term; 10 takes cross-entropy.
        let labels = [11, 12, 11, 12, 11, 12];
        let kd = influence.loss(&feats, Some(&feats), &labels).unwrap();
        assert!(
            kd.double_value(&[]).abs() < 1e-6,
            "kd {}",
            kd.double_value(&[])
        );
        let other = l2n(&Tensor::randn([6, 4], (Kind::Float, Device::Cpu)));
        assert!(
            influence
                .loss(&other, Some(&feats), &labels)
                .unwrap()
                .double_value(&[])
                > 1e-4
        );
        let with_known = influence
            .loss(&feats, Some(&feats), &[10, 11, 11, 12, 12, 12])
            .unwrap();
        assert!(
            with_known.double_value(&[]) > 0.0,
            "the old-class row still takes cross-entropy"
        );
    }

    fn lwf(old_head: Classifier) -> Influence {
        Influence {
            old_head,
            // The old model knew labels 10 and 13; 11 and 12 are new.
            class_of: HashMap::from([(10, 0), (13, 1)]),
            k_old: 4,
            kind: InfluenceKind::Lwf { temperature: 2.0 },
        }
    }

    #[test]
    fn lwf_is_zero_when_new_and_old_features_coincide() {
        tch::manual_seed(4);
        let influence = lwf(head(HeadKind::NormSoftmax, 2, 4));
        let feats = l2n(&Tensor::randn([6, 4], (Kind::Float, Device::Cpu)));
        let labels = [11, 12, 10, 11, 13, 12];
        let same = influence
            .loss(&feats, Some(&feats), &labels)
            .unwrap()
            .double_value(&[]);
        assert!(same.abs() < 1e-6, "lwf {same}");
        let other = l2n(&Tensor::randn([6, 4], (Kind::Float, Device::Cpu)));
        let differs = influence
            .loss(&other, Some(&feats), &labels)
            .unwrap()
            .double_value(&[]);
        assert!(differs > 1e-4, "lwf {differs}");
    }

    #[test]
    fn lwf_takes_only_the_images_of_new_classes() {
        tch::manual_seed(5);
        let old_head = head(HeadKind::Softmax, 2, 4);
        let influence = lwf(Classifier::from_tensors(
            old_head.config(),
            old_head.weight.shallow_clone(),
            old_head.bias.as_ref().map(Tensor::shallow_clone),
        ));
        let new = l2n(&Tensor::randn([5, 4], (Kind::Float, Device::Cpu)));
        let old = l2n(&Tensor::randn([5, 4], (Kind::Float, Device::Cpu)));
        assert!(
            influence
                .loss(&new, Some(&old), &[10, 13, 10, 13, 10])
                .is_none(),
            "a batch of old-class images only: no term"
        );

        // Rows 1 and 3 are new classes: the term is their KL summed, over the batch size.
        let labels = [10, 11, 13, 12, 10];
        let got = influence
            .loss(&new, Some(&old), &labels)
            .unwrap()
            .double_value(&[]);
        let rows = Tensor::from_slice(&[1i64, 3]);
        let t = 2.0;
        let log_p =
            (old_head.logits(&old.index_select(0, &rows), None) / t).log_softmax(-1, Kind::Float);
        let log_q =
            (old_head.logits(&new.index_select(0, &rows), None) / t).log_softmax(-1, Kind::Float);
        let expected = (log_p.exp() * (log_p - log_q))
            .sum(Kind::Float)
            .double_value(&[])
            * t
            * t
            / 5.0;
        assert!(
            got > 1e-4 && (got - expected).abs() < 1e-6,
            "{got} vs {expected}"
        );

        // Changing the old-class rows' features leaves it as it is.
        let moved = new.copy();
        moved
            .narrow(0, 0, 1)
            .copy_(&l2n(&Tensor::randn([1, 4], (Kind::Float, Device::Cpu))));
        moved
            .narrow(0, 4, 1)
            .copy_(&l2n(&Tensor::randn([1, 4], (Kind::Float, Device::Cpu))));
        let again = influence
            .loss(&moved, Some(&old), &labels)
            .unwrap()
            .double_value(&[]);
        assert!((again - got).abs() < 1e-7, "{again} vs {got}");
    }

    #[test]
    fn a_larger_new_feature_feeds_its_first_k_old_components() {
        tch::manual_seed(2);
        let old_head = head(HeadKind::Softmax, 3, 2);
        let new_feats = l2n(&Tensor::randn([4, 5], (Kind::Float, Device::Cpu)));
        let labels = [7, 8, 9, 7];
        let y = Tensor::from_slice(&[0i64, 1, 2, 0]);
        let expected = old_head
            .loss(&l2n(&new_feats.narrow(1, 0, 2)), &y)
            .double_value(&[]);
        let influence = Influence {
            old_head,
            class_of: HashMap::from([(7, 0), (8, 1), (9, 2)]),
            k_old: 2,
            kind: InfluenceKind::Classifier,
        };
        assert_eq!(influence.truncate(&new_feats).size(), [4, 2]);
        let got = influence
            .loss(&new_feats, None, &labels)
            .unwrap()
            .double_value(&[]);
        assert!((got - expected).abs() < 1e-6);
        assert!(
            influence.loss(&new_feats, None, &[1, 2, 3, 4]).is_none(),
            "no known class: no term"
        );
    }

    #[test]
    fn the_old_model_never_changes_and_gradients_reach_the_new_network() {
        tch::manual_seed(3);
        let mut old = tiny(4, 3);
        old.vs.freeze();
        let old_before: Vec<(String, Tensor)> = old
            .vs
            .variables()
            .into_iter()
            .map(|(k, v)| (k, v.detach().copy()))
            .collect();
        let old_head = old.classifier.take().unwrap();
        let new = tiny(6, 4);
        for kind in [
            InfluenceKind::Classifier,
            InfluenceKind::Kd { temperature: 2.0 },
            InfluenceKind::L2,
            InfluenceKind::Lwf { temperature: 2.0 },
        ] {
            let influence = Influence {
                old_head: Classifier::from_tensors(
                    old_head.config(),
                    old_head.weight.shallow_clone(),
                    None,
                ),
                class_of: HashMap::from([(0, 0), (1, 1), (2, 2)]),
                k_old: 4,
                kind,
            };
            let cfg = OptimConfig {
                kind: OptimKind::Adam,
                lr: 1e-2,
                weight_decay: 0.0,
                schedule: ScheduleConfig::constant(),
            };
            let mut optim = Optim::new(&new.vs, &cfg, 1, 3).unwrap();
            let images = Tensor::randn([4, 3, 8, 8], (Kind::Float, Device::Cpu));
            let labels = [0i64, 1, 2, 3];
            for _ in 0..3 {
                optim.zero_grad();
                let emb = new.net.forward_t(&images, true);
                let old_feats = tch::no_grad(|| old.net.forward_t(&images, false));
                let loss = influence.loss(&emb, Some(&old_feats), &labels).unwrap();
                loss.backward();
                let grads: f64 = new
                    .vs
                    .trainable_variables()
                    .iter()
                    .filter(|v| v.grad().defined())
                    .map(|v| v.grad().abs().sum(Kind::Float).double_value(&[]))
                    .sum();
                assert!(
                    grads > 0.0,
                    "{:?}: no gradient reached the new network",
                    influence.kind
                );
                assert!(
                    !old_head.weight.grad().defined(),
                    "the old classifier got a gradient"
                );
                optim.step();
            }
        }
        for (name, before) in &old_before {
            let now = old
                .vs
                .variables()
                .get(name)
                .map(|t| t.detach())
                .unwrap_or_else(|| old_head.weight.detach());
            assert!(now.equal(before), "{name} changed");
        }
        assert!(old_head.weight.equal(
            &old_before
                .iter()
                .find(|(n, _)| n == "classifier.weight")
                .unwrap()
                .1
        ));
    }
}
