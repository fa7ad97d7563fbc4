//! BCT end to end at toy scale: split -> old classifier -> BCT variants -> embeddings ->
//! cross-model evaluation -> update gain, through the stage kinds' public interface.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use asymflow::data::SplitManifest;
use asymflow::spec::Override;
use asymflow_tensor::data::EvalLoader;
use asymflow_tensor::metrics::EmbeddingSet;
use asymflow_tensor::nn::Model;

use crate::support::expand;
use asymflow::kind::{InputArtifact, Inputs, Params, StageContext, StageError};
use asymflow_tensor::registry;
use serde_json::{json, Value};

fn params(kind: &str, overrides: Value) -> Params {
    let reg = registry();
    let stage = reg
        .get(kind)
        .unwrap_or_else(|| panic!("kind {kind} is not registered"));
    let mut map: BTreeMap<String, Value> = stage
        .params()
        .iter()
        .filter_map(|d| d.default_value().map(|v| (d.name.to_string(), v)))
        .collect();
    if let Value::Object(o) = overrides {
        map.extend(o);
    }
    Params(map)
}

fn try_run(
    root: &Path,
    name: &str,
    kind: &str,
    p: Value,
    inputs: &[(&str, &InputArtifact)],
) -> Result<InputArtifact, StageError> {
    let reg = registry();
    let stage = reg.runner(kind).unwrap();
    let params = params(kind, p);
    let inputs: Inputs = inputs
        .iter()
        .map(|(s, a)| (s.to_string(), vec![(*a).clone()]))
        .collect();
    let out = root.join(name);
    std::fs::create_dir_all(&out).unwrap();
    let project = PathBuf::from(".");
    let cancel = AtomicBool::new(false);
    let mut ctx = StageContext::new(
        name,
        &params,
        &inputs,
        out.clone(),
        &project,
        asymflow::kind::Device::Cpu,
        &cancel,
        None,
    );
    stage.run(&mut ctx)?;
    let (metrics, _telemetry) = ctx.finish();
    let outputs = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    Ok(InputArtifact {
        stage: name.into(),
        kind: kind.into(),
        binding: BTreeMap::new(),
        params,
        key: name.into(),
        outputs,
        metrics,
        draws: Vec::new(),
    })
}

fn run(
    root: &Path,
    name: &str,
    kind: &str,
    p: Value,
    inputs: &[(&str, &InputArtifact)],
) -> InputArtifact {
    try_run(root, name, kind, p, inputs).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Test-partition embeddings of a checkpoint, as the `embed` stage writes them.
fn embed(root: &Path, name: &str, model: &InputArtifact, split: &InputArtifact) -> InputArtifact {
    let m = Model::load(
        &model.outputs["model.safetensors"],
        &model.outputs["model.json"],
        tch::Device::Cpu,
    )
    .unwrap();
    let manifest = SplitManifest::from_input(split).unwrap();
    let items = manifest.partition("test").unwrap();
    let loader = EvalLoader::new(manifest.open(Path::new(".")).unwrap(), items, 16, 64);
    let (mut data, mut labels) = (Vec::new(), Vec::new());
    for batch in loader.iter() {
        let (x, l) = batch.unwrap();
        let e = tch::no_grad(|| m.net.forward_t(&x, false));
        data.extend(Vec::<f32>::try_from(&e.contiguous().view(-1)).unwrap());
        labels.extend(l);
    }
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("embeddings.safetensors");
    EmbeddingSet::new(data, m.meta.net.embed_dim as usize, labels, None)
        .write(&path)
        .unwrap();
    InputArtifact {
        stage: name.into(),
        kind: "embed".into(),
        binding: BTreeMap::new(),
        params: Params::default(),
        key: name.into(),
        outputs: BTreeMap::from([("embeddings.safetensors".to_string(), path)]),
        metrics: BTreeMap::new(),
        draws: Vec::new(),
    }
}

fn tiny(extra: Value) -> Value {
    let mut p = json!({"arch": "resnet18", "width": 8, "stem": "small", "embed_dim": 8, "head": "norm-softmax",
        "scale": 16.0, "margin": 0.0, "resolution": 16, "epochs": 2, "batch_size": 16, "lr": 2e-3});
    p.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    p
}

#[test]
fn bct_end_to_end_at_toy_scale() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let split = run(
        root,
        "split",
        "split",
        json!({"dataset": "synthetic", "classes": 16, "per_class": 4, "image_size": 16, "detail_scale": 2.0,
               "protocol": "half-classes", "subsets": [50]}),
        &[],
    );
    let old = run(
        root,
        "old",
        "train-classifier",
        tiny(json!({"partition": "train-50"})),
        &[("split", &split)],
    );
    let classes: Value =
        serde_json::from_str(&std::fs::read_to_string(&old.outputs["classes.json"]).unwrap())
            .unwrap();
    assert_eq!(
        classes["labels"].as_array().unwrap().len(),
        4,
        "half of the 8 training classes"
    );
    assert!(old.outputs.contains_key("loss.json"));
    let old_weights = std::fs::read(&old.outputs["model.safetensors"]).unwrap();

    // BCT with synthesised rows and a larger new embedding (16 > 8: truncation).
    let bct = run(
        root,
        "bct",
        "train-bct",
        tiny(
            json!({"partition": "train", "t_bct": "new", "new_classes": "synthesised", "embed_dim": 16}),
        ),
        &[("split", &split), ("old", &old)],
    );
    assert_eq!(bct.metrics["old_classes"], 4.0);
    assert_eq!(bct.metrics["new_classes"], 4.0);
    assert!(bct.metrics["influence_loss"].is_finite());
    assert_eq!(
        std::fs::read(&old.outputs["model.safetensors"]).unwrap(),
        old_weights
    );
    for variant in [
        json!({"t_bct": "new", "new_classes": "kd"}),
        json!({"method": "l2"}),
        json!({"method": "lwf"}),
    ] {
        let mut p = tiny(variant.clone());
        p["epochs"] = json!(1);
        let m = run(
            root,
            "variant",
            "train-bct",
            p,
            &[("split", &split), ("old", &old)],
        );
        assert!(m.metrics["train_loss"].is_finite(), "{variant}");
        if variant["method"] == "lwf" {
            // Half of the training classes are new to the old model: their images distil.
            assert!(m.metrics["influence_loss"] > 0.0, "{:?}", m.metrics);
            assert_eq!(
                std::fs::read(&old.outputs["model.safetensors"]).unwrap(),
                old_weights,
                "LwF leaves the old model (its classifier included) as it was"
            );
        }
        std::fs::remove_dir_all(root.join("variant")).unwrap();
    }
    // LwF on the old model's own classes has no new data to distil on.
    let err = try_run(
        root,
        "lwf-old-classes",
        "train-bct",
        tiny(json!({"partition": "train-50", "method": "lwf"})),
        &[("split", &split), ("old", &old)],
    )
    .expect_err("LwF without new classes is refused")
    .to_string();
    assert!(err.contains("T_new \\ T_old is empty"), "{err}");
    // A new embedding smaller than the old one cannot feed the old classifier.
    let err = try_run(
        root,
        "small",
        "train-bct",
        tiny(json!({"embed_dim": 4})),
        &[("split", &split), ("old", &old)],
    )
    .expect_err("a smaller new embedding is refused")
    .to_string();
    assert!(err.contains("embed_dim"), "{err}");

    let new = run(
        root,
        "new",
        "train-classifier",
        tiny(json!({"partition": "train"})),
        &[("split", &split)],
    );
    let (e_old, e_new, e_bct) = (
        embed(root, "e-old", &old, &split),
        embed(root, "e-new", &new, &split),
        embed(root, "e-bct", &bct, &split),
    );
    let ev = |name: &str, q: &InputArtifact, d: &InputArtifact| {
        run(
            root,
            name,
            "evaluate",
            json!({"truncate": true}),
            &[("query", q), ("database", d)],
        )
    };
    let old_old = ev("old-old", &e_old, &e_old);
    let new_new = ev("new-new", &e_new, &e_new);
    let bct_old = ev("bct-old", &e_bct, &e_old);
    for e in [&old_old, &new_new, &bct_old] {
        assert_eq!(e.metrics["queries"], 32.0, "every test image a query");
        assert!((0.0..=1.0).contains(&e.metrics["map"]));
    }
    let gain = run(
        root,
        "gain",
        "update-gain",
        json!({"metrics": ["map", "r1"]}),
        &[
            ("new_old", &bct_old),
            ("old_old", &old_old),
            ("new_new", &new_new),
        ],
    );
    let holds = bct_old.metrics["map"] > old_old.metrics["map"];
    assert_eq!(gain.metrics["criterion_map"], if holds { 1.0 } else { 0.0 });
    assert!(
        (gain.metrics["diff_map"] - (bct_old.metrics["map"] - old_old.metrics["map"])).abs()
            < 1e-12
    );
    assert_eq!(
        gain.metrics.contains_key("gain_map"),
        holds && new_new.metrics["map"] > old_old.metrics["map"]
    );
}

#[test]
fn bct_quickstart_plans_nine_models_and_the_whole_chain_per_seed() {
    let one = expand("pipelines/bct-quickstart.toml", &[]);
    let models = [
        "old",
        "new",
        "l2",
        "bct-old",
        "bct-synth",
        "bct-kd",
        "phi1",
        "phi2",
        "phi3",
    ];
    for model in models {
        assert_eq!(one[model].len(), 1, "{model}");
        let embed = &one[&format!("emb-{model}")];
        assert_eq!(embed.len(), 1, "{model} is embedded once");
        assert_eq!(
            embed[0].str("view").unwrap(),
            "center-crop",
            "{model}: the view the validation split chose"
        );
    }
    // The recipe `bct-quickstart-search.toml` chose on the validation split (the learning
    // rate and batch size of every model, the paragon's epochs), and what is fixed: lambda at
    // the paper's 1, the templates' head, 10 epochs for every other model.
    for model in models {
        assert_eq!(one[model][0].int("batch_size").unwrap(), 32, "{model}");
        assert_eq!(one[model][0].float("lr").unwrap(), 4e-3, "{model}");
        assert_eq!(one[model][0].float("scale").unwrap(), 16.0, "{model}");
        let epochs = if model == "new" { 40 } else { 10 };
        assert_eq!(one[model][0].int("epochs").unwrap(), epochs, "{model}");
    }
    for model in ["bct-old", "bct-synth", "bct-kd", "phi2", "phi3"] {
        assert_eq!(one[model][0].float("lambda").unwrap(), 1.0, "{model}");
    }
    let chain = one.keys().filter(|s| s.starts_with("eval-phi")).count();
    assert_eq!(
        chain, 6,
        "the lower-triangular matrix M(phi_i, phi_j), i >= j"
    );
    assert_eq!(one.keys().filter(|s| s.starts_with("gain-")).count(), 5);
    assert_eq!(one["old"][0].str("partition").unwrap(), "train-50");
    assert_eq!(one["phi1"][0].str("partition").unwrap(), "train-25");

    let three = expand(
        "pipelines/bct-quickstart.toml",
        &[Override::Sweep("seed=0,1,2".into())],
    );
    for model in models {
        let seeds: Vec<i64> = three[model]
            .iter()
            .map(|p| p.int("seed").unwrap())
            .collect();
        assert_eq!(seeds, [0, 1, 2], "{model}");
    }
    assert_eq!(three["table"].len(), 1, "one table gathers every seed");
}

/// The BCT quickstart's recipe is what `bct-quickstart-search.toml` chose on the validation
/// split: its networks train on `val-train` and retrieve on `val-test` (`plan` finds no stage
/// that reads a test image), on the quickstart's data, and the quickstart's learning rate,
/// batch size and paragon epochs are points of the searches' spaces (which won, with its
/// numbers, is in docs/quickstarts.md).
#[test]
fn bct_quickstart_recipe_comes_from_its_searches_on_validation() {
    let table = crate::support::search_on_validation("pipelines/bct-quickstart-search.toml");
    let stages = table["stages"].as_table().unwrap();

    let quickstart = expand("pipelines/bct-quickstart.toml", &[]);
    for (name, value) in stages["split"]["params"].as_table().unwrap() {
        if name != "validation" {
            assert_eq!(
                Some(&serde_json::to_value(value).unwrap()),
                quickstart["split"][0].get(name),
                "split: {name}"
            );
        }
    }
    let choices = |search: &str, dim: &str| -> Vec<f64> {
        table["search"][search]["space"][dim]["choice"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_float().or(v.as_integer().map(|i| i as f64)).unwrap())
            .collect()
    };
    let new = &quickstart["new"][0];
    assert!(choices("recipe", "lr").contains(&new.float("lr").unwrap()));
    assert!(choices("recipe", "batch_size").contains(&(new.int("batch_size").unwrap() as f64)));
    assert!(choices("budget", "epochs").contains(&(new.int("epochs").unwrap() as f64)));
}

/// The BCT quickstart's hyper-parameters are chosen on the validation split: the validation
/// pipeline trains every model on a val-train partition and retrieves on val-test, so no
/// instance of it reads a test image, and it rehearses the quickstart's models one for one.
#[test]
fn bct_validation_pipeline_reads_no_test_image() {
    let val = expand("pipelines/bct-quickstart-validation.toml", &[]);
    let test = expand("pipelines/bct-quickstart.toml", &[]);
    assert!(val["split"][0].bool("validation").unwrap());
    for (stage, partition) in crate::support::partitions(&val) {
        if stage.starts_with("emb-") {
            assert_eq!(partition, "val-test", "{stage}");
        } else {
            assert!(partition.starts_with("val-train"), "{stage}: {partition}");
            let quickstart = test[stage][0].str("partition").unwrap();
            assert_eq!(partition, format!("val-{quickstart}"), "{stage}");
        }
    }
    let stages = |m: &BTreeMap<String, Vec<asymflow::kind::Params>>| -> Vec<String> {
        m.keys()
            .filter(|s| !s.starts_with("table"))
            .cloned()
            .collect()
    };
    assert_eq!(stages(&val), stages(&test));
}

#[test]
fn bct_paper_pipelines_parse_and_plan() {
    let market = expand("pipelines/bct-market1501.toml", &[]);
    for stage in [
        "old",
        "new",
        "bct",
        "l2",
        "lwf",
        "eval-bct-old",
        "eval-lwf-old",
        "gain-bct",
        "gain-lwf",
        "table",
    ] {
        assert_eq!(market[stage].len(), 1, "bct-market1501: {stage}");
    }
    assert_eq!(market["lwf"][0].str("method").unwrap(), "lwf");
    assert_eq!(market["eval-bct-old"][0].str("protocol").unwrap(), "reid");
    let faces = expand("pipelines/bct-faces.toml", &[]);
    for stage in ["ver-bct-old", "id-bct-old", "gain-ver-bct", "gain-id-bct"] {
        assert_eq!(faces[stage].len(), 1, "bct-faces: {stage}");
    }
    assert_eq!(
        faces["ver-bct-old"][0].str("protocol").unwrap(),
        "verification"
    );
    assert_eq!(
        faces["id-bct-old"][0].str("protocol").unwrap(),
        "identification"
    );
}
