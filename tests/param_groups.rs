//! The shared parameter groups from a pipeline author's side: the old names of the classifier
//! kinds (`augment`, `one_cycle`) still work, key exactly as their current spelling, and warn
//! at their place; conflicting or swept old names are plan errors; `kinds` shows the groups.

use serde_json::Value;

use crate::support::Project;

fn pipeline(params: &str) -> String {
    format!(
        r#"[stages.split]
kind = "split"
params = {{ dataset = "synthetic", classes = 4, per_class = 6, image_size = 32 }}

[sweep]
lr = [1e-3, 2e-3]

[stages.old]
kind = "train-classifier"
inputs = {{ split = "split" }}
params = {{ width = 8, lr = "${{sweep.lr}}", {params} }}
"#
    )
}

/// `plan --json` of `text`: the resolved parameters of stage `old`'s instances (what their
/// keys hash besides the inputs, which are not computed yet), and stderr.
fn keys(text: &str) -> (Vec<Value>, String) {
    let p = Project::new();
    p.write("pipelines/p.toml", text);
    let out = p.run(&["plan", "pipelines/p.toml", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys = doc["instances"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["label"].as_str().unwrap().starts_with("old"))
        .map(|i| i["params"].clone())
        .collect();
    (keys, stderr)
}

#[test]
fn old_names_key_as_their_current_spelling_and_warn_at_their_place() {
    let (old, warnings) = keys(&pipeline("augment = false, one_cycle = false"));
    let (new, quiet) = keys(&pipeline(
        "geometric = false, flip = false, schedule = \"constant\"",
    ));
    assert_eq!(old.len(), 2, "one instance per swept lr");
    assert_eq!(old, new);
    assert!(
        warnings.contains(
            "pipelines/p.toml:11:43: `augment` is a deprecated name (kind `train-classifier`)"
        ),
        "{warnings}"
    );
    assert!(
        warnings.contains("hint: write schedule = \"one-cycle\" (true) or \"constant\" (false)"),
        "{warnings}"
    );
    assert!(!quiet.contains("warning"), "{quiet}");

    // `augment = true` only turns crops on; flips stay as written.
    let (on, _) = keys(&pipeline("augment = true, flip = false"));
    let (geometric, _) = keys(&pipeline("geometric = true, flip = false"));
    assert_eq!(on, geometric);
    assert_ne!(on, old);
}

fn plan_error(params: &str) -> String {
    let p = Project::new();
    p.write("pipelines/p.toml", &pipeline(params));
    let out = p.run(&["plan", "pipelines/p.toml"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "accepted {params}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn an_old_name_that_contradicts_its_current_name_or_is_swept_is_a_plan_error() {
    let e = plan_error("augment = false, flip = true");
    assert!(
        e.contains(
            "pipelines/p.toml:11:43: `augment` is the old name of `flip`, which is also given a different value"
        ),
        "{e}"
    );
    let e = plan_error("one_cycle = true, schedule = \"constant\"");
    assert!(
        e.contains("`one_cycle` is the old name of `schedule`"),
        "{e}"
    );
    let e = plan_error("one_cycle = \"${sweep.lr}\"");
    assert!(
        e.contains("`one_cycle` is a deprecated name and takes a plain value, not a sweep"),
        "{e}"
    );
    let e = plan_error("one_cycle = 1");
    assert!(
        e.contains("`one_cycle`: `one_cycle` took true or false"),
        "{e}"
    );
    // Agreeing spellings are accepted (an old file half-migrated).
    let (keys, _) = keys(&pipeline("one_cycle = false, schedule = \"constant\""));
    assert_eq!(keys.len(), 2);
}

#[test]
fn kinds_shows_each_group_under_its_name_with_the_old_names() {
    let p = Project::new();
    let out = p.run(&["kinds", "train-classifier"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    for heading in [
        "params (network, shared with other kinds):",
        "params (optimiser and schedule, shared with other kinds):",
        "params (augmentation, shared with other kinds):",
        "params (batching, shared with other kinds):",
    ] {
        assert!(text.contains(heading), "{heading} missing:\n{text}");
    }
    assert!(text.contains("one_cycle"), "{text}");
    assert!(text.contains("deprecated name: write schedule"), "{text}");
    let teacher = p.run(&["kinds", "train-teacher"]);
    let teacher = String::from_utf8_lossy(&teacher.stdout).into_owned();
    assert!(
        teacher.contains("params (optimiser and schedule, shared with other kinds):"),
        "{teacher}"
    );
}
