//! Keyed outputs are deterministic functions of their key (issue 28, item 3): every output
//! whose digest enters a consumer's key holds nothing that varies run to run (wall-clock
//! timings live in the log and in provenance's telemetry). So a forced retrain that reproduces
//! a network bit for bit leaves everything below it cached (early cut-off), and two caches that
//! computed the same pipeline independently agree on every key, so teammates can share them.
//!
//! Every training kind is in the pipeline: `train-teacher` and `distill` (the loss curve that
//! held each epoch's seconds), `train-classifier` and `train-bct` (their timings are telemetry).

use std::collections::BTreeMap;

use crate::support::Project;

const PIPELINE: &str = r#"
[pipeline]
name = "keyed"

[stages.split]
kind = "split"
params = { dataset = "synthetic", classes = 8, per_class = 6, image_size = 32, protocol = "half-classes", train_fraction = 0.8, subsets = [50] }

[stages.teacher]
kind = "train-teacher"
inputs = { split = "split" }
params = { arch = "resnet18", width = 8, stem = "small", embed_dim = 8, resolution = 32,
           loss = "norm-softmax", scale = 16.0, optimizer = "adam", lr = 2e-3, epochs = 2,
           batch_size = 6, per_class = 0 }

[stages.student]
kind = "distill"
inputs = { split = "split", teacher = "teacher" }
params = { resolution = 16, augmentations = 2, batch_size = 4, epochs = 1, images_per_epoch = 0,
           lr = 1e-3, jitter = 0.0, mixup = 0.0 }

[stages.emb-student]
kind = "embed"
inputs = { split = "split", model = "student" }
params = { resolution = 16, view = "whole" }

[stages.emb-teacher]
kind = "embed"
inputs = { split = "split", model = "teacher" }
params = { resolution = 32, view = "whole" }

[stages.eval]
kind = "evaluate"
inputs = { query = "emb-student", database = "emb-teacher" }

[stages.old]
kind = "train-classifier"
inputs = { split = "split" }
params = { partition = "train-50", arch = "resnet18", width = 8, stem = "small", embed_dim = 8,
           head = "norm-softmax", scale = 16.0, resolution = 16, epochs = 1, batch_size = 8, lr = 2e-3 }

[stages.new]
kind = "train-bct"
inputs = { split = "split", old = "old" }
params = { partition = "train", arch = "resnet18", width = 8, stem = "small", embed_dim = 8,
           head = "norm-softmax", scale = 16.0, resolution = 16, epochs = 1, batch_size = 8, lr = 2e-3 }

[stages.emb-new]
kind = "embed"
inputs = { split = "split", model = "new" }
params = { resolution = 16, view = "whole" }
"#;

const FILE: &str = "pipelines/keyed.toml";

fn project() -> Project {
    let p = Project::new();
    p.write(FILE, PIPELINE);
    p
}

/// label -> key of every instance, from `plan --json`.
fn keys(p: &Project) -> BTreeMap<String, String> {
    let out = p.run(&["plan", FILE, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["label"].as_str().unwrap().to_string(),
                i["key"]
                    .as_str()
                    .expect("every key is known once run")
                    .to_string(),
            )
        })
        .collect()
}

#[test]
fn a_forced_bit_identical_retrain_leaves_everything_below_it_cached() {
    let p = project();
    let first = p.run_json(FILE, &[]);
    assert!(first.values().all(|(s, _)| s == "ran"), "{first:?}");
    let before = keys(&p);

    let forced = p.run_json(FILE, &["--force", "teacher", "--force", "old"]);
    assert_eq!(forced["teacher"].0, "ran", "{forced:?}");
    assert_eq!(forced["old"].0, "ran", "{forced:?}");
    for (label, (status, reason)) in &forced {
        if label != "teacher" && label != "old" {
            assert_eq!(
                status, "cached",
                "{label} reran after a bit-identical retrain upstream: {reason}"
            );
        }
    }
    assert_eq!(keys(&p), before, "no key moved");
}

#[test]
fn two_caches_that_trained_the_same_pipeline_agree_on_every_key() {
    let (a, b) = (project(), project());
    a.run_json(FILE, &[]);
    b.run_json(FILE, &[]);
    let (ka, kb) = (keys(&a), keys(&b));
    assert_eq!(ka.len(), 9, "{ka:?}");
    assert_eq!(ka, kb, "independent caches must share every key");
}

#[test]
fn a_loss_curve_holds_losses_and_the_log_holds_the_seconds() {
    let p = project();
    p.run_json(FILE, &[]);
    for stage in ["teacher", "student"] {
        let shown = p.show_one(FILE, stage);
        let object = |name: &str| {
            let digest = shown["outputs"][name]["digest"].as_str().unwrap();
            let path = p
                .path()
                .join("cache/objects")
                .join(&digest[..2])
                .join(&digest[2..]);
            std::fs::read_to_string(path).unwrap()
        };
        let curve = object("loss.json");
        assert!(!curve.contains("seconds"), "{stage}: {curve}");
        let log = object("log.txt");
        assert!(
            log.lines()
                .any(|l| l.contains("epoch 1: loss") && l.ends_with(" s")),
            "{stage}: the epoch's time is in the log: {log}"
        );
    }
}
