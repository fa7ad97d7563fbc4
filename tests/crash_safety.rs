//! Crash safety: `kill -9` in the middle of a stage leaves the cache consistent; the next run
//! redoes only that stage.

use std::time::{Duration, Instant};

use crate::support::{with_status, Project};

#[test]
fn kill_9_mid_stage_then_rerun_redoes_only_that_stage() {
    let p = Project::new();
    p.write(
        "pipelines/c.toml",
        r#"
[stages.quick]
kind = "test-echo"
params = { value = 1 }
[stages.slow]
kind = "test-echo"
inputs = { input = "quick" }
params = { value = 2, sleep_ms = 20000, trace = "slow-started.txt" }
"#,
    );
    let mut child = p
        .cmd(&["run", "pipelines/c.toml", "--json"])
        .spawn()
        .unwrap();
    let started = p.path().join("slow-started.txt");
    let clock = Instant::now();
    while !started.exists() {
        assert!(
            clock.elapsed() < Duration::from_secs(60),
            "the slow stage never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let plan = p.plan_json("pipelines/c.toml", &[]);
    assert_eq!(plan["quick"].0, "cached");
    assert_eq!(plan["slow"].0, "to-run");
    let out = p.run_json(
        "pipelines/c.toml",
        &["--set", "stages.slow.params.sleep_ms=0"],
    );
    assert_eq!(with_status(&out, "ran"), vec!["slow"]);
    let verify = p.run(&["cache", "verify"]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
    // The killed run's scratch folder is garbage, removed by gc.
    let gc = p.run(&["cache", "gc"]);
    assert!(String::from_utf8_lossy(&gc.stdout).contains("1 scratch folders"));
}

#[test]
fn ctrl_c_stops_launching_and_exits_non_zero_with_a_summary() {
    let p = Project::new();
    p.write(
        "pipelines/i.toml",
        r#"
[stages.slow]
kind = "test-echo"
params = { value = 1, sleep_ms = 20000, trace = "started.txt" }
[stages.after]
kind = "test-echo"
inputs = { input = "slow" }
"#,
    );
    let child = p
        .cmd(&["run", "pipelines/i.toml"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let clock = Instant::now();
    while !p.path().join("started.txt").exists() {
        assert!(
            clock.elapsed() < Duration::from_secs(60),
            "the slow stage never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: sending SIGINT to our own child process.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("0 ran, 0 cached, 0 failed, 2 skipped"),
        "{stderr}"
    );
    assert!(
        clock.elapsed() < Duration::from_secs(15),
        "the running stage stops at once"
    );
    let plan = p.plan_json("pipelines/i.toml", &[]);
    assert_eq!(with_status(&plan, "to-run").len(), 2);
    assert!(p.run(&["cache", "verify"]).status.success());
}
