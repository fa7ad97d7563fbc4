//! The stage protocol's two traits: [`Stage`], what a kind declares (parameters, input slots,
//! outputs, version, resources, fingerprint), and [`Run`], how it does its work; with the
//! types their methods speak of ([`Resource`], [`FingerprintEnv`], [`FileHasher`]) and the
//! helpers that read a declaration. The declarations themselves (parameters, artifacts) and
//! the running stage's context are files of their own, which this one imports.

use std::path::Path;

use serde_json::Value;

use super::{InputDecl, OutputDecl, ParamDecl, ParamType, Params, StageContext, StageError};

/// What a stage instance needs to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Resource {
    /// Plain CPU work; runs in parallel with other CPU stages (`--jobs`).
    Cpu,
    /// Network training or inference; takes one device slot (a GPU, or the CPU where there
    /// is none) so two trainings never fight over one device.
    Device,
}

/// Where a stage's fingerprint hook may look: the project (for relative paths) and a memo of
/// file hashes kept in the cache index.
pub struct FingerprintEnv<'a> {
    /// The folder relative paths in parameters are resolved against (the pipeline's project).
    pub project_dir: &'a Path,
    /// Remembers file content hashes by (path, size, mtime) so unchanged files are not rehashed.
    pub hashes: &'a dyn FileHasher,
}

/// Content hashing with a memo. Implemented by the cache index.
pub trait FileHasher: Sync {
    /// The blake3 hex digest of the file at `path` (absolute), from the memo when the file's
    /// size and mtime are unchanged since it was last hashed.
    fn hash_file(&self, path: &Path) -> std::io::Result<String>;
}

/// A kind of stage. See the module docs.
pub trait Stage: Send + Sync {
    /// The name used as `kind = "..."` in pipeline files.
    fn kind(&self) -> &'static str;

    /// Bumped by hand whenever this kind's output for the same key inputs changes. Part of the
    /// key: bumping it reruns every instance of the kind and everything downstream.
    fn impl_version(&self) -> u32;

    /// One line for `asymflow kinds`.
    fn summary(&self) -> &'static str;

    /// The declared parameters.
    fn params(&self) -> &'static [ParamDecl];

    /// The declared input slots, each with the artifact types it accepts.
    fn inputs(&self) -> &'static [InputDecl];

    /// The declared outputs: every file the kind writes, with the type of what it holds. A
    /// stage may be connected to a slot only when one of these (or the metrics every stage
    /// records) is of a type the slot accepts.
    fn outputs(&self) -> &'static [OutputDecl];

    /// The metric names an instance with `params` records; a name may start or end in `*`
    /// for a family (`diff_*`, `*_images`). Report layouts are checked against these before
    /// anything runs; `None` (not declared) leaves the metrics a layout names unchecked.
    fn records(&self, _params: &Params) -> Option<Vec<String>> {
        None
    }

    /// The partitions an instance with `params` writes, when they are known before it runs
    /// (a split's depend on its options only); `None` when they are not. A consumer's
    /// `partition` parameter is checked against them at plan time, so a misspelt partition
    /// is an error with its place in the file, not a failure after upstream stages trained.
    fn partitions(&self, _params: &Params) -> Option<Vec<String>> {
        None
    }

    /// The parameters that seed this kind's random draws (initial weights, batch order,
    /// sampled images or subsets); empty for a deterministic kind. Declared once per kind: by
    /// default, `["seed"]` when the kind declares a `seed` parameter (every training kind), else
    /// none. Reports name the stochastic stages a spread covers and those that ran once
    /// ([`InputArtifact::draws`]); `asymflow kinds` shows it.
    fn seeds(&self) -> &'static [&'static str] {
        if self.params().iter().any(|p| p.name == "seed") {
            &["seed"]
        } else {
            &[]
        }
    }

    /// Whether an instance with `params` is a random draw: by default, whether the kind has
    /// [`Stage::seeds`]. A kind whose randomness depends on its parameters (a split of a real
    /// data set draws nothing unless it samples subsets) narrows it here.
    fn stochastic(&self, _params: &Params) -> bool {
        !self.seeds().is_empty()
    }

    /// Whether the kind's output depends on which stochastic instances its inputs descend from
    /// ([`InputArtifact::draws`]: a report names them in its footnotes); then they are part
    /// of its key, so renaming an upstream stage re-renders it.
    fn reads_draws(&self) -> bool {
        false
    }

    /// Axes this kind gathers by default (`report` gathers every axis: `["*"]`).
    fn default_gather(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether the outputs of this kind are published under `reports/PIPELINE/` after every
    /// run (and `table.md`, if any, printed to the terminal). True for reports.
    fn publishes(&self) -> bool {
        false
    }

    /// Whether parameter `name` enters the key: all but `path` parameters (their content is
    /// in the fingerprint) by default.
    fn keyed_param(&self, name: &str) -> bool {
        self.params()
            .iter()
            .find(|p| p.name == name)
            .is_none_or(|d| d.ty != ParamType::Path)
    }

    /// Whether parameter `name` with `value` enters the key: [`Stage::keyed_param`], and not
    /// a parameter [added later](ParamDecl::added_later) at its default.
    fn keyed_value(&self, name: &str, value: &Value) -> bool {
        self.keyed_param(name)
            && self
                .params()
                .iter()
                .find(|p| p.name == name)
                .is_none_or(|d| d.keyed_value(value))
    }

    /// Whether an instance needs a device slot.
    fn resource(&self, _params: &Params) -> Resource {
        Resource::Cpu
    }

    /// Key material for external content the stage reads (data set files, weight files), or
    /// `None`. Must not contain absolute paths.
    fn fingerprint(
        &self,
        _params: &Params,
        _env: &FingerprintEnv<'_>,
    ) -> Result<Option<Value>, StageError> {
        Ok(None)
    }
}

/// How a kind does its work, writing outputs into `ctx.out_dir()`. Separate from [`Stage`]
/// because a declaration is all the engine needs to plan and key an instance: the kinds that
/// need tensors are declared here and run in the tensor crate's worker processes, so the engine
/// never loads libtorch.
pub trait Run: Send + Sync {
    /// Does the work.
    fn run(&self, ctx: &mut StageContext<'_>) -> Result<(), StageError>;
}

/// `names` as [`Stage::records`] returns them.
pub fn declared(names: &[&str]) -> Option<Vec<String>> {
    Some(names.iter().map(|n| n.to_string()).collect())
}

/// Whether `name` is one of `declared` ([`Stage::records`]: exact, or in a `prefix*` or
/// `*suffix` family).
pub fn declares_metric<'a>(declared: impl IntoIterator<Item = &'a str>, name: &str) -> bool {
    declared.into_iter().any(|pattern| {
        if let Some(prefix) = pattern.strip_suffix('*') {
            name.starts_with(prefix) && name.len() > prefix.len()
        } else if let Some(suffix) = pattern.strip_prefix('*') {
            name.ends_with(suffix) && name.len() > suffix.len()
        } else {
            pattern == name
        }
    })
}

/// The parameter declaration `name` of `stage`, if declared.
pub(crate) fn param_decl<'a>(stage: &'a dyn Stage, name: &str) -> Option<&'a ParamDecl> {
    stage.params().iter().find(|p| p.name == name)
}

#[cfg(test)]
mod tests {
    use super::declares_metric;

    #[test]
    fn a_declared_family_matches_a_prefix_or_suffix_with_something_after() {
        let declared = ["diff_*", "*_images", "map"];
        assert!(declares_metric(declared, "diff_map"));
        assert!(!declares_metric(declared, "diff_"));
        assert!(declares_metric(declared, "train_images"));
        assert!(!declares_metric(declared, "_images"));
        assert!(declares_metric(declared, "map"));
        assert!(!declares_metric(declared, "mAP"));
    }
}
