//! Reading objects for download and display, without writing to the cache.
//!
//! A digest from a URL is accepted only as 64 lowercase hex digits, so it can only ever name a
//! file inside the object store. The bytes are hashed as they are read; a mismatch is reported
//! (the page says to run `asymflow cache verify`) rather than quarantined, since the dashboard
//! never changes the cache.

use super::error::ServeError;
use crate::cache::objects::Manifest;
use crate::cache::Cache;

pub(crate) use crate::cache::objects::is_digest;

/// The verified content of object `digest`.
pub fn read(cache: &Cache, digest: &str) -> Result<Vec<u8>, ServeError> {
    if !is_digest(digest) {
        return Err(ServeError::NotFound(format!(
            "`{digest}` is not an object digest (64 lowercase hex digits)"
        )));
    }
    let missing = || {
        ServeError::NotFound(format!(
            "object {digest} is not in the cache (it may have been collected by `asymflow cache gc`)"
        ))
    };
    let path = cache.objects().local_path(digest).ok_or_else(missing)?;
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(missing()),
        Err(e) => return Err(ServeError::io(&path, e)),
    };
    if blake3::hash(&bytes).to_hex().as_str() != digest {
        return Err(ServeError::Corrupt(digest.to_string()));
    }
    Ok(bytes)
}

/// The size of object `digest` on disk, if present.
pub fn size(cache: &Cache, digest: &str) -> Option<u64> {
    if !is_digest(digest) {
        return None;
    }
    cache.objects().size_of(digest)
}

/// The manifest of a directory output.
pub fn manifest(cache: &Cache, digest: &str) -> Result<Manifest, ServeError> {
    let bytes = read(cache, digest)?;
    serde_json::from_slice(&bytes).map_err(|e| {
        ServeError::io(
            std::path::PathBuf::from(format!("object {digest}")),
            std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        )
    })
}

/// A content type for a file name.
pub(crate) fn content_type(name: &str) -> &'static str {
    let ext = name.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
    match ext.as_str() {
        "json" => "application/json",
        "txt" | "md" | "csv" | "tex" | "log" => "text/plain; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "html" => "text/html; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// A file name safe in a `Content-Disposition` header: the last path component, with every
/// character outside `[A-Za-z0-9._-]` replaced by `_`.
pub(crate) fn download_name(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let clean: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.trim_matches('.').is_empty() {
        "download".into()
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hex_digests_reach_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        for bad in [
            "../../etc/passwd",
            "..%2F..",
            &"g".repeat(64),
            &"A".repeat(64),
        ] {
            assert!(
                matches!(read(&cache, bad), Err(ServeError::NotFound(_))),
                "{bad}"
            );
        }
        let (digest, _) = cache.objects().put_bytes(b"hello").unwrap();
        assert_eq!(read(&cache, &digest).unwrap(), b"hello");
        std::fs::write(cache.objects().local_path(&digest).unwrap(), b"tampered").unwrap();
        assert!(matches!(read(&cache, &digest), Err(ServeError::Corrupt(_))));
        assert!(
            cache
                .objects()
                .local_path(&digest)
                .is_some_and(|p| p.is_file()),
            "never quarantined"
        );
    }

    #[test]
    fn download_names_are_plain() {
        assert_eq!(download_name("../../x\"; y.json"), "x___y.json");
        assert_eq!(download_name(".."), "download");
    }
}
