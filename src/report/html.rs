//! A report as one self-contained HTML page: the table (with spanning column headers), the
//! note on how cells read, the instances not run yet, and every plot as inline SVG. No
//! external stylesheet, script or image, so the file can be mailed or archived as it is.

use super::cell::CellStyle;
use super::{MissingInstance, Table};

/// `text` with `&`, `<`, `>` and `"` escaped.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;margin:1em 0}\
th,td{padding:.3em .7em;border-bottom:1px solid #ccc}\
td.num{text-align:right;font-variant-numeric:tabular-nums}\
td.missing{color:#999;text-align:center}td.partial{color:#a60}\
thead tr:last-child th{border-bottom:2px solid #222}\
figure{margin:1.5em 0}p.note{color:#555;font-size:.9em}";

fn table_html(table: &Table) -> String {
    let lead = table.rows.headers.len();
    let depth = table.cols.dims.len();
    let mut out = String::from("<table>\n<thead>\n");
    for level in 0..depth.saturating_sub(1) {
        out.push_str("<tr>");
        if lead > 0 {
            out.push_str(&format!("<th colspan=\"{lead}\"></th>"));
        }
        let mut c = 0;
        while c < table.cols.len() {
            let mut last = c;
            while last + 1 < table.cols.len()
                && table.cols.keys[last + 1][..=level] == table.cols.keys[c][..=level]
            {
                last += 1;
            }
            out.push_str(&format!(
                "<th colspan=\"{}\">{}</th>",
                last - c + 1,
                escape(&table.cols.labels[c][level])
            ));
            c = last + 1;
        }
        out.push_str("</tr>\n");
    }
    out.push_str("<tr>");
    for h in &table.rows.headers {
        out.push_str(&format!("<th>{}</th>", escape(h)));
    }
    for c in 0..table.cols.len() {
        let label = if depth == 0 {
            "value".to_string()
        } else {
            table.cols.labels[c][depth - 1].clone()
        };
        out.push_str(&format!("<th>{}</th>", escape(&label)));
    }
    out.push_str("</tr>\n</thead>\n<tbody>\n");
    for (r, cells) in table.cells.iter().enumerate() {
        out.push_str("<tr>");
        for l in &table.rows.labels[r] {
            out.push_str(&format!("<th>{}</th>", escape(l)));
        }
        for (c, cell) in cells.iter().enumerate() {
            let class = if cell.is_missing() {
                "missing"
            } else if cell.is_partial() {
                "num partial"
            } else {
                "num"
            };
            out.push_str(&format!(
                "<td class=\"{class}\">{}{}</td>",
                escape(&cell.text(CellStyle::PLAIN)),
                marks(&table.marks[r][c])
            ));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// Footnote numbers as a superscript (`<sup>1,2</sup>`), or nothing.
fn marks(numbers: &[usize]) -> String {
    if numbers.is_empty() {
        return String::new();
    }
    let list: Vec<String> = numbers.iter().map(usize::to_string).collect();
    format!("<sup>{}</sup>", list.join(","))
}

/// The page: `table`, its note, its footnotes, the `missing` instances, and `plots` as (caption, SVG
/// document) pairs inlined in order.
pub fn render(table: &Table, missing: &[MissingInstance], plots: &[(String, String)]) -> String {
    let title = if table.title.is_empty() {
        "asymflow report"
    } else {
        table.title.as_str()
    };
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(title),
        escape(title)
    );
    out.push_str(&table_html(table));
    out.push_str(&format!(
        "<p class=\"note\">{}</p>\n",
        escape(&table.note(" ± ", "-"))
    ));
    for (i, text) in table.footnotes.texts.iter().enumerate() {
        out.push_str(&format!(
            "<p class=\"note\">{} {}</p>\n",
            marks(&[i + 1]),
            escape(text)
        ));
    }
    if !missing.is_empty() {
        out.push_str(&format!("<h2>Not run yet ({})</h2>\n<ul>\n", missing.len()));
        for m in missing {
            out.push_str(&format!("<li>{}</li>\n", escape(&m.to_string())));
        }
        out.push_str("</ul>\n");
    }
    for (caption, svg) in plots {
        let body = match svg.find("<svg") {
            Some(at) => &svg[at..],
            None => svg.as_str(),
        };
        out.push_str(&format!(
            "<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
            body.trim_end(),
            escape(caption)
        ));
    }
    out.push_str("</body>\n</html>\n");
    out
}
