//! The artifact contract: a stage connected to a slot must write what the slot reads. A wrong
//! connection is a spec error at the upstream stage's name, with a hint naming what the slot
//! accepts and which kinds (and stages of the pipeline) produce it. Every shipped pipeline
//! honours it.

use std::path::{Path, PathBuf};

use crate::support::Project;

/// Runs `plan` on `text`; returns stderr, asserting failure and that nothing ran.
fn error_of(text: &str) -> String {
    let p = Project::new();
    p.write("pipelines/bad.toml", text);
    let out = p.run(&["plan", "pipelines/bad.toml"]);
    assert!(!out.status.success(), "expected an error for:\n{text}");
    assert!(!p.path().join("cache/objects").exists());
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

fn assert_at(stderr: &str, line_col: &str, message: &str) {
    let expected = format!("pipelines/bad.toml:{line_col}: {message}");
    assert!(
        stderr.contains(&expected),
        "expected `{expected}` in:\n{stderr}"
    );
}

const SPLIT_AND_TEACHER: &str = "[stages.data]\nkind = \"split\"\n\
[stages.teacher]\nkind = \"train-teacher\"\ninputs = { split = \"data\" }\n";

#[test]
fn an_embed_fed_a_split_as_its_model() {
    let e = error_of(&format!(
        "{SPLIT_AND_TEACHER}[stages.emb]\nkind = \"embed\"\ninputs = {{ split = \"data\", model = \"data\" }}\n"
    ));
    assert_at(
        &e,
        "8:36",
        "input `model` of stage `emb` takes model, but stage `data` (split) writes split",
    );
    assert!(
        e.contains("hint: `model` of kind `embed` takes model, written by kinds")
            && e.contains("written by kinds train-teacher, distill, train-classifier, train-bct")
            && e.contains("in this pipeline: teacher"),
        "{e}"
    );
}

#[test]
fn an_evaluate_fed_a_model_as_embeddings() {
    let e = error_of(&format!(
        "{SPLIT_AND_TEACHER}[stages.eval]\nkind = \"evaluate\"\ninputs = {{ query = \"teacher\", database = \"teacher\" }}\n"
    ));
    assert_at(
        &e,
        "8:20",
        "input `query` of stage `eval` takes embeddings, but stage `teacher` (train-teacher) writes model and loss curve",
    );
    assert!(
        e.contains("written by kinds embed, import, command (none in this pipeline)"),
        "{e}"
    );
}

#[test]
fn one_wrong_stage_in_a_list_is_pointed_at() {
    let e = error_of(&format!(
        "{SPLIT_AND_TEACHER}[stages.emb]\nkind = \"embed\"\ninputs = {{ split = \"data\", model = \"teacher\" }}\n\
[stages.eval]\nkind = \"evaluate\"\ninputs = {{ query = \"emb\", database = [\"emb\",\n  \"data\"] }}\n"
    ));
    assert_at(
        &e,
        "12:3",
        "input `database` of stage `eval` takes embeddings, but stage `data` (split) writes split",
    );
    assert!(e.contains("in this pipeline: emb"), "{e}");
}

#[test]
fn a_bct_old_model_without_a_classifier() {
    let e = error_of(&format!(
        "{SPLIT_AND_TEACHER}[stages.new]\nkind = \"train-bct\"\ninputs = {{ split = \"data\", old = \"teacher\" }}\n"
    ));
    assert_at(
        &e,
        "8:34",
        "input `old` of stage `new` takes classifier, but stage `teacher` (train-teacher) writes model and loss curve",
    );
    assert!(
        e.contains("written by kinds train-classifier, train-bct"),
        "{e}"
    );
}

#[test]
fn an_update_gain_fed_embeddings_and_a_report_fed_no_losses() {
    let e = error_of(&format!(
        "{SPLIT_AND_TEACHER}[stages.emb]\nkind = \"embed\"\ninputs = {{ split = \"data\", model = \"teacher\" }}\n\
[stages.gain]\nkind = \"update-gain\"\ninputs = {{ new_old = \"emb\", old_old = \"emb\", new_new = \"emb\" }}\n"
    ));
    assert_at(
        &e,
        "11:22",
        "input `new_old` of stage `gain` takes evaluation, but stage `emb` (embed) writes embeddings",
    );
    let e = error_of(&format!(
        "{SPLIT_AND_TEACHER}[stages.table]\nkind = \"report\"\ninputs = {{ results = \"teacher\", losses = \"data\" }}\n"
    ));
    assert_at(
        &e,
        "8:42",
        "input `losses` of stage `table` takes loss curve, but stage `data` (split) writes split",
    );
}

#[test]
fn a_wrong_connection_made_by_an_override_is_found_too() {
    let p = Project::new();
    p.write(
        "pipelines/ok.toml",
        &format!(
            "{SPLIT_AND_TEACHER}[stages.emb]\nkind = \"embed\"\ninputs = {{ split = \"data\", model = \"teacher\" }}\n"
        ),
    );
    assert!(p.run(&["plan", "pipelines/ok.toml"]).status.success());
    let out = p.run(&[
        "plan",
        "pipelines/ok.toml",
        "--set",
        "stages.emb.inputs.model=\"data\"",
    ]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        e.contains(
            "input `model` of stage `emb` takes model, but stage `data` (split) writes split"
        ),
        "{e}"
    );
}

fn toml_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            toml_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "toml") {
            found.push(path);
        }
    }
}

#[test]
fn every_shipped_pipeline_plans_under_the_contract() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pipelines = Vec::new();
    toml_files(&repo.join("pipelines"), &mut pipelines);
    pipelines.sort();
    assert!(pipelines.len() >= 9, "{pipelines:?}");
    for path in pipelines {
        let rel = path
            .strip_prefix(repo)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let stages = crate::support::expand(&rel, &[]);
        assert!(!stages.is_empty(), "{rel} planned no stage");
    }
}

#[test]
fn kinds_lists_what_each_slot_takes_and_what_the_kind_writes() {
    let p = Project::new();
    let out = p.run(&["kinds", "embed"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("[takes model]") && text.contains("[takes split]"),
        "{text}"
    );
    assert!(
        text.contains("embeddings.safetensors") && text.contains("embeddings"),
        "{text}"
    );
    let text = String::from_utf8_lossy(&p.run(&["kinds", "train-bct"]).stdout).into_owned();
    assert!(
        text.contains("[takes classifier]") && text.contains("classes.json"),
        "{text}"
    );
}

#[test]
fn the_checkpoint_files_the_tensor_crate_writes_are_the_declared_outputs() {
    use asymflow::stages::outputs::{MODEL_META, MODEL_WEIGHTS};
    use asymflow_tensor::nn::checkpoint::{META_FILE, WEIGHTS_FILE};
    assert_eq!(MODEL_WEIGHTS.file, WEIGHTS_FILE);
    assert_eq!(MODEL_META.file, META_FILE);
}
