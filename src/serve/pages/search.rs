//! A search (`[search.NAME]`) as the cache holds it: its trials sorted by objective (best
//! first, unfinished last) with their values, the objective over trial number with the best so
//! far, and a parallel-coordinates plot of every finished trial over the search's dimensions,
//! drawn by the same code as the sweep page ([`crate::serve::charts`]). Each trial links to
//! the pipeline page filtered to its instances.

use std::fmt::Write;

use serde_json::Value;

use crate::search::SearchState;
use crate::serve::charts::{self, Point};
use crate::serve::error::ServeError;
use crate::serve::html::{esc, num, page, seg, value_text};
use crate::serve::query::TableQuery;
use crate::serve::state::PipelineState;

/// The search called `name` of the pipeline, or a 404 naming those that exist.
fn find<'a>(state: &'a PipelineState, name: &str) -> Result<&'a SearchState, ServeError> {
    let searches = state.plan.searches();
    searches.iter().find(|s| s.name == name).ok_or_else(|| {
        let known: Vec<&str> = searches.iter().map(|s| s.name.as_str()).collect();
        ServeError::NotFound(format!(
            "pipeline `{}` has no search `{name}`; its searches: {}",
            state.name,
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        ))
    })
}

/// The pipeline page filtered to one trial's instances.
fn trial_href(base: &str, search: &str, trial: usize) -> String {
    let q = TableQuery {
        filters: vec![(format!("{search}.trial"), format!("={trial}"))],
        ..TableQuery::parse(&[])
    };
    format!("{base}{}", q.to_url())
}

/// The trial with the best objective: the one the search recorded, else the best finished.
fn best_trial(search: &SearchState, higher: bool) -> Option<usize> {
    search.best.or_else(|| {
        search
            .trials
            .iter()
            .filter_map(|t| Some((t.number, t.objective?)))
            .reduce(|a, b| {
                let better = if higher { b.1 > a.1 } else { b.1 < a.1 };
                if better {
                    b
                } else {
                    a
                }
            })
            .map(|(n, _)| n)
    })
}

/// The page's opening paragraphs: the objective and sampler, how many trials finished, the
/// best trial and what the winner waits for.
fn summary(search: &SearchState, best: Option<usize>) -> String {
    let finished = search
        .trials
        .iter()
        .filter(|t| t.objective.is_some())
        .count();
    let mut body = format!(
        "<p>Objective <code>{}</code> ({}), the mean over {}; sampler <code>{}</code>; \
         <b id=\"finished\">{finished}</b> of {} trials finished{}.</p>",
        esc(&search.objective),
        esc(search.goal),
        esc(&search.mean_over_text()),
        esc(search.sampler),
        search.trials_wanted,
        if search.finished {
            String::new()
        } else {
            " (the search goes on with the next <code>asymflow run</code>)".to_string()
        }
    );
    if let Some(trial) = best.and_then(|n| search.trials.get(n)) {
        let _ = write!(
            body,
            "<p id=\"best\">{}: {}</p>",
            if search.finished {
                "The winner"
            } else {
                "Best so far"
            },
            esc(&search.describe_trial(trial))
        );
    }
    if !search.waiting.is_empty() {
        let _ = write!(
            body,
            "<p class=\"muted\">Waiting for the winner: {}.</p>",
            esc(&search.waiting.join(", "))
        );
    }
    body
}

/// The trials section: one row per trial, ranked by objective, with its values, objective,
/// rung (when the search prunes) and a link to its instances.
fn trials_table(
    body: &mut String,
    search: &SearchState,
    dims: &[String],
    best: Option<usize>,
    base: &str,
    name: &str,
) {
    body.push_str("<section><h2>Trials</h2><div class=\"scroll\"><table class=\"grid\" id=\"trials\"><thead><tr><th>rank</th><th>trial</th>");
    for d in dims {
        let _ = write!(body, "<th class=\"param\">{}</th>", esc(d));
    }
    let _ = write!(
        body,
        "<th class=\"metric\">{}</th>{}<th>instances</th></tr></thead><tbody>",
        esc(&search.objective),
        if search.prune.is_some() {
            "<th>rung</th>"
        } else {
            ""
        }
    );
    for (rank, trial) in crate::report::search::sorted(search).iter().enumerate() {
        let is_best = best == Some(trial.number);
        let _ = write!(
            body,
            "<tr data-trial=\"{}\"{}><td class=\"num\">{}</td><td><a href=\"{}\">trial {}</a>{}</td>",
            trial.number,
            if is_best { " class=\"best\"" } else { "" },
            if trial.objective.is_some() {
                (rank + 1).to_string()
            } else {
                String::new()
            },
            esc(&trial_href(base, name, trial.number)),
            trial.number,
            if is_best { " <span class=\"badge st-cached\">best</span>" } else { "" }
        );
        for d in dims {
            let v = trial.values.get(d).map(value_text).unwrap_or_default();
            let _ = write!(body, "<td class=\"num\">{}</td>", esc(&v));
        }
        let rung = if search.prune.is_some() {
            format!(
                "<td class=\"num\">{}</td>",
                esc(&crate::report::search::rung_text(search, trial))
            )
        } else {
            String::new()
        };
        let _ = write!(
            body,
            "<td class=\"num\">{}</td>{rung}<td class=\"num\">{}</td></tr>",
            trial
                .objective
                .map(num)
                .unwrap_or_else(|| "<span class=\"muted\">not yet</span>".into()),
            trial.instances
        );
    }
    body.push_str("</tbody></table></div></section>\n");
}

/// The charts section, when a trial has finished: the objective by trial and the parallel
/// coordinates of every finished trial.
fn charts_section(
    body: &mut String,
    search: &SearchState,
    dims: &[String],
    higher: bool,
    base: &str,
    name: &str,
) {
    let done: Vec<(usize, f64)> = search
        .trials
        .iter()
        .filter_map(|t| Some((t.number, t.objective?)))
        .collect();
    if !done.is_empty() {
        let _ = writeln!(
            body,
            "<section><h2>Objective by trial</h2><p class=\"muted\">Each trial's objective; the line is the best so far.</p>\
             <div class=\"plot-box\" id=\"objective\">{}</div></section>",
            charts::objective(&done, &search.objective, higher)
        );
        let points: Vec<Point> = search
            .trials
            .iter()
            .filter(|t| t.objective.is_some())
            .map(|t| Point {
                values: dims
                    .iter()
                    .map(|d| t.values.get(d).cloned().unwrap_or(Value::Null))
                    .collect(),
                y: t.objective,
                label: format!("trial {}", t.number),
                href: Some(trial_href(base, name, t.number)),
            })
            .collect();
        let _ = writeln!(
            body,
            "<section><h2>Parallel coordinates</h2><p class=\"muted\">One line per finished trial \
             across the search's dimensions and its objective, darker the better.</p>\
             <div class=\"plot-box\" id=\"parallel\">{}</div></section>",
            charts::parallel(&points, dims, &search.objective, higher)
        );
    }
}

/// The page.
pub fn render(state: &PipelineState, name: &str) -> Result<String, ServeError> {
    let search = find(state, name)?;
    let base = format!("/p/{}", seg(&state.name));
    let here = format!("{base}/search/{}", seg(name));
    let higher = search.goal == "max";
    let dims: Vec<String> = search
        .trials
        .first()
        .map(|t| t.values.keys().cloned().collect())
        .unwrap_or_default();
    let best = best_trial(search, higher);
    let mut body = summary(search, best);
    trials_table(&mut body, search, &dims, best, &base, name);
    charts_section(&mut body, search, &dims, higher, &base, name);
    Ok(page(
        &format!("{}: search {name}", state.plan.spec().name),
        &[
            (base.clone(), state.name.clone()),
            (here, format!("search {name}")),
        ],
        &body,
        None,
    ))
}
