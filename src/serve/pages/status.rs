//! How an instance's status reads on a page: a badge, and the progress of a running stage.
//!
//! Its own file because the instance, pipeline, compare and reports pages all show statuses.

use crate::serve::live::Progress;
use crate::serve::state::Status;

/// A status badge.
pub(crate) fn badge(status: Status) -> String {
    format!(
        "<span class=\"badge st-{}\">{}</span>",
        status.name(),
        status.name()
    )
}

/// `3/10 epochs`, or nothing.
pub(crate) fn progress_text(progress: Option<&Progress>) -> String {
    progress
        .map(|p| format!("{}/{} {}", p.pos, p.len, p.unit))
        .unwrap_or_default()
}
