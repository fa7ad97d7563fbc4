//! Escaping and the page shell shared by every page.
//!
//! Every string that comes from a pipeline file or the cache (stage names, parameter values,
//! metric names, log lines, error messages) is written through [`esc`], so a stage named
//! `<script>` renders as text. URL path segments go through [`seg`]. Data handed to the script
//! travels in `<script type="application/json">` blocks written by [`json_block`], which the
//! browser never executes, and the Content-Security-Policy set by the router allows scripts
//! only from `/assets/`.

use std::fmt::Write;

/// `text` with `&`, `<`, `>`, `"` and `'` escaped, safe in element content and quoted
/// attributes.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` percent-encoded as one URL path segment (everything but unreserved characters).
pub(crate) fn seg(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A `<script type="application/json">` block holding `value`, with `<`, `>` and `&` written
/// as JSON escapes so no string inside can close the element.
pub(crate) fn json_block(id: &str, value: &serde_json::Value) -> String {
    let text = value
        .to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    format!(
        "<script type=\"application/json\" id=\"{}\">{text}</script>",
        esc(id)
    )
}

/// A number as a page shows it: up to four significant decimals, no trailing zeros.
pub fn num(value: f64) -> String {
    if !value.is_finite() {
        return value.to_string();
    }
    if value == value.trunc() && value.abs() < 1e15 {
        return format!("{value:.0}");
    }
    let text = if value.abs() >= 1000.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.4}")
    };
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Bytes as `12.3 MB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < UNITS.len() {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// A JSON value as a short text: strings without quotes, everything else as JSON.
pub(crate) fn value_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `stage[axis=v,...]`.
pub fn label<'a>(
    stage: &str,
    binding: impl IntoIterator<Item = (&'a String, &'a serde_json::Value)>,
) -> String {
    let parts: Vec<String> = binding
        .into_iter()
        .map(|(k, v)| format!("{k}={}", value_text(v)))
        .collect();
    if parts.is_empty() {
        return stage.to_string();
    }
    format!("{stage}[{}]", parts.join(","))
}

/// A whole page: `title` (escaped here), breadcrumbs as (href, text) pairs (both escaped here;
/// hrefs must already be built from [`seg`]), and `body` (already HTML). `live` is the URL the
/// script polls for updates, if any.
pub fn page(title: &str, crumbs: &[(String, String)], body: &str, live: Option<&str>) -> String {
    let mut nav = String::from("<a href=\"/\">asymflow</a>");
    for (href, text) in crumbs {
        let _ = write!(
            nav,
            " <span class=\"sep\">/</span> <a href=\"{}\">{}</a>",
            esc(href),
            esc(text)
        );
    }
    let live_attr = live
        .map(|u| format!(" data-live=\"{}\"", esc(u)))
        .unwrap_or_default();
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<title>{} - asymflow</title>\n<link rel=\"stylesheet\" href=\"/assets/app.css\">\n\
<script src=\"/assets/app.js\" defer></script>\n</head>\n<body{live_attr}>\n\
<header><nav>{nav}</nav><button type=\"button\" id=\"theme\" title=\"Switch light and dark\">\u{25d0}</button></header>\n\
<main>\n<h1>{}</h1>\n{body}\n</main>\n</body>\n</html>\n",
        esc(title),
        esc(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_names_is_escaped() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
    }

    #[test]
    fn path_segments_encode_everything_but_unreserved() {
        assert_eq!(seg("a b/../c<d>"), "a%20b%2F..%2Fc%3Cd%3E");
        assert_eq!(seg("quick-start_1.x"), "quick-start_1.x");
    }

    #[test]
    fn json_blocks_cannot_close_their_element() {
        let block = json_block("d", &serde_json::json!({"s": "</script><b>&"}));
        assert!(!block[..block.len() - 9].contains("</script>"));
        assert!(block.contains("\\u003c/script\\u003e"));
    }

    #[test]
    fn numbers_read_short() {
        assert_eq!(num(3.0), "3");
        assert_eq!(num(0.412345), "0.4123");
        assert_eq!(num(0.5), "0.5");
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(12_345_678), "12.3 MB");
    }
}
