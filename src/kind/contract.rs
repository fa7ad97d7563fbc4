//! A stage checked against the artifact contract (`artifact.rs`): before anything runs, whether
//! it may be connected to a slot ([`fits`], [`produces`]); after a run, whether the files it
//! wrote are its declared outputs ([`check_outputs`]).
//!
//! The contract is enforced after a run: the engine checks the files a finished job wrote
//! against its kind's declarations before it records the result, so a kind that forgets a
//! declared output (or writes one no declaration names) fails with a message naming the kind,
//! the file and the declaration, and the cache never holds a result that breaks the contract.
//! The checks take a [`Stage`], so they live apart from the declarations they read.

use super::{Artifact, Stage, IMPLICIT_OUTPUTS};

/// How a finished run broke its kind's output declarations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Violation {
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
pub(crate) struct ContractError {
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
pub(crate) fn check_outputs<'a>(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::{InputDecl, OutputDecl, ParamDecl};

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
}
