//! Sweeps: fan-out, zip groups, gathering, shared upstream work, and overrides.

use crate::support::{with_status, Project};

const PIPELINE: &str = r#"
[pipeline]
name = "sweep"

[vars]
base = 10

[sweep]
seed = [0, 1, 2]
pair = { res = [32, 48], epochs = [5, 6] }

[stages.teacher]
kind = "test-echo"
params = { value = "${vars.base}" }

[stages.student]
kind = "test-echo"
inputs = { input = "teacher" }
params = { value = "${sweep.res}", sleep_ms = "${sweep.seed}" }

[stages.table]
kind = "test-echo"
inputs = { input = "student" }
gather = ["seed"]
"#;

#[test]
fn stages_fan_out_over_their_axes_and_share_upstream_work() {
    let p = Project::new();
    p.write("pipelines/s.toml", PIPELINE);
    let plan = p.plan_json("pipelines/s.toml", &[]);
    // One teacher (uses no axis), 3 seeds x 2 zipped pairs of students, one table per pair.
    assert_eq!(plan.keys().filter(|k| k.starts_with("teacher")).count(), 1);
    assert_eq!(plan.keys().filter(|k| k.starts_with("student")).count(), 6);
    assert_eq!(
        plan.keys()
            .filter(|k| k.starts_with("table"))
            .cloned()
            .collect::<Vec<_>>(),
        vec!["table[epochs=5,res=32]", "table[epochs=6,res=48]"]
    );
    assert!(
        plan.contains_key("student[epochs=6,res=48,seed=2]"),
        "{plan:?}"
    );
}

#[test]
fn a_gathering_stage_receives_every_instance_of_the_gathered_axis() {
    let p = Project::new();
    p.write("pipelines/s.toml", PIPELINE);
    p.run_json("pipelines/s.toml", &[]);
    let out = p.run(&["show", "pipelines/s.toml", "table", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Each table sums 3 students of value res + the teacher's 10 each: 3 * (32 + 10).
    let values: Vec<f64> = doc
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["metrics"]["value"].as_f64().unwrap())
        .collect();
    assert_eq!(values, vec![3.0 * 42.0, 3.0 * 58.0]);
}

#[test]
fn command_line_overrides_equal_file_edits() {
    let p = Project::new();
    p.write("pipelines/s.toml", PIPELINE);
    p.write(
        "pipelines/edited.toml",
        &PIPELINE
            .replace("base = 10", "base = 12")
            .replace("seed = [0, 1, 2]", "seed = [0, 7]"),
    );
    let edited = p.run_json("pipelines/edited.toml", &[]);
    assert_eq!(with_status(&edited, "ran").len(), 1 + 4 + 2);
    // The same pipeline through overrides: every instance is already computed.
    let overridden = p.run_json(
        "pipelines/s.toml",
        &["--set", "vars.base=12", "--sweep", "seed=0,7"],
    );
    assert_eq!(
        with_status(&overridden, "cached").len(),
        7,
        "{overridden:?}"
    );
}

#[test]
fn identical_work_under_two_stage_names_runs_once() {
    let p = Project::new();
    p.write(
        "pipelines/d.toml",
        r#"
[stages.a]
kind = "test-echo"
params = { value = 1, trace = "trace.txt" }
[stages.b]
kind = "test-echo"
params = { value = 1, trace = "trace.txt" }
"#,
    );
    let out = p.run_json("pipelines/d.toml", &["--jobs", "2"]);
    assert_eq!(
        with_status(&out, "ran").len() + with_status(&out, "cached").len(),
        2
    );
    let trace = std::fs::read_to_string(p.path().join("trace.txt")).unwrap();
    assert_eq!(
        trace.lines().count(),
        1,
        "the same key is computed once: {trace}"
    );
}

#[test]
fn a_failure_skips_its_dependants_and_keep_going_runs_the_rest() {
    let p = Project::new();
    let text = r#"
[stages.bad]
kind = "test-echo"
params = { fail = true }
[stages.after]
kind = "test-echo"
inputs = { input = "bad" }
[stages.independent]
kind = "test-echo"
params = { value = 4, sleep_ms = 300 }
"#;
    p.write("pipelines/f.toml", text);
    let out = p.run(&[
        "run",
        "pipelines/f.toml",
        "--json",
        "--keep-going",
        "--jobs",
        "1",
    ]);
    assert!(!out.status.success());
    let st = crate::support::statuses(&out.stdout);
    assert_eq!(st["bad"].0, "failed");
    assert!(st["bad"].1.contains("failed on purpose"));
    assert_eq!(st["after"].0, "skipped");
    assert_eq!(st["independent"].0, "ran");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("params:") && stderr.contains("fail = true"),
        "{stderr}"
    );
}
