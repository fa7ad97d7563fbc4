//! ASHA early stopping in a search (issue 30, `prune = { kind = "asha", ... }`): the jobs per
//! rung, a promoted trial continuing from its lower rung's checkpoint through its keyed
//! `resume` input, each trial's rung in `run --json` and the report, and a second run that
//! computes nothing. The scheduler's own counts (27 trials, eta 3: 27/9/3/1) are unit tests
//! in `src/search/asha.rs`.

use serde_json::Value;

use crate::support::{statuses, with_status, Project};

/// Four trials of a learning rate, rungs of 1, 2 and 4 epochs (eta 2): 4 / 2 / 1 jobs.
const ASHA: &str = r#"[pipeline]
name = "asha"

[stages.split]
kind = "split"
params = { dataset = "synthetic", classes = 24, per_class = 10, image_size = 32, validation = true }

[stages.net]
kind = "train-classifier"
inputs = { split = "split" }
params = { partition = "val-train", width = 8, stem = "small", embed_dim = 16, resolution = 32, epochs = 1, batch_size = 32, lr = 1e-3, flip = false, schedule = "constant", seed = 0 }

[stages.emb]
kind = "embed"
inputs = { split = "split", model = "net" }
params = { partition = "val-test", resolution = 32 }

[stages.eval]
kind = "evaluate"
inputs = { query = "emb", database = "emb" }

[search.lr]
objective = { stage = "eval", metric = "map", goal = "max" }
sampler = "random"
seed = 0
trials = 4
prune = { kind = "asha", resource = "epochs", min = 1, max = 4, eta = 2 }

[search.lr.space]
lr = { param = "stages.net.params.lr", log_uniform = [1e-4, 1e-2] }
"#;

fn run_doc(p: &Project) -> Value {
    let out = p.run(&["run", "pipelines/a.toml", "--json"]);
    assert!(
        out.status.success(),
        "asymflow run failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn losses(p: &Project, shown: &Value) -> Vec<f64> {
    let rel = shown["outputs"]["loss.json"]["path"]
        .as_str()
        .unwrap_or_else(|| panic!("no loss.json in {shown}"));
    let text = std::fs::read_to_string(p.path().join(rel)).unwrap();
    let epochs: Vec<Value> = serde_json::from_str(&text).unwrap();
    epochs.iter().map(|e| e["loss"].as_f64().unwrap()).collect()
}

#[test]
fn asha_promotes_the_best_half_which_resumes_from_its_lower_rung() {
    let p = Project::new();
    p.write("pipelines/a.toml", ASHA);
    let doc = run_doc(&p);
    let search = &doc["searches"][0];
    assert_eq!(search["finished"], true, "{search}");
    assert_eq!(search["prune"]["rungs"], serde_json::json!([1, 2, 4]));
    assert_eq!(search["prune"]["counts"], serde_json::json!([4, 2, 1]));

    // Every trial says the rung it reached; the winner is the one trained to `max`.
    let trials = search["trials"].as_array().unwrap();
    let rungs: Vec<u64> = trials.iter().map(|t| t["rung"].as_u64().unwrap()).collect();
    let mut sorted = rungs.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, vec![0, 0, 1, 2], "{search}");
    let best = search["best"].as_u64().unwrap() as usize;
    assert_eq!(trials[best]["rung"], 2);
    assert_eq!(trials[best]["resource"], 4);

    // The rung is an axis bound into `epochs`: 7 trained instances, 7 evaluations.
    let runs = statuses(&serde_json::to_vec(&doc).unwrap());
    let nets: Vec<&String> = runs.keys().filter(|k| k.starts_with("net[")).collect();
    assert_eq!(nets.len(), 7, "{nets:?}");
    assert_eq!(with_status(&runs, "ran").len(), 1 + 7 * 3, "{runs:?}");

    // The promoted job at 4 epochs resumed from the winner's 2-epoch result: its key has the
    // `resume` input, and its loss curve starts with the lower rung's two epochs unchanged.
    let out = p.run(&["show", "pipelines/a.toml", "net", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let at = |epochs: i64| -> Vec<&Value> {
        shown
            .iter()
            .filter(|s| {
                let label = s["instance"].as_str().unwrap_or("");
                label.contains(&format!("lr.rung={epochs},"))
                    && label.contains(&format!("lr.trial={best}]"))
            })
            .collect()
    };
    let (top, middle, first) = (at(4), at(2), at(1));
    assert_eq!((top.len(), middle.len(), first.len()), (1, 1, 1));
    let resumed_from = |s: &Value| s["inputs"]["resume"][0]["outputs"]["model.safetensors"].clone();
    let weights = |s: &Value| s["outputs"]["model.safetensors"]["digest"].clone();
    assert_eq!(
        resumed_from(top[0]),
        weights(middle[0]),
        "{}",
        top[0]["instance"]
    );
    assert_eq!(resumed_from(middle[0]), weights(first[0]));
    assert!(
        first[0]["inputs"].get("resume").is_none(),
        "{}",
        first[0]["instance"]
    );
    let (l4, l2) = (losses(&p, top[0]), losses(&p, middle[0]));
    assert_eq!(l4.len(), 4);
    assert_eq!(
        l4[..2],
        l2[..],
        "the promoted run continues the lower rung's history"
    );

    // The report's table has each trial's rung.
    let table = std::fs::read_to_string(p.path().join("reports/asha/search-lr/table.md")).unwrap();
    assert!(
        table.contains("| rung |") && table.contains("epochs = 4"),
        "{table}"
    );

    // The same search again decides the same jobs and computes nothing.
    let again = run_doc(&p);
    let again_runs = statuses(&serde_json::to_vec(&again).unwrap());
    assert!(with_status(&again_runs, "ran").is_empty(), "{again_runs:?}");
    assert_eq!(again["searches"][0]["prune"], search["prune"]);
}

#[test]
fn mistakes_in_prune_point_at_their_place() {
    let p = Project::new();
    let cases = [
        (
            ASHA.replace("kind = \"asha\"", "kind = \"ashaa\""),
            "unknown pruner `ashaa`",
        ),
        (
            ASHA.replace("max = 4", "max = 1"),
            "`max` (1) must be larger than `min` (1)",
        ),
        (
            ASHA.replace("resource = \"epochs\"", "resource = \"lr\""),
            "the resource must be an integer parameter",
        ),
        (
            ASHA.replace(
                "resource = \"epochs\"",
                "resource = \"stages.emb.params.resolution\"",
            ),
            "stage `emb` is not searched",
        ),
        (
            ASHA.replace("eta = 2 }", "eta = 2, rate = 1 }"),
            "unknown key `rate`",
        ),
    ];
    for (text, message) in cases {
        p.write("pipelines/a.toml", &text);
        let out = p.run(&["plan", "pipelines/a.toml"]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(message), "{err}");
        assert!(err.contains("pipelines/a.toml:"), "{err}");
    }
}

/// The split and the chain before each training kind's search (its stage is `net`).
const CHAIN: &str = r#"[pipeline]
name = "asha-kinds"

[stages.split]
kind = "split"
params = { dataset = "synthetic", classes = 16, per_class = 6, image_size = 32, validation = true, subsets = [50] }

[stages.teacher]
kind = "train-teacher"
inputs = { split = "split" }
params = { partition = "val-train", width = 8, stem = "small", embed_dim = 8, resolution = 32, loss = "norm-softmax", scale = 16.0, epochs = 1, batch_size = 8, per_class = 0 }

[stages.old]
kind = "train-classifier"
inputs = { split = "split" }
params = { partition = "val-train-50", width = 8, stem = "small", embed_dim = 8, head = "norm-softmax", scale = 16.0, resolution = 16, epochs = 1, batch_size = 8 }
"#;

/// The searched stage `net` of each kind, on the chain above.
const SEARCHED: [(&str, &str); 3] = [
    (
        "train-teacher",
        r#"inputs = { split = "split" }
params = { partition = "val-train", width = 8, stem = "small", embed_dim = 8, resolution = 32, loss = "norm-softmax", scale = 16.0, epochs = 1, batch_size = 8, per_class = 0, schedule = "constant" }"#,
    ),
    (
        "distill",
        r#"inputs = { split = "split", teacher = "teacher" }
params = { partition = "val-train", resolution = 16, augmentations = 2, batch_size = 4, epochs = 1, mixup = 0.0, schedule = "constant" }"#,
    ),
    (
        "train-bct",
        r#"inputs = { split = "split", old = "old" }
params = { partition = "val-train", width = 8, stem = "small", embed_dim = 8, head = "norm-softmax", scale = 16.0, resolution = 16, epochs = 1, batch_size = 8, schedule = "constant" }"#,
    ),
];

/// Two trials, rungs of 1 and 2 epochs: the better trial is promoted and continues.
const SEARCH: &str = r#"
[stages.emb]
kind = "embed"
inputs = { split = "split", model = "net" }
params = { partition = "val-test", resolution = 16 }

[stages.eval]
kind = "evaluate"
inputs = { query = "emb", database = "emb" }

[search.lr]
objective = { stage = "eval", metric = "map", goal = "max" }
sampler = "random"
seed = 0
trials = 2
prune = { kind = "asha", resource = "epochs", min = 1, max = 2, eta = 2 }

[search.lr.space]
lr = { param = "stages.net.params.lr", log_uniform = [1e-4, 1e-2] }
"#;

#[test]
fn every_training_kind_resumes_a_promoted_trial_from_its_lower_rung() {
    for (kind, stage) in SEARCHED {
        let p = Project::new();
        p.write(
            "pipelines/a.toml",
            &format!("{CHAIN}\n[stages.net]\nkind = \"{kind}\"\n{stage}\n{SEARCH}"),
        );
        let doc = run_doc(&p);
        let search = &doc["searches"][0];
        assert_eq!(
            search["prune"]["counts"],
            serde_json::json!([2, 1]),
            "{kind}"
        );
        let best = search["best"].as_u64().unwrap();

        let out = p.run(&["show", "pipelines/a.toml", "net", "--json"]);
        assert!(
            out.status.success(),
            "{kind}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let shown: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        let at = |epochs: i64| -> &Value {
            let found: Vec<&Value> = shown
                .iter()
                .filter(|s| {
                    let label = s["instance"].as_str().unwrap_or("");
                    label.contains(&format!("lr.rung={epochs},"))
                        && label.contains(&format!("lr.trial={best}]"))
                })
                .collect();
            assert_eq!(found.len(), 1, "{kind}: {shown:?}");
            found[0]
        };
        let (top, first) = (at(2), at(1));
        assert_eq!(
            top["inputs"]["resume"][0]["outputs"]["model.safetensors"],
            first["outputs"]["model.safetensors"]["digest"],
            "{kind}: the promoted run's `resume` input is the lower rung's model"
        );
        let curve = |s: &Value| -> Vec<Value> {
            let rel = s["outputs"]["loss.json"]["path"].as_str().unwrap();
            let text = std::fs::read_to_string(p.path().join(rel)).unwrap();
            let doc: Value = serde_json::from_str(&text).unwrap();
            match doc.get("epochs") {
                Some(epochs) => epochs.as_array().unwrap().clone(),
                None => doc.as_array().unwrap().clone(),
            }
        };
        let (upper, lower) = (curve(top), curve(first));
        assert_eq!(upper.len(), 2, "{kind}: {upper:?}");
        assert_eq!(
            upper[..1],
            lower[..],
            "{kind}: the promoted run continues the lower rung's loss curve"
        );
        let log = top["outputs"]["log.txt"]["path"].as_str().unwrap();
        let text = std::fs::read_to_string(p.path().join(log)).unwrap();
        assert!(
            text.contains("resuming from `net` after 1 epochs"),
            "{kind}: {text}"
        );
    }
}

#[test]
fn a_resource_other_than_epochs_is_refused_at_its_place() {
    let p = Project::new();
    p.write(
        "pipelines/a.toml",
        &ASHA.replace("resource = \"epochs\"", "resource = \"batch_size\""),
    );
    let out = p.run(&["plan", "pipelines/a.toml"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the resource must be `epochs`") && err.contains("pipelines/a.toml:"),
        "{err}"
    );
}
