//! A dash in a report says why: an evaluation that cannot measure TPIR at FPIR 1e-2 (too few
//! non-mated probes) or TAR at FAR 1e-4 (too few impostor pairs) declines the metric with its
//! reason, and the published table marks the dash with a footnote giving it. A planned
//! instance that has not run is footnoted too.

use crate::support::Project;

/// Writes `embeddings` [rows x 2] with `labels` as an importable file.
fn write_embeddings(p: &Project, name: &str, rows: &[[f32; 2]], labels: &[i64]) {
    let flat: Vec<f32> = rows.iter().flatten().copied().collect();
    let emb = tch::Tensor::from_slice(&flat).view([rows.len() as i64, 2]);
    let labels = tch::Tensor::from_slice(labels);
    tch::Tensor::write_safetensors(
        &[("embeddings", &emb), ("labels", &labels)],
        p.path().join(name),
    )
    .unwrap();
}

const PIPELINE: &str = r#"
[stages.probes]
kind = "import"
params = { file = "probes.safetensors" }

[stages.gallery]
kind = "import"
params = { file = "gallery.safetensors" }

[stages.id]
kind = "evaluate"
params = { protocol = "identification", fpir = 1e-2 }
inputs = { query = "probes", database = "gallery" }

[stages.ver]
kind = "evaluate"
params = { protocol = "verification", far = 1e-4 }
inputs = { query = "probes", database = "gallery" }

[stages.table]
kind = "report"
params = { rows = "stage", metrics = ["tpir_at_fpir", "tar_at_far", "r1"], plot_xy = [] }
inputs = { results = ["id", "ver"] }
"#;

fn project() -> Project {
    let p = Project::new();
    write_embeddings(
        &p,
        "probes.safetensors",
        &[[1.0, 0.0], [0.0, 1.0], [-1.0, 0.2]],
        &[1, 2, 9],
    );
    write_embeddings(
        &p,
        "gallery.safetensors",
        &[[1.0, 0.1], [0.1, 1.0]],
        &[1, 2],
    );
    p.write("pipelines/fn.toml", PIPELINE);
    p
}

#[test]
fn a_declined_metric_is_a_dash_with_a_footnote_giving_the_reason() {
    let p = project();
    let out = p.run(&["run", "pipelines/fn.toml"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        crate::support::assert_recorded_metrics_are_declared(&p.path().join("cache")),
        5,
        "import x 2, evaluate x 2, report"
    );
    let table = std::fs::read_to_string(p.path().join("reports/fn/table/table.md")).unwrap();
    let id_line = table.lines().find(|l| l.starts_with("| id ")).unwrap();
    let ver_line = table.lines().find(|l| l.starts_with("| ver ")).unwrap();
    assert_eq!(id_line, "| id | -¹ | -² | 100.0 |", "{table}");
    assert_eq!(ver_line, "| ver | -³ | -⁴ | -⁵ |", "{table}");
    for line in [
        "- ¹ TPIR@FPIR: FPIR 1e-2 needs at least 100 non-mated probes; there are 1 (`id`).",
        "- ² TAR@FAR: not recorded by `id`.",
        "- ³ TPIR@FPIR: not recorded by `ver`.",
        "- ⁴ TAR@FAR: FAR 1e-4 needs at least 10000 impostor pairs; there are 4 (`ver`).",
        "- ⁵ R@1: not recorded by `ver`.",
    ] {
        assert!(table.contains(line), "missing `{line}` in:\n{table}");
    }
    let html = std::fs::read_to_string(p.path().join("reports/fn/table/report.html")).unwrap();
    assert!(
        html.contains("<td class=\"missing\">-<sup>1</sup></td>")
            && html.contains("<sup>1</sup> TPIR@FPIR: FPIR 1e-2 needs at least 100"),
        "{html}"
    );
    let tex = std::fs::read_to_string(p.path().join("reports/fn/table/table.tex")).unwrap();
    assert!(
        tex.contains("--\\textsuperscript{1}") && tex.contains("\\textsuperscript{4} TAR@FAR"),
        "{tex}"
    );
    // The CSV carries the same marks, and each row its own footnotes in a last `notes` column.
    let csv = std::fs::read_to_string(p.path().join("reports/fn/table/table.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "stage,TPIR@FPIR,TAR@FAR,R@1,notes", "{csv}");
    assert_eq!(
        lines[1],
        "id,-[1],-[2],100.0,[1] TPIR@FPIR: FPIR 1e-2 needs at least 100 non-mated probes; \
         there are 1 (`id`). [2] TAR@FAR: not recorded by `id`.",
        "{csv}"
    );
    assert_eq!(
        lines[2],
        "ver,-[3],-[4],-[5],[3] TPIR@FPIR: not recorded by `ver`. [4] TAR@FAR: FAR 1e-4 needs \
         at least 10000 impostor pairs; there are 4 (`ver`). [5] R@1: not recorded by `ver`.",
        "{csv}"
    );
}

#[test]
fn an_instance_not_run_yet_is_footnoted_by_report() {
    let p = project();
    // Only the identification side runs; `asymflow report` renders from the cache alone.
    let out = p.run(&["run", "pipelines/fn.toml", "id"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = p.run(&["report", "pipelines/fn.toml"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.contains("| ver | -¹ | -¹ | -¹ |")
            || text.contains("| ver | -² | -² | -² |")
            || text.contains("| ver | -³ | -³ | -³ |"),
        "{text}"
    );
    assert!(
        text.contains(
            "`ver`: not computed yet (not run, or failed; `asymflow status` tells which)."
        ),
        "{text}"
    );
}

/// A retrieval evaluation's metrics, `map_noninterp` (the standard AP's name since `map_std`
/// became its alias) among them, may be named in a report: plan-time checks read each kind's
/// declared metrics, and `evaluate` declares every name it records.
#[test]
fn a_report_may_name_every_metric_a_retrieval_records() {
    let p = project();
    let names = [
        "map",
        "map_noninterp",
        "map_std",
        "r1",
        "r5",
        "queries",
        "query_gflops",
    ];
    let pipeline = PIPELINE
        .replace(
            "params = { protocol = \"verification\", far = 1e-4 }",
            "params = { protocol = \"retrieval\", ks = [1, 5] }",
        )
        .replace(
            "metrics = [\"tpir_at_fpir\", \"tar_at_far\", \"r1\"]",
            &format!("metrics = {names:?}"),
        )
        .replace("results = [\"id\", \"ver\"]", "results = [\"ver\"]");
    p.write("pipelines/fn.toml", &pipeline);
    let out = p.run(&["plan", "pipelines/fn.toml"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    p.write(
        "pipelines/fn.toml",
        &pipeline.replace("\"map_noninterp\"", "\"map_nonint\""),
    );
    let out = p.run(&["plan", "pipelines/fn.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("did you mean `map_noninterp`?"), "{err}");
}
