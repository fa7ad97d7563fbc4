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

/// Why `artifact` gives no value of `metric` (`labelled` is the metric as printed), or `None`
/// when it has one.
pub(crate) fn reason(
    artifact: &InputArtifact,
    metric: &str,
    labelled: &str,
    declined: Option<&String>,
) -> Option<String> {
    if artifact.metrics.get(metric).is_some_and(|v| v.is_finite()) {
        return None;
    }
    Some(match declined {
        Some(why) => format!("{labelled}: {why} (`{}`).", artifact.stage),
        None if !has_run(artifact) => format!(
            "`{}`: not computed yet (not run, or failed; `asymflow status` tells which).",
            artifact.stage
        ),
        None => format!(
            "`{}` (kind {}) recorded no `{metric}`.",
            artifact.stage, artifact.kind
        ),
    })
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
    fn a_declined_metric_gives_its_reason_and_a_present_one_none() {
        let why = "FPIR 1e-2 needs at least 100 non-mated probes; there are 40".to_string();
        let a = artifact(&[("r1", 0.5)], true);
        assert_eq!(
            reason(&a, "tpir_at_fpir", "TPIR@FPIR", Some(&why)).unwrap(),
            "TPIR@FPIR: FPIR 1e-2 needs at least 100 non-mated probes; there are 40 (`id-old`)."
        );
        assert_eq!(reason(&a, "r1", "R@1", None), None);
        assert!(reason(&a, "map", "mAP", None)
            .unwrap()
            .contains("recorded no `map`"));
        assert!(reason(&artifact(&[], false), "map", "mAP", None)
            .unwrap()
            .contains("not computed yet"));
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
