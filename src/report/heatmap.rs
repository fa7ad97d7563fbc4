//! A table drawn as a heat map: the old x new compatibility matrix of BCT (rows: the model
//! embedding the queries, columns: the model that embedded the gallery).
//!
//! Each cell is coloured by its mean on a white-to-blue scale between the smallest and the
//! largest mean in the map and carries its number in the table's format; a cell without a
//! result is grey with a dash. Only the first metric of the table is drawn (one map per
//! metric would need one file per metric; a layout with one metric is the usual case).

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::font::FAMILY;
use super::layout::Dimension;
use super::plot::Drawing;
use super::Table;

/// A heat map of one metric of a [`Table`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HeatMap {
    /// File stem.
    pub stem: String,
    /// Caption above the map.
    pub title: String,
    /// Row labels, top to bottom.
    pub rows: Vec<String>,
    /// Column labels, left to right.
    pub cols: Vec<String>,
    /// Axis titles: (rows, columns).
    pub axis_titles: (String, String),
    /// `values[row][col]`: the mean, or `None` for a missing cell.
    pub values: Vec<Vec<Option<f64>>>,
    /// `texts[row][col]`: what the cell shows.
    pub texts: Vec<Vec<String>>,
    /// Width and height in pixels.
    pub size: (u32, u32),
}

impl HeatMap {
    /// The heat map of `table`'s first metric (the columns and rows holding it), or `None`
    /// when the table has no cell.
    pub(crate) fn from_table(table: &Table, stem: &str, size: (u32, u32)) -> Option<HeatMap> {
        let metric = table.cells.iter().flatten().next()?.metric.clone();
        let keep_rows: Vec<usize> = (0..table.rows.len())
            .filter(|&r| table.cells[r].iter().any(|c| c.metric == metric))
            .collect();
        let keep_cols: Vec<usize> = (0..table.cols.len())
            .filter(|&c| {
                keep_rows
                    .iter()
                    .any(|&r| table.cells[r][c].metric == metric)
            })
            .collect();
        let label = |axis: &super::axis::Axis, i: usize| -> String {
            let parts: Vec<&String> = axis
                .dims
                .iter()
                .zip(&axis.labels[i])
                .filter(|(d, _)| **d != Dimension::Metric)
                .map(|(_, l)| l)
                .collect();
            parts
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(" / ")
        };
        let title_of = |axis: &super::axis::Axis| -> String {
            axis.dims
                .iter()
                .zip(&axis.headers)
                .filter(|(d, _)| **d != Dimension::Metric)
                .map(|(_, h)| h.as_str())
                .collect::<Vec<_>>()
                .join(" / ")
        };
        let style = super::cell::CellStyle::PLAIN;
        // The metric's label as the table shows it (layout labels applied).
        let metric_label = [&table.rows, &table.cols]
            .into_iter()
            .find_map(|axis| {
                let at = axis.dims.iter().position(|d| *d == Dimension::Metric)?;
                let i = axis.keys.iter().position(|k| k[at] == metric)?;
                Some(axis.labels[i][at].clone())
            })
            .unwrap_or_else(|| metric.clone());
        Some(HeatMap {
            stem: stem.to_string(),
            title: if table.title.is_empty() {
                metric_label
            } else {
                table.title.clone()
            },
            rows: keep_rows.iter().map(|&r| label(&table.rows, r)).collect(),
            cols: keep_cols.iter().map(|&c| label(&table.cols, c)).collect(),
            axis_titles: (title_of(&table.rows), title_of(&table.cols)),
            values: keep_rows
                .iter()
                .map(|&r| {
                    keep_cols
                        .iter()
                        .map(|&c| table.cells[r][c].mean())
                        .collect()
                })
                .collect(),
            texts: keep_rows
                .iter()
                .map(|&r| {
                    keep_cols
                        .iter()
                        .map(|&c| {
                            let cell = &table.cells[r][c];
                            match cell.mean() {
                                Some(m) => cell.format.number(m),
                                None => style.dash.to_string(),
                            }
                        })
                        .collect()
                })
                .collect(),
            size,
        })
    }
}

/// White (t = 0) to dark blue (t = 1).
fn blues(t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0);
    let lerp = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    RGBColor(lerp(247.0, 8.0), lerp(251.0, 48.0), lerp(255.0, 107.0))
}

impl Drawing for HeatMap {
    fn stem(&self) -> &str {
        &self.stem
    }

    fn size(&self) -> (u32, u32) {
        self.size
    }

    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = |err: DrawingAreaErrorKind<DB::ErrorType>| err.to_string();
        root.fill(&WHITE).map_err(e)?;
        let (w, h) = (self.size.0 as i32, self.size.1 as i32);
        let label_style = TextStyle::from((FAMILY, 13).into_font()).color(&BLACK);
        let widest = self
            .rows
            .iter()
            .map(|r| root.estimate_text_size(r, &label_style).map(|s| s.0 as i32))
            .collect::<Result<Vec<_>, _>>()
            .map_err(e)?
            .into_iter()
            .max()
            .unwrap_or(0);
        let left = (widest + 36).min(w / 3);
        let top = 76;
        // The colour bar's strip on the right (only when there is something to scale).
        let bar = if self.values.iter().flatten().any(Option::is_some) {
            78
        } else {
            0
        };
        let (right, bottom) = (16 + bar, 16);
        let n_rows = self.rows.len().max(1) as i32;
        let n_cols = self.cols.len().max(1) as i32;
        let cw = ((w - left - right) / n_cols).max(1);
        let ch = ((h - top - bottom) / n_rows).max(1);

        self.draw_titles(root, w)?;

        let finite: Vec<f64> = self.values.iter().flatten().flatten().copied().collect();
        let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if bar > 0 {
            self.draw_colour_bar(root, (w - right + 22, top), (18, h - top - bottom), lo, hi)?;
        }
        for (c, label) in self.cols.iter().enumerate() {
            let x = left + c as i32 * cw + cw / 2;
            root.draw_text(
                label,
                &label_style.pos(Pos::new(HPos::Center, VPos::Bottom)),
                (x, top - 6),
            )
            .map_err(e)?;
        }
        for (r, label) in self.rows.iter().enumerate() {
            let y = top + r as i32 * ch + ch / 2;
            root.draw_text(
                label,
                &label_style.pos(Pos::new(HPos::Right, VPos::Center)),
                (left - 8, y),
            )
            .map_err(e)?;
            for c in 0..self.cols.len() {
                let at = (left + c as i32 * cw, top + r as i32 * ch);
                self.draw_cell(root, (r, c), at, (cw, ch), lo, hi)?;
            }
        }
        Ok(())
    }
}

impl HeatMap {
    /// The title on top, and under it which dimensions the columns and rows are.
    fn draw_titles<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        w: i32,
    ) -> Result<(), String> {
        let e = |err: DrawingAreaErrorKind<DB::ErrorType>| err.to_string();
        let title_style = TextStyle::from((FAMILY, 18).into_font()).color(&BLACK);
        root.draw_text(
            &self.title,
            &title_style.pos(Pos::new(HPos::Center, VPos::Top)),
            (w / 2, 8),
        )
        .map_err(e)?;
        let axis_style = TextStyle::from((FAMILY, 13).into_font()).color(&RGBColor(90, 90, 90));
        root.draw_text(
            &format!(
                "{} (columns) x {} (rows)",
                self.axis_titles.1, self.axis_titles.0
            ),
            &axis_style.pos(Pos::new(HPos::Center, VPos::Top)),
            (w / 2, 32),
        )
        .map_err(e)
    }

    /// The cell at row `r`, column `c`: a box at `(x0, y0)` of `(cw, ch)` shaded by where its
    /// value lies in `[lo, hi]` (grey without one), its text on it.
    fn draw_cell<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        (r, c): (usize, usize),
        (x0, y0): (i32, i32),
        (cw, ch): (i32, i32),
        lo: f64,
        hi: f64,
    ) -> Result<(), String> {
        let e = |err: DrawingAreaErrorKind<DB::ErrorType>| err.to_string();
        let value = self.values[r][c];
        let t = match value {
            Some(v) if hi > lo => (v - lo) / (hi - lo),
            Some(_) => 0.5,
            None => 0.0,
        };
        let fill = if value.is_some() {
            blues(t)
        } else {
            RGBColor(225, 225, 225)
        };
        root.draw(&Rectangle::new(
            [(x0, y0), (x0 + cw, y0 + ch)],
            fill.filled(),
        ))
        .map_err(e)?;
        root.draw(&Rectangle::new(
            [(x0, y0), (x0 + cw, y0 + ch)],
            WHITE.stroke_width(2),
        ))
        .map_err(e)?;
        let ink = if t > 0.55 { WHITE } else { BLACK };
        let text_style = TextStyle::from((FAMILY, 14).into_font()).color(&ink);
        root.draw_text(
            &self.texts[r][c],
            &text_style.pos(Pos::new(HPos::Center, VPos::Center)),
            (x0 + cw / 2, y0 + ch / 2),
        )
        .map_err(e)
    }

    /// The text of the cell holding `value` (its mean, without the spread), for the bar's ends.
    fn text_of(&self, value: f64) -> String {
        for (r, row) in self.values.iter().enumerate() {
            for (c, v) in row.iter().enumerate() {
                if *v == Some(value) {
                    let text = &self.texts[r][c];
                    return text.split_whitespace().next().unwrap_or(text).to_string();
                }
            }
        }
        format!("{value:.3}")
    }

    /// A vertical colour bar at `at` of `size` pixels: `hi` at the top, `lo` at the bottom,
    /// labelled with the values as the cells read.
    fn draw_colour_bar<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        at: (i32, i32),
        size: (i32, i32),
        lo: f64,
        hi: f64,
    ) -> Result<(), String> {
        let e = |err: DrawingAreaErrorKind<DB::ErrorType>| err.to_string();
        let (x, y) = at;
        let (bw, bh) = (size.0, size.1.max(2));
        let steps = bh.min(120);
        for i in 0..steps {
            let y0 = y + bh * i / steps;
            let y1 = y + bh * (i + 1) / steps;
            let t = if hi > lo {
                1.0 - f64::from(i) / f64::from(steps - 1).max(1.0)
            } else {
                0.5
            };
            root.draw(&Rectangle::new([(x, y0), (x + bw, y1)], blues(t).filled()))
                .map_err(e)?;
        }
        root.draw(&Rectangle::new(
            [(x, y), (x + bw, y + bh)],
            RGBColor(160, 160, 160).stroke_width(1),
        ))
        .map_err(e)?;
        let style = TextStyle::from((FAMILY, 12).into_font()).color(&BLACK);
        root.draw_text(
            &self.text_of(hi),
            &style.pos(Pos::new(HPos::Left, VPos::Top)),
            (x + bw + 4, y),
        )
        .map_err(e)?;
        if hi > lo {
            root.draw_text(
                &self.text_of(lo),
                &style.pos(Pos::new(HPos::Left, VPos::Bottom)),
                (x + bw + 4, y + bh),
            )
            .map_err(e)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_colour_bar_is_labelled_as_the_cells_read() {
        let map = HeatMap {
            stem: "h".into(),
            title: "t".into(),
            rows: vec!["a".into()],
            cols: vec!["x".into(), "y".into()],
            axis_titles: ("r".into(), "c".into()),
            values: vec![vec![Some(0.25), Some(0.5)]],
            texts: vec![vec!["25.0 ± 1.0".into(), "50.0".into()]],
            size: (320, 240),
        };
        assert_eq!(map.text_of(0.25), "25.0");
        assert_eq!(map.text_of(0.5), "50.0");
        let svg = crate::report::plot::to_svg(&map).unwrap();
        // Each value appears in its cell and again at an end of the bar.
        assert_eq!(svg.matches("25.0").count(), 2, "{svg}");
        assert_eq!(svg.matches("50.0").count(), 2, "{svg}");
    }

    #[test]
    fn the_colour_scale_runs_from_white_to_dark_blue() {
        assert_eq!(blues(0.0), RGBColor(247, 251, 255));
        assert_eq!(blues(1.0), RGBColor(8, 48, 107));
        assert_eq!(blues(2.0), blues(1.0));
    }
}
