//! A pipeline's page: the stage graph coloured by status, and the instance table (one row per
//! instance; columns for the sweep axes, the swept parameters, the chosen metrics, the status
//! and the progress of a running stage), or the same grouped over an axis (mean ± std, partial
//! cells marked as the report tables mark them).
//!
//! The table is sorted, filtered and cut into pages here, as the URL says ([`TableQuery`]), so
//! a sweep of 100,000 instances sends one page of rows; [`fragment`] is the table part alone,
//! which the script fetches when a header, a filter, a page link or a metric choice changes
//! the query, and again whenever the counts in [`status_json`] change while a run works on
//! the same cache (so a page left open gains the metric columns of results that arrive).

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::{json, Value};

use super::grid::{grid, table, Cell, Column, GridState};
use super::status::progress_text;
use crate::report::{Cell as Agg, NumberFormat};
use crate::serve::error::ServeError;
use crate::serve::html::{esc, page, seg, value_text};
use crate::serve::query::{self, TableQuery};
use crate::serve::state::{Counts, InstanceState, PipelineState, Status};

/// The status counts, which the page's script updates: "…" each on a page whose state is
/// not whole (its script asks for them at once).
fn counts_html(state: &PipelineState) -> String {
    if !state.is_whole() {
        return format!(
            "<p class=\"counts\"><span class=\"badge st-cached\">cached <b data-count=\"cached\">…</b></span> \
             <span class=\"badge st-to-run\">to run <b data-count=\"to_run\">…</b></span> \
             <span class=\"badge st-running\">running <b data-count=\"running\">…</b></span> \
             <span class=\"badge st-failed\">failed <b data-count=\"failed\">…</b></span> \
             <span class=\"muted\" id=\"counting\">counting the {} instances…</span></p>",
            state.instances.len()
        );
    }
    let c = Counts::of(&state.instances);
    format!(
        "<p class=\"counts\"><span class=\"badge st-cached\">cached <b data-count=\"cached\">{}</b></span> \
         <span class=\"badge st-to-run\">to run <b data-count=\"to_run\">{}</b></span> \
         <span class=\"badge st-running\">running <b data-count=\"running\">{}</b></span> \
         <span class=\"badge st-failed\">failed <b data-count=\"failed\">{}</b></span></p>",
        c.cached, c.to_run, c.running, c.failed
    )
}

/// Checks the query against the pipeline: an `over` that names no axis is a 404 naming the
/// axes.
pub(crate) fn check(state: &PipelineState, q: &TableQuery) -> Result<(), ServeError> {
    match &q.over {
        Some(axis) if !state.axes().contains(axis) => Err(ServeError::NotFound(format!(
            "pipeline `{}` has no sweep axis `{axis}`; its axes are: {}",
            state.name,
            state.axes().join(", ")
        ))),
        _ => Ok(()),
    }
}

/// The page.
pub fn render(state: &PipelineState, q: &TableQuery) -> String {
    let base = format!("/p/{}", seg(&state.name));
    let spec = state.plan.spec();
    let mut links = vec![
        format!("<a href=\"{base}/reports\">reports</a>"),
        format!("<a href=\"{base}/sweep\">sweep</a>"),
        format!("<a href=\"{base}/history\">history</a>"),
    ];
    for search in state.plan.searches() {
        links.push(format!(
            "<a href=\"{base}/search/{}\">search {}</a>",
            seg(&search.name),
            esc(&search.name)
        ));
    }
    let mut body = format!(
        "<p class=\"muted\">File <code>{}</code> · {} stages · {} instances · {}</p>\n",
        esc(&spec.file.display().to_string()),
        spec.stages.len(),
        state.instances.len(),
        links.join(" · ")
    );
    body.push_str(&counts_html(state));
    body.push_str("<section><h2>Stages</h2><div class=\"scroll\">");
    body.push_str(&crate::serve::dag::svg(state));
    body.push_str("</div></section>\n");
    let _ = writeln!(
        body,
        "<section><h2>Instances</h2><div id=\"table-section\" data-page=\"{base}\" data-table=\"{base}/table\"{}>{}</div></section>",
        if state.is_whole() { "" } else { " data-partial=\"1\"" },
        fragment(state, q)
    );
    page(
        &spec.name,
        &[(base.clone(), state.name.clone())],
        &body,
        Some(&format!("/api{base}/status")),
    )
}

/// The table part of the page for query `q`: the views, the metric columns to choose from,
/// and the table.
pub fn fragment(state: &PipelineState, q: &TableQuery) -> String {
    let base = format!("/p/{}", seg(&state.name));
    let mut out = String::new();
    let mut links = vec![if q.over.is_none() {
        "<b>instances</b>".to_string()
    } else {
        format!(
            "<a href=\"{base}{}\" data-query=\"1\">instances</a>",
            esc(&q.in_view(None).to_url())
        )
    }];
    for axis in state.axes() {
        if q.over.as_deref() == Some(axis.as_str()) {
            links.push(format!("<b>mean ± std over {}</b>", esc(&axis)));
        } else {
            links.push(format!(
                "<a href=\"{base}{}\" data-query=\"1\">mean ± std over {}</a>",
                esc(&q.in_view(Some(&axis)).to_url()),
                esc(&axis)
            ));
        }
    }
    let _ = write!(out, "<p class=\"views\">View: {}</p>", links.join(" · "));
    out.push_str(&metric_choice(state, q));
    match &q.over {
        None => {
            out.push_str(
                "<p><button type=\"button\" id=\"compare\" disabled>Compare selected</button> \
                 <button type=\"button\" id=\"overlay\" disabled>Overlay loss curves</button> \
                 <span class=\"muted\">Tick rows to compare them or draw their loss curves in one chart. \
                 Filters take text, or <code>&gt;0.5</code>, <code>&lt;=3</code>, <code>=7</code> on numbers.</span></p>",
            );
            out.push_str(&instance_table(state, &base, q));
        }
        Some(axis) => out.push_str(&aggregated_table(state, &base, axis, q)),
    }
    out
}

/// The metrics shown, in name order: those `q` names (all when it names none).
fn shown_metrics(state: &PipelineState, q: &TableQuery) -> Vec<String> {
    state
        .metrics()
        .into_iter()
        .filter(|m| q.shows_metric(m))
        .collect()
}

/// A checkbox per metric any result recorded, ticked when its column is shown.
fn metric_choice(state: &PipelineState, q: &TableQuery) -> String {
    let all = state.metrics();
    if all.is_empty() {
        return String::new();
    }
    let shown = shown_metrics(state, q);
    let mut out = format!(
        "<details class=\"columns\" id=\"metric-columns\"><summary>Metric columns ({} of {})</summary><p>",
        shown.len(),
        all.len()
    );
    for m in &all {
        let _ = write!(
            out,
            "<label><input type=\"checkbox\" class=\"metric-choice\" value=\"{}\"{}> {}</label> ",
            esc(m),
            if shown.contains(m) { " checked" } else { "" },
            esc(m)
        );
    }
    out.push_str("</p></details>");
    out
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

/// The columns of the sweep axes, the key parameters and the metrics, in that order.
fn value_columns(axes: &[String], params: &[String], metrics: &[String]) -> Vec<Column> {
    let mut columns: Vec<Column> = axes
        .iter()
        .map(|a| Column {
            label: a.clone(),
            class: "axis",
        })
        .collect();
    columns.extend(params.iter().map(|p| param_column(p, metrics)));
    columns.extend(metrics.iter().map(|m| Column {
        label: m.clone(),
        class: "metric",
    }));
    columns
}

/// A sweep value or parameter value as a cell: a number sorts as a number; none is empty.
fn value_cell(value: Option<&Value>) -> Cell {
    match value {
        Some(Value::Number(n)) => Cell::number(n.as_f64().unwrap_or(f64::NAN)),
        Some(v) => Cell::text(&value_text(v)),
        None => Cell::default(),
    }
}

/// What one column of the instance table shows.
enum InstanceColumn {
    Pick,
    Id,
    Stage,
    Axis(String),
    Param(String),
    Metric(String),
    Status,
    Progress,
    Why,
}

/// The instance table: one row per instance, with its pick box, number and stage, its axes,
/// parameters and metrics, and its live status, progress and reason to run.
fn instance_table(state: &PipelineState, base: &str, q: &TableQuery) -> String {
    let axes = state.axes();
    let params = state.key_params();
    let metrics = shown_metrics(state, q);
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
    columns.extend(value_columns(&axes, &params, &metrics));
    for (label, class) in [
        ("status", "status"),
        ("progress", "progress"),
        ("why it runs", "why"),
    ] {
        columns.push(Column {
            label: label.into(),
            class,
        });
    }
    let mut shows = vec![
        InstanceColumn::Pick,
        InstanceColumn::Id,
        InstanceColumn::Stage,
    ];
    shows.extend(axes.into_iter().map(InstanceColumn::Axis));
    shows.extend(params.into_iter().map(InstanceColumn::Param));
    shows.extend(metrics.into_iter().map(InstanceColumn::Metric));
    shows.extend([
        InstanceColumn::Status,
        InstanceColumn::Progress,
        InstanceColumn::Why,
    ]);
    let rows = Rows {
        total: state.instances.len(),
        attrs: |id: usize| format!(" data-id=\"{id}\""),
        cell: |id: usize, c: usize| instance_cell(state, base, id, &shows[c]),
    };
    paged_table(base, "instances", &columns, rows, q)
}

/// Instance `id`'s cell in a column that shows `what`.
fn instance_cell(state: &PipelineState, base: &str, id: usize, what: &InstanceColumn) -> Cell {
    let (s, inst) = (&state.instances[id], &state.plan.instances()[id]);
    match what {
        InstanceColumn::Pick => Cell {
            html: format!(
                "<input type=\"checkbox\" class=\"pick\" value=\"{id}\" aria-label=\"pick {}\">",
                esc(&state.label(id))
            ),
            ..Cell::default()
        },
        InstanceColumn::Id => Cell {
            html: id.to_string(),
            sort: Some(id.to_string()),
            class: "num".into(),
            plain: id.to_string(),
            ..Cell::default()
        },
        InstanceColumn::Stage => Cell {
            html: format!("<a href=\"{base}/i/{id}\">{}</a>", esc(&inst.stage)),
            sort: Some(inst.stage.clone()),
            plain: inst.stage.clone(),
            ..Cell::default()
        },
        InstanceColumn::Axis(a) => value_cell(inst.binding.get(a)),
        InstanceColumn::Param(p) => value_cell(inst.params.0.get(p)),
        InstanceColumn::Metric(m) => {
            let mut cell = match s.metrics.as_ref().and_then(|metrics| metrics.get(m)) {
                Some(v) => Cell::number(*v),
                None => Cell::default(),
            };
            cell.attrs = format!(" data-metric=\"{}\"", esc(m));
            cell
        }
        InstanceColumn::Status => status_cell(s),
        InstanceColumn::Progress => progress_cell(s),
        InstanceColumn::Why => why_cell(s),
    }
}

/// An instance's status cell, which the page's script updates.
fn status_cell(s: &InstanceState) -> Cell {
    Cell {
        html: s.status.name().into(),
        sort: Some(s.status.name().into()),
        class: format!("st-{}", s.status.name()),
        attrs: format!(" data-status-of=\"{}\"", s.index),
        plain: s.status.name().into(),
    }
}

/// An instance's progress cell, which the page's script updates.
fn progress_cell(s: &InstanceState) -> Cell {
    let progress = progress_text(s.progress.as_ref());
    Cell {
        html: esc(&progress),
        attrs: format!(" data-progress-of=\"{}\"", s.index),
        plain: progress,
        ..Cell::default()
    }
}

/// Why an instance runs (or why it failed), which the page's script updates.
fn why_cell(s: &InstanceState) -> Cell {
    let mut why = Cell::text(match s.status {
        Status::Cached => "",
        Status::Failed => s.failure.as_deref().unwrap_or(""),
        _ => &s.reason,
    });
    why.attrs = format!(" data-why-of=\"{}\"", s.index);
    why
}

/// The rows of a server-paged table, made on demand: `attrs(i)` is row `i`'s attributes and
/// `cell(i, c)` its cell in column `c`.
struct Rows<A, C> {
    total: usize,
    attrs: A,
    cell: C,
}

impl<A: Fn(usize) -> String, C: Fn(usize, usize) -> Cell> Rows<A, C> {
    /// Row `i` with every one of its `columns` cells.
    fn row(&self, i: usize, columns: usize) -> (String, Vec<Cell>) {
        (
            (self.attrs)(i),
            (0..columns).map(|c| (self.cell)(i, c)).collect(),
        )
    }
}

/// The rows `q` asks for: filtered, sorted, and the page of them, with the tools above the
/// table (how many rows, the pages) and the table, whose sort and filters show `q`'s. Only
/// the page's rows are made whole (200 unless the URL says, of a 100,000-instance sweep); a
/// filter or a sort makes the cells of its own column for the other rows, nothing else.
fn paged_table<A, C>(
    base: &str,
    id: &str,
    columns: &[Column],
    rows: Rows<A, C>,
    q: &TableQuery,
) -> String
where
    A: Fn(usize) -> String,
    C: Fn(usize, usize) -> Cell,
{
    let position = |name: &str| {
        columns
            .iter()
            .position(|c| c.label == name && c.class != "pick")
    };
    let filters: Vec<(usize, &str)> = q
        .filters
        .iter()
        .filter_map(|(c, e)| Some((position(c)?, e.as_str())))
        .collect();
    let sort = q.sort.as_deref().and_then(position);
    let total = rows.total;
    let order: Option<Vec<usize>> = (!filters.is_empty() || sort.is_some())
        .then(|| filtered_and_sorted(total, &rows.cell, &filters, sort, q));
    let shown = order.as_ref().map_or(total, Vec::len);
    let (page, pages, start) = q.page_of(shown);
    let page_rows: Vec<(String, Vec<Cell>)> = match &order {
        None => (start..total.min(start + q.per))
            .map(|i| rows.row(i, columns.len()))
            .collect(),
        Some(order) => order
            .iter()
            .skip(start)
            .take(q.per)
            .map(|&i| rows.row(i, columns.len()))
            .collect(),
    };
    let count = if shown == total {
        format!("{total} rows")
    } else {
        format!("{shown} of {total} rows")
    };
    let range = if pages > 1 {
        format!(", showing {}-{}", start + 1, start + page_rows.len())
    } else {
        String::new()
    };
    let mut out = format!(
        "<div class=\"grid-tools\"><span class=\"shown\" data-for=\"{id}\" data-total=\"{total}\" data-matching=\"{shown}\">{count}</span>{range} \
         <button type=\"button\" class=\"clear-filters\" data-for=\"{id}\">Clear filters</button>{}</div>\n",
        pager(base, q, page, pages)
    );
    let state = GridState {
        sort: sort.map(|c| (c, q.desc)),
        filters: filters.iter().map(|&(c, e)| (c, e.to_string())).collect(),
        server: true,
    };
    out.push_str(&table(id, columns, &page_rows, &state));
    out
}

/// The numbers of the rows among `0..total` that pass every filter, in the order of the sort
/// column (`desc` as `q` says). `cell(i, c)` is made only for the filtered and sorted columns.
fn filtered_and_sorted(
    total: usize,
    cell: &impl Fn(usize, usize) -> Cell,
    filters: &[(usize, &str)],
    sort: Option<usize>,
    q: &TableQuery,
) -> Vec<usize> {
    let kept: Vec<usize> = (0..total)
        .filter(|&i| {
            filters.iter().all(|&(c, expr)| {
                let cell = cell(i, c);
                query::passes(
                    expr,
                    &query::Value {
                        text: &cell.plain,
                        sort: cell.sort.as_deref(),
                    },
                )
            })
        })
        .collect();
    let Some(c) = sort else {
        return kept;
    };
    let cells: Vec<Cell> = kept.iter().map(|&i| cell(i, c)).collect();
    let values: Vec<query::Value<'_>> = cells
        .iter()
        .map(|cell| query::Value {
            text: &cell.plain,
            sort: cell.sort.as_deref(),
        })
        .collect();
    let numeric = query::is_numeric(values.iter());
    let mut order: Vec<usize> = (0..kept.len()).collect();
    order.sort_by(|&a, &b| {
        query::order(
            (&values[a], kept[a]),
            (&values[b], kept[b]),
            numeric,
            q.desc,
        )
    });
    order.into_iter().map(|at| kept[at]).collect()
}

/// Links to the first, previous, next and last page (nothing when there is one page).
fn pager(base: &str, q: &TableQuery, page: usize, pages: usize) -> String {
    if pages <= 1 {
        return String::new();
    }
    let link = |to: usize, text: &str| {
        if to == page || to == 0 || to > pages {
            format!("<span class=\"muted\">{text}</span>")
        } else {
            format!(
                "<a href=\"{base}{}\" data-query=\"1\" data-page=\"{to}\">{text}</a>",
                esc(&q.on_page(to).to_url())
            )
        }
    };
    format!(
        " <nav class=\"pager\">{} {} <span class=\"page-of\">page {page} of {pages}</span> {} {}</nav>",
        link(1, "« first"),
        link(page - 1, "‹ previous"),
        link(page + 1, "next ›"),
        link(pages, "last »")
    )
}

/// The instances grouped as "mean ± std over `over`" groups them: those of one stage whose
/// sweep bindings differ only in `over`, in plan order. Parameters do not take part: they
/// follow from the stage and the binding, and a parameter fed by the axis under another name
/// (`seed = "${sweep.s}"`) differs inside a group by design.
pub(crate) fn groups_over(state: &PipelineState, over: &str) -> Vec<Vec<usize>> {
    let mut groups: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut out: Vec<Vec<usize>> = Vec::new();
    for inst in state.plan.instances() {
        let mut rest = inst.binding.to_map();
        rest.remove(over);
        let id = (
            inst.stage.clone(),
            serde_json::to_string(&rest).expect("a binding is JSON"),
        );
        let slot = *groups.entry(id).or_insert_with(|| {
            out.push(Vec::new());
            out.len() - 1
        });
        out[slot].push(inst.index);
    }
    out
}

/// The table aggregated over `over`: one row per group of instances that differ only in it,
/// each metric the mean ± std of the group, and how many of the group are cached.
fn aggregated_table(state: &PipelineState, base: &str, over: &str, q: &TableQuery) -> String {
    let axes: Vec<String> = state.axes().into_iter().filter(|a| a != over).collect();
    let groups = groups_over(state, over);
    let params = uniform_params(state, &groups, over);
    let metrics = shown_metrics(state, q);
    let mut columns = vec![Column {
        label: "stage".into(),
        class: "stage",
    }];
    columns.extend(value_columns(&axes, &params, &metrics));
    columns.push(Column {
        label: format!("{over} values"),
        class: "status",
    });
    let mut rows = Vec::new();
    for members in &groups {
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
            cells.push(value_cell(first.binding.get(a)));
        }
        for p in &params {
            cells.push(value_cell(first.params.0.get(p)));
        }
        for m in &metrics {
            cells.push(aggregate_cell(state, members, m));
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

/// The key parameters (but `over`) that are one value inside every group: those the
/// aggregated table shows.
fn uniform_params(state: &PipelineState, groups: &[Vec<usize>], over: &str) -> Vec<String> {
    state
        .key_params()
        .into_iter()
        .filter(|p| p != over)
        .filter(|p| {
            groups.iter().all(|members| {
                let values: std::collections::BTreeSet<String> = members
                    .iter()
                    .map(|&i| state.param(i, p).map(Value::to_string).unwrap_or_default())
                    .collect();
                values.len() <= 1
            })
        })
        .collect()
}

/// One metric over a group: mean ± std of the results that have it, marked partial or
/// missing when some or all lack it.
fn aggregate_cell(state: &PipelineState, members: &[usize], m: &str) -> Cell {
    let values: Vec<f64> = members
        .iter()
        .filter_map(|&i| state.instances[i].metrics.as_ref()?.get(m).copied())
        .collect();
    let agg = Agg {
        metric: m.to_string(),
        values,
        expected: members.len(),
        format: NumberFormat::default_for(m, NumberFormat::Fixed(4)),
        ci: None,
        paired: false,
        bootstrap: None,
    };
    let class = if agg.is_missing() {
        "missing"
    } else if agg.is_partial() {
        "num partial"
    } else {
        "num"
    };
    Cell {
        html: esc(&agg.text(crate::report::cell::CellStyle::PLAIN)),
        sort: agg.mean().map(|v| v.to_string()),
        class: class.into(),
        ..Cell::default()
    }
}

/// The live state the script polls: counts, each stage's status and counts, and the status,
/// progress and metrics of each instance in `ids` (every instance when `None`; a page asks
/// for the rows it shows).
pub(crate) fn status_json(state: &PipelineState, ids: Option<&[usize]>) -> Value {
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
        .filter(|s| ids.is_none_or(|ids| ids.contains(&s.index)))
        .map(|s| {
            json!({
                "id": s.index,
                "label": state.label(s.index),
                "status": s.status.name(),
                "key": s.key,
                "progress": s.progress,
                "metrics": s.metrics,
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
