//! The stage graph as an SVG drawing: one box per stage, placed in columns by the length of
//! the longest path from a source, edges from each input to its consumer, each box coloured
//! by the status of its instances (failed, then running, then to run, else cached) and
//! labelled with how many of them are cached.
//!
//! Stages rather than instances are drawn: a sweep of a thousand instances is a table, not a
//! picture. Boxes carry `data-stage` (the stage's position in the pipeline), so the script can
//! recolour them as statuses change and filter the table when one is clicked.

use std::fmt::Write;

use super::html::esc;
use super::state::{Counts, PipelineState};

const W: f64 = 170.0;
const H: f64 = 46.0;
const GAP_X: f64 = 60.0;
const GAP_Y: f64 = 18.0;
const PAD: f64 = 10.0;

/// The column of each stage: 0 for sources, else one more than its deepest input.
pub fn layers(state: &PipelineState) -> Vec<usize> {
    let stages = &state.plan.spec().stages;
    let position = |name: &str| stages.iter().position(|s| s.name == name);
    let mut layer = vec![0usize; stages.len()];
    // The spec is acyclic (checked when the plan was built); relax until nothing changes.
    for _ in 0..stages.len() {
        let mut changed = false;
        for (i, s) in stages.iter().enumerate() {
            for input in &s.inputs {
                for up in input.stages.iter().filter_map(|n| position(n)) {
                    if layer[i] < layer[up] + 1 {
                        layer[i] = layer[up] + 1;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    layer
}

fn short(name: &str) -> String {
    if name.chars().count() <= 22 {
        name.to_string()
    } else {
        let head: String = name.chars().take(21).collect();
        format!("{head}\u{2026}")
    }
}

/// The drawing, as an inline `<svg>` element.
pub fn svg(state: &PipelineState) -> String {
    let stages = &state.plan.spec().stages;
    let layer = layers(state);
    let mut row = vec![0usize; stages.len()];
    let mut filled: Vec<usize> = Vec::new();
    for (i, &l) in layer.iter().enumerate() {
        if filled.len() <= l {
            filled.resize(l + 1, 0);
        }
        row[i] = filled[l];
        filled[l] += 1;
    }
    let cols = filled.len().max(1);
    let rows = filled.iter().copied().max().unwrap_or(1).max(1);
    let width = PAD * 2.0 + cols as f64 * W + (cols - 1) as f64 * GAP_X;
    let height = PAD * 2.0 + rows as f64 * H + (rows - 1) as f64 * GAP_Y;
    let pos = |i: usize| {
        (
            PAD + layer[i] as f64 * (W + GAP_X),
            PAD + row[i] as f64 * (H + GAP_Y),
        )
    };
    let mut out = format!(
        "<svg class=\"dag\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" \
         role=\"img\" aria-label=\"stage graph\">\n<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" \
         refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\">\
         <path d=\"M0,0L10,5L0,10z\" class=\"arrowhead\"/></marker></defs>\n"
    );
    for (i, s) in stages.iter().enumerate() {
        for input in &s.inputs {
            for name in &input.stages {
                let Some(up) = stages.iter().position(|t| &t.name == name) else {
                    continue;
                };
                let (x0, y0) = pos(up);
                let (x1, y1) = pos(i);
                let (x0, y0, x1, y1) = (x0 + W, y0 + H / 2.0, x1, y1 + H / 2.0);
                let mid = (x0 + x1) / 2.0;
                let _ = writeln!(
                    out,
                    "<path class=\"edge\" d=\"M{x0},{y0} C{mid},{y0} {mid},{y1} {x1},{y1}\" marker-end=\"url(#arrow)\"><title>{} \u{2192} {} ({})</title></path>",
                    esc(name),
                    esc(&s.name),
                    esc(&input.slot)
                );
            }
        }
    }
    for (i, s) in stages.iter().enumerate() {
        let (x, y) = pos(i);
        let (class, title, count) = node_status(state, &s.name);
        let _ = writeln!(
            out,
            "<g class=\"node{class}\" data-stage=\"{i}\" data-name=\"{}\" tabindex=\"0\"><title>{} ({}): {title}</title>\
             <rect x=\"{x}\" y=\"{y}\" width=\"{W}\" height=\"{H}\" rx=\"6\"/>\
             <text x=\"{}\" y=\"{}\" class=\"name\">{}</text>\
             <text x=\"{}\" y=\"{}\" class=\"count\">{count}</text></g>",
            esc(&s.name),
            esc(&s.name),
            esc(&s.kind),
            x + 10.0,
            y + 19.0,
            esc(&short(&s.name)),
            x + 10.0,
            y + 36.0,
        );
    }
    out.push_str("</svg>");
    out
}

/// Stage `stage`'s status class (` st-…`), its counts in words and the count it shows: its
/// instances' statuses counted, or "…" where the state is not whole (the page's script fills
/// them in).
fn node_status(state: &PipelineState, stage: &str) -> (String, String, String) {
    let of_stage = state
        .plan
        .instances()
        .iter()
        .filter(|inst| inst.stage == stage);
    if !state.is_whole() {
        let total = of_stage.count();
        return (
            String::new(),
            "counting…".into(),
            format!("…/{total} cached"),
        );
    }
    let counts = Counts::of(of_stage.map(|inst| &state.instances[inst.index]));
    let total = counts.cached + counts.to_run + counts.running + counts.failed;
    (
        format!(" st-{}", counts.overall().name()),
        format!(
            "{} cached, {} to run, {} running, {} failed",
            counts.cached, counts.to_run, counts.running, counts.failed
        ),
        format!("{}/{total} cached", counts.cached),
    )
}
