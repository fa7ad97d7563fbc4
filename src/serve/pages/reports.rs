//! Every report stage of a pipeline: its table and plots, built now from whatever the cache
//! holds (the same [`crate::report`] code the `report` stage runs, so partial cells and the
//! instances not run yet show as they do in `asymflow report`), and its heat map (the
//! compatibility matrix M(phi_i, phi_j)) drawn as a grid whose cells tell their values on
//! hover. The plots the report stage rendered are shown from its cached outputs.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::status::badge;
use crate::kind::InputArtifact;
use crate::report::cell::CellStyle;
use crate::report::heatmap::HeatMap;
use crate::report::{missing_instances, Layout, Table};
use crate::serve::html::{esc, page, seg};
use crate::serve::state::PipelineState;

fn artifacts(state: &PipelineState, ups: &[usize]) -> Vec<InputArtifact> {
    ups.iter()
        .map(|&u| {
            let inst = &state.plan.instances()[u];
            let s = &state.instances[u];
            InputArtifact {
                stage: inst.stage.clone(),
                kind: inst.kind.clone(),
                binding: inst.binding.to_map(),
                params: (*inst.params).clone(),
                key: s.key.clone().unwrap_or_default(),
                outputs: BTreeMap::new(),
                metrics: s.metrics.clone().unwrap_or_default(),
                draws: Vec::new(),
            }
        })
        .collect()
}

fn table_html(table: &Table) -> String {
    let mut out = String::from("<div class=\"scroll\"><table class=\"grid report\"><thead><tr>");
    for h in &table.rows.headers {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    for c in 0..table.cols.len() {
        let _ = write!(out, "<th>{}</th>", esc(&table.cols.labels[c].join(" / ")));
    }
    if table.cols.is_empty() {
        out.push_str("<th>value</th>");
    }
    out.push_str("</tr></thead><tbody>\n");
    for (r, cells) in table.cells.iter().enumerate() {
        out.push_str("<tr>");
        for l in &table.rows.labels[r] {
            let _ = write!(out, "<th>{}</th>", esc(l));
        }
        for cell in cells {
            let class = if cell.is_missing() {
                "missing"
            } else if cell.is_partial() {
                "num partial"
            } else {
                "num"
            };
            let _ = write!(
                out,
                "<td class=\"{class}\">{}</td>",
                esc(&cell.text(CellStyle::PLAIN))
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    out
}

/// The heat map as an HTML grid: each cell coloured on a light-to-blue scale between the
/// smallest and largest value, its number shown, and row, column and value in its tooltip.
pub(crate) fn heatmap_html(map: &HeatMap) -> String {
    let values: Vec<f64> = map.values.iter().flatten().flatten().copied().collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut out = format!(
        "<figure class=\"heatmap\"><figcaption>{}</figcaption><div class=\"scroll\"><table class=\"heat\">\
         <thead><tr><th class=\"corner\">{} \u{2193} / {} \u{2192}</th>",
        esc(&map.title),
        esc(&map.axis_titles.0),
        esc(&map.axis_titles.1)
    );
    for c in &map.cols {
        let _ = write!(out, "<th>{}</th>", esc(c));
    }
    out.push_str("</tr></thead><tbody>\n");
    for (r, row) in map.rows.iter().enumerate() {
        let _ = write!(out, "<tr><th>{}</th>", esc(row));
        for (c, col) in map.cols.iter().enumerate() {
            let text = &map.texts[r][c];
            let tip = format!("{row} \u{00d7} {col}: {text}");
            match map.values[r][c] {
                Some(v) => {
                    let t = if hi > lo { (v - lo) / (hi - lo) } else { 1.0 };
                    // From a pale to a deep blue; text turns white on the dark end.
                    let (r0, g0, b0) = (0xe8 as f64, 0xf0 as f64, 0xfb as f64);
                    let (r1, g1, b1) = (0x1f as f64, 0x4e as f64, 0x9c as f64);
                    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
                    let _ = write!(
                        out,
                        "<td class=\"hv{}\" style=\"background:#{:02x}{:02x}{:02x}\" title=\"{}\" data-value=\"{v}\">{}</td>",
                        if t > 0.55 { " dark" } else { "" },
                        mix(r0, r1),
                        mix(g0, g1),
                        mix(b0, b1),
                        esc(&tip),
                        esc(text)
                    );
                }
                None => {
                    let _ = write!(
                        out,
                        "<td class=\"hv missing\" title=\"{}\">-</td>",
                        esc(&tip)
                    );
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div></figure>\n");
    out
}

/// The page.
pub fn render(state: &PipelineState) -> String {
    let base = format!("/p/{}", seg(&state.name));
    let mut body = String::new();
    let reports: Vec<_> = state
        .plan
        .instances()
        .iter()
        .filter(|i| i.kind == crate::stages::report::KIND)
        .collect();
    if reports.is_empty() {
        body.push_str("<p>This pipeline has no report stage. Add one with <code>kind = \"report\"</code> (see <code>asymflow kinds report</code>).</p>");
    }
    for inst in reports {
        let s = &state.instances[inst.index];
        let here = format!("{base}/i/{}", inst.index);
        let _ = write!(
            body,
            "<section class=\"report\"><h2><a href=\"{here}\">{}</a> {}</h2>",
            esc(&state.label(inst.index)),
            badge(s.status)
        );
        let ups: Vec<usize> = inst.inputs.get("results").cloned().unwrap_or_default();
        let results = artifacts(state, &ups);
        match Layout::from_params(&inst.params).and_then(|layout| {
            let table = Table::build(&layout, &results)?;
            Ok((layout, table))
        }) {
            Ok((layout, table)) => {
                if !table.title.is_empty() {
                    let _ = write!(body, "<h3>{}</h3>", esc(&table.title));
                }
                body.push_str(&table_html(&table));
                let _ = write!(
                    body,
                    "<p class=\"note\">{}</p>",
                    esc(&table.note(" ± ", "-"))
                );
                if layout.heatmap {
                    if let Some(map) = HeatMap::from_table(&table, "heatmap", layout.plot_size) {
                        body.push_str(&heatmap_html(&map));
                    }
                }
            }
            Err(e) => {
                let _ = write!(body, "<p class=\"error\">{}</p>", esc(&e.to_string()));
            }
        }
        let missing = missing_instances(&results);
        if !missing.is_empty() {
            let _ = write!(
                body,
                "<details><summary>{} instances not computed yet</summary><ul>",
                missing.len()
            );
            for m in &missing {
                let binding: Vec<String> =
                    m.binding.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let _ = write!(
                    body,
                    "<li>{}[{}]</li>",
                    esc(&m.stage),
                    esc(&binding.join(","))
                );
            }
            body.push_str("</ul></details>");
        }
        if let Some(record) = state.record(s.index) {
            for name in record.outputs.keys().filter(|n| n.ends_with(".svg")) {
                let _ = write!(
                    body,
                    "<figure class=\"plot\"><img src=\"{here}/out/{}\" alt=\"{}\" loading=\"lazy\"><figcaption>{}</figcaption></figure>",
                    seg(name),
                    esc(name),
                    esc(name)
                );
            }
        }
        body.push_str("</section>\n");
    }
    page(
        &format!("Reports of {}", state.plan.spec().name),
        &[
            (base.clone(), state.name.clone()),
            (format!("{base}/reports"), "reports".into()),
        ],
        &body,
        None,
    )
}
