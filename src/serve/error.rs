//! Why the dashboard could not serve, or a page could not be built.
//!
//! Its own file because the site, the instance states, the object reader, every page and the
//! router return it: it sits below all of them, and the module root holds only declarations.

use std::net::SocketAddr;

/// Why the dashboard could not serve, or a page could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The page or resource does not exist (an unknown pipeline, instance, output or route).
    #[error("{0}")]
    NotFound(String),
    /// A pipeline file does not load (its error, with file and line, is shown on the page).
    #[error("{0}")]
    Pipeline(String),
    /// The cache index could not be read.
    #[error("reading the cache index: {0}")]
    Index(#[from] crate::cache::IndexError),
    /// A file in the cache could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// An object's content does not match its digest.
    #[error("object {0} is corrupt (its content does not match its digest); run `asymflow cache verify`")]
    Corrupt(String),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}; pick another port with --port")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// The server stopped with an error.
    #[error("server: {0}")]
    Server(std::io::Error),
}

impl ServeError {
    /// An I/O error on `path`.
    pub fn io(path: impl AsRef<std::path::Path>, source: std::io::Error) -> Self {
        ServeError::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }
}
