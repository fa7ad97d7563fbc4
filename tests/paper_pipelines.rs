//! Every paper pipeline (`pipelines/raml-*.toml`, `pipelines/bct-*.toml` other than the
//! quickstarts), run end to end, shrunk, on tiny generated fixtures in each data set's
//! published layout.
//!
//! `plan` checks that a pipeline parses and resolves; only a run catches the wiring that
//! breaks at run time: a template parameter a kind no longer accepts, a partition a split
//! does not make, a report whose rows lost their labels. Each test copies the pipeline and
//! the stage templates into a temporary project, writes a fixture where the pipeline's
//! `vars.root` points, shrinks the pipeline through one `--set vars.NAME=...` per scale var
//! (width 8, one epoch, 16-32 px, one seed, tiny batches), runs it, and checks that every
//! instance ran, that each result records only the metrics its kind declares, and that each
//! table holds its labelled rows.

use std::path::{Path, PathBuf};

use asymflow_tensor::nn::checkpoint::{is_backbone, Model, ModelMeta};
use asymflow_tensor::nn::config::{Arch, NetConfig, Pool, Stem};
use tch::{Device, Tensor};

use crate::data_fixtures as fx;

/// The scale vars every RAML pipeline shares, at their smallest: width 8, an 8-d embedding,
/// a 32 px database, one epoch of 4 images in batches of 8 (the teachers' too), 2
/// augmentations.
const RAML_SCALE: [&str; 9] = [
    "vars.width=8",
    "vars.embed_dim=8",
    "vars.db_res=32",
    "vars.teacher_epochs=1",
    "vars.student_epochs=1",
    "vars.batch_size=8",
    "vars.teacher_batch=8",
    "vars.images_per_epoch=4",
    "vars.augmentations=2",
];

/// The scale vars of the BCT pipelines at their smallest.
const BCT_SCALE: [&str; 3] = ["vars.width=8", "vars.epochs=1", "vars.batch_size=8"];

/// The scale vars of the BCT pipelines at the paper's settings (SGD, multi-step): two epochs,
/// the learning rate divided after the first, so the schedule runs as it does at full size.
const BCT_PAPER_SCALE: [&str; 4] = [
    "vars.width=8",
    "vars.epochs=2",
    "vars.batch_size=8",
    "vars.milestones=[1]",
];

/// A temporary project holding `pipelines/NAME.toml` and every stage template of the repo.
struct Project {
    dir: tempfile::TempDir,
    pipeline: String,
}

impl Project {
    fn new(pipeline: &str) -> Project {
        let dir = tempfile::tempdir().unwrap();
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        std::fs::create_dir_all(dir.path().join("pipelines")).unwrap();
        std::fs::create_dir_all(dir.path().join("stages")).unwrap();
        let file = format!("pipelines/{pipeline}.toml");
        std::fs::copy(repo.join(&file), dir.path().join(&file)).unwrap();
        for entry in std::fs::read_dir(repo.join("stages")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let name = path.file_name().unwrap();
                std::fs::copy(&path, dir.path().join("stages").join(name)).unwrap();
            }
        }
        Project {
            dir,
            pipeline: file,
        }
    }

    /// A path inside the project.
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Runs the pipeline with `sets` (`--set`) and `sweeps` (`--sweep`), publishing to
    /// `reports/shrunk`, and asserts that it succeeds and that every instance ran. The cache
    /// starts empty, so an instance may only be `cached` when another instance of this run
    /// computed the same key (the ablation's `student-p` at P = `vars.augmentations` is
    /// `student-loss` with every term).
    fn run_shrunk(&self, sets: &[&str], sweeps: &[&str]) {
        let mut args: Vec<String> = vec!["run".into(), self.pipeline.clone(), "--json".into()];
        for set in sets {
            args.extend(["--set".to_string(), set.to_string()]);
        }
        for sweep in sweeps {
            args.extend(["--sweep".to_string(), sweep.to_string()]);
        }
        // A run with overrides publishes beside the plain reports unless told where.
        args.extend(["--reports".to_string(), "reports/shrunk".to_string()]);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_asymflow"))
            .args(&args)
            .current_dir(self.dir.path())
            .env_remove("ASYMFLOW_CACHE")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{} failed:\n{stdout}\n{}",
            self.pipeline,
            String::from_utf8_lossy(&out.stderr)
        );
        let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let instances = summary["instances"].as_array().unwrap();
        assert!(!instances.is_empty(), "{stdout}");
        let ran: Vec<&serde_json::Value> = instances
            .iter()
            .filter(|i| i["status"] == "ran")
            .map(|i| &i["key"])
            .collect();
        for inst in instances {
            let shared = inst["status"] == "cached" && ran.contains(&&inst["key"]);
            assert!(inst["status"] == "ran" || shared, "{inst}");
        }
        let checked = crate::support::assert_recorded_metrics_are_declared(&self.path("cache"));
        assert!(
            checked >= ran.len(),
            "{checked} results for {} ran",
            ran.len()
        );
    }

    /// Asserts that the report stage `table` published a table holding every row of `rows`,
    /// each with at least one measured cell, and returns the table.
    fn assert_rows(&self, table: &str, rows: &[&str]) -> String {
        let path = self.path(&format!("reports/shrunk/{table}/table.md"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for row in rows {
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("| {row} |")))
                .unwrap_or_else(|| panic!("{table}: no row `{row}` in\n{text}"));
            let measured = line.split('|').skip(2).any(|cell| {
                // The mean, before any spread, interval or footnote mark (`31.3¹`).
                let mean = cell.split_whitespace().next().unwrap_or("");
                mean.trim_end_matches(|c: char| "⁰¹²³⁴⁵⁶⁷⁸⁹,".contains(c))
                    .parse::<f64>()
                    .is_ok()
            });
            assert!(measured, "{table}: row `{row}` holds no number in\n{text}");
        }
        text
    }
}

/// The rows of the RAML resolution tables (raml-cub200, raml-cars196, raml-sop).
const RAML_ROWS: [&str; 5] = [
    "teacher symmetric",
    "teacher at 32 px, tested at the query resolution",
    "teacher asymmetric",
    "teacher-student asymmetric",
    "student symmetric",
];

/// Writes stand-in ImageNet weights for `arch` at `width` in torchvision's naming (the
/// backbone's variables, plus the `fc` classifier and BatchNorm counters that a
/// `state_dict()` export carries and the loader must skip).
fn stand_in_imagenet(path: &Path, arch: Arch, width: i64) {
    let net = NetConfig {
        arch,
        width,
        stem: Stem::Imagenet,
        pool: Pool::Gem,
        embed_dim: 8,
        gem_p: 3.0,
        pool_l2n: true,
        embed_relu: false,
    };
    let features = net.feature_dim();
    let model = Model::new(ModelMeta::new(net, None), Device::Cpu);
    let mut vars: Vec<(String, Tensor)> = model
        .vs
        .variables()
        .into_iter()
        .filter(|(name, _)| is_backbone(name))
        .collect();
    vars.push((
        "fc.weight".into(),
        Tensor::zeros([1000, features], tch::kind::FLOAT_CPU),
    ));
    vars.push((
        "fc.bias".into(),
        Tensor::zeros([1000], tch::kind::FLOAT_CPU),
    ));
    vars.push(("bn1.num_batches_tracked".into(), Tensor::from(7i64)));
    let named: Vec<(&str, &Tensor)> = vars.iter().map(|(k, v)| (k.as_str(), v)).collect();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    Tensor::write_safetensors(&named, path).unwrap();
}

/// raml-cars196 on the fixture that `write` puts at its root, shrunk, with its table's rows checked.
fn raml_cars196_runs_shrunk(write: impl FnOnce(&Path)) {
    let project = Project::new("raml-cars196");
    write(&project.path("data/cars196"));
    let mut sets = vec!["vars.imagenet=\"\"", "vars.arch=\"resnet18\""];
    sets.extend(RAML_SCALE);
    project.run_shrunk(&sets, &["seed=0", "query_res=16"]);
    let table = project.assert_rows("table", &RAML_ROWS);
    assert!(!table.contains("448"), "{table}");
}

#[test]
fn paper_pipelines_raml_cars196_runs_shrunk_on_the_cars_annos_layout() {
    raml_cars196_runs_shrunk(|root| fx::cars_per_class(root, 4, 4, true));
}

#[test]
fn paper_pipelines_raml_cars196_runs_shrunk_on_the_devkit_layout() {
    raml_cars196_runs_shrunk(|root| fx::cars_devkit_per_class(root, 4, 4));
}

#[test]
fn paper_pipelines_raml_sop_runs_shrunk() {
    let project = Project::new("raml-sop");
    fx::sop_per_class(&project.path("data/Stanford_Online_Products"), 2, 4);
    let mut sets = vec![
        "vars.imagenet=\"\"",
        "vars.arch=\"resnet18\"",
        "vars.accumulate=1",
    ];
    sets.extend(RAML_SCALE);
    project.run_shrunk(&sets, &["seed=0", "query_res=16"]);
    let table = project.assert_rows("table", &RAML_ROWS);
    assert!(!table.contains("448"), "{table}");
}

#[test]
fn paper_pipelines_raml_ablation_runs_shrunk_with_stand_in_imagenet_weights() {
    let project = Project::new("raml-ablation");
    fx::cub_per_class(&project.path("data/CUB_200_2011"), 4, 4);
    stand_in_imagenet(
        &project.path("weights/resnet50.safetensors"),
        Arch::Resnet50,
        8,
    );
    stand_in_imagenet(
        &project.path("weights/resnet18.safetensors"),
        Arch::Resnet18,
        8,
    );
    let mut sets = vec!["vars.query_res=16"];
    sets.extend(RAML_SCALE);
    project.run_shrunk(&sets, &["seed=0", "p=1,2"]);
    project.assert_rows(
        "table-loss",
        &["abs", "rel_ts", "rel_ss", "abs+rel_ts", "abs+rel_ss", "all"],
    );
    let cells = project.assert_rows(
        "table-loss-init",
        &["abs", "rel_ts", "rel_ss", "abs+rel_ts", "abs+rel_ss", "all"],
    );
    for init in ["teacher", "teacher at 16 px", "ImageNet"] {
        assert!(cells.contains(init), "no column `{init}` in\n{cells}");
    }
    project.assert_rows("table-p", &["1", "2"]);
    let variants = project.assert_rows(
        "table-variants",
        &[
            "separate augmentations",
            "no geometric augmentation",
            "no colour distortion",
            "no mixup",
            "mixup only",
            "no augmentation",
            "init: teacher at 16 px",
            "init: ImageNet",
            "resnet18 student (L_abs, no augmentations)",
        ],
    );
    assert!(!variants.contains("448"), "{variants}");
}

#[test]
fn paper_pipelines_raml_gflops_runs_shrunk_and_plots_map_against_query_gflops() {
    let project = Project::new("raml-gflops");
    fx::cub_per_class(&project.path("data/CUB_200_2011"), 4, 4);
    for (arch, file) in [
        (Arch::Resnet50, "resnet50"),
        (Arch::Resnet34, "resnet34"),
        (Arch::Resnet18, "resnet18"),
    ] {
        stand_in_imagenet(
            &project.path(&format!("weights/{file}.safetensors")),
            arch,
            8,
        );
    }
    let mut sets = vec!["vars.query_res=[16, 24]"];
    sets.extend(RAML_SCALE);
    project.run_shrunk(&sets, &["seed=0"]);
    let table = project.assert_rows(
        "table",
        &[
            "teacher symmetric",
            "resnet50 student (resolution asymmetry)",
            "ResNet-34 student (network asymmetry, L_abs)",
            "ResNet-18 student (network asymmetry, L_abs)",
        ],
    );
    assert!(!table.contains("448"), "{table}");
    for ext in ["svg", "png"] {
        let plot = project.path(&format!(
            "reports/shrunk/table/plot-map-vs-query_gflops.{ext}"
        ));
        assert!(plot.is_file(), "{} missing", plot.display());
    }
    let svg =
        std::fs::read_to_string(project.path("reports/shrunk/table/plot-map-vs-query_gflops.svg"))
            .unwrap();
    for series in [
        "teacher symmetric",
        "ResNet-18 student (network asymmetry, L_abs)",
    ] {
        assert!(svg.contains(series), "the plot has no series `{series}`");
    }
}

#[test]
fn paper_pipelines_bct_market1501_runs_shrunk() {
    let project = Project::new("bct-market1501");
    // Two identities in `train-50` at least: a classifier needs two classes.
    fx::market_people(&project.path("data/Market-1501-v15.09.15"), 6, 4);
    let mut sets = vec!["vars.res=[32,16]"];
    sets.extend(BCT_SCALE);
    project.run_shrunk(&sets, &["seed=0"]);
    project.assert_rows(
        "table",
        &[
            "old / old",
            "new* / new*",
            "independent new / old",
            "L2 baseline / old",
            "LwF / old",
            "BCT / old",
        ],
    );
    project.assert_rows("table-gain", &["BCT", "L2 baseline", "LwF"]);
}

/// The face pipelines' three tables (1:1, 1:N, update gain) have every row they declare.
fn assert_bct_faces_tables(project: &Project) {
    let pairs = [
        "old / old",
        "new* / new*",
        "independent new / old",
        "BCT / old",
    ];
    project.assert_rows("table-verification", &pairs);
    project.assert_rows("table-identification", &pairs);
    project.assert_rows(
        "table-gain",
        &[
            "independent new / old, 1:1",
            "BCT new / old, 1:1",
            "independent new / old, 1:N",
            "BCT new / old, 1:N",
        ],
    );
}

#[test]
fn paper_pipelines_bct_faces_runs_shrunk_on_an_image_folder() {
    let project = Project::new("bct-faces");
    // TAR at FAR 1e-4 needs 10^4 impostor template pairs (16 test identities of 50 images:
    // 160 templates of 5), and TPIR at FPIR 1e-2 100 non-mated probes; with fewer, the
    // metric is not measured and `update-gain` has nothing to compare.
    fx::image_folder(&project.path("data/faces"), 32, 50);
    let mut sets = vec!["vars.res=16"];
    sets.extend(BCT_SCALE);
    project.run_shrunk(&sets, &["seed=0"]);
    assert_bct_faces_tables(&project);
}

#[test]
fn paper_pipelines_bct_faces_ijbc_runs_shrunk_on_the_ijbc_layout() {
    let project = Project::new("bct-faces-ijbc");
    // Training identities: the first half of an ImageFolder set, as in bct-faces.
    fx::image_folder(&project.path("data/faces"), 8, 10);
    // IJB-C: 70 subjects, 3 one-face probes each. Against each gallery 105 probes are
    // non-mated (FPIR 1e-2 needs 100), and the 210 x 70 probe-gallery pairs hold 14,490
    // impostors (FAR 1e-4 needs 10,000), so every metric is measured.
    fx::ijbc(&project.path("data/IJB_release/IJBC"), 70, 3);
    let mut sets = vec!["vars.res=16"];
    sets.extend(BCT_SCALE);
    project.run_shrunk(&sets, &["seed=0"]);
    assert_bct_faces_tables(&project);
    // The protocol's counts: 210 genuine and 14,490 impostor template pairs; each of the
    // 210 probes is mated in one gallery and non-mated in the other (the sums over G1 and G2).
    let cache = project.path("cache");
    let keys = crate::support::ok_keys(&cache);
    let index = asymflow::cache::Cache::new(&cache).index().unwrap();
    let mut checked = 0;
    for key in &keys {
        let record = index.lookup(key).unwrap().unwrap();
        if record.kind != "evaluate" {
            continue;
        }
        let m = &record.metrics;
        if m.contains_key("tar_at_far") {
            assert_eq!((m["genuine_pairs"], m["impostor_pairs"]), (210.0, 14_490.0));
        } else {
            assert_eq!((m["mated_probes"], m["non_mated_probes"]), (210.0, 210.0));
            assert!(m.contains_key("tpir_at_fpir"), "{m:?}");
        }
        checked += 1;
    }
    assert_eq!(
        checked, 8,
        "four verification and four identification evaluations"
    );
}

/// The rows of the compatibility table of bct-imagenet and bct-places.
const BCT_COMPATIBILITY_ROWS: [&str; 7] = [
    "old / old",
    "new* / new*",
    "independent new / old",
    "BCT (T_old) / old",
    "BCT (T_new, synthesised) / old",
    "L2 baseline / old",
    "LwF / old",
];

/// The rows of the Table 2 layout (stages/report-bct-table2.toml).
const BCT_TABLE2_ROWS: [&str; 6] = [
    "old",
    "independent new",
    "BCT (T_old)",
    "BCT (T_new, synthesised)",
    "L2 baseline",
    "LwF",
];

/// A BCT pipeline on ImageNet or Places365, shrunk, with its tables' rows checked and the old
/// model's classes checked to be the first half in class-id order.
fn bct_classes_pipeline_runs_shrunk(pipeline: &str, root: &str, write: impl FnOnce(&Path)) {
    let project = Project::new(pipeline);
    write(&project.path(root));
    let mut sets = vec!["vars.res=16", "vars.arch=\"resnet18\""];
    sets.extend(BCT_PAPER_SCALE);
    project.run_shrunk(&sets, &["seed=0"]);
    project.assert_rows("table", &BCT_COMPATIBILITY_ROWS);
    project.assert_rows(
        "table-gain",
        &[
            "independent new",
            "BCT (T_old)",
            "BCT (T_new, synthesised)",
            "L2 baseline",
            "LwF",
        ],
    );
    let table2 = project.assert_rows("table2", &BCT_TABLE2_ROWS);
    assert!(
        table2.contains("self-test M(new, new)") && table2.contains("compatibility M(new, old)"),
        "{table2}"
    );
    assert_old_classes_are_the_first_half(&project, 2);
}

/// The split manifest's `train-50` holds exactly the classes 0..half (class-id order), as the paper's
/// "first 500 classes".
fn assert_old_classes_are_the_first_half(project: &Project, half: i64) {
    let mut found = false;
    for entry in walkdir(&project.path("cache")) {
        let Ok(text) = std::fs::read_to_string(&entry) else {
            continue;
        };
        let Ok(manifest) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        if manifest["partitions"]["train-50"].is_array() {
            let labels: std::collections::BTreeSet<i64> = manifest["partitions"]["train-50"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["label"].as_i64().unwrap())
                .collect();
            assert_eq!(labels, (0..half).collect(), "{}", entry.display());
            found = true;
        }
    }
    assert!(found, "no split manifest under the cache");
}

fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(walkdir(&path));
            } else {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn paper_pipelines_bct_imagenet_runs_shrunk_on_the_ilsvrc2012_layout() {
    bct_classes_pipeline_runs_shrunk("bct-imagenet", "data/ILSVRC2012", |root| {
        fx::imagenet(root, 4, 4, 3)
    });
}

#[test]
fn paper_pipelines_bct_imagenet_runs_shrunk_on_the_devkit_validation_labels() {
    bct_classes_pipeline_runs_shrunk("bct-imagenet", "data/ILSVRC2012", |root| {
        fx::imagenet_devkit(root, 4, 4, 3)
    });
}

#[test]
fn imagenet_validation_labels_are_the_same_from_the_csv_and_from_the_devkit() {
    // The fixtures number validation image i (from 1) of class (i - 1) / 3; the devkit's ids
    // run in reverse WordNet order, so reading them as class ids would get every label wrong.
    for devkit in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        if devkit {
            fx::imagenet_devkit(dir.path(), 4, 1, 3);
        } else {
            fx::imagenet(dir.path(), 4, 1, 3);
        }
        let listing = asymflow::data::DatasetKind::Imagenet
            .list(dir.path())
            .unwrap();
        let val: Vec<(String, i64)> = listing
            .entries
            .iter()
            .filter(|e| e.id.starts_with("val/"))
            .map(|e| (e.id.clone(), e.label))
            .collect();
        assert_eq!(val.len(), 12);
        for (id, label) in val {
            let i: i64 = id["val/ILSVRC2012_val_".len()..][..8].parse().unwrap();
            assert_eq!(label, (i - 1) / 3, "{id} (devkit: {devkit})");
        }
    }
}

#[test]
fn paper_pipelines_bct_places_runs_shrunk_on_the_places365_layout() {
    bct_classes_pipeline_runs_shrunk("bct-places", "data/places365", |root| {
        fx::places365(root, 4, 4, 3)
    });
}

#[test]
fn paper_pipelines_bct_imagenet_table3_runs_shrunk() {
    let project = Project::new("bct-imagenet-table3");
    fx::imagenet(&project.path("data/ILSVRC2012"), 4, 4, 3);
    let mut sets = vec![
        "vars.res=16",
        "vars.arch=\"resnet18\"",
        "vars.new_arch=\"resnet34\"",
    ];
    sets.extend(BCT_PAPER_SCALE);
    project.run_shrunk(&sets, &["seed=0"]);
    let table = project.assert_rows(
        "table3",
        &[
            "old model",
            "none (the old model's network and loss)",
            "another architecture",
            "another embedding size (256-d)",
            "another loss (cosine margin)",
            "a ReLU on the embedding",
        ],
    );
    for col in [
        "independent",
        "BCT",
        "compatibility M(new, old)",
        "self-test M(new, new)",
    ] {
        assert!(table.contains(col), "{col}: {table}");
    }
}
