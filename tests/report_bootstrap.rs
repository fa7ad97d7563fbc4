//! The bootstrap over queries of a one-draw cell (`bootstrap = { samples, level, seed }`):
//! the interval against an independent computation, deterministic under its seed, golden
//! files of every format, a report without it byte for byte what it was, and `evaluate`'s
//! per-query scores feeding it end to end.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use asymflow::kind::{Draw, InputArtifact, Inputs, Params, StageContext};
use asymflow::metrics::per_query::{PerQuery, FORMAT, PER_QUERY_OUTPUT};
use asymflow::report::bootstrap::{resample_means, Bootstrap};
use asymflow_tensor::registry;
use serde_json::{json, Value};

use crate::support::Project;

/// Twelve per-query APs and R@1 hits, and what the Python script below computes from them.
const APS: [f64; 12] = [
    0.91, 0.12, 0.55, 1.0, 0.33, 0.78, 0.05, 0.62, 0.47, 0.88, 0.21, 0.69,
];
const HITS: [f64; 12] = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0];

// The resamples and intervals, by an independent implementation in plain Python (SplitMix64
// written out, Python's left-to-right float sum, and the percentiles by the standard
// library's `statistics.quantiles(method="inclusive")`, Hyndman and Fan's type 7 as numpy's
// default); printed by:
//
//   import statistics
//   M = (1 << 64) - 1
//   def splitmix64(state):
//       while True:
//           state = (state + 0x9E3779B97F4A7C15) & M
//           z = state
//           z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
//           z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
//           yield z ^ (z >> 31)
//   def means(values, samples, seed):
//       rng, n = splitmix64(seed), len(values)
//       return [sum(values[(next(rng) * n) >> 64] for _ in range(n)) / n for _ in range(samples)]
//   aps = [0.91, 0.12, 0.55, 1.0, 0.33, 0.78, 0.05, 0.62, 0.47, 0.88, 0.21, 0.69]
//   hits = [1, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1]
//   for values in (aps, hits):
//       for seed in (0, 1):
//           m = means(values, 1000, seed)
//           q = statistics.quantiles(m, n=40, method="inclusive")
//           print(seed, repr(m[:3]), repr((q[0], q[38])))
const AP_MEANS_SEED_0: [f64; 3] = [0.6325, 0.4633333333333334, 0.5975];
const AP_INTERVAL_SEED_0: (f64, f64) = (0.37, 0.7316666666666667);
const AP_INTERVAL_SEED_1: (f64, f64) = (0.3815208333333333, 0.7133541666666667);
const HIT_MEANS_SEED_0: [f64; 3] = [0.75, 0.5, 0.6666666666666666];
const HIT_INTERVAL_SEED_0: (f64, f64) = (0.33333333333333337, 0.8333333333333334);

fn spec(seed: u64) -> Bootstrap {
    Bootstrap {
        samples: 1000,
        level: 0.95,
        seed,
    }
}

fn assert_near(got: (f64, f64), want: (f64, f64)) {
    assert!(
        (got.0 - want.0).abs() < 1e-12 && (got.1 - want.1).abs() < 1e-12,
        "{got:?} vs {want:?}"
    );
}

#[test]
fn the_interval_equals_an_independent_computation() {
    assert_eq!(resample_means(&APS, 1000, 0)[..3], AP_MEANS_SEED_0);
    assert_eq!(resample_means(&HITS, 1000, 0)[..3], HIT_MEANS_SEED_0);
    assert_near(spec(0).interval(&APS).unwrap(), AP_INTERVAL_SEED_0);
    assert_near(spec(1).interval(&APS).unwrap(), AP_INTERVAL_SEED_1);
    assert_near(spec(0).interval(&HITS).unwrap(), HIT_INTERVAL_SEED_0);
    assert_eq!(spec(0).interval(&[]), None);
}

#[test]
fn the_interval_is_deterministic_under_its_seed() {
    let a = spec(0).interval(&APS).unwrap();
    assert_eq!(
        spec(0).interval(&APS).unwrap(),
        a,
        "same seed, same interval"
    );
    assert_ne!(
        spec(1).interval(&APS).unwrap(),
        a,
        "another seed, other resamples"
    );
    // End to end: the same report twice gives the same bytes; another seed moves the ends.
    let dir = tempfile::tempdir().unwrap();
    let render = |name: &str, seed: u64| {
        let out = run_report(
            &dir.path().join(name),
            params(json!({"samples": 1000, "level": 0.95, "seed": seed})),
            inputs(dir.path()),
        );
        std::fs::read_to_string(out.join("results.csv")).unwrap()
    };
    let first = render("a", 0);
    assert_eq!(render("b", 0), first);
    assert_ne!(render("c", 7), first);
}

/// An evaluation of `stage` at `seed`, descending from `draws`.
fn eval(stage: &str, seed: Option<i64>, map: f64, draws: &[&str]) -> InputArtifact {
    InputArtifact {
        stage: stage.into(),
        kind: "evaluate".into(),
        binding: seed
            .map(|s| BTreeMap::from([("seed".to_string(), json!(s))]))
            .unwrap_or_default(),
        params: Params::default(),
        key: format!("{stage}-{seed:?}"),
        outputs: BTreeMap::from([("metrics.json".to_string(), PathBuf::from("m"))]),
        metrics: BTreeMap::from([("map".to_string(), map)]),
        draws: draws
            .iter()
            .map(|d| Draw {
                stage: d.split('[').next().unwrap().to_string(),
                instance: d.to_string(),
            })
            .collect(),
    }
}

/// Gives `artifact` a `per_query.json` of `aps` (its `map`'s per-query values).
fn with_per_query(dir: &Path, mut artifact: InputArtifact, aps: &[f64]) -> InputArtifact {
    let file = PerQuery {
        format: FORMAT,
        queries: aps.len(),
        index: (0..aps.len()).collect(),
        scores: BTreeMap::from([("map".to_string(), aps.to_vec())]),
    };
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(format!("{}-{}", artifact.key, PER_QUERY_OUTPUT));
    std::fs::write(&path, serde_json::to_string(&file).unwrap()).unwrap();
    artifact.outputs.insert(PER_QUERY_OUTPUT.into(), path);
    artifact
}

/// The resolution-asymmetry table of `report_uncertainty.rs` (a student per seed from a
/// teacher trained once; the network trained at the query resolution and the teacher on
/// both sides, once each), now with per-query scores where an evaluation wrote them: the
/// student's draws and the network trained at the query resolution have them, the teacher's
/// evaluation has none.
fn inputs(dir: &Path) -> Vec<InputArtifact> {
    let mut v = Vec::new();
    for (seed, map) in [0.566, 0.488, 0.513].into_iter().enumerate() {
        let student = format!("student[seed={seed}]");
        let e = eval(
            "eval-ts",
            Some(seed as i64),
            map,
            &["split", "teacher", &student],
        );
        v.push(with_per_query(dir, e, &[map - 0.1, map + 0.1]));
    }
    // TSYM's mean is 0.5, the recorded mAP.
    let tsym = eval("eval-tsym", None, 0.5, &["split", "teacher-q"]);
    v.push(with_per_query(dir, tsym, &TSYM));
    v.push(eval("eval-tasym", None, 0.2, &["split", "teacher"]));
    v
}

/// The per-query APs of the network trained at the query resolution: their mean is its mAP.
const TSYM: [f64; 12] = [
    0.93, 0.12, 0.55, 0.71, 0.33, 0.48, 0.05, 0.62, 0.47, 0.88, 0.21, 0.65,
];

/// `report_uncertainty.rs`' layout, with `bootstrap` when given.
fn params(bootstrap: Value) -> Value {
    let mut p = json!({
        "title": "Uncertainty",
        "metrics": ["map"],
        "ci": 0.95,
        "labels": {"eval-ts": "student asymmetric", "eval-tsym": "trained at r"},
        "paired": {"a": "eval-ts", "b": "eval-tsym"},
        "plot_xy": []
    });
    if !bootstrap.is_null() {
        p["bootstrap"] = bootstrap;
    }
    p
}

fn run_report(dir: &Path, params: Value, inputs: Vec<InputArtifact>) -> PathBuf {
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let params = Params(serde_json::from_value(params).unwrap());
    let inputs: Inputs = BTreeMap::from([("results".to_string(), inputs)]);
    let cancel = AtomicBool::new(false);
    let registry = registry();
    let mut ctx = StageContext::new(
        "table",
        &params,
        &inputs,
        out.clone(),
        dir,
        asymflow::kind::Device::Cpu,
        &cancel,
        None,
    );
    registry.runner("report").unwrap().run(&mut ctx).unwrap();
    drop(ctx);
    out
}

/// Compares `got` with the golden file `tests/fixtures/report/NAME`; `ASYMFLOW_BLESS=1`
/// rewrites the file instead.
fn golden(name: &str, got: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/report")
        .join(name);
    if std::env::var("ASYMFLOW_BLESS").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (ASYMFLOW_BLESS=1 writes it)", path.display()));
    assert_eq!(got, want, "{name} differs from its golden file");
}

const FORMATS: [&str; 5] = [
    "table.md",
    "table.csv",
    "results.csv",
    "table.tex",
    "report.html",
];

#[test]
fn golden_files_of_every_format_with_a_bootstrap() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_report(
        dir.path(),
        params(json!({"samples": 1000, "level": 0.95, "seed": 0})),
        inputs(dir.path()),
    );
    for file in FORMATS {
        let got = std::fs::read_to_string(out.join(file)).unwrap();
        golden(&format!("bootstrap/{file}"), &got);
    }
    // The one-draw cell with per-query scores: TSYM resampled.
    let (lo, hi) = spec(0).interval(&TSYM).unwrap();
    let md = std::fs::read_to_string(out.join("table.md")).unwrap();
    let cell = format!(
        "| trained at r | 50.0 [{:.1}, {:.1}]",
        lo * 100.0,
        hi * 100.0
    );
    assert!(md.contains(&cell), "{cell} in:\n{md}");
    for text in [
        "95% percentile bootstrap over 1,000 query resamples (bootstrap seed 0) of this one \
         draw: it covers the choice of queries, not training or any other random draw.",
        "mAP: `eval-tasym` wrote no per-query scores of it (`per_query.json`), so this one draw \
         has no bootstrap interval over its queries.",
    ] {
        for file in FORMATS.iter().filter(|f| **f != "results.csv") {
            let got = std::fs::read_to_string(out.join(file)).unwrap();
            let text = if *file == "table.tex" {
                text.replace('`', "")
                    .replace('%', "\\%")
                    .replace('_', "\\_")
            } else {
                text.to_string()
            };
            assert!(got.contains(&text), "{file} lacks `{text}`:\n{got}");
        }
    }
    let results = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert!(results.starts_with(
        "stage,metric,mean,std,n,expected,ci_low,ci_high,positive,boot_low,boot_high\n"
    ));
    assert!(
        results.contains(&format!("eval-tsym,map,0.5,,1,1,,,,{lo},{hi}\n")),
        "{results}"
    );
}

#[test]
fn a_report_without_bootstrap_is_unchanged_byte_for_byte() {
    // The same inputs, per-query files and all, under report_uncertainty.rs' layout: its
    // golden files, written before the bootstrap existed, hold.
    let dir = tempfile::tempdir().unwrap();
    for bootstrap in [Value::Null, json!(false)] {
        let out = run_report(dir.path(), params(bootstrap), inputs(dir.path()));
        for file in FORMATS {
            let got = std::fs::read_to_string(out.join(file)).unwrap();
            golden(&format!("uncertainty/{file}"), &got);
        }
    }
}

#[test]
fn per_query_scores_that_do_not_give_the_metric_are_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let wrong = with_per_query(dir.path(), eval("eval-x", None, 0.5, &[]), &[0.9, 0.9, 0.9]);
    let params = Params(
        serde_json::from_value(json!({"metrics": ["map"], "bootstrap": true, "plot_xy": []}))
            .unwrap(),
    );
    let inputs: Inputs = BTreeMap::from([("results".to_string(), vec![wrong])]);
    let cancel = AtomicBool::new(false);
    let registry = registry();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let mut ctx = StageContext::new(
        "table",
        &params,
        &inputs,
        out,
        dir.path(),
        asymflow::kind::Device::Cpu,
        &cancel,
        None,
    );
    let err = registry
        .runner("report")
        .unwrap()
        .run(&mut ctx)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`eval-x`") && err.contains("average 0.9") && err.contains("is 0.5"),
        "{err}"
    );
}

/// Writes `embeddings` [rows x 2] with `labels` as an importable file.
fn write_embeddings(p: &Project, name: &str, rows: &[[f32; 2]], labels: &[i64]) {
    let flat: Vec<f32> = rows.iter().flatten().copied().collect();
    let emb = tch::Tensor::from_slice(&flat).view([rows.len() as i64, 2]);
    let labels = tch::Tensor::from_slice(labels);
    tch::Tensor::write_safetensors(
        &[("embeddings", &emb), ("labels", &labels)],
        p.path().join(name),
    )
    .unwrap();
}

const PIPELINE: &str = r#"
[stages.queries]
kind = "import"
params = { file = "queries.safetensors" }

[stages.gallery]
kind = "import"
params = { file = "gallery.safetensors" }

[stages.eval]
kind = "evaluate"
params = { ks = [1] }
inputs = { query = "queries", database = "gallery" }

[stages.table]
kind = "report"
params = { metrics = ["map", "r1"], bootstrap = { samples = 200, seed = 3 }, plot_xy = [] }
inputs = { results = "eval" }
"#;

#[test]
fn an_evaluation_writes_per_query_scores_and_a_report_resamples_them() {
    let p = Project::new();
    // Gallery: class 1 at (1, 0), class 2 at (0, 1), class 3 at (-1, 0). Queries: class 1
    // nearest its own item (AP 1, a hit), class 2 nearest class 1's item with its own second
    // (standard AP 1/2, no hit at 1), class 3 nearest its own (AP 1, a hit), class 9 with no
    // item in the gallery (left out of every mean).
    write_embeddings(
        &p,
        "queries.safetensors",
        &[[1.0, 0.0], [0.9, 0.5], [-1.0, 0.1], [0.0, -1.0]],
        &[1, 2, 3, 9],
    );
    write_embeddings(
        &p,
        "gallery.safetensors",
        &[[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]],
        &[1, 2, 3],
    );
    p.write("pipelines/boot.toml", PIPELINE);
    let out = p.run(&["run", "pipelines/boot.toml"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = std::fs::read_to_string(p.path().join("reports/boot/table/results.csv")).unwrap();
    let spec = Bootstrap {
        samples: 200,
        level: 0.95,
        seed: 3,
    };
    // Trapezoidal AP of a positive at rank 1: (0/1 + 1/2) / 2 = 1/4.
    let map = [1.0, 0.25, 1.0];
    let r1 = [1.0, 0.0, 1.0];
    for (metric, values) in [("map", &map[..]), ("r1", &r1[..])] {
        let mean = values.iter().sum::<f64>() / 3.0;
        let (lo, hi) = spec.interval(values).unwrap();
        let line = format!("eval,{metric},{mean},,1,1,,,,{lo},{hi}\n");
        assert!(results.contains(&line), "{line} in:\n{results}");
    }
    let md = std::fs::read_to_string(p.path().join("reports/boot/table/table.md")).unwrap();
    assert!(
        md.contains("95% percentile bootstrap over 200 query resamples (bootstrap seed 3)"),
        "{md}"
    );
}
