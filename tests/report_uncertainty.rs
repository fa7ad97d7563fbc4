//! What a report's numbers cover: the variation footnote (a stochastic stage upstream that ran
//! once for every value of a cell is named), `over` across several axes, Student-t intervals
//! and paired differences checked against SciPy, an update gain whose failing seeds are named,
//! and golden files of every format.
//!
//! The footnote is tested end to end through the `asymflow` binary on a two-level pipeline of
//! the engine's `test-train` kind (a stand-in teacher feeding stand-in students); the rest on
//! hand-made results through the `report` kind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use asymflow::kind::{Draw, InputArtifact, Inputs, Params, StageContext};
use asymflow_tensor::registry;
use serde_json::{json, Value};

use crate::support::Project;

/// A teacher (seeded by `TEACHER_SEED`) and one student per seed distilled from it.
const TWO_LEVEL: &str = r#"
[pipeline]
name = "two-level"

[sweep]
seed = [0, 1, 2]

[stages.teacher]
kind = "test-train"
params = { value = 0.5, seed = TEACHER_SEED, epochs = 2 }

[stages.student]
kind = "test-train"
inputs = { teacher = "teacher" }
params = { value = 0.3, seed = "${sweep.seed}", epochs = 2 }

[stages.table]
kind = "report"
inputs = { results = "student" }
params = { metrics = ["map"], over = "seed", ci = 0.95, plot_xy = [] }
"#;

const FOOTNOTE: &str = "± over `seed` covers student; teacher ran once.";

/// Runs the two-level pipeline with the teacher's seed written as `teacher_seed`; returns the
/// published table in each format.
fn two_level(teacher_seed: &str) -> BTreeMap<&'static str, String> {
    let p = Project::new();
    p.write(
        "pipelines/two-level.toml",
        &TWO_LEVEL.replace("TEACHER_SEED", teacher_seed),
    );
    let out = p.run(&["run", "pipelines/two-level.toml"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = p.path().join("reports/two-level/table");
    ["table.md", "table.csv", "table.tex", "report.html"]
        .into_iter()
        .map(|f| (f, std::fs::read_to_string(dir.join(f)).unwrap()))
        .collect()
}

#[test]
fn the_variation_footnote_names_a_teacher_trained_once_in_every_format() {
    let tables = two_level("0");
    let md = &tables["table.md"];
    // Students' map: 0.3 * 0.8 + seed / 100 = 0.24, 0.25, 0.26 (fixed-point noise aside).
    assert!(
        md.contains("| student | 25.0 ± 1.0 [22.5, 27.5]¹ |"),
        "{md}"
    );
    assert!(md.contains(&format!("- ¹ {FOOTNOTE}")), "{md}");
    assert!(
        tables["table.csv"].contains(&format!("[1] {FOOTNOTE}")),
        "{}",
        tables["table.csv"]
    );
    assert!(
        tables["table.tex"]
            .contains("\\textsuperscript{1} $\\pm$ over seed covers student; teacher ran once."),
        "{}",
        tables["table.tex"]
    );
    assert!(
        tables["report.html"].contains("<sup>1</sup> ± over `seed` covers student"),
        "{}",
        tables["report.html"]
    );
}

#[test]
fn no_variation_footnote_when_the_teacher_is_seeded_with_the_students() {
    let tables = two_level("\"${sweep.seed}\"");
    for (format, text) in &tables {
        assert!(
            !text.contains("ran once") && !text.contains("covers"),
            "{format}:\n{text}"
        );
    }
    assert!(tables["table.md"].contains("| student | 25.0 ± 1.0 [22.5, 27.5] |"));
}

/// An evaluation of `stage` at `seed`, descending from `draws`.
fn eval(stage: &str, seed: i64, metrics: &[(&str, f64)], draws: &[&str]) -> InputArtifact {
    InputArtifact {
        stage: stage.into(),
        kind: "evaluate".into(),
        binding: BTreeMap::from([("seed".to_string(), json!(seed))]),
        params: Params::default(),
        key: format!("{stage}-{seed}"),
        outputs: BTreeMap::from([("metrics.json".to_string(), PathBuf::from("m"))]),
        metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        draws: draws
            .iter()
            .map(|d| Draw {
                stage: d.split('[').next().unwrap().to_string(),
                instance: d.to_string(),
            })
            .collect(),
    }
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

/// A resolution-asymmetry table: the student per seed from a teacher trained once, the
/// network trained at the query resolution once, and their paired difference; per seed the
/// student's mAP minus the network's is +6.6, -1.2, +1.3 (the issue's numbers).
fn resolution_table() -> Vec<InputArtifact> {
    let mut v = Vec::new();
    for (seed, map) in [0.566, 0.488, 0.513].into_iter().enumerate() {
        let student = format!("student[seed={seed}]");
        v.push(eval(
            "eval-ts",
            seed as i64,
            &[("map", map)],
            &["split", "teacher", &student],
        ));
    }
    let mut tsym = eval("eval-tsym", 0, &[("map", 0.5)], &["split", "teacher-q"]);
    tsym.binding.clear();
    v.push(tsym);
    v
}

fn resolution_params() -> Value {
    json!({
        "title": "Uncertainty",
        "metrics": ["map"],
        "ci": 0.95,
        "labels": {"eval-ts": "student asymmetric", "eval-tsym": "trained at r"},
        "paired": {"a": "eval-ts", "b": "eval-tsym"},
        "plot_xy": []
    })
}

#[test]
fn ci_and_paired_numbers_equal_scipys_t_interval() {
    // scipy.stats.t.interval(0.95, 2, loc=mean, scale=sem) on the student's mAPs and on the
    // paired differences, printed by:
    //   python3 -c "import numpy as np; from scipy import stats
    //   for v in [[0.566, 0.488, 0.513], [0.066, -0.012, 0.013]]:
    //       a = np.array(v); print(stats.t.interval(0.95, 2, loc=a.mean(), scale=stats.sem(a)))"
    const STUDENT: (f64, f64) = (0.4233931084944535, 0.621273558172213);
    const PAIRED: (f64, f64) = (-0.07660689150554645, 0.12127355817221311);
    let dir = tempfile::tempdir().unwrap();
    let out = run_report(dir.path(), resolution_params(), resolution_table());
    let results = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let mut lines = results.lines();
    assert_eq!(
        lines.next(),
        Some("stage,metric,mean,std,n,expected,ci_low,ci_high,positive")
    );
    let fields: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let number = |s: &str| s.parse::<f64>().unwrap();
    let student = &fields[0];
    assert_eq!(student[0], "eval-ts");
    assert!(
        (number(student[6]) - STUDENT.0).abs() < 1e-12,
        "{student:?}"
    );
    assert!(
        (number(student[7]) - STUDENT.1).abs() < 1e-12,
        "{student:?}"
    );
    let paired = &fields[2];
    assert_eq!(paired[0], "eval-ts - eval-tsym");
    assert!((number(paired[6]) - PAIRED.0).abs() < 1e-9, "{paired:?}");
    assert!((number(paired[7]) - PAIRED.1).abs() < 1e-9, "{paired:?}");
    assert_eq!(paired[8], "2", "two of three differences are positive");
}

/// An update-gain result at `seed`: the gain where the criterion holds, else declined with
/// the reason `update-gain` gives.
fn gain(dir: &Path, seed: i64, diff: f64, gain: Option<f64>) -> InputArtifact {
    let mut metrics = vec![("diff_map", diff), ("criterion_map", f64::from(diff > 0.0))];
    let mut a = eval("gain-bct", seed, &[], &[]);
    match gain {
        Some(g) => metrics.push(("gain_map", g)),
        None => {
            let path = dir.join(format!("reasons-{seed}.json"));
            std::fs::write(
                &path,
                json!({"gain_map": "the criterion fails: M(new, old) 0.4100 <= M(old, old) 0.4300, so G is not defined"})
                    .to_string(),
            )
            .unwrap();
            a.outputs.insert("reasons.json".into(), path);
        }
    }
    a.metrics = metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    a.draws = ["old", "bct"]
        .into_iter()
        .map(|stage| Draw {
            stage: stage.into(),
            instance: format!("{stage}[seed={seed}]"),
        })
        .collect();
    a
}

fn gain_table(dir: &Path) -> Vec<InputArtifact> {
    vec![
        gain(dir, 0, 0.02, Some(0.03)),
        gain(dir, 1, -0.02, None),
        gain(dir, 2, 0.03, Some(0.05)),
    ]
}

#[test]
fn an_update_gain_names_the_seed_where_the_criterion_fails() {
    let dir = tempfile::tempdir().unwrap();
    let params = json!({
        "metrics": ["diff_map", "criterion_map", "gain_map"], "ci": 0.95, "plot_xy": [],
        "formats": {"gain_map": "fixed:2"}
    });
    let out = run_report(dir.path(), params, gain_table(dir.path()));
    let md = std::fs::read_to_string(out.join("table.md")).unwrap();
    // gain_map on seeds 0 and 2 only: 0.03, 0.05; seed 1 is named in the footnote.
    assert!(
        md.contains("| gain-bct | 1.0 ± 2.6 [-5.6, 7.6] | 0.67 ± 0.58 [-0.77, 2.10] | 0.04 ± 0.01 [-0.09, 0.17] (2/3)¹ |"),
        "{md}"
    );
    assert!(
        md.contains(
            "- ¹ gain_map, seed=1: the criterion fails: M(new, old) 0.4100 <= M(old, old) \
             0.4300, so G is not defined (`gain-bct`)."
        ),
        "{md}"
    );
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

#[test]
fn golden_files_of_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = resolution_table();
    let mut tasym = eval("eval-tasym", 0, &[("map", 0.2)], &["split", "teacher"]);
    tasym.binding.clear();
    inputs.push(tasym);
    let out = run_report(dir.path(), resolution_params(), inputs);
    for file in [
        "table.md",
        "table.csv",
        "results.csv",
        "table.tex",
        "report.html",
    ] {
        let got = std::fs::read_to_string(out.join(file)).unwrap();
        golden(&format!("uncertainty/{file}"), &got);
    }
    let out = run_report(
        &dir.path().join("gain"),
        json!({"metrics": ["diff_map", "gain_map"], "ci": 0.95, "plot_xy": []}),
        gain_table(dir.path()),
    );
    for file in ["table.md", "table.csv", "table.tex"] {
        let got = std::fs::read_to_string(out.join(file)).unwrap();
        golden(&format!("update-gain/{file}"), &got);
    }
}
