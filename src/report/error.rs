//! Why a report cannot be built: a layout parameter that does not fit the results, or a plot
//! that could not be drawn.
//!
//! Its own file because nearly every part of the module returns it (layouts, formats,
//! bootstrap intervals, plots, loss curves), so it sits below all of them and the module root
//! holds nothing but declarations.

/// A report cannot be built: a layout parameter that does not fit the results, or a plot that
/// could not be drawn. Every message says what is wrong and how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A layout parameter has the wrong shape or an unusable value.
    #[error("parameter `{name}`: {message}")]
    Layout {
        /// The parameter.
        name: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// Two results land in the same cell for the same value of the aggregated axis.
    #[error("{0}")]
    Ambiguous(String),
    /// A plot could not be drawn or encoded.
    #[error("plot `{name}`: {message}")]
    Plot {
        /// The plot's file stem.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// A `reasons.json` output could not be read.
    #[error("stage `{stage}`: its reasons for missing metrics are unreadable: {message}")]
    Reasons {
        /// The upstream stage.
        stage: String,
        /// What went wrong.
        message: String,
    },
    /// A `per_query.json` output could not be read.
    #[error("stage `{stage}`: its per-query scores are unreadable: {message}")]
    PerQuery {
        /// The upstream stage.
        stage: String,
        /// What went wrong.
        message: String,
    },
    /// A `loss.json` output is not in a shape this module reads.
    #[error("{path}: {message}")]
    Loss {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

impl ReportError {
    /// A layout error on parameter `name`.
    pub fn layout(name: &str, message: impl Into<String>) -> Self {
        ReportError::Layout {
            name: name.to_string(),
            message: message.into(),
        }
    }
}
