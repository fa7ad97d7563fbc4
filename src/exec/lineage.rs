//! Lineage: which instances read which partition's images, directly and through any chain of
//! stages. A kind with a `partition` parameter reads that partition of the split connected to
//! its `split` input; everything downstream of it has seen those images through it.
//!
//! Three uses: a `partition` that the split it reads does not write is a plan-time error
//! ([`check_partitions`]: a misspelt `partition = "trian"` used to fail only after the
//! upstream stages had run); a search objective whose lineage reaches a test partition is refused at plan time
//! (tuning on test is the mistake a pipeline should make impossible, not merely visible), and
//! `plan` lists every stage that reads test images, so a reader of a pipeline sees where the
//! test set is used.

use crate::data::protocol::{partition_role, PartitionRole};
use crate::graph::{Instance, Plan};
use crate::kind::Registry;
use crate::spec::SpecError;

/// An instance that reads a partition's images itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reader {
    /// The split stage it reads from.
    pub split: String,
    /// The partition.
    pub partition: String,
    /// How it uses the images: `embeds` or `trains on`.
    pub verb: &'static str,
}

/// The partition `inst` reads itself, if any.
pub fn reads(plan: &Plan, inst: &Instance) -> Option<Reader> {
    let partition = inst.params.0.get("partition")?.as_str()?.to_string();
    let split = inst
        .inputs
        .get("split")
        .and_then(|ups| ups.first())
        .map(|&u| plan.instances()[u].stage.clone())?;
    let verb = if inst.kind == "embed" {
        "embeds"
    } else {
        "trains on"
    };
    Some(Reader {
        split,
        partition,
        verb,
    })
}

/// Checks that every instance reading a partition names one its split writes (as far as the
/// split's kind knows before running, [`crate::kind::Stage::partitions`]): an error at the
/// `partition` parameter, with the closest name.
pub(crate) fn check_partitions(plan: &Plan, registry: &Registry) -> Result<(), SpecError> {
    for inst in plan.instances() {
        let Some(reader) = reads(plan, inst) else {
            continue;
        };
        let Some(&up) = inst.inputs.get("split").and_then(|ups| ups.first()) else {
            continue;
        };
        let split = &plan.instances()[up];
        let Some(known) = registry
            .get(&split.kind)
            .and_then(|k| k.partitions(&split.params))
        else {
            continue;
        };
        if known.contains(&reader.partition) {
            continue;
        }
        let message = format!(
            "stage `{}`: partition `{}` is not one that split `{}` writes ({}); the split's \
             options decide its partitions (`validation = true` adds val-train and val-test, \
             `subsets` adds train-P, `gallery_per_class` adds query and gallery)",
            inst.stage,
            reader.partition,
            reader.split,
            known.join(", ")
        );
        let spec = plan.spec();
        let error = match spec.stage(&inst.stage) {
            Some(stage) => SpecError::at(
                stage.param_locs.get("partition").unwrap_or(&stage.loc),
                message,
            ),
            None => SpecError::nowhere(message),
        };
        return Err(error.suggest(&reader.partition, known.iter().map(String::as_str)));
    }
    Ok(())
}

/// A chain of instances from `from` upstream to one that reads a test partition (`from`
/// itself when it does), found depth first in input order; `None` when its lineage holds no
/// test image.
pub(crate) fn test_chain(plan: &Plan, from: usize) -> Option<Vec<usize>> {
    let mut seen = vec![false; plan.instances().len()];
    let mut path = Vec::new();
    walk(plan, from, &mut seen, &mut path).then_some(path)
}

fn walk(plan: &Plan, at: usize, seen: &mut [bool], path: &mut Vec<usize>) -> bool {
    if std::mem::replace(&mut seen[at], true) {
        return false;
    }
    path.push(at);
    let inst = &plan.instances()[at];
    if reads(plan, inst).is_some_and(|r| partition_role(&r.partition) == PartitionRole::Test) {
        return true;
    }
    for &u in inst.inputs.values().flatten() {
        if walk(plan, u, seen, path) {
            return true;
        }
    }
    path.pop();
    false
}

/// `objective eval reads emb, which embeds split:test` for a chain from [`test_chain`].
pub(crate) fn describe_chain(plan: &Plan, chain: &[usize]) -> String {
    let name = |i: usize| plan.instances()[i].stage.clone();
    let Some((&last, _)) = chain.split_last() else {
        return String::new();
    };
    let reader = reads(plan, &plan.instances()[last])
        .map(|r| format!("{} {}:{}", r.verb, r.split, r.partition))
        .unwrap_or_default();
    let mut text = format!("objective {}", name(chain[0]));
    for &i in &chain[1..] {
        text.push_str(&format!(" reads {}, which", name(i)));
    }
    format!("{text} {reader}")
}

/// Every stage whose instances read test images themselves, with what they read
/// (`emb-test` -> `split:test`), in plan order, each stage once.
pub(crate) fn test_readers(plan: &Plan) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for inst in plan.instances() {
        let Some(r) = reads(plan, inst) else { continue };
        if partition_role(&r.partition) != PartitionRole::Test {
            continue;
        }
        let what = format!("{}:{}", r.split, r.partition);
        if !out.iter().any(|(s, w)| *s == inst.stage && *w == what) {
            out.push((inst.stage.clone(), what));
        }
    }
    out
}
