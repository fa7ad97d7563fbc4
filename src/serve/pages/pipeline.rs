//! A pipeline's page: the stage graph coloured by status, and the instance table (one row per
//! instance; columns for the sweep axes, the swept parameters, every metric, the status and
//! the progress of a running stage), or the same grouped over `seed` (mean ± std, partial
//! cells marked as the report tables mark them). The script polls [`status_json`] and updates
//! statuses, progress, metrics and the graph while a run works on the same cache.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::{json, Value};

use super::{grid, progress_text, Cell, Column};
use crate::report::{Cell as Agg, NumberFormat};
use crate::serve::html::{esc, page, seg, value_text};
use crate::serve::state::{Counts, PipelineState, Status};

/// Which table the page shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum View {
    /// One row per instance.
    Instances,
    /// One row per instance group that differs only in this axis, aggregated over it.
    Aggregated(String),
}

fn counts_html(c: &Counts) -> String {
    format!(
        "<p class=\"counts\"><span class=\"badge st-cached\">cached <b data-count=\"cached\">{}</b></span> \
         <span class=\"badge st-to-run\">to run <b data-count=\"to_run\">{}</b></span> \
         <span class=\"badge st-running\">running <b data-count=\"running\">{}</b></span> \
         <span class=\"badge st-failed\">failed <b data-count=\"failed\">{}</b></span></p>",
        c.cached, c.to_run, c.running, c.failed
    )
}

/// The page.
pub fn render(state: &PipelineState, view: &View) -> String {
    let base = format!("/p/{}", seg(&state.name));
    let spec = state.plan.spec();
    let mut body = format!(
        "<p class=\"muted\">File <code>{}</code> · {} stages · {} instances · \
         <a href=\"{base}/reports\">reports</a></p>\n",
        esc(&spec.file.display().to_string()),
        spec.stages.len(),
        state.instances.len()
    );
    body.push_str(&counts_html(&Counts::of(&state.instances)));
    body.push_str("<section><h2>Stages</h2><div class=\"scroll\">");
    body.push_str(&crate::serve::dag::svg(state));
    body.push_str("</div></section>\n");
    let axes = state.axes();
    let views = {
        let mut links = vec![if *view == View::Instances {
            "<b>instances</b>".to_string()
        } else {
            format!("<a href=\"{base}\">instances</a>")
        }];
        for axis in &axes {
            if *view == View::Aggregated(axis.clone()) {
                links.push(format!("<b>mean ± std over {}</b>", esc(axis)));
            } else {
                links.push(format!(
                    "<a href=\"{base}?over={}\">mean ± std over {}</a>",
                    seg(axis),
                    esc(axis)
                ));
            }
        }
        links.join(" · ")
    };
    let _ = write!(
        body,
        "<section><h2>Instances</h2><p class=\"views\">View: {views}</p>"
    );
    match view {
        View::Instances => {
            body.push_str(
                "<p><button type=\"button\" id=\"compare\" disabled>Compare selected</button> \
                 <span class=\"muted\">Tick two or more rows. Filters take text, or <code>&gt;0.5</code>, \
                 <code>&lt;=3</code>, <code>=7</code> on numbers.</span></p>",
            );
            body.push_str(&instance_table(state, &base));
        }
        View::Aggregated(axis) => body.push_str(&aggregated_table(state, &base, axis)),
    }
    body.push_str("</section>\n");
    page(
        &spec.name,
        &[(base.clone(), state.name.clone())],
        &body,
        Some(&format!("/api{base}/status")),
    )
}

/// A parameter's column, headed `NAME (param)` when a metric has the same name.
fn param_column(name: &str, metrics: &[String]) -> Column {
    Column {
        label: if metrics.iter().any(|m| m == name) {
            format!("{name} (param)")
        } else {
            name.to_string()
        },
        class: "param",
    }
}

fn instance_table(state: &PipelineState, base: &str) -> String {
    let axes = state.axes();
    let params = state.key_params();
    let metrics = state.metrics();
    let mut columns = vec![
        Column {
            label: "".into(),
            class: "pick",
        },
        Column {
            label: "#".into(),
            class: "id",
        },
        Column {
            label: "stage".into(),
            class: "stage",
        },
    ];
    columns.extend(axes.iter().map(|a| Column {
        label: a.clone(),
        class: "axis",
    }));
    columns.extend(params.iter().map(|p| param_column(p, &metrics)));
    columns.extend(metrics.iter().map(|m| Column {
        label: m.clone(),
        class: "metric",
    }));
    columns.push(Column {
        label: "status".into(),
        class: "status",
    });
    columns.push(Column {
        label: "progress".into(),
        class: "progress",
    });
    columns.push(Column {
        label: "why it runs".into(),
        class: "why",
    });
    let mut rows = Vec::with_capacity(state.instances.len());
    for (s, inst) in state.instances.iter().zip(state.plan.instances()) {
        let id = s.index;
        let mut cells = vec![
            Cell {
                html: format!(
                    "<input type=\"checkbox\" class=\"pick\" value=\"{id}\" aria-label=\"pick {}\">",
                    esc(&state.label(id))
                ),
                ..Cell::default()
            },
            Cell {
                html: id.to_string(),
                sort: Some(id.to_string()),
                class: "num".into(),
                ..Cell::default()
            },
            Cell {
                html: format!("<a href=\"{base}/i/{id}\">{}</a>", esc(&inst.stage)),
                sort: Some(inst.stage.clone()),
                ..Cell::default()
            },
        ];
        for a in &axes {
            cells.push(match inst.binding.get(a) {
                Some(Value::Number(n)) => Cell::number(n.as_f64().unwrap_or(f64::NAN)),
                Some(v) => Cell::text(&value_text(v)),
                None => Cell::default(),
            });
        }
        for p in &params {
            cells.push(match inst.params.0.get(p) {
                Some(Value::Number(n)) => Cell::number(n.as_f64().unwrap_or(f64::NAN)),
                Some(v) => Cell::text(&value_text(v)),
                None => Cell::default(),
            });
        }
        for m in &metrics {
            let mut cell = match s.record.as_ref().and_then(|r| r.metrics.get(m)) {
                Some(v) => Cell::number(*v),
                None => Cell::default(),
            };
            cell.attrs = format!(" data-metric=\"{}\"", esc(m));
            cells.push(cell);
        }
        cells.push(Cell {
            html: s.status.name().into(),
            sort: Some(s.status.name().into()),
            class: format!("st-{}", s.status.name()),
            attrs: format!(" data-status-of=\"{id}\""),
        });
        cells.push(Cell {
            html: esc(&progress_text(s.progress.as_ref())),
            attrs: format!(" data-progress-of=\"{id}\""),
            ..Cell::default()
        });
        cells.push(Cell::text(match s.status {
            Status::Cached => "",
            Status::Failed => s.failure.as_deref().unwrap_or(""),
            _ => &s.reason,
        }));
        rows.push((format!(" data-id=\"{id}\""), cells));
    }
    grid("instances", &columns, &rows)
}

fn aggregated_table(state: &PipelineState, base: &str, over: &str) -> String {
    let axes: Vec<String> = state.axes().into_iter().filter(|a| a != over).collect();
    let params: Vec<String> = state
        .key_params()
        .into_iter()
        .filter(|p| p != over)
        .collect();
    let metrics = state.metrics();
    // Group instances of one stage whose bindings differ only in `over`.
    let mut groups: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    for inst in state.plan.instances() {
        let mut rest = inst.binding.clone();
        rest.remove(over);
        let params_rest: BTreeMap<&String, &Value> = inst
            .params
            .0
            .iter()
            .filter(|(k, _)| params.contains(k))
            .collect();
        let id = (
            inst.stage.clone(),
            serde_json::to_string(&(rest, params_rest)).expect("json"),
        );
        if !groups.contains_key(&id) {
            order.push(id.clone());
        }
        groups.entry(id).or_default().push(inst.index);
    }
    let mut columns = vec![Column {
        label: "stage".into(),
        class: "stage",
    }];
    columns.extend(axes.iter().map(|a| Column {
        label: a.clone(),
        class: "axis",
    }));
    columns.extend(params.iter().map(|p| param_column(p, &metrics)));
    columns.extend(metrics.iter().map(|m| Column {
        label: m.clone(),
        class: "metric",
    }));
    columns.push(Column {
        label: format!("{over} values"),
        class: "status",
    });
    let mut rows = Vec::new();
    for id in &order {
        let members = &groups[id];
        let first = &state.plan.instances()[members[0]];
        let mut cells = vec![Cell {
            html: format!(
                "<a href=\"{base}/i/{}\">{}</a>",
                members[0],
                esc(&first.stage)
            ),
            sort: Some(first.stage.clone()),
            ..Cell::default()
        }];
        for a in &axes {
            cells.push(match first.binding.get(a) {
                Some(Value::Number(n)) => Cell::number(n.as_f64().unwrap_or(f64::NAN)),
                Some(v) => Cell::text(&value_text(v)),
                None => Cell::default(),
            });
        }
        for p in &params {
            cells.push(match first.params.0.get(p) {
                Some(Value::Number(n)) => Cell::number(n.as_f64().unwrap_or(f64::NAN)),
                Some(v) => Cell::text(&value_text(v)),
                None => Cell::default(),
            });
        }
        for m in &metrics {
            let values: Vec<f64> = members
                .iter()
                .filter_map(|&i| state.instances[i].record.as_ref()?.metrics.get(m).copied())
                .collect();
            let agg = Agg {
                metric: m.clone(),
                values,
                expected: members.len(),
                format: NumberFormat::default_for(m, NumberFormat::Fixed(4)),
                ci: None,
                paired: false,
            };
            let class = if agg.is_missing() {
                "missing"
            } else if agg.is_partial() {
                "num partial"
            } else {
                "num"
            };
            cells.push(Cell {
                html: esc(&agg.text(crate::report::cell::CellStyle::PLAIN)),
                sort: agg.mean().map(|v| v.to_string()),
                class: class.into(),
                ..Cell::default()
            });
        }
        let c = Counts::of(members.iter().map(|&i| &state.instances[i]));
        cells.push(Cell {
            html: format!("{}/{} cached", c.cached, members.len()),
            sort: Some(c.cached.to_string()),
            class: format!("st-{}", c.overall().name()),
            ..Cell::default()
        });
        rows.push((String::new(), cells));
    }
    let mut out = format!(
        "<p class=\"muted\">Each row groups the instances that differ only in <code>{}</code>: \
         mean ± sample std; <span class=\"partial\">(k/n)</span> marks a cell with k of n results.</p>",
        esc(over)
    );
    out.push_str(&grid("aggregated", &columns, &rows));
    out
}

/// The live state the script polls: counts, each stage's status and counts, each instance's
/// status, progress and metrics.
pub(crate) fn status_json(state: &PipelineState) -> Value {
    let stages: Vec<Value> = state
        .plan
        .spec()
        .stages
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let c = Counts::of(
                state
                    .plan
                    .instances()
                    .iter()
                    .filter(|inst| inst.stage == s.name)
                    .map(|inst| &state.instances[inst.index]),
            );
            json!({ "stage": i, "name": s.name, "status": c.overall().name(), "counts": c })
        })
        .collect();
    let instances: Vec<Value> = state
        .instances
        .iter()
        .map(|s| {
            json!({
                "id": s.index,
                "label": state.label(s.index),
                "status": s.status.name(),
                "key": s.key,
                "progress": s.progress,
                "metrics": s.record.as_ref().map(|r| &r.metrics),
            })
        })
        .collect();
    json!({
        "pipeline": state.name,
        "counts": Counts::of(&state.instances),
        "stages": stages,
        "instances": instances,
    })
}
