//! Which random draws a cell's spread covers: the variation footnote.
//!
//! A "± 0.3 over 3 seeds" reads as the spread of the whole experiment, but it covers only the
//! stochastic stages that were drawn anew for each seed. A teacher trained once and shared by
//! the three students of a cell contributes nothing to the spread, however much another draw
//! of it would have moved the result. Each value of a cell comes from an instance that knows
//! the stochastic instances it descends from ([`crate::kind::InputArtifact::draws`], from the
//! pipeline's DAG); a stage whose instance is the same for every value of the cell ran once,
//! one with different instances varied. When any ran once, the cell gets a footnote saying
//! so, in every format: "± over `seed` covers student; split, teacher ran once."

use crate::kind::Draw;

/// The variation footnote of a cell whose values (one per draw of the `over` axes) descend
/// from `draws` (each value's stochastic instances), or `None` when every stochastic stage
/// varied, or none is known.
pub(crate) fn footnote(draws: &[Vec<&Draw>], over: &[String]) -> Option<String> {
    let (varied, fixed) = split(draws);
    if fixed.is_empty() {
        return None;
    }
    let over = super::Layout::over_text(over);
    Some(if draws.len() < 2 {
        format!("One draw: {} ran once.", fixed.join(", "))
    } else if varied.is_empty() {
        format!(
            "± over {over} covers no stochastic stage; {} ran once.",
            fixed.join(", ")
        )
    } else {
        format!(
            "± over {over} covers {}; {} ran once.",
            varied.join(", "),
            fixed.join(", ")
        )
    })
}

/// The stochastic stages behind the values, upstream first: (those whose instance differs
/// between values, those that are the same instance for every value).
pub(crate) fn split(draws: &[Vec<&Draw>]) -> (Vec<String>, Vec<String>) {
    let mut stages: Vec<&str> = Vec::new();
    for d in draws.iter().flatten() {
        if !stages.contains(&d.stage.as_str()) {
            stages.push(&d.stage);
        }
    }
    let (mut varied, mut fixed) = (Vec::new(), Vec::new());
    for stage in stages {
        let first = instances_of(&draws[0], stage);
        if draws
            .iter()
            .all(|value| instances_of(value, stage) == first)
        {
            fixed.push(stage.to_string());
        } else {
            varied.push(stage.to_string());
        }
    }
    (varied, fixed)
}

/// The instances of `stage` among one value's draws, sorted.
fn instances_of<'a>(value: &[&'a Draw], stage: &str) -> Vec<&'a str> {
    let mut of: Vec<&str> = value
        .iter()
        .filter(|d| d.stage == stage)
        .map(|d| d.instance.as_str())
        .collect();
    of.sort_unstable();
    of
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draw(stage: &str, instance: &str) -> Draw {
        Draw {
            stage: stage.into(),
            instance: instance.into(),
        }
    }

    #[test]
    fn a_shared_teacher_is_named_as_run_once_and_students_as_covered() {
        let teacher = draw("teacher", "teacher");
        let students: Vec<Draw> = (0..3)
            .map(|s| draw("student", &format!("student[seed={s}]")))
            .collect();
        let values: Vec<Vec<&Draw>> = students.iter().map(|s| vec![&teacher, s]).collect();
        let over = vec!["seed".to_string()];
        assert_eq!(
            footnote(&values, &over).as_deref(),
            Some("± over `seed` covers student; teacher ran once.")
        );
        assert_eq!(
            footnote(&values[..1], &over).as_deref(),
            Some("One draw: teacher, student ran once.")
        );
    }

    #[test]
    fn no_footnote_when_every_stochastic_stage_varies_or_none_is_known() {
        let a = [
            draw("teacher", "teacher[seed=0]"),
            draw("student", "student[seed=0]"),
        ];
        let b = [
            draw("teacher", "teacher[seed=1]"),
            draw("student", "student[seed=1]"),
        ];
        let values = vec![a.iter().collect(), b.iter().collect()];
        let over = vec!["seed".to_string()];
        assert_eq!(footnote(&values, &over), None);
        assert_eq!(footnote(&[vec![], vec![]], &over), None);
    }
}
