//! `plan` and `why` explain a rerun against the closest cached result of the instance (fewest
//! differing key fields), not against whatever ran last, and say "forgotten" after
//! `cache forget`.

use crate::support::Project;

const PIPELINE: &str = r#"
[pipeline]
name = "closest"

[sweep]
seed = [0, 1, 2, 3, 4, 5]

[stages.student]
kind = "test-train"
params = { epochs = 7, value = 0.7, seed = "${sweep.seed}" }

[stages.results]
kind = "test-strict"
inputs = { source = "student" }
params = { count = 1 }
gather = ["seed"]
"#;

const FILE: &str = "pipelines/closest.toml";

fn project() -> Project {
    let p = Project::new();
    p.write(FILE, PIPELINE);
    p.run_json(FILE, &[]);
    p
}

/// `plan --json`'s key of `label`.
fn key_of(p: &Project, label: &str) -> String {
    let out = p.run(&["plan", FILE, "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["instances"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["label"] == label)
        .and_then(|i| i["key"].as_str())
        .unwrap()
        .to_string()
}

#[test]
fn issue34_a_one_off_run_does_not_change_what_later_plans_compare_with() {
    let p = project();
    p.run_json(FILE, &["--set", "stages.student.params.epochs=1"]);
    let plan = p.plan_json(FILE, &["--set", "stages.student.params.value=0.8"]);
    for seed in 0..6 {
        let (status, reason) = &plan[&format!("student[seed={seed}]")];
        assert_eq!(status, "to-run");
        assert_eq!(reason, "params.value 0.7 -> 0.8", "seed {seed}");
    }
    let why = p.run(&[
        "why",
        FILE,
        "student[seed=3]",
        "--set",
        "stages.student.params.value=0.8",
    ]);
    let text = String::from_utf8_lossy(&why.stdout);
    assert!(why.status.success(), "{text}");
    assert!(text.contains("params.value 0.7 -> 0.8"), "{text}");
    assert!(!text.contains("epochs"), "{text}");
    // Only the one-off's own variant is closest to a plan with its own override.
    let plan = p.plan_json(
        FILE,
        &[
            "--set",
            "stages.student.params.epochs=1",
            "--set",
            "stages.student.params.value=0.9",
        ],
    );
    assert_eq!(plan["student[seed=0]"].1, "params.value 0.7 -> 0.9");
}

#[test]
fn issue34_a_forgotten_result_says_forgotten() {
    let p = project();
    let whole = key_of(&p, "results");
    // A narrower one-off run is what `results` last ran with.
    p.run_json(FILE, &["--sweep", "seed=0,1,2,3"]);
    assert_eq!(p.plan_json(FILE, &[])["results"].0, "cached");
    let forget = p.run(&["cache", "forget", &whole[..16]]);
    assert!(forget.status.success());
    let plan = p.plan_json(FILE, &[]);
    assert_eq!(plan["results"].0, "to-run");
    assert!(
        plan["results"].1.starts_with("forgotten"),
        "{:?}",
        plan["results"]
    );
    let why = p.run(&["why", FILE, "results"]);
    let text = String::from_utf8_lossy(&why.stdout);
    assert!(text.contains("forgotten"), "{text}");
    assert!(!text.contains("instances"), "{text}");
    let json = p.run(&["why", FILE, "results", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc[0]["reasons"][0]["reason"], "forgotten");
    // Recomputed, the key is an ordinary hit again.
    p.run_json(FILE, &[]);
    assert_eq!(p.plan_json(FILE, &[])["results"].0, "cached");
}
