//! Where a run's reports are published: `reports/PIPELINE/`, or `reports/PIPELINE+DIGEST/`
//! when overrides change the resolved pipeline (DIGEST names the resolved pipeline, not the
//! override text, so a one-off run never replaces the plain pipeline's tables and identical
//! variants share one folder); `--reports DIR` names the folder outright. Each report
//! instance gets its own folder below, and a table made with overrides names them at its foot.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;

use super::load::PlanSource;
use crate::graph::label_of;
use crate::kind::Registry;
use crate::spec::{self, overrides::command_line, Override};

/// Where a run's reports are published, and which overrides its tables note.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReportsRoot {
    /// The folder.
    pub dir: PathBuf,
    /// The overrides, or none when they resolve to the pipeline the file already is (a no-op
    /// `--set` publishes to the plain folder and notes nothing).
    pub overrides: Vec<Override>,
    /// Whether `dir` is a variant folder `reports/PIPELINE+DIGEST/`, to be marked with its
    /// overrides ([`super::report_folders::mark_variant`]) after publishing.
    pub variant: bool,
}

impl ReportsRoot {
    /// The folder the reports of `source` are published to (see the module docs): `explicit`
    /// when given, else under `project_dir/reports/`.
    pub fn of(
        source: &PlanSource,
        registry: &Registry,
        project_dir: &Path,
        pipeline: &str,
        explicit: Option<&Path>,
    ) -> anyhow::Result<ReportsRoot> {
        let given = source.overrides.clone();
        if let Some(dir) = explicit {
            return Ok(ReportsRoot {
                dir: dir.to_path_buf(),
                overrides: given,
                variant: false,
            });
        }
        let plain = project_dir.join("reports").join(pipeline);
        if command_line(&given).is_empty() {
            return Ok(ReportsRoot {
                dir: plain,
                overrides: given,
                variant: false,
            });
        }
        let resolved = spec::load(&source.file, &given, registry)?;
        let digest = spec::digest::resolved_digest(&resolved);
        let as_written = spec::load(&source.file, &[], registry)
            .ok()
            .map(|s| spec::digest::resolved_digest(&s));
        Ok(if as_written.as_deref() == Some(digest.as_str()) {
            ReportsRoot {
                dir: plain,
                overrides: Vec::new(),
                variant: false,
            }
        } else {
            let name = super::report_folders::variant_name(pipeline, &digest);
            ReportsRoot {
                dir: project_dir.join("reports").join(name),
                overrides: given,
                variant: true,
            }
        })
    }

    /// The overrides as the user typed them (empty when there are none).
    pub(crate) fn overrides_text(&self) -> String {
        command_line(&self.overrides)
    }

    /// Marks a variant folder with its pipeline and overrides, once something is published.
    pub fn mark(&self, pipeline: &str) -> anyhow::Result<()> {
        if self.variant && self.dir.is_dir() {
            super::report_folders::mark_variant(&self.dir, pipeline, &self.overrides_text())?;
        }
        Ok(())
    }
}

/// The folder of one report instance under `root`.
pub(crate) fn report_folder<'a>(
    root: &Path,
    stage: &str,
    binding: impl IntoIterator<Item = (&'a String, &'a Value)>,
) -> PathBuf {
    root.join(super::publish::folder_name(&folder(stage, binding)))
}

/// The folder of one report instance under the reports root: the stage, or its label.
pub fn folder<'a>(
    stage: &str,
    binding: impl IntoIterator<Item = (&'a String, &'a Value)>,
) -> String {
    label_of(stage, binding)
}

/// Notes the overrides (`text`, as typed) under a published report: a line at the foot of
/// `table.md`, a comment at the end of `table.tex`, and `overrides.txt`. Nothing when there
/// are none.
pub(crate) fn note_overrides(dest: &Path, text: &str) -> anyhow::Result<()> {
    if text.is_empty() {
        return Ok(());
    }
    let append = |name: &str, line: String| -> anyhow::Result<()> {
        let path = dest.join(name);
        if path.is_file() {
            let mut body = std::fs::read_to_string(&path)?;
            body.push_str(&line);
            std::fs::write(&path, body).with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    };
    append("table.md", format!("\nOverrides: `{text}`\n"))?;
    append("table.tex", format!("% overrides: {text}\n"))?;
    std::fs::write(dest.join("overrides.txt"), format!("{text}\n"))
        .with_context(|| format!("writing {}", dest.join("overrides.txt").display()))?;
    Ok(())
}
