//! The report layouts shipped under `stages/`: each resolves through `extends` in a real
//! pipeline and renders, and the paper layouts put hand-made results where the paper has them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use asymflow::kind::{InputArtifact, Params};
use asymflow::report::{Layout, Table};
use serde_json::{json, Value};

const TEMPLATES: &[&str] = &[
    "report-resasym-table2",
    "report-ablation-augmentation",
    "report-ablation-losses",
    "report-ablation-init",
    "report-ablation-augmentations",
    "report-bct-table1",
    "report-bct-sequential",
];

fn template_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("stages")
}

/// The template's `params` table, as the report stage receives it.
fn template_params(name: &str) -> Params {
    let text = std::fs::read_to_string(template_dir().join(format!("{name}.toml"))).unwrap();
    let doc: Value = toml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(doc["kind"], "report", "{name}");
    Params(serde_json::from_value(doc["params"].clone()).unwrap())
}

fn artifact(stage: &str, binding: Value, metrics: &[(&str, f64)]) -> InputArtifact {
    InputArtifact {
        stage: stage.into(),
        kind: "evaluate".into(),
        binding: serde_json::from_value(binding).unwrap(),
        params: Params::default(),
        key: String::new(),
        outputs: BTreeMap::from([("metrics.json".to_string(), PathBuf::from("m"))]),
        metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        draws: Vec::new(),
    }
}

#[test]
fn report_templates_resolve_through_extends_and_render() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path();
    std::fs::create_dir_all(project.join("pipelines")).unwrap();
    std::fs::create_dir_all(project.join("stages")).unwrap();
    let mut pipeline = String::from(
        "[pipeline]\nname = \"tpl\"\n\n[sweep]\nseed = [0, 1]\n\n\
         [stages.e]\nkind = \"test-echo\"\nparams = { value = \"${sweep.seed}\" }\n",
    );
    for name in TEMPLATES {
        std::fs::copy(
            template_dir().join(format!("{name}.toml")),
            project.join(format!("stages/{name}.toml")),
        )
        .unwrap();
        pipeline.push_str(&format!(
            "\n[stages.{name}]\nextends = \"stages/{name}.toml\"\ninputs = {{ results = [\"e\"] }}\n"
        ));
    }
    std::fs::write(project.join("pipelines/tpl.toml"), pipeline).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_asymflow"))
        .args(["run", "pipelines/tpl.toml", "--json"])
        .current_dir(project)
        .env("ASYMFLOW_TEST_KINDS", "1")
        .env_remove("ASYMFLOW_CACHE")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    for inst in summary["instances"].as_array().unwrap() {
        assert_eq!(inst["status"], "ran", "{inst}");
    }
    for name in TEMPLATES {
        let table = project.join(format!("reports/tpl/{name}/table.md"));
        assert!(table.is_file(), "{name}: no table published");
    }
}

#[test]
fn report_table2_template_has_the_four_setups_over_datasets_and_resolutions() {
    let layout = Layout::from_params(&template_params("report-resasym-table2")).unwrap();
    let mut inputs = Vec::new();
    for stage in [
        "eval-ts",
        "eval-ssym",
        "eval-tmis",
        "eval-tsym",
        "eval-tasym",
    ] {
        for dataset in ["sop", "cub"] {
            for res in [224, 112] {
                inputs.push(artifact(
                    stage,
                    json!({"dataset": dataset, "query_res": res, "seed": 0}),
                    &[("map", 0.4), ("r1", 0.7)],
                ));
            }
        }
    }
    // They arrive scrambled; the template's `order` puts the four blocks in the paper's order.
    let table = Table::build(&layout, &inputs).unwrap();
    let rows: Vec<&str> = table.rows.labels.iter().map(|l| l[0].as_str()).collect();
    assert_eq!(
        rows,
        [
            "teacher symmetric",
            "database teacher tested at the query resolution",
            "teacher asymmetric",
            "teacher-student asymmetric",
            "student symmetric",
            "teacher-student asymmetric - teacher symmetric",
            "teacher-student asymmetric - teacher asymmetric"
        ]
    );
    assert!(table.cells[5].iter().all(|c| c.paired && c.n() == 1));
    assert_eq!(table.rows.headers, ["setup"]);
    let cols: Vec<String> = (0..table.cols.len())
        .map(|c| table.cols.title(c, " / ", ""))
        .collect();
    assert_eq!(
        cols,
        [
            "CUB-200-2011 / 112 / mAP",
            "CUB-200-2011 / 112 / R@1",
            "CUB-200-2011 / 224 / mAP",
            "CUB-200-2011 / 224 / R@1",
            "SOP / 112 / mAP",
            "SOP / 112 / R@1",
            "SOP / 224 / mAP",
            "SOP / 224 / R@1",
        ]
    );
}

#[test]
fn report_bct_table1_template_puts_a_pairs_evaluations_and_gains_in_one_row() {
    let layout = Layout::from_params(&template_params("report-bct-table1")).unwrap();
    let seed = |s: i64| json!({ "seed": s });
    let inputs = vec![
        artifact("ver-old-old", seed(0), &[("tar_at_far", 0.50)]),
        artifact("id-old-old", seed(0), &[("tpir_at_fpir", 0.30)]),
        artifact("ver-bct-old", seed(0), &[("tar_at_far", 0.60)]),
        artifact("id-bct-old", seed(0), &[("tpir_at_fpir", 0.35)]),
        artifact(
            "gain-ver-bct",
            seed(0),
            &[("criterion_tar_at_far", 1.0), ("gain_tar_at_far", 0.4)],
        ),
        artifact("gain-id-bct", seed(0), &[("criterion_tpir_at_fpir", 1.0)]),
    ];
    let table = Table::build(&layout, &inputs).unwrap();
    let md = asymflow::report::markdown::render(&table, &[]);
    assert!(
        md.contains("| query / gallery | 1:1 TAR@FAR | 1:N TPIR@FPIR | 1:1 criterion | 1:1 gain | 1:N criterion | 1:N gain |"),
        "{md}"
    );
    assert!(
        md.contains("| old / old | 50.0 | 30.0 | -¹ | -² | -³ | -⁴ |")
            && md.contains("- ¹ 1:1 criterion: not recorded by `ver-old-old`, `id-old-old`."),
        "{md}"
    );
    assert!(
        md.contains("| BCT new / old | 60.0 | 35.0 | 1.00 | 0.40 | 1.00 | -⁵ |")
            && md.contains(
                "- ⁵ 1:N gain: not recorded by `ver-bct-old`, `id-bct-old`, `gain-ver-bct`, `gain-id-bct`."
            ),
        "{md}"
    );
}
