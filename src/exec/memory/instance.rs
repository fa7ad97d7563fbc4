//! A planned instance's training step ([`super::Step`]) from its resolved parameters and, for
//! what a kind takes from upstream (the distillation's teacher, BCT's old model), the
//! parameters of the instance on that input. Kinds that train nothing have no estimate.

use super::{Frozen, NetShape, Step, StepMemory, Trained};
use crate::graph::{Instance, Plan};
use crate::kind::Params;
use crate::stages::groups::precision::Precision;

/// The kinds with an estimate.
pub(crate) const KINDS: &[&str] = &["train-teacher", "distill", "train-classifier", "train-bct"];

/// The estimate of instance `index` of `plan`: `None` for a kind that trains nothing, an
/// error (in words) when its parameters do not allow one.
pub fn estimate(plan: &Plan, index: usize) -> Option<Result<StepMemory, String>> {
    let inst = &plan.instances()[index];
    if !KINDS.contains(&inst.kind.as_str()) {
        return None;
    }
    Some(step(plan, inst).and_then(|s| s.estimate().map_err(|e| e.to_string())))
}

/// The step of a training instance.
pub fn step(plan: &Plan, inst: &Instance) -> Result<Step, String> {
    let p = &inst.params;
    match inst.kind.as_str() {
        "train-teacher" => teacher_step(p),
        "distill" => {
            let teacher = upstream(inst, "teacher")
                .ok_or("distill: no teacher input to size the networks by")?;
            let (net, resolution) = model_of(plan, teacher, 0)?;
            distill_step(p, &net, resolution)
        }
        "train-classifier" => classifier_step(p, None),
        "train-bct" => {
            let old = match upstream(inst, "old") {
                Some(old) => Some(model_of(plan, old, 0)?.0),
                None => None,
            };
            classifier_step(p, old)
        }
        other => Err(format!("`{other}` trains no network")),
    }
}

/// `train-teacher`: `batch_size` images, and with negatives mined from a pool (the triplet
/// loss only) each anchor's `negatives` in the same forward pass (at most that many: the
/// mined images are the distinct ones).
pub(crate) fn teacher_step(p: &Params) -> Result<Step, String> {
    let net = own_net(p)?;
    let batch = count(p, "batch_size")?;
    let mined = p.str("mining").ok() == Some("pool") && p.str("loss").ok() == Some("triplet");
    let rows = if mined {
        batch * (1 + count(p, "negatives")?)
    } else {
        batch
    };
    let input = side(p, "resolution")?;
    Ok(Step {
        trained: trained(p, net)?,
        input,
        rows,
        input_pixels: rows * input.0 * input.1,
        frozen: None,
        precision: precision(p)?,
    })
}

/// `distill`: the student forwards `ceil(batch_size / chunks) x augmentations` views with
/// gradients at once, the teacher the same rows at its resolution without; both views of the
/// whole batch are on the device. `teacher` is the teacher's network and resolution.
pub fn distill_step(
    p: &Params,
    teacher: &NetShape,
    resolution: (u64, u64),
) -> Result<Step, String> {
    let student = NetShape {
        arch: match p.str("arch").map_err(|e| e.to_string())? {
            "teacher" => teacher.arch.clone(),
            arch => arch.to_string(),
        },
        width: match p.int("width").unwrap_or(0) {
            w if w > 0 => w as u64,
            _ => teacher.width,
        },
        small_stem: match p.str("stem").unwrap_or("teacher") {
            "teacher" => teacher.small_stem,
            stem => stem == "small",
        },
        embed_dim: teacher.embed_dim,
    };
    let batch = count(p, "batch_size")?;
    let views = count(p, "augmentations")?;
    let chunks = count(p, "chunks")?.min(batch);
    let rows = batch.div_ceil(chunks) * views;
    let input = side(p, "resolution")?;
    // 0 (the default, which is no resolution): the teacher stage's own.
    let teacher_input = match p.int("teacher_resolution") {
        Ok(0) => resolution,
        _ => side(p, "teacher_resolution")?,
    };
    Ok(Step {
        trained: trained(p, student)?,
        input,
        rows,
        input_pixels: batch * views * (input.0 * input.1 + teacher_input.0 * teacher_input.1),
        frozen: Some(Frozen {
            net: teacher.clone(),
            input: teacher_input,
            rows,
        }),
        precision: precision(p)?,
    })
}

/// `train-classifier` and `train-bct`: `batch_size` images; BCT's old model, when given,
/// embeds the same batch without gradients (counted for every method, an upper bound).
pub(crate) fn classifier_step(p: &Params, old: Option<NetShape>) -> Result<Step, String> {
    let batch = count(p, "batch_size")?;
    let input = side(p, "resolution")?;
    Ok(Step {
        trained: trained(p, own_net(p)?)?,
        input,
        rows: batch,
        input_pixels: batch * input.0 * input.1,
        frozen: old.map(|net| Frozen {
            net,
            input,
            rows: batch,
        }),
        precision: precision(p)?,
    })
}

/// The network and training resolution of the model instance `u` outputs (a teacher, a
/// distilled student, a classifier), following distillation chains to the network they start
/// from; `depth` stops a cycle the graph cannot have.
fn model_of(plan: &Plan, u: usize, depth: usize) -> Result<(NetShape, (u64, u64)), String> {
    let inst = &plan.instances()[u];
    let p = &inst.params;
    if inst.kind == "distill" && depth < 16 {
        let teacher = upstream(inst, "teacher").ok_or("distill without a teacher")?;
        let (net, _) = model_of(plan, teacher, depth + 1)?;
        let step = distill_step(p, &net, (1, 1))?;
        return Ok((step.trained.net, step.input));
    }
    if !KINDS.contains(&inst.kind.as_str()) {
        return Err(format!(
            "{}: a `{}` model's network is not known before it runs",
            inst.label(),
            inst.kind
        ));
    }
    Ok((own_net(p)?, side(p, "resolution")?))
}

/// The one instance on input slot `slot` of `inst`.
fn upstream(inst: &Instance, slot: &str) -> Option<usize> {
    inst.inputs.get(slot).and_then(|v| v.first().copied())
}

/// The network group of a kind that builds its own network.
fn own_net(p: &Params) -> Result<NetShape, String> {
    Ok(NetShape {
        arch: p.str("arch").map_err(|e| e.to_string())?.to_string(),
        width: count(p, "width")?,
        small_stem: p.str("stem").map_err(|e| e.to_string())? == "small",
        embed_dim: count(p, "embed_dim")?,
    })
}

/// The trained network with its optimiser's moments.
fn trained(p: &Params, net: NetShape) -> Result<Trained, String> {
    let moments = match p.str("optimizer").map_err(|e| e.to_string())? {
        "sgd" if p.float("momentum").unwrap_or(0.9) == 0.0 => 0,
        "sgd" => 1,
        _ => 2,
    };
    Ok(Trained { net, moments })
}

/// `precision` (absent: fp32).
fn precision(p: &Params) -> Result<Precision, String> {
    let name = p.str("precision").unwrap_or("fp32");
    Precision::parse(name).ok_or_else(|| format!("precision `{name}`: expected fp32 or bf16"))
}

/// A resolution parameter as `(height, width)`.
fn side(p: &Params, name: &str) -> Result<(u64, u64), String> {
    let r = p.resolution(name).map_err(|e| e.to_string())?;
    Ok((u64::from(r.height), u64::from(r.width)))
}

/// A non-negative integer parameter.
fn count(p: &Params, name: &str) -> Result<u64, String> {
    let v = p.int(name).map_err(|e| e.to_string())?;
    u64::try_from(v).map_err(|_| format!("parameter `{name}`: {v} is negative"))
}

/// What to change in instance `index` of `plan` so its step fits `budget` bytes
/// ([`super::advice::advise`], re-estimating the instance with each change).
pub(crate) fn advise(plan: &Plan, index: usize, budget: u64) -> Vec<String> {
    let inst = &plan.instances()[index];
    let estimate = |params: &Params| {
        let changed = Instance {
            params: std::sync::Arc::new(params.clone()),
            ..inst.clone()
        };
        step(plan, &changed).ok()?.estimate().ok().map(|m| m.bytes)
    };
    super::advice::advise(&inst.kind, &inst.params, &estimate, budget)
}
