//! Paired rows: per-draw differences between two stages, under a table's rows.
//!
//! Two rows' means ± spreads overlap or not, but that says little when both come from the same
//! seeds: the student and the network it is compared with share the draw of their data order
//! and of everything upstream, and what a reader needs is the spread of the *difference*.
//! `paired = { a = "eval-ts", b = "eval-trained", over = "seed" }` adds a row whose cell in
//! each column holds `a - b` for every draw (a value of the `over` axes) that both stages have
//! there: their mean, sample std, Student-t interval (the table's `ci`, else 95%), and how many
//! of the differences are positive. A side without an `over` axis (one draw shared by all)
//! pairs with every draw of the other, and the variation footnote then says that it ran once.
//! A side that is not an input (a template whose stages a pipeline renamed) leaves the row's
//! cells empty with a footnote saying so.

use super::axis::{draw_text, Axis};
use super::error::ReportError;
use super::layout::{Dimension, Paired};
use super::{provenance, Cell, Layout};
use crate::kind::{Draw, InputArtifact};

/// The confidence level of a paired row when the table sets none.
pub(crate) const DEFAULT_LEVEL: f64 = 0.95;

/// A paired row, ready to append to a table.
pub(crate) struct PairedRow {
    /// Its raw row key (one entry per row dimension).
    pub key: Vec<String>,
    /// Its row labels (the label first, the other row dimensions empty).
    pub label: Vec<String>,
    /// One cell per column.
    pub cells: Vec<Cell>,
    /// Each cell's footnote texts.
    pub footnotes: Vec<Vec<String>>,
}

/// The paired row of `spec` over the columns `cols`, from the filtered instances `kept`.
pub(crate) fn row(
    layout: &Layout,
    spec: &Paired,
    kept: &[&InputArtifact],
    cols: &Axis,
    over: &[String],
) -> Result<PairedRow, ReportError> {
    let width = layout.rows.len();
    if width == 0 {
        return Err(ReportError::layout(
            "paired",
            "a paired row needs a row dimension to hold its label; set `rows`, e.g. \"stage\"",
        ));
    }
    let absent: Vec<&String> = [&spec.a, &spec.b]
        .into_iter()
        .filter(|side| !kept.iter().any(|a| a.stage == **side))
        .collect();
    let label = spec.label.clone().unwrap_or_else(|| {
        format!(
            "{} - {}",
            layout.value_label(&Dimension::Stage, &spec.a),
            layout.value_label(&Dimension::Stage, &spec.b)
        )
    });
    let mut key = vec!["-".to_string(); width];
    key[0] = format!("{} - {}", spec.a, spec.b);
    let mut labels = vec![String::new(); width];
    labels[0] = label.clone();

    let pairing = if spec.over.is_empty() {
        over
    } else {
        &spec.over
    };
    let mut cells = Vec::with_capacity(cols.len());
    let mut footnotes = Vec::with_capacity(cols.len());
    for c in 0..cols.len() {
        let (plain, metric) = column(cols, c);
        let metric = metric.unwrap_or_default();
        let in_column = |stage: &str| -> Vec<&InputArtifact> {
            kept.iter()
                .copied()
                .filter(|a| a.stage == stage && column_key(layout, a) == plain)
                .collect()
        };
        let (a_side, b_side) = (in_column(&spec.a), in_column(&spec.b));
        let pairs = pairs(layout, pairing, &metric, &a_side, &b_side)?;
        let cell = Cell {
            metric: metric.clone(),
            values: pairs.iter().map(|p| p.0).collect(),
            expected: a_side.len().max(b_side.len()),
            format: layout.format_of(&metric),
            ci: Some(layout.ci.unwrap_or(DEFAULT_LEVEL)),
            paired: true,
            bootstrap: None,
        };
        let mut texts = Vec::new();
        for side in &absent {
            texts.push(format!(
                "{label}: `{side}` is not an input of this report (after `filter`); name an \
                 input stage in `paired`, or add it to `inputs`."
            ));
        }
        if cell.n() < cell.expected {
            texts.push(format!(
                "{label}: draws without a value of both `{}` and `{}` are left out (not run \
                 yet, or declined).",
                spec.a, spec.b
            ));
        }
        if !over.is_empty() {
            let draws: Vec<Vec<&Draw>> = pairs.iter().map(|p| p.1.clone()).collect();
            texts.extend(provenance::footnote(&draws, pairing));
        }
        cells.push(cell);
        footnotes.push(texts);
    }
    Ok(PairedRow {
        key,
        label: labels,
        cells,
        footnotes,
    })
}

/// Column `c`'s raw values without its metric, and the metric.
fn column(cols: &Axis, c: usize) -> (Vec<String>, Option<String>) {
    let mut plain = Vec::new();
    let mut metric = None;
    for (d, v) in cols.dims.iter().zip(&cols.keys[c]) {
        if *d == Dimension::Metric {
            metric = Some(v.clone());
        } else {
            plain.push(v.clone());
        }
    }
    (plain, metric)
}

/// The column an instance falls in (its non-metric column values).
fn column_key(layout: &Layout, artifact: &InputArtifact) -> Vec<String> {
    layout
        .cols
        .iter()
        .filter(|d| **d != Dimension::Metric)
        .map(|d| layout.value_of(d, artifact).unwrap_or_else(|| "-".into()))
        .collect()
}

/// Each draw of `a` with a value, paired with the one draw of `b` that agrees with it on every
/// `over` axis both have: (a - b, the draws both descend from).
fn pairs<'a>(
    layout: &Layout,
    over: &[String],
    metric: &str,
    a_side: &[&'a InputArtifact],
    b_side: &[&'a InputArtifact],
) -> Result<Vec<(f64, Vec<&'a Draw>)>, ReportError> {
    let value = |a: &InputArtifact| a.metrics.get(metric).copied().filter(|v| v.is_finite());
    let draw = |a: &InputArtifact| -> Vec<Option<String>> {
        over.iter().map(|o| layout.field(o, a)).collect()
    };
    let mut out = Vec::new();
    for a in a_side {
        let Some(va) = value(a) else { continue };
        let da = draw(a);
        let matches: Vec<&&InputArtifact> = b_side
            .iter()
            .filter(|b| {
                draw(b)
                    .iter()
                    .zip(&da)
                    .all(|(x, y)| x.is_none() || y.is_none() || x == y)
            })
            .collect();
        match matches.as_slice() {
            [] => {}
            [b] => {
                if let Some(vb) = value(b) {
                    let mut draws: Vec<&Draw> = a.draws.iter().collect();
                    for d in &b.draws {
                        if !draws.contains(&d) {
                            draws.push(d);
                        }
                    }
                    out.push((va - vb, draws));
                }
            }
            [first, second, ..] => {
                return Err(ReportError::layout(
                    "paired",
                    format!(
                        "`{}` at {} pairs with two instances of `{}` ({} and {}); name the axes \
                         that tell them apart in the pair's `over`, or narrow with `filter`",
                        a.stage,
                        if draw_text(over, &da).is_empty() {
                            "its only draw".to_string()
                        } else {
                            draw_text(over, &da)
                        },
                        first.stage,
                        describe(first),
                        describe(second)
                    ),
                ))
            }
        }
    }
    Ok(out)
}

fn describe(a: &InputArtifact) -> String {
    let binding: Vec<String> = a
        .binding
        .iter()
        .map(|(k, v)| format!("{k}={}", super::sweep_value::value_text(v)))
        .collect();
    format!("[{}]", binding.join(", "))
}
