//! The grid every listing page shows: a table with a header row of sort buttons and a row of
//! filter boxes, sorted and filtered by the script, or by the server for a large pipeline.
//!
//! Its own file because the pipeline and history pages both build grids, and a page imports
//! what it shares from the files below it, never from the module root that declares it.

use std::fmt::Write;

use crate::serve::html::{esc, num};

/// One column of a [`grid`].
pub(crate) struct Column {
    /// The header text (escaped when rendered).
    pub label: String,
    /// CSS class of the header and its cells (`axis`, `param`, `metric`, ...).
    pub class: &'static str,
}

/// One cell of a [`grid`]: HTML content, the value it sorts by, and extra attributes.
#[derive(Default)]
pub struct Cell {
    /// The content, already HTML.
    pub html: String,
    /// The sort value (a number sorts numerically); the text when absent.
    pub sort: Option<String>,
    /// Extra attributes, already escaped (` data-status-of="3"`).
    pub attrs: String,
    /// Extra CSS classes.
    pub class: String,
    /// The text filters match (what the cell shows, without markup).
    pub plain: String,
}

impl Cell {
    /// A cell showing `text` (escaped here).
    pub fn text(text: &str) -> Cell {
        Cell {
            html: esc(text),
            plain: text.to_string(),
            ..Cell::default()
        }
    }

    /// A cell showing a number, sorting by its exact value.
    pub fn number(value: f64) -> Cell {
        let shown = num(value);
        Cell {
            plain: shown.clone(),
            html: shown,
            sort: Some(value.to_string()),
            class: "num".into(),
            ..Cell::default()
        }
    }
}

/// A table with a header row of sort buttons and a row of filter boxes (the script makes
/// them work). `rows` are (row attributes, cells).
pub(crate) fn grid(id: &str, columns: &[Column], rows: &[(String, Vec<Cell>)]) -> String {
    let tools = format!(
        "<div class=\"grid-tools\"><span class=\"shown\" data-for=\"{id}\">{} rows</span> \
         <button type=\"button\" class=\"clear-filters\" data-for=\"{id}\">Clear filters</button></div>\n",
        rows.len()
    );
    tools + &table(id, columns, rows, &GridState::default())
}

/// What a server-sorted, server-filtered table shows of its state: the column sorted by
/// (its position, descending) and each filter box's text by column position.
#[derive(Default)]
pub(crate) struct GridState {
    /// The sorted column and whether descending.
    pub sort: Option<(usize, bool)>,
    /// Filter box texts, by column position.
    pub filters: std::collections::BTreeMap<usize, String>,
    /// Whether the server sorts and filters (`data-server` on the table).
    pub server: bool,
}

/// The `<table>` of a [`grid`], with `state`'s sort marked and filter boxes filled in.
pub(crate) fn table(
    id: &str,
    columns: &[Column],
    rows: &[(String, Vec<Cell>)],
    state: &GridState,
) -> String {
    let mut out = format!(
        "<div class=\"scroll\"><table class=\"grid\" id=\"{id}\"{}>\n<thead><tr>",
        if state.server {
            " data-server=\"1\""
        } else {
            ""
        }
    );
    for (c, col) in columns.iter().enumerate() {
        if col.class == "pick" {
            let _ = write!(out, "<th class=\"pick\" data-col=\"{c}\"></th>");
            continue;
        }
        let sort = match state.sort {
            Some((s, desc)) if s == c => format!(
                " aria-sort=\"{}\"",
                if desc { "descending" } else { "ascending" }
            ),
            _ => String::new(),
        };
        let _ = write!(
            out,
            "<th class=\"{}\" data-col=\"{c}\"{sort}><button type=\"button\" class=\"sort\">{}</button></th>",
            col.class,
            esc(&col.label)
        );
    }
    out.push_str("</tr>\n<tr class=\"filters\">");
    for (c, col) in columns.iter().enumerate() {
        if col.class == "pick" {
            out.push_str("<th></th>");
        } else {
            let value = state
                .filters
                .get(&c)
                .map(|v| format!(" value=\"{}\"", esc(v)))
                .unwrap_or_default();
            let _ = write!(
                out,
                "<th><input type=\"search\" class=\"filter\" data-col=\"{c}\" data-name=\"{}\" placeholder=\"filter\" aria-label=\"filter {}\"{value}></th>",
                esc(&col.label),
                esc(&col.label)
            );
        }
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (attrs, cells) in rows {
        let _ = write!(out, "<tr{attrs}>");
        for (cell, col) in cells.iter().zip(columns) {
            let sort = cell
                .sort
                .as_ref()
                .map(|s| format!(" data-v=\"{}\"", esc(s)))
                .unwrap_or_default();
            let _ = write!(
                out,
                "<td class=\"{} {}\"{sort}{}>{}</td>",
                col.class, cell.class, cell.attrs, cell.html
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    out
}
