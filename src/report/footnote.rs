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

use super::missing::has_run;

/// One instance of a cell, as [`reasons`] reads it.
pub(crate) struct Declined<'a> {
    /// The instance.
    pub artifact: &'a InputArtifact,
    /// The reason it recorded for declining the metric, if it did.
    pub reason: Option<&'a String>,
    /// Which draw it is (`seed=1`), empty when the table aggregates no axis.
    pub draw: String,
}

/// Why a cell of `metric` (`labelled` as printed) lacks values, from its `members`: one text
/// per reason a stage recorded when it declined the metric, naming the draws that declined it
/// ("Update gain (R@1), seed=1: G is not applicable: ...", so a mean over the other draws
/// never hides the failing ones), one per stage not run yet, and, where neither explains an
/// empty cell, one naming the stages that ran without recording the metric.
pub(crate) fn reasons(
    members: &[Declined<'_>],
    metric: &str,
    labelled: &str,
    empty: bool,
) -> Vec<String> {
    let has = |a: &InputArtifact| a.metrics.get(metric).is_some_and(|v| v.is_finite());
    // (reason, stage) -> the draws that gave it, in order.
    let mut declined: Vec<((&str, &str), Vec<&str>)> = Vec::new();
    let mut out: Vec<String> = Vec::new();
    let mut silent: Vec<&str> = Vec::new();
    for member in members.iter().filter(|m| !has(m.artifact)) {
        let stage = member.artifact.stage.as_str();
        match member.reason {
            Some(why) => {
                let key = (why.as_str(), stage);
                match declined.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, draws)) => draws.push(&member.draw),
                    None => declined.push((key, vec![&member.draw])),
                }
            }
            None if !has_run(member.artifact) => {
                let text = format!(
                    "`{stage}`: not computed yet (not run, or failed; `asymflow status` tells which)."
                );
                if !out.contains(&text) {
                    out.push(text);
                }
            }
            None => {
                if !silent.contains(&stage) {
                    silent.push(stage);
                }
            }
        }
    }
    let mut texts: Vec<String> = declined
        .into_iter()
        .map(|((why, stage), draws)| {
            let draws: Vec<&str> = draws.into_iter().filter(|d| !d.is_empty()).collect();
            if draws.is_empty() {
                format!("{labelled}: {why} (`{stage}`).")
            } else {
                format!("{labelled}, {}: {why} (`{stage}`).", draws.join("; "))
            }
        })
        .collect();
    texts.extend(out);
    if empty && texts.is_empty() && !silent.is_empty() {
        let stages: Vec<String> = silent.iter().map(|s| format!("`{s}`")).collect();
        texts.push(format!(
            "{labelled}: not recorded by {}.",
            stages.join(", ")
        ));
    }
    texts
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
pub(crate) fn superscript(marks: &[usize]) -> String {
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
            draws: Vec::new(),
        }
    }

    #[test]
    fn declined_and_not_run_members_give_reasons_and_silent_ones_only_explain_an_empty_cell() {
        let why = "FPIR 1e-2 needs at least 100 non-mated probes; there are 40".to_string();
        let ran = artifact(&[("r1", 0.5)], true);
        let idle = artifact(&[], false);
        let member = |a, reason, draw: &str| Declined {
            artifact: a,
            reason,
            draw: draw.to_string(),
        };
        let reasons_of =
            |members: &[Declined], empty| reasons(members, "tpir_at_fpir", "TPIR@FPIR", empty);
        assert_eq!(
            reasons_of(&[member(&ran, Some(&why), "")], true),
            vec![
                "TPIR@FPIR: FPIR 1e-2 needs at least 100 non-mated probes; there are 40 (`id-old`)."
            ]
        );
        assert_eq!(
            reasons_of(
                &[member(&ran, Some(&why), "seed=0"), member(&ran, Some(&why), "seed=2")],
                true
            ),
            vec![
                "TPIR@FPIR, seed=0; seed=2: FPIR 1e-2 needs at least 100 non-mated probes; there are 40 (`id-old`)."
            ]
        );
        assert_eq!(
            reasons_of(&[member(&ran, None, ""), member(&idle, None, "")], false),
            vec!["`id-old`: not computed yet (not run, or failed; `asymflow status` tells which)."]
        );
        assert_eq!(
            reasons_of(&[member(&ran, None, ""), member(&ran, None, "")], true),
            vec!["TPIR@FPIR: not recorded by `id-old`."]
        );
        assert!(reasons_of(&[member(&ran, None, "")], false).is_empty());
        assert!(reasons(&[member(&ran, None, "")], "r1", "R@1", true).is_empty());
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
