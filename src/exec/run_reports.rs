//! A run's reports: their folders checked before anything runs (a destination that is not
//! ours fails now, not after hours of training), and after the run each report instance that
//! has a result copied out of the cache into its folder, its overrides noted under its table.

use std::path::{Path, PathBuf};

use super::publish::{self, PublishError};
use super::reports_root::{note_overrides, report_folder, ReportsRoot};
use super::RunSummary;
use crate::cache::{Cache, Index};
use crate::graph::{label_of, Plan};
use crate::kind::Registry;

/// What publishing a run's reports gave.
#[derive(Debug, Default)]
pub(crate) struct Published {
    /// Each published table: the report's label, its markdown, its folder.
    pub tables: Vec<(String, String, PathBuf)>,
    /// Reports that could not be copied out of the cache.
    pub errors: Vec<PublishError>,
    /// Report instances without a result (their inputs failed, or the run stopped).
    pub unrendered: Vec<String>,
}

/// Refuses, when the plan has reports, a reports root inside the cache and report folders
/// asymflow did not publish.
pub(crate) fn check_folders(
    plan: &Plan,
    registry: &Registry,
    cache: &Cache,
    root: &Path,
) -> anyhow::Result<()> {
    let folders: Vec<PathBuf> = plan
        .instances()
        .iter()
        .filter(|inst| registry.get(&inst.kind).is_some_and(|k| k.publishes()))
        .map(|inst| report_folder(root, &inst.stage, &inst.binding))
        .collect();
    if !folders.is_empty() {
        publish::check_outside_cache(root, cache.dir())?;
    }
    for folder in &folders {
        publish::check_replaceable(folder)?;
    }
    Ok(())
}

/// Copies every report instance of `summary` that has a result to its folder under
/// `reports`.
pub(crate) fn publish_reports(
    plan: &Plan,
    registry: &Registry,
    cache: &Cache,
    index: &Index,
    summary: &RunSummary,
    reports: &ReportsRoot,
) -> anyhow::Result<Published> {
    let overrides = reports.overrides_text();
    let mut published = Published::default();
    for outcome in &summary.instances {
        let publishes = plan
            .spec()
            .stage(&outcome.stage)
            .and_then(|s| registry.get(&s.kind))
            .is_some_and(|k| k.publishes());
        if !publishes {
            continue;
        }
        let instance = label_of(&outcome.stage, &outcome.binding);
        let record = match &outcome.key {
            Some(key) => index.lookup(key)?,
            None => None,
        };
        let Some(record) = record else {
            published.unrendered.push(instance);
            continue;
        };
        let dest = report_folder(&reports.dir, &outcome.stage, &outcome.binding);
        let written = match publish::publish(cache, &record, &dest, &instance) {
            Ok(written) => written,
            Err(e) => {
                published.errors.push(e);
                continue;
            }
        };
        note_overrides(&dest, &overrides)?;
        if written
            .iter()
            .any(|p| p.file_name().is_some_and(|n| n == "table.md"))
        {
            let table = std::fs::read_to_string(dest.join("table.md"))?;
            published.tables.push((instance, table, dest));
        }
    }
    Ok(published)
}
