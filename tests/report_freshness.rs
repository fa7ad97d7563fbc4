//! A report is a cached stage like any other: changing only its layout re-renders it and
//! runs nothing upstream, and `asymflow report` renders from the cache alone, marking the
//! instances that have not run. Driven through the `asymflow` binary with the engine's
//! `test-echo` kind (its metric `value` is its own value plus its inputs').

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const PIPELINE: &str = r#"
[pipeline]
name = "rep"

[sweep]
seed = [0, 1]
res = [32, 64]

[stages.base]
kind = "test-echo"
params = { value = "${sweep.res}", trace = "trace.txt" }

[stages.eval]
kind = "test-echo"
inputs = { input = "base" }
params = { value = "${sweep.seed}", trace = "trace.txt" }

[stages.table]
kind = "report"
inputs = { results = "eval" }
params = { cols = "res", metrics = ["value"], format = "fixed:1", plot_xy = [], title = "Echo" }
"#;

fn asymflow(project: &Path, args: &[&str]) -> (Value, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_asymflow"))
        .args(args)
        .current_dir(project)
        .env("ASYMFLOW_TEST_KINDS", "1")
        .env_remove("ASYMFLOW_CACHE")
        .output()
        .expect("asymflow runs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.status.success(),
        "asymflow {args:?} failed:\n{stdout}\n{stderr}"
    );
    let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (json, stdout, stderr)
}

/// (stage, status) of every instance in a `run --json` summary.
fn statuses(summary: &Value) -> Vec<(String, String)> {
    summary["instances"]
        .as_array()
        .expect("instances")
        .iter()
        .map(|i| {
            (
                i["stage"].as_str().unwrap().to_string(),
                i["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn trace_lines(project: &Path) -> usize {
    std::fs::read_to_string(project.join("trace.txt"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[test]
fn report_changing_only_the_layout_reruns_the_report_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path();
    std::fs::create_dir_all(project.join("pipelines")).unwrap();
    std::fs::write(project.join("pipelines/rep.toml"), PIPELINE).unwrap();

    let (first, _, _) = asymflow(project, &["run", "pipelines/rep.toml", "--json"]);
    assert!(statuses(&first).iter().all(|(_, s)| s == "ran"), "{first}");
    let runs = trace_lines(project);
    assert_eq!(runs, 2 + 4, "2 base and 4 eval instances ran");
    let table = std::fs::read_to_string(project.join("reports/rep/table/table.md")).unwrap();
    // res 32: seeds 0, 1 -> 32, 33: mean 32.5, sample std sqrt(0.5) = 0.707.
    assert!(
        table.contains("| eval | 32.5 ± 0.7 | 64.5 ± 0.7 |"),
        "{table}"
    );

    let (second, _, _) = asymflow(
        project,
        &[
            "run",
            "pipelines/rep.toml",
            "--json",
            "--set",
            "stages.table.params.format=\"fixed:2\"",
        ],
    );
    for (stage, status) in statuses(&second) {
        let want = if stage == "table" { "ran" } else { "cached" };
        assert_eq!(status, want, "{stage} after a layout change: {second}");
    }
    assert_eq!(trace_lines(project), runs, "no upstream stage ran again");
    // A run with overrides publishes beside the plain pipeline's reports, not over them.
    let plain = std::fs::read_to_string(project.join("reports/rep/table/table.md")).unwrap();
    assert!(
        plain.contains("| eval | 32.5 ± 0.7 | 64.5 ± 0.7 |"),
        "{plain}"
    );
    let overridden = std::fs::read_dir(project.join("reports"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("rep+"))
        .expect("a reports folder for the run with overrides");
    let table = std::fs::read_to_string(overridden.join("table/table.md")).unwrap();
    assert!(
        table.contains("| eval | 32.50 ± 0.71 | 64.50 ± 0.71 |"),
        "{table}"
    );
}

#[test]
fn report_command_renders_from_the_cache_alone_and_marks_what_has_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path();
    std::fs::create_dir_all(project.join("pipelines")).unwrap();
    std::fs::write(project.join("pipelines/rep.toml"), PIPELINE).unwrap();
    asymflow(project, &["run", "pipelines/rep.toml", "--json"]);
    let runs = trace_lines(project);

    let (_, stdout, stderr) = asymflow(
        project,
        &["report", "pipelines/rep.toml", "--sweep", "seed=0,1,2"],
    );
    assert_eq!(trace_lines(project), runs, "`report` computes nothing");
    assert!(
        stdout.contains("| eval | 32.5 ± 0.7 (2/3)¹ | 64.5 ± 0.7 (2/3)¹ |")
            && stdout.contains("- ¹ `eval`: not computed yet"),
        "{stdout}"
    );
    assert!(stdout.contains("- eval [res=32, seed=2]"), "{stdout}");
    assert!(
        stderr.contains("asymflow run"),
        "says how to compute the rest: {stderr}"
    );
}
