//! Line plots (one metric against another, training-loss curves), written as SVG and PNG.
//!
//! Every plot is described once as a backend-independent [`Drawing`] and drawn twice with
//! plotters: into an SVG string (text stays text, for papers and the HTML page) and into an
//! RGB buffer encoded as PNG with the `image` crate (for slides and quick looks). Text in
//! both uses the embedded font (`font.rs`), so plots render on machines with no fonts.
//!
//! [`xy_figure`] is the resolution-asymmetry paper's Figures 1 and 4: one metric (mAP)
//! against another (query GFLOPs), one series per table row (a setup), one point per column
//! (a query resolution), each point the mean over the aggregated axis.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::error::ReportError;
use super::font::{ensure_registered, FAMILY};
use super::layout::Dimension;
use super::{Layout, NumberFormat};
use crate::kind::InputArtifact;

/// Something drawable into any plotters backend.
pub(crate) trait Drawing {
    /// The file stem its files get (`plot-map-vs-query_gflops` -> `.svg`, `.png`).
    fn stem(&self) -> &str;
    /// Width and height in pixels.
    fn size(&self) -> (u32, u32);
    /// Draws onto `root`, which covers [`Drawing::size`].
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

fn plot_error(stem: &str, message: impl ToString) -> ReportError {
    ReportError::Plot {
        name: stem.to_string(),
        message: message.to_string(),
    }
}

/// `drawing` as an SVG document.
pub(crate) fn to_svg<D: Drawing>(drawing: &D) -> Result<String, ReportError> {
    ensure_registered()?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, drawing.size()).into_drawing_area();
        drawing
            .draw_on(&root)
            .map_err(|e| plot_error(drawing.stem(), e))?;
        root.present().map_err(|e| plot_error(drawing.stem(), e))?;
    }
    Ok(svg)
}

/// `drawing` as a PNG file's bytes (8-bit RGB).
pub(crate) fn to_png<D: Drawing>(drawing: &D) -> Result<Vec<u8>, ReportError> {
    use image::ImageEncoder;
    ensure_registered()?;
    let (w, h) = drawing.size();
    let mut buf = vec![0u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (w, h)).into_drawing_area();
        drawing
            .draw_on(&root)
            .map_err(|e| plot_error(drawing.stem(), e))?;
        root.present().map_err(|e| plot_error(drawing.stem(), e))?;
    }
    let mut png = Vec::new();
    image::codecs::png::PngEncoder::new(&mut png)
        .write_image(&buf, w, h, image::ExtendedColorType::Rgb8)
        .map_err(|e| plot_error(drawing.stem(), e))?;
    Ok(png)
}

/// Writes `drawing` as `STEM.svg` and `STEM.png` into `dir`; returns both paths.
pub(crate) fn write_both<D: Drawing>(drawing: &D, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let svg_path = dir.join(format!("{}.svg", drawing.stem()));
    let png_path = dir.join(format!("{}.png", drawing.stem()));
    std::fs::write(&svg_path, to_svg(drawing)?)
        .map_err(|e| plot_error(drawing.stem(), format!("{}: {e}", svg_path.display())))?;
    std::fs::write(&png_path, to_png(drawing)?)
        .map_err(|e| plot_error(drawing.stem(), format!("{}: {e}", png_path.display())))?;
    Ok(vec![svg_path, png_path])
}

/// One line of a line plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The legend entry.
    pub label: String,
    /// (x, y) points, drawn in order.
    pub points: Vec<(f64, f64)>,
}

/// A line plot: lines with markers, axis titles and a legend.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// File stem.
    pub stem: String,
    /// Caption above the plot.
    pub title: String,
    /// X axis title.
    pub x_label: String,
    /// Y axis title.
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
    /// Width and height in pixels.
    pub size: (u32, u32),
    /// Where the legend goes: the corner the lines are least likely to cross (lower right
    /// for rising curves such as mAP against cost, upper right for falling losses).
    pub legend: Corner,
}

/// A corner of the plotting area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Corner {
    /// Top right.
    UpperRight,
    /// Bottom right.
    LowerRight,
}

/// A range covering `values`, padded by 5% (or by 0.5 around a single value).
fn padded_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = if hi > lo {
        (hi - lo) * 0.05
    } else if lo != 0.0 {
        // A single value: half its size either side, so 0.003 GFLOPs is not drawn on 0..0.5.
        lo.abs() * 0.5
    } else {
        0.5
    };
    // Quantities that cannot be negative (mAP, GFLOPs, losses) keep a non-negative axis.
    let low = if lo >= 0.0 {
        (lo - pad).max(0.0)
    } else {
        lo - pad
    };
    (low, hi + pad)
}

impl Drawing for Figure {
    fn stem(&self) -> &str {
        &self.stem
    }

    fn size(&self) -> (u32, u32) {
        self.size
    }

    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = |err: DrawingAreaErrorKind<DB::ErrorType>| err.to_string();
        root.fill(&WHITE).map_err(e)?;
        let points = || self.series.iter().flat_map(|s| s.points.iter());
        let (x0, x1) = padded_range(points().map(|p| p.0));
        let (y0, y1) = padded_range(points().map(|p| p.1));
        // Room for the legend above (or below) the data, so it never covers a line: the
        // y range grows by the share of the plot the legend's rows take.
        let labelled = self.series.iter().filter(|s| !s.label.is_empty()).count() as f64;
        let (y0, y1) = if labelled > 0.0 {
            let plot_h = (f64::from(self.size.1) - 110.0).max(60.0);
            let legend_h = (labelled * 18.0 + 14.0).min(plot_h * 0.6);
            let grow = (y1 - y0) * legend_h / (plot_h - legend_h);
            match self.legend {
                Corner::UpperRight => (y0, y1 + grow),
                Corner::LowerRight if y0 >= 0.0 && y0 - grow < 0.0 => (y0, y1 + grow),
                Corner::LowerRight => (y0 - grow, y1),
            }
        } else {
            (y0, y1)
        };
        let legend = match self.legend {
            Corner::LowerRight if y0 >= 0.0 && labelled > 0.0 => SeriesLabelPosition::UpperRight,
            Corner::UpperRight => SeriesLabelPosition::UpperRight,
            Corner::LowerRight => SeriesLabelPosition::LowerRight,
        };
        let (title, title_size) = fitted_title(&self.title, self.size.0);
        let mut chart = ChartBuilder::on(root)
            .caption(&title, (FAMILY, title_size))
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(e)?;
        // Whole-number x values (epochs) read without decimals.
        let whole_x = points().all(|p| p.0.fract() == 0.0);
        let x_format = |v: &f64| {
            if whole_x && (v - v.round()).abs() < 1e-9 {
                format!("{v:.0}")
            } else {
                tick_label(*v, x1 - x0)
            }
        };
        let y_format = |v: &f64| tick_label(*v, y1 - y0);
        chart
            .configure_mesh()
            .x_label_formatter(&x_format)
            .y_label_formatter(&y_format)
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .label_style((FAMILY, 12))
            .axis_desc_style((FAMILY, 14))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(e)?;
        for (i, series) in self.series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    series.points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(e)?
                .label(series.label.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
            chart
                .draw_series(
                    series
                        .points
                        .iter()
                        .map(|p| Circle::new(*p, 4, color.filled())),
                )
                .map_err(e)?;
        }
        if self.series.iter().any(|s| !s.label.is_empty()) {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(160, 160, 160))
                .label_font((FAMILY, 12))
                .position(legend)
                .draw()
                .map_err(e)?;
        }
        Ok(())
    }
}

/// The factor a metric's values are drawn with: 100 where the table prints it as a percentage.
fn axis_scale(layout: &Layout, metric: &str) -> f64 {
    match layout.format_of(metric) {
        NumberFormat::Percent(_) => 100.0,
        NumberFormat::Fixed(_) => 1.0,
    }
}

/// A metric's axis title, with "(%)" where it is drawn as a percentage.
fn axis_title(layout: &Layout, metric: &str) -> String {
    match layout.format_of(metric) {
        NumberFormat::Percent(_) => format!("{} (%)", layout.metric_label(metric)),
        NumberFormat::Fixed(_) => layout.metric_label(metric),
    }
}

/// A tick label on an axis spanning `span`: as many decimals as ticks about a tenth of the
/// span apart need to read apart (GFLOPs of 0.002 to 0.012 read 0.002, 0.004, ..., not
/// "0 0 0 0 0 0.01"), trailing zeros dropped.
fn tick_label(value: f64, span: f64) -> String {
    let decimals = if span > 0.0 && span.is_finite() {
        (-(span / 10.0).log10()).ceil().clamp(0.0, 8.0) as usize
    } else {
        2
    };
    let text = format!("{value:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    match text {
        "-0" => "0".to_string(),
        t => t.to_string(),
    }
}

/// The title and its font size so it fits a figure `width` pixels wide: 18 px where it fits,
/// smaller down to 11 px, then cut with an ellipsis (a long title used to run off the image).
fn fitted_title(title: &str, width: u32) -> (String, u32) {
    // Average advance of the sans-serif face, as a share of the font size.
    const ADVANCE: f64 = 0.56;
    let room = f64::from(width).max(1.0) - 28.0;
    let chars = title.chars().count().max(1) as f64;
    let size = (room / (chars * ADVANCE)).floor().min(18.0);
    if size >= 11.0 {
        return (title.to_string(), size as u32);
    }
    let keep = ((room / (11.0 * ADVANCE)).floor() as usize).saturating_sub(1);
    let cut: String = title.chars().take(keep).collect();
    (format!("{}...", cut.trim_end()), 11)
}

/// A file-name-safe version of `text`: letters, digits, `-` and `_` kept, others `_`.
pub(crate) fn safe_stem(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Metric `y` against metric `x` (from [`Layout::plot_xy`]), one series per table row, one
/// point per table column, each coordinate the mean over the instances that have both
/// metrics. `None` when no instance has both (nothing to draw).
pub(crate) fn xy_figure(layout: &Layout, inputs: &[InputArtifact]) -> Option<Figure> {
    let (x, y) = layout.plot_xy.as_ref()?;
    let kept: Vec<&InputArtifact> = inputs.iter().filter(|a| layout.keeps(a)).collect();
    let fitted = layout.fitted_to(&kept);
    let layout = &fitted;
    let row_dims: Vec<&Dimension> = layout
        .rows
        .iter()
        .filter(|d| **d != Dimension::Metric)
        .collect();
    let col_dims: Vec<&Dimension> = layout
        .cols
        .iter()
        .filter(|d| **d != Dimension::Metric)
        .collect();
    let key = |dims: &[&Dimension], a: &InputArtifact| -> Vec<String> {
        dims.iter()
            .map(|d| layout.value_of(d, a).unwrap_or_else(|| "-".into()))
            .collect()
    };
    // row key -> column key -> (sum x, sum y, n); both in first-appearance order.
    type Sums = (Vec<String>, f64, f64, usize);
    let mut rows: Vec<(Vec<String>, Vec<Sums>)> = Vec::new();
    let mut index: HashMap<Vec<String>, usize> = HashMap::new();
    for a in kept {
        let (Some(&vx), Some(&vy)) = (a.metrics.get(x), a.metrics.get(y)) else {
            continue;
        };
        if !(vx.is_finite() && vy.is_finite()) {
            continue;
        }
        let rk = key(&row_dims, a);
        let ck = key(&col_dims, a);
        let i = *index.entry(rk.clone()).or_insert_with(|| {
            rows.push((rk, Vec::new()));
            rows.len() - 1
        });
        let cols = &mut rows[i].1;
        match cols.iter_mut().find(|c| c.0 == ck) {
            Some(c) => {
                c.1 += vx;
                c.2 += vy;
                c.3 += 1;
            }
            None => cols.push((ck, vx, vy, 1)),
        }
    }
    if rows.is_empty() {
        return None;
    }
    // The axes read as the table does: a metric the table prints as a percentage is drawn as one.
    let (x_scale, y_scale) = (axis_scale(layout, x), axis_scale(layout, y));
    let series = rows
        .into_iter()
        .map(|(rk, cols)| {
            let label = row_dims
                .iter()
                .zip(&rk)
                .map(|(d, v)| layout.value_label(d, v))
                .collect::<Vec<_>>()
                .join(" / ");
            let mut points: Vec<(f64, f64)> = cols
                .iter()
                .map(|(_, sx, sy, n)| (sx / *n as f64 * x_scale, sy / *n as f64 * y_scale))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series { label, points }
        })
        .collect();
    let title = if layout.title.is_empty() {
        format!("{} vs {}", layout.metric_label(y), layout.metric_label(x))
    } else {
        layout.title.clone()
    };
    Some(Figure {
        stem: safe_stem(&format!("plot-{y}-vs-{x}")),
        title,
        x_label: axis_title(layout, x),
        y_label: axis_title(layout, y),
        series,
        size: layout.plot_size,
        legend: Corner::LowerRight,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::Params;
    use serde_json::json;
    use std::collections::BTreeMap;

    #[test]
    fn a_single_non_negative_point_keeps_a_non_negative_axis() {
        let (lo, hi) = padded_range([0.3].into_iter());
        assert!(lo >= 0.0 && hi > 0.3, "{lo}..{hi}");
        let (lo, _) = padded_range([-2.0].into_iter());
        assert!(lo < -2.0);
    }

    fn artifact(stage: &str, res: i64, seed: i64, gflops: f64, map: f64) -> InputArtifact {
        InputArtifact {
            stage: stage.into(),
            kind: "evaluate".into(),
            binding: serde_json::from_value(json!({"query_res": res, "seed": seed})).unwrap(),
            params: Params::default(),
            key: String::new(),
            outputs: BTreeMap::new(),
            metrics: BTreeMap::from([("query_gflops".into(), gflops), ("map".into(), map)]),
            draws: Vec::new(),
        }
    }

    #[test]
    fn xy_points_are_means_per_row_and_column_sorted_by_x() {
        let layout = Layout::from_params(&Params(
            serde_json::from_value(
                json!({"cols": "query_res", "labels": {"ts": "teacher-student"}}),
            )
            .unwrap(),
        ))
        .unwrap();
        let inputs = vec![
            artifact("ts", 64, 0, 0.8, 0.50),
            artifact("ts", 64, 1, 0.8, 0.54),
            artifact("ts", 32, 0, 0.2, 0.30),
            artifact("sym", 32, 0, 0.2, 0.10),
        ];
        let fig = xy_figure(&layout, &inputs).unwrap();
        assert_eq!(fig.stem, "plot-map-vs-query_gflops");
        assert_eq!(fig.series.len(), 2);
        assert_eq!(fig.series[0].label, "teacher-student");
        // mAP is printed as a percentage in the table, so it is drawn as one; GFLOPs as is.
        assert_eq!(fig.y_label, "mAP (%)");
        assert_eq!(fig.x_label, "query GFLOPs");
        let p = &fig.series[0].points;
        let close =
            |a: (f64, f64), b: (f64, f64)| (a.0 - b.0).abs() < 1e-9 && (a.1 - b.1).abs() < 1e-9;
        assert!(close(p[0], (0.2, 30.0)), "{p:?}");
        assert!(close(p[1], (0.8, 52.0)), "{p:?}");
    }

    #[test]
    fn a_metric_formatted_as_is_is_drawn_as_is() {
        let layout = Layout::from_params(&Params(
            serde_json::from_value(json!({"cols": "query_res", "formats": {"map": "fixed:3"}}))
                .unwrap(),
        ))
        .unwrap();
        let fig = xy_figure(&layout, &[artifact("ts", 32, 0, 0.2, 0.30)]).unwrap();
        assert_eq!(fig.y_label, "mAP");
        assert_eq!(fig.series[0].points[0], (0.2, 0.30));
    }

    #[test]
    fn small_ticks_keep_the_decimals_that_tell_them_apart() {
        let labels: Vec<String> = [0.0, 0.002, 0.004, 0.01, 0.012]
            .iter()
            .map(|v| tick_label(*v, 0.012))
            .collect();
        assert_eq!(labels, ["0", "0.002", "0.004", "0.01", "0.012"]);
        assert_eq!(tick_label(40.0, 30.0), "40");
        assert_eq!(tick_label(42.5, 3.0), "42.5");
        assert_eq!(tick_label(-0.0001, 0.5), "0");
    }

    #[test]
    fn a_single_small_value_gets_an_axis_of_its_own_size() {
        let (lo, hi) = padded_range([0.004].into_iter());
        assert!(
            (0.0..0.004).contains(&lo) && hi > 0.004 && hi < 0.01,
            "{lo}..{hi}"
        );
    }

    #[test]
    fn long_titles_shrink_then_are_cut_to_fit() {
        assert_eq!(
            fitted_title("mAP vs GFLOPs", 640),
            ("mAP vs GFLOPs".to_string(), 18)
        );
        let long = "a".repeat(70);
        let (text, size) = fitted_title(&long, 640);
        assert_eq!(text, long);
        assert!((11..18).contains(&size), "{size}");
        let (text, size) = fitted_title(&"b".repeat(300), 640);
        assert_eq!(size, 11);
        assert!(
            text.ends_with("...") && text.chars().count() < 300,
            "{text}"
        );
        assert!(text.chars().count() as f64 * 11.0 * 0.56 <= 640.0 - 28.0 + 11.0 * 0.56 * 3.0);
    }

    #[test]
    fn no_instance_with_both_metrics_means_no_plot() {
        let layout = Layout::from_params(&Params::default()).unwrap();
        let mut a = artifact("ts", 64, 0, 0.8, 0.5);
        a.metrics.remove("query_gflops");
        assert!(xy_figure(&layout, &[a]).is_none());
    }
}
