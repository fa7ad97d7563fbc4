//! Hyper-parameter search (issue 30): trials as cached instances, replayed deterministically,
//! extended, resumed after `kill -9`, the winner flowing downstream, and the guard against
//! tuning on test.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::support::{statuses, trace_lines, with_status, Project};

/// The issue's example, verbatim.
const TUNE: &str = r#"[pipeline]
name = "tune"

[sweep]
seed = [0, 1]

[stages.split]
kind = "split"
params = { dataset = "synthetic", classes = 24, per_class = 10, image_size = 32, validation = true }

[stages.net]
kind = "train-classifier"
inputs = { split = "split" }
params = { partition = "val-train", width = 8, stem = "small", embed_dim = 16, resolution = 32, epochs = 2, batch_size = 32, lr = 1e-3, flip = false, seed = "${sweep.seed}" }

[stages.emb]
kind = "embed"
inputs = { split = "split", model = "net" }
params = { partition = "val-test", resolution = 32 }

[stages.eval]
kind = "evaluate"
inputs = { query = "emb", database = "emb" }

[search.lr]
objective = { stage = "eval", metric = "map", goal = "max" }   # mean over `seed`
sampler = "tpe"
seed = 0
trials = 6

[search.lr.space]
lr = { param = "stages.net.params.lr", log_uniform = [1e-4, 1e-2] }
wd = { param = "stages.net.params.weight_decay", choice = [0.0, 1e-4] }

[stages.final]
kind = "train-classifier"
inputs = { split = "split" }
params = { partition = "train", width = 8, stem = "small", embed_dim = 16, resolution = 32, epochs = 2, batch_size = 32, flip = false, lr = "${search.lr.best.lr}", weight_decay = "${search.lr.best.wd}", seed = 0 }
"#;

/// A search over test kinds: `model` echoes the searched value (and traces every real run),
/// `score` adds 1 to it; the objective is the smallest score.
const ECHO: &str = r#"[pipeline]
name = "echo-search"

[sweep]
seed = [0, 1]

[stages.model]
kind = "test-echo"
params = { value = 0.0, sleep_ms = "${sweep.seed}", trace = "trace.txt" }

[stages.score]
kind = "test-echo"
inputs = { input = "model" }
params = { value = 1.0 }

[search.x]
objective = { stage = "score", metric = "value", goal = "min" }
sampler = "random"
seed = 3
trials = 5
parallel = 2

[search.x.space]
v = { param = "stages.model.params.value", uniform = [-1.0, 1.0] }

[stages.final]
kind = "test-echo"
params = { value = "${search.x.best.v}" }
"#;

fn run_doc(p: &Project, file: &str, extra: &[&str]) -> Value {
    let mut args = vec!["run", file, "--json"];
    args.extend_from_slice(extra);
    let out = p.run(&args);
    assert!(
        out.status.success(),
        "asymflow run failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn trial_values(doc: &Value, search: &str, dim: &str) -> Vec<Value> {
    let searches = doc["searches"].as_array().expect("searches in run --json");
    let s = searches.iter().find(|s| s["name"] == search).unwrap();
    s["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["values"][dim].clone())
        .collect()
}

#[test]
fn a_search_runs_its_trials_as_instances_and_passes_the_winner_on() {
    let p = Project::new();
    p.write("pipelines/s.toml", ECHO);
    let doc = run_doc(&p, "pipelines/s.toml", &[]);
    let runs = statuses(&serde_json::to_vec(&doc).unwrap());
    // 5 trials x 2 seeds of model and score, each run once, and the final stage.
    assert_eq!(trace_lines(&p).len(), 10, "{:?}", trace_lines(&p));
    let models: Vec<&String> = runs.keys().filter(|k| k.starts_with("model[")).collect();
    assert_eq!(models.len(), 10, "{models:?}");
    assert!(
        runs.keys()
            .any(|k| k.starts_with("model[seed=0,x.trial=4,x.v=")),
        "{runs:?}"
    );
    let values = trial_values(&doc, "x", "v");
    assert_eq!(values.len(), 5);
    let search = &doc["searches"][0];
    assert_eq!(search["finished"], true);
    assert_eq!(search["mean_over"], serde_json::json!(["seed"]));
    // goal = min on 1 + v: the winner is the smallest v.
    let smallest = values
        .iter()
        .map(|v| v.as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    let best = search["best"].as_u64().unwrap() as usize;
    assert_eq!(values[best].as_f64().unwrap(), smallest);
    let shown = p.show_one("pipelines/s.toml", "final");
    assert_eq!(shown["params"]["value"].as_f64(), Some(smallest), "{shown}");

    // The same search again proposes the same trials and computes nothing.
    let again = run_doc(&p, "pipelines/s.toml", &[]);
    let again_runs = statuses(&serde_json::to_vec(&again).unwrap());
    assert!(with_status(&again_runs, "ran").is_empty(), "{again_runs:?}");
    assert_eq!(trial_values(&again, "x", "v"), values);
    assert_eq!(trace_lines(&p).len(), 10);

    // Raising `trials` runs only the new ones, and keeps the first five as they were.
    let more = run_doc(&p, "pipelines/s.toml", &["--set", "search.x.trials=7"]);
    let more_values = trial_values(&more, "x", "v");
    assert_eq!(more_values.len(), 7);
    assert_eq!(more_values[..5], values[..]);
    assert_eq!(trace_lines(&p).len(), 14, "{:?}", trace_lines(&p));
}

#[test]
fn the_plan_holds_one_batch_of_parallel_trials_and_waits_for_the_winner() {
    let p = Project::new();
    p.write("pipelines/s.toml", ECHO);
    let out = p.run(&["plan", "pipelines/s.toml"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("final") && text.contains("waits for search x"),
        "{text}"
    );
    assert!(text.contains("search x: 0 of 5 trials finished"), "{text}");
    // parallel = 2: the first batch is trials 0 and 1, nothing more until they finish.
    let plan = p.plan_json("pipelines/s.toml", &[]);
    let trials: BTreeSet<String> = plan
        .keys()
        .filter(|k| k.starts_with("model["))
        .map(|k| k.split("x.trial=").nth(1).unwrap()[..1].to_string())
        .collect();
    assert_eq!(trials, BTreeSet::from(["0".into(), "1".into()]), "{plan:?}");
    assert!(!plan.keys().any(|k| k.starts_with("final")), "{plan:?}");

    p.run_json("pipelines/s.toml", &[]);
    let out = p.run(&["why", "pipelines/s.toml", "final"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("final takes the winner of search x: trial "),
        "{text}"
    );
}

#[test]
fn a_search_killed_mid_way_resumes_where_it_stopped() {
    let slow = ECHO
        .replace("parallel = 2", "parallel = 1")
        .replace("sleep_ms = \"${sweep.seed}\"", "sleep_ms = 400");
    let slow = slow.replace("seed = [0, 1]", "seed = [0]");
    let reference = Project::new();
    reference.write("pipelines/s.toml", &slow);
    let whole = run_doc(&reference, "pipelines/s.toml", &[]);

    let p = Project::new();
    p.write("pipelines/s.toml", &slow);
    let mut child = p
        .cmd(&["run", "pipelines/s.toml", "--json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let clock = std::time::Instant::now();
    while trace_lines(&p).len() < 3 && clock.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SIGKILL: no cleanup at all.
    child.kill().unwrap();
    child.wait().unwrap();
    let before = trace_lines(&p);
    assert!(before.len() >= 3 && before.len() < 5, "{before:?}");

    let resumed = run_doc(&p, "pipelines/s.toml", &[]);
    assert_eq!(
        trial_values(&resumed, "x", "v"),
        trial_values(&whole, "x", "v")
    );
    let lines = trace_lines(&p);
    let distinct: BTreeSet<&String> = lines.iter().collect();
    assert_eq!(distinct.len(), 5, "{lines:?}");
    // At most the trial that was running when killed ran twice.
    assert!(lines.len() <= 6, "{lines:?}");
}

#[test]
fn a_search_objective_that_reads_test_images_is_refused_with_its_chain() {
    let p = Project::new();
    let bad = TUNE.replace(
        "params = { partition = \"val-test\", resolution = 32 }",
        "params = { partition = \"test\", resolution = 32 }",
    );
    p.write("pipelines/tune.toml", &bad);
    let out = p.run(&["plan", "pipelines/tune.toml"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("objective eval reads emb, which embeds split:test"),
        "{err}"
    );
    assert!(err.contains("pipelines/tune.toml:26:"), "{err}");
}

#[test]
fn plan_lists_the_stages_that_read_test_images() {
    let p = Project::new();
    let with_test = format!(
        "{TUNE}\n[stages.final-emb]\nkind = \"embed\"\ninputs = {{ split = \"split\", model = \"final\" }}\nparams = {{ partition = \"test\", resolution = 32 }}\n"
    );
    p.write("pipelines/tune.toml", &with_test);
    let out = p.run(&["plan", "pipelines/tune.toml"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("final-emb") && text.contains("waits for search lr"),
        "{text}"
    );
    // final-emb waits for the search, so no instance of it is planned yet; the winner's
    // chain is listed once the search finishes. The validation stages read no test image.
    assert!(!text.contains("reads test images: emb"), "{text}");
}

#[test]
fn mistakes_in_a_search_table_point_at_their_place() {
    let p = Project::new();
    let cases = [
        (
            TUNE.replace(
                "stages.net.params.weight_decay",
                "stages.net.params.weight_decy",
            ),
            "kind `train-classifier` has no parameter `weight_decy`",
            ":33:",
        ),
        (
            TUNE.replace("sampler = \"tpe\"", "sampler = \"tpee\""),
            "unknown sampler `tpee`",
            ":27:",
        ),
        (
            TUNE.replace("log_uniform = [1e-4, 1e-2]", "log_uniform = [0.0, 1e-2]"),
            "`log_uniform` needs a positive lower end",
            ":32:",
        ),
        (
            TUNE.replace("${search.lr.best.wd}", "${search.lr.best.decay}"),
            "search `lr` has no dimension `decay`",
            ":38:",
        ),
    ];
    for (text, message, place) in cases {
        p.write("pipelines/tune.toml", &text);
        let out = p.run(&["plan", "pipelines/tune.toml"]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(message), "{err}");
        assert!(
            err.contains(&format!("pipelines/tune.toml{place}")),
            "{err}"
        );
    }
    let out = p.run(&["plan", "pipelines/tune.toml", "--set", "search.lr.trials=0"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`trials` must be an integer of at least 1"),
        "{err}"
    );
}

#[test]
fn the_issue_example_runs_as_written_and_twice_computes_nothing() {
    let p = Project::new();
    p.write("pipelines/tune.toml", TUNE);
    let doc = run_doc(&p, "pipelines/tune.toml", &[]);
    let runs = statuses(&serde_json::to_vec(&doc).unwrap());
    let count = |stage: &str| {
        runs.keys()
            .filter(|k| k.starts_with(&format!("{stage}[")))
            .count()
    };
    // Six trials x two seeds of net, emb and eval; one final model.
    assert_eq!(
        (count("net"), count("emb"), count("eval")),
        (12, 12, 12),
        "{runs:?}"
    );
    assert!(runs.contains_key("final"), "{runs:?}");
    let search = &doc["searches"][0];
    assert_eq!(search["trials"].as_array().unwrap().len(), 6);
    assert_eq!(search["mean_over"], serde_json::json!(["seed"]));
    let best = &search["trials"][search["best"].as_u64().unwrap() as usize]["values"];
    let shown = p.show_one("pipelines/tune.toml", "final");
    assert_eq!(shown["params"]["lr"], best["lr"], "{shown}");
    assert_eq!(shown["params"]["weight_decay"], best["wd"], "{shown}");

    let again = p.run_json("pipelines/tune.toml", &[]);
    assert!(with_status(&again, "ran").is_empty(), "{again:?}");
}

#[test]
fn a_search_runs_under_the_fake_slurm_and_finds_what_a_local_run_finds() {
    use crate::slurm::FakeSlurm;
    let on_device = ECHO
        .replace(
            "params = { value = 0.0, sleep_ms = \"${sweep.seed}\", trace = \"trace.txt\" }",
            "params = { value = 0.0, sleep_ms = \"${sweep.seed}\", device = true }",
        )
        .replace("trials = 5", "trials = 3");
    let local = Project::new();
    local.write("pipelines/s.toml", &on_device);
    let expected = run_doc(&local, "pipelines/s.toml", &[]);

    let fake = FakeSlurm::new();
    let dir = fake.project();
    std::fs::create_dir_all(dir.join("pipelines")).unwrap();
    std::fs::write(dir.join("pipelines/s.toml"), &on_device).unwrap();
    std::fs::write(
        dir.join("asymflow.toml"),
        format!(
            "[executor.slurm]\npartition = \"gpu\"\ntime = \"01:00:00\"\nmem = \"4G\"\n\
             poll_interval = 0.05\nbin_dir = \"{}\"\nsetup = \"export ASYMFLOW_TEST_KINDS=worker\"\n\n\
             [executor.slurm.device]\ngres = \"gpu:1\"\n",
            fake.bin().display()
        ),
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_asymflow"))
        .args(["run", "pipelines/s.toml", "--executor", "slurm", "--json"])
        .current_dir(&dir)
        .env("ASYMFLOW_TEST_KINDS", "worker")
        .env_remove("ASYMFLOW_CACHE")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Play slurmd: run every job as it is submitted, until the search has finished.
    let mut done: BTreeSet<String> = BTreeSet::new();
    let clock = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(clock.elapsed().as_secs() < 240, "the search did not finish");
        for id in fake.job_ids() {
            if done.insert(id.clone()) {
                fake.running(&id);
                assert_eq!(fake.run(&id), 0);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        trial_values(&doc, "x", "v"),
        trial_values(&expected, "x", "v")
    );
    assert_eq!(doc["searches"][0]["best"], expected["searches"][0]["best"]);
    // One Slurm job (an array element) per trained instance: 3 trials x 2 seeds, submitted
    // as one array per batch of ready instances.
    assert_eq!(done.len(), 6, "{:?}", fake.calls());
    assert!(fake.sbatch_calls() < 6, "{:?}", fake.calls());
}
