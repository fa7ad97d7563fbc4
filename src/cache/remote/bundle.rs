//! Bundles: a tar file with the remote's layout (`ac/<key>.json`, `cas/<digest>`), for
//! machines that cannot reach the remote (an air-gapped cluster, a reviewer's laptop).
//!
//! `export` writes records sealed exactly as a push would (signed with the team secret when
//! there is one). `import` does not trust the tar: it unpacks only files whose names are
//! exactly `ac/<64 hex>.json` or `cas/<64 hex>` (a leading `./` allowed, as `tar -C dir .`
//! writes it; the entries of the folders `ac/` and `cas/` themselves, and of `.`, are
//! skipped; anything else, links included, is an error naming the entry) into a private folder under the cache's `tmp/`, then pulls from that
//! folder as from a shared-folder remote, so every record is authenticated and validated and
//! every blob verified on the same code path as a remote download.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use super::error::RemoteError;
use super::push::blobs_of;
use super::record::{is_digest, Envelope, RecordBody};
use super::Remote;
use crate::cache::{Cache, RunRecord};
use crate::kind::Registry;

/// What an export or import moved.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BundleStats {
    /// Records.
    pub records: usize,
    /// Blobs.
    pub blobs: usize,
    /// Bytes of blobs.
    pub bytes: u64,
    /// Records that were rejected or incomplete (import only), with the reason.
    pub rejected: Vec<String>,
}

/// Writes `records` and their blobs (verified on the way out) into a tar at `out`. The file
/// appears only when complete.
pub fn export(
    cache: &Cache,
    records: &[RunRecord],
    out: &Path,
    secret: Option<&str>,
) -> Result<BundleStats, RemoteError> {
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // Created as any file the user writes (0666 less the umask: 0644 usually), not
    // tempfile's private 0600: a bundle is made to be handed to others.
    let tmp = tempfile::Builder::new()
        .prefix(".asymflow-bundle-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(|e| RemoteError::local(dir, e))?;
    let mut stats = BundleStats::default();
    {
        let mut tar = tar::Builder::new(BufWriter::new(tmp.as_file()));
        let mut seen = std::collections::BTreeSet::new();
        for run in records {
            for digest in blobs_of(cache, run)? {
                if !seen.insert(digest.clone()) {
                    continue;
                }
                let path = cache.objects().open_verified(&digest)?;
                let mut file = File::open(&path).map_err(|e| RemoteError::local(&path, e))?;
                tar.append_file(format!("cas/{digest}"), &mut file)
                    .map_err(|e| RemoteError::local(out, e))?;
                stats.blobs += 1;
                stats.bytes += std::fs::metadata(&path).map_or(0, |m| m.len());
            }
            let bytes = Envelope::seal(&RecordBody::from_run(run), secret).to_bytes();
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_mtime(run.finished as u64);
            header.set_cksum();
            tar.append_data(
                &mut header,
                format!("ac/{}.json", run.key),
                bytes.as_slice(),
            )
            .map_err(|e| RemoteError::local(out, e))?;
            stats.records += 1;
        }
        let mut writer = tar.into_inner().map_err(|e| RemoteError::local(out, e))?;
        writer.flush().map_err(|e| RemoteError::local(out, e))?;
    }
    tmp.as_file()
        .sync_all()
        .map_err(|e| RemoteError::local(out, e))?;
    tmp.persist(out)
        .map_err(|e| RemoteError::local(out, e.error))?;
    Ok(stats)
}

/// What to do with a tar entry.
#[derive(Debug, PartialEq)]
enum Entry {
    /// A file of the layout, under this name.
    File(String),
    /// A folder of the layout (`ac/`, `cas/`, `./`): nothing to unpack.
    Folder,
    /// Anything else.
    Refused,
}

/// What the entry `name` of type `kind` is.
fn classify(name: &str, kind: tar::EntryType) -> Entry {
    let mut name = name;
    while let Some(rest) = name.strip_prefix("./") {
        name = rest;
    }
    if kind.is_dir() {
        return match name.trim_end_matches('/') {
            "" | "." | "ac" | "cas" => Entry::Folder,
            _ => Entry::Refused,
        };
    }
    if kind.is_file() && allowed(name) {
        Entry::File(name.to_string())
    } else {
        Entry::Refused
    }
}

/// Whether `name` is a file a bundle may hold.
fn allowed(name: &str) -> bool {
    match name.split_once('/') {
        Some(("cas", digest)) => is_digest(digest),
        Some(("ac", file)) => file.strip_suffix(".json").is_some_and(is_digest),
        _ => false,
    }
}

/// Imports a bundle into `cache` (see the module docs). Records already in the local index
/// are left as they are.
pub fn import(
    cache: &Cache,
    bundle: &Path,
    secret: Option<String>,
    kinds: std::sync::Arc<Registry>,
) -> Result<BundleStats, RemoteError> {
    let file = File::open(bundle).map_err(|e| RemoteError::local(bundle, e))?;
    let tmp_root = cache.tmp_dir();
    std::fs::create_dir_all(&tmp_root).map_err(|e| RemoteError::local(&tmp_root, e))?;
    let staging = tempfile::Builder::new()
        .prefix("import-")
        .tempdir_in(&tmp_root)
        .map_err(|e| RemoteError::local(&tmp_root, e))?;
    for sub in ["ac", "cas"] {
        let d = staging.path().join(sub);
        std::fs::create_dir_all(&d).map_err(|e| RemoteError::local(&d, e))?;
    }
    let mut archive = tar::Archive::new(std::io::BufReader::new(file));
    let entries = archive
        .entries()
        .map_err(|e| RemoteError::local(bundle, e))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| RemoteError::local(bundle, e))?;
        let name = entry
            .path()
            .map_err(|e| RemoteError::local(bundle, e))?
            .to_string_lossy()
            .into_owned();
        let name = match classify(&name, entry.header().entry_type()) {
            Entry::File(name) => name,
            Entry::Folder => continue,
            Entry::Refused => {
                return Err(RemoteError::Local(format!(
                    "{}: unexpected entry `{}` (a bundle holds only ac/<key>.json and cas/<digest> files); not imported",
                    bundle.display(),
                    name.chars().take(200).collect::<String>()
                )))
            }
        };
        let dest = staging.path().join(&name);
        let mut out = File::create(&dest).map_err(|e| RemoteError::local(&dest, e))?;
        std::io::copy(&mut entry, &mut out).map_err(|e| RemoteError::local(&dest, e))?;
    }
    let remote = Remote::folder(staging.path(), secret, kinds)?;
    let mut stats = BundleStats::default();
    let index = cache.index()?;
    for key in remote.keys()? {
        if index.lookup(&key)?.is_some() {
            continue;
        }
        match remote.fetch(cache, &key, None) {
            Ok(Some(fetched)) => {
                stats.records += 1;
                stats.blobs += fetched.blobs;
                stats.bytes += fetched.bytes;
            }
            Ok(None) => {}
            Err(e) if e.is_miss() => stats.rejected.push(e.to_string()),
            Err(e) => return Err(e),
        }
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::{allowed, classify, Entry};

    #[test]
    fn folder_entries_and_a_leading_dot_slash_are_accepted() {
        let d = "ab".repeat(32);
        let dir = tar::EntryType::Directory;
        let file = tar::EntryType::Regular;
        for folder in ["./", "ac/", "cas/", "./ac/", "./cas", "."] {
            assert_eq!(classify(folder, dir), Entry::Folder, "{folder}");
        }
        assert_eq!(
            classify(&format!("./cas/{d}"), file),
            Entry::File(format!("cas/{d}"))
        );
        assert_eq!(classify("other/", dir), Entry::Refused);
        assert_eq!(classify("../", dir), Entry::Refused);
        assert_eq!(classify(&format!("cas/{d}"), dir), Entry::Refused);
        assert_eq!(classify(&format!("ac/{d}"), file), Entry::Refused);
        assert_eq!(
            classify(&format!("cas/{d}"), tar::EntryType::Symlink),
            Entry::Refused
        );
    }

    #[test]
    fn only_the_remote_layout_is_allowed_in_a_bundle() {
        let d = "ab".repeat(32);
        assert!(allowed(&format!("cas/{d}")));
        assert!(allowed(&format!("ac/{d}.json")));
        for bad in [
            format!("../cas/{d}"),
            format!("/cas/{d}"),
            format!("cas/{d}/x"),
            format!("ac/{d}"),
            "index.sqlite".to_string(),
            format!("cas/../{d}"),
        ] {
            assert!(!allowed(&bad), "{bad}");
        }
    }
}
