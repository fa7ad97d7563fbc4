//! Pushing: a local record and its blobs go to the remote, blobs first, the record last, every
//! put create-only. A push stopped at any point (Ctrl-C, `kill -9`, a network failure) leaves
//! at most some blobs, never a record that names a blob the remote lacks, and large blobs go
//! up in parts that become visible only when complete. Two teammates pushing the same key at
//! once both succeed: the first record written stays, and both describe the same outputs.
//!
//! What the remote already has is not sent again, at any size: each blob and the record get a
//! HEAD first (a no-op push of a whole pipeline is a few hundred HEADs, not the same number of
//! uploads). On a store that ignores create-only puts the HEAD of the record is also what
//! keeps the first record in place (see [`super::Remote::create_only_holds`]).

use super::backend::Backend;
use super::error::RemoteError;
use super::record::{Envelope, RecordBody};
use crate::cache::{Cache, RunRecord};
use crate::kind::Registry;

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
    kinds: &Registry,
) -> Result<PushStats, RemoteError> {
    let body = RecordBody::from_run(run);
    body.validate(&run.key, kinds)
        .map_err(|why| RemoteError::Rejected {
            key: run.key.clone(),
            why,
        })?;
    let record = format!("ac/{}.json", run.key);
    let mut stats = PushStats::default();
    // Every blob is looked at even when the record is there: one quarantined since (a
    // teammate's download found it corrupt) goes up again from this verified copy.
    for digest in blobs_of(cache, run)? {
        let path = cache.objects().open_verified(&digest)?;
        let name = format!("cas/{digest}");
        if backend.size(&name)?.is_none() && backend.put_file_create(&name, &path)? {
            stats.blobs += 1;
            stats.bytes += std::fs::metadata(&path).map_or(0, |m| m.len());
        }
    }
    if backend.size(&record)?.is_some() {
        return Ok(stats);
    }
    let envelope = Envelope::seal(&body, secret);
    stats.created = backend.put_bytes_create(&record, envelope.to_bytes())?;
    Ok(stats)
}
