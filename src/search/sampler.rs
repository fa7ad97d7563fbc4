//! Grid sampling, and [`propose`], which picks the sampler a search names (random draws are
//! [`super::random`]'s, TPE is [`super::tpe`]).

use serde_json::Value;

use super::random::{sample_uniform, trial_rng};
use super::Observation;
use crate::spec::search::{Dim, SamplerKind, SearchSpec};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::search::Domain;

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
}
