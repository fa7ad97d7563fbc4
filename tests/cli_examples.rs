//! Every pipeline under `pipelines/examples/` (the README's examples, complete) runs from a
//! clean project and publishes its tables.

use std::path::Path;

use crate::support::{copy_tree, Project};

#[test]
fn every_example_pipeline_runs_and_publishes_its_report() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let p = Project::new();
    copy_tree(&repo.join("stages"), &p.path().join("stages"));
    copy_tree(
        &repo.join("pipelines/examples"),
        &p.path().join("pipelines/examples"),
    );
    let mut examples: Vec<_> = std::fs::read_dir(repo.join("pipelines/examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    examples.sort();
    assert!(!examples.is_empty());
    for example in examples {
        let rel = format!(
            "pipelines/examples/{}",
            example.file_name().unwrap().to_string_lossy()
        );
        let out = p.run(&["run", &rel, "--jobs", "2"]);
        assert!(
            out.status.success(),
            "{rel} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("| "), "{rel} printed no table:\n{stdout}");
    }
}
