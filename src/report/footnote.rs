//! Why a cell has no number: footnotes under a report table.
//!
//! A dash alone does not say whether a result is still to come or can never exist. Each
//! instance in a cell that gives no value contributes a reason: the one its stage recorded
//! when it declined the metric (`reasons.json`, e.g. "FPIR 1e-2 needs at least 100 non-mated
//! probes; there are 40"), "not run yet" for an instance without a result, or "not recorded"
//! when it ran and wrote neither. Equal reasons share one number, numbered in reading order;
//! each renderer prints the numbers as marks after the cell's text and the reasons under the
//! table.

use crate::kind::InputArtifact;

use super::has_run;

/// Why a cell of `metric` (`labelled` as printed) lacks values, from its `members` (each
/// with the reason it recorded for declining the metric, if any): one text per declined
/// instance and per stage not run yet; where neither explains an empty cell, one text naming
/// the stages that ran without recording the metric.
pub(crate) fn reasons(
    members: &[(&InputArtifact, Option<&String>)],
    metric: &str,
    labelled: &str,
    empty: bool,
) -> Vec<String> {
    let has = |a: &InputArtifact| a.metrics.get(metric).is_some_and(|v| v.is_finite());
    let mut out: Vec<String> = Vec::new();
    let mut silent: Vec<&str> = Vec::new();
    for (artifact, declined) in members.iter().filter(|(a, _)| !has(a)) {
        let text = match declined {
            Some(why) => format!("{labelled}: {why} (`{}`).", artifact.stage),
            None if !has_run(artifact) => format!(
                "`{}`: not computed yet (not run, or failed; `asymflow status` tells which).",
                artifact.stage
            ),
            None => {
                if !silent.contains(&artifact.stage.as_str()) {
                    silent.push(&artifact.stage);
                }
                continue;
            }
        };
        if !out.contains(&text) {
            out.push(text);
        }
    }
    if empty && out.is_empty() && !silent.is_empty() {
        let stages: Vec<String> = silent.iter().map(|s| format!("`{s}`")).collect();
        out.push(format!(
            "{labelled}: not recorded by {}.",
            stages.join(", ")
        ));
    }
    out
}

/// The footnotes of a table, numbered from 1.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Footnotes {
    /// The reasons, footnote `i + 1` at index `i`.
    pub texts: Vec<String>,
}

impl Footnotes {
    /// The number of `text`, adding it when new.
    pub(crate) fn number(&mut self, text: String) -> usize {
        match self.texts.iter().position(|t| *t == text) {
            Some(i) => i + 1,
            None => {
                self.texts.push(text);
                self.texts.len()
            }
        }
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }
}

/// `marks` as superscript digits (`¹`, `¹,²`, `¹²` for twelve), the form Markdown, HTML and
/// the terminal show.
pub fn superscript(marks: &[usize]) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    marks
        .iter()
        .map(|m| {
            m.to_string()
                .bytes()
                .map(|b| DIGITS[usize::from(b - b'0')])
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn artifact(metrics: &[(&str, f64)], ran: bool) -> InputArtifact {
        InputArtifact {
            stage: "id-old".into(),
            kind: "evaluate".into(),
            binding: BTreeMap::new(),
            params: Default::default(),
            key: String::new(),
            outputs: if ran {
                BTreeMap::from([("evaluation.json".to_string(), "x".into())])
            } else {
                BTreeMap::new()
            },
            metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn declined_and_not_run_members_give_reasons_and_silent_ones_only_explain_an_empty_cell() {
        let why = "FPIR 1e-2 needs at least 100 non-mated probes; there are 40".to_string();
        let ran = artifact(&[("r1", 0.5)], true);
        let idle = artifact(&[], false);
        let reasons_of = |members: &[(&InputArtifact, Option<&String>)], empty| {
            reasons(members, "tpir_at_fpir", "TPIR@FPIR", empty)
        };
        assert_eq!(
            reasons_of(&[(&ran, Some(&why))], true),
            vec![
                "TPIR@FPIR: FPIR 1e-2 needs at least 100 non-mated probes; there are 40 (`id-old`)."
            ]
        );
        assert_eq!(
            reasons_of(&[(&ran, None), (&idle, None)], false),
            vec!["`id-old`: not computed yet (not run, or failed; `asymflow status` tells which)."]
        );
        assert_eq!(
            reasons_of(&[(&ran, None), (&ran, None)], true),
            vec!["TPIR@FPIR: not recorded by `id-old`."]
        );
        assert!(reasons_of(&[(&ran, None)], false).is_empty());
        assert!(reasons(&[(&ran, None)], "r1", "R@1", true).is_empty());
    }

    #[test]
    fn equal_reasons_share_a_number_and_marks_read_as_superscripts() {
        let mut notes = Footnotes::default();
        assert_eq!(notes.number("a".into()), 1);
        assert_eq!(notes.number("b".into()), 2);
        assert_eq!(notes.number("a".into()), 1);
        assert_eq!(notes.texts, vec!["a", "b"]);
        assert_eq!(superscript(&[1]), "¹");
        assert_eq!(superscript(&[1, 2]), "¹,²");
        assert_eq!(superscript(&[12]), "¹²");
        assert_eq!(superscript(&[]), "");
    }
}
