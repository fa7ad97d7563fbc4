//! `asymflow remote gc`: a remote only grows (every push adds, nothing removes), so this
//! removes what nobody needs: records neither needed by a named pipeline nor pushed in the
//! last N days, the blobs no remaining record names, quarantined blobs, leftover probes, and
//! unfinished multipart uploads (on S3 through [`super::uploads`], where the server lists
//! them).
//!
//! The order keeps the remote consistent at every moment: records go first, then the blobs
//! only they named, so no record ever names a missing blob. A blob written recently is kept
//! even when no record names it yet, since a push uploads its blobs before its record
//! ([`GcOptions::min_age`], a day by default). Records are read leniently here (the digests they name, nothing else): a record
//! this asymflow would reject, or cannot read (a newer format), still protects its blobs, and
//! gc never deletes a record it was asked to keep.

use std::collections::BTreeSet;

use super::backend::Listed;
use super::error::RemoteError;
use super::record::{is_digest, Envelope};
use super::uploads::{Unfinished, Upload};
use super::Remote;
use crate::cache::objects::Manifest;

/// What to keep.
#[derive(Debug, Clone, Default)]
pub struct GcOptions {
    /// Stage keys to keep (what named pipelines need).
    pub keep_keys: BTreeSet<String>,
    /// Keep records pushed within this many days.
    pub keep_days: Option<u64>,
    /// Unnamed blobs, probes and unfinished uploads younger than this many seconds are kept:
    /// a push in progress uploads its blobs before its record.
    pub min_age: i64,
    /// Only say what would go.
    pub dry_run: bool,
    /// Now, in seconds since the epoch.
    pub now: i64,
}

/// What a gc removed (or, dry, would remove).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct GcReport {
    /// Whether nothing was deleted.
    pub dry_run: bool,
    /// Records kept.
    pub records_kept: usize,
    /// Records removed.
    pub records_removed: usize,
    /// Blobs kept.
    pub blobs_kept: usize,
    /// Blobs removed.
    pub blobs_removed: usize,
    /// Bytes of the blobs removed.
    pub bytes_removed: u64,
    /// Quarantined objects removed.
    pub quarantine_removed: usize,
    /// Unfinished multipart uploads aborted; `None` where the store does not show them.
    pub uploads_aborted: Option<usize>,
    /// Why `uploads_aborted` is `None`, and what to do instead.
    pub uploads_note: Option<String>,
    /// Objects that could not be removed, with why.
    pub failed: Vec<String>,
}

impl Remote {
    /// Collects the remote's garbage (see the module docs).
    pub fn gc(&self, options: &GcOptions) -> Result<GcReport, RemoteError> {
        let mut report = GcReport {
            dry_run: options.dry_run,
            ..GcReport::default()
        };
        let records = self.backend.list_dated("ac")?;
        let mut named: BTreeSet<String> = BTreeSet::new();
        let mut doomed = Vec::new();
        for record in &records {
            if self.keeps_record(record, options) {
                report.records_kept += 1;
                named.extend(self.digests_named(&record.path)?);
            } else {
                doomed.push(record.path.clone());
            }
        }
        report.records_removed = doomed.len();
        self.remove_all(&doomed, options.dry_run, &mut report.failed);

        let recent = options.now - options.min_age;
        let mut blobs = Vec::new();
        for blob in self.backend.list_dated("cas")? {
            let digest = blob.path.strip_prefix("cas/").unwrap_or(&blob.path);
            if named.contains(digest) || blob.modified > recent {
                report.blobs_kept += 1;
            } else {
                report.bytes_removed += blob.size;
                blobs.push(blob.path);
            }
        }
        report.blobs_removed = blobs.len();
        self.remove_all(&blobs, options.dry_run, &mut report.failed);

        let quarantined: Vec<String> = self
            .backend
            .list("quarantine")?
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        report.quarantine_removed = quarantined.len();
        self.remove_all(&quarantined, options.dry_run, &mut report.failed);
        let probes: Vec<String> = self
            .backend
            .list_dated("probe")?
            .into_iter()
            .filter(|p| p.modified < recent)
            .map(|p| p.path)
            .collect();
        self.remove_all(&probes, options.dry_run, &mut report.failed);

        self.abort_unfinished_uploads(recent, options.dry_run, &mut report);
        Ok(report)
    }

    fn keeps_record(&self, record: &Listed, options: &GcOptions) -> bool {
        let key = record
            .path
            .strip_prefix("ac/")
            .and_then(|p| p.strip_suffix(".json"))
            .unwrap_or("");
        let recent = options
            .keep_days
            .is_some_and(|d| record.modified >= options.now - (d as i64) * 86_400);
        recent || options.keep_keys.contains(key)
    }

    /// Every digest the record at `path` names, a directory's files included. Read
    /// leniently: whatever is not a digest is skipped, nothing is rejected.
    fn digests_named(&self, path: &str) -> Result<Vec<String>, RemoteError> {
        let Some(bytes) = self.backend.get_bytes(path)? else {
            return Ok(Vec::new());
        };
        let Ok(envelope) = serde_json::from_slice::<Envelope>(&bytes) else {
            return Ok(Vec::new());
        };
        let Ok(body) = serde_json::from_str::<serde_json::Value>(&envelope.body) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        let outputs = body["outputs"].as_object().cloned().unwrap_or_default();
        for output in outputs.values() {
            let Some(digest) = output["digest"].as_str().filter(|d| is_digest(d)) else {
                continue;
            };
            out.push(digest.to_string());
            if output["is_dir"].as_bool() == Some(true) {
                out.extend(self.manifest_digests(digest)?);
            }
        }
        Ok(out)
    }

    fn manifest_digests(&self, digest: &str) -> Result<Vec<String>, RemoteError> {
        let Some(bytes) = self.backend.get_bytes(&format!("cas/{digest}"))? else {
            return Ok(Vec::new());
        };
        let Ok(manifest) = serde_json::from_slice::<Manifest>(&bytes) else {
            return Ok(Vec::new());
        };
        Ok(manifest
            .entries
            .into_iter()
            .map(|(_, d)| d)
            .filter(|d| is_digest(d))
            .collect())
    }

    fn remove_all(&self, paths: &[String], dry_run: bool, failed: &mut Vec<String>) {
        if dry_run {
            return;
        }
        for path in paths {
            if let Err(e) = self.backend.delete(path) {
                failed.push(format!("{path}: {e}"));
            }
        }
    }

    /// Aborts the multipart uploads started before `before` that never completed: on a
    /// shared folder their part files, on S3 through its own listing. A server that does not
    /// list them leaves `uploads_aborted` at `None`, with a note saying so.
    fn abort_unfinished_uploads(&self, before: i64, dry_run: bool, report: &mut GcReport) {
        if let Some(found) = self.remove_folder_parts(before, dry_run) {
            report.uploads_aborted = Some(found);
            return;
        }
        let lifecycle =
            "a lifecycle rule on the bucket (AbortIncompleteMultipartUpload) removes them";
        match self.backend.unfinished_uploads() {
            Ok(Some(Unfinished::Listed(all))) => {
                let old = started_before(all, before);
                let mut aborted = old.len();
                if !dry_run {
                    for upload in &old {
                        if let Err(e) = self.backend.abort_upload(upload) {
                            aborted -= 1;
                            report.failed.push(format!(
                                "the unfinished upload {} of {}: {e}",
                                upload.id, upload.key
                            ));
                        }
                    }
                }
                report.uploads_aborted = Some(aborted);
            }
            Ok(Some(Unfinished::Unsupported(why))) => {
                report.uploads_note = Some(format!("not listed: {why}; {lifecycle}"));
            }
            Ok(None) => {
                report.uploads_note = Some(format!("this store does not show them; {lifecycle}"));
            }
            Err(e) => report.failed.push(format!("unfinished uploads: {e}")),
        }
    }

    /// On a shared folder, removes the part files of uploads that never completed (the
    /// store keeps them as `NAME#N` beside their object); `None` elsewhere.
    fn remove_folder_parts(&self, before: i64, dry_run: bool) -> Option<usize> {
        let folder = self.backend.folder.as_ref()?;
        let mut found = 0;
        let mut stack = vec![folder.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let Ok(meta) = entry.metadata() else { continue };
                if meta.is_dir() {
                    stack.push(path);
                    continue;
                }
                let old = meta
                    .modified()
                    .ok()
                    .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
                    .is_some_and(|d| (d.as_secs() as i64) < before);
                if old && entry.file_name().to_string_lossy().contains('#') {
                    found += 1;
                    if !dry_run {
                        let _ = std::fs::remove_file(&path);
                    }
                }
            }
        }
        Some(found)
    }
}

/// The uploads started before `before` (a push still in progress started later).
fn started_before(uploads: Vec<Upload>, before: i64) -> Vec<Upload> {
    uploads
        .into_iter()
        .filter(|u| u.initiated < before)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_uploads_started_before_the_cut_off_are_aborted() {
        let upload = |key: &str, initiated| Upload {
            key: key.into(),
            id: "id".into(),
            initiated,
        };
        let all = vec![upload("old", 99), upload("now", 100), upload("young", 101)];
        let old = started_before(all, 100);
        assert_eq!(old, vec![upload("old", 99)]);
    }
}
