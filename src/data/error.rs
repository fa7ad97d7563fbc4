//! The one error type of the data layer.
//!
//! A data-set problem is almost always the user's to fix (a wrong `root`, a truncated
//! annotation file, a corrupt image), so every variant names the file it is about and, where
//! there is one, the line, and says what was expected. Nothing is silently skipped: a loader
//! that meets a line it cannot read stops with that line.

use std::path::PathBuf;

/// A data set, a split manifest or an image could not be read or used.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The data set's root folder (or a file the layout requires) does not exist.
    #[error("{dataset}: {path} does not exist; {hint}")]
    Missing {
        /// The data set layout looked for (`cub200`, `sop`, ...).
        dataset: &'static str,
        /// The missing file or folder.
        path: PathBuf,
        /// What should be there and how to fix it.
        hint: String,
    },
    /// Reading a file or folder failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A line of an annotation file is not in the published format.
    #[error("{path}:{line}: {message}")]
    Malformed {
        /// The annotation file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// What is wrong with it and what was expected.
        message: String,
    },
    /// A file as a whole is not what its layout promises (a binary annotation file, a file
    /// name that does not follow the data set's naming scheme).
    #[error("{path}: {message}")]
    BadFile {
        /// The file.
        path: PathBuf,
        /// What is wrong and what was expected.
        message: String,
    },
    /// An image could not be decoded.
    #[error("{path}: cannot decode image: {message}")]
    Decode {
        /// The image file.
        path: PathBuf,
        /// The decoder's message.
        message: String,
    },
    /// A split manifest names a partition it does not have.
    #[error("{path}: no partition `{name}`; it has: {available}")]
    UnknownPartition {
        /// The manifest (or `<manifest>` when it was built in memory).
        path: PathBuf,
        /// The partition asked for.
        name: String,
        /// The partitions that exist, comma-separated.
        available: String,
    },
    /// An item id that the data set cannot resolve (`synthetic/<n>` out of range, or an
    /// absolute path or `..` in a relative id).
    #[error("{source_name}: item `{id}`: {message}")]
    BadItem {
        /// The data set (its root, or `synthetic`).
        source_name: String,
        /// The item id.
        id: String,
        /// Why it cannot be loaded.
        message: String,
    },
    /// The parameters of a data set or split protocol cannot be used together.
    #[error("{message}")]
    Config {
        /// What is wrong and how to fix it.
        message: String,
    },
}

impl DataError {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        DataError::Io {
            path: path.into(),
            source,
        }
    }

    /// A malformed line `line` (1-based) of `path`.
    pub(crate) fn malformed(
        path: impl Into<PathBuf>,
        line: usize,
        message: impl Into<String>,
    ) -> Self {
        DataError::Malformed {
            path: path.into(),
            line,
            message: message.into(),
        }
    }

    /// A configuration mistake.
    pub fn config(message: impl Into<String>) -> Self {
        DataError::Config {
            message: message.into(),
        }
    }
}

impl From<DataError> for crate::kind::StageError {
    fn from(e: DataError) -> Self {
        crate::kind::StageError::Data(Box::new(e))
    }
}
