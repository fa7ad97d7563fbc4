//! A sweep at a glance: one metric of one stage against one swept parameter (every result a
//! dot; at each value, the mean ± std over the other axes), the same as a table, and a
//! parallel-coordinates plot over all the swept parameters of the stage. Chosen by the query
//! (`?stage=train&metric=map&param=lambda_t`), defaulting to the first stage that recorded a
//! metric, its first metric and its first swept parameter.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use serde_json::Value;

use crate::serve::charts::{self, Point, Scale};
use crate::serve::error::ServeError;
use crate::serve::html::{esc, num, page, seg, value_text};
use crate::serve::state::PipelineState;

/// What the page shows.
#[derive(Debug, Clone, Default)]
pub struct Choice {
    /// The stage.
    pub stage: Option<String>,
    /// The metric.
    pub metric: Option<String>,
    /// The parameter on the horizontal axis (a sweep axis or a swept parameter).
    pub param: Option<String>,
}

/// Per stage, the metrics its cached instances recorded.
fn stage_metrics(state: &PipelineState) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (s, inst) in state.instances.iter().zip(state.plan.instances()) {
        if let Some(metrics) = &s.metrics {
            out.entry(inst.stage.clone())
                .or_default()
                .extend(metrics.keys().cloned());
        }
    }
    out
}

/// The swept parameters of `stage`: the sweep axes its instances are bound on, then the
/// parameters that differ between its instances under another name.
pub(crate) fn swept(state: &PipelineState, stage: &str) -> Vec<String> {
    let insts: Vec<_> = state
        .plan
        .instances()
        .iter()
        .filter(|i| i.stage == stage)
        .collect();
    let mut out: Vec<String> = state
        .axes()
        .into_iter()
        .filter(|a| {
            let values: BTreeSet<String> = insts
                .iter()
                .filter_map(|i| i.binding.get(a).map(Value::to_string))
                .collect();
            values.len() > 1
        })
        .collect();
    let mut params: BTreeMap<&String, BTreeSet<String>> = BTreeMap::new();
    for i in &insts {
        for (k, v) in &i.params.0 {
            params.entry(k).or_default().insert(v.to_string());
        }
    }
    for (k, values) in params {
        if values.len() > 1 && !out.contains(k) {
            out.push(k.clone());
        }
    }
    out
}

/// The value of `name` (an axis, else a parameter) for instance `i`.
fn value_of(state: &PipelineState, i: usize, name: &str) -> Value {
    let inst = &state.plan.instances()[i];
    inst.binding
        .get(name)
        .or_else(|| inst.params.0.get(name))
        .cloned()
        .unwrap_or(Value::Null)
}

fn select(name: &str, label: &str, options: &[String], chosen: &str) -> String {
    let mut out = format!(
        "<label>{} <select name=\"{name}\" class=\"autosubmit\">",
        esc(label)
    );
    for o in options {
        let _ = write!(
            out,
            "<option value=\"{}\"{}>{}</option>",
            esc(o),
            if o == chosen { " selected" } else { "" },
            esc(o)
        );
    }
    out.push_str("</select></label> ");
    out
}

/// The page.
pub fn render(state: &PipelineState, choice: &Choice) -> Result<String, ServeError> {
    let base = format!("/p/{}", seg(&state.name));
    let here = format!("{base}/sweep");
    let title = format!("{}: sweep", state.plan.spec().name);
    let crumbs = [
        (base.clone(), state.name.clone()),
        (here.clone(), "sweep".to_string()),
    ];
    let by_stage = stage_metrics(state);
    let stages: Vec<String> = by_stage.keys().cloned().collect();
    let Some(stage) = choice
        .stage
        .clone()
        .or_else(|| stages.iter().find(|s| !swept(state, s).is_empty()).cloned())
        .or_else(|| stages.first().cloned())
    else {
        let body = "<p class=\"muted\">No result has recorded a metric yet: run the pipeline, and this page plots them.</p>";
        return Ok(page(&title, &crumbs, body, None));
    };
    let (metrics, metric) = choose_metric(state, &by_stage, &stages, &stage, choice)?;
    let params = swept(state, &stage);
    let param = choose_param(&params, &stage, choice)?;

    let mut body = format!("<form method=\"get\" action=\"{here}\" class=\"choose\">");
    body.push_str(&select("stage", "stage", &stages, &stage));
    body.push_str(&select("metric", "metric", &metrics, &metric));
    if let Some(param) = &param {
        body.push_str(&select("param", "against", &params, param));
    }
    body.push_str("<button type=\"submit\">Show</button></form>\n");

    let ids: Vec<usize> = state
        .plan
        .instances()
        .iter()
        .filter(|i| i.stage == stage)
        .map(|i| i.index)
        .collect();
    let metric_of = |i: usize| {
        state.instances[i]
            .metrics
            .as_ref()
            .and_then(|m| m.get(&metric).copied())
    };
    let with = ids.iter().filter(|&&i| metric_of(i).is_some()).count();
    let _ = write!(
        body,
        "<p class=\"muted\">{with} of {} instances of <code>{}</code> have <code>{}</code>.</p>",
        ids.len(),
        esc(&stage),
        esc(&metric)
    );
    let Some(param) = param else {
        body.push_str("<p>This stage is not swept: nothing to plot against.</p>");
        return Ok(page(&title, &crumbs, &body, None));
    };
    let point = |i: usize, values: Vec<Value>| Point {
        values,
        y: metric_of(i),
        label: state.label(i),
        href: Some(format!("{base}/i/{i}")),
    };
    let points: Vec<Point> = ids
        .iter()
        .map(|&i| point(i, vec![value_of(state, i, &param)]))
        .collect();
    scatter_section(&mut body, state, &points, &params, &param, &metric);

    let all: Vec<Point> = ids
        .iter()
        .map(|&i| point(i, params.iter().map(|p| value_of(state, i, p)).collect()))
        .collect();
    parallel_section(&mut body, &all, &params, &stage, &metric);
    Ok(page(&title, &crumbs, &body, None))
}

/// The metrics `stage` recorded and the one the choice names (else its first), or a 404.
fn choose_metric(
    state: &PipelineState,
    by_stage: &BTreeMap<String, BTreeSet<String>>,
    stages: &[String],
    stage: &str,
    choice: &Choice,
) -> Result<(Vec<String>, String), ServeError> {
    let metrics: Vec<String> = by_stage
        .get(stage)
        .ok_or_else(|| {
            ServeError::NotFound(format!(
                "stage `{stage}` of `{}` has no results with metrics; stages with metrics: {}",
                state.name,
                stages.join(", ")
            ))
        })?
        .iter()
        .cloned()
        .collect();
    let metric = choice.metric.clone().unwrap_or_else(|| metrics[0].clone());
    if !metrics.contains(&metric) {
        return Err(ServeError::NotFound(format!(
            "stage `{stage}` recorded no metric `{metric}`; it recorded: {}",
            metrics.join(", ")
        )));
    }
    Ok((metrics, metric))
}

/// The swept parameter on the horizontal axis: the one the choice names (a 404 when `stage`
/// is not swept over it), else the first; none when the stage is not swept.
fn choose_param(
    params: &[String],
    stage: &str,
    choice: &Choice,
) -> Result<Option<String>, ServeError> {
    match &choice.param {
        Some(p) if params.contains(p) => Ok(Some(p.clone())),
        Some(p) => Err(ServeError::NotFound(format!(
            "stage `{stage}` is not swept over `{p}`; its swept parameters are: {}",
            if params.is_empty() {
                "none".to_string()
            } else {
                params.join(", ")
            }
        ))),
        None => Ok(params.first().cloned()),
    }
}

/// The metric against one parameter: every result a dot with the means and their spread,
/// and the same as a table.
fn scatter_section(
    body: &mut String,
    state: &PipelineState,
    points: &[Point],
    params: &[String],
    param: &str,
    metric: &str,
) {
    let axes = state.axes();
    let others: Vec<&String> = params
        .iter()
        .filter(|p| **p != param && axes.contains(p))
        .collect();
    let _ = write!(
        body,
        "<section><h2>{} against {}</h2><p class=\"muted\">Each dot is one result; the line joins \
         the means at each value of <code>{}</code>, with a bar of ± one standard deviation over {}.</p>\
         <div class=\"plot-box\" id=\"scatter\">{}</div>",
        esc(metric),
        esc(param),
        esc(param),
        if others.is_empty() {
            "the results that share it".to_string()
        } else {
            format!(
                "the other axes ({})",
                others
                    .iter()
                    .map(|o| esc(o))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
        charts::scatter(points, param, metric)
    );
    body.push_str(&summary_table(points, param, metric));
    body.push_str("</section>\n");
}

/// The parallel coordinates of every result of `stage` over all its swept parameters.
fn parallel_section(
    body: &mut String,
    all: &[Point],
    params: &[String],
    stage: &str,
    metric: &str,
) {
    let higher = higher_is_better(metric);
    let _ = writeln!(
        body,
        "<section><h2>Parallel coordinates</h2><p class=\"muted\">One line per result across every \
         swept parameter of <code>{}</code> and <code>{}</code>, darker the better ({} is better); \
         point at a line for its values, click it for its page.</p><div class=\"plot-box\" id=\"parallel\">{}</div></section>",
        esc(stage),
        esc(metric),
        if higher { "higher" } else { "lower" },
        charts::parallel(all, params, metric, higher)
    );
}

/// Whether more of `metric` is better: not for losses, errors and times.
fn higher_is_better(metric: &str) -> bool {
    let m = metric.to_ascii_lowercase();
    !["loss", "error", "err", "seconds", "time", "gflops"]
        .iter()
        .any(|w| m.split(['_', '-', '.']).any(|part| part == *w) || m.ends_with(w))
}

/// At each value of the parameter: how many results, their mean ± std, min and max.
fn summary_table(points: &[Point], param: &str, metric: &str) -> String {
    let x = Scale::of(points.iter().filter_map(|p| p.values.first()));
    let mut out = format!(
        "<table class=\"grid\" id=\"sweep-summary\"><thead><tr><th>{}</th><th>results</th><th>{} mean ± std</th><th>min</th><th>max</th></tr></thead><tbody>",
        esc(param),
        esc(metric)
    );
    for (v, ys) in charts::by_x(points, &x) {
        let (mean, std) = charts::mean_std(&ys);
        let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{} ± {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(&value_text(v)),
            ys.len(),
            num(mean),
            num(std),
            num(lo),
            num(hi)
        );
    }
    out.push_str("</tbody></table>");
    out
}
