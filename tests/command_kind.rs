//! `kind = "command"`: the user's own program as a stage (issue 33). Keying by `code`, the
//! exact output contract, metrics into a report, failures with the log's tail, a killed engine,
//! the Slurm path, writes outside the scratch folder, and injection safety. The programs are
//! small `sh` scripts, so these tests need nothing beyond a POSIX shell; the Python example is
//! tested in `command_example`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{with_status, Project};

/// A project with `tool.sh` (writes `${params.value}` to its `result` output and a metric),
/// `lib/helper.sh` (sourced by it) and `notes.txt` (listed nowhere).
fn keyed_project() -> Project {
    let p = Project::new();
    p.write(
        "tool.sh",
        "set -e\n. \"$(dirname \"$0\")/lib/helper.sh\"\nprintf '%s' \"$1\" > \"$2\"\n\
         echo \"{\\\"value\\\": $(scale \"$1\")}\" > metrics.json\n",
    );
    p.write("lib/helper.sh", "scale() { echo \"$1\"; }\n");
    p.write("notes.txt", "not code\n");
    p.write(
        "pipelines/p.toml",
        r#"
[stages.score]
kind = "command"
cmd = ["sh", "${project}/tool.sh", "${params.value}", "${outputs.result}"]
code = ["tool.sh", "lib/"]
outputs = { result = "result.txt", metrics = "metrics.json" }
params = { value = 3, other = "x" }
"#,
    );
    p
}

#[test]
fn a_command_reruns_when_its_code_changes_and_only_then() {
    let p = keyed_project();
    let first = p.run_json("pipelines/p.toml", &[]);
    assert_eq!(with_status(&first, "ran"), vec!["score"], "{first:?}");
    assert_eq!(
        with_status(&p.run_json("pipelines/p.toml", &[]), "cached"),
        vec!["score"]
    );

    // A file no `code` pattern takes: still cached.
    p.write("notes.txt", "edited\n");
    let after_notes = p.run_json("pipelines/p.toml", &[]);
    assert_eq!(
        with_status(&after_notes, "cached"),
        vec!["score"],
        "{after_notes:?}"
    );

    // The same params written in another order: the same key.
    p.write(
        "pipelines/p.toml",
        &std::fs::read_to_string(p.path().join("pipelines/p.toml"))
            .unwrap()
            .replace(
                "params = { value = 3, other = \"x\" }",
                "params = { other = \"x\", value = 3 }",
            ),
    );
    let reordered = p.run_json("pipelines/p.toml", &[]);
    assert_eq!(
        with_status(&reordered, "cached"),
        vec!["score"],
        "{reordered:?}"
    );

    // A file inside a listed folder: reruns; so does the script itself.
    p.write("lib/helper.sh", "scale() { echo \"$1\"; }\n# edited\n");
    let after_lib = p.run_json("pipelines/p.toml", &[]);
    assert_eq!(
        with_status(&after_lib, "ran"),
        vec!["score"],
        "{after_lib:?}"
    );
    p.write(
        "tool.sh",
        &format!(
            "{}# edited\n",
            std::fs::read_to_string(p.path().join("tool.sh")).unwrap()
        ),
    );
    let after_tool = p.run_json("pipelines/p.toml", &[]);
    assert_eq!(
        with_status(&after_tool, "ran"),
        vec!["score"],
        "{after_tool:?}"
    );

    // Python's byte-code beside a listed module is never keyed.
    p.write("lib/__pycache__/helper.cpython-312.pyc", "bytes");
    let after_pyc = p.run_json("pipelines/p.toml", &[]);
    assert_eq!(
        with_status(&after_pyc, "cached"),
        vec!["score"],
        "{after_pyc:?}"
    );

    let shown = p.show_one("pipelines/p.toml", "score");
    assert_eq!(shown["metrics"]["value"], 3.0, "{shown}");
}

#[test]
fn a_listed_environment_variable_is_keyed_and_others_are_not() {
    let p = keyed_project();
    let text = std::fs::read_to_string(p.path().join("pipelines/p.toml")).unwrap();
    p.write(
        "pipelines/p.toml",
        &text.replace("code = [", "env = [\"CMD_TEST_KEYED\"]\ncode = ["),
    );
    let run = |keyed: &str, other: &str| {
        let out = p
            .cmd(&["run", "pipelines/p.toml", "--json"])
            .env("CMD_TEST_KEYED", keyed)
            .env("CMD_TEST_OTHER", other)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        crate::support::statuses(&out.stdout)
    };
    assert_eq!(with_status(&run("a", "1"), "ran"), vec!["score"]);
    assert_eq!(with_status(&run("a", "2"), "cached"), vec!["score"]);
    assert_eq!(with_status(&run("b", "2"), "ran"), vec!["score"]);
}

/// A project whose one command stage runs `script` (an `sh` script in the project) with
/// `outputs`.
fn script_project(script: &str, outputs: &str) -> Project {
    let p = Project::new();
    p.write("script.sh", script);
    p.write(
        "pipelines/p.toml",
        &format!(
            "[stages.step]\nkind = \"command\"\ncmd = [\"sh\", \"${{project}}/script.sh\"]\n\
             code = [\"script.sh\"]\noutputs = {outputs}\n"
        ),
    );
    p
}

fn failed_run(p: &Project) -> String {
    let out = p.run(&["run", "pipelines/p.toml"]);
    assert!(!out.status.success(), "the run should fail: {out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn nothing_recorded(p: &Project) {
    let plan = p.plan_json("pipelines/p.toml", &[]);
    assert!(with_status(&plan, "cached").is_empty(), "{plan:?}");
}

#[test]
fn a_missing_declared_output_fails_the_stage_and_records_nothing() {
    let p = script_project("echo a > a.txt\n", "{ a = \"a.txt\", b = \"b.txt\" }");
    let stderr = failed_run(&p);
    assert!(
        stderr.contains("it did not write `b.txt` (output `b`)"),
        "{stderr}"
    );
    nothing_recorded(&p);
}

#[test]
fn an_undeclared_file_fails_the_stage_and_records_nothing() {
    let p = script_project("echo a > a.txt\necho x > stray.log\n", "{ a = \"a.txt\" }");
    let stderr = failed_run(&p);
    assert!(
        stderr.contains("it wrote `stray.log`, which `outputs` does not declare"),
        "{stderr}"
    );
    nothing_recorded(&p);
}

#[test]
fn a_non_zero_exit_fails_with_the_tail_of_the_log() {
    let p = script_project(
        "echo 'loading the teacher'\necho 'Traceback: shape mismatch 8 != 16' >&2\nexit 3\n",
        "{ a = \"a.txt\" }",
    );
    let stderr = failed_run(&p);
    assert!(stderr.contains("exited with status 3"), "{stderr}");
    assert!(stderr.contains("loading the teacher"), "{stderr}");
    assert!(
        stderr.contains("Traceback: shape mismatch 8 != 16"),
        "{stderr}"
    );
    nothing_recorded(&p);
}

#[test]
fn a_command_writing_into_the_project_folder_is_caught() {
    let p = script_project(
        "echo a > a.txt\necho oops > \"$ASYMFLOW_PROJECT_PROBE/stray.txt\"\n",
        "{ a = \"a.txt\" }",
    );
    let out = p
        .cmd(&["run", "pipelines/p.toml"])
        .env("ASYMFLOW_PROJECT_PROBE", p.path())
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the command changed the project folder, outside its scratch folder (created stray.txt)"),
        "{stderr}"
    );
    nothing_recorded(&p);
}

#[test]
fn metrics_and_losses_of_a_command_feed_a_report() {
    let p = Project::new();
    p.write(
        "train.sh",
        "set -e\nseed=\"$1\"\n\
         echo \"{\\\"score\\\": $seed.5, \\\"epochs_run\\\": 2}\" > metrics.json\n\
         echo '{\"epochs\": [{\"epoch\": 1, \"loss\": 0.9}, {\"epoch\": 2, \"loss\": 0.4}]}' > loss.json\n\
         echo weights > model.bin\n",
    );
    p.write(
        "pipelines/p.toml",
        r#"
[sweep]
seed = [1, 2]

[stages.train]
kind = "command"
cmd = ["sh", "${project}/train.sh", "${params.seed}"]
code = ["train.sh"]
outputs = { model = "model.bin", metrics = "metrics.json", loss = "loss.json" }
params = { seed = "${sweep.seed}" }

[stages.table]
kind = "report"
inputs = { results = "train", losses = "train" }
params = { rows = "stage", metrics = ["score"], format = "fixed:1", plot_xy = [], title = "Scores" }
"#,
    );
    let out = p.run(&["run", "pipelines/p.toml"]);
    assert!(out.status.success(), "{out:?}");
    // The mean over the two seeds, 1.5 and 2.5.
    let table = std::fs::read_to_string(p.path().join("reports/p/table/table.md")).unwrap();
    assert!(
        table.contains("| train ") && table.contains("2.0"),
        "{table}"
    );
    let svgs: Vec<String> = std::fs::read_dir(p.path().join("reports/p/table"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".svg"))
        .collect();
    assert!(!svgs.is_empty(), "a loss chart: {svgs:?}");

    let metrics = p.run(&["metrics", "pipelines/p.toml", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&metrics.stdout).unwrap();
    let scores: Vec<f64> = doc["instances"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["stage"] == "train")
        .map(|i| i["metrics"]["score"].as_f64().unwrap())
        .collect();
    assert_eq!(scores, vec![1.5, 2.5], "{doc}");
}

#[test]
fn a_metrics_file_that_is_not_flat_numbers_fails_the_stage() {
    let p = script_project(
        "echo '{\"map\": \"high\"}' > metrics.json\n",
        "{ metrics = \"metrics.json\" }",
    );
    let stderr = failed_run(&p);
    assert!(
        stderr.contains("`map` is \"high\", not a finite number"),
        "{stderr}"
    );
}

/// The arguments the last run of `argv.sh` received (NUL-separated in its `args` output).
fn received_args(p: &Project, stage: &str) -> Vec<String> {
    let shown = p.show_one("pipelines/p.toml", stage);
    let rel = shown["outputs"]["args.bin"]["path"]
        .as_str()
        .unwrap_or_else(|| panic!("no args output: {shown}"));
    let bytes = std::fs::read(p.path().join(rel)).unwrap();
    String::from_utf8(bytes)
        .unwrap()
        .split_terminator('\0')
        .map(String::from)
        .collect()
}

#[test]
fn parameters_reach_the_program_as_single_arguments_without_a_shell() {
    let p = Project::new();
    p.write(
        "argv.sh",
        "for a in \"$@\"; do printf '%s\\0' \"$a\"; done > args.bin\n",
    );
    p.write(
        "pipelines/p.toml",
        r#"
[stages.dump]
kind = "command"
cmd = ["sh", "${project}/argv.sh", "${params.quote}", "${params.subst}", "${params.lines}", "x${params.semi}y", "${params.n}", "$HOME"]
code = ["argv.sh"]
outputs = { args = "args.bin" }
params = { quote = "it's \"quoted\"", subst = "$(touch pwned) `touch pwned2`", lines = "one\ntwo", semi = "; rm -rf / #", n = 0.5 }
"#,
    );
    let out = p.run(&["run", "pipelines/p.toml"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        received_args(&p, "dump"),
        vec![
            "it's \"quoted\"",
            "$(touch pwned) `touch pwned2`",
            "one\ntwo",
            "x; rm -rf / #y",
            "0.5",
            "$HOME",
        ]
    );
    for stray in ["pwned", "pwned2"] {
        assert!(!p.path().join(stray).exists());
    }
}

#[test]
fn a_shell_command_runs_only_when_shell_is_written() {
    let p = Project::new();
    p.write(
        "pipelines/p.toml",
        r#"
[stages.piped]
kind = "command"
shell = true
cmd = "printf '${params.text}' | tr ' ' '\\n' > ${outputs.words}; test -n \"${HOME}\""
params = { text = "a b" }
outputs = { words = "words.txt" }
"#,
    );
    let out = p.run(&["run", "pipelines/p.toml"]);
    assert!(out.status.success(), "{out:?}");
    let shown = p.show_one("pipelines/p.toml", "piped");
    let rel = shown["outputs"]["words.txt"]["path"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(p.path().join(rel)).unwrap(), "a\nb");

    p.write(
        "pipelines/p.toml",
        "[stages.piped]\nkind = \"command\"\ncmd = \"printf a > a.txt\"\noutputs = { a = \"a.txt\" }\n",
    );
    let out = p.run(&["plan", "pipelines/p.toml"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("p.toml:3:7"), "{stderr}");
    assert!(stderr.contains("add `shell = true`"), "{stderr}");
}

#[test]
fn a_command_reads_an_upstream_output_and_the_job_file() {
    let p = Project::new();
    p.write("make.sh", "printf 'w8' > \"$1\"\n");
    p.write(
        "use.sh",
        "set -e\ncat \"$1\" > seen.txt\n\
         grep -q '\"lr\": 0.001' \"$ASYMFLOW_JOB\"\ngrep -q '\"device\": \"cpu\"' \"$ASYMFLOW_JOB\"\n\
         [ ! -w \"$1\" ] || [ \"$(id -u)\" = 0 ]\n",
    );
    p.write(
        "pipelines/p.toml",
        r#"
[stages.teacher]
kind = "command"
cmd = ["sh", "${project}/make.sh", "${outputs.model}"]
code = ["make.sh"]
outputs = { model = "weights.bin" }

[stages.student]
kind = "command"
cmd = ["sh", "${project}/use.sh", "${inputs.teacher.model}"]
code = ["use.sh"]
inputs = { teacher = "teacher" }
outputs = { seen = "seen.txt" }
params = { lr = 1e-3 }
"#,
    );
    let out = p.run(&["run", "pipelines/p.toml"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = p.show_one("pipelines/p.toml", "student");
    let rel = shown["outputs"]["seen.txt"]["path"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(p.path().join(rel)).unwrap(), "w8");
}

#[test]
fn command_fields_are_checked_at_their_place_in_the_file() {
    let p = Project::new();
    let cases: &[(&str, &str, &str)] = &[
        (
            "[stages.a]\nkind = \"test-echo\"\ncmd = [\"true\"]\n",
            "p.toml:3:1",
            "it is a field of `kind = \"command\"` stages",
        ),
        (
            "[stages.a]\nkind = \"command\"\ncmd = [\"sh\", \"${params.lr}\"]\n",
            "p.toml:3:14",
            "names parameter `lr`, which is not given",
        ),
        (
            "[stages.a]\nkind = \"command\"\ncmd = [\"sh\", \"${sweep.seed}\"]\n",
            "p.toml:3:14",
            "is not a placeholder of `cmd`",
        ),
        (
            "[stages.a]\nkind = \"command\"\ncmd = [\"sh\", \"${outputs.model}\"]\n",
            "p.toml:3:14",
            "names output `model`, which is not declared",
        ),
        (
            "[stages.a]\nkind = \"command\"\ncmd = [\"sh\"]\noutputs = { scores = \"metrics.json\" }\n",
            "p.toml:4:22",
            "`metrics.json` is the file of the `metrics` output",
        ),
        (
            "[stages.a]\nkind = \"command\"\ncmd = [\"sh\"]\nresources = { device = \"tpu\" }\n",
            "p.toml:4:24",
            "`device` must be \"gpu\"",
        ),
        (
            "[stages.a]\nkind = \"command\"\ncmd = [\"sh\"]\ncode = [\"nothing-here.py\"]\n",
            "",
            "`code` pattern `nothing-here.py` matches no file",
        ),
    ];
    for (text, place, message) in cases {
        p.write("pipelines/p.toml", text);
        let out = p.run(&["plan", "pipelines/p.toml"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let all = format!("{stderr}{stdout}");
        assert!(all.contains(message), "{text}\n{all}");
        assert!(all.contains(place), "{text}\n{all}");
    }
}

/// The scratch folder of the running `step` instance whose log says `started`.
fn wait_started(cache: &Path, limit: Duration) -> PathBuf {
    let start = Instant::now();
    loop {
        if let Ok(dirs) = std::fs::read_dir(cache.join("tmp")) {
            for dir in dirs.flatten() {
                let log = dir.path().join("out/log.txt");
                if std::fs::read_to_string(&log).is_ok_and(|t| t.contains("started")) {
                    return dir.path();
                }
            }
        }
        assert!(start.elapsed() < limit, "the command did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn kill_9_of_the_engine_mid_command_reruns_only_that_command() {
    let p = Project::new();
    p.write("fast.sh", "echo fast > fast.txt\n");
    p.write(
        "slow.sh",
        "echo $$ > \"$TMPDIR/pid\"\necho started\nsleep \"${CMD_TEST_SLEEP:-0}\"\necho done > slow.txt\n",
    );
    p.write(
        "pipelines/p.toml",
        r#"
[stages.fast]
kind = "command"
cmd = ["sh", "${project}/fast.sh"]
code = ["fast.sh"]
outputs = { out = "fast.txt" }

[stages.step]
kind = "command"
cmd = ["sh", "${project}/slow.sh"]
code = ["slow.sh"]
inputs = { after = "fast" }
outputs = { out = "slow.txt" }
"#,
    );
    let mut engine = p
        .cmd(&["run", "pipelines/p.toml"])
        .env("CMD_TEST_SLEEP", "60")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let scratch = wait_started(&p.path().join("cache"), Duration::from_secs(60));
    let pid: i32 = std::fs::read_to_string(scratch.join("tmp/pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    engine.kill().unwrap();
    engine.wait().unwrap();

    // The command dies with its engine.
    let start = Instant::now();
    while Path::new(&format!("/proc/{pid}")).exists() {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if state.split_whitespace().nth(2) == Some("Z") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the command outlived its engine"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let second = p.run_json("pipelines/p.toml", &[]);
    assert_eq!(with_status(&second, "cached"), vec!["fast"], "{second:?}");
    assert_eq!(with_status(&second, "ran"), vec!["step"], "{second:?}");
}

#[test]
fn a_gpu_command_runs_on_the_node_through_slurm() {
    use crate::slurm::FakeSlurm;
    use crate::slurm_engine::{asymflow, wait_exit, wait_for};
    let fake = FakeSlurm::new();
    let dir = fake.project();
    std::fs::create_dir_all(dir.join("pipelines")).unwrap();
    std::fs::write(
        dir.join("train.sh"),
        "echo \"{\\\"score\\\": $1}\" > metrics.json\necho \"node $SLURM_JOB_ID\" > where.txt\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("pipelines/engine.toml"),
        r#"
[stages.train]
kind = "command"
cmd = ["sh", "${project}/train.sh", "${params.score}"]
code = ["train.sh"]
outputs = { where = "where.txt", metrics = "metrics.json" }
params = { score = 7 }
resources = { device = "gpu" }
"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("asymflow.toml"),
        format!(
            "[executor.slurm]\npartition = \"gpu\"\ntime = \"01:00:00\"\nmem = \"4G\"\n\
             poll_interval = 0.05\nbin_dir = \"{}\"\n\n[executor.slurm.device]\ngres = \"gpu:1\"\n",
            fake.bin().display()
        ),
    )
    .unwrap();
    let log = dir.join("run.log");
    let mut run = asymflow(
        &dir,
        &["run", "pipelines/engine.toml", "--executor", "slurm"],
    )
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(&log).unwrap())
    .spawn()
    .unwrap();
    wait_for(&log, "as Slurm job", 1, Duration::from_secs(60));
    let ids = fake.job_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(fake.run(&ids[0]), 0);
    let exit = wait_exit(&mut run, Duration::from_secs(60), &log);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(exit.success(), "{text}");
    let out = asymflow(&dir, &["metrics", "pipelines/engine.toml", "--json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["instances"][0]["metrics"]["score"], 7.0, "{doc}");
    let out = asymflow(&dir, &["show", "pipelines/engine.toml", "train", "--json"])
        .output()
        .unwrap();
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rel = shown[0]["outputs"]["where.txt"]["path"].as_str().unwrap();
    let place = std::fs::read_to_string(dir.join(rel)).unwrap();
    assert_eq!(place.trim(), format!("node {}", ids[0]));
}

/// `PYTHONPATH` that gives `import torch`: the caller's, then the folder of the torch wheel the
/// build's libtorch comes from (scripts/libtorch.sh); `None` when `python3` cannot import torch.
fn python_with_torch() -> Option<String> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let site = std::env::var_os("LIBTORCH")
        .map(PathBuf::from)
        .and_then(|l| l.parent().map(Path::to_path_buf))
        .or_else(|| {
            std::env::var_os("ASYMFLOW_HOME").map(|h| PathBuf::from(h).join("torch-2.11.0"))
        })
        .or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| Some(home.join(".cache")))
                .map(|c| c.join("asymflow/torch-2.11.0"))
        })?;
    let mut path = std::env::var("PYTHONPATH").unwrap_or_default();
    if site.is_dir() {
        if !path.is_empty() {
            path.push(':');
        }
        path.push_str(&site.to_string_lossy());
    }
    let ok = std::process::Command::new("python3")
        .args(["-c", "import torch"])
        .env("PYTHONPATH", &path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(path)
}

#[test]
fn command_example_a_pytorch_student_beside_the_native_one_in_one_table() {
    let Some(pythonpath) = python_with_torch() else {
        println!("skipped: python3 cannot import torch here (pipelines/examples/command-distill needs it)");
        return;
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let p = Project::new();
    crate::support::copy_tree(&repo.join("stages"), &p.path().join("stages"));
    crate::support::copy_tree(
        &repo.join("pipelines/examples/command-distill"),
        &p.path().join("pipelines/examples/command-distill"),
    );
    let file = "pipelines/examples/command-distill/pipeline.toml";
    let run = || {
        let out = p
            .cmd(&["run", file, "--json"])
            .env("PYTHONPATH", &pythonpath)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        crate::support::statuses(&out.stdout)
    };
    let first = run();
    let students: Vec<String> = with_status(&first, "ran")
        .into_iter()
        .filter(|l| l.starts_with("python-student"))
        .collect();
    assert_eq!(
        students,
        vec!["python-student[seed=0]", "python-student[seed=1]"]
    );
    let table =
        std::fs::read_to_string(p.path().join("reports/command-distill/table/table.md")).unwrap();
    for row in ["teacher-16px", "native", "python"] {
        assert!(
            table.lines().any(|l| l.starts_with(&format!("| {row} "))),
            "{table}"
        );
    }
    // Deterministic and keyed by content: a second run computes nothing.
    let second = run();
    assert!(with_status(&second, "ran").is_empty(), "{second:?}");
}
