//! Science fidelity (issue 14): the data layouts and protocol choices the papers depend on,
//! checked where a pipeline plan or a unit test cannot see them.

use asymflow::data::DatasetKind;
use asymflow::spec::Override;

use crate::data_fixtures as fx;
use crate::support::expand;

#[test]
fn science_cars196_devkit_layout_lists_train_and_test_images() {
    let dir = tempfile::tempdir().unwrap();
    fx::cars_devkit(dir.path(), 3);
    let listing = DatasetKind::Cars196.list(dir.path()).unwrap();
    let ids: Vec<&str> = listing.entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "cars_train/00001.jpg",
            "cars_train/00002.jpg",
            "cars_train/00003.jpg",
            "cars_test/00001.jpg",
            "cars_test/00002.jpg",
            "cars_test/00003.jpg"
        ]
    );
    let labels: Vec<i64> = listing.entries.iter().map(|e| e.label).collect();
    assert_eq!(labels, [1, 2, 3, 1, 2, 3]);
    assert_eq!(
        listing.annotations,
        [
            "devkit/cars_train_annos.mat",
            "cars_test_annos_withlabels.mat"
        ]
    );
    // Without the labelled test file the error says which file and where to put it.
    std::fs::remove_file(dir.path().join("cars_test_annos_withlabels.mat")).unwrap();
    let err = DatasetKind::Cars196
        .list(dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cars_test_annos_withlabels.mat") && err.contains("devkit/"),
        "{err}"
    );
}

#[test]
fn science_cars196_with_neither_layout_names_both() {
    let dir = tempfile::tempdir().unwrap();
    let err = DatasetKind::Cars196
        .list(dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cars_annos.mat") && err.contains("cars_train_annos.mat"),
        "{err}"
    );
}

/// The resolution-asymmetry paper pipelines: "teacher symmetric" is a network trained at the
/// query resolution (one teacher per query resolution), the database teacher tested at the
/// query resolution is its own honestly named row, BatchNorm statistics are frozen, and the
/// report's labels follow the vars instead of hard-coding 448 px.
#[test]
fn science_raml_paper_pipelines_compare_against_a_teacher_trained_at_the_query_resolution() {
    for file in [
        "pipelines/raml-cub200.toml",
        "pipelines/raml-cars196.toml",
        "pipelines/raml-sop.toml",
    ] {
        let s = expand(
            file,
            &[
                Override::Set("vars.db_res=96".into()),
                Override::Set("vars.width=8".into()),
            ],
        );
        let mut trained: Vec<i64> = s["teacher-q"]
            .iter()
            .map(|p| p.int("resolution").unwrap())
            .collect();
        trained.sort();
        trained.dedup(); // one per seed
        assert_eq!(trained, [112, 160, 224], "{file}");
        assert_eq!(s["teacher"][0].int("resolution").unwrap(), 96, "{file}");
        for stage in ["teacher", "teacher-q"] {
            for p in &s[stage] {
                assert!(p.bool("freeze_bn").unwrap(), "{file} {stage}");
                assert_eq!(p.int("width").unwrap(), 8, "{file}: one --set per var");
                assert_eq!(p.str("small_classes").unwrap(), "drop", "{file} {stage}");
            }
        }
        for p in &s["student"] {
            assert!(p.bool("freeze_bn").unwrap(), "{file} student");
        }
        for stage in ["teacher", "teacher-q", "student"] {
            assert_eq!(
                s[stage][0].float("crop_min").unwrap(),
                0.08,
                "{file} {stage}: torchvision's crop scale, as the reference"
            );
        }
        assert_eq!(
            s["eval-tmis"].len(),
            3 * 3,
            "{file}: query resolutions x teacher seeds"
        );
        let table = &s["table"][0];
        let title = table.str("title").unwrap();
        assert!(
            title.contains("96 px") && !title.contains("448"),
            "{file}: {title}"
        );
        let tags = &table.0["tags"];
        assert_eq!(tags["eval-tsym-db"]["query_res"], 96, "{file}");
        assert_eq!(
            tags["eval-tmis"]["setup"], "teacher at 96 px, tested at the query resolution",
            "{file}"
        );
    }
    let sop = expand("pipelines/raml-sop.toml", &[]);
    // The paper's batch of 4000 as 100 batches of 40 (whole classes of 4) per step, which fits
    // an 80 GB GPU in bf16 (issue 32).
    let teacher = &sop["teacher"][0];
    assert_eq!(teacher.int("accumulate").unwrap(), 100);
    assert_eq!(teacher.int("batch_size").unwrap() * 100, 4000);
    assert_eq!(teacher.str("precision").unwrap(), "bf16");
}

#[test]
fn science_raml_ablation_sweeps_p_with_the_full_loss_and_r18_without_augmentations() {
    let s = expand(
        "pipelines/raml-ablation.toml",
        &[Override::Set("vars.query_res=64".into())],
    );
    for p in &s["student-p"] {
        let losses: Vec<String> = p.0["losses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            losses,
            ["abs", "rel_ts", "rel_ss"],
            "Figure 3 uses the full loss"
        );
    }
    let r18 = &s["student-r18"][0];
    assert_eq!(r18.int("augmentations").unwrap(), 1);
    assert!(!r18.bool("geometric").unwrap() && !r18.bool("flip").unwrap());
    assert_eq!(r18.float("jitter").unwrap(), 0.0);
    assert_eq!(r18.float("mixup").unwrap(), 0.0);
    assert_eq!(s["teacher-small"][0].int("resolution").unwrap(), 64);
    let variants = &s["table-variants"][0];
    assert!(variants.str("title").unwrap().contains("448 / 64 px"));
    assert_eq!(
        variants.0["labels"]["eval-init-small"],
        "init: teacher at 64 px"
    );
}

#[test]
fn science_raml_quickstart_has_the_trained_at_r_baseline_and_no_flips_in_the_teacher() {
    let s = expand("pipelines/quickstart.toml", &[]);
    assert_eq!(s["teacher-q"].len(), 6, "one per query resolution and draw");
    for stage in ["teacher", "teacher-q"] {
        for p in &s[stage] {
            assert!(
                !p.bool("flip").unwrap(),
                "flips merge the synthetic set's mirrored classes"
            );
        }
    }
    assert_eq!(s["eval-tmis"].len(), 6);
    assert_eq!(s["eval-tsym"].len(), 6);
}

#[test]
fn science_bct_faces_uses_the_table1_template_and_labels_its_gain_rows() {
    let s = expand(
        "pipelines/bct-faces.toml",
        &[Override::Set("vars.epochs=2".into())],
    );
    assert_eq!(s["table1"].len(), 1);
    assert_eq!(s["table1"][0].str("rows").unwrap(), "pair");
    let labels = &s["table-gain"][0].0["labels"];
    for stage in ["gain-ver-new", "gain-ver-bct", "gain-id-new", "gain-id-bct"] {
        assert!(labels[stage].is_string(), "{stage} has no row label");
    }
    for model in ["old", "new", "bct"] {
        assert_eq!(s[model][0].int("epochs").unwrap(), 2, "{model}");
    }
}

/// raml-cub200, shrunk through its vars alone (one `--set` per var, one `--sweep` per axis),
/// runs end to end on a tiny CUB-200-2011 fixture in the published layout: every stage runs,
/// and the table holds the five setups. This catches wiring that `plan` cannot.
#[test]
fn science_raml_cub200_runs_end_to_end_shrunk_on_a_cub_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path();
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir_all(project.join("pipelines")).unwrap();
    std::fs::create_dir_all(project.join("stages")).unwrap();
    std::fs::copy(
        repo.join("pipelines/raml-cub200.toml"),
        project.join("pipelines/raml-cub200.toml"),
    )
    .unwrap();
    for name in ["raml-teacher", "raml-student"] {
        std::fs::copy(
            repo.join(format!("stages/{name}.toml")),
            project.join(format!("stages/{name}.toml")),
        )
        .unwrap();
    }
    fx::cub(&project.join("data/CUB_200_2011"), 4);
    let mut args: Vec<String> = vec![
        "run".into(),
        "pipelines/raml-cub200.toml".into(),
        "--json".into(),
    ];
    for set in [
        "vars.imagenet=\"\"",
        "vars.arch=\"resnet18\"",
        "vars.width=8",
        "vars.embed_dim=8",
        "vars.db_res=32",
        "vars.teacher_epochs=1",
        "vars.student_epochs=1",
        "vars.batch_size=8",
        "vars.teacher_batch=8",
        "vars.images_per_epoch=4",
        "vars.augmentations=2",
        // The fixture's classes have 2 images; the paper setting drops classes under 4.
        "stages.teacher.params.small_classes=\"repeat\"",
        "stages.teacher-q.params.small_classes=\"repeat\"",
    ] {
        args.push("--set".into());
        args.push(set.into());
    }
    for sweep in ["seed=0", "query_res=16"] {
        args.push("--sweep".into());
        args.push(sweep.into());
    }
    // A run with overrides publishes beside the plain reports unless told where.
    args.push("--reports".into());
    args.push("reports/shrunk".into());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_asymflow"))
        .args(&args)
        .current_dir(project)
        .env_remove("ASYMFLOW_CACHE")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let instances = summary["instances"].as_array().unwrap();
    for inst in instances {
        assert_eq!(inst["status"], "ran", "{inst}");
    }
    let table = std::fs::read_to_string(project.join("reports/shrunk/table/table.md")).unwrap();
    for row in [
        "teacher symmetric",
        "teacher at 32 px, tested at the query resolution",
        "teacher asymmetric",
        "teacher-student asymmetric",
        "student symmetric",
    ] {
        assert!(table.contains(row), "no row `{row}` in\n{table}");
    }
    assert!(!table.contains("448"), "{table}");
}
