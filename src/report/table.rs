//! The table model: gathered instances laid out on a grid of [`Cell`]s by a [`Layout`].
//!
//! Renderers (Markdown, CSV, LaTeX, HTML, heat map) all read this one model, so every format
//! shows the same numbers. Rows and columns are the combinations of dimension values that
//! occur among the instances; a cell whose combination no instance reaches, or whose
//! instances lack the metric, is empty and prints as a dash.
//!
//! A cell aggregates over the layout's `over` axis only. Two results for the same value of
//! that axis in one cell mean the layout does not tell some instances apart (another sweep
//! axis varies within the cell): that is an error naming the axis to add, never a silent mean.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::axis::{build_axis, draw_text, key_of, split_metric, value_order, Axis};
use super::bootstrap::Bootstrap;
use super::error::ReportError;
use super::footnote::{self, Footnotes};
use super::layout::Dimension;
use super::missing::has_run;
use super::{paired, provenance, Cell, Layout};
use crate::kind::{Draw, InputArtifact};
use crate::metrics::per_query::{PerQuery, PER_QUERY_OUTPUT};
use crate::metrics::registry;

/// A report table. See the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// The title (may be empty).
    pub title: String,
    /// The rows.
    pub rows: Axis,
    /// The columns.
    pub cols: Axis,
    /// `cells[row][col]`.
    pub cells: Vec<Vec<Cell>>,
    /// The aggregated axes that some result has; empty when none has any of the layout's
    /// `over` axes (a table with `seed` as a column aggregates nothing, `over = "none"`): then
    /// each cell holds at most one result and the note names no axis.
    pub over: Vec<String>,
    /// The confidence level of the cells' Student-t intervals, if any.
    pub ci: Option<f64>,
    /// The bootstrap over queries of one-draw cells, if the layout asks for it.
    pub bootstrap: Option<Bootstrap>,
    /// Why some cells lack values ([`footnote`]), numbered in reading order.
    pub footnotes: Footnotes,
    /// `marks[row][col]`: the footnote numbers of a cell (empty for a complete one).
    pub marks: Vec<Vec<Vec<usize>>>,
}

/// An instance in a cell, with the reasons it recorded for metrics it declined.
type Member<'a> = (&'a InputArtifact, &'a BTreeMap<String, String>);

fn describe(artifact: &InputArtifact) -> String {
    let binding: Vec<String> = artifact
        .binding
        .iter()
        .map(|(k, v)| format!("{k}={}", super::sweep_value::value_text(v)))
        .collect();
    if binding.is_empty() {
        format!("`{}`", artifact.stage)
    } else {
        format!("`{}` [{}]", artifact.stage, binding.join(", "))
    }
}

fn ambiguity(layout: &Layout, metric: &str, a: &InputArtifact, b: &InputArtifact) -> ReportError {
    let mut differ: BTreeSet<String> = BTreeSet::new();
    if a.stage != b.stage {
        differ.insert("stage".into());
    }
    for key in a.binding.keys().chain(b.binding.keys()) {
        if a.binding.get(key) != b.binding.get(key) {
            differ.insert(key.clone());
        }
    }
    let hint = if differ.is_empty() {
        "give them different `tags`, or narrow the results with `filter`".to_string()
    } else {
        format!(
            "add {} to `rows` or `cols` (or to `over`), or narrow the results with `filter`",
            differ
                .iter()
                .map(|d| format!("`{d}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        )
    };
    let at = draw_text(&layout.over, &layout.draw_of(a));
    let at = if at.is_empty() {
        String::new()
    } else {
        format!(" with {at}")
    };
    ReportError::Ambiguous(format!(
        "two results for metric `{metric}` land in one cell{at}: {} and {}; {hint}",
        describe(a),
        describe(b)
    ))
}

/// Each `over` axis' value order (`order`, numbers ascending, first appearance), as ranks.
fn over_ranks(layout: &Layout, kept: &[&InputArtifact]) -> Vec<HashMap<String, usize>> {
    layout
        .over
        .iter()
        .map(|axis| {
            let mut seen = Vec::new();
            for a in kept {
                if let Some(v) = layout.field(axis, a) {
                    if !seen.contains(&v) {
                        seen.push(v);
                    }
                }
            }
            value_order(layout, &Dimension::Field(axis.clone()), seen)
                .into_iter()
                .enumerate()
                .map(|(i, v)| (v, i))
                .collect()
        })
        .collect()
}

/// A draw's position in the order of the `over` axes (absent values last).
fn draw_rank(draw: &[Option<String>], ranks: &[HashMap<String, usize>]) -> Vec<usize> {
    draw.iter()
        .zip(ranks)
        .map(|(v, r)| {
            v.as_ref()
                .and_then(|v| r.get(v))
                .copied()
                .unwrap_or(usize::MAX)
        })
        .collect()
}

/// A cell being built: its values, the instances they came from, and its footnote marks.
struct Built<'a> {
    cell: Cell,
    sources: Vec<&'a InputArtifact>,
}

/// The per-query scores read so far, by file: each is read once however many cells use it.
#[derive(Default)]
struct PerQueryFiles(HashMap<std::path::PathBuf, PerQuery>);

impl PerQueryFiles {
    fn of(&mut self, artifact: &InputArtifact) -> Result<Option<&PerQuery>, ReportError> {
        let Some(path) = artifact.outputs.get(PER_QUERY_OUTPUT) else {
            return Ok(None);
        };
        if !self.0.contains_key(path) {
            let file = PerQuery::read(path).map_err(|message| ReportError::PerQuery {
                stage: artifact.stage.clone(),
                message,
            })?;
            self.0.insert(path.clone(), file);
        }
        Ok(self.0.get(path))
    }
}

/// For a cell of one draw under `bootstrap`: sets its interval over the draw's queries and
/// returns the footnote saying what the interval covers; where the draw has no per-query
/// scores of a quality metric, the footnote says there is none and why. Nothing for other
/// cells and for metrics that are no quality measure (GFLOPs, counts).
fn bootstrap_cell(
    layout: &Layout,
    spec: &Bootstrap,
    built: &mut Built<'_>,
    files: &mut PerQueryFiles,
) -> Result<Option<String>, ReportError> {
    let cell = &mut built.cell;
    let ([source], [value]) = (built.sources.as_slice(), cell.values.as_slice()) else {
        return Ok(None);
    };
    let values = files.of(source)?.and_then(|f| f.values(&cell.metric));
    let Some(values) = values else {
        return Ok(registry::compared(&cell.metric).then(|| {
            format!(
                "{}: `{}` wrote no per-query scores of it (`{PER_QUERY_OUTPUT}`), so this one draw \
                 has no bootstrap interval over its queries.",
                layout.metric_label(&cell.metric),
                source.stage
            )
        }));
    };
    let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
    if (mean - value).abs() > 1e-9 * value.abs().max(1.0) {
        return Err(ReportError::PerQuery {
            stage: source.stage.clone(),
            message: format!(
                "the {} per-query values of `{}` average {mean}, but the recorded metric is \
                 {value}; the per-query scores must be the values the metric is the mean of",
                values.len(),
                cell.metric
            ),
        });
    }
    cell.bootstrap = spec.interval(values);
    Ok(cell.bootstrap.map(|_| spec.footnote()))
}

/// The footnote texts of one cell, in order: why results are missing from it (when some are),
/// which draws it pools (when the layout pools over some), and how it was resampled.
fn cell_notes(
    layout: &Layout,
    metric: &str,
    members: &[Member],
    built: &Built,
    over: &[String],
    resampled: Option<String>,
) -> Vec<String> {
    let mut texts = Vec::new();
    let cell = &built.cell;
    if cell.is_missing() || cell.n() < cell.expected {
        let label = layout.metric_label(metric);
        let declined: Vec<footnote::Declined> = members
            .iter()
            .map(|(a, reasons)| footnote::Declined {
                artifact: a,
                reason: reasons.get(metric),
                draw: draw_text(&layout.over, &layout.draw_of(a)),
            })
            .collect();
        texts.extend(footnote::reasons(
            &declined,
            metric,
            &label,
            cell.is_missing(),
        ));
    }
    if !over.is_empty() {
        let draws: Vec<Vec<&Draw>> = built
            .sources
            .iter()
            .map(|a| a.draws.iter().collect())
            .collect();
        texts.extend(provenance::footnote(&draws, over));
    }
    texts.extend(resampled);
    texts
}

/// The footnote numbers of `texts`, each once, numbering the new ones in `footnotes`.
fn footnote_marks(footnotes: &mut Footnotes, texts: Vec<String>) -> Vec<usize> {
    let mut marks = Vec::new();
    for text in texts {
        let n = footnotes.number(text);
        if !marks.contains(&n) {
            marks.push(n);
        }
    }
    marks
}

impl Table {
    /// Lays `inputs` out by `layout`. Instances that have not run (no metrics, no outputs) count
    /// towards the expected results of their cells but give no value.
    pub fn build(layout: &Layout, inputs: &[InputArtifact]) -> Result<Table, ReportError> {
        let kept: Vec<&InputArtifact> = inputs.iter().filter(|a| layout.keeps(a)).collect();
        let reasons = kept
            .iter()
            .map(|a| {
                a.reasons().map_err(|e| ReportError::Reasons {
                    stage: a.stage.clone(),
                    message: e.to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let fitted = layout.fitted_to(&kept);
        let layout = &fitted;
        let mut rows = build_axis(layout, &layout.rows, &kept);
        let cols = build_axis(layout, &layout.cols, &kept);

        let mut groups: HashMap<(Vec<String>, Vec<String>), Vec<Member>> = HashMap::new();
        for (artifact, declined) in kept.iter().zip(&reasons) {
            let key = (
                key_of(layout, &layout.rows, artifact),
                key_of(layout, &layout.cols, artifact),
            );
            groups.entry(key).or_default().push((artifact, declined));
        }
        let ranks = over_ranks(layout, &kept);
        let over: Vec<String> = layout
            .over
            .iter()
            .zip(&ranks)
            .filter(|(_, r)| !r.is_empty())
            .map(|(o, _)| o.clone())
            .collect();

        let mut cells = Vec::with_capacity(rows.len());
        let mut scores = PerQueryFiles::default();
        let mut footnotes = Footnotes::default();
        let mut marks = Vec::with_capacity(rows.len());
        for row_key in &rows.keys {
            let (row_plain, row_metric) = split_metric(&rows.dims, row_key);
            let mut line = Vec::with_capacity(cols.len());
            let mut line_marks = Vec::with_capacity(cols.len());
            for col_key in &cols.keys {
                let (col_plain, col_metric) = split_metric(&cols.dims, col_key);
                let metric = row_metric.clone().or(col_metric).unwrap_or_default();
                let members = groups
                    .get(&(row_plain.clone(), col_plain))
                    .map(Vec::as_slice)
                    .unwrap_or(&[]);
                let mut built = Self::cell(layout, &metric, members, &ranks)?;
                let resampled = match &layout.bootstrap {
                    Some(spec) => bootstrap_cell(layout, spec, &mut built, &mut scores)?,
                    None => None,
                };
                let texts = cell_notes(layout, &metric, members, &built, &over, resampled);
                line_marks.push(footnote_marks(&mut footnotes, texts));
                line.push(built.cell);
            }
            cells.push(line);
            marks.push(line_marks);
        }
        for spec in &layout.paired {
            let row = paired::row(layout, spec, &kept, &cols, &over)?;
            rows.keys.push(row.key);
            rows.labels.push(row.label);
            let mut line_marks = Vec::with_capacity(cols.len());
            for texts in row.footnotes {
                line_marks.push(footnote_marks(&mut footnotes, texts));
            }
            cells.push(row.cells);
            marks.push(line_marks);
        }
        Ok(Table {
            title: layout.title.clone(),
            rows,
            cols,
            cells,
            over,
            ci: layout.ci,
            bootstrap: layout.bootstrap,
            footnotes,
            marks,
        })
    }

    fn cell<'a>(
        layout: &Layout,
        metric: &str,
        members: &[Member<'a>],
        ranks: &[HashMap<String, usize>],
    ) -> Result<Built<'a>, ReportError> {
        // draw -> (value, instance); a draw's values are None on the axes the instance lacks.
        type Draws<'a> = BTreeMap<(Vec<usize>, Vec<Option<String>>), (f64, &'a InputArtifact)>;
        let mut values: Draws<'a> = BTreeMap::new();
        let mut expected: BTreeSet<Vec<Option<String>>> = BTreeSet::new();
        for &(artifact, declined) in members {
            let draw = layout.draw_of(artifact);
            let value = artifact
                .metrics
                .get(metric)
                .copied()
                .filter(|v| v.is_finite());
            if value.is_some() || !has_run(artifact) || declined.contains_key(metric) {
                expected.insert(draw.clone());
            }
            if let Some(v) = value {
                let rank = draw_rank(&draw, ranks);
                if let Some((_, other)) = values.insert((rank, draw), (v, artifact)) {
                    return Err(ambiguity(layout, metric, other, artifact));
                }
            }
        }
        Ok(Built {
            cell: Cell {
                metric: metric.to_string(),
                values: values.values().map(|(v, _)| *v).collect(),
                expected: layout.expected.unwrap_or(expected.len()),
                format: layout.format_of(metric),
                ci: layout.ci,
                paired: false,
                bootstrap: None,
            },
            sources: values.values().map(|(_, a)| *a).collect(),
        })
    }

    /// The note under a table: how cells read.
    pub fn note(&self, plus_minus: &str, dash: &str) -> String {
        let partial = self.cells.iter().flatten().any(Cell::is_partial);
        let missing = self.cells.iter().flatten().any(Cell::is_missing);
        let spread = self.cells.iter().flatten().any(|c| c.n() > 1);
        let single = self.cells.iter().flatten().any(|c| c.n() == 1);
        let over = Layout::over_text(&self.over);
        let mut note = match (self.over.is_empty(), spread || single) {
            (false, true) if spread => {
                format!("Mean{plus_minus}sample standard deviation (n - 1) over {over}.")
            }
            (false, true) => format!("One result per cell (no spread over {over})."),
            (true, true) => "One result per cell.".to_string(),
            (_, false) => "No results yet.".to_string(),
        };
        let interval = self.cells.iter().flatten().any(|c| c.interval().is_some());
        if let (Some(level), true) = (self.ci, interval) {
            note.push_str(&format!(
                " [lo, hi]: the {}% Student-t confidence interval of the mean.",
                (level * 1e6).round() / 1e4
            ));
        }
        if self.cells.iter().flatten().any(|c| c.bootstrap.is_some()) {
            note.push_str(
                " In a cell of one draw, [lo, hi] is a percentile bootstrap interval over the \
                 draw's queries (footnoted).",
            );
        }
        if self
            .cells
            .iter()
            .flatten()
            .any(|c| c.paired && !c.is_missing())
        {
            note.push_str(
                " A paired row holds the per-draw differences a - b (mean, spread and interval \
                 over the draws) and how many are positive.",
            );
        }
        if partial {
            note.push_str(" (k/n): k of n expected results present.");
        }
        if missing {
            note.push_str(&format!(" {dash}: no result."));
        }
        note
    }

    /// Counts of (cells with a value, empty cells, partial cells).
    pub fn counts(&self) -> (usize, usize, usize) {
        let all = self.cells.iter().flatten();
        let filled = all.clone().filter(|c| !c.is_missing()).count();
        let missing = all.clone().filter(|c| c.is_missing()).count();
        let partial = all.filter(|c| c.is_partial()).count();
        (filled, missing, partial)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::Params;
    use crate::report::cell::CellStyle;
    use serde_json::{json, Value};
    use std::collections::BTreeMap;

    pub(crate) fn artifact(stage: &str, binding: Value, metrics: &[(&str, f64)]) -> InputArtifact {
        let outputs = if metrics.is_empty() {
            BTreeMap::new()
        } else {
            BTreeMap::from([(
                "metrics.json".to_string(),
                "/nonexistent/metrics.json".into(),
            )])
        };
        InputArtifact {
            stage: stage.into(),
            kind: "evaluate".into(),
            binding: serde_json::from_value(binding).unwrap(),
            params: Params::default(),
            key: format!("{stage}-key"),
            outputs,
            metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            draws: Vec::new(),
        }
    }

    fn layout(value: Value) -> Layout {
        Layout::from_params(&Params(serde_json::from_value(value).unwrap())).unwrap()
    }

    #[test]
    fn rows_and_columns_follow_stage_order_and_numeric_axis_order() {
        let inputs = vec![
            artifact(
                "eval-b",
                json!({"query_res": 48, "seed": 0}),
                &[("map", 0.5)],
            ),
            artifact(
                "eval-a",
                json!({"query_res": 128, "seed": 0}),
                &[("map", 0.6)],
            ),
            artifact(
                "eval-a",
                json!({"query_res": 48, "seed": 0}),
                &[("map", 0.7)],
            ),
        ];
        let t = Table::build(
            &layout(json!({"cols": "query_res", "metrics": ["map"]})),
            &inputs,
        )
        .unwrap();
        assert_eq!(t.rows.keys, vec![vec!["eval-b"], vec!["eval-a"]]);
        assert_eq!(t.cols.keys, vec![vec!["48", "map"], vec!["128", "map"]]);
        assert_eq!(
            t.cells[0][1].values,
            Vec::<f64>::new(),
            "eval-b never ran at 128"
        );
        assert_eq!(t.cells[1][0].values, vec![0.7]);
    }

    #[test]
    fn the_note_mentions_a_spread_only_when_a_cell_has_one() {
        let one = vec![artifact("eval", json!({"seed": 0}), &[("map", 0.4)])];
        let t = Table::build(&layout(json!({"metrics": ["map"]})), &one).unwrap();
        let note = t.note(" ± ", "-");
        assert!(!note.contains("standard deviation"), "{note}");
        assert!(note.contains("One result per cell"), "{note}");
        let two = vec![
            artifact("eval", json!({"seed": 0}), &[("map", 0.4)]),
            artifact("eval", json!({"seed": 1}), &[("map", 0.5)]),
        ];
        let t = Table::build(&layout(json!({"metrics": ["map"]})), &two).unwrap();
        assert!(t.note(" ± ", "-").contains("standard deviation"));
    }

    #[test]
    fn an_over_axis_no_result_has_is_not_named_in_the_note() {
        // The BCT quickstart's per-seed table: seeds are columns, `over = "none"` aggregates
        // nothing, and the note once read "no spread over `none`".
        let two = vec![
            artifact("gain", json!({"seed": 0}), &[("diff_map", 0.4)]),
            artifact("gain", json!({"seed": 1}), &[("diff_map", 0.5)]),
        ];
        let per_seed = layout(json!({"cols": ["seed"], "metrics": ["diff_map"], "over": "none"}));
        let t = Table::build(&per_seed, &two).unwrap();
        assert!(t.over.is_empty());
        assert_eq!(t.note(" ± ", "-"), "One result per cell.");
        let t = Table::build(&layout(json!({"metrics": ["diff_map"]})), &two[..1]).unwrap();
        assert_eq!(t.over, vec!["seed"]);
        assert_eq!(
            t.note(" ± ", "-"),
            "One result per cell (no spread over `seed`)."
        );
    }

    #[test]
    fn not_run_instances_count_as_expected_but_give_no_value() {
        let inputs = vec![
            artifact("eval", json!({"seed": 0}), &[("map", 0.4)]),
            artifact("eval", json!({"seed": 1}), &[("map", 0.5)]),
            artifact("eval", json!({"seed": 2}), &[]),
        ];
        let t = Table::build(&layout(json!({"metrics": ["map"]})), &inputs).unwrap();
        let cell = &t.cells[0][0];
        assert_eq!((cell.n(), cell.expected), (2, 3));
    }

    #[test]
    fn an_axis_varying_inside_a_cell_is_an_error_naming_it() {
        let inputs = vec![
            artifact("eval", json!({"seed": 0, "lambda": 0.5}), &[("map", 0.4)]),
            artifact("eval", json!({"seed": 0, "lambda": 0.7}), &[("map", 0.5)]),
        ];
        let err = Table::build(&layout(json!({"metrics": ["map"]})), &inputs)
            .unwrap_err()
            .to_string();
        assert!(err.contains("`lambda`") && err.contains("seed=0"), "{err}");
    }

    #[test]
    fn tags_make_a_matrix_from_separate_stages() {
        let inputs = vec![
            artifact("e11", json!({}), &[("map", 0.3)]),
            artifact("e21", json!({}), &[("map", 0.35)]),
            artifact("e22", json!({}), &[("map", 0.45)]),
        ];
        let l = layout(json!({
            "rows": "query", "cols": "gallery", "metrics": ["map"],
            "tags": {"e11": {"query": "phi1", "gallery": "phi1"},
                     "e21": {"query": "phi2", "gallery": "phi1"},
                     "e22": {"query": "phi2", "gallery": "phi2"}}
        }));
        let t = Table::build(&l, &inputs).unwrap();
        assert_eq!(t.rows.keys, vec![vec!["phi1"], vec!["phi2"]]);
        assert_eq!(t.cols.keys, vec![vec!["phi1", "map"], vec!["phi2", "map"]]);
        assert!(
            t.cells[0][1].is_missing(),
            "phi1 queries on a phi2 gallery were never evaluated"
        );
        assert_eq!(t.cells[1][0].values, vec![0.35]);
    }

    #[test]
    fn dimensions_no_instance_has_are_dropped_and_list_values_read_joined() {
        let inputs = vec![
            artifact("e", json!({"losses": ["abs"]}), &[("map", 0.1)]),
            artifact("e", json!({"losses": ["abs", "rel_ts"]}), &[("map", 0.2)]),
        ];
        let l = layout(json!({
            "rows": "losses", "cols": ["dataset", "query_res"], "metrics": ["map"],
            "labels": {"abs+rel_ts": "L_abs + L_rel-ts"}
        }));
        let t = Table::build(&l, &inputs).unwrap();
        assert_eq!(
            t.cols.dims,
            vec![Dimension::Metric],
            "dataset and query_res are not swept"
        );
        assert_eq!(t.rows.keys, vec![vec!["abs"], vec!["abs+rel_ts"]]);
        assert_eq!(t.rows.labels[1], vec!["L_abs + L_rel-ts"]);
    }

    #[test]
    fn filter_and_order_select_and_arrange_values() {
        let inputs = vec![
            artifact("e", json!({"dataset": "sop"}), &[("map", 0.1)]),
            artifact("e", json!({"dataset": "cub"}), &[("map", 0.2)]),
            artifact("e", json!({"dataset": "cars"}), &[("map", 0.3)]),
        ];
        let l = layout(json!({
            "cols": "dataset", "metrics": ["map"],
            "filter": {"dataset": ["cub", "cars"]}, "order": {"dataset": ["cars", "cub"]}
        }));
        let t = Table::build(&l, &inputs).unwrap();
        assert_eq!(t.cols.keys, vec![vec!["cars", "map"], vec!["cub", "map"]]);
    }
    fn with_draws(mut a: InputArtifact, draws: &[(&str, &str)]) -> InputArtifact {
        a.draws = draws
            .iter()
            .map(|(stage, instance)| Draw {
                stage: stage.to_string(),
                instance: instance.to_string(),
            })
            .collect();
        a
    }

    #[test]
    fn over_several_axes_spreads_over_every_draw_and_keeps_one_axis_working() {
        let mut inputs = Vec::new();
        for (s, t, map) in [(0, 0, 0.40), (0, 1, 0.44), (1, 0, 0.42), (1, 1, 0.50)] {
            inputs.push(artifact(
                "eval",
                json!({"seed": s, "teacher_seed": t}),
                &[("map", map)],
            ));
        }
        let both = layout(json!({"metrics": ["map"], "over": ["seed", "teacher_seed"]}));
        let t = Table::build(&both, &inputs).unwrap();
        assert_eq!(t.cells[0][0].values, vec![0.40, 0.44, 0.42, 0.50]);
        assert_eq!(t.cells[0][0].expected, 4);
        assert_eq!(
            t.note(" ± ", "-"),
            "Mean ± sample standard deviation (n - 1) over `seed` × `teacher_seed`."
        );
        let err = Table::build(
            &layout(json!({"metrics": ["map"], "over": "seed"})),
            &inputs,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("seed=0") && err.contains("`teacher_seed`"),
            "{err}"
        );
        let by_teacher = layout(json!({"metrics": ["map"], "cols": "teacher_seed"}));
        let t = Table::build(&by_teacher, &inputs).unwrap();
        assert_eq!(t.cells[0][1].values, vec![0.44, 0.50]);
    }

    #[test]
    fn the_variation_footnote_names_what_ran_once_and_is_absent_when_all_vary() {
        let shared = |seed: i64, map: f64| {
            with_draws(
                artifact("eval", json!({"seed": seed}), &[("map", map)]),
                &[
                    ("teacher", "teacher"),
                    ("student", &format!("student[seed={seed}]")),
                ],
            )
        };
        let inputs = vec![shared(0, 0.4), shared(1, 0.5)];
        let t = Table::build(&layout(json!({"metrics": ["map"]})), &inputs).unwrap();
        assert_eq!(
            t.footnotes.texts,
            vec!["± over `seed` covers student; teacher ran once."]
        );
        assert_eq!(t.marks[0][0], vec![1]);
        let swept = |seed: i64, map: f64| {
            with_draws(
                artifact("eval", json!({"seed": seed}), &[("map", map)]),
                &[
                    ("teacher", &format!("teacher[seed={seed}]")),
                    ("student", &format!("student[seed={seed}]")),
                ],
            )
        };
        let inputs = vec![swept(0, 0.4), swept(1, 0.5)];
        let t = Table::build(&layout(json!({"metrics": ["map"]})), &inputs).unwrap();
        assert!(t.footnotes.is_empty(), "{:?}", t.footnotes);
    }

    #[test]
    fn a_paired_row_holds_per_draw_differences_with_their_interval() {
        let mut inputs = Vec::new();
        // a - b per seed: +0.066, -0.012, +0.013 (scipy's interval of these is in student_t.rs).
        for (seed, (a, b)) in [(0.566, 0.5), (0.488, 0.5), (0.513, 0.5)]
            .into_iter()
            .enumerate()
        {
            inputs.push(artifact("ts", json!({"seed": seed}), &[("map", a)]));
            inputs.push(artifact("tq", json!({"seed": seed}), &[("map", b)]));
        }
        let l = layout(json!({
            "metrics": ["map"], "ci": 0.95,
            "paired": {"a": "ts", "b": "tq", "label": "student - trained at r"}
        }));
        let t = Table::build(&l, &inputs).unwrap();
        assert_eq!(t.rows.labels[2], vec!["student - trained at r"]);
        let cell = &t.cells[2][0];
        assert!(cell.paired && cell.n() == 3 && cell.positive() == 2);
        let (lo, hi) = cell.interval().unwrap();
        assert!((lo + 0.07660689150554645).abs() < 1e-9, "{lo}");
        assert!((hi - 0.12127355817221311).abs() < 1e-9, "{hi}");
        assert_eq!(
            cell.text(CellStyle::PLAIN),
            "+2.2 ± 4.0 [-7.7, +12.1], 2 of 3 positive"
        );
        let t = Table::build(
            &layout(json!({"metrics": ["map"], "paired": {"a": "ts", "b": "nope"}})),
            &inputs,
        )
        .unwrap();
        assert!(t.cells[2][0].is_missing());
        assert!(
            t.footnotes.texts[t.marks[2][0][0] - 1].contains("`nope` is not an input"),
            "{:?}",
            t.footnotes
        );
    }
}
