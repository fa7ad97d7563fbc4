//! The artifact contract: what a kind writes, and what each of its input slots reads.
//!
//! A kind declares its outputs ([`OutputDecl`]: a file name and the [`Artifact`] type of what
//! it holds), and each input slot declares the artifact types it accepts
//! ([`super::InputDecl::accepts`]). The spec resolver checks every connection against both
//! declarations, so a wrong one (an `embed` fed a split as its model, an `evaluate` fed a model
//! as embeddings) is a mistake in the pipeline file with a line and column, found before
//! anything runs, instead of a missing-file error halfway through a sweep.
//!
//! Declared once, read twice: the run code names its output files through the same
//! declarations (`outputs::EMBEDDINGS.file`), so the contract and the files cannot drift.
//!
//! Some outputs exist only on some runs (`reasons.json` when a metric was declined, a padding
//! file when asked for): they are declared [`OutputDecl::optional`]. A declaration with `*` (a
//! report's `*.svg`) matches any number of files, none included. Every kind may also write
//! [`IMPLICIT_OUTPUTS`] (its log, its metrics, its reasons) without declaring them. How a
//! stage is checked against these declarations (before a run: which slots it fits; after: the
//! files it wrote) is `contract.rs`, which imports the stage protocol; this file does not, so
//! the parameter declarations can name artifact types without a circle.

use std::fmt;

/// The type of what a stage's output holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Artifact {
    /// A data set divided into partitions (`split.json`).
    Split,
    /// A trained network: weights and the metadata to rebuild it.
    Model,
    /// A trained network's classifier rows and the class each row stands for (the old model of
    /// backward-compatible training).
    Classifier,
    /// Embeddings of one partition, with labels, cameras and item ids.
    Embeddings,
    /// An evaluation's details (`evaluation.json`); its numbers are the stage's metrics.
    Evaluation,
    /// Compatibility criteria and update gains.
    UpdateGain,
    /// A training's per-epoch losses (`loss.json`).
    Losses,
    /// Rendered tables and plots.
    Report,
    /// Files no other kind reads (the test kinds' echoes, padding).
    Data,
    /// The metrics every stage records (and `reasons.json`: why a metric has no number); every
    /// kind produces it, declared or not.
    Metrics,
}

impl Artifact {
    /// The name used in messages and `asymflow kinds`.
    pub fn name(self) -> &'static str {
        match self {
            Artifact::Split => "split",
            Artifact::Model => "model",
            Artifact::Classifier => "classifier",
            Artifact::Embeddings => "embeddings",
            Artifact::Evaluation => "evaluation",
            Artifact::UpdateGain => "update gain",
            Artifact::Losses => "loss curve",
            Artifact::Report => "report",
            Artifact::Data => "data",
            Artifact::Metrics => "metrics",
        }
    }
}

impl fmt::Display for Artifact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One output file a kind writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputDecl {
    /// The file name in the stage's output folder; `*` stands for a part the parameters
    /// choose (a report's `*.svg`).
    pub file: &'static str,
    /// What it holds.
    pub artifact: Artifact,
    /// One line for `asymflow kinds KIND`.
    pub doc: &'static str,
    /// Whether a run may leave it out (written only on some runs). A required output missing
    /// after a run fails the run.
    pub optional: bool,
}

impl OutputDecl {
    /// A declaration of an output every run writes.
    pub const fn new(file: &'static str, artifact: Artifact, doc: &'static str) -> Self {
        OutputDecl {
            file,
            artifact,
            doc,
            optional: false,
        }
    }

    /// A declaration of an output only some runs write (`reasons.json`, when a metric was
    /// declined).
    pub const fn optional(file: &'static str, artifact: Artifact, doc: &'static str) -> Self {
        OutputDecl {
            file,
            artifact,
            doc,
            optional: true,
        }
    }

    /// Whether `name` (a top-level file or folder of a stage's outputs) is this output: the
    /// same name, or one `file`'s `*` parts stand for.
    pub fn matches(&self, name: &str) -> bool {
        glob_matches(self.file, name)
    }

    /// Whether a run may write no file of this declaration (it is optional, or a pattern).
    pub(crate) fn may_be_absent(&self) -> bool {
        self.optional || self.file.contains('*')
    }
}

/// The output every stage gets: its log.
pub(crate) const LOG_OUTPUT: &str = "log.txt";

/// The output holding the metrics a stage recorded (written only when it recorded some).
pub(crate) const METRICS_OUTPUT: &str = "metrics.json";

/// The output of a stage that declined some metrics ([`StageContext::decline`]): metric name ->
/// why it has no number.
pub(crate) const REASONS_OUTPUT: &str = "reasons.json";

/// Outputs every kind may write without declaring them: its log, its metrics (when it
/// recorded any) and why it declined a metric (when it declined one).
pub(crate) const IMPLICIT_OUTPUTS: [OutputDecl; 3] = [
    OutputDecl::optional(LOG_OUTPUT, Artifact::Metrics, "the stage's log"),
    OutputDecl::optional(
        METRICS_OUTPUT,
        Artifact::Metrics,
        "the metrics the stage recorded",
    ),
    OutputDecl::optional(
        REASONS_OUTPUT,
        Artifact::Metrics,
        "metric -> why it has no number (only when some metric was declined)",
    ),
];

/// `*` in `pattern` stands for any run of characters (none included); everything else must be
/// equal.
fn glob_matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// `a` / `a or b` / `a, b or c`.
pub fn describe(accepts: &[Artifact]) -> String {
    let names: Vec<&str> = accepts.iter().map(|a| a.name()).collect();
    match names.split_last() {
        None => "nothing".into(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_star_stands_for_any_run_of_characters() {
        assert!(glob_matches("*.svg", "map-vs-gflops.svg"));
        assert!(glob_matches("*.svg", ".svg"));
        assert!(!glob_matches("*.svg", "table.svg.png"));
        assert!(glob_matches("loss-*-*.json", "loss-a-b.json"));
        assert!(!glob_matches("loss-*-*.json", "loss-a.json"));
        assert!(glob_matches("model.json", "model.json"));
        assert!(!glob_matches("model.json", "model.jsonl"));
        assert!(!glob_matches("a*a", "a"));
    }

    #[test]
    fn a_kind_declaring_an_implicit_output_declares_it_optional() {
        let registry = crate::stages::registry();
        for stage in registry.kinds() {
            for implicit in &IMPLICIT_OUTPUTS {
                let same = stage.outputs().iter().find(|d| d.file == implicit.file);
                if let Some(d) = same {
                    assert!(
                        d.optional,
                        "{}: `{}` is written only on some runs",
                        stage.kind(),
                        d.file
                    );
                }
            }
        }
    }

    #[test]
    fn describe_joins_with_or() {
        assert_eq!(describe(&[Artifact::Model]), "model");
        assert_eq!(
            describe(&[Artifact::Split, Artifact::Model, Artifact::Losses]),
            "split, model or loss curve"
        );
    }
}
