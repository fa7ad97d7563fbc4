//! Grid and random sampling, and [`propose`], which picks the sampler a search names.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use crate::spec::search::{Dim, Domain, SamplerKind, SearchSpec};

/// A finished trial as a sampler sees it: its values (in the order of the space) and its
/// objective.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// One value per dimension.
    pub values: Vec<Value>,
    /// The objective (the mean over the instances the search does not own).
    pub objective: f64,
}

/// The values of trial number `trial` (0-based), given the finished trials before its batch.
pub fn propose(search: &SearchSpec, trial: usize, history: &[Observation]) -> Vec<Value> {
    let mut rng = trial_rng(search.seed, trial);
    match search.sampler {
        SamplerKind::Grid => grid_point(&search.space, trial),
        SamplerKind::Random => search
            .space
            .iter()
            .map(|d| sample_uniform(&d.domain, &mut rng))
            .collect(),
        SamplerKind::Tpe => {
            super::tpe::propose(&search.space, search.objective.goal, history, &mut rng)
        }
    }
}

/// The random stream of one trial: its own, so a trial's values do not depend on how many
/// trials were proposed before it in this process.
pub(crate) fn trial_rng(seed: u64, trial: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(trial as u64);
    rng
}

/// The `n`-th point of the grid over `dims` (the last dimension varies fastest). Callers keep
/// `n` below the grid's size ([`crate::spec::search`] checks `trials` against it).
fn grid_point(dims: &[Dim], n: usize) -> Vec<Value> {
    let points: Vec<Vec<Value>> = dims
        .iter()
        .map(|d| d.domain.points().unwrap_or_default())
        .collect();
    let mut rest = n;
    let mut out = vec![Value::Null; dims.len()];
    for (i, p) in points.iter().enumerate().rev() {
        if p.is_empty() {
            continue;
        }
        out[i] = p[rest % p.len()].clone();
        rest /= p.len();
    }
    out
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

    fn dim(name: &str, domain: Domain) -> Dim {
        let file = std::sync::Arc::new(crate::spec::source::SourceFile {
            path: "t.toml".into(),
            text: String::new(),
        });
        Dim {
            name: name.into(),
            stage: "s".into(),
            param: name.into(),
            domain,
            loc: crate::spec::Loc::new(&file, 0..0),
        }
    }

    #[test]
    fn the_grid_walks_every_point_once_in_order() {
        let dims = [
            dim("a", Domain::Choice(vec![Value::from(1), Value::from(2)])),
            dim(
                "b",
                Domain::Int {
                    lo: 0,
                    hi: 4,
                    step: 2,
                },
            ),
        ];
        let points: Vec<Vec<Value>> = (0..6).map(|n| grid_point(&dims, n)).collect();
        let expected: Vec<Vec<Value>> = [(1, 0), (1, 2), (1, 4), (2, 0), (2, 2), (2, 4)]
            .iter()
            .map(|(a, b)| vec![Value::from(*a), Value::from(*b)])
            .collect();
        assert_eq!(points, expected);
    }

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
