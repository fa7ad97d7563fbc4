//! TPE against random search on known functions: the best value each finds within the same
//! number of trials, averaged over 20 seeds (`cargo bench --bench search_samplers`).
//!
//! Not a timed test: it prints a table of the mean best value (and its standard error) per
//! sampler and function, the numbers docs/search.md quotes. The functions are the usual
//! ones of sampler comparisons: Branin in 2-D (minimum 0.397887) and Styblinski-Tang in 5-D
//! (minimum -39.166 per dimension, -195.83 in all).

use std::sync::Arc;

use asymflow::search::{propose, Observation};
use asymflow::spec::search::{Dim, Domain, Goal, Objective, SamplerKind, SearchSpec};
use asymflow::spec::source::SourceFile;
use asymflow::spec::Loc;

const SEEDS: u64 = 20;
const TRIALS: usize = 60;

fn loc() -> Loc {
    let file = Arc::new(SourceFile {
        path: "bench.toml".into(),
        text: String::new(),
    });
    Loc::new(&file, 0..0)
}

fn search(sampler: SamplerKind, seed: u64, ranges: &[(f64, f64)]) -> SearchSpec {
    SearchSpec {
        name: "bench".into(),
        loc: loc(),
        space: ranges
            .iter()
            .enumerate()
            .map(|(i, (lo, hi))| Dim {
                name: format!("x{i}"),
                stage: "f".into(),
                param: format!("x{i}"),
                domain: Domain::Uniform {
                    lo: *lo,
                    hi: *hi,
                    step: None,
                },
                loc: loc(),
            })
            .collect(),
        objective: Objective {
            stage: "f".into(),
            metric: "y".into(),
            goal: Goal::Min,
            loc: loc(),
        },
        sampler,
        seed,
        trials: TRIALS,
        parallel: 1,
        prune: None,
    }
}

fn branin(x: &[f64]) -> f64 {
    let (a, b, c) = (
        1.0,
        5.1 / (4.0 * std::f64::consts::PI.powi(2)),
        5.0 / std::f64::consts::PI,
    );
    let (r, s, t) = (6.0, 10.0, 1.0 / (8.0 * std::f64::consts::PI));
    a * (x[1] - b * x[0].powi(2) + c * x[0] - r).powi(2) + s * (1.0 - t) * x[0].cos() + s
}

fn styblinski_tang(x: &[f64]) -> f64 {
    x.iter()
        .map(|v| v.powi(4) - 16.0 * v.powi(2) + 5.0 * v)
        .sum::<f64>()
        / 2.0
}

/// The best value found in `TRIALS` sequential trials.
fn best_found(sampler: SamplerKind, seed: u64, ranges: &[(f64, f64)], f: fn(&[f64]) -> f64) -> f64 {
    let spec = search(sampler, seed, ranges);
    let mut history: Vec<Observation> = Vec::new();
    let mut best = f64::INFINITY;
    for trial in 0..TRIALS {
        let values = propose(&spec, trial, &history);
        let x: Vec<f64> = values.iter().map(|v| v.as_f64().unwrap()).collect();
        let y = f(&x);
        best = best.min(y);
        history.push(Observation {
            values,
            objective: y,
        });
    }
    best
}

/// A function's name, its box and the function.
type TestFunction = (&'static str, Vec<(f64, f64)>, fn(&[f64]) -> f64);

fn main() {
    let functions: [TestFunction; 2] = [
        ("branin (2-D)", vec![(-5.0, 10.0), (0.0, 15.0)], branin),
        (
            "styblinski-tang (5-D)",
            vec![(-5.0, 5.0); 5],
            styblinski_tang,
        ),
    ];
    println!("best value within {TRIALS} trials, mean ± standard error over {SEEDS} seeds");
    println!("| function | random | tpe | tpe better on |");
    println!("|---|---|---|---|");
    for (name, ranges, f) in functions {
        let run = |sampler| -> Vec<f64> {
            (0..SEEDS)
                .map(|seed| best_found(sampler, seed, &ranges, f))
                .collect()
        };
        let random = run(SamplerKind::Random);
        let tpe = run(SamplerKind::Tpe);
        let wins = random.iter().zip(&tpe).filter(|(r, t)| t < r).count();
        println!(
            "| {name} | {} | {} | {wins} of {SEEDS} seeds |",
            mean_se(&random),
            mean_se(&tpe)
        );
    }
}

fn mean_se(xs: &[f64]) -> String {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    format!("{mean:.3} ± {:.3}", (var / n).sqrt())
}
