//! The engine and its workers (issue 10): the engine binary never loads libtorch, kinds that
//! run in workers survive a worker's death, and two trainings in two workers at once compute
//! the same bytes as one after the other.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::{statuses, with_status, Project};

/// A command running the engine with its test kinds in workers (`ASYMFLOW_TEST_KINDS=worker`).
fn in_workers(project: &Project, args: &[&str]) -> Command {
    let mut cmd = project.cmd(args);
    cmd.env("ASYMFLOW_TEST_KINDS", "worker");
    cmd
}

const CHAIN: &str = r#"
[pipeline]
name = "chain"

[stages.a]
kind = "test-echo"
params = { value = 1 }

[stages.slow]
kind = "test-echo"
inputs = { input = "a" }
params = { value = 2, sleep_ms = 4000, device = true }

[stages.c]
kind = "test-echo"
inputs = { input = "slow" }
params = { value = 3 }
"#;

#[test]
fn the_engine_binary_links_no_libtorch() {
    let out = Command::new("ldd")
        .arg(env!("CARGO_BIN_EXE_asymflow"))
        .output()
        .expect("ldd runs");
    let libs = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ldd failed: {libs}");
    // Library names and paths only: the load addresses after them are random hex, which
    // spells `c10` now and then.
    let names: Vec<&str> = libs
        .lines()
        .map(|l| l.split(" (0x").next().unwrap_or(l))
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n.contains("torch") || n.contains("c10") || n.contains("gomp")),
        "the engine links libtorch:\n{libs}"
    );
}

#[test]
fn plan_status_a_no_op_run_and_report_work_without_libtorch_or_a_worker() {
    let project = Project::new();
    project.write(
        "pipelines/chain.toml",
        &CHAIN.replace("sleep_ms = 4000", "sleep_ms = 0"),
    );
    // First compute everything (test kinds in the engine itself).
    let first = project.run_json("pipelines/chain.toml", &[]);
    assert_eq!(with_status(&first, "ran").len(), 3, "{first:?}");
    // Then every read-only command and a no-op run with no libtorch anywhere on the loader
    // path and no worker program to start.
    for args in [
        vec!["plan", "pipelines/chain.toml"],
        vec!["status"],
        vec!["run", "pipelines/chain.toml", "--json"],
        vec!["report", "pipelines/chain.toml"],
        vec![
            "plan",
            "pipelines/chain.toml",
            "--set",
            "stages.slow.params.value=5",
        ],
    ] {
        let out = project
            .cmd(&args)
            .env("LD_LIBRARY_PATH", "")
            .env("ASYMFLOW_WORKER", "/nonexistent/asymflow-worker")
            .output()
            .expect("asymflow runs");
        assert!(
            out.status.success(),
            "{args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The real pipelines' tensor kinds plan without libtorch too.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(env!("CARGO_BIN_EXE_asymflow"))
        .args(["plan", "pipelines/quickstart.toml", "--cache"])
        .arg(project.path().join("other-cache"))
        .current_dir(repo)
        .env("LD_LIBRARY_PATH", "")
        .env("ASYMFLOW_WORKER", "/nonexistent/asymflow-worker")
        .output()
        .expect("asymflow runs");
    assert!(
        out.status.success(),
        "plan of the quickstart failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The pids of the processes named `asymflow-worker` whose parent is `parent`.
fn workers_of(parent: u32) -> Vec<u32> {
    let mut workers = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return workers;
    };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...
        let Some((comm, rest)) = stat.split_once(") ") else {
            continue;
        };
        let ppid = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok());
        if comm.ends_with("(asymflow-worker") && ppid == Some(parent) {
            workers.push(pid);
        }
    }
    workers
}

/// Starts `run` on the chain, kills the engine's workers (among them the one running `slow`)
/// once `slow` is busy, and returns the run's output.
fn run_and_kill_the_worker(project: &Project, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["run", "pipelines/chain.toml", "--json"];
    args.extend_from_slice(extra);
    let child = in_workers(project, &args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("asymflow starts");
    let engine = child.id();
    // `slow` starts after `a`; wait until its worker has been busy for a moment.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut killed = false;
    while Instant::now() < deadline {
        let slow_started = std::fs::read_to_string(project.path().join("runs.log"))
            .is_ok_and(|log| log.lines().any(|l| l.starts_with("slow")));
        if slow_started {
            std::thread::sleep(Duration::from_millis(300));
            let workers = workers_of(engine);
            for &worker in &workers {
                unsafe { libc::kill(worker as i32, libc::SIGKILL) };
            }
            killed = !workers.is_empty();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(killed, "never found slow's worker to kill");
    child.wait_with_output().expect("asymflow ends")
}

#[test]
fn a_worker_killed_mid_stage_fails_that_stage_and_the_next_run_redoes_only_it() {
    let project = Project::new();
    let log = project.path().join("runs.log");
    let chain = CHAIN.replace(
        "device = true }",
        &format!("device = true, trace = \"{}\" }}", log.display()),
    );
    project.write(
        "pipelines/chain.toml",
        &chain.replace(
            "params = { value = 1 }",
            &format!("params = {{ value = 1, trace = \"{}\" }}", log.display()),
        ),
    );
    let out = run_and_kill_the_worker(&project, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the run should fail:\n{stderr}");
    assert!(
        stderr.contains("worker process running it died"),
        "no clear message:\n{stderr}"
    );
    let outcome = statuses(&out.stdout);
    assert_eq!(outcome["a"].0, "ran", "{outcome:?}");
    assert_eq!(outcome["slow"].0, "failed", "{outcome:?}");

    let verify = project.run(&["cache", "verify"]);
    assert!(
        verify.status.success(),
        "cache verify after the crash:\n{}",
        String::from_utf8_lossy(&verify.stdout)
    );

    let again = in_workers(&project, &["run", "pipelines/chain.toml", "--json"])
        .output()
        .expect("asymflow runs");
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let outcome = statuses(&again.stdout);
    assert_eq!(outcome["a"].0, "cached", "{outcome:?}");
    assert_eq!(outcome["slow"].0, "ran", "{outcome:?}");
    assert_eq!(outcome["c"].0, "ran", "{outcome:?}");
}

#[test]
fn with_retries_a_killed_worker_is_replaced_and_its_job_run_again() {
    let project = Project::new();
    let log = project.path().join("runs.log");
    project.write(
        "pipelines/chain.toml",
        &CHAIN
            .replace(
                "device = true }",
                &format!("device = true, trace = \"{}\" }}", log.display()),
            )
            .replace(
                "params = { value = 1 }",
                &format!("params = {{ value = 1, trace = \"{}\" }}", log.display()),
            ),
    );
    let out = run_and_kill_the_worker(&project, &["--retries", "1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the retry should succeed:\n{stderr}");
    let outcome = statuses(&out.stdout);
    assert_eq!(
        with_status(&outcome, "ran").len(),
        3,
        "{outcome:?}\n{stderr}"
    );
    let runs = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        runs.lines().filter(|l| l.starts_with("slow")).count(),
        2,
        "slow started twice (killed, then retried):\n{runs}"
    );
}

const TWO_TRAININGS: &str = r#"
[pipeline]
name = "two"

[sweep]
seed = [0, 1]

[stages.split]
kind = "split"
params = { dataset = "synthetic", classes = 6, per_class = 6, image_size = 24, protocol = "half-classes" }

[stages.model]
kind = "train-classifier"
inputs = { split = "split" }
params = { arch = "resnet18", width = 8, stem = "small", embed_dim = 16, resolution = 16, epochs = 1, batch_size = 12, geometric = false, flip = false, seed = "${sweep.seed}" }
"#;

/// The `model.safetensors` digest of each `model` instance, after a run with `extra`.
fn model_digests(project: &Project, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["run", "pipelines/two.toml", "--json", "--device-slots", "2"];
    args.extend_from_slice(extra);
    let out = project.cmd(&args).output().expect("asymflow runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let show = project.run(&["show", "pipelines/two.toml", "model", "--json"]);
    assert!(
        show.status.success(),
        "{}",
        String::from_utf8_lossy(&show.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    doc.as_array()
        .expect("one entry per instance")
        .iter()
        .map(|inst| {
            inst["outputs"]["model.safetensors"]["digest"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn two_trainings_at_once_in_two_workers_compute_the_same_bytes_as_one_after_the_other() {
    let together = Project::new();
    together.write("pipelines/two.toml", TWO_TRAININGS);
    let apart = Project::new();
    apart.write("pipelines/two.toml", TWO_TRAININGS);
    let at_once = model_digests(&together, &["--jobs", "2"]);
    let in_turn = model_digests(&apart, &["--jobs", "1"]);
    assert_eq!(at_once, in_turn);
    assert_ne!(at_once[0], at_once[1], "two seeds give two models");
}
