//! The command line a researcher lives in: override typos, plan-time report checks, choosing
//! what runs, getting results out, read-only commands, exit codes and wording.

use std::path::Path;

use serde_json::Value;

use crate::support::{with_status, Project};

const PIPELINE: &str = r#"
[pipeline]
name = "cli"

[vars]
res = 10

[sweep]
seed = [0, 1]
pair = { width = [8, 16], depth = [1, 2] }

[stages.data]
kind = "test-echo"
params = { value = "${vars.res}" }

[stages.model]
kind = "test-echo"
inputs = { input = "data" }
params = { value = "${sweep.seed}", sleep_ms = "${sweep.width}" }

[stages.other]
kind = "test-echo"
inputs = { input = "data" }
params = { value = 3 }

[stages.table]
kind = "report"
inputs = { results = ["model"] }
params = { rows = "width", metrics = ["value"], over = "seed", plot_xy = [] }
"#;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn project() -> Project {
    let p = Project::new();
    p.write("pipelines/cli.toml", PIPELINE);
    p
}

/// A copy of the pipeline with one line replaced.
fn edited(p: &Project, from: &str, to: &str) {
    assert!(PIPELINE.contains(from), "{from}");
    p.write("pipelines/cli.toml", &PIPELINE.replace(from, to));
}

#[test]
fn override_typos_are_rejected_with_did_you_mean() {
    let p = project();
    for (args, expected) in [
        (
            vec!["--sweep", "seeds=0,1,2"],
            "no sweep axis `seeds` is declared",
        ),
        (vec!["--set", "vars.rez=3"], "no var `rez` is declared"),
    ] {
        let mut full = vec!["plan", "pipelines/cli.toml"];
        full.extend(args.iter().copied());
        let out = p.run(&full);
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
        assert!(stderr(&out).contains(expected), "{}", stderr(&out));
        assert!(stderr(&out).contains("did you mean"), "{}", stderr(&out));
    }
    assert!(!p.path().join("cache").exists(), "plan created a cache");
}

#[test]
fn sweeping_a_zip_group_member_names_the_group_and_the_set_form() {
    let p = project();
    let out = p.run(&["plan", "pipelines/cli.toml", "--sweep", "width=4,8"]);
    assert_eq!(out.status.code(), Some(3));
    let err = stderr(&out);
    assert!(err.contains("belongs to zip group `pair`"), "{err}");
    assert!(
        err.contains("--set 'sweep.pair={ width = [8,16], depth = [1,2] }'"),
        "{err}"
    );
    // The form it shows works.
    let out = p.run(&[
        "plan",
        "pipelines/cli.toml",
        "--json",
        "--set",
        "sweep.pair={ width = [4], depth = [1] }",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("\"width\": 4"));
}

#[test]
fn report_names_are_checked_at_plan_time() {
    let p = project();
    for (from, to, expected) in [
        (
            "metrics = [\"value\"]",
            "metrics = [\"Value\"]",
            "names metric `Value`, which none of its inputs records",
        ),
        (
            "rows = \"width\"",
            "rows = \"widht\"",
            "`rows` names `widht`, which none of its inputs has",
        ),
        (
            "plot_xy = []",
            "plot_xy = [\"width\", \"value\"]",
            "`plot_xy` names metric `width`",
        ),
    ] {
        edited(&p, from, to);
        let out = p.run(&["plan", "pipelines/cli.toml"]);
        assert_eq!(out.status.code(), Some(3), "{to}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(expected), "{err}");
        assert!(err.contains("pipelines/cli.toml:"), "no location: {err}");
    }
    edited(&p, "rows = \"width\"", "rows = \"widht\"");
    assert!(stderr(&p.run(&["plan", "pipelines/cli.toml"])).contains("did you mean `width`?"));
}

#[test]
fn run_named_stages_runs_only_them_and_what_they_need() {
    let p = project();
    let ran = p.run_json("pipelines/cli.toml", &["other"]);
    assert_eq!(ran.keys().collect::<Vec<_>>(), ["data", "other"]);
    let ran = p.run_json("pipelines/cli.toml", &["model[seed=0,width=8,depth=1]"]);
    assert!(ran.contains_key("model[depth=1,seed=0,width=8]"), "{ran:?}");
    refuses_a_misspelt_stage(&p, "run");
}

/// `COMMAND pipelines/cli.toml modle` is a bad-file error (exit 3) that suggests `model`.
fn refuses_a_misspelt_stage(p: &Project, command: &str) {
    let out = p.run(&[command, "pipelines/cli.toml", "modle"]);
    assert_eq!(out.status.code(), Some(3), "{command}");
    assert!(
        stderr(&out).contains("did you mean `model`?"),
        "{command}: {}",
        stderr(&out)
    );
}

/// `plan STAGE...` narrows exactly as `run STAGE...` does: the named stages and what they need.
#[test]
fn plan_named_stages_lists_only_them_and_what_they_need() {
    let p = project();
    let out = p.run(&["plan", "pipelines/cli.toml", "other", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    let labels: Vec<&str> = plan["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["data", "other"]);
    let text = stdout(&p.run(&["plan", "pipelines/cli.toml", "table"]));
    assert!(text.contains("model[") && text.contains("table"), "{text}");
    assert!(!text.contains("other"), "{text}");
    refuses_a_misspelt_stage(&p, "plan");
    assert!(!p.path().join("cache").exists(), "plan created a cache");
}

#[test]
fn force_recomputes_a_cached_stage() {
    let p = project();
    p.run_json("pipelines/cli.toml", &[]);
    let again = p.run_json("pipelines/cli.toml", &["--force", "other"]);
    assert_eq!(again["other"].0, "ran");
    assert!(again["other"].1.contains("forced"), "{:?}", again["other"]);
    assert_eq!(again["data"].0, "cached");
    assert_eq!(with_status(&again, "ran"), ["other"]);
    let new = p.run_json(
        "pipelines/cli.toml",
        &["--force", "model[seed=1,width=16,depth=2]"],
    );
    assert_eq!(with_status(&new, "ran"), ["model[depth=2,seed=1,width=16]"]);
}

#[test]
fn keep_going_renders_reports_from_what_finished_and_failures_read_well() {
    let p = project();
    p.write(
        "pipelines/cli.toml",
        &PIPELINE
            .replace(
                "pair = { width = [8, 16], depth = [1, 2] }",
                "width = [8, 16]\nbroken = [false, true]",
            )
            .replace(
                "params = { value = \"${sweep.seed}\", sleep_ms = \"${sweep.width}\" }",
                "params = { value = \"${sweep.seed}\", sleep_ms = \"${sweep.width}\", fail = \"${sweep.broken}\" }",
            )
            .replace("rows = \"width\"", "rows = [\"width\", \"broken\"]"),
    );
    let out = p.run(&["run", "pipelines/cli.toml", "--keep-going"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let table = std::fs::read_to_string(p.path().join("reports/cli/table/table.md")).unwrap();
    assert!(table.contains('-'), "{table}");
    let err = stderr(&out);
    assert!(err.contains("failed: model[broken=true"), "{err}");
    assert!(err.contains("  params:\n"), "{err}");
    assert!(err.contains("    fail = true"), "{err}");
    assert_eq!(
        err.matches("error: ").count(),
        4,
        "each failure once: {err}"
    );
}

#[test]
fn runs_with_overrides_publish_beside_the_plain_reports_and_say_so() {
    let p = project();
    p.run_json("pipelines/cli.toml", &[]);
    let plain = p.path().join("reports/cli/table/table.md");
    let before = std::fs::read_to_string(&plain).unwrap();
    p.run_json("pipelines/cli.toml", &["--sweep", "seed=7"]);
    assert_eq!(std::fs::read_to_string(&plain).unwrap(), before);
    let dirs: Vec<String> = std::fs::read_dir(p.path().join("reports"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("cli+"))
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let table = std::fs::read_to_string(
        p.path()
            .join("reports")
            .join(&dirs[0])
            .join("table/table.md"),
    )
    .unwrap();
    assert!(table.contains("Overrides: `--sweep seed=7`"), "{table}");
    let mine = p.path().join("mine");
    p.run_json(
        "pipelines/cli.toml",
        &["--sweep", "seed=7", "--reports", mine.to_str().unwrap()],
    );
    assert!(mine.join("table/table.md").is_file());
    // `report` repeats the overrides in the command it prints.
    let out = p.run(&["report", "pipelines/cli.toml", "--sweep", "seed=8"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("asymflow run pipelines/cli.toml --sweep seed=8"),
        "{}",
        stderr(&out)
    );
    let out = p.run(&["report", "pipelines/cli.toml", "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["reports"][0]["instance"], "table");
}

#[test]
fn metrics_prints_one_row_per_instance() {
    let p = project();
    let out = p.run(&["metrics", "pipelines/cli.toml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no cache at"), "{}", stderr(&out));
    p.run_json("pipelines/cli.toml", &[]);
    let out = p.run(&["metrics", "pipelines/cli.toml", "model", "--csv"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "stage,depth,seed,width,value,key");
    assert_eq!(lines.len(), 5, "{text}");
    // seed 1 with data's value 10: 1 + 10.
    assert!(
        lines.iter().any(|l| l.starts_with("model,2,1,16,11,")),
        "{text}"
    );
    let out = p.run(&["metrics", "pipelines/cli.toml", "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let all = doc["instances"].as_array().unwrap();
    assert_eq!(all.len(), 7);
    assert!(all.iter().all(|i| i["key"].as_str().unwrap().len() == 64));
}

#[test]
fn show_and_why_take_labels_and_show_paths_and_params() {
    let p = project();
    // Before anything ran: the resolved params, and no cache is created.
    let out = p.run(&[
        "show",
        "pipelines/cli.toml",
        "model[seed=1,width=16,depth=2]",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc.as_array().unwrap().len(), 1);
    assert_eq!(doc[0]["params"]["sleep_ms"], 16);
    let out = p.run(&["show", "pipelines/cli.toml", "model[seed=0]", "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc.as_array().unwrap().len(), 2, "every seed-0 instance");
    assert!(!p.path().join("cache").exists());
    let out = p.run(&[
        "plan",
        "pipelines/cli.toml",
        "--json",
        "--set",
        "vars.res=4",
    ]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["instances"][0]["params"]["value"], 4);
    assert!(!p.path().join("cache").exists());

    p.run_json("pipelines/cli.toml", &[]);
    let out = p.run(&[
        "show",
        "pipelines/cli.toml",
        "model[seed=0, width=8, depth=1]",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let path = text
        .lines()
        .find(|l| l.trim_start().starts_with("value.json"))
        .and_then(|l| l.split_whitespace().last())
        .unwrap_or_else(|| panic!("{text}"));
    assert!(Path::new(path).is_file(), "{path} is not a file");
    let out = p.run(&["why", "pipelines/cli.toml", "model[width=8,seed=0]"]);
    assert_eq!(stdout(&out).lines().count(), 1, "{}", stdout(&out));
    assert!(stdout(&out).contains("fresh"));
}

#[test]
fn read_only_commands_never_create_a_cache() {
    let p = project();
    let out = p.run(&["status"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no cache at"), "{}", stderr(&out));
    let out = p.run(&["plan", "pipelines/cli.toml"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("to-run"));
    assert!(stdout(&out).contains("new"));
    let out = p.run(&["report", "pipelines/cli.toml"]);
    assert!(stderr(&out).contains("no cache at"), "{}", stderr(&out));
    assert!(!p.path().join("cache").exists());
}

#[test]
fn status_shows_a_dead_process_lease_as_stale_and_counts_in_the_singular() {
    let p = project();
    p.run_json("pipelines/cli.toml", &["other"]);
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let conn = rusqlite::Connection::open(p.path().join("cache/index.sqlite")).unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    conn.execute(
        "INSERT INTO leases (key, owner, host, pid, heartbeat) VALUES (?1, 'x', ?2, ?3, ?4)",
        rusqlite::params![
            "0123456789abcdef0123",
            host,
            dead as i64,
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs_f64()
        ],
    )
    .unwrap();
    drop(conn);
    let out = p.run(&["status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("1 lease:"), "{text}");
    assert!(text.contains("stale"), "{text}");
    assert!(text.contains("2 results"), "{text}");
}

#[test]
fn exit_codes_tell_a_bad_file_from_a_failed_stage() {
    let p = project();
    p.write("pipelines/bad.toml", "[stages.x]\nkind = \"test-ech\"\n");
    assert_eq!(p.run(&["run", "pipelines/bad.toml"]).status.code(), Some(3));
    p.write(
        "pipelines/fails.toml",
        "[stages.x]\nkind = \"test-echo\"\nparams = { fail = true }\n",
    );
    assert_eq!(
        p.run(&["run", "pipelines/fails.toml"]).status.code(),
        Some(4)
    );
    p.write(
        "pipelines/missing.toml",
        "[stages.x]\nkind = \"import\"\nparams = { file = \"weights/none.safetensors\" }\n",
    );
    let out = p.run(&["plan", "pipelines/missing.toml"]);
    assert_eq!(out.status.code(), Some(4), "{}", stdout(&out));
    assert!(stdout(&out).contains("cannot-run"), "{}", stdout(&out));
    assert!(stdout(&out).contains("none.safetensors does not exist"));
    let help = stdout(&p.run(&["run", "--help"]));
    assert!(help.contains("Exit codes"), "{help}");
    assert!(help.contains("Examples"), "{help}");
}

#[test]
fn plan_into_a_closed_pipe_exits_quietly() {
    let p = Project::new();
    let values: Vec<String> = (0..3000).map(|i| i.to_string()).collect();
    p.write(
        "pipelines/big.toml",
        &format!(
            "[sweep]\nseed = [{}]\n\n[stages.x]\nkind = \"test-echo\"\nparams = {{ value = \"${{sweep.seed}}\" }}\n",
            values.join(", ")
        ),
    );
    let bin = env!("CARGO_BIN_EXE_asymflow");
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "'{bin}' plan pipelines/big.toml | head -1 >/dev/null; echo ${{PIPESTATUS[0]}}"
        ))
        .current_dir(p.path())
        .env("ASYMFLOW_TEST_KINDS", "1")
        .output()
        .unwrap();
    let code = stdout(&out).trim().to_string();
    assert_ne!(code, "101", "panicked: {}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
}

#[test]
fn completions_and_quiet_work() {
    let p = project();
    let out = p.run(&["completions", "bash"]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("asymflow"));
    let out = p.run(&["-q", "run", "pipelines/cli.toml", "other"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    let out = p.run(&[
        "run",
        "pipelines/cli.toml",
        "other",
        "-v",
        "--color",
        "never",
    ]);
    assert!(stderr(&out).contains("cached   data"), "{}", stderr(&out));
    let out = p.run(&["run", "pipelines/cli.toml", "--color", "always", "-v"]);
    assert!(stderr(&out).contains("\x1b[32m"), "{}", stderr(&out));
}

#[test]
fn declared_ranges_are_checked_at_plan_time() {
    let p = Project::new();
    for (stage, expected) in [
        (
            "[stages.t]\nkind = \"train-classifier\"\ninputs = { split = \"s\" }\nparams = { epochs = 0 }\n",
            "parameter `epochs` of kind `train-classifier` must be >= 1, found 0",
        ),
        (
            "[stages.t]\nkind = \"train-classifier\"\ninputs = { split = \"s\" }\nparams = { crop_min = 0 }\n",
            "parameter `crop_min` of kind `train-classifier` must be in (0, 1], found 0",
        ),
        (
            "[sweep]\nres = [32, 0]\n\n[stages.t]\nkind = \"train-classifier\"\ninputs = { split = \"s\" }\nparams = { resolution = \"${sweep.res}\" }\n",
            "found 0 (with res = 0)",
        ),
    ] {
        p.write(
            "pipelines/r.toml",
            &format!("{stage}\n[stages.s]\nkind = \"split\"\nparams = {{ dataset = \"synthetic\" }}\n"),
        );
        let out = p.run(&["plan", "pipelines/r.toml"]);
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
        assert!(stderr(&out).contains(expected), "{}", stderr(&out));
    }
    let kinds = stdout(&p.run(&["kinds", "train-classifier"]));
    assert!(kinds.contains("float in (0, 1]"), "{kinds}");
}

#[test]
fn every_command_help_has_examples() {
    let p = Project::new();
    for command in [
        "run",
        "plan",
        "why",
        "status",
        "show",
        "report",
        "metrics",
        "kinds",
        "completions",
        "cache verify",
        "cache gc",
        "data export",
    ] {
        let mut args: Vec<&str> = command.split(' ').collect();
        args.push("--help");
        let out = p.run(&args);
        assert!(out.status.success(), "{command}: {}", stderr(&out));
        assert!(
            stdout(&out).contains("Examples:"),
            "{command} --help has no examples"
        );
    }
}

/// The number in gc's summary line: "would delete N unreferenced objects" / "deleted N ...".
fn gc_count(stdout: &[u8]) -> usize {
    let text = String::from_utf8_lossy(stdout);
    let line = text
        .lines()
        .find(|l| l.contains("unreferenced objects"))
        .unwrap_or_else(|| panic!("no gc summary in:\n{text}"));
    line.split_whitespace()
        .find_map(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no count in {line}"))
}

#[test]
fn gc_dry_run_reports_exactly_what_the_real_run_deletes() {
    let p = Project::new();
    p.write(
        "pipelines/g.toml",
        "[stages.a]\nkind = \"test-echo\"\nparams = { value = 1 }\n[stages.b]\nkind = \"test-echo\"\ninputs = { input = \"a\" }\n",
    );
    p.run_json("pipelines/g.toml", &[]);
    p.run_json("pipelines/g.toml", &["--set", "stages.a.params.value=2"]);
    let dry = p.run(&["cache", "gc", "--dry-run", "--older-than", "0"]);
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    let would = gc_count(&dry.stdout);
    assert!(
        would > 0,
        "every result is older than 0 days, so every object goes"
    );
    let real = p.run(&["cache", "gc", "--older-than", "0"]);
    assert!(
        real.status.success(),
        "{}",
        String::from_utf8_lossy(&real.stderr)
    );
    assert_eq!(gc_count(&real.stdout), would);
}

#[test]
fn gc_keep_keeps_exactly_what_the_named_pipelines_use() {
    let p = Project::new();
    p.write(
        "pipelines/keep.toml",
        "[stages.a]\nkind = \"test-echo\"\nparams = { value = 1 }\n",
    );
    p.write(
        "pipelines/drop.toml",
        "[stages.other]\nkind = \"test-echo\"\nparams = { value = 7 }\n",
    );
    p.run_json("pipelines/keep.toml", &[]);
    p.run_json("pipelines/drop.toml", &[]);
    let dry = p.run(&["cache", "gc", "--dry-run", "--keep", "pipelines/keep.toml"]);
    let real = p.run(&["cache", "gc", "--keep", "pipelines/keep.toml"]);
    assert!(
        real.status.success(),
        "{}",
        String::from_utf8_lossy(&real.stderr)
    );
    assert_eq!(gc_count(&dry.stdout), gc_count(&real.stdout));
    assert!(gc_count(&real.stdout) > 0);
    let kept = p.plan_json("pipelines/keep.toml", &[]);
    assert_eq!(kept["a"].0, "cached", "{kept:?}");
    let dropped = p.plan_json("pipelines/drop.toml", &[]);
    assert_eq!(dropped["other"].0, "to-run", "{dropped:?}");
}
