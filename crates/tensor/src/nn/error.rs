//! [`NnError`]: what can go wrong building, loading or saving a network, or choosing its
//! precision, and how a stage reports it ([`StageError`]). A file of its own so that every
//! `nn` file can return it without depending on the module that lists them.

use std::path::{Path, PathBuf};

use crate::kind::StageError;

/// Something went wrong building, loading or saving a network.
#[derive(Debug, thiserror::Error)]
pub enum NnError {
    /// A checkpoint or weight file does not fit; the message lists what and how to fix it.
    #[error("{0}")]
    Checkpoint(String),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// libtorch reported an error.
    #[error("libtorch: {0}")]
    Torch(String),
    /// The requested precision cannot run here; the message says why and what to use.
    #[error("{0}")]
    Precision(String),
}

impl NnError {
    pub(super) fn io(path: &Path, source: std::io::Error) -> Self {
        NnError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

impl From<NnError> for StageError {
    fn from(e: NnError) -> Self {
        match e {
            NnError::Io { path, source } => StageError::Io { path, source },
            other => StageError::Other(other.to_string()),
        }
    }
}
