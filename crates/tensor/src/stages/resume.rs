//! Continuing a training run from a shorter one: the `resume` input that every training kind
//! declares (`asymflow::stages::training::resume_input`) and that ASHA connects to promote a
//! trial (docs/search.md). The upstream result must be the same network with the same head,
//! trained fewer `epochs`; the run then trains only the epochs it lacks, with the epochs'
//! numbers (so their shuffles and augmentations) and the schedule of the whole run, and its
//! loss curve begins with the upstream's.
//!
//! It is not bit-identical to training straight through: the optimiser's state is not in a
//! checkpoint (libtorch keeps it in C++ and tch can neither save nor restore it), so it
//! restarts empty; and a one-cycle schedule depends on the total epochs, so the upstream's
//! epochs ran on their own, shorter cycle. `train-classifier` and `train-bct` also seed their
//! initial weights from every parameter, `epochs` included, so their straight-through run
//! starts elsewhere.

use tch::Device;

use super::training::{trained_epochs, LossCurve, LOSS_OUTPUT, RESUME_INPUT};
use crate::kind::{read_json, InputArtifact, StageContext, StageError};
use crate::nn::checkpoint::{Model, ModelMeta, META_FILE, WEIGHTS_FILE};

/// Where a run of `train-teacher` or `distill` starts: its fresh model at epoch 0, or the
/// `resume` input's model after the epochs it trained, with their loss curve.
pub(crate) struct Start {
    /// The model training continues on.
    pub(crate) model: Model,
    /// The first epoch to train (0-based).
    pub(crate) epoch: usize,
    /// The loss curve so far.
    pub(crate) curve: LossCurve,
}

/// The start of a run of `epochs` epochs whose freshly initialised model is `fresh`: `fresh`
/// itself when `resume` is not connected, else the upstream's checkpoint (checked against
/// `fresh`'s network and head) and loss curve.
pub(crate) fn start(
    ctx: &mut StageContext<'_>,
    fresh: Model,
    epochs: usize,
) -> Result<Start, StageError> {
    let Some((input, done)) = upstream(ctx, epochs)? else {
        return Ok(Start {
            model: fresh,
            epoch: 0,
            curve: LossCurve::default(),
        });
    };
    let model = load_same(&input, &fresh.meta, fresh.vs.device())?;
    let curve: LossCurve = read_json(input.output(LOSS_OUTPUT)?)?;
    if curve.epochs.len() != done {
        return Err(refused(format!(
            "stage `{}` logged {} epochs in {LOSS_OUTPUT}, expected {done}",
            input.stage,
            curve.epochs.len()
        )));
    }
    ctx.log(note(&input, done));
    Ok(Start {
        model,
        epoch: done,
        curve,
    })
}

/// The result on the `resume` slot and the epochs it trained, which must be fewer than this
/// run's `epochs`; `None` when the slot is not connected.
pub(crate) fn upstream(
    ctx: &StageContext<'_>,
    epochs: usize,
) -> Result<Option<(InputArtifact, usize)>, StageError> {
    if ctx.input_all(RESUME_INPUT).is_empty() {
        return Ok(None);
    }
    let input = ctx.input(RESUME_INPUT)?.clone();
    let done = trained_epochs(&input)?;
    if done >= epochs {
        return Err(refused(format!(
            "stage `{}` trained {done} epochs, not fewer than this stage's {epochs}; \
             resume from a shorter run",
            input.stage
        )));
    }
    Ok(Some((input, done)))
}

/// The upstream's checkpoint on `device`, refused unless it is the network and head this run
/// builds (`expected`).
pub(crate) fn load_same(
    input: &InputArtifact,
    expected: &ModelMeta,
    device: Device,
) -> Result<Model, StageError> {
    let model = Model::load(
        input.output(WEIGHTS_FILE)?,
        input.output(META_FILE)?,
        device,
    )?;
    if model.meta != *expected {
        return Err(refused(format!(
            "stage `{}` saved another network or head ({:?}) than this stage builds ({:?})",
            input.stage, model.meta, expected
        )));
    }
    Ok(model)
}

/// The log line of a resumed run.
pub(crate) fn note(input: &InputArtifact, done: usize) -> String {
    format!(
        "resuming from `{}` after {done} epochs (key {})",
        input.stage,
        asymflow::cache::key::short_key(&input.key)
    )
}

/// An error on the `resume` input.
pub(crate) fn refused(message: String) -> StageError {
    StageError::Input {
        slot: RESUME_INPUT.into(),
        message,
    }
}
