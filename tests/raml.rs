//! Resolution asymmetry end to end: teacher -> student -> embed -> evaluate on a tiny
//! synthetic set through the `asymflow` binary, a second run that executes nothing, `import`
//! standing in for `embed`, and the paper pipelines parsing and expanding as documented.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn asymflow(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_asymflow"))
        .args(args)
        .current_dir(dir)
        .env_remove("ASYMFLOW_CACHE")
        .output()
        .expect("asymflow runs")
}

/// `asymflow run FILE --json` in `dir`: instance label -> status.
fn run(dir: &Path, file: &str) -> BTreeMap<String, String> {
    let out = asymflow(dir, &["run", file, "--json"]);
    assert!(
        out.status.success(),
        "run failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    doc["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let binding: Vec<String> = i["binding"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let label = if binding.is_empty() {
                i["stage"].as_str().unwrap().to_string()
            } else {
                format!("{}[{}]", i["stage"].as_str().unwrap(), binding.join(","))
            };
            (label, i["status"].as_str().unwrap().to_string())
        })
        .collect()
}

/// The metrics of `stage` (a single instance) from `asymflow show FILE STAGE --json`.
fn metrics(dir: &Path, file: &str, stage: &str) -> BTreeMap<String, f64> {
    let out = asymflow(dir, &["show", file, stage, "--json"]);
    assert!(
        out.status.success(),
        "show failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let doc = doc
        .as_array()
        .and_then(|a| a.first().cloned())
        .unwrap_or(doc);
    doc["metrics"]
        .as_object()
        .unwrap_or_else(|| panic!("no metrics in {doc}"))
        .iter()
        .map(|(k, v)| (k.clone(), v.as_f64().unwrap()))
        .collect()
}

const TINY: &str = r#"
[pipeline]
name = "raml-tiny"

[stages.split]
kind = "split"
params = { dataset = "synthetic", classes = 8, per_class = 8, image_size = 32 }

[stages.teacher]
kind = "train-teacher"
inputs = { split = "split" }
params = { arch = "resnet18", width = 8, stem = "small", embed_dim = 16, resolution = 32,
           loss = "norm-softmax", scale = 16.0, optimizer = "adam", lr = 2e-3, epochs = 2,
           batch_size = 16, per_class = 0 }

[stages.student]
kind = "distill"
inputs = { split = "split", teacher = "teacher" }
params = { resolution = 16, epochs = 2, batch_size = 8, augmentations = 2,
           images_per_epoch = 0, optimizer = "adam", lr = 1e-3 }

[stages.emb-db]
kind = "embed"
inputs = { split = "split", model = "teacher" }
params = { resolution = 32 }

[stages.emb-q]
kind = "embed"
inputs = { split = "split", model = "student" }
params = { resolution = 16 }

[stages.eval]
kind = "evaluate"
inputs = { query = "emb-q", database = "emb-db" }
"#;

#[test]
fn raml_teacher_student_embed_evaluate_then_nothing_reruns() {
    let project = tempfile::tempdir().unwrap();
    let dir = project.path();
    std::fs::create_dir_all(dir.join("pipelines")).unwrap();
    std::fs::write(dir.join("pipelines/tiny.toml"), TINY).unwrap();

    let first = run(dir, "pipelines/tiny.toml");
    assert_eq!(first.len(), 6, "{first:?}");
    assert!(first.values().all(|s| s == "ran"), "{first:?}");

    let teacher = metrics(dir, "pipelines/tiny.toml", "teacher");
    assert!(teacher["final_loss"].is_finite());
    let query = metrics(dir, "pipelines/tiny.toml", "emb-q");
    assert_eq!(
        query["count"], 32.0,
        "half of 8 classes x 8 images are test images"
    );
    assert_eq!(query["resolution"], 16.0);
    // The same network at a quarter of the pixels costs about a quarter.
    let db = metrics(dir, "pipelines/tiny.toml", "emb-db");
    let ratio = db["gflops"] / query["gflops"];
    assert!(
        (3.0..4.5).contains(&ratio),
        "FLOPs ratio 32 px / 16 px = {ratio}"
    );
    let eval = metrics(dir, "pipelines/tiny.toml", "eval");
    assert!((0.0..=1.0).contains(&eval["map"]), "{eval:?}");
    assert!(
        (eval["query_gflops"] - query["gflops"]).abs() < 1e-12,
        "{eval:?}"
    );

    let second = run(dir, "pipelines/tiny.toml");
    assert!(
        second.values().all(|s| s == "cached"),
        "second run executed work: {second:?}"
    );
}

#[test]
fn raml_trains_in_bf16_on_cpu_as_its_own_computation() {
    let project = tempfile::tempdir().unwrap();
    let dir = project.path();
    std::fs::create_dir_all(dir.join("pipelines")).unwrap();
    std::fs::write(dir.join("pipelines/fp32.toml"), TINY).unwrap();
    let bf16 = TINY
        .replace("per_class = 0 }", "per_class = 0, precision = \"bf16\" }")
        .replace("lr = 1e-3 }", "lr = 1e-3, precision = \"bf16\" }");
    assert_eq!(bf16.matches("precision").count(), 2);
    std::fs::write(dir.join("pipelines/bf16.toml"), bf16).unwrap();

    let low = run(dir, "pipelines/bf16.toml");
    assert!(low.values().all(|s| s == "ran"), "{low:?}");
    let full = run(dir, "pipelines/fp32.toml");
    for stage in ["teacher", "student", "emb-db", "emb-q", "eval"] {
        assert_eq!(
            full[stage], "ran",
            "{stage} has another key in fp32: {full:?}"
        );
    }
    assert_eq!(full["split"], "cached");

    let (t16, t32) = (
        metrics(dir, "pipelines/bf16.toml", "teacher")["final_loss"],
        metrics(dir, "pipelines/fp32.toml", "teacher")["final_loss"],
    );
    assert!(t16.is_finite() && t32.is_finite());
    assert_ne!(t16, t32, "bf16 ran the same arithmetic as fp32");
    assert!(
        (t16 - t32).abs() < 0.25 * t32.abs(),
        "bf16 loss {t16} strays from fp32 {t32}"
    );
    let eval = metrics(dir, "pipelines/bf16.toml", "eval");
    assert!((0.0..=1.0).contains(&eval["map"]), "{eval:?}");
}

#[test]
fn raml_import_stands_in_for_embed() {
    let project = tempfile::tempdir().unwrap();
    let dir = project.path();
    std::fs::create_dir_all(dir.join("pipelines")).unwrap();
    // Two classes on two axes, unnormalised: import normalises and evaluation is perfect.
    let emb = tch::Tensor::from_slice(&[3.0f32, 0.1, 2.0, 0.0, 0.0, 5.0, 0.2, 1.0]).view([4, 2]);
    let labels = tch::Tensor::from_slice(&[7i32, 7, 9, 9]);
    tch::Tensor::write_safetensors(
        &[("embeddings", &emb), ("labels", &labels)],
        dir.join("ext.safetensors"),
    )
    .unwrap();
    std::fs::write(
        dir.join("pipelines/imp.toml"),
        r#"
[stages.ext]
kind = "import"
params = { file = "ext.safetensors", gflops = 1.5 }

[stages.eval]
kind = "evaluate"
inputs = { query = "ext", database = "ext" }
"#,
    )
    .unwrap();
    let first = run(dir, "pipelines/imp.toml");
    assert!(first.values().all(|s| s == "ran"), "{first:?}");
    let eval = metrics(dir, "pipelines/imp.toml", "eval");
    assert_eq!(eval["map"], 1.0, "{eval:?}");
    assert_eq!(eval["query_gflops"], 1.5, "{eval:?}");

    // A changed file is new content: import and evaluate rerun.
    let emb = tch::Tensor::from_slice(&[1.0f32, 0.0, 0.0, 1.0, 1.0, 0.1, 0.0, 1.0]).view([4, 2]);
    tch::Tensor::write_safetensors(
        &[("embeddings", &emb), ("labels", &labels)],
        dir.join("ext.safetensors"),
    )
    .unwrap();
    let second = run(dir, "pipelines/imp.toml");
    assert!(second.values().all(|s| s == "ran"), "{second:?}");

    // A file without labels is an error naming what the file holds.
    tch::Tensor::write_safetensors(&[("vectors", &emb)], dir.join("ext.safetensors")).unwrap();
    let out = asymflow(dir, &["run", "pipelines/imp.toml"]);
    assert!(!out.status.success());
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("no `embeddings` tensor (it has: vectors)"),
        "{text}"
    );
}

/// Instance count per stage of a pipeline of the repository, expanded without running.
fn expand(file: &str) -> BTreeMap<String, usize> {
    crate::support::expand(file, &[])
        .into_iter()
        .map(|(stage, instances)| (stage, instances.len()))
        .collect()
}

#[test]
fn raml_quickstart_expands_to_the_four_setups() {
    let c = expand("pipelines/quickstart.toml");
    // `seed` draws every stochastic stage: a teacher per draw, and every network per draw.
    assert_eq!(c["teacher"], 3);
    assert_eq!(c["teacher-q"], 6, "2 query resolutions x 3 seeds");
    assert_eq!(c["student"], 6, "2 query resolutions x 3 seeds");
    assert_eq!(
        c["emb-teacher-db"], 3,
        "the database is embedded once per draw"
    );
    assert_eq!(c["emb-teacher-q"], 6);
    assert_eq!(c["eval-tasym"], 6);
    assert_eq!(c["eval-ts"], 6);
    assert_eq!(c["eval-ssym"], 6);
    assert_eq!(c["table"], 1);
}

/// The quickstart's queries sit at the paper's ratios to the database (0.5 and 0.25), not at
/// a setting of its own.
#[test]
fn raml_quickstart_queries_at_half_and_a_quarter_of_the_database() {
    let s = crate::support::expand("pipelines/quickstart.toml", &[]);
    let db = s["teacher"][0].int("resolution").unwrap();
    let mut queries: Vec<i64> = s["teacher-q"]
        .iter()
        .map(|p| p.int("resolution").unwrap())
        .collect();
    queries.sort_unstable();
    queries.dedup();
    assert_eq!(queries, [db / 4, db / 2]);
    for p in &s["student"] {
        assert!(queries.contains(&p.int("resolution").unwrap()));
    }
}

/// The hand-run rounds that chose the quickstart's data read no test image: every network of
/// the validation pipelines trains on `val-train`, every embedding is of `val-test`, the data
/// is the quickstart's but for the detail they chose, and the detail the quickstart uses is
/// one of their candidates.
#[test]
fn raml_validation_rounds_read_no_test_image() {
    let test = crate::support::expand("pipelines/quickstart.toml", &[]);
    for file in [
        "pipelines/quickstart-validation.toml",
        "pipelines/quickstart-validation-data.toml",
    ] {
        let val = crate::support::expand(file, &[]);
        for split in &val["split"] {
            assert!(split.bool("validation").unwrap(), "{file}");
            for param in ["dataset", "classes", "per_class", "image_size", "protocol"] {
                assert_eq!(
                    split.get(param),
                    test["split"][0].get(param),
                    "{file}: split: {param}"
                );
            }
        }
        crate::support::assert_validation_partitions(file, &crate::support::partitions(&val));
    }
    let data = crate::support::expand("pipelines/quickstart-validation-data.toml", &[]);
    let chosen = test["split"][0].get("detail_scale");
    assert!(
        data["split"]
            .iter()
            .any(|c| c.get("detail_scale") == chosen),
        "the quickstart's detail_scale {chosen:?} is a candidate of the data rounds"
    );
}

/// The quickstart's recipe is what `quickstart-search.toml` chose on the validation split:
/// the searches train on `val-train` and retrieve on `val-test` (`plan` finds no stage that
/// reads a test image), on the quickstart's data and networks, and the quickstart's searched
/// values lie in the searches' spaces (which trial won, with its numbers, is in
/// docs/quickstarts.md). The searches ran at a budget that `quickstart-budget.toml` compares
/// with the quickstart's own, its smallest (cut for time after the searches ran), so what the
/// cut costs is measured on validation.
#[test]
fn raml_quickstart_recipe_comes_from_its_searches_on_validation() {
    let search = crate::support::search_on_validation("pipelines/quickstart-search.toml");
    let stages = search["stages"].as_table().unwrap();

    let test = crate::support::expand("pipelines/quickstart.toml", &[]);
    let param = |stage: &str, name: &str| stages[stage]["params"][name].clone();
    for (param_name, value) in stages["split"]["params"].as_table().unwrap() {
        if param_name != "validation" {
            assert_eq!(
                Some(&json_of(value)),
                test["split"][0].get(param_name),
                "split: {param_name}"
            );
        }
    }
    let budget = crate::support::expand("pipelines/quickstart-budget.toml", &[]);
    let budgets = |stage: &str| -> Vec<i64> {
        let mut epochs: Vec<i64> = budget[stage]
            .iter()
            .map(|b| b.get("epochs").and_then(Value::as_i64).unwrap())
            .collect();
        epochs.sort();
        epochs.dedup();
        epochs
    };
    for (searched, quickstart, budgeted) in [
        ("labelled", "teacher-q", "trained"),
        ("teacher", "teacher", "teacher"),
        ("student", "student", "student"),
    ] {
        let measured = budgets(budgeted);
        let searched_at = param(searched, "epochs").as_integer().unwrap();
        assert!(
            measured.contains(&searched_at),
            "{searched}: {searched_at} epochs in {measured:?}"
        );
        for q in &test[quickstart] {
            assert_eq!(
                q.get("epochs").and_then(Value::as_i64),
                Some(measured[0]),
                "{quickstart}: epochs, the smallest budget of quickstart-budget.toml"
            );
        }
    }
    let space = |name: &str, dim: &str| search["search"][name]["space"][dim].clone();
    let choices = space("labelled", "lr")["choice"]
        .as_array()
        .unwrap()
        .clone();
    for stage in ["teacher", "teacher-q"] {
        let lr = test[stage][0].get("lr").and_then(Value::as_f64).unwrap();
        assert!(
            choices.iter().any(|c| c.as_float() == Some(lr)),
            "{stage}: lr {lr} is one of {choices:?}"
        );
    }
    for dim in ["lr", "lambda_t", "lambda_s"] {
        let dim_space = space("student", dim);
        let range = dim_space
            .get("log_uniform")
            .or_else(|| dim_space.get("uniform"))
            .unwrap()
            .as_array()
            .unwrap();
        let (lo, hi) = (range[0].as_float().unwrap(), range[1].as_float().unwrap());
        for q in &test["student"] {
            let v = q.get(dim).and_then(Value::as_f64).unwrap();
            assert!((lo..=hi).contains(&v), "student: {dim} {v} in [{lo}, {hi}]");
        }
    }
}

/// A TOML value as the JSON value a resolved parameter holds.
fn json_of(value: &toml::Value) -> serde_json::Value {
    serde_json::to_value(value).unwrap()
}

#[test]
fn raml_paper_pipelines_expand_as_the_paper_sets_them() {
    for (file, queries) in [
        ("pipelines/raml-cub200.toml", 3),
        ("pipelines/raml-cars196.toml", 3),
        ("pipelines/raml-sop.toml", 3),
    ] {
        let c = expand(file);
        // One `seed` axis seeds every stochastic stage: a teacher per seed.
        assert_eq!(c["teacher"], 3, "{file}");
        assert_eq!(c["teacher-q"], queries * 3, "{file}");
        assert_eq!(
            c["student"],
            queries * 3,
            "{file}: query resolutions x 3 seeds"
        );
        assert_eq!(c["emb-teacher-db"], 3, "{file}");
        assert_eq!(c["eval-ts"], queries * 3, "{file}");
        assert_eq!(c["eval-tasym"], queries * 3, "{file}");
        assert_eq!(c["eval-tsym"], queries * 3, "{file}");
        assert_eq!(c["eval-ssym"], queries * 3, "{file}");
    }
    let c = expand("pipelines/raml-ablation.toml");
    assert_eq!(c["teacher"], 3, "a teacher per seed");
    assert_eq!(c["teacher-small"], 3);
    assert_eq!(c["student-loss"], 6 * 3, "six loss sets x 3 seeds");
    assert_eq!(c["student-p"], 5 * 3, "P in 1, 2, 4, 8, 16 x 3 seeds");
    for variant in [
        "separate",
        "no-geometric",
        "no-colour",
        "no-mixup",
        "init-small",
        "init-imagenet",
        "r18",
    ] {
        assert_eq!(c[&format!("student-{variant}")], 3, "{variant}");
        assert_eq!(c[&format!("eval-{variant}")], 3, "{variant}");
    }
}
