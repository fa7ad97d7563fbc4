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

use std::fmt;

use super::Stage;

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
}

impl OutputDecl {
    /// A declaration.
    pub const fn new(file: &'static str, artifact: Artifact, doc: &'static str) -> Self {
        OutputDecl {
            file,
            artifact,
            doc,
        }
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

    #[test]
    fn describe_joins_with_or() {
        assert_eq!(describe(&[Artifact::Model]), "model");
        assert_eq!(
            describe(&[Artifact::Split, Artifact::Model, Artifact::Losses]),
            "split, model or loss curve"
        );
    }
}
