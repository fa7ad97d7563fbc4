//! The output contract at run time: a finished run whose files differ from its kind's output
//! declarations fails with a message naming the kind, the file and the declaration, and the
//! index records no result for it, whichever process ran it (engine threads or a worker).

use std::process::Command;

use crate::support::{statuses, Project};

const PIPELINE: &str = r#"
[pipeline]
name = "contract"

[stages.omits]
kind = "test-echo"
params = { value = 1, omit = true }

[stages.stray]
kind = "test-echo"
params = { value = 2, stray = "extra.txt" }

[stages.padded]
kind = "test-echo"
params = { value = 3, pad_bytes = 16 }

[stages.plain]
kind = "test-echo"
params = { value = 4 }
"#;

/// Runs the pipeline with `--keep-going` (`test_kinds`: `1` on engine threads, `worker` in a
/// worker), checks the two broken stages failed with the contract's message and the others
/// ran, then that a plan still has the broken ones to run (nothing recorded) and the others
/// cached.
fn broken_runs_fail_and_record_nothing(test_kinds: &str) {
    let p = Project::new();
    p.write("pipelines/contract.toml", PIPELINE);
    let with_kinds = |mut cmd: Command| {
        cmd.env("ASYMFLOW_TEST_KINDS", test_kinds);
        cmd.output().expect("asymflow runs")
    };
    let out = with_kinds(p.cmd(&["run", "pipelines/contract.toml", "--json", "--keep-going"]));
    assert!(!out.status.success());
    let st = statuses(&out.stdout);
    assert_eq!(st["omits"].0, "failed", "{st:?}");
    assert!(
        st["omits"].1.contains(
            "output contract broken, nothing recorded: kind `test-echo` declares output \
             `value.json` (data) but the run did not write it"
        ),
        "{}",
        st["omits"].1
    );
    assert_eq!(st["stray"].0, "failed", "{st:?}");
    assert!(
        st["stray"].1.contains(
            "kind `test-echo` wrote `extra.txt`, which none of its output declarations names \
             (it declares `value.json`, `pad.bin`; every kind may also write `log.txt`, \
             `metrics.json`, `reasons.json`)"
        ),
        "{}",
        st["stray"].1
    );
    assert_eq!(st["padded"].0, "ran", "an optional output may be written");
    assert_eq!(st["plain"].0, "ran", "an optional output may be left out");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");

    let plan = with_kinds(p.cmd(&["plan", "pipelines/contract.toml", "--json"]));
    assert!(plan.status.success());
    let plan = statuses(&plan.stdout);
    assert_eq!(plan["omits"].0, "to-run", "no result recorded: {plan:?}");
    assert_eq!(plan["stray"].0, "to-run", "no result recorded: {plan:?}");
    assert_eq!(plan["padded"].0, "cached");
    assert_eq!(plan["plain"].0, "cached");
}

#[test]
fn a_run_breaking_its_output_contract_on_engine_threads_fails_and_records_nothing() {
    broken_runs_fail_and_record_nothing("1");
}

#[test]
fn a_run_breaking_its_output_contract_in_a_worker_fails_and_records_nothing() {
    broken_runs_fail_and_record_nothing("worker");
}

#[test]
fn kinds_marks_optional_outputs_and_lists_the_metrics_recorded() {
    let p = Project::new();
    let out = p.run(&["kinds", "evaluate"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let reasons = text
        .lines()
        .find(|l| l.trim_start().starts_with("reasons.json"))
        .unwrap_or_else(|| panic!("no reasons.json line in:\n{text}"));
    assert!(reasons.ends_with("(optional)"), "{reasons}");
    let evaluation = text
        .lines()
        .find(|l| l.trim_start().starts_with("evaluation.json"))
        .unwrap();
    assert!(!evaluation.contains("(optional)"), "{evaluation}");
    let metrics = text
        .lines()
        .find(|l| l.starts_with("metrics (with the default params"))
        .unwrap_or_else(|| panic!("no metrics line in:\n{text}"));
    assert!(
        metrics.ends_with(
            "map, map_noninterp, map_std, no_positive, queries, r1, r5, r10, query_gflops"
        ),
        "{metrics}"
    );
}

/// The same check on a job that ran as a (fake) Slurm job through `asymflow exec`: the job
/// itself succeeds, the engine refuses its result.
#[test]
fn a_slurm_job_breaking_its_output_contract_fails_and_records_nothing() {
    use crate::slurm_engine::{asymflow, project, spawn_run, wait_exit, wait_for};
    let fake = crate::slurm::FakeSlurm::new();
    let profile = format!(
        "[executor.slurm]\npartition = \"gpu\"\ntime = \"01:00:00\"\nmem = \"4G\"\n\
         poll_interval = 0.05\nbin_dir = \"{}\"\nsetup = \"export ASYMFLOW_TEST_KINDS=worker\"\n\n\
         [executor.slurm.device]\ngres = \"gpu:1\"\n",
        fake.bin().display()
    );
    let dir = project(&fake.project(), Some(&profile));
    std::fs::write(
        dir.join("pipelines/engine.toml"),
        "[stages.broken]\nkind = \"test-echo\"\nparams = { omit = true, device = true }\n",
    )
    .unwrap();
    let log = dir.join("run.log");
    let mut run = spawn_run(&dir, &log);
    wait_for(&log, "as Slurm job", 1, std::time::Duration::from_secs(60));
    let ids = fake.job_ids();
    assert_eq!(fake.run(&ids[0]), 0, "the job itself finishes");
    let exit = wait_exit(&mut run, std::time::Duration::from_secs(60), &log);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!exit.success(), "{text}");
    assert!(
        text.contains(
            "kind `test-echo` declares output `value.json` (data) but the run did not write it"
        ),
        "{text}"
    );
    let plan = asymflow(&dir, &["plan", "pipelines/engine.toml", "--json"])
        .output()
        .unwrap();
    let plan = statuses(&plan.stdout);
    assert_eq!(plan["broken"].0, "to-run", "no result recorded: {plan:?}");
}
