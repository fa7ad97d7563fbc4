//! Choosing instances on the command line: a stage name (`student`) or an instance label
//! (`student[seed=7]`), the same way in every command (`run`, `plan`, `why`, `show`, `metrics`,
//! `export`, `--force`).
//!
//! A label selects every instance of its stage whose binding has all the values it names, in
//! any order, spaces ignored: `model[seed=0]` is every seed-0 instance of `model`, and
//! `model[width=16, seed=0]` one of them. Numbers compare as numbers (`lr=1e-3` selects the
//! instance labelled `lr=0.001`). A target that selects nothing is a mistake on the command
//! line, reported like a mistake in the pipeline file (exit code 3) with the labels that do
//! exist, the nearest first.
//!
//! `run` and `plan` keep the selected instances and everything they need upstream (as `make`
//! or `dvc repro TARGET` would): cached ancestors are listed as cached and cost nothing, and
//! nothing downstream or beside the selection runs.

use std::collections::BTreeSet;

use crate::graph::Plan;
use crate::spec::SpecError;

/// How many existing labels an error lists before saying how many more there are.
const LISTED: usize = 12;

/// The stage of a stage name or an instance label (`model[seed=0]` -> `model`).
pub(crate) fn stage_of(target: &str) -> &str {
    target.split('[').next().unwrap_or(target).trim()
}

/// Whether `target` names one or more instances by their values (`stage[axis=value]`) rather
/// than a whole stage.
pub(crate) fn is_label(target: &str) -> bool {
    target.contains('[')
}

/// Whether the instance labelled `label` is selected by `target`: a stage name selects every
/// instance of the stage; `stage[axis=value,...]` the instances with those values.
pub(crate) fn selects(target: &str, label: &str) -> bool {
    let (want_stage, want) = parse(target);
    let (stage, have) = parse(label);
    want_stage == stage
        && want
            .iter()
            .all(|(k, v)| have.iter().any(|(hk, hv)| hk == k && same_value(v, hv)))
}

/// Equal as text, or as numbers when both are numbers (`1e-3` and `0.001`).
fn same_value(a: &str, b: &str) -> bool {
    a == b || matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if x == y)
}

/// `stage[a=1,b=x]` -> (`stage`, [(a, 1), (b, x)]), spaces removed.
fn parse(text: &str) -> (String, Vec<(String, String)>) {
    let squashed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let Some((stage, rest)) = squashed.split_once('[') else {
        return (squashed, Vec::new());
    };
    let pairs = rest
        .trim_end_matches(']')
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (k.to_string(), v.trim_matches('"').to_string()),
            None => (p.to_string(), String::new()),
        })
        .collect();
    (stage.to_string(), pairs)
}

/// Checks that each of `targets` names a stage of `plan`'s pipeline and, for a label, at least
/// one instance; `what` prefixes the message (`--force student[seed=9]`: ...).
pub fn check(plan: &Plan, targets: &[String], what: &str) -> Result<(), SpecError> {
    for target in targets {
        matching(plan, target, what)?;
    }
    Ok(())
}

/// The instances of `plan` that `target` selects (none for a stage that waits for a search's
/// winner), or an error naming what exists.
pub(crate) fn matching(plan: &Plan, target: &str, what: &str) -> Result<Vec<usize>, SpecError> {
    let stage = stage_of(target);
    let file = plan.spec().file.display();
    if plan.spec().stage(stage).is_none() {
        let names: Vec<&str> = plan.spec().stages.iter().map(|s| s.name.as_str()).collect();
        return Err(
            SpecError::nowhere(format!("{what}no stage `{stage}` in {file}")).suggest(stage, names),
        );
    }
    let chosen: Vec<usize> = plan
        .instances()
        .iter()
        .filter(|i| selects(target, &i.label()))
        .map(|i| i.index)
        .collect();
    let waits = plan
        .searches()
        .iter()
        .any(|s| s.waiting.iter().any(|w| w == stage));
    if chosen.is_empty() && !waits {
        let labels: Vec<String> = plan.instances_of(stage).map(|i| i.label()).collect();
        return Err(SpecError::nowhere(format!(
            "{what}no instance `{target}` in {file}; the instances of `{stage}` are: {}",
            nearest_first(target, labels)
        ))
        .hint(format!(
            "name one of them, or the stage `{stage}` for all of them (quote the label \
             in the shell: '{stage}[...]')"
        )));
    }
    Ok(chosen)
}

/// `labels` sorted by their distance to `target`, the first [`LISTED`] of them, and how many
/// more there are.
fn nearest_first(target: &str, mut labels: Vec<String>) -> String {
    let squashed: String = target.chars().filter(|c| !c.is_whitespace()).collect();
    let (_, want) = parse(target);
    // Nearest by spelling, then by how far apart the numbers are (`seed=8` is nearer 7 than 0).
    let numeric_gap = |label: &str| -> f64 {
        let (_, have) = parse(label);
        want.iter()
            .filter_map(|(k, v)| {
                let mine = v.parse::<f64>().ok()?;
                let (_, theirs) = have.iter().find(|(hk, _)| hk == k)?;
                Some((mine - theirs.parse::<f64>().ok()?).abs())
            })
            .sum()
    };
    labels.sort_by(|a, b| {
        let by_text = strsim::damerau_levenshtein(&squashed, a)
            .cmp(&strsim::damerau_levenshtein(&squashed, b));
        by_text.then(numeric_gap(a).total_cmp(&numeric_gap(b)))
    });
    let more = labels.len().saturating_sub(LISTED);
    let mut text = labels
        .into_iter()
        .take(LISTED)
        .collect::<Vec<_>>()
        .join(", ");
    if more > 0 {
        text.push_str(&format!(" (and {more} more: `asymflow plan` lists them)"));
    }
    text
}

/// The instances `targets` select (every instance when `targets` is empty), checked.
pub fn chosen(plan: &Plan, targets: &[String], what: &str) -> Result<BTreeSet<usize>, SpecError> {
    if targets.is_empty() {
        return Ok(plan.instances().iter().map(|i| i.index).collect());
    }
    let mut set = BTreeSet::new();
    for target in targets {
        set.extend(matching(plan, target, what)?);
    }
    Ok(set)
}

/// `plan` narrowed to what `targets` select and everything they need upstream. Without a
/// label among the targets, or with a search (whose trials a stage needs through its winner,
/// not through an input edge), the plan is returned whole: the caller already kept the named
/// stages and what they need.
pub fn narrow(plan: Plan, targets: &[String]) -> Result<Plan, SpecError> {
    check(&plan, targets, "")?;
    if !targets.iter().any(|t| is_label(t)) || !plan.searches().is_empty() {
        return Ok(plan);
    }
    let mut keep = chosen(&plan, targets, "")?;
    let mut stack: Vec<usize> = keep.iter().copied().collect();
    while let Some(i) = stack.pop() {
        for &up in plan.instances()[i].inputs.values().flatten() {
            if keep.insert(up) {
                stack.push(up);
            }
        }
    }
    Ok(plan.keep_only(&keep))
}

#[cfg(test)]
mod tests {
    use super::{nearest_first, selects};

    #[test]
    fn labels_select_by_stage_and_any_subset_of_values_in_any_order() {
        let label = "model[depth=2,seed=1,width=16]";
        assert!(selects("model", label));
        assert!(selects("model[seed=1]", label));
        assert!(selects("model[width=16, seed=1]", label));
        assert!(!selects("model[seed=0]", label));
        assert!(!selects("mode", label));
        assert!(selects("eval[set=a]", "eval[set=a]"));
        assert!(!selects("model[seed]", label));
    }

    #[test]
    fn numbers_in_labels_compare_as_numbers() {
        assert!(selects("student[lr=1e-3]", "student[lr=0.001]"));
        assert!(selects("student[seed=7.0]", "student[seed=7]"));
        assert!(!selects("student[lr=1e-3]", "student[lr=0.002]"));
    }

    #[test]
    fn existing_labels_are_listed_nearest_first() {
        let labels = vec![
            "student[seed=0]".to_string(),
            "student[seed=1]".to_string(),
            "student[seed=11]".to_string(),
        ];
        let text = nearest_first("student[seed=12]", labels.clone());
        assert!(text.starts_with("student[seed=11]"), "{text}");
        let text = nearest_first("student[seed=3]", labels);
        assert!(text.starts_with("student[seed=1],"), "{text}");
    }
}
