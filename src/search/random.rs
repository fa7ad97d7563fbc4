//! Random values of a search's dimensions: each trial's own random stream, uniform draws
//! (log-uniform for `log_uniform`), and a value from a sampler's internal coordinate, rounded
//! to six significant digits so a trial's key never depends on the last bit of a platform's
//! `exp`. The random sampler is these draws; TPE ([`super::tpe`]) draws its first trials and
//! its candidates with them.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use crate::spec::search::Domain;

/// The random stream of one trial: its own, so a trial's values do not depend on how many
/// trials were proposed before it in this process.
pub(crate) fn trial_rng(seed: u64, trial: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(trial as u64);
    rng
}

/// One value drawn uniformly from `domain` (log-uniformly for `log_uniform`).
pub(crate) fn sample_uniform(domain: &Domain, rng: &mut impl Rng) -> Value {
    match domain {
        Domain::Uniform { lo, hi, step } => {
            from_internal(domain, lo + rng.random::<f64>() * (hi - lo), *step)
        }
        Domain::LogUniform { lo, hi } => from_internal(
            domain,
            lo.ln() + rng.random::<f64>() * (hi.ln() - lo.ln()),
            None,
        ),
        Domain::Int { .. } | Domain::Choice(_) => {
            let points = domain.points().unwrap_or_default();
            points[rng.random_range(0..points.len())].clone()
        }
    }
}

/// A dimension's value from its internal coordinate (the logarithm for `log_uniform`, the
/// value for the others; an index for a choice).
pub(crate) fn from_internal(domain: &Domain, x: f64, step: Option<f64>) -> Value {
    match domain {
        Domain::Uniform { lo, hi, .. } => {
            let x = match step {
                Some(s) => lo + ((x - lo) / s).round() * s,
                None => x,
            };
            Value::from(round6(x.clamp(*lo, *hi)))
        }
        Domain::LogUniform { lo, hi } => Value::from(round6(x.exp()).clamp(*lo, *hi)),
        Domain::Int { lo, hi, step } => {
            let k = ((x - *lo as f64) / *step as f64).round() as i64;
            Value::from((lo + k * step).clamp(*lo, *hi))
        }
        Domain::Choice(values) => values[(x as usize).min(values.len() - 1)].clone(),
    }
}

/// `x` to six significant digits, so a trial's value (and so its key) is the same on every
/// platform even when `exp` differs in its last bits, and labels stay readable.
pub(crate) fn round6(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    format!("{x:.5e}").parse().unwrap_or(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_draws_stay_in_their_domain_and_respect_the_step() {
        let mut rng = trial_rng(3, 0);
        for _ in 0..200 {
            let v = sample_uniform(&Domain::LogUniform { lo: 1e-4, hi: 1e-2 }, &mut rng);
            let x = v.as_f64().unwrap();
            assert!((1e-4..=1e-2).contains(&x), "{x}");
            let v = sample_uniform(
                &Domain::Uniform {
                    lo: 0.0,
                    hi: 1.0,
                    step: Some(0.25),
                },
                &mut rng,
            );
            let x = v.as_f64().unwrap();
            assert_eq!((x * 4.0).fract(), 0.0, "{x}");
        }
    }

    #[test]
    fn rounding_keeps_six_significant_digits() {
        assert_eq!(round6(0.000123456789), 0.000123457);
        assert_eq!(round6(1234567.0), 1234570.0);
    }
}
