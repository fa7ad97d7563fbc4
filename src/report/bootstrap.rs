//! A percentile bootstrap over queries: the measurement noise of a single evaluation.
//!
//! A cell that holds one draw (a network trained once) prints no spread, and a reader may take
//! its number as exact. It is not: the mAP of 1,000 queries would move if another 1,000 had
//! been asked. With `bootstrap = { samples = 1000, level = 0.95, seed = 0 }` such a cell
//! prints the percentile bootstrap interval of its metric over its evaluation's queries
//! (`per_query.json`, [`crate::metrics::per_query`]): `samples` times, draw n of the n queries
//! with replacement and recompute the metric exactly as it is computed (the mean of the drawn
//! queries' values, summed in draw order, divided by n); the interval is the
//! `(1 - level) / 2` and `(1 + level) / 2` percentiles of those means. It covers which queries
//! were asked, not training or any other random draw, and the cell's footnote says so.
//!
//! Deterministic under its seed, by a documented generator so that anyone can redraw the same
//! resamples: SplitMix64 (Steele, Lea and Flood 2014; the seeder of the xoshiro generators),
//! state starting at `seed`, and each index `(x * n) >> 64` of a 64-bit output `x` (Lemire's
//! multiply-shift; its bias is below n / 2^64). Resample b draws indices b·n .. (b+1)·n - 1 of
//! that one stream. Percentiles interpolate linearly between order statistics, at
//! `(samples - 1) · p` (numpy's default, Hyndman and Fan's type 7). Every cell resamples from
//! the same seed, so the cells of one evaluation (its mAP and its R@1) share their resamples.

use serde_json::Value;

use super::error::ReportError;

/// The bootstrap of one-draw cells (`bootstrap`). See the module docs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bootstrap {
    /// How many resamples of the queries.
    pub samples: usize,
    /// The interval's level (0.95: the 2.5th and 97.5th percentiles).
    pub level: f64,
    /// The generator's seed.
    pub seed: u64,
}

/// The fewest and most resamples `samples` accepts.
const SAMPLES: (usize, usize) = (100, 1_000_000);

/// The default number of resamples.
const DEFAULT_SAMPLES: usize = 1000;

impl Bootstrap {
    /// Reads `bootstrap`: `false` (none), `true` (every default) or a table of `samples`
    /// (default 1000), `level` (default the table's `ci`, else 0.95) and `seed` (default 0).
    pub fn parse(value: &Value, ci: Option<f64>) -> Result<Option<Bootstrap>, ReportError> {
        let example = "e.g. `bootstrap = { samples = 1000, level = 0.95, seed = 0 }`, or false";
        let fields = match value {
            Value::Bool(false) | Value::Null => return Ok(None),
            Value::Bool(true) => serde_json::Map::new(),
            Value::Object(fields) => fields.clone(),
            other => {
                return Err(ReportError::layout(
                    "bootstrap",
                    format!("{other} is not a bootstrap; write a table, {example}"),
                ))
            }
        };
        if let Some(unknown) = fields
            .keys()
            .find(|k| !["samples", "level", "seed"].contains(&k.as_str()))
        {
            return Err(ReportError::layout(
                "bootstrap",
                format!("unknown field `{unknown}`; the fields are samples, level and seed"),
            ));
        }
        Ok(Some(Bootstrap {
            samples: samples(fields.get("samples"))?,
            level: level(fields.get("level"), ci)?,
            seed: seed(fields.get("seed"))?,
        }))
    }

    /// The percentile interval of the mean of `values` over resampled queries, or `None` when
    /// there are no values.
    pub fn interval(&self, values: &[f64]) -> Option<(f64, f64)> {
        if values.is_empty() {
            return None;
        }
        let mut means = resample_means(values, self.samples, self.seed);
        means.sort_by(f64::total_cmp);
        Some((
            percentile(&means, (1.0 - self.level) / 2.0),
            percentile(&means, (1.0 + self.level) / 2.0),
        ))
    }

    /// What a cell's interval covers, for its footnote: "[lo, hi]: 95% percentile bootstrap
    /// over 1,000 query resamples (seed 0) of this one draw: ...".
    pub fn footnote(&self) -> String {
        format!(
            "[lo, hi]: {}% percentile bootstrap over {} query resamples (bootstrap seed {}) of \
             this one draw: it covers the choice of queries, not training or any other random draw.",
            (self.level * 1e6).round() / 1e4,
            thousands(self.samples),
            self.seed
        )
    }
}

fn samples(value: Option<&Value>) -> Result<usize, ReportError> {
    let Some(value) = value else {
        return Ok(DEFAULT_SAMPLES);
    };
    match value.as_u64() {
        Some(n) if (SAMPLES.0 as u64..=SAMPLES.1 as u64).contains(&n) => Ok(n as usize),
        _ => Err(ReportError::layout(
            "bootstrap.samples",
            format!(
                "{value} is not a number of resamples; write a whole number from {} to {}, e.g. 1000",
                SAMPLES.0,
                thousands(SAMPLES.1)
            ),
        )),
    }
}

fn level(value: Option<&Value>, ci: Option<f64>) -> Result<f64, ReportError> {
    let Some(value) = value else {
        return Ok(ci.unwrap_or(0.95));
    };
    match value.as_f64() {
        Some(level) if level > 0.0 && level < 1.0 => Ok(level),
        _ => Err(ReportError::layout(
            "bootstrap.level",
            format!("{value} is not a confidence level; write one between 0 and 1, e.g. 0.95"),
        )),
    }
}

fn seed(value: Option<&Value>) -> Result<u64, ReportError> {
    let Some(value) = value else {
        return Ok(0);
    };
    value.as_u64().ok_or_else(|| {
        ReportError::layout(
            "bootstrap.seed",
            format!("{value} is not a seed; write a whole number of 0 or more, e.g. 0"),
        )
    })
}

/// `1000000` as `1,000,000`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// SplitMix64: the generator whose stream the resamples are drawn from.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// An index below `n`: the high 64 bits of `x * n`.
    fn index(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

/// The mean of each of `samples` resamples (n of the n `values`, with replacement), in the
/// order they are drawn: each summed in draw order and divided by n, as the metric is.
pub fn resample_means(values: &[f64], samples: usize, seed: u64) -> Vec<f64> {
    let n = values.len();
    let mut rng = SplitMix64(seed);
    (0..samples)
        .map(|_| (0..n).map(|_| values[rng.index(n)]).sum::<f64>() / n as f64)
        .collect()
}

/// The `p` quantile of ascending `sorted`, interpolating linearly at `(len - 1) · p`.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn splitmix64_gives_its_known_outputs() {
        // The first outputs of SplitMix64 from state 0, as Vigna's reference splitmix64.c
        // gives them (https://prng.di.unimi.it/splitmix64.c).
        let mut rng = SplitMix64(0);
        let first: Vec<u64> = (0..4).map(|_| rng.next()).collect();
        assert_eq!(
            first,
            vec![
                0xE220_A839_7B1D_CDAF,
                0x6E78_9E6A_A1B9_65F4,
                0x06C4_5D18_8009_454F,
                0xF88B_B8A8_724C_81EC
            ]
        );
    }

    #[test]
    fn percentiles_interpolate_like_numpys_default() {
        // np.percentile([1, 2, 3, 4], [25, 50, 90]) = [1.75, 2.5, 3.7]
        let sorted = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&sorted, 0.25), 1.75);
        assert_eq!(percentile(&sorted, 0.5), 2.5);
        assert!((percentile(&sorted, 0.9) - 3.7).abs() < 1e-12);
        assert_eq!(percentile(&sorted, 1.0), 4.0);
    }

    #[test]
    fn parsing_takes_defaults_and_names_what_is_wrong() {
        assert_eq!(Bootstrap::parse(&json!(false), None).unwrap(), None);
        assert_eq!(
            Bootstrap::parse(&json!(true), Some(0.9)).unwrap(),
            Some(Bootstrap {
                samples: 1000,
                level: 0.9,
                seed: 0
            })
        );
        let err = Bootstrap::parse(&json!({"samples": 10}), None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bootstrap.samples") && err.contains("100 to 1,000,000"),
            "{err}"
        );
        let err = Bootstrap::parse(&json!({"level": 95}), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("bootstrap.level"), "{err}");
        let err = Bootstrap::parse(&json!({"seeds": 1}), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `seeds`"), "{err}");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(999), "999");
    }
}
