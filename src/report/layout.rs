//! The layout of a report table, read from the `report` stage's parameters.
//!
//! A table is a grid of cells. Its rows and its columns are each a list of *dimensions*; a
//! dimension is one of:
//! - `stage`: the upstream stage's name (shown through `labels`: `eval-tsym` reads "teacher
//!   symmetric");
//! - `metric`: the metric (from `metrics`); where neither `rows` nor `cols` names it, it is
//!   the innermost column dimension;
//! - any other name: a *field* of an upstream instance, looked up first in `tags` (extra
//!   fields given per stage in the layout, e.g. which model embeds the queries and which the
//!   gallery, for a compatibility matrix built from separate evaluation stages), then in the
//!   instance's sweep binding (`query_res`, `dataset`), then in its parameters.
//!
//! A field dimension that no instance has is dropped, so a template naming `dataset` and
//! `query_res` also fits a pipeline that sweeps only one of them. The axes named by `over`
//! (`seed` by default; a list such as `["seed", "teacher_seed"]` makes every combination one
//! draw) are aggregated inside each cell, with a Student-t interval when `ci` is set; a cell
//! of one draw gets a bootstrap interval over its queries with `bootstrap`; `paired`
//! adds rows of per-draw differences between two stages. Rows and
//! columns are the combinations of values that occur; values of a dimension appear in the
//! order given under `order`, then numbers ascending, then in order of first appearance.

use std::collections::BTreeMap;

use serde_json::Value;

use super::bootstrap::Bootstrap;
use super::error::ReportError;
use super::sweep_value::value_text;
use super::NumberFormat;
use crate::kind::{InputArtifact, ParamDecl, ParamType, Params, Range};

/// The parameters of the `report` kind, with their defaults. [`Layout::from_params`] fills in
/// these defaults for parameters that are absent, so tests may give only what they change.
pub(crate) const PARAMS: &[ParamDecl] = &[
    ParamDecl::optional("title", ParamType::Str, "\"\"", "Title above the table (and its LaTeX caption)."),
    ParamDecl::optional(
        "rows",
        ParamType::Any,
        "\"stage\"",
        "Row dimensions: a name or a list of names; each is `stage`, `metric`, a sweep axis, a tag or an upstream parameter.",
    ),
    ParamDecl::optional(
        "cols",
        ParamType::Any,
        "[]",
        "Column dimensions, as for `rows`; `metric` is appended innermost unless rows or cols name it.",
    ),
    ParamDecl::optional(
        "metrics",
        ParamType::List(&ParamType::Str),
        "[\"map\", \"r1\"]",
        "The metrics shown, in order.",
    ),
    ParamDecl::optional(
        "over",
        ParamType::Any,
        "\"seed\"",
        "The sweep axes aggregated in each cell, a name or a list (`[\"seed\", \"teacher_seed\"]`: every draw of both): mean ± sample std (n - 1) and n of expected; an axis no result has (`\"none\"`) aggregates nothing.",
    ),
    ParamDecl::optional(
        "ci",
        ParamType::Float,
        "0.0",
        "Confidence level of a Student-t interval of each cell's mean, printed after the spread (`0.95`); 0: none.",
    ),
    ParamDecl::optional(
        "bootstrap",
        ParamType::Any,
        "false",
        "A percentile bootstrap over queries for each one-draw cell, printed as [lo, hi]: `{ samples = 1000, level = 0.95, seed = 0 }` (`level` defaults to `ci`, else 0.95), or true for those defaults; needs per-query scores (`evaluate`'s per_query.json).",
    ),
    ParamDecl::optional(
        "paired",
        ParamType::Any,
        "[]",
        "Rows of per-draw differences a - b with mean, CI and k of n positive: `{ a = \"eval-ts\", b = \"eval-trained\", over = \"seed\" }` (`over`: the axes pairing the draws, default the table's; `label`: the row's name), or a list of them.",
    ),
    ParamDecl::optional(
        "expected",
        ParamType::Int,
        "0",
        "Results expected per cell; 0 counts the instances of the `over` axis that reach the cell.",
    )
    .at_least(0.0),
    ParamDecl::optional(
        "labels",
        ParamType::Any,
        "{}",
        "Display names: `{ eval-tsym = \"teacher symmetric\", map = \"mAP\", \"query_res=32\" = \"32 px\" }`.",
    ),
    ParamDecl::optional(
        "tags",
        ParamType::Any,
        "{}",
        "Extra fields per upstream stage, usable as dimensions: `{ eval-21 = { query = \"phi2\", gallery = \"phi1\" } }`.",
    ),
    ParamDecl::optional(
        "filter",
        ParamType::Any,
        "{}",
        "Keep only instances whose dimension has one of the values: `{ dataset = [\"cub\", \"cars\"] }`.",
    ),
    ParamDecl::optional(
        "order",
        ParamType::Any,
        "{}",
        "Value order per dimension: `{ dataset = [\"cub\", \"cars\", \"sop\"] }`.",
    ),
    ParamDecl::optional(
        "format",
        ParamType::Str,
        "\"percent:1\"",
        "Number format: \"percent:D\" (times 100, D decimals) or \"fixed:D\".",
    ),
    ParamDecl::optional(
        "formats",
        ParamType::Any,
        "{}",
        "Number format per metric, overriding `format`: `{ query_gflops = \"fixed:2\" }`.",
    ),
    ParamDecl::optional(
        "plot_xy",
        ParamType::List(&ParamType::Str),
        "[\"query_gflops\", \"map\"]",
        "[x, y] metrics plotted against each other, one series per row (empty: no such plot).",
    ),
    ParamDecl::optional(
        "heatmap",
        ParamType::Bool,
        "false",
        "Also draw the table's first metric as a heat map (rows x columns).",
    ),
    ParamDecl::optional(
        "plot_size",
        ParamType::List(&ParamType::Int),
        "[640, 480]",
        "Width and height of every plot, in pixels.",
    )
    .within(Range::closed(64.0, 4096.0)),
];

/// A row of paired differences: for each column and each draw (a value of the `over` axes),
/// the value of stage `a` minus that of stage `b`.
#[derive(Debug, Clone, PartialEq)]
pub struct Paired {
    /// The upstream stage whose values are subtracted from.
    pub a: String,
    /// The upstream stage subtracted.
    pub b: String,
    /// The axes that pair a draw of `a` with one of `b`; a side without one of them (a single
    /// draw shared by every value) pairs with each value of the other side.
    pub over: Vec<String>,
    /// The row's name, or `None` for "LABEL(a) - LABEL(b)".
    pub label: Option<String>,
}

/// One dimension of a table's rows or columns. See the module docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dimension {
    /// The upstream stage's name.
    Stage,
    /// The metric.
    Metric,
    /// A tag, sweep axis or upstream parameter of this name.
    Field(String),
}

impl Dimension {
    fn parse(name: &str) -> Dimension {
        match name {
            "stage" => Dimension::Stage,
            "metric" => Dimension::Metric,
            other => Dimension::Field(other.to_string()),
        }
    }

    /// The name used in a layout (`stage`, `metric`, the field's name).
    pub fn name(&self) -> &str {
        match self {
            Dimension::Stage => "stage",
            Dimension::Metric => "metric",
            Dimension::Field(name) => name,
        }
    }
}

/// A report's layout. See the module docs.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Title above the table.
    pub title: String,
    /// Row dimensions, outermost first.
    pub rows: Vec<Dimension>,
    /// Column dimensions, outermost first; holds [`Dimension::Metric`] unless `rows` does.
    pub cols: Vec<Dimension>,
    /// The metrics shown, in order.
    pub metrics: Vec<String>,
    /// The axes aggregated in each cell (every combination of their values is one draw).
    pub over: Vec<String>,
    /// The confidence level of each cell's Student-t interval, if any.
    pub ci: Option<f64>,
    /// The bootstrap over queries of one-draw cells, if any.
    pub bootstrap: Option<Bootstrap>,
    /// Rows of paired differences, appended under the table's rows.
    pub paired: Vec<Paired>,
    /// Results expected per cell, or `None` to count the instances reaching the cell.
    pub expected: Option<usize>,
    /// Display names of stages, values (`value` or `dimension=value`), dimensions and metrics.
    pub labels: BTreeMap<String, String>,
    /// Stage name -> field name -> value: extra fields usable as dimensions.
    pub tags: BTreeMap<String, BTreeMap<String, String>>,
    /// Dimension name -> the values kept.
    pub filter: BTreeMap<String, Vec<String>>,
    /// Dimension name -> the order its values appear in.
    pub order: BTreeMap<String, Vec<String>>,
    /// The number format of metrics without their own.
    pub format: NumberFormat,
    /// Number formats per metric.
    pub formats: BTreeMap<String, NumberFormat>,
    /// The `[x, y]` metrics of the scatter/line plot, if any.
    pub plot_xy: Option<(String, String)>,
    /// Whether the table's first metric is drawn as a heat map.
    pub heatmap: bool,
    /// Plot width and height in pixels.
    pub plot_size: (u32, u32),
}

fn names(value: &Value, param: &str) -> Result<Vec<String>, ReportError> {
    match value {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                ReportError::layout(
                    param,
                    "expected a name or a list of names, e.g. [\"stage\"]",
                )
            }),
        _ => Err(ReportError::layout(
            param,
            "expected a name or a list of names, e.g. [\"stage\"]",
        )),
    }
}

fn table<'v>(
    value: &'v Value,
    param: &str,
) -> Result<&'v serde_json::Map<String, Value>, ReportError> {
    value
        .as_object()
        .ok_or_else(|| ReportError::layout(param, "expected a table, e.g. `{ name = \"value\" }`"))
}

fn scalar_text(value: &Value, param: &str) -> Result<String, ReportError> {
    match value {
        Value::String(_) | Value::Number(_) | Value::Bool(_) => Ok(value_text(value)),
        _ => Err(ReportError::layout(
            param,
            format!("expected a string or number, found {value}"),
        )),
    }
}

fn text_or_list(value: &Value, param: &str) -> Result<Vec<String>, ReportError> {
    match value {
        Value::Array(items) => items.iter().map(|v| scalar_text(v, param)).collect(),
        other => Ok(vec![scalar_text(other, param)?]),
    }
}

/// Each dimension named once in `rows` and `cols`, and none of them an `over` axis.
fn check_dimensions(
    rows: &[Dimension],
    cols: &[Dimension],
    over: &[String],
) -> Result<(), ReportError> {
    let mut seen: Vec<&str> = Vec::new();
    for dim in rows.iter().chain(cols.iter()) {
        if seen.contains(&dim.name()) {
            return Err(ReportError::layout(
                "rows",
                format!(
                    "`{}` appears twice in `rows`/`cols`; name each dimension once",
                    dim.name()
                ),
            ));
        }
        if let Some(over) = over.iter().find(|o| *o == dim.name()) {
            return Err(ReportError::layout(
                "over",
                format!(
                    "`{over}` is aggregated in each cell and cannot also be a row or column; \
                     remove it from `rows`/`cols` or set `over` to another axis"
                ),
            ));
        }
        seen.push(dim.name());
    }
    Ok(())
}

/// `expected`: the results per cell (0 or absent: count them).
fn expected(value: &Value) -> Result<Option<usize>, ReportError> {
    Ok(match value.as_i64() {
        Some(n) if n > 0 => Some(n as usize),
        Some(0) | None => None,
        Some(n) => {
            return Err(ReportError::layout(
                "expected",
                format!("{n} is negative; give the results expected per cell, or 0 to count them"),
            ))
        }
    })
}

/// A table of `param` whose values are strings or numbers, as text.
fn text_table(value: &Value, param: &str) -> Result<BTreeMap<String, String>, ReportError> {
    let mut out = BTreeMap::new();
    for (k, v) in table(value, param)? {
        out.insert(k.clone(), scalar_text(v, &format!("{param}.{k}"))?);
    }
    Ok(out)
}

/// A table of `param` whose values are a text or a list of texts.
fn list_table(value: &Value, param: &str) -> Result<BTreeMap<String, Vec<String>>, ReportError> {
    let mut out = BTreeMap::new();
    for (k, v) in table(value, param)? {
        out.insert(k.clone(), text_or_list(v, &format!("{param}.{k}"))?);
    }
    Ok(out)
}

/// `ci`: a level strictly between 0 and 1, or 0 (none).
fn ci(value: &Value) -> Result<Option<f64>, ReportError> {
    match value.as_f64() {
        Some(0.0) => Ok(None),
        Some(level) if level > 0.0 && level < 1.0 => Ok(Some(level)),
        _ => Err(ReportError::layout(
            "ci",
            format!("{value} is not a confidence level; write one between 0 and 1, e.g. 0.95, or 0 for none"),
        )),
    }
}

/// `paired`: a table `{ a, b, over, label }` or a list of them.
fn paired(value: &Value, over: &[String]) -> Result<Vec<Paired>, ReportError> {
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let param = format!("paired[{i}]");
            let example = "e.g. `{ a = \"eval-ts\", b = \"eval-trained\", over = \"seed\" }`";
            let fields = item.as_object().ok_or_else(|| {
                ReportError::layout(&param, format!("expected a table, {example}"))
            })?;
            if let Some(unknown) = fields
                .keys()
                .find(|k| !["a", "b", "over", "label"].contains(&k.as_str()))
            {
                return Err(ReportError::layout(
                    &param,
                    format!("unknown field `{unknown}`; the fields are a, b, over and label"),
                ));
            }
            let stage = |name: &str| {
                fields
                    .get(name)
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| {
                        ReportError::layout(
                            &param,
                            format!("`{name}` must name an input stage, {example}"),
                        )
                    })
            };
            Ok(Paired {
                a: stage("a")?,
                b: stage("b")?,
                over: match fields.get("over") {
                    Some(v) => names(v, &format!("{param}.over"))?,
                    None => over.to_vec(),
                },
                label: fields
                    .get("label")
                    .map(|v| scalar_text(v, &format!("{param}.label")))
                    .transpose()?,
            })
        })
        .collect()
}

/// `plot_xy`: two metric names, or none for no plot.
fn plot_xy(value: &Value) -> Result<Option<(String, String)>, ReportError> {
    match names(value, "plot_xy")?.as_slice() {
        [] => Ok(None),
        [x, y] => Ok(Some((x.clone(), y.clone()))),
        _ => Err(ReportError::layout(
            "plot_xy",
            "expected two metric names [x, y], e.g. [\"query_gflops\", \"map\"], or [] for no plot",
        )),
    }
}

/// `plot_size`: `[width, height]` in pixels, each 64 to 4096.
fn plot_size(value: &Value) -> Result<(u32, u32), ReportError> {
    let size: Vec<i64> = value
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    match size.as_slice() {
        [w, h] if (64..=4096).contains(w) && (64..=4096).contains(h) => Ok((*w as u32, *h as u32)),
        _ => Err(ReportError::layout(
            "plot_size",
            "expected [width, height] in pixels, each 64 to 4096, e.g. [640, 480]",
        )),
    }
}

impl Layout {
    /// Reads a layout from the `report` stage's parameters, with [`PARAMS`]' defaults for any
    /// that are absent.
    pub fn from_params(params: &Params) -> Result<Layout, ReportError> {
        let get = |name: &str| -> Value {
            params.get(name).cloned().unwrap_or_else(|| {
                PARAMS
                    .iter()
                    .find(|d| d.name == name)
                    .and_then(|d| d.default_value())
                    .unwrap_or(Value::Null)
            })
        };

        let title = get("title").as_str().unwrap_or_default().to_string();
        let mut rows: Vec<Dimension> = names(&get("rows"), "rows")?
            .iter()
            .map(|n| Dimension::parse(n))
            .collect();
        let mut cols: Vec<Dimension> = names(&get("cols"), "cols")?
            .iter()
            .map(|n| Dimension::parse(n))
            .collect();
        let metrics = names(&get("metrics"), "metrics")?;
        if metrics.is_empty() {
            return Err(ReportError::layout(
                "metrics",
                "name at least one metric, e.g. [\"map\", \"r1\"]",
            ));
        }
        let over = names(&get("over"), "over")?;
        check_dimensions(&rows, &cols, &over)?;
        let ci = ci(&get("ci"))?;
        let bootstrap = Bootstrap::parse(&get("bootstrap"), ci)?;
        let paired = match get("paired") {
            Value::Array(items) if items.is_empty() => Vec::new(),
            value => paired(&value, &over)?,
        };
        if !paired.is_empty() && rows.contains(&Dimension::Metric) {
            return Err(ReportError::layout(
                "paired",
                "a paired row holds every metric of the table, so `metric` must be a column \
                 dimension; remove it from `rows`",
            ));
        }
        if !rows.contains(&Dimension::Metric) && !cols.contains(&Dimension::Metric) {
            cols.push(Dimension::Metric);
        }
        if rows.is_empty() && cols.is_empty() {
            rows.push(Dimension::Stage);
        }

        let expected = expected(&get("expected"))?;

        let labels = text_table(&get("labels"), "labels")?;
        let mut tags = BTreeMap::new();
        for (stage, fields) in table(&get("tags"), "tags")? {
            tags.insert(stage.clone(), text_table(fields, &format!("tags.{stage}"))?);
        }
        let filter = list_table(&get("filter"), "filter")?;
        let order = list_table(&get("order"), "order")?;

        let format = NumberFormat::parse(get("format").as_str().unwrap_or("percent:1"), "format")?;
        let mut formats = BTreeMap::new();
        for (k, v) in table(&get("formats"), "formats")? {
            let param = format!("formats.{k}");
            let text = v.as_str().ok_or_else(|| {
                ReportError::layout(&param, "expected a string such as \"fixed:2\"")
            })?;
            formats.insert(k.clone(), NumberFormat::parse(text, &param)?);
        }

        let plot_xy = plot_xy(&get("plot_xy"))?;
        let heatmap = get("heatmap").as_bool().unwrap_or(false);
        let plot_size = plot_size(&get("plot_size"))?;

        Ok(Layout {
            title,
            rows,
            cols,
            metrics,
            over,
            ci,
            bootstrap,
            paired,
            expected,
            labels,
            tags,
            filter,
            order,
            format,
            formats,
            plot_xy,
            heatmap,
            plot_size,
        })
    }

    /// This layout without the field dimensions that none of `inputs` has, so one template
    /// (columns `dataset` x `query_res`) fits a pipeline that sweeps only some of them.
    pub(crate) fn fitted_to(&self, inputs: &[&InputArtifact]) -> Layout {
        let present = |d: &Dimension| match d {
            Dimension::Field(name) => inputs.iter().any(|a| self.field(name, a).is_some()),
            _ => true,
        };
        let mut fitted = self.clone();
        fitted.rows.retain(present);
        fitted.cols.retain(present);
        fitted
    }

    /// The value of dimension `dim` for `artifact` (`None` for [`Dimension::Metric`], and for a
    /// field the instance lacks).
    pub(crate) fn value_of(&self, dim: &Dimension, artifact: &InputArtifact) -> Option<String> {
        match dim {
            Dimension::Stage => Some(artifact.stage.clone()),
            Dimension::Metric => None,
            Dimension::Field(name) => self.field(name, artifact),
        }
    }

    /// A field of `artifact`: its tag, else its sweep binding, else its parameter `name`.
    pub fn field(&self, name: &str, artifact: &InputArtifact) -> Option<String> {
        if let Some(tag) = self.tags.get(&artifact.stage).and_then(|t| t.get(name)) {
            return Some(tag.clone());
        }
        artifact
            .binding
            .get(name)
            .or_else(|| artifact.params.get(name))
            .map(value_text)
    }

    /// The values of the `over` axes for `artifact`, one per axis (`None` where it lacks one):
    /// which draw it is.
    pub(crate) fn draw_of(&self, artifact: &InputArtifact) -> Vec<Option<String>> {
        self.over.iter().map(|o| self.field(o, artifact)).collect()
    }

    /// The `over` axes as a note names them: `` `seed` `` or `` `seed` × `teacher_seed` ``.
    pub(crate) fn over_text(over: &[String]) -> String {
        over.iter()
            .map(|o| format!("`{o}`"))
            .collect::<Vec<_>>()
            .join(" × ")
    }

    /// Whether `artifact` passes the `filter`.
    pub fn keeps(&self, artifact: &InputArtifact) -> bool {
        self.filter.iter().all(|(name, allowed)| {
            let value = self.value_of(&Dimension::parse(name), artifact);
            value.is_some_and(|v| allowed.contains(&v))
        })
    }

    /// The display name of `value` of dimension `dim`: `labels["dim=value"]`, else
    /// `labels[value]`, else (for metrics) a known name such as "mAP", else the value.
    pub(crate) fn value_label(&self, dim: &Dimension, value: &str) -> String {
        if let Some(label) = self.labels.get(&format!("{}={value}", dim.name())) {
            return label.clone();
        }
        if let Some(label) = self.labels.get(value) {
            return label.clone();
        }
        if *dim == Dimension::Metric {
            return crate::metrics::registry::label(value);
        }
        value.to_string()
    }

    /// The display name of a dimension (a row header): its label, else its name.
    pub(crate) fn dimension_label(&self, dim: &Dimension) -> String {
        self.labels
            .get(dim.name())
            .cloned()
            .unwrap_or_else(|| dim.name().to_string())
    }

    /// The display name of a metric.
    pub(crate) fn metric_label(&self, metric: &str) -> String {
        self.value_label(&Dimension::Metric, metric)
    }

    /// The number format of `metric`.
    pub(crate) fn format_of(&self, metric: &str) -> NumberFormat {
        self.formats
            .get(metric)
            .copied()
            .unwrap_or_else(|| NumberFormat::default_for(metric, self.format))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(value: Value) -> Params {
        Params(serde_json::from_value(value).unwrap())
    }

    #[test]
    fn defaults_put_stages_in_rows_and_metrics_in_columns() {
        let layout = Layout::from_params(&Params::default()).unwrap();
        assert_eq!(layout.rows, vec![Dimension::Stage]);
        assert_eq!(layout.cols, vec![Dimension::Metric]);
        assert_eq!(layout.metrics, vec!["map", "r1"]);
        assert_eq!(layout.over, vec!["seed"]);
        assert_eq!(layout.ci, None);
        assert_eq!(layout.bootstrap, None);
        assert!(layout.paired.is_empty());
        assert_eq!(layout.expected, None);
        assert_eq!(layout.plot_xy, Some(("query_gflops".into(), "map".into())));
        assert_eq!(layout.plot_size, (640, 480));
    }

    #[test]
    fn metric_stays_where_the_layout_puts_it() {
        let layout = Layout::from_params(&params(
            json!({"rows": ["stage", "metric"], "cols": "query_res"}),
        ))
        .unwrap();
        assert_eq!(layout.rows, vec![Dimension::Stage, Dimension::Metric]);
        assert_eq!(layout.cols, vec![Dimension::Field("query_res".into())]);
    }

    #[test]
    fn aggregating_over_a_row_axis_is_an_error_that_says_how_to_fix_it() {
        let err = Layout::from_params(&params(json!({"cols": ["seed"]})))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`seed` is aggregated") && err.contains("remove it"),
            "{err}"
        );
    }

    #[test]
    fn bad_shapes_name_the_parameter() {
        let err = Layout::from_params(&params(json!({"rows": 3})))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("parameter `rows`"), "{err}");
        let err = Layout::from_params(&params(json!({"plot_xy": ["map"]})))
            .unwrap_err()
            .to_string();
        assert!(err.contains("plot_xy"), "{err}");
        let err = Layout::from_params(&params(json!({"formats": {"map": "pct"}})))
            .unwrap_err()
            .to_string();
        assert!(err.contains("formats.map"), "{err}");
    }

    #[test]
    fn labels_prefer_the_qualified_key_then_the_value_then_known_metric_names() {
        let layout = Layout::from_params(&params(json!({
            "labels": {"query_res=32": "32 px", "32": "thirty-two", "eval-t": "teacher"}
        })))
        .unwrap();
        let res = Dimension::Field("query_res".into());
        assert_eq!(layout.value_label(&res, "32"), "32 px");
        assert_eq!(
            layout.value_label(&Dimension::Field("other".into()), "32"),
            "thirty-two"
        );
        assert_eq!(layout.value_label(&Dimension::Stage, "eval-t"), "teacher");
        assert_eq!(layout.metric_label("r1"), "R@1");
        assert_eq!(layout.metric_label("custom"), "custom");
    }
}
