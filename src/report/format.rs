//! How a number in a report reads.
//!
//! Retrieval metrics are stored as fractions (mAP 0.412) but papers print percentages (41.2),
//! while costs such as GFLOPs print as they are. A format is written as text in a pipeline so
//! it fits one parameter: `"percent:1"` (times 100, one decimal) or `"fixed:3"` (as is, three
//! decimals). The standard deviation is printed in the same format as the mean.

use std::fmt;

use super::error::ReportError;
use crate::metrics::registry;

/// How a metric's mean and standard deviation are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumberFormat {
    /// The value times 100, with this many decimals (`"percent:1"`: 0.4123 reads 41.2).
    Percent(usize),
    /// The value as it is, with this many decimals (`"fixed:2"`: 1.8234 reads 1.82).
    Fixed(usize),
}

impl NumberFormat {
    /// Parses `"percent:D"` or `"fixed:D"` (D decimals, 0 to 9; `"percent"` alone means one
    /// decimal, `"fixed"` alone three). `param` names the parameter in the error message.
    pub fn parse(text: &str, param: &str) -> Result<Self, ReportError> {
        let (kind, decimals) = match text.split_once(':') {
            Some((kind, d)) => {
                let decimals =
                    d.trim()
                        .parse::<usize>()
                        .ok()
                        .filter(|d| *d <= 9)
                        .ok_or_else(|| {
                            ReportError::layout(
                        param,
                        format!("`{text}`: the decimals after `:` must be a whole number 0 to 9"),
                    )
                        })?;
                (kind.trim(), Some(decimals))
            }
            None => (text.trim(), None),
        };
        match kind {
            "percent" => Ok(NumberFormat::Percent(decimals.unwrap_or(1))),
            "fixed" => Ok(NumberFormat::Fixed(decimals.unwrap_or(3))),
            _ => Err(ReportError::layout(
                param,
                format!(
                    "unknown number format `{text}`; write \"percent:1\" (fractions as \
                     percentages, one decimal) or \"fixed:3\" (as is, three decimals)"
                ),
            )),
        }
    }

    /// The format a metric gets when the layout names none: the registry's
    /// ([`crate::metrics::registry`]: costs with two decimals, counts as whole numbers, the BCT
    /// criterion (1 or 0 per seed, so its mean is the share of seeds where it holds) with two
    /// decimals), and for fractions (mAP, R@k, TAR, metrics the registry does not know)
    /// `fallback`.
    pub(crate) fn default_for(metric: &str, fallback: NumberFormat) -> NumberFormat {
        match registry::format(metric) {
            registry::Format::Fraction => fallback,
            registry::Format::Fixed(d) => NumberFormat::Fixed(d),
        }
    }

    /// `value` printed in this format (no unit sign).
    pub fn number(&self, value: f64) -> String {
        match *self {
            NumberFormat::Percent(d) => format!("{:.*}", d, value * 100.0),
            NumberFormat::Fixed(d) => format!("{:.*}", d, value),
        }
    }
}

impl fmt::Display for NumberFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NumberFormat::Percent(d) => write!(f, "percent:{d}"),
            NumberFormat::Fixed(d) => write!(f, "fixed:{d}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_kinds_with_and_without_decimals() {
        assert_eq!(
            NumberFormat::parse("percent:1", "format").unwrap(),
            NumberFormat::Percent(1)
        );
        assert_eq!(
            NumberFormat::parse("percent", "format").unwrap(),
            NumberFormat::Percent(1)
        );
        assert_eq!(
            NumberFormat::parse("fixed:4", "format").unwrap(),
            NumberFormat::Fixed(4)
        );
        assert_eq!(
            NumberFormat::parse("fixed", "format").unwrap(),
            NumberFormat::Fixed(3)
        );
    }

    #[test]
    fn rejects_unknown_kinds_and_bad_decimals_with_a_fix() {
        let err = NumberFormat::parse("percentage:1", "format")
            .unwrap_err()
            .to_string();
        assert!(err.contains("format") && err.contains("percent:1"), "{err}");
        let err = NumberFormat::parse("fixed:x", "formats.gflops")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("formats.gflops") && err.contains("0 to 9"),
            "{err}"
        );
    }

    #[test]
    fn prints_percent_scaled_and_fixed_as_is() {
        assert_eq!(NumberFormat::Percent(1).number(0.41234), "41.2");
        assert_eq!(NumberFormat::Percent(2).number(0.003), "0.30");
        assert_eq!(NumberFormat::Fixed(2).number(1.8251), "1.83");
        assert_eq!(NumberFormat::Fixed(0).number(12.0), "12");
    }

    #[test]
    fn costs_and_counts_are_not_percentages_by_default() {
        let fallback = NumberFormat::Percent(1);
        assert_eq!(
            NumberFormat::default_for("query_gflops", fallback),
            NumberFormat::Fixed(2)
        );
        assert_eq!(
            NumberFormat::default_for("no_positive", fallback),
            NumberFormat::Fixed(0)
        );
        assert_eq!(NumberFormat::default_for("map", fallback), fallback);
    }
}
