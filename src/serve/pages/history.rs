//! A pipeline's history: the results it produced that its file no longer asks for (a sweep
//! value removed, a parameter changed, a stage renamed or dropped, a kind's `IMPL_VERSION`
//! bumped), newest first, each with what differs from the file as it is now and its metrics.
//! They stay in the cache until `cache gc` removes them, and change back into cache hits when
//! the file asks for them again.
//!
//! The index records each result with the name of the pipeline that ran it and, per stage
//! instance, the key it last ran with; every successful key of either that no instance of the
//! current plan has is history.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write;

use serde_json::Value;

use super::grid::{grid, Cell, Column};
use super::time::time;
use crate::cache::{RunRecord, StageKey};
use crate::kind::LOG_OUTPUT;
use crate::serve::error::ServeError;
use crate::serve::html::{esc, label, page, seg, value_text};
use crate::serve::site::Site;
use crate::serve::state::PipelineState;

/// One result of the pipeline that the file no longer has.
pub(crate) struct Past {
    /// Its record.
    pub record: RunRecord,
    /// Its sweep binding.
    pub binding: BTreeMap<String, Value>,
    /// What differs from the file now, in words.
    pub why: String,
}

/// The results of `state`'s pipeline that are not results of its current instances.
pub(crate) fn past_results(site: &Site, state: &PipelineState) -> Result<Vec<Past>, ServeError> {
    let Some(index) = site.index()? else {
        return Ok(Vec::new());
    };
    let current: HashSet<&str> = state
        .instances
        .iter()
        .filter_map(|s| s.key.as_deref())
        .collect();
    let mut out = Vec::new();
    for key in index.keys_of_pipeline(&state.plan.spec().name)? {
        if current.contains(key.as_str()) {
            continue;
        }
        let Some(record) = index.lookup(&key)? else {
            continue;
        };
        let binding: BTreeMap<String, Value> =
            serde_json::from_str(&record.binding).unwrap_or_default();
        let why = difference(site, state, &record, &binding);
        out.push(Past {
            record,
            binding,
            why,
        });
    }
    Ok(out)
}

fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// What differs between a past result and the file now, in words.
fn difference(
    site: &Site,
    state: &PipelineState,
    record: &RunRecord,
    binding: &BTreeMap<String, Value>,
) -> String {
    let insts: Vec<_> = state
        .plan
        .instances()
        .iter()
        .filter(|i| i.stage == record.stage)
        .collect();
    if insts.is_empty() {
        return format!("stage `{}` is no longer in the file", record.stage);
    }
    let Some(now) = insts.iter().find(|i| i.binding == *binding) else {
        return format!(
            "the file no longer sweeps {}",
            label(&record.stage, binding)
        );
    };
    let key: Option<StageKey> = serde_json::from_str(&record.key_json).ok();
    let Some(key) = key else {
        return "its key cannot be read".into();
    };
    let mut diffs: Vec<String> = Vec::new();
    let names: BTreeSet<&String> = key.params.keys().chain(now.params.0.keys()).collect();
    for name in names {
        let (was, is) = (key.params.get(name), now.params.0.get(name));
        if let (Some(was), Some(is)) = (was, is) {
            if !same(was, is) {
                diffs.push(format!(
                    "{name} {} (now {})",
                    value_text(was),
                    value_text(is)
                ));
            }
        }
    }
    if !diffs.is_empty() {
        return diffs.join(", ");
    }
    if let Some(kind) = site.registry().get(&key.kind) {
        if kind.impl_version() != key.impl_version {
            return format!(
                "{} IMPL_VERSION {} (now {})",
                key.kind,
                key.impl_version,
                kind.impl_version()
            );
        }
    }
    "its inputs or data differ".into()
}

/// The page.
pub fn render(site: &Site, state: &PipelineState) -> Result<String, ServeError> {
    let base = format!("/p/{}", seg(&state.name));
    let here = format!("{base}/history");
    let past = past_results(site, state)?;
    let mut body = String::from(
        "<p class=\"muted\">Results this pipeline produced that its file no longer asks for, newest \
         first. They stay in the cache (until <code>asymflow cache gc</code>) and are hits again if \
         the file asks for them again.</p>",
    );
    if past.is_empty() {
        body.push_str("<p id=\"no-history\">Every result of this pipeline in the cache is one its file asks for now.</p>");
        return Ok(page(
            &format!("{}: history", state.plan.spec().name),
            &[(base.clone(), state.name.clone()), (here, "history".into())],
            &body,
            None,
        ));
    }
    let metrics: BTreeSet<&String> = past.iter().flat_map(|p| p.record.metrics.keys()).collect();
    let columns = history_columns(&metrics);
    let rows: Vec<(String, Vec<Cell>)> = past.iter().map(|p| past_row(p, &metrics)).collect();
    let _ = write!(body, "<section><h2>{} past results</h2>", rows.len());
    body.push_str(&grid("history", &columns, &rows));
    body.push_str("</section>\n");
    Ok(page(
        &format!("{}: history", state.plan.spec().name),
        &[(base.clone(), state.name.clone()), (here, "history".into())],
        &body,
        None,
    ))
}

/// The table's columns: when each result finished, its stage, sweep and how it differs from
/// the file, one per metric any of them recorded, and its key.
fn history_columns(metrics: &BTreeSet<&String>) -> Vec<Column> {
    let mut columns = vec![
        Column {
            label: "finished".into(),
            class: "time",
        },
        Column {
            label: "stage".into(),
            class: "stage",
        },
        Column {
            label: "sweep".into(),
            class: "axis",
        },
        Column {
            label: "differs from the file".into(),
            class: "why",
        },
    ];
    columns.extend(metrics.iter().map(|m| Column {
        label: (*m).clone(),
        class: "metric",
    }));
    columns.push(Column {
        label: "key".into(),
        class: "key",
    });
    columns
}

/// The row of one past result: its cells under [`history_columns`], the key with a link to its log.
fn past_row(p: &Past, metrics: &BTreeSet<&String>) -> (String, Vec<Cell>) {
    let r = &p.record;
    let sweep: Vec<String> = p
        .binding
        .iter()
        .map(|(k, v)| format!("{k}={}", value_text(v)))
        .collect();
    let mut cells = vec![
        Cell {
            sort: Some(r.finished.to_string()),
            ..Cell::text(&time(r.finished))
        },
        Cell::text(&r.stage),
        Cell::text(&sweep.join(", ")),
        Cell::text(&p.why),
    ];
    for m in metrics {
        cells.push(match r.metrics.get(*m) {
            Some(v) => Cell::number(*v),
            None => Cell::default(),
        });
    }
    let log = r
        .outputs
        .get(LOG_OUTPUT)
        .map(|o| {
            format!(
                " <a href=\"/objects/{}?name=log.txt\">log</a>",
                esc(&o.digest)
            )
        })
        .unwrap_or_default();
    cells.push(Cell {
        html: format!(
            "<code title=\"{}\">{}</code>{log}",
            esc(&r.key),
            esc(r.key.get(..16).unwrap_or(&r.key))
        ),
        sort: Some(r.key.clone()),
        plain: r.key.clone(),
        ..Cell::default()
    });
    (format!(" data-key=\"{}\"", esc(&r.key)), cells)
}
