//! The reliability suite, round two (issue 28): the engine outlives its workers' faults. A
//! corrupt input shared by a sweep's consumers, an engine stopped by SIGTERM or killed with
//! kill -9, a worker that lies or hangs, and a full disk under the index each end as a clean
//! failure (or a recomputation) with a summary, never a panic, a hang or an orphan.

use std::time::Duration;

use crate::support::{statuses, trace_lines, verify_clean, Project};

/// The leases left in the project's index.
fn leases(p: &Project) -> i64 {
    let conn = rusqlite::Connection::open(p.path().join("cache/index.sqlite")).unwrap();
    conn.query_row("SELECT count(*) FROM leases", [], |r| r.get(0))
        .unwrap()
}

/// The object path of each output of the one instance of `stage`.
fn object_paths(p: &Project, file: &str, stage: &str) -> Vec<(String, std::path::PathBuf)> {
    let shown = p.show_one(file, stage);
    shown["outputs"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, o)| {
            let digest = o["digest"].as_str().unwrap();
            let path = p
                .path()
                .join("cache/objects")
                .join(&digest[..2])
                .join(&digest[2..]);
            (name.clone(), path)
        })
        .collect()
}

/// Waits for `child` at most `limit`; kills it (and fails the test) when it does not end.
fn wait_at_most(mut child: std::process::Child, limit: Duration) -> std::process::Output {
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "the run did not end within {limit:?}:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

const SWEEP_OF_CONSUMERS: &str = r#"
[sweep]
seed = [1, 2]
[stages.up]
kind = "test-echo"
params = { value = 7, trace = "trace.txt" }
[stages.down]
kind = "test-echo"
inputs = { input = "up" }
params = { value = "${sweep.seed}", device = true }
"#;

#[test]
fn a_corrupt_input_of_several_consumers_is_recomputed_once_without_a_panic() {
    let p = Project::new();
    p.write("pipelines/sweep.toml", SWEEP_OF_CONSUMERS);
    p.run_json("pipelines/sweep.toml", &[]);
    let (_, path) = object_paths(&p, "pipelines/sweep.toml", "up")
        .into_iter()
        .find(|(name, _)| name == "value.json")
        .expect("up wrote value.json");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[0] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    // Both consumers miss (a new value), one device slot: the first finds the input corrupt
    // while the second is keyed and waiting for the slot.
    let child = p
        .cmd(&[
            "run",
            "pipelines/sweep.toml",
            "--json",
            "--jobs",
            "2",
            "--set",
            "stages.down.params.pad_bytes=1",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_at_most(child, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.status.success(), "{stderr}");
    let summary = statuses(&out.stdout);
    assert_eq!(summary["up"].0, "ran", "{summary:?}");
    assert_eq!(summary["down[seed=1]"].0, "ran", "{summary:?}");
    assert_eq!(summary["down[seed=2]"].0, "ran", "{summary:?}");
    assert_eq!(
        trace_lines(&p).len(),
        2,
        "the producer ran again exactly once"
    );
    assert_eq!(leases(&p), 0, "no lease outlives the run");
    verify_clean(&p, "after the recomputation");
}

/// A command running the engine with its test kinds in worker processes.
fn in_workers(p: &Project, args: &[&str]) -> std::process::Command {
    let mut cmd = p.cmd(args);
    cmd.env("ASYMFLOW_TEST_KINDS", "worker")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd
}

/// The live (not zombie) processes named `asymflow-worker` whose parent is `parent`.
fn workers_of(parent: u32) -> Vec<u32> {
    let mut workers = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((comm, rest)) = stat.split_once(") ") else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let ppid = fields.next().and_then(|p| p.parse().ok());
        if comm.ends_with("(asymflow-worker") && ppid == Some(parent) && state != Some("Z") {
            workers.push(pid);
        }
    }
    workers
}

/// Whether process `pid` still runs (exists and is not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let (_, rest) = stat.split_once(") ")?;
            rest.split_whitespace().next().map(|s| s != "Z")
        })
        .unwrap_or(false)
}

const LONG: &str = r#"
[stages.long]
kind = "test-echo"
params = { value = 1, sleep_ms = 60000, device = true, trace = "trace.txt" }
"#;

/// Starts a run of [`LONG`] in workers and returns it once its worker is busy with the stage,
/// with the worker's pids.
fn start_long_run(p: &Project) -> (std::process::Child, Vec<u32>) {
    p.write("pipelines/long.toml", LONG);
    let child = in_workers(p, &["run", "pipelines/long.toml", "--json"])
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while trace_lines(p).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the stage never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let workers = workers_of(child.id());
    assert!(!workers.is_empty(), "the stage runs in a worker");
    (child, workers)
}

fn assert_gone_within_2s(workers: &[u32], after: &str) {
    std::thread::sleep(Duration::from_secs(2));
    let left: Vec<u32> = workers.iter().copied().filter(|&w| alive(w)).collect();
    for &w in &left {
        // SAFETY: kill has no memory-safety preconditions; these are our own test's workers.
        unsafe { libc::kill(w as i32, libc::SIGKILL) };
    }
    assert!(
        left.is_empty(),
        "workers {left:?} outlived the engine {after}"
    );
}

#[test]
fn sigterm_and_sighup_stop_a_run_as_ctrl_c_does_and_leave_no_worker() {
    for (signal, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGHUP, "SIGHUP")] {
        let p = Project::new();
        let (child, workers) = start_long_run(&p);
        // SAFETY: as above; the engine is this test's child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let out = wait_at_most(child, Duration::from_secs(30));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{name}: {stderr}");
        let summary = statuses(&out.stdout);
        assert_eq!(summary["long"].0, "skipped", "{name}: {summary:?}");
        assert!(summary["long"].1.contains("interrupted"), "{summary:?}");
        assert_gone_within_2s(&workers, &format!("after {name}"));
        assert_eq!(leases(&p), 0, "{name}: no lease outlives the run");
    }
}

#[test]
fn kill_9_of_the_engine_leaves_no_worker() {
    let p = Project::new();
    let (mut child, workers) = start_long_run(&p);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_gone_within_2s(&workers, "after kill -9");
}

/// A worker program that speaks the protocol's start and then answers every job with the
/// lines of `answer` (a file holding `__ID__` where the job's id goes), or runs `answer` as a
/// shell command when it starts with `!`.
fn lying_worker(p: &Project, answer: &str) -> std::path::PathBuf {
    let reply = p.write("lie.txt", &format!("{answer}\n"));
    let script = format!(
        "#!/bin/bash\n\
         echo '{{\"type\":\"ready\",\"pid\":'$$',\"libtorch\":null}}'\n\
         while IFS= read -r line; do\n\
         case \"$line\" in *'\"type\":\"job\"'*) ;; *) continue ;; esac\n\
         id=$(printf '%s' \"$line\" | sed -E 's/^\\{{\"type\":\"job\",\"id\":([0-9]+),.*/\\1/')\n\
         if head -c1 '{reply}' | grep -q '!'; then exec sleep 3600; fi\n\
         sed \"s/__ID__/$id/\" '{reply}'\n\
         done\n",
        reply = reply.display()
    );
    let path = p.write("lying-worker.sh", &script);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A `done` line for `value.json` stored under `digest`.
fn done_line(id: &str, digest: &str) -> String {
    format!(
        r#"{{"type":"done","id":{id},"outcome":{{"status":"done","outputs":{{"value.json":{{"digest":"{digest}","is_dir":false}}}},"metrics":{{"value":1.0}},"started":0.0,"finished":1.0,"provenance":{{"asymflow":"x","git_commit":"x","libtorch":"","device":"cpu","threads":1}}}}}}"#
    )
}

const ONE: &str = r#"
[stages.a]
kind = "test-echo"
params = { value = 1 }
[stages.b]
kind = "test-echo"
params = { value = 2 }
"#;

/// Runs [`ONE`] with `worker` as the worker program; returns the summary and stderr, having
/// checked that the run ended in time with exit 4, no panic, and no result recorded.
fn run_with_worker(
    p: &Project,
    worker: &std::path::Path,
    extra_env: &[(&str, &str)],
) -> (std::collections::BTreeMap<String, (String, String)>, String) {
    p.write("pipelines/one.toml", ONE);
    let mut cmd = in_workers(p, &["run", "pipelines/one.toml", "--json", "--keep-going"]);
    cmd.env("ASYMFLOW_WORKER", worker);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = wait_at_most(cmd.spawn().unwrap(), Duration::from_secs(40));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let conn = rusqlite::Connection::open(p.path().join("cache/index.sqlite")).unwrap();
    let ok: i64 = conn
        .query_row("SELECT count(*) FROM runs WHERE status = 'ok'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(ok, 0, "a lie was recorded as a result: {stderr}");
    assert_eq!(leases(p), 0);
    (statuses(&out.stdout), stderr)
}

/// Asserts both stages failed with a reason containing `expected`.
fn assert_both_failed(
    summary: &std::collections::BTreeMap<String, (String, String)>,
    expected: &str,
) {
    for stage in ["a", "b"] {
        let (status, reason) = &summary[stage];
        assert_eq!(status, "failed", "{stage}: {summary:?}");
        assert!(reason.contains(expected), "{stage}: {reason}");
    }
}

#[test]
fn lying_worker_a_done_for_an_unknown_job_fails_the_job() {
    let p = Project::new();
    let worker = lying_worker(&p, &done_line("4242", &"ab".repeat(32)));
    let (summary, _) = run_with_worker(&p, &worker, &[]);
    assert_both_failed(&summary, "reported on job 4242, which it is not running");
}

#[test]
fn lying_worker_a_done_naming_absent_objects_is_not_recorded() {
    let p = Project::new();
    let worker = lying_worker(&p, &done_line("__ID__", &"ab".repeat(32)));
    let (summary, _) = run_with_worker(&p, &worker, &[]);
    assert_both_failed(&summary, "which the store does not hold");
}

#[test]
fn lying_worker_a_digest_that_is_a_path_is_not_recorded() {
    let p = Project::new();
    let worker = lying_worker(&p, &done_line("__ID__", "../../../../etc/passwd"));
    let (summary, _) = run_with_worker(&p, &worker, &[]);
    assert_both_failed(&summary, "not 64 lowercase hex characters");
}

#[test]
fn lying_worker_a_line_that_is_not_json_fails_the_job_at_once() {
    let p = Project::new();
    let worker = lying_worker(&p, "this is { not json");
    let (summary, _) = run_with_worker(&p, &worker, &[]);
    assert_both_failed(&summary, "a line that is not a protocol message");
    assert!(summary["a"].1.contains("this is { not json"), "{summary:?}");
}

#[test]
fn lying_worker_a_hung_job_fails_past_its_timeout() {
    let p = Project::new();
    let worker = lying_worker(&p, "!hang");
    p.write("pipelines/one.toml", ONE);
    let file = "pipelines/one.toml";
    let text = std::fs::read_to_string(p.path().join(file)).unwrap();
    p.write(
        file,
        &text.replace(
            "kind = \"test-echo\"\n",
            "kind = \"test-echo\"\ntimeout = \"1s\"\n",
        ),
    );
    let clock = std::time::Instant::now();
    let mut cmd = in_workers(&p, &["run", file, "--json", "--keep-going"]);
    cmd.env("ASYMFLOW_WORKER", &worker);
    let out = wait_at_most(cmd.spawn().unwrap(), Duration::from_secs(40));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let summary = statuses(&out.stdout);
    assert_both_failed(&summary, "timed out");
    assert!(summary["a"].1.contains("`timeout` of 1s"), "{summary:?}");
    assert!(
        clock.elapsed() < Duration::from_secs(20),
        "{:?}",
        clock.elapsed()
    );
}

#[test]
fn lying_worker_a_silent_worker_fails_its_job_and_a_beating_one_does_not() {
    let p = Project::new();
    let worker = lying_worker(&p, "!hang");
    let (summary, _) = run_with_worker(&p, &worker, &[("ASYMFLOW_WORKER_SILENCE", "3")]);
    assert_both_failed(&summary, "not even a heartbeat");
    // The real worker beats (every second) while a stage sleeps twice the silence limit.
    let p = Project::new();
    p.write(
        "pipelines/sleepy.toml",
        "[stages.sleepy]\nkind = \"test-echo\"\nparams = { value = 1, sleep_ms = 6000 }\n",
    );
    let out = in_workers(&p, &["run", "pipelines/sleepy.toml", "--json"])
        .env("ASYMFLOW_WORKER_SILENCE", "3")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(statuses(&out.stdout)["sleepy"].0, "ran");
}

#[test]
fn lying_worker_the_first_interrupt_does_not_wait_for_a_hung_worker() {
    let p = Project::new();
    let worker = lying_worker(&p, "!hang");
    p.write("pipelines/one.toml", ONE);
    let child = in_workers(&p, &["run", "pipelines/one.toml", "--json"])
        .env("ASYMFLOW_WORKER", &worker)
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: kill has no memory-safety preconditions; the engine is this test's child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let clock = std::time::Instant::now();
    let out = wait_at_most(child, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(130));
    assert!(
        clock.elapsed() < Duration::from_secs(20),
        "stopped after {:?}",
        clock.elapsed()
    );
    let summary = statuses(&out.stdout);
    assert!(summary.values().all(|(s, _)| s == "skipped"), "{summary:?}");
}

const FILLS_UP: &str = r#"
[stages.slow]
kind = "test-echo"
params = { value = 1, sleep_ms = 1500, trace = "trace.txt" }
[stages.after]
kind = "test-echo"
inputs = { input = "slow" }
params = { value = 2 }
[stages.other]
kind = "test-echo"
params = { value = 3, sleep_ms = 2500 }
"#;

/// Unmounts a test's file system when the test ends, however it ends.
struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// Fills the file system holding `dir` until a write fails with ENOSPC.
fn fill(dir: &std::path::Path) -> std::path::PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).unwrap();
    let block = vec![0u8; 4096];
    loop {
        match file.write_all(&block) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => panic!("filling {}: {e}", path.display()),
        }
    }
    path
}

/// The index lives on a small tmpfs (the cache's `index.sqlite` is a symbolic link to it,
/// and SQLite keeps its WAL beside the real file); the test fills that file system while a
/// stage runs, so the index's next writes fail with SQLITE_FULL while the object store,
/// elsewhere, still has room.
#[test]
fn disk_full_under_the_index_fails_the_stages_keeps_going_and_prints_the_summary() {
    let p = Project::new();
    let small = p.path().join("small");
    std::fs::create_dir_all(&small).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
        .arg(&small)
        .output()
        .is_ok_and(|o| o.status.success());
    if !mounted {
        eprintln!("skipped: a small tmpfs could not be mounted (run the tests as root to get it)");
        return;
    }
    let _unmount = Unmount(small.clone());
    p.write(
        "pipelines/init.toml",
        "[stages.first]\nkind = \"test-echo\"\nparams = { value = 0 }\n",
    );
    p.run_json("pipelines/init.toml", &[]);
    let index = p.path().join("cache/index.sqlite");
    for suffix in ["", "-wal", "-shm"] {
        let from = std::path::PathBuf::from(format!("{}{suffix}", index.display()));
        if from.exists() {
            let to = small.join(format!("index.sqlite{suffix}"));
            std::fs::copy(&from, &to).unwrap();
            std::fs::remove_file(&from).unwrap();
        }
    }
    std::os::unix::fs::symlink(small.join("index.sqlite"), &index).unwrap();

    p.write("pipelines/full.toml", FILLS_UP);
    let child = p
        .cmd(&[
            "run",
            "pipelines/full.toml",
            "--json",
            "--keep-going",
            "--jobs",
            "2",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while trace_lines(&p).is_empty() {
        assert!(std::time::Instant::now() < deadline, "slow never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let filler = fill(&small);
    let out = wait_at_most(child, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let summary = statuses(&out.stdout);
    assert_eq!(summary["slow"].0, "failed", "{summary:?}\n{stderr}");
    assert!(
        summary["slow"].1.contains("the cache index could not")
            && summary["slow"].1.contains("full"),
        "{summary:?}"
    );
    assert_eq!(summary["after"].0, "skipped", "{summary:?}");
    assert_ne!(
        summary["other"].0, "skipped",
        "--keep-going ran the other branch"
    );

    // Nothing was lost or half-recorded: with room again, the run completes and verifies.
    std::fs::remove_file(filler).unwrap();
    let again = p.run_json("pipelines/full.toml", &[]);
    assert!(
        again.values().all(|(s, _)| s == "ran" || s == "cached"),
        "{again:?}"
    );
    assert_eq!(p.run_json("pipelines/init.toml", &[])["first"].0, "cached");
    verify_clean(&p, "after the disk had room again");
}
