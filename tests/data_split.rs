//! The `split` stage kind: protocols on the synthetic set, the manifest it writes, and its
//! fingerprint (editing one image reruns exactly the stages that read it; moving the data set
//! reruns nothing), end to end through `asymflow run`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;

use asymflow::data::{
    DatasetSource, DirectHasher, SplitManifest, SyntheticParams, MANIFEST_OUTPUT,
};
use asymflow::kind::{FingerprintEnv, InputArtifact, Inputs, Params, StageContext, StageError};
use asymflow_tensor::registry;
use serde_json::{json, Value};

use crate::data_fixtures as fx;

fn params(overrides: Value) -> Params {
    let reg = registry();
    let stage = reg.get("split").expect("split is a built-in kind");
    let mut map = BTreeMap::new();
    for decl in stage.params() {
        if let Some(v) = decl.default_value() {
            map.insert(decl.name.to_string(), v);
        }
    }
    for (k, v) in overrides.as_object().unwrap() {
        map.insert(k.clone(), v.clone());
    }
    Params(map)
}

fn run_split(project: &Path, params: &Params) -> Result<SplitManifest, StageError> {
    let reg = registry();
    let stage = reg.runner("split").unwrap();
    let out = tempfile::tempdir().unwrap();
    let inputs = Inputs::new();
    let cancel = AtomicBool::new(false);
    let mut ctx = StageContext::new(
        "split",
        params,
        &inputs,
        out.path().to_path_buf(),
        project,
        asymflow::kind::Device::Cpu,
        &cancel,
        None,
    );
    stage.run(&mut ctx)?;
    let (metrics, _telemetry) = ctx.finish();
    let manifest = SplitManifest::read(&out.path().join(MANIFEST_OUTPUT)).unwrap();
    assert_eq!(
        metrics["train_images"],
        manifest.counts["train"].items as f64
    );
    Ok(manifest)
}

fn labels(manifest: &SplitManifest, name: &str) -> BTreeSet<i64> {
    manifest
        .partition(name)
        .unwrap()
        .iter()
        .map(|i| i.label)
        .collect()
}

#[test]
fn data_split_synthetic_protocols_make_disjoint_nested_deterministic_partitions() {
    let project = tempfile::tempdir().unwrap();
    let p = params(json!({
        "classes": 8, "per_class": 4, "image_size": 16,
        "subsets": [25, 50], "validation": true,
        "gallery_per_class": 1, "non_mated": 0.5, "pairs_per_class": 2
    }));
    let m = run_split(project.path(), &p).unwrap();
    assert_eq!(labels(&m, "train"), (0..4).collect());
    assert_eq!(labels(&m, "test"), (4..8).collect());
    assert_eq!(m.counts["train"].items, 16);
    assert_eq!(
        (labels(&m, "train-25").len(), labels(&m, "train-50").len()),
        (1, 2)
    );
    assert!(labels(&m, "train-25").is_subset(&labels(&m, "train-50")));
    assert_eq!(labels(&m, "val-train"), [0, 1].into());
    assert_eq!(labels(&m, "val-test"), [2, 3].into());
    assert_eq!(
        (m.counts["gallery"].items, m.counts["query"].items),
        (4, 12)
    );
    assert!(labels(&m, "probe-mated").is_disjoint(&labels(&m, "probe-non-mated")));
    assert_eq!(m.pairs.len(), 4 * 2 * 2);
    assert_eq!(
        m,
        run_split(project.path(), &p).unwrap(),
        "same parameters, same manifest"
    );
    let other = run_split(project.path(), &params(json!({"classes": 8, "per_class": 4, "image_size": 16, "subsets": [25], "split_seed": 1}))).unwrap();
    assert_eq!(
        other.partition("train").unwrap(),
        m.partition("train").unwrap()
    );

    // The manifest reopens its data set: an item loads as the generator renders it.
    let ds = m.open(project.path()).unwrap();
    let item = &m.partition("test").unwrap()[0];
    let params = SyntheticParams {
        classes: 8,
        per_class: 4,
        image_size: 16,
        detail_scale: 1.0,
        seed: 0,
    };
    assert_eq!(item.id, "synthetic/16");
    assert_eq!(ds.load(item).unwrap(), params.render(16));
    assert!(m.summary().contains("probe-non-mated"));
}

#[test]
fn data_split_reports_bad_parameters_by_name() {
    let project = tempfile::tempdir().unwrap();
    let err = run_split(project.path(), &params(json!({"dataset": "cub200"})))
        .unwrap_err()
        .to_string();
    assert!(err.contains("root"), "{err}");
    let err = run_split(project.path(), &params(json!({"classes": 1})))
        .unwrap_err()
        .to_string();
    assert!(err.contains("classes"), "{err}");
    let err = run_split(project.path(), &params(json!({"protocol": "provided"})))
        .unwrap_err()
        .to_string();
    assert!(err.contains("half-classes"), "{err}");
}

#[test]
fn data_split_fingerprints_hold_content_never_absolute_paths() {
    let reg = registry();
    let stage = reg.get("split").unwrap();
    let project = tempfile::tempdir().unwrap();
    let env = FingerprintEnv {
        project_dir: project.path(),
        hashes: &DirectHasher,
    };

    let synthetic = stage
        .fingerprint(&params(json!({})), &env)
        .unwrap()
        .unwrap();
    assert_eq!(
        synthetic["generator_version"],
        json!(asymflow::data::GENERATOR_VERSION)
    );

    fx::image_folder(&project.path().join("data/a"), 2, 2);
    let p = params(json!({"dataset": "imagefolder", "root": "data/a"}));
    let before = stage.fingerprint(&p, &env).unwrap().unwrap();
    assert_eq!(before["images"], json!(4));
    assert!(!before
        .to_string()
        .contains(&project.path().display().to_string()));

    // Moving the root keeps the fingerprint.
    std::fs::rename(project.path().join("data/a"), project.path().join("data/b")).unwrap();
    let moved = params(json!({"dataset": "imagefolder", "root": "data/b"}));
    assert_eq!(stage.fingerprint(&moved, &env).unwrap().unwrap(), before);
    // Editing one image changes it.
    fx::write_image(
        &project.path().join("data/b/class_1/0.png"),
        &fx::picture(16, 16, 99),
    );
    assert_ne!(stage.fingerprint(&moved, &env).unwrap().unwrap(), before);
}

#[test]
fn data_split_edits_change_the_manifest_moves_do_not() {
    let project = tempfile::tempdir().unwrap();
    fx::image_folder(&project.path().join("data/a"), 2, 2);
    let before = run_split(
        project.path(),
        &params(json!({"dataset": "imagefolder", "root": "data/a"})),
    )
    .unwrap();
    std::fs::rename(project.path().join("data/a"), project.path().join("data/b")).unwrap();
    let p = params(json!({"dataset": "imagefolder", "root": "data/b"}));
    let moved = run_split(project.path(), &p).unwrap();
    assert_eq!(moved.content, before.content);
    assert_eq!(moved.partitions, before.partitions);
    fx::write_image(
        &project.path().join("data/b/class_0/0.png"),
        &fx::picture(16, 16, 50),
    );
    let edited = run_split(project.path(), &p).unwrap();
    assert_ne!(edited.content, before.content);
}

#[test]
fn data_split_manifest_from_input_follows_the_current_root() {
    let project = tempfile::tempdir().unwrap();
    fx::image_folder(&project.path().join("data/a"), 2, 2);
    let p = params(json!({"dataset": "imagefolder", "root": "data/a"}));
    let manifest = run_split(project.path(), &p).unwrap();
    assert!(manifest.content.is_some());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(MANIFEST_OUTPUT);
    manifest.write(&path).unwrap();
    std::fs::rename(project.path().join("data/a"), project.path().join("data/b")).unwrap();
    let Err(err) = manifest.open(project.path()) else {
        panic!("the old root is gone")
    };
    assert!(err.to_string().contains("root"), "{err}");

    let input = InputArtifact {
        stage: "split".into(),
        kind: "split".into(),
        binding: BTreeMap::new(),
        params: params(json!({"dataset": "imagefolder", "root": "data/b"})),
        key: "k".into(),
        outputs: [(MANIFEST_OUTPUT.to_string(), path)].into(),
        metrics: BTreeMap::new(),
        draws: Vec::new(),
    };
    let reread = SplitManifest::from_input(&input).unwrap();
    assert!(matches!(&reread.dataset, DatasetSource::Files { root, .. } if root == "data/b"));
    let ds = reread.open(project.path()).unwrap();
    assert_eq!(
        ds.load(&reread.partition("test").unwrap()[0])
            .unwrap()
            .dimensions(),
        (16, 16)
    );
}

/// Runs `asymflow run --json` and returns stage name -> status. (Downstream stages rerun
/// after an edit because the manifest's `content` digest changes, which
/// `data_split_edits_change_the_manifest_moves_do_not` checks; their keys hold it.)
fn asymflow_run(project: &Path, extra: &[&str]) -> BTreeMap<String, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_asymflow"))
        .arg("run")
        .arg(project.join("pipelines/data.toml"))
        .args(["--json", "-j", "1"])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    summary["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["stage"].as_str().unwrap().to_string(),
                i["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn data_split_editing_an_image_reruns_its_readers_and_moving_the_root_reruns_nothing() {
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    fx::image_folder(&root.join("data/birds"), 2, 2);
    fx::image_folder(&root.join("data/cars"), 3, 2);
    fx::write_text(
        &root.join("pipelines/data.toml"),
        r#"
[pipeline]
name = "data"

[stages.birds]
kind = "split"
params = { dataset = "imagefolder", root = "data/birds" }

[stages.cars]
kind = "split"
params = { dataset = "imagefolder", root = "data/cars" }
"#,
    );
    let all = |s: &str| -> BTreeMap<String, String> {
        ["birds", "cars"]
            .iter()
            .map(|n| (n.to_string(), s.to_string()))
            .collect()
    };
    assert_eq!(asymflow_run(root, &[]), all("ran"));
    assert_eq!(asymflow_run(root, &[]), all("cached"));

    fx::write_image(
        &root.join("data/birds/class_0/1.png"),
        &fx::picture(16, 16, 77),
    );
    let after_edit = asymflow_run(root, &[]);
    assert_eq!(after_edit["birds"], "ran");
    assert_eq!(after_edit["cars"], "cached");

    std::fs::rename(root.join("data/birds"), root.join("moved-birds")).unwrap();
    let moved = asymflow_run(root, &["--set", "stages.birds.params.root=moved-birds"]);
    assert_eq!(moved, all("cached"));
}

/// The planned key of the one-stage pipeline `[stages.split]` with `params`.
fn split_key(params: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[pipeline]\nname = \"s\"\n\n[stages.split]\nkind = \"split\"\nparams = {{ {params} }}\n"
    );
    fx::write_text(&dir.path().join("pipelines/s.toml"), &text);
    let out = Command::new(env!("CARGO_BIN_EXE_asymflow"))
        .args(["plan", "pipelines/s.toml", "--json"])
        .current_dir(dir.path())
        .env_remove("ASYMFLOW_CACHE")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    plan["instances"][0]["key"].as_str().unwrap().to_string()
}

#[test]
fn issue32_subset_order_leaves_existing_split_keys_alone_and_keys_class_id_order() {
    let base = "classes = 8, per_class = 2, image_size = 16, subsets = [50]";
    // The key this split had before `subset_order` existed (asymflow at adea543).
    let before = "06b04ffae3a3937e6418e649a8a802c52fab92068d8fc024f82b7d25fe1377e2";
    assert_eq!(split_key(base), before);
    assert_eq!(
        split_key(&format!("{base}, subset_order = \"random\"")),
        before
    );
    let class_id = split_key(&format!("{base}, subset_order = \"class-id\""));
    assert_ne!(class_id, before);
    // And the class-id order's subsets are the first classes, whatever the split seed.
    let dir = tempfile::tempdir().unwrap();
    for seed in [0, 1] {
        let p = params(
            json!({"classes": 8, "per_class": 2, "image_size": 16, "subsets": [50],
            "subset_order": "class-id", "split_seed": seed}),
        );
        let manifest = run_split(dir.path(), &p).unwrap();
        assert_eq!(labels(&manifest, "train-50"), BTreeSet::from([0, 1]));
    }
}
