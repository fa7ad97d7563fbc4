//! One table cell: the values of one metric for one row and column, aggregated over an axis.
//!
//! Each value comes from one instance (one seed, by default). The cell reports the mean, the
//! *sample* standard deviation (divided by n - 1, as papers that report "mean ± std over
//! seeds" do; undefined for a single value, so not printed), and how many results it holds
//! against how many were expected, so a partial sweep is never mistaken for a complete one.
//! An empty cell is a dash, never a zero.
//!
//! With a confidence level (`ci = 0.95`) it also prints the Student-t interval of the mean
//! (`41.2 ± 0.3 [40.5, 41.9]`), which says how far the mean of a few draws may be from the
//! truth. A *paired* cell holds per-draw differences (`a - b` for each seed) and adds how many
//! are positive (`+2.2 ± 4.0 [-7.7, 12.1], 2 of 3 positive`). A cell of one draw may carry a
//! bootstrap interval over its evaluation's queries instead (`41.2 [39.8, 42.6]`, footnoted
//! by the table as covering the queries only).

use super::{student_t, NumberFormat};

/// The values of one metric in one cell of a report table.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// The metric's name (`map`).
    pub metric: String,
    /// One value per instance that has the metric, in the order of the aggregated axis.
    pub values: Vec<f64>,
    /// How many values the cell should hold (the instances of the aggregated axis).
    pub expected: usize,
    /// How the numbers are printed.
    pub format: NumberFormat,
    /// The confidence level of the interval printed after the spread (`0.95`), or none.
    pub ci: Option<f64>,
    /// Whether the values are paired differences (signed, with the count of positive ones).
    pub paired: bool,
    /// For a cell of one draw, the bootstrap interval of its metric over the draw's queries
    /// ([`super::bootstrap`]), printed where a spread's interval would be.
    pub bootstrap: Option<(f64, f64)>,
}

/// What a renderer prints around the numbers of a cell.
#[derive(Debug, Clone, Copy)]
pub struct CellStyle {
    /// Between mean and standard deviation (`" ± "`, `" $\pm$ "`).
    pub plus_minus: &'static str,
    /// For a cell without any value (`"-"`, `"--"`).
    pub dash: &'static str,
}

impl CellStyle {
    /// Markdown, CSV and HTML: `41.2 ± 0.3 (2/3)`, `-`.
    pub(crate) const PLAIN: CellStyle = CellStyle {
        plus_minus: " ± ",
        dash: "-",
    };
    /// LaTeX: `41.2 $\pm$ 0.3 (2/3)`, `--`.
    pub(crate) const LATEX: CellStyle = CellStyle {
        plus_minus: " $\\pm$ ",
        dash: "--",
    };
}

impl Cell {
    /// The number of values present.
    pub fn n(&self) -> usize {
        self.values.len()
    }

    /// Whether the cell holds no value (it prints as a dash).
    pub(crate) fn is_missing(&self) -> bool {
        self.values.is_empty()
    }

    /// Whether fewer values are present than expected (but at least one).
    pub(crate) fn is_partial(&self) -> bool {
        !self.values.is_empty() && self.values.len() < self.expected
    }

    /// The mean, or `None` for an empty cell.
    pub fn mean(&self) -> Option<f64> {
        if self.values.is_empty() {
            return None;
        }
        Some(self.values.iter().sum::<f64>() / self.values.len() as f64)
    }

    /// The sample standard deviation (divided by n - 1), or `None` with fewer than two values.
    pub fn std(&self) -> Option<f64> {
        let n = self.values.len();
        if n < 2 {
            return None;
        }
        let mean = self.mean()?;
        let ss: f64 = self.values.iter().map(|v| (v - mean).powi(2)).sum();
        Some((ss / (n - 1) as f64).sqrt())
    }

    /// The Student-t confidence interval of the mean at the cell's level, or `None` without a
    /// level or with fewer than two values.
    pub fn interval(&self) -> Option<(f64, f64)> {
        student_t::interval(&self.values, self.ci?)
    }

    /// How many values are above zero (a paired cell's "k of n positive").
    pub fn positive(&self) -> usize {
        self.values.iter().filter(|v| **v > 0.0).count()
    }

    fn number(&self, value: f64) -> String {
        let text = self.format.number(value);
        if self.paired && value >= 0.0 && !text.starts_with('-') {
            format!("+{text}")
        } else {
            text
        }
    }

    /// The cell as it reads: `41.2 ± 0.3`, `41.2 ± 0.3 (2/3)`, `41.2` for a single expected
    /// value, `41.2 (1/3)` for one of three, the dash when empty; with a confidence level the
    /// interval after the spread (`41.2 ± 0.3 [40.5, 41.9]`); a paired cell signed, with its
    /// count of positive differences (`+2.2 ± 4.0 [-7.7, 12.1], 2 of 3 positive`); a one-draw
    /// cell with a bootstrap interval over its queries: `41.2 [39.8, 42.6]`.
    pub fn text(&self, style: CellStyle) -> String {
        let Some(mean) = self.mean() else {
            return style.dash.to_string();
        };
        let mut text = self.number(mean);
        if let Some(std) = self.std() {
            text.push_str(style.plus_minus);
            text.push_str(&self.format.number(std));
        }
        if let Some((lo, hi)) = self.interval().or(self.bootstrap) {
            text.push_str(&format!(" [{}, {}]", self.number(lo), self.number(hi)));
        }
        if self.is_partial() {
            text.push_str(&format!(" ({}/{})", self.n(), self.expected));
        }
        if self.paired {
            text.push_str(&format!(", {} of {} positive", self.positive(), self.n()));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(values: &[f64], expected: usize) -> Cell {
        Cell {
            metric: "map".into(),
            values: values.to_vec(),
            expected,
            format: NumberFormat::Percent(1),
            ci: None,
            paired: false,
            bootstrap: None,
        }
    }

    #[test]
    fn mean_and_sample_std_match_hand_computed_values() {
        // values 0.40, 0.42, 0.47: mean 0.43; deviations -0.03, -0.01, 0.04;
        // squares sum 0.0026; / (3 - 1) = 0.0013; sqrt = 0.0360555...
        let c = cell(&[0.40, 0.42, 0.47], 3);
        assert!((c.mean().unwrap() - 0.43).abs() < 1e-12);
        assert!((c.std().unwrap() - 0.0013f64.sqrt()).abs() < 1e-12);
        assert_eq!(c.text(CellStyle::PLAIN), "43.0 ± 3.6");
    }

    #[test]
    fn partial_cells_say_how_many_of_how_many() {
        // 0.411, 0.413: mean 0.412, std sqrt(2 * 0.001^2 / 1) = 0.0014142
        let c = cell(&[0.411, 0.413], 3);
        assert_eq!(c.text(CellStyle::PLAIN), "41.2 ± 0.1 (2/3)");
        assert_eq!(cell(&[0.5], 3).text(CellStyle::PLAIN), "50.0 (1/3)");
        assert!(cell(&[0.5], 3).is_partial());
    }

    #[test]
    fn a_single_expected_value_prints_without_std() {
        let c = cell(&[0.5], 1);
        assert_eq!(c.std(), None);
        assert_eq!(c.text(CellStyle::PLAIN), "50.0");
    }

    #[test]
    fn a_one_draw_cell_prints_its_bootstrap_interval() {
        let mut c = cell(&[0.412], 1);
        c.bootstrap = Some((0.398, 0.426));
        assert_eq!(c.text(CellStyle::PLAIN), "41.2 [39.8, 42.6]");
        c.expected = 3;
        assert_eq!(c.text(CellStyle::PLAIN), "41.2 [39.8, 42.6] (1/3)");
    }

    #[test]
    fn an_empty_cell_is_a_dash_never_a_zero() {
        let c = cell(&[], 3);
        assert!(c.is_missing() && !c.is_partial());
        assert_eq!(c.mean(), None);
        assert_eq!(c.text(CellStyle::PLAIN), "-");
        assert_eq!(c.text(CellStyle::LATEX), "--");
    }
}
