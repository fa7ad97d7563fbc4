//! Choosing instances and sweeping from the command line, as a user of make, DVC or Hydra
//! expects: labels narrow `run`, `plan`, `export` and `metrics`; `--sweep` takes any declared
//! parameter and `range(..)`; `metrics` prints a table a person can read.

use serde_json::Value;

use crate::support::Project;

const PIPELINE: &str = r#"
[pipeline]
name = "labels"

[sweep]
seed = [0, 1, 7]

[stages.data]
kind = "test-echo"
params = { value = 10 }

[stages.model]
kind = "test-echo"
inputs = { input = "data" }
params = { value = "${sweep.seed}" }

[stages.other]
kind = "test-echo"
inputs = { input = "data" }
params = { value = 3 }
"#;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn project() -> Project {
    let p = Project::new();
    p.write("pipelines/labels.toml", PIPELINE);
    p
}

fn labels_of(doc: &Value) -> Vec<String> {
    doc["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["label"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_label_narrows_plan_and_run_to_that_instance_and_what_it_needs() {
    let p = project();
    let plan = p.plan_json("pipelines/labels.toml", &["model[seed=7]"]);
    let names: Vec<&String> = plan.keys().collect();
    assert_eq!(names, ["data", "model[seed=7]"], "{plan:?}");
    let out = p.run(&["run", "pipelines/labels.toml", "model[seed=7]", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    // `run --json` names each instance by its label.
    assert_eq!(labels_of(&doc), ["data", "model[seed=7]"], "{doc}");
    // The rest is untouched: the other seeds and `other` still have to run.
    let plan = p.plan_json("pipelines/labels.toml", &[]);
    assert_eq!(plan["model[seed=7]"].0, "cached");
    assert_eq!(plan["data"].0, "cached");
    assert_eq!(plan["model[seed=0]"].0, "to-run");
    assert_eq!(plan["other"].0, "to-run");
    // A cached ancestor is listed as cached; nothing else appears.
    let plan = p.plan_json("pipelines/labels.toml", &["model[seed=1]"]);
    assert_eq!(plan.len(), 2, "{plan:?}");
    assert_eq!(plan["data"].0, "cached");
}

#[test]
fn a_label_of_no_instance_is_an_error_listing_the_labels_nearest_first() {
    let p = project();
    for command in ["plan", "run", "why", "show", "export"] {
        let mut args = vec![command, "pipelines/labels.toml", "model[seed=8]"];
        if command == "export" {
            args.push("out");
        }
        let out = p.run(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{command}: {err}");
        assert!(
            err.contains("no instance `model[seed=8]`"),
            "{command}: {err}"
        );
        let listed = err.split("are: ").nth(1).unwrap_or_default();
        assert!(listed.starts_with("model[seed=7]"), "{command}: {err}");
        assert!(listed.contains("model[seed=0]"), "{command}: {err}");
    }
    let out = p.run(&["metrics", "pipelines/labels.toml", "model[seed=8]"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        !p.path().join("cache").exists(),
        "a mistake created a cache"
    );
}

#[test]
fn a_misspelt_stage_gets_exit_code_3_in_every_command() {
    let p = project();
    for command in ["plan", "run", "why", "show", "metrics", "export"] {
        let mut args = vec![command, "pipelines/labels.toml", "modle"];
        if command == "export" {
            args.push("out");
        }
        let out = p.run(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{command}: {err}");
        assert!(err.contains("no stage `modle`"), "{command}: {err}");
        assert!(err.contains("did you mean `model`?"), "{command}: {err}");
    }
}

#[test]
fn metrics_and_export_take_labels() {
    let p = project();
    p.run_json("pipelines/labels.toml", &[]);
    let out = p.run(&["metrics", "pipelines/labels.toml", "model[seed=7]", "--csv"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[1].starts_with("model,7,17,"), "{text}");
    let dest = p.path().join("out");
    let out = p.run(&[
        "export",
        "pipelines/labels.toml",
        "model[seed=7]",
        dest.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // One instance named by its label goes into the folder itself.
    let files: Vec<String> = std::fs::read_dir(&dest)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!files.is_empty(), "nothing exported");
    assert!(files.iter().all(|f| !f.starts_with("model[")), "{files:?}");
    // A bundle of one instance holds it and what it needs, and others may read it.
    let tar = p.path().join("one.tar");
    let out = p.run(&[
        "export",
        "pipelines/labels.toml",
        "model[seed=7]",
        "-o",
        tar.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("exported 2 records"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bundles_are_readable_by_others_as_the_umask_allows() {
    use std::os::unix::fs::PermissionsExt;
    let p = project();
    p.run_json("pipelines/labels.toml", &[]);
    let tar = p.path().join("all.tar");
    let mut cmd = p.cmd(&[
        "export",
        "pipelines/labels.toml",
        "-o",
        tar.to_str().unwrap(),
    ]);
    // Through a shell, to set the umask the way a user's login does.
    let mut shell = std::process::Command::new("sh");
    shell
        .arg("-c")
        .arg("umask 022 && exec \"$@\"")
        .arg("sh")
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .current_dir(p.path())
        .envs(cmd.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
        .env_remove("ASYMFLOW_CACHE");
    let out = shell.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let mode = std::fs::metadata(&tar).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "bundle mode {mode:o}");
    let _ = cmd.output();
}

#[test]
fn metrics_text_is_a_table_with_chosen_columns_and_four_digits() {
    let p = Project::new();
    p.write(
        "pipelines/m.toml",
        r#"
[pipeline]
name = "m"

[sweep]
x = [0.123456789, 2.5]

[stages.model]
kind = "test-echo"
params = { value = "${sweep.x}" }
"#,
    );
    p.run_json("pipelines/m.toml", &[]);
    let out = p.run(&["metrics", "pipelines/m.toml"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    // stage, the axis, the metric; the 64-digit key is for CSV and JSON.
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["stage", "x", "value"],
        "{text}"
    );
    // The axis's value as written; the metric at 4 significant digits.
    assert!(lines[1].ends_with(" 0.1235"), "{text}");
    let out = p.run(&["metrics", "pipelines/m.toml", "--csv"]);
    assert!(stdout(&out).contains(",0.123456789,"), "{}", stdout(&out));
    let out = p.run(&["metrics", "pipelines/m.toml", "--columns", "value,x"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["value", "x"]
    );
    assert_eq!(lines.len(), 3, "{text}");
    let out = p.run(&["metrics", "pipelines/m.toml", "--csv", "--columns", "x,key"]);
    let text = stdout(&out);
    assert_eq!(text.lines().next(), Some("x,key"), "{text}");
    assert_eq!(
        text.lines().nth(1).unwrap().len(),
        "0.123456789,".len() + 64,
        "{text}"
    );
    let out = p.run(&["metrics", "pipelines/m.toml", "--columns", "valeu"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("did you mean `value`?"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn sweep_takes_any_declared_parameter_and_ranges() {
    let p = project();
    let plan = p.plan_json(
        "pipelines/labels.toml",
        &["--sweep", "stages.other.params.value=1,2.5", "other"],
    );
    let names: Vec<&String> = plan.keys().collect();
    assert_eq!(
        names,
        ["data", "other[value=1]", "other[value=2.5]"],
        "{plan:?}"
    );
    // An axis of the same name exists: the new one is named after the stage too.
    let plan = p.plan_json(
        "pipelines/labels.toml",
        &[
            "--sweep",
            "stages.other.params.value=1,2",
            "--sweep",
            "stages.data.params.value=3,4",
            "other",
        ],
    );
    assert!(plan.contains_key("data[data.value=3]"), "{plan:?}");
    assert!(plan.contains_key("other[data.value=4,value=2]"), "{plan:?}");
    let plan = p.plan_json(
        "pipelines/labels.toml",
        &["--sweep", "seed=range(0,5)", "model"],
    );
    assert_eq!(plan.len(), 6, "{plan:?}");
    assert!(plan.contains_key("model[seed=4]"), "{plan:?}");
    let plan = p.plan_json(
        "pipelines/labels.toml",
        &[
            "--sweep",
            "stages.other.params.value=range(0,1,0.25)",
            "other",
        ],
    );
    assert!(plan.contains_key("other[value=0.75]"), "{plan:?}");
    assert_eq!(plan.len(), 5, "{plan:?}");
    // Typos are caught at the flag, with the names that exist.
    for (flag, expected) in [
        ("stages.other.params.valeu=1,2", "unknown parameter `valeu`"),
        ("stages.otehr.params.value=1,2", "no stage `otehr`"),
        ("seed=range(5,0)", "bad range"),
    ] {
        let out = p.run(&["plan", "pipelines/labels.toml", "--sweep", flag]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{flag}: {err}");
        assert!(err.contains(expected), "{flag}: {err}");
        assert!(err.contains("<command line --sweep>:1:"), "{flag}: {err}");
    }
    let out = p.run(&[
        "plan",
        "pipelines/labels.toml",
        "--sweep",
        "stages.other.params.valeu=1,2",
    ]);
    assert!(
        stderr(&out).contains("did you mean `value`?"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn small_frictions_of_run_report_kinds_and_completions() {
    let p = project();
    // `-v` says `cached` once per cached instance.
    p.run_json("pipelines/labels.toml", &[]);
    let out = p.run(&["run", "pipelines/labels.toml", "-v"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.lines()
            .any(|l| l.trim_end().ends_with("data") && l.starts_with("cached")),
        "{err}"
    );
    assert!(!err.contains("cached data  cached"), "{err}");
    // `report` repeats the cache it read in the command it suggests.
    let other = tempfile::tempdir().unwrap();
    let cache = other.path().join("c");
    p.run(&[
        "run",
        "pipelines/labels.toml",
        "data",
        "--cache",
        cache.to_str().unwrap(),
    ]);
    p.write(
        "pipelines/r.toml",
        &format!(
            "{PIPELINE}\n[stages.table]\nkind = \"report\"\ninputs = {{ results = [\"model\"] }}\nparams = {{ rows = \"seed\", over = \"none\", metrics = [\"value\"], plot_xy = [] }}\n"
        ),
    );
    let out = p.run(&[
        "report",
        "pipelines/r.toml",
        "--cache",
        cache.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "asymflow run pipelines/r.toml --cache {}",
            cache.display()
        )),
        "{}",
        stderr(&out)
    );
    // `--cache` is accepted by every command, as a global flag.
    for args in [
        vec!["kinds", "--cache", "x"],
        vec!["kinds", "split", "--cache", "x"],
        vec!["completions", "bash", "--cache", "x"],
    ] {
        let out = p.run(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn every_command_has_examples_in_its_help() {
    let p = project();
    let mut missing = Vec::new();
    for command in [
        vec!["run"],
        vec!["plan"],
        vec!["why"],
        vec!["status"],
        vec!["show"],
        vec!["report"],
        vec!["metrics"],
        vec!["kinds"],
        vec!["completions"],
        vec!["cache"],
        vec!["cache", "verify"],
        vec!["cache", "forget"],
        vec!["cache", "gc"],
        vec!["data"],
        vec!["data", "export"],
        vec!["exec"],
        vec!["remote"],
        vec!["remote", "status"],
        vec!["remote", "gc"],
        vec!["push"],
        vec!["pull"],
        vec!["export"],
        vec!["import"],
        vec!["serve"],
    ] {
        let mut args = command.clone();
        args.push("--help");
        let out = p.run(&args);
        if !stdout(&out).contains("Examples") {
            missing.push(command.join(" "));
        }
    }
    assert!(missing.is_empty(), "no examples in --help of: {missing:?}");
}

#[test]
fn kinds_explain_the_imagefolder_layout_half_classes_and_map_std() {
    let p = project();
    let out = p.run(&["kinds", "split"]);
    let text = stdout(&out);
    assert!(text.contains("root/CLASS/*.jpg"), "{text}");
    assert!(
        text.contains("10 classes at 0.5 train the first 5"),
        "{text}"
    );
    let out = p.run(&["kinds", "evaluate"]);
    let text = stdout(&out);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("map_std "))
        .unwrap_or_else(|| panic!("map_std not explained:\n{text}"));
    assert!(line.contains("alias of map_noninterp"), "{line}");
}
