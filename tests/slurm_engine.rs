//! `asymflow run --executor slurm` end to end against the fake Slurm tools
//! (tests/fixtures/slurm/bin): the test plays slurmd, moving each job along and running its
//! batch script (the real `asymflow exec`), so engine restarts and Ctrl-C are tested without
//! a cluster and without depending on timing. `slurm_cluster.rs` repeats them on a real Slurm.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::slurm::FakeSlurm;

/// Split and evaluate run here; the two trainings take a device slot, so they go to Slurm.
pub const PIPELINE: &str = r#"
[pipeline]
name = "engine"

[sweep]
seed = [0, 1]

[stages.split]
kind = "test-echo"
params = { value = 1 }

[stages.train]
kind = "test-echo"
inputs = { input = "split" }
params = { value = "${sweep.seed}", device = true }

[stages.evaluate]
kind = "test-echo"
inputs = { input = "train" }
params = { value = 100 }
"#;

/// A project folder holding [`PIPELINE`], with a Slurm profile when `profile` is given.
pub fn project(root: &Path, profile: Option<&str>) -> PathBuf {
    let dir = root.to_path_buf();
    std::fs::create_dir_all(dir.join("pipelines")).unwrap();
    std::fs::write(dir.join("pipelines/engine.toml"), PIPELINE).unwrap();
    if let Some(profile) = profile {
        std::fs::write(dir.join("asymflow.toml"), profile).unwrap();
    }
    dir
}

/// The profile for the fake cluster: its tools, a fast poll, and the test kinds on the node.
fn fake_profile(fake: &FakeSlurm) -> String {
    format!(
        "[executor.slurm]\npartition = \"gpu\"\ntime = \"01:00:00\"\nmem = \"4G\"\n\
         poll_interval = 0.05\nbin_dir = \"{}\"\nsetup = \"export ASYMFLOW_TEST_KINDS=worker\"\n\n\
         [executor.slurm.device]\ngres = \"gpu:1\"\n",
        fake.bin().display()
    )
}

/// `asymflow ARGS` in `dir`, with the test kinds.
pub fn asymflow(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_asymflow"));
    cmd.args(args)
        .current_dir(dir)
        .env("ASYMFLOW_TEST_KINDS", "worker")
        .env_remove("ASYMFLOW_CACHE");
    cmd
}

/// `asymflow run --executor slurm` started in the background, its stderr into `log`.
pub fn spawn_run(dir: &Path, log: &Path) -> Child {
    asymflow(
        dir,
        &["run", "pipelines/engine.toml", "--executor", "slurm"],
    )
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(log).unwrap())
    .spawn()
    .unwrap()
}

/// Waits until `log` holds `count` lines containing `pattern`; its text.
pub fn wait_for(log: &Path, pattern: &str, count: usize, limit: Duration) -> String {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().filter(|l| l.contains(pattern)).count() >= count {
            return text;
        }
        assert!(
            start.elapsed() < limit,
            "no {count} lines with `{pattern}` within {limit:?}:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits for `child` to exit (killing it after `limit`).
pub fn wait_exit(child: &mut Child, limit: Duration, log: &Path) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!(
                "asymflow did not exit within {limit:?}:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Each computed instance's `value` metric (`asymflow metrics --json`).
pub fn values(dir: &Path) -> BTreeMap<String, f64> {
    let out = asymflow(dir, &["metrics", "pipelines/engine.toml", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["instances"]
        .as_array()
        .expect("metrics --json lists instances")
        .iter()
        .map(|r| {
            (
                r["instance"].as_str().unwrap().to_string(),
                r["metrics"]["value"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// The values of a plain local run of [`PIPELINE`].
pub fn local_values() -> BTreeMap<String, f64> {
    let here = tempfile::tempdir().unwrap();
    let dir = project(here.path(), None);
    let out = asymflow(&dir, &["run", "pipelines/engine.toml"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    values(&dir)
}

fn stdout(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_killed_engine_restarted_follows_its_slurm_jobs_and_submits_nothing_twice() {
    let fake = FakeSlurm::new();
    let dir = project(&fake.project(), Some(&fake_profile(&fake)));
    let first_log = dir.join("first.log");
    let mut first = spawn_run(&dir, &first_log);
    wait_for(&first_log, "as Slurm job", 2, Duration::from_secs(60));
    let ids = fake.job_ids();
    assert_eq!(ids.len(), 2, "{ids:?}");
    fake.running(&ids[0]);
    wait_for(&first_log, "is running", 1, Duration::from_secs(30));
    // kill -9: no shutdown, no scancel; the jobs go on without an engine.
    first.kill().unwrap();
    first.wait().unwrap();

    // `status` shows the jobs the dead engine left, from the leases, with their ids.
    let status = stdout(&mut asymflow(&dir, &["status"]));
    for id in &ids {
        assert!(status.contains(&format!("Slurm job {id}")), "{status}");
    }
    assert!(status.contains("train[seed=0]"), "{status}");
    assert!(status.contains("next run follows it"), "{status}");

    // One job finishes while no engine watches; the other is still running at the restart.
    assert_eq!(fake.run(&ids[1]), 0);
    let second_log = dir.join("second.log");
    let mut second = spawn_run(&dir, &second_log);
    wait_for(
        &second_log,
        "submitted by an earlier run",
        2,
        Duration::from_secs(60),
    );
    assert_eq!(fake.run(&ids[0]), 0);
    let exit = wait_exit(&mut second, Duration::from_secs(60), &second_log);
    let text = std::fs::read_to_string(&second_log).unwrap();
    assert!(exit.success(), "{exit:?}\n{text}");
    assert!(text.contains("4 ran, 1 cached, 0 failed"), "{text}");

    let sbatch = fake.sbatch_calls();
    assert_eq!(
        sbatch,
        1,
        "one job array for both trainings, one element per key: {:?}",
        fake.calls()
    );
    assert_eq!(values(&dir), local_values());

    // The leases are gone with the run; `show` lists each training's Slurm log.
    let status = stdout(&mut asymflow(&dir, &["status"]));
    assert!(!status.contains("Slurm job"), "{status}");
    let shown = stdout(&mut asymflow(
        &dir,
        &["show", "pipelines/engine.toml", "train"],
    ));
    // An array element's log is written through the array folder's link to the key's folder,
    // where `show` finds it: the same file.
    let canonical = |p: &str| std::fs::canonicalize(p).ok();
    for id in &ids {
        let log = canonical(&fake.get(id, "output"));
        assert!(log.is_some(), "{id}");
        assert!(
            shown.lines().any(|l| l
                .trim()
                .strip_prefix("slurm log ")
                .is_some_and(|p| canonical(p) == log)),
            "{shown}"
        );
    }
    let json = stdout(&mut asymflow(
        &dir,
        &["show", "pipelines/engine.toml", "train", "--json"],
    ));
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    for shown in doc.as_array().unwrap() {
        assert_eq!(shown["slurm_logs"].as_array().unwrap().len(), 1, "{json}");
    }
}

#[test]
fn ctrl_c_scancels_what_the_run_submitted_and_prints_the_summary() {
    let fake = FakeSlurm::new();
    let dir = project(&fake.project(), Some(&fake_profile(&fake)));
    let log = dir.join("run.log");
    let mut run = spawn_run(&dir, &log);
    wait_for(&log, "as Slurm job", 2, Duration::from_secs(60));
    let ids = fake.job_ids();
    fake.running(&ids[0]);
    wait_for(&log, "is running", 1, Duration::from_secs(30));
    let pid = run.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let exit = wait_exit(&mut run, Duration::from_secs(60), &log);
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(exit.code(), Some(130), "{text}");
    for id in &ids {
        assert_eq!(fake.get(id, "state"), "CANCELLED", "{text}");
        assert!(
            text.contains(&format!("Slurm job {id} was cancelled by this run")),
            "{text}"
        );
    }
    assert!(
        fake.calls().iter().any(|c| c.starts_with("scancel")),
        "{:?}",
        fake.calls()
    );
    assert!(
        text.contains("1 ran, 0 cached, 0 failed, 4 skipped"),
        "{text}"
    );
}

#[test]
fn plan_shows_what_would_go_to_slurm_and_with_which_resources() {
    let fake = FakeSlurm::new();
    let dir = project(&fake.project(), Some(&fake_profile(&fake)));
    let text = stdout(&mut asymflow(
        &dir,
        &["plan", "pipelines/engine.toml", "--executor", "slurm"],
    ));
    let lines: Vec<&str> = text.lines().collect();
    let after = |label: &str| {
        let at = lines
            .iter()
            .position(|l| l.contains(label))
            .unwrap_or_else(|| panic!("no {label}:\n{text}"));
        lines[at + 1].trim().to_string()
    };
    let train = after("train[seed=1]");
    assert!(train.starts_with("on Slurm ("), "{text}");
    for option in ["partition=gpu", "gres=gpu:1", "time=01:00:00", "mem=4G"] {
        assert!(train.contains(option), "{option}: {text}");
    }
    assert!(
        after("split").starts_with("on local (a CPU stage"),
        "{text}"
    );
    assert!(
        text.contains("--executor slurm: 2 jobs to Slurm, 3 here"),
        "{text}"
    );
    assert!(
        fake.calls().is_empty(),
        "plan submitted: {:?}",
        fake.calls()
    );

    let json = stdout(&mut asymflow(
        &dir,
        &[
            "plan",
            "pipelines/engine.toml",
            "--executor",
            "slurm",
            "--json",
        ],
    ));
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let by_label = |label: &str| {
        doc["instances"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["label"] == label)
            .unwrap_or_else(|| panic!("no {label}: {json}"))["runs_on"]
            .clone()
    };
    let train = by_label("train[seed=0]");
    assert_eq!(train["executor"], "slurm", "{json}");
    assert_eq!(train["class"], "device", "{json}");
    assert_eq!(train["request"]["gres"], "gpu:1", "{json}");
    assert_eq!(train["request"]["partition"], "gpu", "{json}");
    assert_eq!(train["request"]["time"], "01:00:00", "{json}");
    assert_eq!(train["request"]["mem"], "4G", "{json}");
    assert_eq!(by_label("split")["executor"], "local", "{json}");

    // Without the flag, the plan says nothing of Slurm; without a profile, the flag is an
    // error that says where the profile goes.
    let plain = stdout(&mut asymflow(&dir, &["plan", "pipelines/engine.toml"]));
    assert!(!plain.contains("Slurm"), "{plain}");
    std::fs::remove_file(dir.join("asymflow.toml")).unwrap();
    let out = asymflow(
        &dir,
        &["plan", "pipelines/engine.toml", "--executor", "slurm"],
    )
    .output()
    .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no [executor.slurm] profile"), "{err}");
}

#[test]
fn restarted_without_slurm_the_run_says_it_cannot_follow_the_job_and_computes_the_key() {
    let fake = FakeSlurm::new();
    let dir = project(&fake.project(), Some(&fake_profile(&fake)));
    let first_log = dir.join("first.log");
    let mut first = spawn_run(&dir, &first_log);
    wait_for(&first_log, "as Slurm job", 2, Duration::from_secs(60));
    first.kill().unwrap();
    first.wait().unwrap();
    let out = asymflow(&dir, &["run", "pipelines/engine.toml"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        err.matches("submitted by an earlier run, is left as it is (`scancel ")
            .count(),
        2,
        "{err}"
    );
    assert!(err.contains("4 ran, 1 cached, 0 failed"), "{err}");
    let sbatch = fake.sbatch_calls();
    assert_eq!(sbatch, 1, "one job array: {:?}", fake.calls());
    assert_eq!(values(&dir), local_values());
}

/// Issue 29, item 6: sweep values with a newline, quotes, `$()` and backticks, used as a
/// parameter, reach each job's label and so its batch script; the script must stay inert:
/// the jobs run, every value arrives as it was written, and nothing runs on the "node".
#[test]
fn hostile_sweep_values_never_run_as_commands_in_the_batch_script() {
    let fake = FakeSlurm::new();
    let dir = project(&fake.project(), Some(&fake_profile(&fake)));
    let mark = |n: u32| dir.join(format!("pwned{n}"));
    let values = [
        format!("a\ntouch {} #", mark(1).display()),
        format!("$(touch {})", mark(2).display()),
        format!("`touch {}`", mark(3).display()),
        format!("it's \"q\"; touch {} #", mark(4).display()),
        format!("b\r\ntouch {} #", mark(5).display()),
    ];
    let toml_list: Vec<String> = values
        .iter()
        .map(|v| serde_json::to_string(v).unwrap())
        .collect();
    let pipeline = format!(
        "[pipeline]\nname = \"engine\"\n\n[sweep]\ntag = [{}]\n\n[stages.train]\n\
         kind = \"test-echo\"\nparams = {{ value = \"${{sweep.tag}}\", device = true }}\n",
        toml_list.join(", ")
    );
    std::fs::write(dir.join("pipelines/engine.toml"), pipeline).unwrap();
    let log = dir.join("run.log");
    let mut run = spawn_run(&dir, &log);
    wait_for(&log, "as Slurm job", values.len(), Duration::from_secs(60));
    // The jobs wait in the queue a while: "ran in" counts from their start, not from here.
    std::thread::sleep(Duration::from_millis(2500));
    for id in fake.job_ids() {
        let script =
            std::fs::read_to_string(fake.state().join("jobs").join(&id).join("script")).unwrap();
        for line in script.lines().filter(|l| l.contains("touch")) {
            assert!(
                line.starts_with("# "),
                "a label line escaped: {line:?}\n{script}"
            );
        }
        assert_eq!(fake.run(&id), 0, "{script}");
    }
    let exit = wait_exit(&mut run, Duration::from_secs(60), &log);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(exit.success(), "{exit:?}\n{text}");
    for n in 1..=5 {
        assert!(!mark(n).exists(), "pwned{n} was created:\n{text}");
    }
    // A label with a newline spans lines; each "ran" line ends on the last of them.
    let ran: Vec<&str> = text.lines().filter(|l| l.ends_with("s queued)")).collect();
    assert_eq!(ran.len(), values.len(), "{text}");
    for line in ran {
        let secs = |after: &str| -> f64 {
            let rest = line
                .rsplit(after)
                .next()
                .unwrap_or_else(|| panic!("{line}"));
            rest.split('s').next().unwrap().trim().parse().unwrap()
        };
        assert!(
            secs(", after ") >= 2.0,
            "the queue wait is said apart: {line}"
        );
        assert!(secs(" in ") < secs(", after "), "{line}");
    }
    // Each value reached its stage unchanged.
    let out = asymflow(&dir, &["show", "pipelines/engine.toml", "train", "--json"])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    for v in &values {
        let json = serde_json::to_string(v).unwrap();
        assert!(
            shown.contains(&json[1..json.len() - 1]),
            "{v:?} not in:\n{shown}"
        );
    }
}
