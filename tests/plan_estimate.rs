//! `plan` estimates how long the instances to run take from the recorded durations of
//! similar results (scaled by epochs), `run` shows the estimate beside the time the stages
//! took, and `plan --executor slurm` says how many GPU-hours the jobs request.

use crate::support::Project;

const PIPELINE: &str = r#"
[pipeline]
name = "cost"

[sweep]
seed = [0, 1, 2]

[stages.student]
kind = "test-train"
params = { epochs = 2, sleep_ms = 40, seed = "${sweep.seed}" }
"#;

const FILE: &str = "pipelines/cost.toml";

fn plan_doc(p: &Project, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["plan", FILE, "--json"];
    args.extend_from_slice(extra);
    let out = p.run(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn issue34_plan_estimates_from_similar_results_and_run_shows_it_against_the_time_taken() {
    let p = Project::new();
    p.write(FILE, PIPELINE);
    let text = String::from_utf8_lossy(&p.run(&["plan", FILE]).stdout).to_string();
    assert!(
        text.contains("3 to run; no recorded result of their kinds to estimate their time"),
        "{text}"
    );
    p.run_json(FILE, &[]);
    let show = p.run(&["show", FILE, "student", "--json"]);
    let shown: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    let recorded: f64 = shown
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["duration_s"].as_f64().unwrap())
        .sum();
    // Twice the epochs: each seed's own result, doubled.
    let set = ["--set", "stages.student.params.epochs=4"];
    let doc = plan_doc(&p, &set);
    let estimate = &doc["estimate"];
    assert_eq!(estimate["to_run"], 3);
    assert_eq!(estimate["estimated"], 3);
    assert_eq!(estimate["from"], 3);
    let seconds = estimate["seconds"].as_f64().unwrap();
    assert!(
        (seconds - 2.0 * recorded).abs() < 1e-9 * recorded.max(1.0),
        "{seconds} vs 2 x {recorded}"
    );
    let mut args = vec!["plan", FILE];
    args.extend_from_slice(&set);
    let text = String::from_utf8_lossy(&p.run(&args).stdout).to_string();
    assert!(
        text.contains("3 to run, about ") && text.contains(" here (from 3 similar results)"),
        "{text}"
    );
    let mut args = vec!["run", FILE];
    args.extend_from_slice(&set);
    let out = p.run(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("estimated about ")
            && err.contains("(from 3 similar results); the 3 that ran took "),
        "{err}"
    );
    // Nothing to run: no estimate.
    let doc = plan_doc(&p, &set);
    assert_eq!(doc["estimate"]["to_run"], 0);
}

#[test]
fn issue34_plan_under_slurm_says_the_gpu_hours_requested() {
    let p = Project::new();
    p.write(
        "pipelines/gpu.toml",
        r#"
[pipeline]
name = "gpu"

[sweep]
seed = [0, 1, 2]

[stages.train]
kind = "test-echo"
params = { value = "${sweep.seed}", device = true }
"#,
    );
    p.write(
        "asymflow.toml",
        "[executor.slurm]\ntime = \"02:00:00\"\n\n[executor.slurm.device]\ngres = \"gpu:2\"\n",
    );
    let out = p.run(&["plan", "pipelines/gpu.toml", "--executor", "slurm"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(
            "--executor slurm: 3 jobs to Slurm, 0 here; they request 12.0 GPU-hours (time limit x GPUs of 3 jobs)"
        ),
        "{text}"
    );
    let out = p.run(&[
        "plan",
        "pipelines/gpu.toml",
        "--executor",
        "slurm",
        "--json",
    ]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["slurm_request"]["gpu_hours"], 12.0);
    assert_eq!(doc["slurm_request"]["gpu_jobs"], 3);
}
