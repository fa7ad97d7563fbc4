//! What the network stages (`train-teacher`, `distill`, `embed`) share besides the parameter
//! groups of [`super::groups`]: the single shared parameters (`accumulate`, GeM's learning
//! rate; `precision` is [`super::groups::precision`]'s, re-exported here), opening the split, fingerprinting weight files, and the per-epoch loss
//! curve written as `loss.json`, with the bookkeeping of one epoch ([`Epoch`]: the batches'
//! means, a non-finite loss refused) that `train-teacher` and `distill` share.
//!
//! `loss.json` is a keyed output: its digest enters every consumer's key, so it holds only what
//! the key determines (losses, terms, learning rates). An epoch's wall-clock time is returned
//! to the caller for the log ([`EpochEnd::seconds`]), never written into the curve: a
//! bit-identical retrain must leave everything downstream cached, and two caches that trained
//! the same pipeline must agree on every key.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::data::{Dataset, SplitItem, SplitManifest};
use crate::kind::{
    Artifact, FingerprintEnv, InputArtifact, InputDecl, ParamDecl, ParamType, Params, StageContext,
    StageError,
};

/// The loss-curve output of the training stages.
pub const LOSS_OUTPUT: &str = super::outputs::LOSSES.file;

/// The optional input a training run continues from instead of starting afresh: ASHA connects
/// it to promote a trial (`crate::spec::search_prune::RESUME_SLOT` names the same slot). Every
/// training kind declares it ([`resume_input`]) and its runner checks that the upstream
/// result is the same network, trained fewer `epochs` ([`trained_epochs`]).
pub const RESUME_INPUT: &str = "resume";

/// The `resume` input slot as a training kind declares it; `doc` says which results it takes.
/// Unconnected it is not in the key, so declaring it changed no result of a run without it.
pub const fn resume_input(doc: &'static str) -> InputDecl {
    InputDecl {
        name: RESUME_INPUT,
        required: false,
        accepts: &[Artifact::Model],
        doc,
    }
}

/// The epochs the result on the resume slot trained: its `epochs` parameter (ASHA's resource
/// is always `epochs`, so a lower rung's result trained exactly its rung's value).
pub fn trained_epochs(input: &InputArtifact) -> Result<usize, StageError> {
    Ok(input.params.int("epochs")?.max(0) as usize)
}

/// `gem_p_lr_scale`, shared by the kinds that train a GeM network: GeM's exponent `p` learns
/// at this multiple of the learning rate (the resolution-asymmetry reference uses 10).
pub(crate) const GEM_P_LR_SCALE: ParamDecl = ParamDecl::optional(
    "gem_p_lr_scale",
    ParamType::Float,
    "1.0",
    "GeM's p learns at this multiple of the learning rate (the reference: 10)",
)
.at_least(0.0);

/// `gem_p_decay`: whether weight decay applies to GeM's `p` (the reference: no).
pub(crate) const GEM_P_DECAY: ParamDecl = ParamDecl::optional(
    "gem_p_decay",
    ParamType::Bool,
    "true",
    "weight decay on GeM's p as on every weight (the reference: false)",
);

/// `accumulate`, shared by the kinds whose loops accumulate gradients (`train-teacher`,
/// `distill`): batches whose gradients add up to one optimiser step.
pub(crate) const ACCUMULATE: ParamDecl = ParamDecl::optional(
    "accumulate",
    ParamType::Int,
    "1",
    "batches whose gradients add up to one step (clamped to the batches of an epoch)",
)
.at_least(1.0);

/// Pooling choices, in pipeline spelling.
pub const POOLS: &[&str] = &["gem", "avg"];

pub use super::groups::network::{ARCHS, STEMS};
pub(crate) use super::groups::precision::PRECISION;

/// `gem_p_lr_scale` and `gem_p_decay`, read and checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemParams {
    /// `gem_p_lr_scale`: at least 0.
    pub lr_scale: f64,
    /// `gem_p_decay`.
    pub decay: bool,
}

impl GemParams {
    /// Reads and checks both.
    pub fn read(params: &Params) -> Result<GemParams, StageError> {
        let lr_scale = params.float("gem_p_lr_scale")?;
        if !(lr_scale >= 0.0 && lr_scale.is_finite()) {
            return Err(StageError::bad_param(
                "gem_p_lr_scale",
                format!("must be a non-negative number, got {lr_scale}"),
            ));
        }
        Ok(GemParams {
            lr_scale,
            decay: params.bool("gem_p_decay")?,
        })
    }
}

/// `pretrained`-like path parameters: `None` when empty.
pub(crate) fn opt_path(params: &Params, name: &str) -> Option<String> {
    params.opt_str(name).map(str::to_string)
}

/// A positive integer parameter as `usize`.
pub fn positive(params: &Params, name: &str) -> Result<usize, StageError> {
    let v = params.int(name)?;
    if v < 1 {
        return Err(StageError::bad_param(
            name,
            format!("must be at least 1, got {v}"),
        ));
    }
    Ok(v as usize)
}

/// The split manifest on input slot `slot`, the data set it reads and partition `partition`.
pub fn open_partition(
    ctx: &StageContext<'_>,
    slot: &str,
    partition: &str,
) -> Result<(Arc<dyn Dataset>, Vec<SplitItem>), StageError> {
    let manifest = SplitManifest::from_input(ctx.input(slot)?)?;
    let items = manifest.partition(partition)?.to_vec();
    let dataset = manifest.open(ctx.project_dir())?;
    Ok((dataset, items))
}

/// Key material of an optional weight file parameter (`pretrained`): its content hash, never
/// its path. A missing file is a user's mistake reported before anything runs.
pub(crate) fn weight_fingerprint(
    params: &Params,
    name: &str,
    env: &FingerprintEnv<'_>,
) -> Result<Option<(String, Value)>, StageError> {
    let Some(path) = params.opt_str(name) else {
        return Ok(None);
    };
    let full = env.project_dir.join(path);
    if !full.is_file() {
        return Err(StageError::bad_param(
            name,
            format!(
                "{} does not exist; export torchvision's weights with \
                 `safetensors.torch.save_file(model.state_dict(), PATH)` (see the README)",
                full.display()
            ),
        ));
    }
    let hash = env
        .hashes
        .hash_file(&full)
        .map_err(|e| StageError::io(&full, e))?;
    Ok(Some((name.to_string(), Value::String(hash))))
}

/// One epoch of a loss curve.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EpochLoss {
    /// 1-based epoch.
    pub epoch: usize,
    /// Mean batch loss (the weighted total).
    pub loss: f64,
    /// Mean of each term, when the loss has several.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub terms: BTreeMap<String, f64>,
    /// Learning rate at the end of the epoch.
    pub lr: Option<f64>,
}

/// What ending an epoch returns: its mean loss (on the curve) and how long it took (for the
/// log only; see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EpochEnd {
    /// Mean batch loss (the weighted total).
    pub loss: f64,
    /// Wall-clock seconds the epoch took.
    pub seconds: f64,
}

/// Per-epoch loss curve, written as `loss.json` (`{"epochs": [...]}`), and read back when a
/// run resumes from it.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct LossCurve {
    /// The epochs so far.
    pub epochs: Vec<EpochLoss>,
}

impl LossCurve {
    /// Writes the curve to the `loss.json` output.
    pub fn write(&self, ctx: &StageContext<'_>) -> Result<(), StageError> {
        ctx.write_json(LOSS_OUTPUT, self)
    }

    /// Ends `epoch`: adds its mean loss and terms to the curve, with the learning rate at its
    /// end, and returns the mean loss with the epoch's wall-clock time (which stays off the
    /// curve).
    pub fn end_epoch(&mut self, epoch: Epoch, lr: Option<f64>) -> EpochEnd {
        let mut terms = epoch.means.means();
        let loss = terms.remove(TOTAL).unwrap_or(f64::NAN);
        self.epochs.push(EpochLoss {
            epoch: epoch.index + 1,
            loss,
            terms,
            lr,
        });
        EpochEnd {
            loss,
            seconds: epoch.start.elapsed().as_secs_f64(),
        }
    }
}

/// The name of the total loss among an epoch's means.
const TOTAL: &str = "loss";

/// One epoch of a training loop that records a [`LossCurve`] (`train-teacher`, `distill`): the
/// running means of its batches' losses, and when it began. [`LossCurve::end_epoch`] ends it.
#[derive(Debug)]
pub struct Epoch {
    index: usize,
    start: Instant,
    means: Means,
}

impl Epoch {
    /// Begins the epoch of 0-based `index`.
    pub fn begin(index: usize) -> Self {
        Epoch {
            index,
            start: Instant::now(),
            means: Means::default(),
        }
    }

    /// Adds one batch: its total loss and the terms it is made of (none for a single loss). A
    /// total that is not finite stops the stage, naming the epoch and the fix.
    pub fn add(&mut self, total: f64, terms: &[(&str, f64)]) -> Result<(), StageError> {
        if !total.is_finite() {
            return Err(StageError::Other(format!(
                "the loss became {total} in epoch {}; lower `lr`",
                self.index + 1
            )));
        }
        let mut values = Vec::with_capacity(terms.len() + 1);
        values.push((TOTAL, total));
        values.extend_from_slice(terms);
        self.means.add(&values);
        Ok(())
    }
}

/// A running mean of named values over the batches of an epoch.
#[derive(Debug, Default)]
struct Means {
    sums: BTreeMap<String, f64>,
    count: usize,
}

impl Means {
    /// Adds one batch's values.
    fn add(&mut self, values: &[(&str, f64)]) {
        for (k, v) in values {
            *self.sums.entry((*k).to_string()).or_default() += v;
        }
        self.count += 1;
    }

    /// The means.
    fn means(&self) -> BTreeMap<String, f64> {
        let n = self.count.max(1) as f64;
        self.sums.iter().map(|(k, v)| (k.clone(), v / n)).collect()
    }
}

/// Resolves a path parameter against the project folder.
pub fn resolve(ctx: &StageContext<'_>, path: &str) -> std::path::PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        ctx.resolve_path(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn epoch_means_average_each_term() {
        let mut m = Means::default();
        m.add(&[("loss", 1.0), ("abs", 0.5)]);
        m.add(&[("loss", 3.0), ("abs", 1.5)]);
        let means = m.means();
        assert_eq!(means["loss"], 2.0);
        assert_eq!(means["abs"], 1.0);
    }

    #[test]
    fn an_epoch_ends_as_its_mean_loss_and_terms_on_the_curve() {
        let mut curve = LossCurve::default();
        let mut single = Epoch::begin(0);
        single.add(1.0, &[]).unwrap();
        single.add(2.0, &[]).unwrap();
        assert_eq!(curve.end_epoch(single, Some(0.1)).loss, 1.5);
        let mut several = Epoch::begin(1);
        several.add(3.0, &[("abs", 1.0), ("rel_ts", 2.0)]).unwrap();
        several.add(5.0, &[("abs", 3.0), ("rel_ts", 2.0)]).unwrap();
        assert_eq!(curve.end_epoch(several, None).loss, 4.0);
        let [first, second] = &curve.epochs[..] else {
            panic!("{curve:?}")
        };
        assert_eq!((first.epoch, first.loss, first.lr), (1, 1.5, Some(0.1)));
        assert!(first.terms.is_empty(), "a single loss has no terms");
        assert_eq!(second.epoch, 2);
        assert_eq!(second.terms["abs"], 2.0);
        assert_eq!(second.terms["rel_ts"], 2.0);
        assert!(
            !second.terms.contains_key("loss"),
            "the total is not a term"
        );
    }

    #[test]
    fn the_written_curve_holds_no_wall_clock_time() {
        let mut curve = LossCurve::default();
        let mut epoch = Epoch::begin(0);
        epoch.add(1.0, &[("abs", 1.0)]).unwrap();
        let end = curve.end_epoch(epoch, Some(0.1));
        assert!(end.seconds >= 0.0);
        let written = serde_json::to_value(&curve).unwrap();
        assert_eq!(
            written,
            serde_json::json!({"epochs": [{"epoch": 1, "loss": 1.0, "terms": {"abs": 1.0}, "lr": 0.1}]}),
            "loss.json is keyed: only what the key determines"
        );
    }

    #[test]
    fn a_loss_that_is_not_finite_stops_the_stage_naming_the_epoch() {
        let mut epoch = Epoch::begin(2);
        let err = epoch.add(f64::NAN, &[("abs", 1.0)]).unwrap_err();
        assert!(
            err.to_string()
                .contains("the loss became NaN in epoch 3; lower `lr`"),
            "{err}"
        );
        let err = Epoch::begin(0).add(f64::INFINITY, &[]).unwrap_err();
        assert!(err.to_string().contains("became inf in epoch 1"), "{err}");
    }
}
