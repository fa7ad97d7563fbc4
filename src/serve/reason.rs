//! Dirty reasons as a page shows them.
//!
//! The engine explains why an instance must run ("params.lambda_t 0.7 -> 0.8", "never ran").
//! Those reasons are about to become a typed enum with `Display`; every page renders them
//! through [`render`], which needs only `Display`, so the change of type touches nothing here.

use super::html::esc;

/// One reason as escaped HTML.
pub fn render(reason: &impl std::fmt::Display) -> String {
    esc(&reason.to_string())
}

/// A list of reasons as an HTML `<ul>`, or `none` when empty.
pub(crate) fn render_list<R: std::fmt::Display>(reasons: &[R], none: &str) -> String {
    if reasons.is_empty() {
        return format!("<p class=\"muted\">{}</p>", esc(none));
    }
    let items: String = reasons
        .iter()
        .map(|r| format!("<li>{}</li>", render(r)))
        .collect();
    format!("<ul class=\"reasons\">{items}</ul>")
}
