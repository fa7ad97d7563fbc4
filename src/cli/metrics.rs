//! `asymflow metrics FILE [STAGE...] [--csv | --json] [--columns A,B]`: one row per computed
//! instance with its stage, sweep values, metrics and key.
//!
//! Researchers plot with their own tools; the report's `results.csv` holds aggregates only.
//! This is the raw material: every instance the cache holds for the pipeline (with its
//! overrides), one column per sweep axis and per metric, empty where an instance lacks one.
//! Instances that have not run are left out and counted on stderr.
//!
//! Text is for reading in a terminal: numbers at 4 significant digits, and on a terminal only
//! the columns that fit its width (stderr names the ones left out). `--csv` and `--json` are
//! for programs: every digit. `--columns` chooses the columns of text and CSV, in order.

use std::collections::BTreeSet;
use std::process::ExitCode;

use serde_json::Value;

use super::args::PipelineArgs;
use super::common::{cache_for, existing_cache, load_plan, print_json, registry};
use super::output;
use crate::exec::plan_status;
use crate::report::value_text;
use crate::spec::SpecError;

/// Prints the metrics of every computed instance (of `stages`, or all).
pub fn metrics(
    args: PipelineArgs,
    csv: bool,
    columns: &[String],
    stages: &[String],
) -> anyhow::Result<ExitCode> {
    let registry = registry();
    let plan = load_plan(&args, &registry)?;
    let selected = crate::select::chosen(&plan, stages, "")?;
    let cache = existing_cache(cache_for(&args.cache, &plan.spec().project_dir))?;
    let planned = plan_status(&plan, &registry, &cache)?;
    let mut rows = Vec::new();
    let mut not_run = 0;
    for (_, p) in planned
        .iter()
        .enumerate()
        .filter(|(i, _)| selected.contains(i))
    {
        match &p.record {
            Some(record) => rows.push((p, record)),
            None => not_run += 1,
        }
    }
    let axes: BTreeSet<&String> = rows.iter().flat_map(|(p, _)| p.binding.keys()).collect();
    let names: BTreeSet<&String> = rows.iter().flat_map(|(_, r)| r.metrics.keys()).collect();

    if args.json {
        let doc: Vec<Value> = rows
            .iter()
            .map(|(p, r)| {
                serde_json::json!({
                    "instance": p.label,
                    "stage": p.stage,
                    "kind": p.kind,
                    "binding": p.binding,
                    "metrics": r.metrics,
                    "key": r.key,
                })
            })
            .collect();
        print_json(&serde_json::json!({ "pipeline": plan.spec().name, "instances": doc }))?;
    } else {
        let chosen = choose_columns(columns, &axes, &names, csv)?;
        let table: Vec<Vec<String>> = rows
            .iter()
            .map(|(p, r)| {
                chosen
                    .iter()
                    .map(|c| cell(c, p, r, csv))
                    .collect::<Vec<String>>()
            })
            .collect();
        let header: Vec<String> = chosen.iter().map(|c| c.name().to_string()).collect();
        if csv {
            println!("{}", csv_line(&header));
            for line in &table {
                println!("{}", csv_line(line));
            }
        } else {
            let fit = if columns.is_empty() {
                terminal_width()
            } else {
                None
            };
            print_aligned(&header, &table, fit);
        }
    }
    if not_run > 0 && !output::quiet() {
        eprintln!(
            "{} not computed yet (not listed)",
            super::output::count(not_run, "instance", "instances")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One column of the table.
#[derive(Debug, Clone, PartialEq)]
enum Column {
    /// The instance's stage.
    Stage,
    /// Its label, `student[seed=7]`.
    Instance,
    /// A sweep axis's value.
    Axis(String),
    /// A metric.
    Metric(String),
    /// The result's key (16 hex digits in text, all 64 in CSV).
    Key,
}

impl Column {
    fn name(&self) -> &str {
        match self {
            Column::Stage => "stage",
            Column::Instance => "instance",
            Column::Axis(name) | Column::Metric(name) => name,
            Column::Key => "key",
        }
    }
}

/// The columns asked for with `--columns`, or by default: the stage, every sweep axis, every
/// metric, and (in CSV) the key.
fn choose_columns(
    asked: &[String],
    axes: &BTreeSet<&String>,
    metrics: &BTreeSet<&String>,
    csv: bool,
) -> Result<Vec<Column>, SpecError> {
    if asked.is_empty() {
        let mut columns = vec![Column::Stage];
        columns.extend(axes.iter().map(|a| Column::Axis(a.to_string())));
        columns.extend(metrics.iter().map(|m| Column::Metric(m.to_string())));
        if csv {
            columns.push(Column::Key);
        }
        return Ok(columns);
    }
    asked
        .iter()
        .map(|name| name.trim())
        .filter(|name| !name.is_empty())
        .map(|name| match name {
            "stage" => Ok(Column::Stage),
            "instance" | "label" => Ok(Column::Instance),
            "key" => Ok(Column::Key),
            _ if axes.iter().any(|a| *a == name) => Ok(Column::Axis(name.to_string())),
            _ if metrics.iter().any(|m| *m == name) => Ok(Column::Metric(name.to_string())),
            _ => {
                let known: Vec<&str> = ["stage", "instance", "key"]
                    .into_iter()
                    .chain(axes.iter().map(|a| a.as_str()))
                    .chain(metrics.iter().map(|m| m.as_str()))
                    .collect();
                Err(SpecError::nowhere(format!(
                    "--columns: no column `{name}` (a sweep axis or a metric of the instances \
                     listed)"
                ))
                .hint(match crate::spec::error::closest(name, &known) {
                    Some(best) => format!("did you mean `{best}`? (columns: {})", known.join(", ")),
                    None => format!("the columns are: {}", known.join(", ")),
                }))
            }
        })
        .collect()
}

/// The text of `column` for one instance: full precision in CSV, 4 significant digits in
/// text.
fn cell(
    column: &Column,
    p: &crate::exec::plan_status::PlannedInstance,
    record: &crate::cache::RunRecord,
    csv: bool,
) -> String {
    match column {
        Column::Stage => p.stage.to_string(),
        Column::Instance => p.label.clone(),
        Column::Axis(a) => p.binding.get(a).map(value_text).unwrap_or_default(),
        Column::Metric(m) => record
            .metrics
            .get(m)
            .map(|v| {
                if csv {
                    v.to_string()
                } else {
                    significant(*v, 4)
                }
            })
            .unwrap_or_default(),
        Column::Key if csv => record.key.clone(),
        Column::Key => record.key.chars().take(16).collect(),
    }
}

/// `value` at `digits` significant digits, trailing zeros dropped: 0.123456 -> `0.1235`,
/// 1234.56 -> `1235`, 7 -> `7`; very large or small magnitudes in scientific notation.
pub(crate) fn significant(value: f64, digits: i32) -> String {
    if !value.is_finite() {
        return value.to_string();
    }
    if value == 0.0 {
        return "0".to_string();
    }
    let magnitude = value.abs().log10().floor() as i32;
    if !(-4..digits + 2).contains(&magnitude) {
        return format!("{value:.*e}", (digits - 1) as usize);
    }
    let decimals = (digits - 1 - magnitude).max(0) as usize;
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// The terminal's width when stdout is one (`COLUMNS` first, as shells set it), else `None`:
/// output into a pipe or a file is never cut.
fn terminal_width() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    if let Some(n) = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()) {
        return Some(n);
    }
    // SAFETY: TIOCGWINSZ writes a winsize into the struct we own; a failure leaves it zeroed.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0).then_some(size.ws_col as usize)
}

fn csv_line(fields: &[String]) -> String {
    fields
        .iter()
        .map(|f| {
            if f.contains([',', '"', '\n']) {
                format!("\"{}\"", f.replace('"', "\"\""))
            } else {
                f.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Columns padded to their widest cell, numbers right-aligned; with `fit`, only the leading
/// columns that fit in that many characters (stderr names the rest).
fn print_aligned(header: &[String], table: &[Vec<String>], fit: Option<usize>) {
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            std::iter::once(&header[i])
                .chain(table.iter().map(|line| &line[i]))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut shown = header.len();
    if let Some(limit) = fit {
        let mut used = 0;
        for (i, w) in widths.iter().enumerate() {
            used += w + if i == 0 { 0 } else { 2 };
            if used > limit && i > 0 {
                shown = i;
                break;
            }
        }
    }
    let numeric: Vec<bool> = (0..header.len())
        .map(|i| {
            table
                .iter()
                .all(|line| line[i].is_empty() || line[i].parse::<f64>().is_ok())
        })
        .collect();
    for line in std::iter::once(header).chain(table.iter().map(Vec::as_slice)) {
        let cells: Vec<String> = line[..shown]
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if numeric[i] {
                    format!("{c:>w$}", w = widths[i])
                } else {
                    format!("{c:w$}", w = widths[i])
                }
            })
            .collect();
        println!("{}", cells.join("  ").trim_end());
    }
    if shown < header.len() {
        eprintln!(
            "{} more columns do not fit: {} (choose with --columns, or --csv)",
            header.len() - shown,
            header[shown..].join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::significant;

    #[test]
    fn numbers_are_shown_at_four_significant_digits() {
        assert_eq!(significant(0.123456789, 4), "0.1235");
        assert_eq!(significant(0.5, 4), "0.5");
        assert_eq!(significant(1234.567, 4), "1235");
        assert_eq!(significant(7.0, 4), "7");
        assert_eq!(significant(-0.000123456, 4), "-0.0001235");
        assert_eq!(significant(123456789.0, 4), "1.235e8");
        assert_eq!(significant(0.0, 4), "0");
    }
}
