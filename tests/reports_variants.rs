//! `reports/` variants: runs whose overrides resolve to the same pipeline share one folder
//! (a no-op override publishes to the plain folder), and `asymflow reports` lists the variants
//! with their overrides and deletes them, never anything asymflow did not publish.

use crate::support::Project;

const PIPELINE: &str = r#"
[pipeline]
name = "rep"

[sweep]
seed = [0, 1]

[stages.eval]
kind = "test-echo"
params = { value = "${sweep.seed}" }

[stages.table]
kind = "report"
inputs = { results = "eval" }
params = { metrics = ["value"], format = "fixed:1", plot_xy = [], title = "Echo" }
"#;

const FILE: &str = "pipelines/rep.toml";

/// The folder names under `reports/`, sorted.
fn folders(p: &Project) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(p.path().join("reports"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn issue34_identical_resolved_pipelines_share_a_reports_folder() {
    let p = Project::new();
    p.write(FILE, PIPELINE);
    p.run_json(FILE, &[]);
    // A no-op override publishes to the plain folder and notes nothing there.
    p.run_json(FILE, &["--set", "stages.table.params.format=fixed:1"]);
    assert_eq!(folders(&p), vec!["rep"]);
    let plain = std::fs::read_to_string(p.path().join("reports/rep/table/table.md")).unwrap();
    assert!(!plain.contains("Overrides"), "{plain}");
    assert!(!p.path().join("reports/rep/table/overrides.txt").exists());
    // One change, spelt two ways, is one variant.
    p.run_json(FILE, &["--set", "stages.table.params.format=fixed:2"]);
    p.run_json(FILE, &["--set", "stages.table.params.format=\"fixed:2\""]);
    let names = folders(&p);
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names[1].starts_with("rep+"), "{names:?}");
    let table = std::fs::read_to_string(
        p.path()
            .join("reports")
            .join(&names[1])
            .join("table/table.md"),
    )
    .unwrap();
    assert!(table.contains("Overrides: `--set"), "{table}");
    // `asymflow report` with the same override renders into the same variant.
    let out = p.run(&[
        "report",
        FILE,
        "--set",
        "stages.table.params.format=fixed:2",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(folders(&p), names);
}

#[test]
fn issue34_reports_lists_variants_with_their_overrides_and_cleans_only_ours() {
    let p = Project::new();
    p.write(FILE, PIPELINE);
    p.run_json(FILE, &[]);
    p.run_json(FILE, &["--sweep", "seed=0,1,2"]);
    let variant = folders(&p)[1].clone();
    let out = p.run(&["reports"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with(&variant) && l.contains("variant of rep: --sweep seed=0,1,2")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("rep ") && l.contains("as the pipeline file stands")),
        "{text}"
    );
    assert!(text.contains("1 variant in"), "{text}");
    let json = p.run(&["reports", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc[1]["name"], variant.as_str());
    assert_eq!(doc[1]["overrides"], "--sweep seed=0,1,2");
    assert_eq!(doc[1]["reports"], 1);
    assert_eq!(doc[0]["overrides"], serde_json::Value::Null);

    // A file of the user's in the variant: nothing is deleted.
    let notes = p.path().join("reports").join(&variant).join("notes.md");
    std::fs::write(&notes, "mine").unwrap();
    let refused = p.run(&["reports", "--clean"]);
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("refusing to delete") && err.contains("notes.md"),
        "{err}"
    );
    assert!(notes.is_file());
    let refused = p.run(&["reports", "rm", &variant]);
    assert_eq!(refused.status.code(), Some(1));
    std::fs::remove_file(&notes).unwrap();

    let clean = p.run(&["reports", "--clean"]);
    assert!(
        clean.status.success(),
        "{}",
        String::from_utf8_lossy(&clean.stderr)
    );
    assert!(String::from_utf8_lossy(&clean.stdout).contains("deleted"));
    assert_eq!(folders(&p), vec!["rep"]);
    assert!(p.path().join("reports/rep/table/table.md").is_file());
    let unknown = p.run(&["reports", "rm", "nope"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("the folders there are: rep"));
    let plain = p.run(&["reports", "rm", "rep"]);
    assert!(plain.status.success());
    assert!(folders(&p).is_empty());
}
