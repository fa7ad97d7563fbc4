//! Data sets: the synthetic generator, real data sets in their published layouts, decoding,
//! resizing, augmentation and batching.

/// A data set could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// Anything else, with a message that names the file (and line).
    #[error("{0}")]
    Other(String),
}
