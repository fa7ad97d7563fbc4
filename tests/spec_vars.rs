//! List vars in lists and in `[sweep]`: a whole `"${vars.x}"` element holding a list splices
//! its items, and a sweep axis written `"${vars.x}"` takes the var's list, so one var sets
//! both the axis and the report's column order; mistakes keep their file:line:column.

use crate::support::Project;

const PIPELINE: &str = r#"[vars]
db_res = 64
query_res = [32, 16]

[sweep]
query_res = "${vars.query_res}"

[stages.e]
kind = "test-echo"
params = { value = "${sweep.query_res}" }

[stages.db]
kind = "test-echo"
params = { value = "${vars.db_res}" }

[stages.table]
kind = "report"
inputs = { results = ["e", "db"] }
params = { rows = "metric", cols = "query_res", metrics = ["value"], plot_xy = [], order = { query_res = ["${vars.db_res}", "${vars.query_res}"] }, tags = { db = { query_res = "${vars.db_res}" } } }
"#;

#[test]
fn one_var_sets_the_sweep_axis_and_the_report_order() {
    let p = Project::new();
    p.write("pipelines/v.toml", PIPELINE);
    let plan = p.plan_json("pipelines/v.toml", &[]);
    assert!(plan.contains_key("e[query_res=32]") && plan.contains_key("e[query_res=16]"));
    p.run_json("pipelines/v.toml", &[]);
    let table = std::fs::read_to_string(p.path().join("reports/v/table/table.csv")).unwrap();
    assert_eq!(
        table.lines().next().unwrap(),
        "metric,64,32,16,notes",
        "the var's order, not ascending: {table}"
    );

    let plan = p.plan_json("pipelines/v.toml", &["--set", "vars.query_res=[48, 8]"]);
    assert!(
        plan.contains_key("e[query_res=48]") && plan.contains_key("e[query_res=8]"),
        "{plan:?}"
    );
    assert_eq!(plan.len(), 4, "{plan:?}");
}

fn error_of(text: &str) -> String {
    let p = Project::new();
    p.write("pipelines/bad.toml", text);
    let out = p.run(&["plan", "pipelines/bad.toml"]);
    assert!(!out.status.success(), "expected an error for:\n{text}");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn sweep_var_mistakes_point_at_the_reference() {
    let e = error_of(
        "[vars]\nres = [1]\n[sweep]\nq = \"${vars.rez}\"\n[stages.a]\nkind = \"test-echo\"\nparams = { value = \"${sweep.q}\" }\n",
    );
    assert!(
        e.contains("pipelines/bad.toml:4:5: unknown variable `rez`"),
        "{e}"
    );
    assert!(e.contains("did you mean `res`?"), "{e}");

    let e = error_of(
        "[vars]\nres = 3\n[sweep]\nq = \"${vars.res}\"\n[stages.a]\nkind = \"test-echo\"\nparams = { value = \"${sweep.q}\" }\n",
    );
    assert!(
        e.contains("pipelines/bad.toml:4:5: sweep axis `q` must be a list of values"),
        "{e}"
    );

    let e = error_of(
        "[vars]\nres = [1, 2]\n[sweep]\nq = [2, \"${vars.res}\"]\n[stages.a]\nkind = \"test-echo\"\nparams = { value = \"${sweep.q}\" }\n",
    );
    assert!(
        e.contains("pipelines/bad.toml:4:9: sweep axis `q` lists 2 twice"),
        "{e}"
    );

    let e = error_of(
        "[vars]\nres = [1]\n[stages.a]\nkind = \"test-echo\"\nparams = { value = [\"${vars.rez}\"] }\n",
    );
    assert!(
        e.contains("pipelines/bad.toml:5:21: unknown variable `rez`"),
        "{e}"
    );
}

/// The resolution-asymmetry paper pipelines write their query resolutions once: the sweep,
/// the trained resolutions and the table's column order all follow `vars.query_res`, and the
/// ablation's student network and its row label follow `vars.student_arch`.
#[test]
fn raml_paper_pipelines_take_their_resolutions_and_labels_from_vars() {
    use asymflow::spec::Override;
    for file in [
        "pipelines/raml-cub200.toml",
        "pipelines/raml-cars196.toml",
        "pipelines/raml-sop.toml",
    ] {
        let paper = crate::support::expand(file, &[]);
        assert_eq!(
            paper["table"][0].0["order"]["query_res"],
            serde_json::json!([448, 224, 160, 112]),
            "{file}"
        );
        let s = crate::support::expand(
            file,
            &[
                Override::Set("vars.db_res=192".into()),
                Override::Set("vars.query_res=[96, 48]".into()),
            ],
        );
        let mut trained: Vec<i64> = s["teacher-q"]
            .iter()
            .map(|p| p.int("resolution").unwrap())
            .collect();
        trained.sort();
        trained.dedup(); // one per seed
        assert_eq!(trained, [48, 96], "{file}");
        assert_eq!(
            s["table"][0].0["order"]["query_res"],
            serde_json::json!([192, 96, 48]),
            "{file}"
        );
        let text =
            std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file))
                .unwrap();
        let table = &text[text.find("[stages.table").unwrap()..];
        for literal in ["448", "224", "160", "112", "ResNet"] {
            assert!(
                !table.contains(literal),
                "{file}: `{literal}` in its report"
            );
        }
    }
    let s = crate::support::expand(
        "pipelines/raml-ablation.toml",
        &[Override::Set("vars.student_arch=\"resnet34\"".into())],
    );
    assert_eq!(s["student-r18"][0].str("arch").unwrap(), "resnet34");
    let labels = &s["table-variants"][0].0["labels"];
    assert_eq!(
        labels["eval-r18"],
        "resnet34 student (L_abs, no augmentations)"
    );
}
