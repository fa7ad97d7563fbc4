//! What went wrong with the remote, and the advice each failure carries (the S3 error code
//! and what to fix: credentials, bucket, network or configuration).
//!
//! Its own file because the backend, downloads, pushes, bundles and `remote gc` all return
//! it while the module root, whose [`super::Remote`] drives them, imports them: in the root,
//! the error made each of them import a file that imports it.

use std::path::Path;

use super::record::Invalid;

/// What went wrong with the remote.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The remote is configured wrongly.
    #[error("remote {url}: {why}")]
    Config {
        /// The configured URL.
        url: String,
        /// What is wrong and how to fix it.
        why: String,
    },
    /// The remote did not answer, refused the credentials, or has no such bucket.
    #[error("remote {url}: cannot {what} {path}: {problem}\n  fix: {fix}")]
    Unavailable {
        /// The remote.
        url: String,
        /// The operation.
        what: String,
        /// The object.
        path: String,
        /// What the store said (first line).
        problem: String,
        /// What to do about it.
        fix: String,
    },
    /// A record was rejected (a miss: never used).
    #[error("remote record {key} rejected: {why}")]
    Rejected {
        /// The stage key.
        key: String,
        /// Why.
        why: Invalid,
    },
    /// A downloaded blob did not match its digest (a miss: never used).
    #[error("remote blob cas/{digest} is corrupt (content hashes to {actual}); quarantined as {quarantined}")]
    Corrupt {
        /// Its name.
        digest: String,
        /// What it hashes to.
        actual: String,
        /// Where it went.
        quarantined: String,
    },
    /// A record names a blob the remote does not hold (a miss).
    #[error("remote record {key} names blob cas/{digest}, which the remote does not hold")]
    MissingBlob {
        /// The record.
        key: String,
        /// The blob.
        digest: String,
    },
    /// The local side failed (disk, index).
    #[error("{0}")]
    Local(String),
}

impl RemoteError {
    /// Whether this error means "not usable from the remote; compute it" rather than "the
    /// remote is broken".
    pub(crate) fn is_miss(&self) -> bool {
        matches!(
            self,
            RemoteError::Rejected { .. }
                | RemoteError::Corrupt { .. }
                | RemoteError::MissingBlob { .. }
        )
    }

    pub(crate) fn local(path: &Path, e: impl std::fmt::Display) -> RemoteError {
        RemoteError::Local(format!("{}: {e}", path.display()))
    }

    pub(crate) fn from_store(
        url: &str,
        what: &str,
        path: &str,
        e: object_store::Error,
    ) -> RemoteError {
        let mut chain = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            chain.push_str(": ");
            chain.push_str(&s.to_string());
            source = s.source();
        }
        let lower = chain.to_ascii_lowercase();
        let fix = if matches!(
            e,
            object_store::Error::Unauthenticated { .. }
                | object_store::Error::PermissionDenied { .. }
        ) || lower.contains("invalidaccesskeyid")
            || lower.contains("signaturedoesnotmatch")
            || lower.contains("accessdenied")
            || lower.contains("403 forbidden")
        {
            "check the credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE and ~/.aws/credentials"
        } else if lower.contains("nosuchbucket") || lower.contains("bucket does not exist") {
            "the bucket does not exist: create it (`aws s3 mb s3://BUCKET`) or fix `remote` in asymflow.toml"
        } else if lower.contains("connect")
            || lower.contains("dns")
            || lower.contains("timed out")
            || lower.contains("timeout")
        {
            "the remote does not answer: check the network, the `endpoint` setting, or pass --offline to work without it"
        } else {
            "check `remote` in asymflow.toml (or ASYMFLOW_REMOTE); pass --offline to work without it"
        };
        let problem = concise(&chain, &e);
        RemoteError::Unavailable {
            url: url.into(),
            what: what.into(),
            path: path.into(),
            problem,
            fix: fix.to_string(),
        }
    }
}

/// The part of a store error a person needs: the S3 error code and message when the server
/// sent one, else the innermost cause (`Connection refused`).
fn concise(chain: &str, e: &object_store::Error) -> String {
    let tag = |name: &str| {
        let open = format!("<{name}>");
        let start = chain.find(&open)? + open.len();
        let end = chain[start..].find("</")? + start;
        Some(chain[start..end].to_string())
    };
    if let Some(code) = tag("Code") {
        return match tag("Message") {
            Some(message) => format!("{code}: {message}"),
            None => code,
        };
    }
    let mut innermost = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        innermost = s.to_string();
        source = s.source();
    }
    innermost.chars().take(300).collect()
}

impl From<crate::cache::IndexError> for RemoteError {
    fn from(e: crate::cache::IndexError) -> Self {
        RemoteError::Local(e.to_string())
    }
}

impl From<crate::cache::ObjectError> for RemoteError {
    fn from(e: crate::cache::ObjectError) -> Self {
        RemoteError::Local(e.to_string())
    }
}

/// A copy of a remote failure for every record of a batch that could not start.
pub(super) fn clone_unavailable(e: &RemoteError) -> RemoteError {
    RemoteError::Local(e.to_string())
}
