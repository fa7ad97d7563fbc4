//! Two or more instances side by side: their sweep values, a parameter diff (rows that differ
//! are marked, and a switch hides the rest) and a metric diff (each value with its difference
//! from the first instance).

use std::collections::BTreeSet;
use std::fmt::Write;

use super::status::badge;
use crate::graph::Instance;
use crate::serve::error::ServeError;
use crate::serve::html::{esc, num, page, seg, value_text};
use crate::serve::state::PipelineState;

/// The instance ids in `ids` (`3,7,12`): at least two, each an instance of the pipeline.
pub(crate) fn parse_ids(state: &PipelineState, ids: &str) -> Result<Vec<usize>, ServeError> {
    let mut out = Vec::new();
    for part in ids.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let s = state.instance(part)?;
        if !out.contains(&s.index) {
            out.push(s.index);
        }
    }
    if out.len() < 2 {
        return Err(ServeError::NotFound(format!(
            "comparing needs two or more instances, as `?ids=0,1`; got `{ids}`"
        )));
    }
    Ok(out)
}

fn row(name: &str, class: &str, cells: &[String]) -> String {
    let distinct: BTreeSet<&String> = cells.iter().collect();
    let diff = if distinct.len() > 1 { " diff" } else { "" };
    let mut out = format!("<tr class=\"{class}{diff}\"><th>{}</th>", esc(name));
    for c in cells {
        let _ = write!(out, "<td>{c}</td>");
    }
    out.push_str("</tr>\n");
    out
}

/// The page.
pub fn render(state: &PipelineState, ids: &[usize]) -> String {
    let base = format!("/p/{}", seg(&state.name));
    let insts: Vec<_> = ids.iter().map(|&i| &state.plan.instances()[i]).collect();
    let mut body = String::from(
        "<p><label><input type=\"checkbox\" id=\"only-diff\"> only rows that differ</label></p>\
         <div class=\"scroll\"><table class=\"grid compare\" id=\"compare-table\"><thead><tr><th></th>",
    );
    for &i in ids {
        let _ = write!(
            body,
            "<th><a href=\"{base}/i/{i}\">{}</a></th>",
            esc(&state.label(i))
        );
    }
    body.push_str("</tr></thead><tbody>\n");
    body.push_str(&row(
        "status",
        "meta",
        &ids.iter()
            .map(|&i| badge(state.instances[i].status))
            .collect::<Vec<_>>(),
    ));
    body.push_str(&row(
        "stage",
        "meta",
        &insts.iter().map(|i| esc(&i.stage)).collect::<Vec<_>>(),
    ));
    let axes: BTreeSet<&String> = insts.iter().flat_map(|i| i.binding.keys()).collect();
    for axis in axes {
        let cells: Vec<String> = insts
            .iter()
            .map(|i| {
                i.binding
                    .get(axis)
                    .map(|v| esc(&value_text(v)))
                    .unwrap_or_default()
            })
            .collect();
        body.push_str(&row(&format!("sweep {axis}"), "axis", &cells));
    }
    body.push_str(&param_rows(&insts));
    body.push_str(&metric_rows(state, ids));
    body.push_str("</tbody></table></div>\n");
    page(
        &format!("Compare {} instances", ids.len()),
        &[(base.clone(), state.name.clone())],
        &body,
        None,
    )
}

/// The parameters group: one row per parameter any of the instances has, its value in each.
fn param_rows(insts: &[&Instance]) -> String {
    let params: BTreeSet<&String> = insts.iter().flat_map(|i| i.params.0.keys()).collect();
    let mut body = String::from("<tr class=\"group\"><th colspan=\"99\">parameters</th></tr>\n");
    for p in params {
        let cells: Vec<String> = insts
            .iter()
            .map(|i| {
                i.params
                    .0
                    .get(p)
                    .map(|v| format!("<code>{}</code>", esc(&v.to_string())))
                    .unwrap_or_else(|| "<span class=\"muted\">-</span>".into())
            })
            .collect();
        body.push_str(&row(p, "param", &cells));
    }
    body
}

/// The metrics group: one row per metric any of the instances recorded, each value with its
/// difference from the first instance's.
fn metric_rows(state: &PipelineState, ids: &[usize]) -> String {
    let metrics: BTreeSet<&String> = ids
        .iter()
        .filter_map(|&i| state.instances[i].metrics.as_ref())
        .flat_map(|metrics| metrics.keys())
        .collect();
    let mut body = String::from(
        "<tr class=\"group\"><th colspan=\"99\">metrics (difference from the first)</th></tr>\n",
    );
    for m in metrics {
        let values: Vec<Option<f64>> = ids
            .iter()
            .map(|&i| state.instances[i].metrics.as_ref()?.get(m).copied())
            .collect();
        let first = values[0];
        let cells: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(n, v)| match (v, first) {
                (None, _) => "<span class=\"muted\">-</span>".into(),
                (Some(v), Some(f)) if n > 0 => {
                    let d = v - f;
                    let class = if d > 0.0 {
                        "up"
                    } else if d < 0.0 {
                        "down"
                    } else {
                        "same"
                    };
                    format!(
                        "<span class=\"num\">{}</span> <span class=\"delta {class}\">{}{}</span>",
                        num(*v),
                        if d >= 0.0 { "+" } else { "" },
                        num(d)
                    )
                }
                (Some(v), _) => format!("<span class=\"num\">{}</span>", num(*v)),
            })
            .collect();
        body.push_str(&row(m, "metric", &cells));
    }
    body
}
