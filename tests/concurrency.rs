//! Two processes on one cache never compute the same key twice.

use crate::support::Project;

#[test]
fn two_processes_on_one_cache_compute_every_key_once() {
    let p = Project::new();
    p.write(
        "pipelines/c.toml",
        r#"
[sweep]
seed = [0, 1, 2, 3]
[stages.base]
kind = "test-echo"
params = { value = 1, sleep_ms = 300, trace = "trace.txt" }
[stages.each]
kind = "test-echo"
inputs = { input = "base" }
params = { value = "${sweep.seed}", sleep_ms = 200, trace = "trace.txt" }
"#,
    );
    let spawn = || {
        p.cmd(&["run", "pipelines/c.toml", "--json", "--jobs", "2"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{:?}\nstderr:\n{}\nstdout:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let trace = std::fs::read_to_string(p.path().join("trace.txt")).unwrap();
    let mut lines: Vec<&str> = trace.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        vec!["base 1", "each 0", "each 1", "each 2", "each 3"],
        "every key exactly once"
    );
}

#[test]
fn a_stale_lease_of_a_dead_process_is_taken_over() {
    let p = Project::new();
    p.write(
        "pipelines/l.toml",
        "[stages.slow]\nkind = \"test-echo\"\nparams = { sleep_ms = 20000, trace = \"t.txt\" }\n",
    );
    let mut child = p
        .cmd(&["run", "pipelines/l.toml", "--json"])
        .spawn()
        .unwrap();
    let clock = std::time::Instant::now();
    while !p.path().join("t.txt").exists() {
        assert!(clock.elapsed().as_secs() < 60);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // The dead process's lease is still recorded; a new run takes it over at once.
    let status = p.run(&["status"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("1 lease:") && text.contains("stale"),
        "{text}"
    );
    let out = p.run_json(
        "pipelines/l.toml",
        &["--set", "stages.slow.params.sleep_ms=0"],
    );
    assert_eq!(out["slow"].0, "ran");
}
