//! Freshness: what reruns, what does not, and why.

use crate::support::{copy_tree, with_status, Project};

const PIPELINE: &str = r#"
[pipeline]
name = "fresh"

[stages.teacher]
kind = "test-echo"
params = { value = 1 }

[stages.student]
kind = "test-echo"
inputs = { input = "teacher" }
params = { value = 2 }

[stages.other]
kind = "test-echo"
params = { value = 3 }

[stages.eval]
kind = "test-echo"
inputs = { input = "student", other = "other" }
"#;

/// Flips byte `at` of the object holding `stage`'s `value.json`; returns its digest.
fn flip_a_byte(p: &Project, stage: &str, at: usize) -> String {
    let show = p.run(&["show", "pipelines/fresh.toml", stage, "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    let digest = doc[0]["outputs"]["value.json"]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let object = p
        .path()
        .join("cache/objects")
        .join(&digest[..2])
        .join(&digest[2..]);
    let mut bytes = std::fs::read(&object).unwrap();
    bytes[at] ^= 0xff;
    std::fs::write(&object, bytes).unwrap();
    digest
}

fn project() -> Project {
    let p = Project::new();
    p.write("pipelines/fresh.toml", PIPELINE);
    p
}

#[test]
fn a_second_run_executes_nothing() {
    let p = project();
    let first = p.run_json("pipelines/fresh.toml", &[]);
    assert_eq!(with_status(&first, "ran").len(), 4);
    let second = p.run_json("pipelines/fresh.toml", &[]);
    assert_eq!(with_status(&second, "cached").len(), 4, "{second:?}");
}

#[test]
fn changing_one_param_reruns_exactly_its_dependants_with_the_reason() {
    let p = project();
    p.run_json("pipelines/fresh.toml", &[]);
    p.write(
        "pipelines/fresh.toml",
        &PIPELINE.replace("value = 2", "value = 5"),
    );
    let plan = p.plan_json("pipelines/fresh.toml", &[]);
    assert_eq!(plan["student"].1, "params.value 2 -> 5");
    let after = p.run_json("pipelines/fresh.toml", &[]);
    assert_eq!(with_status(&after, "ran"), vec!["eval", "student"]);
    assert_eq!(with_status(&after, "cached"), vec!["other", "teacher"]);
    assert_eq!(after["student"].1, "params.value 2 -> 5");
    assert_eq!(after["eval"].1, "input input changed");
}

#[test]
fn why_names_the_changed_field() {
    let p = project();
    p.run_json("pipelines/fresh.toml", &[]);
    let out = p.run(&[
        "why",
        "pipelines/fresh.toml",
        "student",
        "--set",
        "stages.student.params.value=7",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("student: dirty") && text.contains("params.value 2 -> 7"),
        "{text}"
    );
    let out = p.run(&["why", "pipelines/fresh.toml", "teacher"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("teacher: fresh"));
}

#[test]
fn moving_the_project_and_its_cache_keeps_every_hit() {
    let p = project();
    p.run_json("pipelines/fresh.toml", &[]);
    let moved = tempfile::tempdir().unwrap();
    copy_tree(p.path(), moved.path());
    drop(p);
    let q = Project { dir: moved };
    let again = q.run_json("pipelines/fresh.toml", &[]);
    assert_eq!(with_status(&again, "cached").len(), 4, "{again:?}");
}

#[test]
fn bumping_impl_version_reruns_that_kind_and_its_dependants() {
    let p = Project::new();
    // `base` is a different kind from the echo chain only by name, so use the version of the
    // one echo kind: every instance reruns, each with the version as reason.
    p.write("pipelines/fresh.toml", PIPELINE);
    p.run_json("pipelines/fresh.toml", &[]);
    let out = p
        .cmd(&["run", "pipelines/fresh.toml", "--json"])
        .env("ASYMFLOW_TEST_ECHO_VERSION", "2")
        .output()
        .unwrap();
    let after = crate::support::statuses(&out.stdout);
    assert_eq!(with_status(&after, "ran").len(), 4);
    assert_eq!(after["teacher"].1, "IMPL_VERSION 1 -> 2");
}

#[test]
fn a_corrupt_object_is_detected_not_used_and_recomputed() {
    let p = project();
    p.run_json("pipelines/fresh.toml", &[]);
    // Corrupt the teacher's value.json object, then change the student so it must read it.
    let digest = flip_a_byte(&p, "teacher", 0);

    let out = p.run(&[
        "run",
        "pipelines/fresh.toml",
        "--json",
        "--set",
        "stages.student.params.value=9",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("corrupt"), "{stderr}");
    let after = crate::support::statuses(&out.stdout);
    assert_eq!(
        after["teacher"].0, "ran",
        "the corrupt teacher result is recomputed"
    );
    assert_eq!(after["student"].0, "ran");
    assert!(p.path().join("cache/quarantine").join(&digest).is_file());
    let verify = p.run(&["cache", "verify"]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

#[test]
fn cache_verify_finds_a_flipped_byte_and_forgets_the_result() {
    let p = project();
    p.run_json("pipelines/fresh.toml", &[]);
    flip_a_byte(&p, "other", 1);
    let verify = p.run(&["cache", "verify"]);
    assert!(!verify.status.success());
    assert!(String::from_utf8_lossy(&verify.stdout).contains("1 corrupt"));
    let plan = p.plan_json("pipelines/fresh.toml", &[]);
    assert_eq!(plan["other"].0, "to-run");
    assert_eq!(plan["teacher"].0, "cached");
}

#[test]
fn gc_keeps_what_results_reference_and_drops_the_rest() {
    let p = project();
    p.run_json("pipelines/fresh.toml", &[]);
    p.run_json(
        "pipelines/fresh.toml",
        &["--set", "stages.other.params.value=4"],
    );
    let dry = p.run(&["cache", "gc", "--dry-run"]);
    assert!(String::from_utf8_lossy(&dry.stdout).contains("would delete 0 unreferenced objects"));
    let gc = p.run(&["cache", "gc", "--older-than", "0"]);
    assert!(gc.status.success());
    let plan = p.plan_json("pipelines/fresh.toml", &[]);
    assert_eq!(
        with_status(&plan, "to-run").len(),
        4,
        "results older than 0 days are forgotten"
    );
}
