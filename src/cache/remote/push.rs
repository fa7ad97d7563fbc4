//! Pushing: a local record and its blobs go to the remote, blobs first, the record last, every
//! put create-only. A push stopped at any point (Ctrl-C, `kill -9`, a network failure) leaves
//! at most some blobs, never a record that names a blob the remote lacks, and large blobs go
//! up in parts that become visible only when complete. Two teammates pushing the same key at
//! once both succeed: the first record written stays, and both describe the same outputs.

use super::backend::Backend;
use super::record::{Envelope, RecordBody};
use super::RemoteError;
use crate::cache::{Cache, RunRecord};

/// What a push did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PushStats {
    /// Blobs uploaded (the others were on the remote already).
    pub blobs: usize,
    /// Bytes uploaded.
    pub bytes: u64,
    /// Whether this push created the record (false: it was there already).
    pub created: bool,
}

/// The blobs of `run` in upload order: a directory's files before its manifest.
pub(crate) fn blobs_of(cache: &Cache, run: &RunRecord) -> Result<Vec<String>, RemoteError> {
    let mut out = Vec::new();
    for output in run.outputs.values() {
        if output.is_dir {
            let manifest = cache.objects().read_manifest(&output.digest)?;
            out.extend(manifest.entries.into_iter().map(|(_, d)| d));
        }
        out.push(output.digest.clone());
    }
    Ok(out)
}

/// Pushes `run` (see the module docs).
pub(crate) fn push_record(
    backend: &Backend,
    cache: &Cache,
    run: &RunRecord,
    secret: Option<&str>,
) -> Result<PushStats, RemoteError> {
    let body = RecordBody::from_run(run);
    body.validate(&run.key)
        .map_err(|why| RemoteError::Rejected {
            key: run.key.clone(),
            why,
        })?;
    let mut stats = PushStats::default();
    for digest in blobs_of(cache, run)? {
        let path = cache.objects().open_verified(&digest)?;
        if backend.put_file_create(&format!("cas/{digest}"), &path)? {
            stats.blobs += 1;
            stats.bytes += std::fs::metadata(&path).map_or(0, |m| m.len());
        }
    }
    let envelope = Envelope::seal(&body, secret);
    stats.created =
        backend.put_bytes_create(&format!("ac/{}.json", run.key), envelope.to_bytes())?;
    Ok(stats)
}
