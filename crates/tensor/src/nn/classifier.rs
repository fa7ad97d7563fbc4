//! Classification heads over embeddings: softmax, normalised softmax (scale s) and cosine
//! margin (CosFace: scale s, margin m).
//!
//! Used by the `norm-softmax` teacher loss and by BCT (whose influence loss runs new features
//! through the old model's frozen head). Variables: `weight` `[classes, dim]` and, for plain
//! softmax only, `bias` `[classes]`, under the path given (`classifier.*` in a checkpoint).

use serde::{Deserialize, Serialize};
use tch::nn;
use tch::{Kind, Tensor};

use super::gem::l2n;

/// Which head.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HeadKind {
    /// `logits = W f + b`.
    Softmax,
    /// `logits = s cos(W_c, f)`.
    NormSoftmax,
    /// `logits = s (cos(W_c, f) - m [c = y])` while training with labels.
    Cosface,
}

impl HeadKind {
    /// Parses the pipeline spelling (`softmax`, `norm-softmax`, `cosface`).
    pub fn parse(name: &str) -> Option<HeadKind> {
        match name {
            "softmax" => Some(HeadKind::Softmax),
            "norm-softmax" => Some(HeadKind::NormSoftmax),
            "cosface" => Some(HeadKind::Cosface),
            _ => None,
        }
    }
}

/// A head's shape and hyper-parameters, stored in `model.json` next to its weights.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassifierConfig {
    /// Which head.
    pub kind: HeadKind,
    /// Number of classes.
    pub classes: i64,
    /// Input feature size.
    pub dim: i64,
    /// Scale s of the cosine heads (ignored by softmax).
    pub scale: f64,
    /// Margin m of CosFace (ignored by the others).
    pub margin: f64,
}

/// A classification head. See the module docs.
#[derive(Debug)]
pub struct Classifier {
    cfg: ClassifierConfig,
    /// `[classes, dim]`.
    pub weight: Tensor,
    /// `[classes]`, plain softmax only.
    pub bias: Option<Tensor>,
}

impl Classifier {
    /// Creates the variables under `path` with `nn.Linear`'s initialisation.
    pub fn new(path: &nn::Path, cfg: &ClassifierConfig) -> Self {
        let bound = 1.0 / (cfg.dim as f64).sqrt();
        let weight = path.var(
            "weight",
            &[cfg.classes, cfg.dim],
            nn::Init::Uniform {
                lo: -bound,
                up: bound,
            },
        );
        let bias = (cfg.kind == HeadKind::Softmax).then(|| {
            path.var(
                "bias",
                &[cfg.classes],
                nn::Init::Uniform {
                    lo: -bound,
                    up: bound,
                },
            )
        });
        Classifier {
            cfg: cfg.clone(),
            weight,
            bias,
        }
    }

    /// A head around given tensors (e.g. an old head with synthesised rows appended).
    pub fn from_tensors(cfg: &ClassifierConfig, weight: Tensor, bias: Option<Tensor>) -> Self {
        Classifier {
            cfg: cfg.clone(),
            weight,
            bias,
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &ClassifierConfig {
        &self.cfg
    }

    /// Logits `[B, classes]`. With `labels`, CosFace subtracts its margin from the true class;
    /// without (inference), no margin is applied.
    pub fn logits(&self, feats: &Tensor, labels: Option<&Tensor>) -> Tensor {
        match self.cfg.kind {
            HeadKind::Softmax => feats.linear(&self.weight, self.bias.as_ref()),
            HeadKind::NormSoftmax | HeadKind::Cosface => {
                let cos = l2n(feats).matmul(&l2n(&self.weight).tr());
                let cos = match (self.cfg.kind, labels) {
                    (HeadKind::Cosface, Some(y)) => {
                        let onehot = y.one_hot(self.cfg.classes).to_kind(Kind::Float);
                        cos - onehot * self.cfg.margin
                    }
                    _ => cos,
                };
                cos * self.cfg.scale
            }
        }
    }

    /// Mean cross-entropy of the logits against `labels` (i64 `[B]`).
    pub fn loss(&self, feats: &Tensor, labels: &Tensor) -> Tensor {
        self.logits(feats, Some(labels))
            .cross_entropy_for_logits(labels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(kind: HeadKind, weight: &[f32], bias: Option<&[f32]>) -> Classifier {
        let cfg = ClassifierConfig {
            kind,
            classes: 2,
            dim: 2,
            scale: 2.0,
            margin: 0.5,
        };
        Classifier::from_tensors(
            &cfg,
            Tensor::from_slice(weight).view([2, 2]),
            bias.map(Tensor::from_slice),
        )
    }

    #[test]
    fn each_head_matches_a_hand_computed_loss() {
        let feats = Tensor::from_slice(&[1.0f32, 0.0]).view([1, 2]);
        let y = Tensor::from_slice(&[0i64]);
        // softmax: logits [1 + 0.5, 0 - 0.5] = [1.5, -0.5]; CE = log(1 + e^-2).
        let sm = head(HeadKind::Softmax, &[1.0, 0.0, 0.0, 1.0], Some(&[0.5, -0.5]));
        let expect = (1.0f64 + (-2.0f64).exp()).ln();
        assert!((sm.loss(&feats, &y).double_value(&[]) - expect).abs() < 1e-5);
        // normalised softmax, weights of any length: cos = [1, 0], logits = [2, 0].
        let ns = head(HeadKind::NormSoftmax, &[3.0, 0.0, 0.0, 5.0], None);
        let expect = (1.0f64 + (-2.0f64).exp()).ln();
        assert!((ns.loss(&feats, &y).double_value(&[]) - expect).abs() < 1e-5);
        // CosFace: logits = 2 [1 - 0.5, 0] = [1, 0]; inference logits carry no margin.
        let cf = head(HeadKind::Cosface, &[3.0, 0.0, 0.0, 5.0], None);
        let expect = (1.0f64 + (-1.0f64).exp()).ln();
        assert!((cf.loss(&feats, &y).double_value(&[]) - expect).abs() < 1e-5);
        assert!((cf.logits(&feats, None).double_value(&[0, 0]) - 2.0).abs() < 1e-5);
    }

    #[test]
    fn heads_create_named_variables() {
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let cfg = ClassifierConfig {
            kind: HeadKind::Softmax,
            classes: 5,
            dim: 3,
            scale: 1.0,
            margin: 0.0,
        };
        Classifier::new(&(vs.root() / "classifier"), &cfg);
        let vars = vs.variables();
        assert_eq!(vars["classifier.weight"].size(), [5, 3]);
        assert_eq!(vars["classifier.bias"].size(), [5]);
        assert_eq!(serde_json::to_value(&cfg).unwrap()["kind"], "softmax");
        assert_eq!(HeadKind::parse("norm-softmax"), Some(HeadKind::NormSoftmax));
    }
}
