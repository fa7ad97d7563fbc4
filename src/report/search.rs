//! A search's report: its trials sorted by objective with their values (`table.md`), the
//! objective over trial number with the best so far (`objective.svg`/`.png`), and a
//! parallel-coordinates plot of every trial (`parallel.svg`/`.png`): one vertical axis per
//! dimension and one for the objective, one line per trial, darker the better it scored.
//!
//! Written from the [`SearchState`] a replay builds, so it holds exactly the trials the cache
//! holds; `run` publishes it under `reports/PIPELINE/search-NAME/`.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use serde_json::Value;

use super::error::ReportError;
use super::font::{ensure_registered, FAMILY};
use super::plot::{write_both, Corner, Drawing, Figure, Series};
use crate::search::{SearchState, Trial};

/// Writes the report of `state` into `dir` (which exists); returns the files written.
pub fn write(state: &SearchState, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    ensure_registered()?;
    let table = dir.join("table.md");
    std::fs::write(&table, table_md(state)).map_err(|e| ReportError::Plot {
        name: "table.md".into(),
        message: format!("{}: {e}", table.display()),
    })?;
    let mut files = vec![table];
    let finished: Vec<&Trial> = state
        .trials
        .iter()
        .filter(|t| t.objective.is_some())
        .collect();
    if finished.is_empty() {
        return Ok(files);
    }
    files.extend(write_both(&objective_figure(state, &finished), dir)?);
    files.extend(write_both(
        &Parallel {
            state,
            trials: finished,
        },
        dir,
    )?);
    Ok(files)
}

/// The trials sorted by objective (best first; unfinished ones last, by number).
pub fn sorted(state: &SearchState) -> Vec<&Trial> {
    let max = state.goal == "max";
    let mut trials: Vec<&Trial> = state.trials.iter().collect();
    trials.sort_by(|a, b| {
        b.rung.cmp(&a.rung).then(match (a.objective, b.objective) {
            (Some(x), Some(y)) => {
                let order = if max {
                    y.total_cmp(&x)
                } else {
                    x.total_cmp(&y)
                };
                order.then(a.number.cmp(&b.number))
            }
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.number.cmp(&b.number),
        })
    });
    trials
}

/// The markdown table.
pub(crate) fn table_md(state: &SearchState) -> String {
    let dims: Vec<&String> = state
        .trials
        .first()
        .map(|t| t.values.keys().collect())
        .unwrap_or_default();
    let mut out = format!(
        "Search `{}`: {} ({}), {}, mean over {}; {} of {} trials finished.\n\n",
        state.name,
        state.objective,
        state.goal,
        state.sampler,
        state.mean_over_text(),
        state
            .trials
            .iter()
            .filter(|t| t.objective.is_some())
            .count(),
        state.trials_wanted
    );
    out.push_str("| rank | trial | objective |");
    if state.prune.is_some() {
        out.push_str(" rung |");
    }
    for d in &dims {
        out.push_str(&format!(" {d} |"));
    }
    out.push_str("\n|---|---|---|");
    out.push_str(&"---|".repeat(dims.len() + usize::from(state.prune.is_some())));
    out.push('\n');
    for (rank, t) in sorted(state).iter().enumerate() {
        let objective = t
            .objective
            .map_or("not run".to_string(), |v| format!("{v:.4}"));
        let rank = if t.objective.is_some() {
            (rank + 1).to_string()
        } else {
            "-".into()
        };
        let winner = if state.best == Some(t.number) {
            " (winner)"
        } else {
            ""
        };
        out.push_str(&format!("| {rank} | {}{winner} | {objective} |", t.number));
        if state.prune.is_some() {
            out.push_str(&format!(" {} |", rung_text(state, t)));
        }
        for d in &dims {
            out.push_str(&format!(
                " {} |",
                t.values.get(*d).map_or(String::new(), text)
            ));
        }
        out.push('\n');
    }
    out
}

/// Under ASHA, the rung a trial reached and its resource: `2 (epochs = 18)`.
pub(crate) fn rung_text(state: &SearchState, trial: &Trial) -> String {
    let param = state
        .prune
        .as_ref()
        .map(|p| p.resource.rsplit('.').next().unwrap_or("").to_string())
        .unwrap_or_default();
    match (trial.rung, trial.resource) {
        (Some(r), Some(amount)) => format!("{r} ({param} = {amount})"),
        _ => "-".into(),
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

fn objective_figure(state: &SearchState, finished: &[&Trial]) -> Figure {
    let max = state.goal == "max";
    let mut best: Option<f64> = None;
    let mut so_far = Vec::new();
    for t in finished {
        let v = t.objective.unwrap_or(f64::NAN);
        best = Some(best.map_or(v, |b| {
            if (max && v > b) || (!max && v < b) {
                v
            } else {
                b
            }
        }));
        so_far.push((t.number as f64, best.unwrap_or(v)));
    }
    Figure {
        stem: "objective".into(),
        title: format!("search {}: {} by trial", state.name, state.objective),
        x_label: "trial".into(),
        y_label: state.objective.clone(),
        series: vec![
            Series {
                label: "trial".into(),
                points: finished
                    .iter()
                    .map(|t| (t.number as f64, t.objective.unwrap_or(f64::NAN)))
                    .collect(),
            },
            Series {
                label: "best so far".into(),
                points: so_far,
            },
        ],
        size: (640, 400),
        legend: if max {
            Corner::LowerRight
        } else {
            Corner::UpperRight
        },
    }
}

/// The parallel-coordinates plot.
struct Parallel<'a> {
    state: &'a SearchState,
    trials: Vec<&'a Trial>,
}

/// One vertical axis: its title and each trial's position on it in [0, 1].
struct ParallelAxis {
    title: String,
    ticks: (String, String),
    positions: Vec<f64>,
}

impl Parallel<'_> {
    fn axes(&self) -> Vec<ParallelAxis> {
        let dims: Vec<String> = self
            .trials
            .first()
            .map(|t| t.values.keys().cloned().collect())
            .unwrap_or_default();
        let mut axes: Vec<ParallelAxis> = dims
            .iter()
            .map(|d| {
                let values: Vec<Value> = self
                    .trials
                    .iter()
                    .map(|t| t.values.get(d).cloned().unwrap_or(Value::Null))
                    .collect();
                axis(d, &values)
            })
            .collect();
        let objectives: Vec<Value> = self
            .trials
            .iter()
            .map(|t| Value::from(t.objective.unwrap_or(f64::NAN)))
            .collect();
        axes.push(axis(&self.state.objective, &objectives));
        axes
    }
}

/// Numbers placed linearly (logarithmically when positive and spanning over a decade), other
/// values by their rank among the distinct values.
fn axis(title: &str, values: &[Value]) -> ParallelAxis {
    let numbers: Option<Vec<f64>> = values.iter().map(Value::as_f64).collect();
    if let Some(xs) = numbers {
        let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let log = lo > 0.0 && hi / lo > 10.0;
        let f = |x: f64| if log { x.ln() } else { x };
        let span = f(hi) - f(lo);
        let positions = xs
            .iter()
            .map(|x| {
                if span > 0.0 {
                    (f(*x) - f(lo)) / span
                } else {
                    0.5
                }
            })
            .collect();
        let fmt = |x: f64| format!("{x:.3e}");
        return ParallelAxis {
            title: if log {
                format!("{title} (log)")
            } else {
                title.to_string()
            },
            ticks: (fmt(lo), fmt(hi)),
            positions,
        };
    }
    let mut distinct: Vec<String> = values.iter().map(text).collect();
    distinct.sort();
    distinct.dedup();
    let n = distinct.len().max(2) - 1;
    ParallelAxis {
        title: title.to_string(),
        ticks: (
            distinct.first().cloned().unwrap_or_default(),
            distinct.last().cloned().unwrap_or_default(),
        ),
        positions: values
            .iter()
            .map(|v| distinct.iter().position(|d| *d == text(v)).unwrap_or(0) as f64 / n as f64)
            .collect(),
    }
}

impl Drawing for Parallel<'_> {
    fn stem(&self) -> &str {
        "parallel"
    }

    fn size(&self) -> (u32, u32) {
        (720, 420)
    }

    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = |err: DrawingAreaErrorKind<DB::ErrorType>| err.to_string();
        root.fill(&WHITE).map_err(e)?;
        let axes = self.axes();
        let (w, h) = self.size();
        let (left, right, top, bottom) = (70i32, w as i32 - 70, 60i32, h as i32 - 60);
        let x_of = |i: usize| {
            if axes.len() < 2 {
                (left + right) / 2
            } else {
                left + (right - left) * i as i32 / (axes.len() as i32 - 1)
            }
        };
        let y_of = |p: f64| bottom - ((bottom - top) as f64 * p) as i32;
        let title = format!("search {}: every trial", self.state.name);
        root.draw(&Text::new(title, (left, 16), (FAMILY, 18).into_font()))
            .map_err(e)?;
        // Better trials darker: rank by the objective axis (the last).
        let objective = &axes[axes.len() - 1].positions;
        let max = self.state.goal == "max";
        for (t, _) in self.trials.iter().enumerate() {
            let quality = if max {
                objective[t]
            } else {
                1.0 - objective[t]
            };
            let shade = (200.0 - 170.0 * quality) as u8;
            let color = RGBColor(shade, shade, 255u8.saturating_sub((quality * 60.0) as u8));
            let points: Vec<(i32, i32)> = axes
                .iter()
                .enumerate()
                .map(|(i, a)| (x_of(i), y_of(a.positions[t])))
                .collect();
            root.draw(&PathElement::new(points, color.stroke_width(2)))
                .map_err(e)?;
        }
        for (i, a) in axes.iter().enumerate() {
            let x = x_of(i);
            root.draw(&PathElement::new(
                vec![(x, top), (x, bottom)],
                BLACK.stroke_width(1),
            ))
            .map_err(e)?;
            let style = (FAMILY, 12).into_font();
            root.draw(&Text::new(
                a.title.clone(),
                (x - 30, bottom + 24),
                style.clone(),
            ))
            .map_err(e)?;
            root.draw(&Text::new(
                a.ticks.1.clone(),
                (x - 30, top - 16),
                style.clone(),
            ))
            .map_err(e)?;
            root.draw(&Text::new(a.ticks.0.clone(), (x - 30, bottom + 6), style))
                .map_err(e)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> SearchState {
        let trial = |n: usize, lr: f64, obj: Option<f64>| Trial {
            number: n,
            values: [("lr".to_string(), Value::from(lr))].into_iter().collect(),
            objective: obj,
            instances: 2,
            rung: None,
            resource: None,
        };
        SearchState {
            name: "lr".into(),
            objective: "eval.map".into(),
            goal: "max",
            mean_over: vec!["seed".into()],
            sampler: "tpe",
            trials_wanted: 4,
            trials: vec![
                trial(0, 1e-3, Some(0.2)),
                trial(1, 1e-2, Some(0.5)),
                trial(2, 1e-4, Some(0.1)),
                trial(3, 3e-3, None),
            ],
            finished: false,
            best: None,
            waiting: vec![],
            takers: vec![],
            prune: None,
        }
    }

    #[test]
    fn the_table_ranks_trials_by_objective_and_puts_unfinished_ones_last() {
        let md = table_md(&state());
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| ")).skip(1).collect();
        assert!(rows[0].starts_with("| 1 | 1 | 0.5000 | 0.01 |"), "{md}");
        assert!(rows[2].starts_with("| 3 | 2 | 0.1000 |"), "{md}");
        assert!(rows[3].starts_with("| - | 3 | not run |"), "{md}");
    }

    #[test]
    fn the_report_writes_the_table_and_both_plots() {
        let dir = tempfile::tempdir().unwrap();
        let files = write(&state(), dir.path()).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "table.md",
                "objective.svg",
                "objective.png",
                "parallel.svg",
                "parallel.png"
            ]
        );
        let svg = std::fs::read_to_string(dir.path().join("parallel.svg")).unwrap();
        assert!(svg.contains("lr (log)"), "{svg}");
    }
}
