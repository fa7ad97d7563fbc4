//! A two-column table of names and values, as the instance page lists an instance's params,
//! record and files.
//!
//! Its own file so that the pages share it without importing the module root.

use std::fmt::Write;

use crate::serve::html::esc;

/// A two-column table of (name, HTML value) pairs.
pub fn pairs(rows: &[(String, String)]) -> String {
    let mut out = String::from("<table class=\"pairs\"><tbody>");
    for (k, v) in rows {
        let _ = write!(out, "<tr><th>{}</th><td>{v}</td></tr>", esc(k));
    }
    out.push_str("</tbody></table>");
    out
}
