//! Checking a cache folder against its own records (`asymflow cache verify`): every object's
//! content against its digest, every result's outputs (and the files of its directory
//! outputs) present and sound. What is corrupt is quarantined; a result that reaches a corrupt
//! or missing object, or records an unsafe output name or digest, is forgotten, so its stage
//! runs again instead of being served from a damaged cache.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::results::check_output;
use super::{Cache, IndexError, ObjectError};

/// An object whose content no longer matches its digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptObject {
    /// The digest it is stored under.
    pub digest: String,
    /// What its content hashes to.
    pub actual: String,
    /// Where it was moved.
    pub quarantined: PathBuf,
}

/// What `verify` found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyOutcome {
    /// Objects checked.
    pub checked: usize,
    /// Objects found corrupt, in the order found (each quarantined).
    pub corrupt: Vec<CorruptObject>,
    /// Results forgotten, by key, with why.
    pub forgotten: BTreeMap<String, String>,
}

impl VerifyOutcome {
    /// Whether anything was wrong.
    pub fn clean(&self) -> bool {
        self.corrupt.is_empty() && self.forgotten.is_empty()
    }
}

/// A failure to verify (not a finding: those are the outcome).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The index failed.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The object store could not be listed.
    #[error(transparent)]
    Objects(#[from] ObjectError),
}

/// Verifies `cache`, quarantining corrupt objects and forgetting the results they break.
pub fn verify(cache: &Cache) -> Result<VerifyOutcome, VerifyError> {
    let mut index = cache.index()?;
    let mut outcome = VerifyOutcome::default();
    let objects = cache.objects();
    for (digest, _) in objects.list()? {
        outcome.checked += 1;
        if let Err(ObjectError::Corrupt {
            actual,
            quarantined,
            ..
        }) = objects.open_verified(&digest)
        {
            outcome.corrupt.push(CorruptObject {
                digest,
                actual,
                quarantined,
            });
        }
    }
    let corrupt: BTreeSet<&str> = outcome.corrupt.iter().map(|c| c.digest.as_str()).collect();
    outcome.forgotten = broken_results(cache, &index, &corrupt)?;
    for key in outcome.forgotten.keys() {
        index.forget(key)?;
    }
    for digest in &corrupt {
        index.forget_object(digest)?;
    }
    Ok(outcome)
}

/// Every result with an unsafe record or an output (or a file of a directory output) that is
/// corrupt or missing, with why.
fn broken_results(
    cache: &Cache,
    index: &super::Index,
    corrupt: &BTreeSet<&str>,
) -> Result<BTreeMap<String, String>, VerifyError> {
    let objects = cache.objects();
    let mut broken: BTreeMap<String, String> = BTreeMap::new();
    for (key, name, output) in index.recorded_outputs()? {
        if broken.contains_key(&key) {
            continue;
        }
        if let Err(e) = check_output(&key, &name, &output) {
            broken.insert(key, e.to_string());
            continue;
        }
        let mut needed = vec![output.digest.clone()];
        if output.is_dir {
            match objects.read_manifest(&output.digest) {
                Ok(m) => needed.extend(m.entries.into_iter().map(|(_, d)| d)),
                Err(e) => {
                    broken.insert(key, format!("output `{name}`: {e}"));
                    continue;
                }
            }
        }
        if let Some(gone) = needed
            .iter()
            .find(|d| corrupt.contains(d.as_str()) || !objects.contains(d))
        {
            let what = if corrupt.contains(gone.as_str()) {
                "corrupt"
            } else {
                "missing"
            };
            broken.insert(key, format!("output `{name}`: object {gone} is {what}"));
        }
    }
    Ok(broken)
}
