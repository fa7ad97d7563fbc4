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

use super::outputs;
use super::train_classifier::{ClassifierParams, CLASSIFIER_METRICS, CLASSIFIER_PARAMS};
use crate::kind::{
    Artifact, InputDecl, OutputDecl, ParamDecl, ParamType, Params, Range, Resource, Stage,
    StageError,
};

/// The `train-bct` kind.
pub struct TrainBct;

/// What keeps the new model compatible with the old one: `method`, and for `bct` its
/// `t_bct` and `new_classes` (see the module docs), read once into one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compatibility {
    /// BCT's influence loss on the old training classes (`t_bct = "old"`).
    BctOld,
    /// BCT on all new training data, the old classifier extended by synthesised rows.
    BctNewSynthesised,
    /// BCT on all new training data, new classes by distillation (`new_classes = "kd"`).
    BctNewKd,
    /// The L2 baseline.
    L2,
    /// The learning-without-forgetting baseline.
    Lwf,
}

impl Compatibility {
    /// The spellings of `method`, `t_bct` and `new_classes`.
    pub const METHODS: &'static [&'static str] = &["bct", "l2", "lwf"];
    pub(crate) const T_BCT: &'static [&'static str] = &["old", "new"];
    pub(crate) const NEW_CLASSES: &'static [&'static str] = &["synthesised", "kd"];

    /// The stage's three parameters as one value; `None` for a spelling not declared.
    pub fn from_params(params: &Params) -> Result<Option<Compatibility>, crate::kind::StageError> {
        Ok(
            match (
                params.str("method")?,
                params.str("t_bct")?,
                params.str("new_classes")?,
            ) {
                ("bct", "old", _) => Some(Compatibility::BctOld),
                ("bct", "new", "synthesised") => Some(Compatibility::BctNewSynthesised),
                ("bct", "new", "kd") => Some(Compatibility::BctNewKd),
                ("l2", _, _) => Some(Compatibility::L2),
                ("lwf", _, _) => Some(Compatibility::Lwf),
                _ => None,
            },
        )
    }

    /// The `method` spelling.
    pub fn method(self) -> &'static str {
        match self {
            Compatibility::BctOld | Compatibility::BctNewSynthesised | Compatibility::BctNewKd => {
                "bct"
            }
            Compatibility::L2 => "l2",
            Compatibility::Lwf => "lwf",
        }
    }

    /// Whether training needs classes the old classifier knows (T_old not empty): every
    /// method but BCT on T_new and LwF, whose terms also cover new classes.
    pub fn needs_old_classes(self) -> bool {
        matches!(self, Compatibility::BctOld | Compatibility::L2)
    }
}

/// The parameters of `train-bct`, read once ([`crate::kind::typed`]); the runner takes this,
/// never a name.
#[derive(Debug, Clone)]
pub struct TrainBctParams {
    /// Everything `train-classifier` takes.
    pub classifier: ClassifierParams,
    /// `method`, `t_bct` and `new_classes` as one value; `None` for a spelling not declared
    /// (the runner says how to fix it).
    pub compatibility: Option<Compatibility>,
    /// `lambda`.
    pub lambda: f64,
    /// `temperature`.
    pub temperature: f64,
}

impl TrainBctParams {
    /// Reads every parameter of the kind.
    pub fn from_params(params: &Params) -> Result<Self, StageError> {
        Ok(TrainBctParams {
            classifier: ClassifierParams::from_params(params)?,
            compatibility: Compatibility::from_params(params)?,
            lambda: params.float("lambda")?,
            temperature: params.float("temperature")?,
        })
    }
}

const OWN: &[ParamDecl] = &[
    ParamDecl::optional("method", ParamType::Choice(Compatibility::METHODS), "\"bct\"",
        "bct: influence loss through the frozen old classifier; l2 / lwf: the baselines"),
    ParamDecl::optional("t_bct", ParamType::Choice(Compatibility::T_BCT), "\"old\"",
        "bct: images of the influence loss: the old training classes, or all new training data"),
    ParamDecl::optional("new_classes", ParamType::Choice(Compatibility::NEW_CLASSES), "\"synthesised\"",
        "bct with t_bct = \"new\": classes the old classifier lacks get synthesised weights (mean old feature) or distillation"),
    ParamDecl::optional("lambda", ParamType::Float, "1.0", "weight of the influence (or baseline) term"),
    ParamDecl::optional("temperature", ParamType::Float, "2.0", "softmax temperature of kd and lwf")
        .within(Range::above(0.0)),
];

const PARAMS: &[ParamDecl] = crate::param_list!(CLASSIFIER_PARAMS, OWN);

const INPUTS: &[InputDecl] = &[
    InputDecl {
        name: "split",
        required: true,
        accepts: &[Artifact::Split],
        doc: "the split stage",
    },
    InputDecl {
        name: "old",
        required: true,
        accepts: &[Artifact::Classifier],
        doc:
            "the old model: a train-classifier or train-bct stage (checkpoint with its classifier)",
    },
    super::training::resume_input(
        "continue from this train-bct result (same network and classes, fewer epochs) instead \
         of a fresh start: ASHA connects it to promote a trial; keyed only when connected",
    ),
];

impl Stage for TrainBct {
    fn kind(&self) -> &'static str {
        "train-bct"
    }

    fn impl_version(&self) -> u32 {
        // 2: `train_seconds` is telemetry, no longer in `metrics.json`.
        // 3: `precision` (the key gains a parameter; fp32 results are bit-identical).
        // 4: `lwf` distils through the frozen w_c_old on the images of new classes only (was a
        //    trainable copy of w_c_old on every image).
        // 5: channels-last backbone (nn/resnet.rs): faster; the last bits of every result move.
        5
    }

    fn summary(&self) -> &'static str {
        "trains a new model compatible with an old one (BCT influence loss; l2 and lwf baselines)"
    }

    fn params(&self) -> &'static [ParamDecl] {
        PARAMS
    }

    fn inputs(&self) -> &'static [InputDecl] {
        INPUTS
    }

    fn outputs(&self) -> &'static [OutputDecl] {
        &[
            outputs::MODEL_WEIGHTS,
            outputs::MODEL_META,
            outputs::CLASSES,
            outputs::LOSSES,
        ]
    }
    fn records(&self, _params: &Params) -> Option<Vec<String>> {
        let own = ["influence_loss", "old_classes", "new_classes"];
        Some(
            CLASSIFIER_METRICS
                .iter()
                .chain(&own)
                .map(|n| n.to_string())
                .collect(),
        )
    }

    fn resource(&self, _params: &Params) -> Resource {
        Resource::Device
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::typed::assert_reads_match_declaration;
    use serde_json::json;

    #[test]
    fn the_struct_reads_what_the_kind_declares() {
        assert_reads_match_declaration(&TrainBct, json!({}), TrainBctParams::from_params);
    }

    fn compat(method: &str, t_bct: &str, new_classes: &str) -> Option<Compatibility> {
        let mut p = Params::default();
        p.0.insert("method".into(), json!(method));
        p.0.insert("t_bct".into(), json!(t_bct));
        p.0.insert("new_classes".into(), json!(new_classes));
        Compatibility::from_params(&p).unwrap()
    }

    #[test]
    fn the_three_parameters_read_as_one_compatibility() {
        use Compatibility::*;
        assert_eq!(
            compat("bct", "old", "kd"),
            Some(BctOld),
            "new_classes is for t_bct = new"
        );
        assert_eq!(compat("bct", "new", "synthesised"), Some(BctNewSynthesised));
        assert_eq!(compat("bct", "new", "kd"), Some(BctNewKd));
        assert_eq!(
            compat("l2", "new", "kd"),
            Some(L2),
            "the baselines ignore both"
        );
        assert_eq!(compat("lwf", "old", "synthesised"), Some(Lwf));
        assert_eq!(compat("bct", "newer", "kd"), None);
        for &method in Compatibility::METHODS {
            for &t_bct in Compatibility::T_BCT {
                for &rule in Compatibility::NEW_CLASSES {
                    let c = compat(method, t_bct, rule).expect("every declared spelling reads");
                    assert_eq!(c.method(), method);
                }
            }
        }
        assert!(BctOld.needs_old_classes() && L2.needs_old_classes());
        assert!(!BctNewSynthesised.needs_old_classes() && !BctNewKd.needs_old_classes());
        assert!(!Lwf.needs_old_classes());
    }
}
