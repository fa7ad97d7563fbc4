//! The optimiser group's SGD, multi-step schedule and warm-up end to end through the
//! `asymflow` binary: a tiny teacher trains with them, their mistakes are refused naming the
//! parameter (before anything runs where the declaration can tell), and the resolution-asymmetry
//! templates carry the reference code's optimiser settings.

use crate::support::{expand, Project};

/// A tiny classifier-loss teacher on synthetic classes, `optim` appended to its params.
fn pipeline(optim: &str) -> String {
    format!(
        r#"
[stages.split]
kind = "split"
params = {{ dataset = "synthetic", classes = 8, per_class = 8, image_size = 32, protocol = "half-classes" }}

[stages.teacher]
kind = "train-teacher"
inputs = {{ split = "split" }}
params = {{ arch = "resnet18", width = 8, stem = "small", embed_dim = 16, resolution = 16,
           loss = "norm-softmax", scale = 16.0, batch_size = 8, epochs = 3, lr = 1e-2,
           flip = false, {optim} }}
"#
    )
}

/// stdout and stderr of a failed command, together.
fn failure(project: &Project, args: &[&str]) -> String {
    let out = project.run(args);
    assert!(!out.status.success(), "{args:?} succeeded");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_teacher_trains_with_nesterov_sgd_warm_up_and_milestones() {
    let project = Project::new();
    project.write(
        "pipelines/sgd.toml",
        &pipeline(
            r#"optimizer = "sgd", momentum = 0.9, nesterov = true, weight_decay = 1e-4,
               schedule = "multi-step", milestones = [1, 2], gamma = 0.1, warmup_epochs = 1"#,
        ),
    );
    project.write("pipelines/adam.toml", &pipeline(r#"optimizer = "adam""#));
    let first = project.run_json("pipelines/sgd.toml", &[]);
    assert!(first.values().all(|(s, _)| s == "ran"), "{first:?}");
    let sgd = project.show_one("pipelines/sgd.toml", "teacher");
    let loss = sgd["metrics"]["final_loss"].as_f64().unwrap();
    assert!(loss.is_finite() && loss >= 0.0, "{sgd}");
    assert_eq!(sgd["params"]["milestones"], serde_json::json!([1, 2]));

    project.run_json("pipelines/adam.toml", &[]);
    let adam = project.show_one("pipelines/adam.toml", "teacher");
    assert_ne!(adam["key"], sgd["key"]);

    let again = project.run_json("pipelines/sgd.toml", &[]);
    assert!(again.values().all(|(s, _)| s == "cached"), "{again:?}");
}

#[test]
fn a_milestone_beyond_the_run_is_refused_naming_milestones() {
    let project = Project::new();
    project.write(
        "pipelines/late.toml",
        &pipeline(r#"optimizer = "sgd", schedule = "multi-step", milestones = [8, 12, 14]"#),
    );
    let text = failure(&project, &["run", "pipelines/late.toml"]);
    assert!(text.contains("milestones"), "{text}");
    assert!(text.contains("epochs = 3"), "{text}");
    assert!(text.contains("shrink the milestones"), "the fix: {text}");
}

#[test]
fn warm_up_under_one_cycle_is_refused_naming_warmup_epochs() {
    let project = Project::new();
    project.write(
        "pipelines/warm.toml",
        &pipeline(r#"schedule = "one-cycle", warmup_epochs = 1"#),
    );
    let text = failure(&project, &["run", "pipelines/warm.toml"]);
    assert!(text.contains("warmup_epochs"), "{text}");
    assert!(text.contains("own warm-up"), "{text}");
}

#[test]
fn out_of_range_optimiser_values_are_refused_before_anything_runs() {
    let project = Project::new();
    for (name, bad) in [
        ("momentum", r#"optimizer = "sgd", momentum = 1.5"#),
        (
            "gamma",
            r#"schedule = "multi-step", milestones = [1], gamma = 0.0"#,
        ),
        ("milestones", r#"schedule = "multi-step", milestones = [0]"#),
        (
            "warmup_epochs",
            r#"schedule = "constant", warmup_epochs = -1"#,
        ),
    ] {
        project.write("pipelines/bad.toml", &pipeline(bad));
        let text = failure(&project, &["plan", "pipelines/bad.toml"]);
        assert!(text.contains(name), "{name}: {text}");
        assert!(
            text.contains("bad.toml:"),
            "{name}: where in the file: {text}"
        );
    }
}

#[test]
fn raml_paper_templates_carry_the_reference_optimiser_settings() {
    for file in [
        "pipelines/raml-cub200.toml",
        "pipelines/raml-cars196.toml",
        "pipelines/raml-sop.toml",
        "pipelines/raml-ablation.toml",
        "pipelines/raml-gflops.toml",
    ] {
        let mut trained = 0;
        for (stage, instances) in &expand(file, &[]) {
            for params in instances {
                if params.get("div_factor").is_none() {
                    continue;
                }
                trained += 1;
                // pavelsuma/raml: OneCycleLR(div_factor=10), --weight-decay 1e-6.
                assert_eq!(params.float("div_factor").unwrap(), 10.0, "{file}: {stage}");
                assert_eq!(
                    params.float("weight_decay").unwrap(),
                    1e-6,
                    "{file}: {stage}"
                );
                if params.get("pool_size").is_some() {
                    // --neg-num 5.
                    assert_eq!(params.int("negatives").unwrap(), 5, "{file}: {stage}");
                }
            }
        }
        assert!(trained >= 2, "{file}: teachers and students");
    }
}
