//! A table as CSV, in two shapes.
//!
//! - [`render`]: the table as it reads (the same cells as the Markdown, one header line),
//!   for a spreadsheet next to the paper. A cell the Markdown marks with a footnote carries the
//!   same numbers in ASCII brackets after its text (`-[1]`, `41.2 (2/3)[1,2]`), and a last
//!   column, `notes`, holds the footnotes of that row's marks (`[1] TPIR@FPIR: FPIR 1e-2 needs
//!   at least 100 non-mated probes; there are 40 (`id`).`), empty when the row has none. Every
//!   line has the same fields, so a spreadsheet or a CSV reader takes the file as it is, and the
//!   reason for a dash sits on the dash's own row.
//! - [`render_long`]: one line per cell with the raw numbers (mean, sample std, n, expected,
//!   interval, positive differences), empty where there is no value, for analysis elsewhere.
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

/// The header of the column holding each row's footnotes.
pub(crate) const NOTES_COLUMN: &str = "notes";

/// Footnote numbers as `[1]` / `[1,2]`, or nothing.
fn marks(numbers: &[usize]) -> String {
    if numbers.is_empty() {
        return String::new();
    }
    let list: Vec<String> = numbers.iter().map(usize::to_string).collect();
    format!("[{}]", list.join(","))
}

/// `table` as it reads: row headers, then one column per table column (`cub / 32 / mAP`), each
/// cell followed by its footnote marks, then the row's footnotes under [`NOTES_COLUMN`].
pub fn render(table: &Table) -> String {
    let mut out = line(
        table
            .rows
            .headers
            .iter()
            .cloned()
            .chain((0..table.cols.len()).map(|c| table.cols.title(c, " / ", "value")))
            .chain([NOTES_COLUMN.to_string()]),
    );
    for (r, cells) in table.cells.iter().enumerate() {
        let mut numbers: Vec<usize> = table.marks[r].iter().flatten().copied().collect();
        numbers.sort_unstable();
        numbers.dedup();
        let notes: Vec<String> = numbers
            .iter()
            .filter_map(|n| {
                let text = table.footnotes.texts.get(n - 1)?;
                Some(format!("{} {text}", marks(&[*n])))
            })
            .collect();
        out.push_str(&line(
            table.rows.labels[r]
                .iter()
                .cloned()
                .chain(
                    cells
                        .iter()
                        .enumerate()
                        .map(|(c, cell)| cell.text(CellStyle::PLAIN) + &marks(&table.marks[r][c])),
                )
                .chain([notes.join(" ")]),
        ));
    }
    out
}

/// One line per cell: the raw row and column values (not labels), the metric, then `mean`,
/// `std` (sample, n - 1), `n`, `expected`, the Student-t interval `ci_low` and `ci_high` (with
/// `ci`) and, for a paired row, how many differences are `positive`; with `bootstrap`, two
/// more columns, `boot_low` and `boot_high`: a one-draw cell's interval over its queries.
/// Empty where absent.
pub(crate) fn render_long(table: &Table) -> String {
    let dims = table
        .rows
        .dims
        .iter()
        .chain(&table.cols.dims)
        .filter(|d| d.name() != "metric");
    let boot = table.bootstrap.is_some();
    let boot_headers = ["boot_low", "boot_high"].into_iter().filter(|_| boot);
    let mut out = line(
        dims.map(|d| d.name().to_string()).chain(
            [
                "metric", "mean", "std", "n", "expected", "ci_low", "ci_high", "positive",
            ]
            .into_iter()
            .chain(boot_headers)
            .map(String::from),
        ),
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
            let mut fields: Vec<String> = values
                .chain([
                    cell.metric.clone(),
                    number(cell.mean()),
                    number(cell.std()),
                    cell.n().to_string(),
                    cell.expected.to_string(),
                    number(cell.interval().map(|i| i.0)),
                    number(cell.interval().map(|i| i.1)),
                    if cell.paired {
                        cell.positive().to_string()
                    } else {
                        String::new()
                    },
                ])
                .collect();
            if boot {
                fields.push(number(cell.bootstrap.map(|i| i.0)));
                fields.push(number(cell.bootstrap.map(|i| i.1)));
            }
            out.push_str(&line(fields));
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
