//! A table as Markdown (GitHub's pipe tables): the form printed to the terminal after `run`
//! and pasted into notes. Nested column dimensions are joined into one header line
//! (`cub / 32 / mAP`), since Markdown has no spanning headers.

use super::cell::CellStyle;
use super::footnote::superscript;
use super::{MissingInstance, Table};

fn escape(text: &str) -> String {
    text.replace('|', "\\|")
}

/// `table` as Markdown: an optional `## title`, the table, the note on how cells read, the
/// footnotes saying why marked cells lack values and, when some instances have not run, the
/// list of them.
pub fn render(table: &Table, missing: &[MissingInstance]) -> String {
    let mut out = String::new();
    if !table.title.is_empty() {
        out.push_str(&format!("## {}\n\n", table.title));
    }
    let mut header: Vec<String> = table.rows.headers.iter().map(|h| escape(h)).collect();
    let mut rule: Vec<&str> = vec!["---"; header.len()];
    for c in 0..table.cols.len() {
        header.push(escape(&table.cols.title(c, " / ", "value")));
        rule.push("---:");
    }
    out.push_str(&format!("| {} |\n", header.join(" | ")));
    out.push_str(&format!("|{}|\n", rule.join("|")));
    for (r, line) in table.cells.iter().enumerate() {
        let mut fields: Vec<String> = table.rows.labels[r].iter().map(|l| escape(l)).collect();
        fields.extend(line.iter().enumerate().map(|(c, cell)| {
            escape(&cell.text(CellStyle::PLAIN)) + &superscript(&table.marks[r][c])
        }));
        out.push_str(&format!("| {} |\n", fields.join(" | ")));
    }
    out.push('\n');
    out.push_str(&table.note(" ± ", "-"));
    out.push('\n');
    if !table.footnotes.is_empty() {
        out.push('\n');
        for (i, text) in table.footnotes.texts.iter().enumerate() {
            out.push_str(&format!("- {} {}\n", superscript(&[i + 1]), escape(text)));
        }
    }
    if !missing.is_empty() {
        out.push_str(&format!("\nNot run yet ({}):\n", missing.len()));
        for m in missing {
            out.push_str(&format!("- {m}\n"));
        }
    }
    out
}
