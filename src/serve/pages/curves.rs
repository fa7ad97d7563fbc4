//! The loss curves of several instances in one chart: one line per instance, labelled by its
//! sweep values (`?ids=3,7&term=loss`). Chosen on the pipeline page by ticking rows; `term`
//! picks which of their loss terms to draw (the total, `loss`, unless asked).

use std::collections::BTreeSet;
use std::fmt::Write;

use serde_json::{json, Value};

use crate::serve::error::ServeError;
use crate::serve::html::{esc, json_block, page, seg};
use crate::serve::site::Site;
use crate::serve::state::PipelineState;

/// The instance ids in `ids` (`3,7,12`): at least one, each an instance of the pipeline.
pub(crate) fn parse_ids(state: &PipelineState, ids: &str) -> Result<Vec<usize>, ServeError> {
    let mut out = Vec::new();
    for part in ids.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let s = state.instance(part)?;
        if !out.contains(&s.index) {
            out.push(s.index);
        }
    }
    if out.is_empty() {
        return Err(ServeError::NotFound(
            "overlaying loss curves needs one or more instances, as `?ids=0,1`".into(),
        ));
    }
    Ok(out)
}

/// The page.
pub fn render(
    site: &Site,
    state: &PipelineState,
    ids: &[usize],
    term: Option<&str>,
) -> Result<String, ServeError> {
    let base = format!("/p/{}", seg(&state.name));
    let mut terms: BTreeSet<String> = BTreeSet::new();
    let mut per_instance: Vec<(usize, Value)> = Vec::new();
    let mut without: Vec<String> = Vec::new();
    for &i in ids {
        let curves = state
            .record(i)
            .and_then(|r| super::instance::loss_curves(site, r));
        match curves {
            Some(Value::Array(curves)) => {
                for c in &curves {
                    if let Some(name) = c["name"].as_str() {
                        terms.insert(name.to_string());
                    }
                }
                per_instance.push((i, Value::Array(curves)));
            }
            _ => without.push(state.label(i)),
        }
    }
    let term = term
        .map(str::to_string)
        .or_else(|| terms.contains("loss").then(|| "loss".to_string()))
        .or_else(|| terms.iter().next().cloned());
    let mut body = String::new();
    let id_list: Vec<String> = ids.iter().map(ToString::to_string).collect();
    if terms.len() > 1 {
        let links: Vec<String> = terms
            .iter()
            .map(|t| {
                if Some(t) == term.as_ref() {
                    format!("<b>{}</b>", esc(t))
                } else {
                    format!(
                        "<a href=\"{base}/curves?ids={}&amp;term={}\">{}</a>",
                        id_list.join(","),
                        seg(t),
                        esc(t)
                    )
                }
            })
            .collect();
        let _ = write!(body, "<p class=\"views\">Term: {}</p>", links.join(" · "));
    }
    if !without.is_empty() {
        let _ = write!(
            body,
            "<p class=\"muted\" id=\"no-curve\">No loss curve (not cached, or its stage writes none): {}</p>",
            esc(&without.join(", "))
        );
    }
    let series: Vec<Value> = per_instance
        .iter()
        .filter_map(|(i, curves)| {
            let curve = curves
                .as_array()?
                .iter()
                .find(|c| c["name"].as_str() == term.as_deref())?;
            Some(json!({ "name": state.label(*i), "points": curve["points"], "href": format!("{base}/i/{i}") }))
        })
        .collect();
    if series.is_empty() {
        body.push_str("<p>None of these instances has a loss curve to draw.</p>");
    } else {
        body.push_str(&json_block("curves-data", &Value::Array(series)));
        let _ = write!(
            body,
            "<div class=\"chart wide\" id=\"curves\" data-src=\"curves-data\" data-x=\"epoch\" data-y=\"{}\"></div>",
            esc(term.as_deref().unwrap_or("loss"))
        );
    }
    let links: Vec<String> = ids
        .iter()
        .map(|&i| format!("<a href=\"{base}/i/{i}\">{}</a>", esc(&state.label(i))))
        .collect();
    let _ = write!(
        body,
        "<p class=\"muted\">Instances: {}</p>",
        links.join(", ")
    );
    Ok(page(
        &format!("Loss curves of {} instances", ids.len()),
        &[(base.clone(), state.name.clone())],
        &body,
        None,
    ))
}
