//! Charts drawn on the server as SVG: a metric against a parameter (each result a dot, the
//! mean ± std at each value over the other axes), a parallel-coordinates plot (one vertical
//! axis per parameter and one for the metric, one line per result, darker the better), and a
//! search's objective over its trials with the best so far.
//!
//! Why SVG from the server and not a charting library: the dashboard loads nothing from
//! anywhere else, the pages are tested over plain HTTP, and a chart is readable without the
//! script. Each dot and line carries a `<title>` (the browser shows it on hover) and, where
//! the result has a page, a link to it; the stylesheet highlights the line under the pointer.

use std::fmt::Write;

use serde_json::Value;

use super::html::{esc, num, value_text};

const W: f64 = 760.0;
const H: f64 = 340.0;
const L: f64 = 64.0;
const R: f64 = 20.0;
const T: f64 = 16.0;
const B: f64 = 44.0;

/// How values of one parameter map onto an axis.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scale {
    /// Numbers, evenly.
    Linear(f64, f64),
    /// Positive numbers spanning more than a decade, by their logarithm.
    Log(f64, f64),
    /// Anything else: each distinct value (as text) at its own place, in first-seen order
    /// (sorted when they are all numbers).
    Categories(Vec<String>),
}

impl Scale {
    /// The scale of `values` (nulls ignored).
    pub fn of<'a>(values: impl IntoIterator<Item = &'a Value>) -> Scale {
        let values: Vec<&Value> = values.into_iter().filter(|v| !v.is_null()).collect();
        let numbers: Option<Vec<f64>> = values.iter().map(|v| v.as_f64()).collect();
        match numbers {
            Some(ns) if !ns.is_empty() => {
                let lo = ns.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = ns.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                if lo > 0.0 && hi / lo > 10.0 {
                    Scale::Log(lo, hi)
                } else {
                    Scale::Linear(lo, hi)
                }
            }
            _ => {
                let mut seen: Vec<String> = Vec::new();
                for v in values {
                    let t = value_text(v);
                    if !seen.contains(&t) {
                        seen.push(t);
                    }
                }
                Scale::Categories(seen)
            }
        }
    }

    /// Where `v` falls, from 0 to 1.
    pub fn at(&self, v: &Value) -> Option<f64> {
        let frac = |x: f64, lo: f64, hi: f64| {
            if hi > lo {
                (x - lo) / (hi - lo)
            } else {
                0.5
            }
        };
        match self {
            Scale::Linear(lo, hi) => v.as_f64().map(|x| frac(x, *lo, *hi)),
            Scale::Log(lo, hi) => v
                .as_f64()
                .filter(|x| *x > 0.0)
                .map(|x| frac(x.ln(), lo.ln(), hi.ln())),
            Scale::Categories(cats) => {
                let t = value_text(v);
                let i = cats.iter().position(|c| *c == t)?;
                Some(if cats.len() > 1 {
                    i as f64 / (cats.len() - 1) as f64
                } else {
                    0.5
                })
            }
        }
    }

    /// Tick labels with their places (0 to 1).
    pub(crate) fn ticks(&self) -> Vec<(f64, String)> {
        match self {
            Scale::Linear(lo, hi) => {
                if hi <= lo {
                    return vec![(0.5, num(*lo))];
                }
                (0..=4)
                    .map(|k| {
                        let f = k as f64 / 4.0;
                        (f, num(lo + f * (hi - lo)))
                    })
                    .collect()
            }
            Scale::Log(lo, hi) => {
                let (a, b) = (lo.log10().ceil() as i32, hi.log10().floor() as i32);
                let mut out: Vec<(f64, String)> = (a..=b)
                    .map(|e| {
                        let x = 10f64.powi(e);
                        ((x.ln() - lo.ln()) / (hi.ln() - lo.ln()), format!("1e{e}"))
                    })
                    .collect();
                if out.is_empty() {
                    out = vec![(0.0, num(*lo)), (1.0, num(*hi))];
                }
                out
            }
            Scale::Categories(cats) => cats
                .iter()
                .map(|c| (self.at(&Value::String(c.clone())).unwrap_or(0.5), c.clone()))
                .collect(),
        }
    }
}

/// One result on a chart.
pub(crate) struct Point {
    /// Its value on the horizontal axis (scatter) or per axis (parallel coordinates).
    pub values: Vec<Value>,
    /// The metric.
    pub y: Option<f64>,
    /// What the pointer shows (`train[seed=1]`).
    pub label: String,
    /// Its page, if any.
    pub href: Option<String>,
}

fn open(class: &str, aria: &str) -> String {
    format!(
        "<svg class=\"plot {class}\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">",
        esc(aria)
    )
}

fn wrap(href: Option<&str>, inner: &str) -> String {
    match href {
        Some(h) => format!("<a href=\"{}\">{inner}</a>", esc(h)),
        None => inner.to_string(),
    }
}

fn y_range(ys: impl Iterator<Item = f64>) -> (f64, f64) {
    let ys: Vec<f64> = ys.filter(|y| y.is_finite()).collect();
    let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = if hi > lo { (hi - lo) * 0.08 } else { 0.5 };
    (lo - pad, hi + pad)
}

/// The frame: axes, ticks on both, and their names.
fn frame(out: &mut String, x: &Scale, x_name: &str, (y0, y1): (f64, f64), y_name: &str) {
    let sx = |f: f64| L + f * (W - L - R);
    let sy = |y: f64| T + (1.0 - (y - y0) / (y1 - y0)) * (H - T - B);
    out.push_str("<g class=\"axis\">");
    for k in 0..=5 {
        let y = y0 + (y1 - y0) * k as f64 / 5.0;
        let _ = write!(
            out,
            "<line class=\"grid-line\" x1=\"{L}\" x2=\"{}\" y1=\"{:.1}\" y2=\"{:.1}\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            W - R,
            sy(y),
            sy(y),
            L - 6.0,
            sy(y) + 4.0,
            esc(&num(y))
        );
    }
    for (f, label) in x.ticks() {
        let _ = write!(
            out,
            "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{}\" y2=\"{}\"/><text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            sx(f),
            sx(f),
            H - B,
            H - B + 4.0,
            sx(f),
            H - B + 16.0,
            esc(&label)
        );
    }
    let _ = write!(
        out,
        "<path d=\"M{L},{T}V{}H{}\" fill=\"none\"/><text class=\"name\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\
         <text class=\"name\" x=\"14\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {})\">{}</text></g>",
        H - B,
        W - R,
        (L + W - R) / 2.0,
        H - 6.0,
        esc(x_name),
        (T + H - B) / 2.0,
        (T + H - B) / 2.0,
        esc(y_name)
    );
}

/// Mean and sample standard deviation (0 for one value).
pub(crate) fn mean_std(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let std = if values.len() > 1 {
        (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    (mean, std)
}

/// The results grouped by their horizontal value (in scale order): (value, metrics).
pub(crate) fn by_x<'a>(points: &'a [Point], x: &Scale) -> Vec<(&'a Value, Vec<f64>)> {
    let mut groups: Vec<(&Value, Vec<f64>)> = Vec::new();
    for p in points {
        let (Some(v), Some(y)) = (p.values.first(), p.y) else {
            continue;
        };
        match groups
            .iter_mut()
            .find(|(g, _)| value_text(g) == value_text(v))
        {
            Some((_, ys)) => ys.push(y),
            None => groups.push((v, vec![y])),
        }
    }
    groups.sort_by(|a, b| {
        let (fa, fb) = (x.at(a.0).unwrap_or(0.0), x.at(b.0).unwrap_or(0.0));
        fa.total_cmp(&fb)
    });
    groups
}

/// A metric (`y_name`) against one parameter (`x_name`, each point's first value): a dot per
/// result, and at each parameter value the mean (a line through them) with a bar of ± one
/// standard deviation over the results that share it.
pub(crate) fn scatter(points: &[Point], x_name: &str, y_name: &str) -> String {
    let x = Scale::of(points.iter().filter_map(|p| p.values.first()));
    let (y0, y1) = y_range(points.iter().filter_map(|p| p.y));
    let sx = |f: f64| L + f * (W - L - R);
    let sy = |y: f64| T + (1.0 - (y - y0) / (y1 - y0)) * (H - T - B);
    let mut out = open("scatter", &format!("{y_name} against {x_name}"));
    frame(&mut out, &x, x_name, (y0, y1), y_name);
    let groups = by_x(points, &x);
    let mut line = String::new();
    for (v, ys) in &groups {
        let Some(f) = x.at(v) else { continue };
        let (mean, std) = mean_std(ys);
        let px = sx(f);
        let _ = write!(
            line,
            "{}{px:.1},{:.1}",
            if line.is_empty() { "M" } else { "L" },
            sy(mean)
        );
        let _ = write!(
            out,
            "<g class=\"mean\" data-x=\"{}\"><title>{} = {}: mean {} ± {} over {} results</title>\
             <line x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/><line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/></g>",
            esc(&value_text(v)),
            esc(x_name),
            esc(&value_text(v)),
            esc(&num(mean)),
            esc(&num(std)),
            ys.len(),
            sy(mean - std),
            sy(mean + std),
            px - 9.0,
            px + 9.0,
            sy(mean),
            sy(mean)
        );
    }
    if !line.is_empty() {
        let _ = write!(out, "<path class=\"means\" d=\"{line}\"/>");
    }
    for p in points {
        let (Some(v), Some(y)) = (p.values.first(), p.y) else {
            continue;
        };
        let Some(f) = x.at(v) else { continue };
        let dot = format!(
            "<circle class=\"dot\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\"><title>{}: {} = {}, {} = {}</title></circle>",
            sx(f),
            sy(y),
            esc(&p.label),
            esc(x_name),
            esc(&value_text(v)),
            esc(y_name),
            esc(&num(y))
        );
        out.push_str(&wrap(p.href.as_deref(), &dot));
    }
    out.push_str("</svg>");
    out
}

/// The points with a metric, worst first, so that the best are drawn last, on top.
fn worst_first(points: &[Point], higher_is_better: bool) -> Vec<&Point> {
    let mut ranked: Vec<&Point> = points.iter().filter(|p| p.y.is_some()).collect();
    ranked.sort_by(|a, b| {
        let (x, y) = (a.y.unwrap_or(0.0), b.y.unwrap_or(0.0));
        if higher_is_better {
            x.total_cmp(&y)
        } else {
            y.total_cmp(&x)
        }
    });
    ranked
}

/// Parallel coordinates: one vertical axis per name in `axes` (each point's values, in
/// order) and a last one for the metric `y_name`; one line per point with a metric, darker
/// the better (`higher_is_better`), the best drawn on top.
pub(crate) fn parallel(
    points: &[Point],
    axes: &[String],
    y_name: &str,
    higher_is_better: bool,
) -> String {
    let scales: Vec<Scale> = (0..axes.len())
        .map(|a| Scale::of(points.iter().filter_map(|p| p.values.get(a))))
        .collect();
    let ys: Vec<Value> = points.iter().filter_map(|p| p.y).map(Value::from).collect();
    let y_scale = match Scale::of(ys.iter()) {
        Scale::Log(lo, hi) => Scale::Linear(lo, hi),
        s => s,
    };
    let n = axes.len() + 1;
    let ax = |a: usize| {
        if n == 1 {
            W / 2.0
        } else {
            L + a as f64 * (W - L - R - 40.0) / (n - 1) as f64
        }
    };
    let top = T + 18.0;
    let sy = |f: f64| top + (1.0 - f) * (H - top - B);
    let mut out = open("parallel", &format!("{y_name} over {}", axes.join(", ")));
    let ranked = worst_first(points, higher_is_better);
    let count = ranked.len().max(1);
    for (rank, p) in ranked.iter().enumerate() {
        let mut d = String::new();
        let mut values: Vec<String> = Vec::new();
        for (a, scale) in scales.iter().enumerate() {
            let Some(v) = p.values.get(a) else { continue };
            let Some(f) = scale.at(v) else { continue };
            let _ = write!(
                d,
                "{}{:.1},{:.1}",
                if d.is_empty() { "M" } else { "L" },
                ax(a),
                sy(f)
            );
            values.push(format!("{} = {}", axes[a], value_text(v)));
        }
        let y = p.y.unwrap_or(f64::NAN);
        if let Some(f) = y_scale.at(&Value::from(y)) {
            let _ = write!(
                d,
                "{}{:.1},{:.1}",
                if d.is_empty() { "M" } else { "L" },
                ax(n - 1),
                sy(f)
            );
        }
        let shade = 0.15 + 0.85 * (rank + 1) as f64 / count as f64;
        let line = format!(
            "<path class=\"pline\" d=\"{d}\" style=\"opacity:{shade:.2}\"><title>{}: {}, {} = {}</title></path>",
            esc(&p.label),
            esc(&values.join(", ")),
            esc(y_name),
            esc(&num(y))
        );
        out.push_str(&wrap(p.href.as_deref(), &line));
    }
    let names: Vec<&str> = axes
        .iter()
        .map(String::as_str)
        .chain(std::iter::once(y_name))
        .collect();
    for (a, name) in names.iter().enumerate() {
        let scale = if a + 1 == n { &y_scale } else { &scales[a] };
        let _ = write!(
            out,
            "<g class=\"axis pc-axis\" data-axis=\"{}\"><line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{top}\" y2=\"{}\"/>\
             <text class=\"name\" x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            esc(name),
            H - B,
            T + 6.0,
            esc(name),
            x = ax(a)
        );
        for (f, label) in scale.ticks() {
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                ax(a) + 5.0,
                sy(f) + 4.0,
                esc(&label)
            );
        }
        out.push_str("</g>");
    }
    out.push_str("</svg>");
    out
}

/// A search's objective by trial number (`points`: trial, objective), with the best so far
/// as a step line.
pub(crate) fn objective(points: &[(usize, f64)], y_name: &str, higher_is_better: bool) -> String {
    let trials: Vec<Value> = points.iter().map(|(t, _)| Value::from(*t)).collect();
    let x = match Scale::of(trials.iter()) {
        Scale::Log(lo, hi) => Scale::Linear(lo, hi),
        s => s,
    };
    let (y0, y1) = y_range(points.iter().map(|p| p.1));
    let sx = |f: f64| L + f * (W - L - R);
    let sy = |y: f64| T + (1.0 - (y - y0) / (y1 - y0)) * (H - T - B);
    let mut out = open("objective", &format!("{y_name} by trial"));
    frame(&mut out, &x, "trial", (y0, y1), y_name);
    let mut best: Option<f64> = None;
    let mut steps = String::new();
    for (t, y) in points {
        let Some(f) = x.at(&Value::from(*t)) else {
            continue;
        };
        let better = best.is_none_or(|b| if higher_is_better { *y > b } else { *y < b });
        let previous = best;
        if better {
            best = Some(*y);
        }
        let b = best.unwrap_or(*y);
        match previous {
            None => {
                let _ = write!(steps, "M{:.1},{:.1}", sx(f), sy(b));
            }
            Some(p) => {
                let _ = write!(steps, "H{:.1}V{:.1}", sx(f), sy(if better { b } else { p }));
            }
        }
        let _ = write!(
            out,
            "<circle class=\"dot{}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\"><title>trial {t}: {y_name} = {}</title></circle>",
            if better { " best-so-far" } else { "" },
            sx(f),
            sy(*y),
            esc(&num(*y))
        );
    }
    if !steps.is_empty() {
        let _ = write!(out, "<path class=\"best\" d=\"{steps}\"/>");
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scales_pick_log_for_wide_positive_ranges_and_categories_for_text() {
        assert_eq!(
            Scale::of([json!(1e-4), json!(1e-2)].iter()),
            Scale::Log(1e-4, 1e-2)
        );
        assert_eq!(
            Scale::of([json!(0.5), json!(0.7)].iter()),
            Scale::Linear(0.5, 0.7)
        );
        let cats = Scale::of([json!("a"), json!("b"), json!("a")].iter());
        assert_eq!(cats, Scale::Categories(vec!["a".into(), "b".into()]));
        assert_eq!(cats.at(&json!("b")), Some(1.0));
        assert!((Scale::Log(1e-4, 1e-2).at(&json!(1e-3)).unwrap() - 0.5).abs() < 1e-12);
    }

    #[test]
    fn means_and_spreads_are_per_value_of_the_parameter() {
        let points: Vec<Point> = [(0.5, 0.40), (0.5, 0.41), (0.7, 0.56)]
            .iter()
            .map(|&(x, y)| Point {
                values: vec![json!(x)],
                y: Some(y),
                label: format!("{x}"),
                href: None,
            })
            .collect();
        let x = Scale::of(points.iter().filter_map(|p| p.values.first()));
        let groups = by_x(&points, &x);
        assert_eq!(groups.len(), 2);
        let (mean, std) = mean_std(&groups[0].1);
        assert!((mean - 0.405).abs() < 1e-12 && (std - 0.00707).abs() < 1e-4);
        let svg = scatter(&points, "lambda_t", "map");
        assert_eq!(svg.matches("<circle class=\"dot\"").count(), 3);
        assert!(svg.contains("mean 0.405 ± 0.0071 over 2 results"), "{svg}");
    }
}
