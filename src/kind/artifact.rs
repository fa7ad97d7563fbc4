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
//! The contract is also enforced after a run ([`check_outputs`]): the engine checks the
//! files a finished job wrote against its kind's declarations before it records the result, so
//! a kind that forgets a declared output (or writes one no declaration names) fails with a
//! message naming the kind, the file and the declaration, and the cache never holds a result
//! that breaks the contract. Some outputs exist only on some runs (`reasons.json` when a metric
//! was declined, a padding file when asked for): they are declared [`OutputDecl::optional`].
//! A declaration with `*` (a report's `*.svg`) matches any number of files, none included.
//! Every kind may also write [`IMPLICIT_OUTPUTS`] (its log, its metrics, its reasons)
//! without declaring them.

use std::fmt;

use super::{Stage, LOG_OUTPUT, METRICS_OUTPUT, REASONS_OUTPUT};

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
    pub fn may_be_absent(&self) -> bool {
        self.optional || self.file.contains('*')
    }
}

/// Outputs every kind may write without declaring them: its log, its metrics (when it
/// recorded any) and why it declined a metric (when it declined one).
pub const IMPLICIT_OUTPUTS: [OutputDecl; 3] = [
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

/// How a finished run broke its kind's output declarations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// A required output was not written.
    Missing {
        /// The declared file.
        file: &'static str,
        /// What it should hold.
        artifact: Artifact,
    },
    /// A file was written that no declaration names.
    Undeclared {
        /// The file (or folder) the run wrote.
        file: String,
    },
}

/// A finished run of kind `kind` broke its output contract; nothing of it is recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message())]
pub struct ContractError {
    /// The kind.
    pub kind: String,
    /// What it declares (its `outputs()` files, for the message).
    pub declared: Vec<&'static str>,
    /// Each way the run broke it.
    pub violations: Vec<Violation>,
}

impl ContractError {
    fn message(&self) -> String {
        let declared = if self.declared.is_empty() {
            "no outputs".to_string()
        } else {
            self.declared
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let lines: Vec<String> = self
            .violations
            .iter()
            .map(|v| match v {
                Violation::Missing { file, artifact } => format!(
                    "kind `{}` declares output `{file}` ({artifact}) but the run did not write \
                     it; the kind must write it on every run, or declare it \
                     `OutputDecl::optional` when only some runs do",
                    self.kind
                ),
                Violation::Undeclared { file } => format!(
                    "kind `{}` wrote `{file}`, which none of its output declarations names \
                     (it declares {declared}; every kind may also write {}); declare it in the \
                     kind's `outputs()`, or stop writing it",
                    self.kind,
                    IMPLICIT_OUTPUTS
                        .iter()
                        .map(|o| format!("`{}`", o.file))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
            .collect();
        format!(
            "output contract broken, nothing recorded: {}",
            lines.join("; ")
        )
    }
}

/// Checks the top-level names a finished run of `stage` wrote (files and folders of its output
/// folder) against its declarations and [`IMPLICIT_OUTPUTS`]: every required declaration has
/// its file, and every file has a declaration.
pub fn check_outputs<'a>(
    stage: &dyn Stage,
    written: impl IntoIterator<Item = &'a str>,
) -> Result<(), ContractError> {
    let written: Vec<&str> = written.into_iter().collect();
    let declared = stage.outputs();
    let mut violations: Vec<Violation> = declared
        .iter()
        .filter(|d| !d.may_be_absent() && !written.iter().any(|w| d.matches(w)))
        .map(|d| Violation::Missing {
            file: d.file,
            artifact: d.artifact,
        })
        .collect();
    violations.extend(
        written
            .iter()
            .filter(|w| {
                !declared
                    .iter()
                    .chain(&IMPLICIT_OUTPUTS)
                    .any(|d| d.matches(w))
            })
            .map(|w| Violation::Undeclared {
                file: (*w).to_string(),
            }),
    );
    if violations.is_empty() {
        Ok(())
    } else {
        Err(ContractError {
            kind: stage.kind().to_string(),
            declared: declared.iter().map(|d| d.file).collect(),
            violations,
        })
    }
}

/// Whether `stage` produces an artifact of type `artifact`: one of its declared outputs holds
/// it, or it is [`Artifact::Metrics`], which every stage records.
pub fn produces(stage: &dyn Stage, artifact: Artifact) -> bool {
    artifact == Artifact::Metrics || stage.outputs().iter().any(|o| o.artifact == artifact)
}

/// Whether a stage of kind `stage` may be connected to a slot accepting `accepts`.
pub fn fits(stage: &dyn Stage, accepts: &[Artifact]) -> bool {
    accepts.iter().any(|a| produces(stage, *a))
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
    use crate::kind::{InputDecl, ParamDecl};

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

    struct Kind;
    const DECLS: &[OutputDecl] = &[
        OutputDecl::new("model.json", Artifact::Model, "meta"),
        OutputDecl::optional("head.bin", Artifact::Model, "head"),
        OutputDecl::new("*.svg", Artifact::Report, "plots"),
    ];
    impl Stage for Kind {
        fn kind(&self) -> &'static str {
            "k"
        }
        fn impl_version(&self) -> u32 {
            1
        }
        fn summary(&self) -> &'static str {
            ""
        }
        fn params(&self) -> &'static [ParamDecl] {
            &[]
        }
        fn inputs(&self) -> &'static [InputDecl] {
            &[]
        }
        fn outputs(&self) -> &'static [OutputDecl] {
            DECLS
        }
    }

    #[test]
    fn required_outputs_must_exist_and_every_file_needs_a_declaration() {
        assert_eq!(check_outputs(&Kind, ["model.json"]), Ok(()));
        assert_eq!(
            check_outputs(
                &Kind,
                [
                    "model.json",
                    "head.bin",
                    "a.svg",
                    "b.svg",
                    "log.txt",
                    "metrics.json"
                ]
            ),
            Ok(())
        );
        let err = check_outputs(&Kind, ["log.txt", "extra.txt"]).unwrap_err();
        assert_eq!(
            err.violations,
            vec![
                Violation::Missing {
                    file: "model.json",
                    artifact: Artifact::Model
                },
                Violation::Undeclared {
                    file: "extra.txt".into()
                }
            ]
        );
        let text = err.to_string();
        assert!(
            text.contains(
                "kind `k` declares output `model.json` (model) but the run did not write it"
            ),
            "{text}"
        );
        assert!(
            text.contains("kind `k` wrote `extra.txt`, which none of its output declarations names (it declares `model.json`, `head.bin`, `*.svg`;"),
            "{text}"
        );
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
