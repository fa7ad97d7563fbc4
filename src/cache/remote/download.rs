//! Verified downloads: every blob is hashed while it streams into a temp file in the cache's
//! `tmp/`, and enters the object store only if the content matches its name. A mismatch
//! quarantines both copies (the temp file under `quarantine/remote-<digest>`, the remote
//! object under the remote's `quarantine/`) and is a miss, so nothing unverified ever reaches
//! a stage. Each output is also checked for its type ([`super::content`]) before it enters
//! the store: a blob that is genuine but not what its name says (a record naming the wrong
//! objects) is a rejected record, and nothing of it is stored. The run's metrics are read from
//! its verified `metrics.json`, never from the record. The local index records the run only
//! after every blob is in place.

use std::io::Write;

use super::backend::Backend;
use super::error::RemoteError;
use super::record::{check_manifest, read_metrics, Invalid, RecordBody};
use crate::cache::{Cache, RunRecord};

/// What a fetch brought in.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The record, now in the local index.
    pub record: RunRecord,
    /// Blobs downloaded (the others were already local).
    pub blobs: usize,
    /// Bytes downloaded.
    pub bytes: u64,
}

/// The content check of the file stored as `name`, as a rejection of record `key`.
fn check_content(
    key: &str,
    name: &str,
    digest: &str,
    path: &std::path::Path,
) -> Result<(), RemoteError> {
    super::content::check(name, path).map_err(|why| RemoteError::Rejected {
        key: key.to_string(),
        why: Invalid::Content {
            output: name.chars().take(200).collect(),
            digest: digest.to_string(),
            why,
        },
    })
}

/// Downloads blob `digest`, the file `name` of record `key`, into the local store unless it is
/// there, checking its content for that name before it is stored. Returns the bytes downloaded
/// (0 when it was local).
fn download_blob(
    backend: &Backend,
    cache: &Cache,
    key: &str,
    (name, digest): (&str, &str),
    progress: Option<&indicatif::ProgressBar>,
) -> Result<u64, RemoteError> {
    if let Some(path) = cache.objects().local_path(digest) {
        // Rehashed before any stage reads it; only its type is in question here.
        check_content(key, name, digest, &path)?;
        return Ok(0);
    }
    let tmp_dir = cache.tmp_dir();
    std::fs::create_dir_all(&tmp_dir).map_err(|e| RemoteError::local(&tmp_dir, e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix("download-")
        .tempfile_in(&tmp_dir)
        .map_err(|e| RemoteError::local(&tmp_dir, e))?;
    let mut hasher = blake3::Hasher::new();
    let tmp_path = tmp.path().to_path_buf();
    let got = {
        let mut writer = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        let got = backend.get_into(&format!("cas/{digest}"), &mut writer, &mut |chunk| {
            hasher.update(chunk);
            if let Some(bar) = progress {
                bar.inc(chunk.len() as u64);
            }
        })?;
        writer
            .flush()
            .map_err(|e| RemoteError::local(&tmp_path, e))?;
        got
    };
    let Some(size) = got else {
        return Err(RemoteError::MissingBlob {
            key: key.to_string(),
            digest: digest.to_string(),
        });
    };
    let actual = hasher.finalize().to_hex().to_string();
    if actual != digest {
        let dir = cache.dir().join("quarantine");
        std::fs::create_dir_all(&dir).map_err(|e| RemoteError::local(&dir, e))?;
        let local = dir.join(format!("remote-{digest}"));
        tmp.persist(&local)
            .map_err(|e| RemoteError::local(&local, e.error))?;
        let remote = format!("quarantine/{digest}");
        let moved = backend.rename(&format!("cas/{digest}"), &remote);
        let quarantined = match moved {
            Ok(()) => format!("{} (and {remote} on the remote)", local.display()),
            Err(_) => local.display().to_string(),
        };
        return Err(RemoteError::Corrupt {
            digest: digest.to_string(),
            actual,
            quarantined,
        });
    }
    check_content(key, name, digest, &tmp_path)?;
    // `put_file` fsyncs before it renames into place.
    let path = tmp.into_temp_path();
    let (stored, _) = cache.objects().put_file(&path)?;
    if stored != digest {
        return Err(RemoteError::Local(format!(
            "blob {digest} changed on the local disk while it was stored (now {stored})"
        )));
    }
    Ok(size)
}

/// The metrics of a record whose blobs are local: its `metrics.json`, none without one.
pub(crate) fn local_metrics(
    cache: &Cache,
    body: &RecordBody,
) -> Result<std::collections::BTreeMap<String, f64>, RemoteError> {
    let Some(output) = body.outputs.get(crate::kind::METRICS_OUTPUT) else {
        return Ok(Default::default());
    };
    let path = cache.objects().open_verified(&output.digest)?;
    let bytes = std::fs::read(&path).map_err(|e| RemoteError::local(&path, e))?;
    read_metrics(&bytes).map_err(|why| RemoteError::Rejected {
        key: body.key.clone(),
        why,
    })
}

/// Downloads every blob of `body` (a directory's manifest first, then its files), then
/// records the run, with the metrics of its verified `metrics.json`, in the local index.
pub(crate) fn fetch_record(
    backend: &Backend,
    cache: &Cache,
    body: &RecordBody,
    progress: Option<&indicatif::ProgressBar>,
) -> Result<Fetched, RemoteError> {
    let mut blobs = 0usize;
    let mut bytes = 0u64;
    let mut sizes = Vec::new();
    let mut get = |name: &str, digest: &str| -> Result<(), RemoteError> {
        let n = download_blob(backend, cache, &body.key, (name, digest), progress)?;
        if n > 0 {
            blobs += 1;
            bytes += n;
        }
        Ok(())
    };
    for (name, output) in &body.outputs {
        // A directory's own blob is its manifest; its files are checked by their names.
        get(if output.is_dir { "" } else { name }, &output.digest)?;
        if output.is_dir {
            let manifest = cache.objects().read_manifest(&output.digest)?;
            check_manifest(&manifest).map_err(|why| RemoteError::Rejected {
                key: body.key.clone(),
                why,
            })?;
            for (path, digest) in &manifest.entries {
                get(path, digest)?;
            }
        }
        let size = cache.objects().size_of(&output.digest).unwrap_or(0);
        sizes.push((output.digest.clone(), size));
    }
    let record = body.to_run(local_metrics(cache, body)?);
    cache.index()?.record_success(&record, &sizes)?;
    Ok(Fetched {
        record,
        blobs,
        bytes,
    })
}
