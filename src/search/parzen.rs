//! The density estimators of TPE, as Optuna's `_ParzenEstimator` builds them (univariate,
//! `consider_prior = True`, `prior_weight = 1.0`, `consider_magic_clip = True`,
//! `consider_endpoints = False`):
//!
//! - a numerical parameter is a mixture of normals truncated to `[low, high]` (widened by half
//!   a step on each side for a quantised one, whose probability is then the mass of its
//!   bucket): one kernel per observation, centred on it, its width the larger distance to its
//!   neighbours (the prior's centre among them, the range's ends only where Optuna uses them),
//!   clipped to `[range / min(100, 1 + kernels), range]`, plus the prior kernel (centre of the
//!   range, width the range);
//! - a categorical parameter is a mixture of one distribution per observation (prior weight
//!   spread over every choice, plus one on the observed choice) and a uniform prior kernel;
//! - the kernels' weights are Optuna's `default_weights`: equal below 25 observations, then the
//!   oldest ones ramped down linearly, and the prior's weight 1, all normalised.

use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

/// A parameter's internal space: a (possibly quantised) interval, or `n` categories.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Space {
    /// `[low, high]`, quantised to `low + k * step` when a step is given.
    Numeric {
        /// Lower end.
        low: f64,
        /// Upper end.
        high: f64,
        /// Quantum.
        step: Option<f64>,
    },
    /// Categories `0..n`.
    Categorical(usize),
}

/// A Parzen estimator over one parameter.
#[derive(Debug, Clone)]
pub(crate) enum Parzen {
    /// Truncated normals.
    Numeric {
        /// Normalised kernel weights.
        weights: Vec<f64>,
        /// Centres.
        mus: Vec<f64>,
        /// Widths.
        sigmas: Vec<f64>,
        /// Truncation (widened by half a step for a quantised space).
        low: f64,
        /// Truncation.
        high: f64,
        /// The quantum, if any.
        step: Option<f64>,
        /// The unwidened ends, for rounding samples.
        range: (f64, f64),
    },
    /// Categorical kernels: `probs[k][c]`.
    Categorical {
        /// Normalised kernel weights.
        weights: Vec<f64>,
        /// Each kernel's distribution over the categories.
        probs: Vec<Vec<f64>>,
    },
}

const PRIOR_WEIGHT: f64 = 1.0;

/// Optuna's `default_weights(n)`.
pub(crate) fn default_weights(n: usize) -> Vec<f64> {
    if n < 25 {
        return vec![1.0; n];
    }
    let ramp = n - 25;
    let mut w: Vec<f64> = (0..ramp)
        .map(|i| {
            if ramp == 1 {
                1.0 / n as f64
            } else {
                1.0 / n as f64 + (1.0 - 1.0 / n as f64) * i as f64 / (ramp - 1) as f64
            }
        })
        .collect();
    w.extend(std::iter::repeat_n(1.0, 25));
    w
}

impl Parzen {
    /// The estimator of `observations` (in trial order, internal coordinates) over `space`.
    pub fn new(observations: &[f64], space: Space) -> Parzen {
        let mut weights = default_weights(observations.len());
        weights.push(PRIOR_WEIGHT);
        let total: f64 = weights.iter().sum();
        weights.iter_mut().for_each(|w| *w /= total);
        match space {
            Space::Categorical(n) => {
                let kernels = observations.len() + 1;
                let mut probs = Vec::with_capacity(kernels);
                for &o in observations {
                    let mut p = vec![PRIOR_WEIGHT / kernels as f64; n];
                    p[(o as usize).min(n - 1)] += 1.0;
                    let sum: f64 = p.iter().sum();
                    probs.push(p.into_iter().map(|x| x / sum).collect());
                }
                probs.push(vec![1.0 / n as f64; n]);
                Parzen::Categorical { weights, probs }
            }
            Space::Numeric { low, high, step } => {
                let half = step.unwrap_or(0.0) / 2.0;
                let sigmas = sigmas(observations, low, high, step.unwrap_or(0.0));
                let mut mus = observations.to_vec();
                let mut sig = sigmas;
                mus.push(0.5 * (low + high));
                sig.push(high - low + step.unwrap_or(0.0));
                Parzen::Numeric {
                    weights,
                    mus,
                    sigmas: sig,
                    low: low - half,
                    high: high + half,
                    step,
                    range: (low, high),
                }
            }
        }
    }

    /// One sample: a kernel chosen by weight, then a draw from it.
    pub fn sample(&self, rng: &mut impl Rng) -> f64 {
        match self {
            Parzen::Categorical { weights, probs } => {
                let k = pick(weights, rng);
                pick(&probs[k], rng) as f64
            }
            Parzen::Numeric {
                weights,
                mus,
                sigmas,
                low,
                high,
                step,
                range,
            } => {
                let k = pick(weights, rng);
                let x = truncated_normal(mus[k], sigmas[k], *low, *high, rng);
                match step {
                    Some(s) => (range.0 + ((x - range.0) / s).round() * s).clamp(range.0, range.1),
                    None => x,
                }
            }
        }
    }

    /// The log density (log probability for a quantised or categorical space) at `x`.
    pub(crate) fn log_pdf(&self, x: f64) -> f64 {
        match self {
            Parzen::Categorical { weights, probs } => {
                let c = x as usize;
                weights
                    .iter()
                    .zip(probs)
                    .map(|(w, p)| w * p[c])
                    .sum::<f64>()
                    .ln()
            }
            Parzen::Numeric {
                weights,
                mus,
                sigmas,
                low,
                high,
                step,
                ..
            } => {
                let mut total = 0.0;
                for ((w, mu), s) in weights.iter().zip(mus).zip(sigmas) {
                    let z = normal_cdf((high - mu) / s) - normal_cdf((low - mu) / s);
                    let mass = match step {
                        Some(q) => {
                            let a = (x - q / 2.0).max(*low);
                            let b = (x + q / 2.0).min(*high);
                            normal_cdf((b - mu) / s) - normal_cdf((a - mu) / s)
                        }
                        None => {
                            (-0.5 * ((x - mu) / s).powi(2)).exp()
                                / (s * (2.0 * std::f64::consts::PI).sqrt())
                        }
                    };
                    total += w * mass / z.max(f64::MIN_POSITIVE);
                }
                total.max(f64::MIN_POSITIVE).ln()
            }
        }
    }
}

/// Optuna's univariate kernel widths (`_calculate_numerical_distributions`).
fn sigmas(mus: &[f64], low: f64, high: f64, step: f64) -> Vec<f64> {
    let n = mus.len();
    if n == 0 {
        return vec![];
    }
    let mut with_prior: Vec<(f64, usize)> = mus.iter().copied().zip(0..).collect();
    with_prior.push((0.5 * (low + high), n));
    with_prior.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut ends = Vec::with_capacity(n + 3);
    ends.push(low - step / 2.0);
    ends.extend(with_prior.iter().map(|(m, _)| *m));
    ends.push(high + step / 2.0);
    let m = with_prior.len();
    let mut sorted: Vec<f64> = (1..=m)
        .map(|i| (ends[i] - ends[i - 1]).max(ends[i + 1] - ends[i]))
        .collect();
    if ends.len() >= 4 {
        sorted[0] = ends[2] - ends[1];
        sorted[m - 1] = ends[m] - ends[m - 1];
    }
    let kernels = (n + 1) as f64;
    let max_sigma = high - low + step;
    let min_sigma = max_sigma / (1.0 + kernels).min(100.0);
    let mut out = vec![0.0; n];
    for (pos, &(_, original)) in with_prior.iter().enumerate() {
        if original < n {
            out[original] = sorted[pos].clamp(min_sigma, max_sigma);
        }
    }
    out
}

/// An index drawn with probability proportional to `weights`.
fn pick(weights: &[f64], rng: &mut impl Rng) -> usize {
    let total: f64 = weights.iter().sum();
    let mut u = rng.random::<f64>() * total;
    for (i, w) in weights.iter().enumerate() {
        if u < *w {
            return i;
        }
        u -= w;
    }
    weights.len() - 1
}

/// A normal draw truncated to `[low, high]`, by rejection (every kernel's centre is in the
/// range and its width at most the range's, so at least a third of the draws land), clamped
/// after a bounded number of tries so a pathological kernel cannot loop.
fn truncated_normal(mu: f64, sigma: f64, low: f64, high: f64, rng: &mut impl Rng) -> f64 {
    for _ in 0..1000 {
        let z: f64 = StandardNormal.sample(rng);
        let x = mu + sigma * z;
        if (low..=high).contains(&x) {
            return x;
        }
    }
    mu.clamp(low, high)
}

/// The standard normal CDF.
pub(crate) fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// The complementary error function (Numerical Recipes' `erfcc`, relative error below
/// 1.2e-7 everywhere).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.26551223
            + t * (1.00002368
                + t * (0.37409196
                    + t * (0.09678418
                        + t * (-0.18628806
                            + t * (0.27886807
                                + t * (-1.13520398
                                    + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_follow_optunas_default_weights() {
        assert_eq!(default_weights(3), vec![1.0; 3]);
        let w = default_weights(30);
        assert_eq!(w.len(), 30);
        assert!((w[0] - 1.0 / 30.0).abs() < 1e-12);
        assert!((w[4] - 1.0).abs() < 1e-12);
        assert!(w[5..].iter().all(|x| *x == 1.0));
    }

    #[test]
    fn the_cdf_is_accurate() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.0) - 0.841344746).abs() < 1e-6);
        assert!((normal_cdf(-2.0) - 0.022750132).abs() < 1e-6);
    }

    #[test]
    fn a_numeric_estimator_integrates_to_one_and_samples_in_range() {
        let p = Parzen::new(
            &[0.1, 0.2, 0.9],
            Space::Numeric {
                low: 0.0,
                high: 1.0,
                step: None,
            },
        );
        let n = 10_000;
        let integral: f64 = (0..n)
            .map(|i| p.log_pdf((i as f64 + 0.5) / n as f64).exp() / n as f64)
            .sum();
        assert!((integral - 1.0).abs() < 1e-3, "{integral}");
        let mut rng = super::super::random::trial_rng(0, 0);
        for _ in 0..1000 {
            let x = p.sample(&mut rng);
            assert!((0.0..=1.0).contains(&x));
        }
    }

    #[test]
    fn a_quantised_estimator_sums_to_one_over_its_points() {
        let p = Parzen::new(
            &[2.0, 4.0],
            Space::Numeric {
                low: 0.0,
                high: 8.0,
                step: Some(2.0),
            },
        );
        let total: f64 = [0.0, 2.0, 4.0, 6.0, 8.0]
            .iter()
            .map(|x| p.log_pdf(*x).exp())
            .sum();
        assert!((total - 1.0).abs() < 1e-6, "{total}");
        let c = Parzen::new(&[1.0, 1.0], Space::Categorical(3));
        let total: f64 = (0..3).map(|x| c.log_pdf(x as f64).exp()).sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
        assert!(c.log_pdf(1.0) > c.log_pdf(0.0));
    }
}
