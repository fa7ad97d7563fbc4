//! The page for an unknown route, pipeline, instance or output: what was asked for, why it
//! does not exist, and where to go instead (never a bare status code).

use crate::serve::html::{esc, page};

/// The 404 page for `path` with the reason `message`.
pub fn render(path: &str, message: &str) -> String {
    let body = format!(
        "<p class=\"error\">{}</p>\n<p>Nothing is served at <code>{}</code>. \
         Start from the <a href=\"/\">list of pipelines</a>.</p>",
        esc(message),
        esc(path)
    );
    page("Not found", &[], &body, None)
}

/// The page for an error that is not the visitor's (the cache could not be read).
pub fn error(path: &str, message: &str) -> String {
    let body = format!(
        "<p class=\"error\">{}</p>\n<p>While serving <code>{}</code>. \
         Back to the <a href=\"/\">list of pipelines</a>.</p>",
        esc(message),
        esc(path)
    );
    page("Cannot show this page", &[], &body, None)
}
