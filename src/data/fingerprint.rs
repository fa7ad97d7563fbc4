//! Fingerprints of real data sets: what a `split` stage's cache key holds about the files it
//! reads.
//!
//! The fingerprint covers every listed image's relative path and blake3 content hash, and the
//! hashes of the annotation files that produced the listing, folded into one digest (the
//! per-image list of a 120,000-image data set would bloat every key). Editing, adding or
//! removing an image changes the digest; moving the root changes nothing, because no absolute
//! path enters it. Hashing goes through [`FileHasher`], which the cache index implements with
//! a memo keyed by (path, size, mtime), so a second run over an unchanged tree reads no image.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use rayon::prelude::*;
use serde_json::{json, Value};

use super::dataset::DatasetKind;
use super::listing::Listing;
use super::DataError;
use crate::kind::FileHasher;

/// Hashes files directly with blake3, without a memo (for code that has no cache index).
#[derive(Debug, Default, Clone, Copy)]
pub struct DirectHasher;

impl FileHasher for DirectHasher {
    fn hash_file(&self, path: &Path) -> std::io::Result<String> {
        let mut file = std::fs::File::open(path)?;
        let mut hasher = blake3::Hasher::new();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = file.read(&mut buf)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
        Ok(hasher.finalize().to_hex().to_string())
    }
}

/// The content fingerprint of a listed real data set.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FilesFingerprint {
    /// The layout.
    pub kind: DatasetKind,
    /// Number of images.
    pub images: usize,
    /// Annotation file (relative) -> its blake3 hash.
    pub annotations: BTreeMap<String, String>,
    /// blake3 over the sorted lines `relative path \0 content hash \n` of every image.
    pub content: String,
}

impl FilesFingerprint {
    /// Hashes every image and annotation file of `listing` under `root` (in parallel).
    pub fn compute(
        kind: DatasetKind,
        root: &Path,
        listing: &Listing,
        hasher: &dyn FileHasher,
    ) -> Result<FilesFingerprint, DataError> {
        let hash = |rel: &str| {
            let path = root.join(rel);
            hasher.hash_file(&path).map_err(|e| DataError::io(path, e))
        };
        let annotations = listing
            .annotations
            .iter()
            .map(|a| Ok((a.clone(), hash(a)?)))
            .collect::<Result<BTreeMap<_, _>, DataError>>()?;
        let mut lines: Vec<(String, String)> = listing
            .entries
            .par_iter()
            .map(|e| Ok((e.id.clone(), hash(&e.id)?)))
            .collect::<Result<_, DataError>>()?;
        lines.sort();
        lines.dedup();
        let mut digest = blake3::Hasher::new();
        for (id, h) in &lines {
            digest.update(id.as_bytes());
            digest.update(b"\0");
            digest.update(h.as_bytes());
            digest.update(b"\n");
        }
        Ok(FilesFingerprint {
            kind,
            images: lines.len(),
            annotations,
            content: digest.finalize().to_hex().to_string(),
        })
    }

    /// The key material: layout, image count, annotation hashes and the content digest.
    pub fn to_value(&self) -> Value {
        json!({
            "dataset": self.kind.name(),
            "images": self.images,
            "annotations": self.annotations,
            "content": self.content,
        })
    }
}
