//! Sweep axes: `[sweep]` entries, crossed as a grid, with zip groups that vary together.
//!
//! `seed = [0, 1, 2]` is an axis of its own dimension. `pair = { a = [..], b = [..] }` is a zip
//! group: axes `a` and `b` share the dimension `pair` and take their i-th values together, so
//! they must have equal lengths. Instances are identified by their coordinate in each
//! dimension they use; see [`crate::graph`].

use serde_json::Value;

use super::error::SpecError;
use super::source::Loc;
use super::value::{SKey, SKind, SValue};

/// The most instances a pipeline may expand to. Sweeps are crossed as a grid, so a few
/// long axes multiply into more instances than memory holds; past this the plan is refused
/// before anything is allocated.
pub(crate) const MAX_INSTANCES: usize = 100_000;

/// One sweep axis.
#[derive(Debug, Clone)]
pub struct Axis {
    /// The name used as `${sweep.NAME}`.
    pub name: String,
    /// Its values, in written order.
    pub values: Vec<Value>,
    /// The dimension it varies along: its own name, or its zip group's name.
    pub dimension: String,
    /// Where it was declared.
    pub loc: Loc,
}

/// Reads `[sweep]`.
pub(crate) fn read_axes(entries: &[(SKey, SValue)]) -> Result<Vec<Axis>, SpecError> {
    let mut axes: Vec<Axis> = Vec::new();
    for (key, value) in entries {
        match &value.kind {
            SKind::Array(_) => axes.push(axis(key, value, &key.name)?),
            SKind::Table(members) => {
                let mut len = None;
                for (member, values) in members {
                    let a = axis(member, values, &key.name)?;
                    match len {
                        None => len = Some(a.values.len()),
                        Some(n) if n != a.values.len() => {
                            return Err(SpecError::at(
                                &values.loc,
                                format!(
                                    "zip group `{}`: axis `{}` has {} values, the group's \
                                     first axis has {n}",
                                    key.name,
                                    member.name,
                                    a.values.len()
                                ),
                            )
                            .hint("axes in a zip group vary together and need equal lengths"))
                        }
                        Some(_) => {}
                    }
                    axes.push(a);
                }
            }
            _ => {
                return Err(SpecError::at(
                    &value.loc,
                    format!("sweep axis `{}` must be a list of values", key.name),
                )
                .hint(format!("write `{} = [{}]`", key.name, value.to_json())))
            }
        }
    }
    for (i, a) in axes.iter().enumerate() {
        if axes[..i].iter().any(|b| b.name == a.name) {
            return Err(SpecError::at(
                &a.loc,
                format!("sweep axis `{}` declared twice", a.name),
            ));
        }
    }
    Ok(axes)
}

fn axis(key: &SKey, value: &SValue, dimension: &str) -> Result<Axis, SpecError> {
    let SKind::Array(items) = &value.kind else {
        return Err(SpecError::at(
            &value.loc,
            format!("sweep axis `{}` must be a list of values", key.name),
        ));
    };
    if items.is_empty() {
        return Err(SpecError::at(
            &value.loc,
            format!("sweep axis `{}` has no values", key.name),
        ));
    }
    let values: Vec<Value> = items.iter().map(SValue::to_json).collect();
    // serde_json's maps keep their keys sorted, so equal values print as equal text: a set
    // finds repeats in one pass, where comparing each value with all before it grew as n².
    let mut seen = std::collections::HashSet::with_capacity(values.len());
    for (i, v) in values.iter().enumerate() {
        if !seen.insert(v.to_string()) {
            return Err(SpecError::at(
                &items[i].loc,
                format!("sweep axis `{}` lists {v} twice", key.name),
            ));
        }
    }
    Ok(Axis {
        name: key.name.clone(),
        values,
        dimension: dimension.to_string(),
        loc: key.loc.clone(),
    })
}
