//! The `asymflow-worker` binary as the engine starts it: the protocol's first and last lines,
//! and its errors for bad invocations.
//!
//! Being an integration test of this crate also makes `cargo test --workspace` build the
//! binary, which the engine's own integration tests start as their workers.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use asymflow::exec::protocol::{FromWorker, ToWorker};

fn worker() -> Command {
    Command::new(env!("CARGO_BIN_EXE_asymflow-worker"))
}

#[test]
fn serve_announces_itself_ignores_bad_lines_and_exits_on_shutdown() {
    let mut child = worker()
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the worker starts");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("a first line");
    let ready: FromWorker = serde_json::from_str(&line).expect("the first line is a message");
    match ready {
        FromWorker::Ready { pid, libtorch } => {
            assert_eq!(pid, child.id());
            let version = libtorch.expect("the worker names the libtorch it links");
            assert!(
                version.chars().next().is_some_and(|c| c.is_ascii_digit()),
                "{version}"
            );
        }
        other => panic!("expected ready, got {other:?}"),
    }
    let mut stdin = child.stdin.take().expect("piped");
    writeln!(stdin, "not json").unwrap();
    writeln!(
        stdin,
        "{}",
        serde_json::to_string(&ToWorker::Shutdown).unwrap()
    )
    .unwrap();
    let out = child.wait_with_output().expect("the worker exits");
    assert!(out.status.success(), "{:?}", out.status);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ignoring a bad request line"), "{stderr}");
    let mut rest = String::new();
    stdout.read_line(&mut rest).unwrap();
    assert_eq!(rest, "", "nothing after ready without a job");
}

#[test]
fn a_bad_invocation_prints_the_usage_and_exits_2() {
    let out = worker().arg("frobnicate").output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("usage: asymflow-worker serve"), "{stderr}");
}

#[test]
fn exec_of_a_missing_job_file_names_it_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("no-such-job.json");
    let result = dir.path().join("result.json");
    let out = worker()
        .arg("exec")
        .arg(&job)
        .arg("--result")
        .arg(&result)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no-such-job.json"), "{stderr}");
    assert!(!result.exists());
}
