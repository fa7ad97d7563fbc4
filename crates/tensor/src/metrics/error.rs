//! [`MetricsError`], why a metric could not be computed: one error type for every protocol,
//! in a file of its own so the protocols and the embeddings they read name it without
//! importing the module that gathers them.

/// Why a metric could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// Query and database embeddings have different sizes.
    #[error(
        "query embeddings are {query}-dimensional but database embeddings are {database}-dimensional; \
         embed both with models of the same output size (or a compatible model pair)"
    )]
    DimensionMismatch {
        /// The query dimension.
        query: usize,
        /// The database dimension.
        database: usize,
    },
    /// An embeddings file is missing a tensor or holds one of the wrong shape or type.
    #[error("{path}: {message}")]
    BadFile {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The protocol needs something the data does not have (cameras, impostor pairs, ...).
    #[error("{0}")]
    Unsupported(String),
    /// libtorch reported an error.
    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),
}
