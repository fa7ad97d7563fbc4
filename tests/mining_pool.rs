//! `train-teacher`'s `mining = "pool"` (triplet negatives mined once per epoch from a pool of
//! training images, the resolution-asymmetry reference's `mine_dist`) end to end through the
//! `asymflow` binary: a tiny teacher trains and writes its outputs, a classifier loss with
//! pool mining is refused naming the parameter, and the paper pipelines mine from a pool.

use serde_json::Value;

use crate::support::{expand, Project};

/// A tiny triplet teacher on 6 synthetic classes; `teacher` params appended.
fn pipeline(teacher: &str) -> String {
    format!(
        r#"
[stages.split]
kind = "split"
params = {{ dataset = "synthetic", classes = 12, per_class = 8, image_size = 32, protocol = "half-classes" }}

[stages.teacher]
kind = "train-teacher"
inputs = {{ split = "split" }}
params = {{ arch = "resnet18", width = 8, stem = "small", embed_dim = 16, resolution = 24,
           loss = "triplet", per_class = 4, batch_size = 8, epochs = 2, optimizer = "adam",
           lr = 1e-3, flip = false, {teacher} }}
"#
    )
}

#[test]
fn a_teacher_mining_negatives_from_a_pool_trains_and_writes_its_outputs() {
    let project = Project::new();
    project.write(
        "pipelines/pool.toml",
        &pipeline(r#"mining = "pool", pool_size = 20, negatives = 3"#),
    );
    project.write("pipelines/batch.toml", &pipeline(r#"mining = "batch""#));
    let first = project.run_json("pipelines/pool.toml", &[]);
    assert!(first.values().all(|(s, _)| s == "ran"), "{first:?}");

    let teacher = project.show_one("pipelines/pool.toml", "teacher");
    let loss = teacher["metrics"]["final_loss"].as_f64().unwrap();
    assert!(loss.is_finite() && loss >= 0.0, "{teacher}");
    for name in ["model.safetensors", "model.json", "loss.json"] {
        let path = teacher["outputs"][name]["path"]
            .as_str()
            .unwrap_or_else(|| panic!("no {name} in {teacher}"));
        assert!(std::fs::metadata(path).unwrap().len() > 0, "{name}");
    }
    let curve: Value = serde_json::from_str(
        &std::fs::read_to_string(teacher["outputs"]["loss.json"]["path"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(curve["epochs"].as_array().unwrap().len(), 2, "{curve}");
    let log =
        std::fs::read_to_string(teacher["outputs"]["log.txt"]["path"].as_str().unwrap()).unwrap();
    assert!(
        log.contains("from a pool of 20 of 48 images"),
        "the pool is capped at pool_size of the 48 training images:\n{log}"
    );
    assert_eq!(
        log.matches("mined negatives from 20 pool images").count(),
        2,
        "mined once per epoch:\n{log}"
    );

    // The mining choice is part of the key: the batch miner is another result.
    project.run_json("pipelines/batch.toml", &[]);
    let batch = project.show_one("pipelines/batch.toml", "teacher");
    assert_ne!(batch["key"], teacher["key"]);
    assert_eq!(batch["params"]["pool_size"], 20000, "the default");

    let again = project.run_json("pipelines/pool.toml", &[]);
    assert!(again.values().all(|(s, _)| s == "cached"), "{again:?}");
}

#[test]
fn pool_mining_with_a_classifier_loss_is_an_error_naming_mining() {
    let project = Project::new();
    project.write(
        "pipelines/bad.toml",
        &pipeline(r#"mining = "pool""#).replace(r#"loss = "triplet""#, r#"loss = "norm-softmax""#),
    );
    let out = project.run(&["run", "pipelines/bad.toml"]);
    assert!(!out.status.success());
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("mining"), "{text}");
    assert!(text.contains("loss = \"norm-softmax\""), "{text}");
    assert!(text.contains("mining = \"batch\""), "the fix: {text}");
}

#[test]
fn a_pool_size_below_one_is_refused_before_anything_runs() {
    let project = Project::new();
    project.write(
        "pipelines/zero.toml",
        &pipeline(r#"mining = "pool", pool_size = 0"#),
    );
    let out = project.run(&["plan", "pipelines/zero.toml"]);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("pool_size"), "{text}");
}

#[test]
fn raml_paper_teachers_mine_negatives_from_a_pool_and_the_quickstart_from_the_batch() {
    for file in [
        "pipelines/raml-cub200.toml",
        "pipelines/raml-cars196.toml",
        "pipelines/raml-sop.toml",
        "pipelines/raml-ablation.toml",
    ] {
        let mut teachers = 0;
        for (stage, instances) in &expand(file, &[]) {
            for params in instances {
                if params.get("pool_size").is_none() {
                    continue;
                }
                teachers += 1;
                assert_eq!(params.str("mining").unwrap(), "pool", "{file}: {stage}");
                assert_eq!(params.int("pool_size").unwrap(), 20_000, "{file}: {stage}");
            }
        }
        assert!(teachers >= 2, "{file}: a teacher at each resolution");
    }
    for (stage, instances) in &expand("pipelines/quickstart.toml", &[]) {
        for params in instances {
            if params.get("pool_size").is_some() {
                assert_eq!(
                    params.str("mining").unwrap(),
                    "batch",
                    "quickstart: {stage}"
                );
            }
        }
    }
}
