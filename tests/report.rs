//! The `report` stage kind end to end on hand-made results: snapshots of the rendered
//! Markdown, CSV and LaTeX (with a missing cell and partial seeds), plots as valid SVG and PNG
//! of the requested size, the compatibility heat map, loss curves, and layout errors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use asymflow::kind::{InputArtifact, Inputs, Params, StageContext, StageError};
use asymflow_tensor::registry;
use serde_json::{json, Value};

/// An evaluation instance; no metrics means it has not run (as `asymflow report` passes it).
fn eval(stage: &str, query_res: i64, seed: i64, metrics: &[(&str, f64)]) -> InputArtifact {
    let outputs = if metrics.is_empty() {
        BTreeMap::new()
    } else {
        BTreeMap::from([("metrics.json".to_string(), PathBuf::from("metrics.json"))])
    };
    InputArtifact {
        stage: stage.into(),
        kind: "evaluate".into(),
        binding: BTreeMap::from([
            ("query_res".to_string(), json!(query_res)),
            ("seed".to_string(), json!(seed)),
        ]),
        params: Params::default(),
        key: format!("{stage}-{query_res}-{seed}"),
        outputs,
        metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        draws: Vec::new(),
    }
}

/// Teacher symmetric: complete at 32 px, never run at 64 px. Teacher-student: complete at
/// 32 px, seeds 0 and 1 of 3 at 64 px.
fn table2_results() -> Vec<InputArtifact> {
    let mut v = Vec::new();
    for (seed, map) in [0.40, 0.42, 0.47].into_iter().enumerate() {
        v.push(eval(
            "eval-tsym",
            32,
            seed as i64,
            &[("map", map), ("r1", 0.6), ("query_gflops", 0.5)],
        ));
    }
    for seed in 0..3 {
        v.push(eval("eval-tsym", 64, seed, &[]));
    }
    for (seed, (map, r1)) in [(0.30, 0.5), (0.32, 0.6), (0.34, 0.7)]
        .into_iter()
        .enumerate()
    {
        v.push(eval(
            "eval-ts",
            32,
            seed as i64,
            &[("map", map), ("r1", r1), ("query_gflops", 0.5)],
        ));
    }
    v.push(eval(
        "eval-ts",
        64,
        0,
        &[("map", 0.411), ("r1", 0.7), ("query_gflops", 2.0)],
    ));
    v.push(eval(
        "eval-ts",
        64,
        1,
        &[("map", 0.413), ("r1", 0.8), ("query_gflops", 2.0)],
    ));
    v.push(eval("eval-ts", 64, 2, &[]));
    v
}

fn table2_params() -> Value {
    json!({
        "title": "Table 2",
        "cols": "query_res",
        "metrics": ["map", "r1"],
        "labels": {
            "eval-tsym": "teacher symmetric",
            "eval-ts": "teacher-student asymmetric",
            "stage": "setup"
        },
        "plot_size": [320, 240]
    })
}

/// Runs the report kind with `params` on `inputs`; returns its output folder and metrics.
fn run_report(
    dir: &Path,
    params: Value,
    inputs: Inputs,
) -> Result<(PathBuf, BTreeMap<String, f64>), StageError> {
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let params = Params(serde_json::from_value(params).unwrap());
    let cancel = AtomicBool::new(false);
    let registry = registry();
    let stage = registry.runner("report").expect("report kind registered");
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
    stage.run(&mut ctx)?;
    Ok((out, ctx.finish().0))
}

fn results(inputs: Vec<InputArtifact>) -> Inputs {
    BTreeMap::from([("results".to_string(), inputs)])
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn report_table2_markdown_snapshot_with_missing_cells_and_partial_seeds() {
    let dir = tempfile::tempdir().unwrap();
    let (out, metrics) =
        run_report(dir.path(), table2_params(), results(table2_results())).unwrap();
    // teacher symmetric mAP 0.40, 0.42, 0.47: mean 43.0, sample std sqrt(0.0026 / 2) = 3.6.
    // teacher-student at 64 px: mAP 0.411, 0.413 -> 41.2 ± 0.1; R@1 0.7, 0.8 -> 75.0 ± 7.1.
    let expected = "\
## Table 2

| setup | 32 / mAP | 32 / R@1 | 64 / mAP | 64 / R@1 |
|---|---:|---:|---:|---:|
| teacher symmetric | 43.0 ± 3.6 | 60.0 ± 0.0 | -¹ | -¹ |
| teacher-student asymmetric | 32.0 ± 2.0 | 60.0 ± 10.0 | 41.2 ± 0.1 (2/3)² | 75.0 ± 7.1 (2/3)² |

Mean ± sample standard deviation (n - 1) over `seed`. (k/n): k of n expected results present. -: no result.

- ¹ `eval-tsym`: not computed yet (not run, or failed; `asymflow status` tells which).
- ² `eval-ts`: not computed yet (not run, or failed; `asymflow status` tells which).

Not run yet (4):
- eval-tsym [query_res=64, seed=0]
- eval-tsym [query_res=64, seed=1]
- eval-tsym [query_res=64, seed=2]
- eval-ts [query_res=64, seed=2]
";
    assert_eq!(read(out.join("table.md")), expected);
    assert_eq!(metrics["cells"], 6.0);
    assert_eq!(metrics["cells_missing"], 2.0);
    assert_eq!(metrics["cells_partial"], 2.0);
    assert_eq!(metrics["instances_missing"], 4.0);
}

#[test]
fn report_table2_csv_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = run_report(dir.path(), table2_params(), results(table2_results())).unwrap();
    let expected = r#"setup,32 / mAP,32 / R@1,64 / mAP,64 / R@1,notes
teacher symmetric,43.0 ± 3.6,60.0 ± 0.0,-[1],-[1],"[1] `eval-tsym`: not computed yet (not run, or failed; `asymflow status` tells which)."
teacher-student asymmetric,32.0 ± 2.0,60.0 ± 10.0,41.2 ± 0.1 (2/3)[2],75.0 ± 7.1 (2/3)[2],"[2] `eval-ts`: not computed yet (not run, or failed; `asymflow status` tells which)."
"#;
    assert_eq!(read(out.join("table.csv")), expected);

    let long = read(out.join("results.csv"));
    let lines: Vec<&str> = long.lines().collect();
    assert_eq!(
        lines[0],
        "stage,query_res,metric,mean,std,n,expected,ci_low,ci_high,positive"
    );
    assert_eq!(lines.len(), 1 + 8);
    assert_eq!(
        lines[3], "eval-tsym,64,map,,,0,3,,,",
        "a missing cell has no numbers, never a zero"
    );
    let partial: Vec<&str> = lines[7].split(',').collect();
    assert_eq!(&partial[..3], ["eval-ts", "64", "map"]);
    assert!((partial[3].parse::<f64>().unwrap() - 0.412).abs() < 1e-12);
    assert!((partial[4].parse::<f64>().unwrap() - 2e-6f64.sqrt()).abs() < 1e-9);
    assert_eq!(&partial[5..], ["2", "3", "", "", ""]);
}

#[test]
fn report_table2_latex_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let mut params = table2_params();
    params["cols"] = json!(["dataset", "query_res"]);
    let inputs = table2_results()
        .into_iter()
        .map(|mut a| {
            a.binding.insert("dataset".into(), json!("cub_200"));
            a
        })
        .collect();
    let (out, _) = run_report(dir.path(), params, results(inputs)).unwrap();
    let expected = r"% Generated by asymflow; needs \usepackage{booktabs}.
% Mean +- sample standard deviation (n - 1) over `seed`. (k/n): k of n expected results present. --: no result.
\begin{table}[t]
\centering
\caption{Table 2}
\begin{tabular}{lrrrr}
\toprule
 & \multicolumn{4}{c}{cub\_200} \\
\cmidrule(lr){2-5}
 & \multicolumn{2}{c}{32} & \multicolumn{2}{c}{64} \\
\cmidrule(lr){2-3}\cmidrule(lr){4-5}
setup & mAP & R@1 & mAP & R@1 \\
\midrule
teacher symmetric & 43.0 $\pm$ 3.6 & 60.0 $\pm$ 0.0 & --\textsuperscript{1} & --\textsuperscript{1} \\
teacher-student asymmetric & 32.0 $\pm$ 2.0 & 60.0 $\pm$ 10.0 & 41.2 $\pm$ 0.1 (2/3)\textsuperscript{2} & 75.0 $\pm$ 7.1 (2/3)\textsuperscript{2} \\
\bottomrule
\end{tabular}
\par{\footnotesize\textsuperscript{1} eval-tsym: not computed yet (not run, or failed; asymflow status tells which).}
\par{\footnotesize\textsuperscript{2} eval-ts: not computed yet (not run, or failed; asymflow status tells which).}
\end{table}
";
    assert_eq!(read(out.join("table.tex")), expected);
}

fn png_size(path: &Path) -> (u32, u32) {
    let img = image::open(path).unwrap_or_else(|e| panic!("{}: not a PNG: {e}", path.display()));
    (img.width(), img.height())
}

fn assert_svg(path: &Path, size: (u32, u32), must_contain: &[&str]) {
    let svg = read(path.to_path_buf());
    assert!(
        svg.trim_start().starts_with("<svg"),
        "{}: not SVG",
        path.display()
    );
    assert!(
        svg.trim_end().ends_with("</svg>"),
        "{}: unterminated",
        path.display()
    );
    assert!(
        svg.contains(&format!("width=\"{}\" height=\"{}\"", size.0, size.1)),
        "{}: not {}x{}",
        path.display(),
        size.0,
        size.1
    );
    for text in must_contain {
        assert!(svg.contains(text), "{}: lacks `{text}`", path.display());
    }
}

#[test]
fn report_writes_map_against_gflops_as_svg_and_png_of_the_requested_size() {
    let dir = tempfile::tempdir().unwrap();
    let (out, metrics) =
        run_report(dir.path(), table2_params(), results(table2_results())).unwrap();
    let stem = out.join("plot-map-vs-query_gflops");
    assert_svg(
        &stem.with_extension("svg"),
        (320, 240),
        &[
            "teacher symmetric",
            "teacher-student asymmetric",
            "query GFLOPs",
            "mAP",
        ],
    );
    assert_eq!(png_size(&stem.with_extension("png")), (320, 240));
    // The PNG has ink beyond the white background and the plot lines: text was rasterised.
    let img = image::open(stem.with_extension("png")).unwrap().to_rgb8();
    let dark = img.pixels().filter(|p| p.0.iter().all(|c| *c < 80)).count();
    assert!(
        dark > 200,
        "only {dark} dark pixels: labels missing from the PNG"
    );
    assert_eq!(metrics["plots"], 1.0);

    let html = read(out.join("report.html"));
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<svg") && html.contains("<td class=\"missing\">-<sup>1</sup></td>"));
    assert!(
        !html.contains("src=\"http"),
        "the page must be self-contained"
    );
}

#[test]
fn report_draws_the_compatibility_matrix_as_a_heat_map() {
    let dir = tempfile::tempdir().unwrap();
    let pair = |stage: &str, map: f64| InputArtifact {
        metrics: BTreeMap::from([("map".to_string(), map)]),
        binding: BTreeMap::from([("seed".to_string(), json!(0))]),
        ..eval(stage, 0, 0, &[("map", map)])
    };
    let inputs = vec![
        pair("e11", 0.30),
        pair("e21", 0.33),
        pair("e22", 0.45),
        pair("e32", 0.47),
    ];
    let params = json!({
        "rows": "query", "cols": "gallery", "metrics": ["map"], "heatmap": true,
        "plot_xy": [], "plot_size": [300, 200],
        "tags": {
            "e11": {"query": "phi1", "gallery": "phi1"},
            "e21": {"query": "phi2", "gallery": "phi1"},
            "e22": {"query": "phi2", "gallery": "phi2"},
            "e32": {"query": "phi3", "gallery": "phi2"}
        }
    });
    let (out, _) = run_report(dir.path(), params, results(inputs)).unwrap();
    let md = read(out.join("table.md"));
    assert!(md.contains("| query | phi1 / mAP | phi2 / mAP |"), "{md}");
    assert!(md.contains("| phi1 | 30.0 | - |"), "{md}");
    assert!(md.contains("| phi3 | - | 47.0 |"), "{md}");
    assert_svg(
        &out.join("heatmap.svg"),
        (300, 200),
        &["phi3", "33.0", "mAP"],
    );
    assert_eq!(png_size(&out.join("heatmap.png")), (300, 200));
    assert!(
        !out.join("plot-map-vs-query_gflops.svg").exists(),
        "plot_xy = [] draws no such plot"
    );
}

#[test]
fn report_draws_loss_curves_of_training_stages() {
    let dir = tempfile::tempdir().unwrap();
    let loss_file = dir.path().join("loss.json");
    std::fs::write(
        &loss_file,
        r#"[{"epoch": 1, "loss": 2.0}, {"epoch": 2, "loss": 1.2}]"#,
    )
    .unwrap();
    let teacher = InputArtifact {
        stage: "teacher".into(),
        kind: "train-teacher".into(),
        binding: BTreeMap::from([("seed".to_string(), json!(0))]),
        params: Params::default(),
        key: "t".into(),
        outputs: BTreeMap::from([("loss.json".to_string(), loss_file)]),
        metrics: BTreeMap::new(),
        draws: Vec::new(),
    };
    let mut inputs = results(table2_results());
    inputs.insert("losses".into(), vec![teacher]);
    let (out, metrics) = run_report(dir.path(), table2_params(), inputs).unwrap();
    assert_svg(
        &out.join("loss-teacher.svg"),
        (320, 240),
        &["teacher loss", "seed=0", "epoch"],
    );
    assert_eq!(png_size(&out.join("loss-teacher.png")), (320, 240));
    assert_eq!(metrics["plots"], 2.0);
}

#[test]
fn report_layout_mistakes_name_the_parameter_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let err = run_report(
        dir.path(),
        json!({"format": "percentage"}),
        results(table2_results()),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("parameter `format`") && err.contains("percent:1"),
        "{err}"
    );

    // Without `query_res` in rows or columns, two results share a cell for one seed.
    let err = run_report(
        dir.path(),
        json!({"metrics": ["map"]}),
        results(table2_results()),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("`query_res`") && err.contains("rows") && err.contains("cols"),
        "{err}"
    );

    let err = run_report(dir.path(), json!({}), Inputs::new())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("input `results`"), "{err}");
}
