//! Regression tests for issue 11 ("Trust"): each is named after the defect it pins. The unit
//! tests beside the code cover the rest (`issue11_*` in `src/cache`, `src/exec/publish.rs`,
//! `src/data/listing`, `src/spec`).

use std::path::Path;

use crate::support::Project;

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `asymflow run FILE`, expecting a spec error; returns stderr.
fn spec_error(p: &Project, file: &str) -> String {
    let out = p.run(&["run", file]);
    assert!(!out.status.success(), "expected an error");
    let err = stderr_of(&out);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        !p.path().join("cache/objects").exists(),
        "nothing may run on a spec error"
    );
    err
}

#[test]
fn issue11_pipeline_name_cannot_escape_reports() {
    let p = Project::new();
    let victim = p.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("keep.txt"), "precious").unwrap();
    p.write(
        "pipelines/bad.toml",
        &format!(
            "[pipeline]\nname = \"{}\"\n[stages.a]\nkind = \"test-echo\"\n",
            victim.display()
        ),
    );
    let err = spec_error(&p, "pipelines/bad.toml");
    assert!(
        err.contains("pipelines/bad.toml:2:8: pipeline name"),
        "{err}"
    );
    p.write(
        "pipelines/stage.toml",
        "[stages.\"../../victim\"]\nkind = \"test-echo\"\n",
    );
    let err = spec_error(&p, "pipelines/stage.toml");
    assert!(
        err.contains("pipelines/stage.toml:1:9: stage name `../../victim` is not a safe name"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(victim.join("keep.txt")).unwrap(),
        "precious"
    );
}

#[test]
fn issue11_sweep_values_cannot_escape_reports_either() {
    // Stage names are checked; a sweep value with slashes only ever makes one folder name.
    assert_eq!(
        asymflow::exec::publish::folder_name("r[x=../../../tmp]"),
        "r[x=.._.._.._tmp]"
    );
}

#[test]
fn issue11_extends_must_be_a_toml_file_and_is_never_echoed() {
    let p = Project::new();
    std::env::set_var("ASYMFLOW_TRUST_SECRET", "do-not-print-me");
    p.write(
        "pipelines/env.toml",
        "[stages.a]\nextends = \"/proc/self/environ\"\n",
    );
    let err = spec_error(&p, "pipelines/env.toml");
    assert!(
        err.contains("pipelines/env.toml:2:11: template `/proc/self/environ` is not a .toml file"),
        "{err}"
    );
    // A link named like a template that leads to a non-TOML file is refused before reading.
    std::fs::write(
        p.path().join("secret.txt"),
        "token = \"hunter2\" \u{0}garbage",
    )
    .unwrap();
    std::os::unix::fs::symlink(p.path().join("secret.txt"), p.path().join("stages/t.toml"))
        .unwrap();
    p.write(
        "pipelines/link.toml",
        "[stages.a]\nextends = \"stages/t.toml\"\n",
    );
    let err = spec_error(&p, "pipelines/link.toml");
    assert!(err.contains("not a .toml file"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn issue11_inf_is_rejected_like_nan() {
    let p = Project::new();
    for (i, v) in ["inf", "-inf", "+inf", "1e999"].iter().enumerate() {
        let file = format!("pipelines/inf{i}.toml");
        p.write(
            &file,
            &format!("[stages.a]\nkind = \"test-echo\"\nparams = {{ value = {v} }}\n"),
        );
        let err = spec_error(&p, &file);
        assert!(
            err.contains(&format!("{file}:3:20: infinity is not allowed")),
            "{v}: {err}"
        );
    }
}

#[test]
fn issue11_sweep_size_is_counted_before_expansion() {
    let p = Project::new();
    let axis = (0..1000)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    p.write(
        "pipelines/huge.toml",
        &format!(
            "[sweep]\na = [{axis}]\nb = [{axis}]\nc = [{axis}]\n\n[stages.s]\nkind = \"test-echo\"\n\
             params = {{ value = \"${{sweep.a}}-${{sweep.b}}-${{sweep.c}}\" }}\n"
        ),
    );
    let clock = std::time::Instant::now();
    let out = p.run(&["plan", "pipelines/huge.toml"]);
    assert!(!out.status.success());
    let err = stderr_of(&out);
    assert!(
        err.contains("pipelines/huge.toml:6:9: stage `s` would expand to 1000000000 instances over the sweep axes a (1000) x b (1000) x c (1000)"),
        "{err}"
    );
    assert!(
        clock.elapsed().as_secs() < 30,
        "refused only after expanding"
    );
}

fn one_run(p: &Project) {
    p.write(
        "pipelines/p.toml",
        "[stages.a]\nkind = \"test-echo\"\nparams = { value = 1 }\n\
         [stages.b]\nkind = \"test-echo\"\ninputs = { input = \"a\" }\nparams = { value = 2 }\n",
    );
    p.run_json("pipelines/p.toml", &[]);
}

fn sql(p: &Project, statement: &str) {
    let conn = rusqlite::Connection::open(p.path().join("cache/index.sqlite")).unwrap();
    conn.execute_batch(statement).unwrap();
}

#[test]
fn issue11_short_lease_keys_do_not_panic_gc_or_status() {
    let p = Project::new();
    one_run(&p);
    sql(
        &p,
        "INSERT INTO leases (key, owner, host, pid, heartbeat) VALUES ('ab', 'x', 'elsewhere', 1, 0)",
    );
    for args in [&["status"][..], &["cache", "gc"][..]] {
        let out = p.run(args);
        assert!(out.status.success(), "{args:?}: {}", stderr_of(&out));
    }
}

#[test]
fn issue11_tampered_output_row_cannot_write_outside_the_project() {
    let p = Project::new();
    one_run(&p);
    sql(
        &p,
        "UPDATE outputs SET name = '../../escaped' WHERE name = 'value.json'",
    );
    let out = p.run(&["run", "pipelines/p.toml", "--json"]);
    assert!(!out.status.success());
    let err = stderr_of(&out);
    assert!(err.contains("tampered"), "{err}");
    assert!(!p.path().parent().unwrap().join("escaped").exists());
    // verify forgets the tampered results; the next run recomputes them.
    let verify = p.run(&["cache", "verify"]);
    assert!(!verify.status.success());
    let report = String::from_utf8_lossy(&verify.stdout);
    assert!(report.contains("2 results forgotten"), "{report}");
    p.run_json("pipelines/p.toml", &[]);
    let conn = rusqlite::Connection::open(p.path().join("cache/index.sqlite")).unwrap();
    let bad: i64 = conn
        .query_row(
            "SELECT count(*) FROM outputs WHERE name LIKE '%..%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(bad, 0);
}

#[test]
fn issue11_tampered_digest_cannot_name_a_file_outside_the_store() {
    let p = Project::new();
    one_run(&p);
    sql(
        &p,
        "UPDATE outputs SET digest = '../../../etc/passwd' WHERE name = 'value.json'",
    );
    let out = p.run(&["run", "pipelines/p.toml", "--json"]);
    assert!(!out.status.success());
    assert!(
        stderr_of(&out).contains("not an object digest") || stderr_of(&out).contains("tampered")
    );
}

fn object_files(cache: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for shard in std::fs::read_dir(cache.join("objects")).unwrap() {
        for f in std::fs::read_dir(shard.unwrap().path()).unwrap() {
            out.push(f.unwrap().path());
        }
    }
    out
}

#[test]
fn issue11_verify_reports_missing_objects_and_forgets_their_results() {
    let p = Project::new();
    one_run(&p);
    for f in object_files(&p.path().join("cache")) {
        std::fs::remove_file(f).unwrap();
    }
    let verify = p.run(&["cache", "verify"]);
    assert!(!verify.status.success(), "missing objects must fail verify");
    let report = String::from_utf8_lossy(&verify.stdout);
    assert!(report.contains("is missing"), "{report}");
    assert!(report.contains("2 results forgotten"), "{report}");
    let again = p.run(&["cache", "verify"]);
    assert!(again.status.success());
    let plan = p.plan_json("pipelines/p.toml", &[]);
    assert_eq!(plan["a"].0, "to-run");
}

#[test]
fn issue11_gc_refuses_to_race_a_running_run() {
    let p = Project::new();
    p.write(
        "pipelines/slow.toml",
        "[stages.a]\nkind = \"test-echo\"\nparams = { value = 1, sleep_ms = 20000, trace = \"started.txt\" }\n",
    );
    let mut child = p.cmd(&["run", "pipelines/slow.toml"]).spawn().unwrap();
    let clock = std::time::Instant::now();
    while !p.path().join("started.txt").exists() {
        assert!(clock.elapsed().as_secs() < 60, "the stage never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let gc = p.run(&["cache", "gc"]);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!gc.status.success(), "gc ran beside a live run");
    assert!(
        stderr_of(&gc).contains("a run is using this cache"),
        "{}",
        stderr_of(&gc)
    );
    // Once the run is gone (even killed), gc runs and clears its leftovers.
    let gc = p.run(&["cache", "gc"]);
    assert!(gc.status.success(), "{}", stderr_of(&gc));
    assert!(String::from_utf8_lossy(&gc.stdout).contains("1 scratch folders"));
}

#[test]
fn issue11_gc_collects_temporary_object_files() {
    let p = Project::new();
    one_run(&p);
    let shard = object_files(&p.path().join("cache"))[0]
        .parent()
        .unwrap()
        .to_path_buf();
    std::fs::write(shard.join(".tmp-objectAbC123"), b"half").unwrap();
    let gc = p.run(&["cache", "gc"]);
    assert!(gc.status.success());
    assert!(
        String::from_utf8_lossy(&gc.stdout).contains("1 temporary files"),
        "{}",
        String::from_utf8_lossy(&gc.stdout)
    );
    assert!(!shard.join(".tmp-objectAbC123").exists());
}

#[test]
fn provenance_is_recorded_and_shown_but_never_keyed() {
    let p = Project::new();
    one_run(&p);
    let out = p.run(&["show", "pipelines/p.toml", "a", "--json"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let prov = &shown[0]["provenance"];
    assert_eq!(prov["asymflow"], env!("CARGO_PKG_VERSION"));
    assert_eq!(prov["device"], "cpu");
    assert!(prov["threads"].as_i64().unwrap() >= 1, "{prov}");
    let text =
        String::from_utf8_lossy(&p.run(&["show", "pipelines/p.toml", "a"]).stdout).into_owned();
    assert!(text.contains("made by   asymflow"), "{text}");
    // Changing what provenance holds (here: the thread count) never changes a key.
    let again = p
        .cmd(&["plan", "pipelines/p.toml", "--json"])
        .env("OMP_NUM_THREADS", "1")
        .output()
        .unwrap();
    let plan = crate::support::statuses(&again.stdout);
    assert_eq!(plan["a"].0, "cached");
}

#[test]
fn cache_forget_takes_unique_prefixes_and_makes_the_stage_run_again() {
    let p = Project::new();
    one_run(&p);
    let out = p.run(&["show", "pipelines/p.toml", "a", "--json"]);
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let key = shown[0]["key"].as_str().unwrap().to_string();
    let ambiguous = p.run(&["cache", "forget", ""]);
    assert!(!ambiguous.status.success());
    assert!(
        stderr_of(&ambiguous).contains("names 2 results"),
        "{}",
        stderr_of(&ambiguous)
    );
    let unknown = p.run(&["cache", "forget", "zz"]);
    assert!(stderr_of(&unknown).contains("no result has a key starting with `zz`"));
    let out = p.run(&["cache", "forget", &key[..12]]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let plan = p.plan_json("pipelines/p.toml", &[]);
    assert_eq!(plan["a"].0, "to-run");
    assert_eq!(plan["b"].0, "to-run");
}
