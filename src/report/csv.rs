//! A table as CSV, in two shapes.
//!
//! - [`render`]: the table as it reads (the same cells as the Markdown, one header line),
//!   for a spreadsheet next to the paper.
//! - [`render_long`]: one line per cell with the raw numbers (mean, sample std, n, expected),
//!   empty where there is no value, for plotting or analysis elsewhere.
//!
//! Fields are quoted as RFC 4180 says: when they hold a comma, a quote or a line break.

use super::cell::CellStyle;
use super::Table;

fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

fn line(fields: impl IntoIterator<Item = String>) -> String {
    let mut out = fields
        .into_iter()
        .map(|f| field(&f))
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    out
}

/// `table` as it reads: row headers, then one column per table column (`cub / 32 / mAP`).
pub fn render(table: &Table) -> String {
    let mut out = line(
        table
            .rows
            .headers
            .iter()
            .cloned()
            .chain((0..table.cols.len()).map(|c| table.cols.title(c, " / ", "value"))),
    );
    for (r, cells) in table.cells.iter().enumerate() {
        out.push_str(&line(
            table.rows.labels[r]
                .iter()
                .cloned()
                .chain(cells.iter().map(|cell| cell.text(CellStyle::PLAIN))),
        ));
    }
    out
}

/// One line per cell: the raw row and column values (not labels), the metric, then `mean`,
/// `std` (sample, n - 1), `n` and `expected`; `mean` and `std` are empty when absent.
pub fn render_long(table: &Table) -> String {
    let dims = table
        .rows
        .dims
        .iter()
        .chain(&table.cols.dims)
        .filter(|d| d.name() != "metric");
    let mut out = line(
        dims.map(|d| d.name().to_string())
            .chain(["metric", "mean", "std", "n", "expected"].map(String::from)),
    );
    for (r, cells) in table.cells.iter().enumerate() {
        for (c, cell) in cells.iter().enumerate() {
            let keys = table
                .rows
                .dims
                .iter()
                .zip(&table.rows.keys[r])
                .chain(table.cols.dims.iter().zip(&table.cols.keys[c]));
            let values = keys
                .filter(|(d, _)| d.name() != "metric")
                .map(|(_, v)| v.clone());
            let number = |v: Option<f64>| v.map(|v| format!("{v}")).unwrap_or_default();
            out.push_str(&line(values.chain([
                cell.metric.clone(),
                number(cell.mean()),
                number(cell.std()),
                cell.n().to_string(),
                cell.expected.to_string(),
            ])));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_with_commas_or_quotes_are_quoted() {
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("41.2 ± 0.3 (2/3)"), "41.2 ± 0.3 (2/3)");
    }
}
