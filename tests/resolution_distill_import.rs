//! `distill` and `import` take height x width resolutions as `embed` and the training kinds
//! do: a tall student distilled from a tall teacher on a tiny synthetic set, and square pairs
//! (student, teacher and import resolutions) that key exactly as their integers.

use crate::support::Project;

/// A teacher at `teacher_res`, a student distilled at `student_res` (the teacher's views at
/// `teacher_view`, a TOML fragment: empty for the teacher's own resolution), the student's
/// embeddings at `student_res`, and imported embeddings labelled `import_res`.
fn pipeline(teacher_res: &str, student_res: &str, teacher_view: &str, import_res: &str) -> String {
    format!(
        r#"
[pipeline]
name = "hw-distill"

[stages.split]
kind = "split"
params = {{ dataset = "synthetic", classes = 4, per_class = 6, image_size = 32 }}

[stages.teacher]
kind = "train-teacher"
inputs = {{ split = "split" }}
params = {{ arch = "resnet18", width = 8, stem = "small", embed_dim = 8, resolution = {teacher_res},
           loss = "norm-softmax", scale = 16.0, optimizer = "adam", lr = 2e-3, epochs = 1,
           batch_size = 6, per_class = 0 }}

[stages.student]
kind = "distill"
inputs = {{ split = "split", teacher = "teacher" }}
params = {{ resolution = {student_res}, {teacher_view} augmentations = 2, batch_size = 4,
           epochs = 1, images_per_epoch = 0, lr = 1e-3, jitter = 0.0, mixup = 0.0 }}

[stages.emb]
kind = "embed"
inputs = {{ split = "split", model = "student" }}
params = {{ resolution = {student_res}, view = "whole" }}

[stages.imported]
kind = "import"
params = {{ file = "emb.safetensors", resolution = {import_res} }}
"#
    )
}

fn project(text: &str) -> Project {
    let p = Project::new();
    let emb = tch::Tensor::from_slice(&[1.0f32, 0.0, 0.0, 1.0]).view([2, 2]);
    let labels = tch::Tensor::from_slice(&[0i64, 1]);
    tch::Tensor::write_safetensors(
        &[("embeddings", &emb), ("labels", &labels)],
        p.path().join("emb.safetensors"),
    )
    .unwrap();
    p.write("pipelines/hw.toml", text);
    p
}

#[test]
fn a_tall_student_distils_from_a_tall_teacher() {
    let p = project(&pipeline("[32, 16]", "[16, 8]", "", "[32, 16]"));
    let ran = p.run_json("pipelines/hw.toml", &[]);
    assert!(ran.values().all(|(s, _)| s == "ran"), "{ran:?}");

    // The teacher's views default to the teacher's own 32 x 16; coupled views of another
    // aspect ratio would have been refused, so the run itself says they were tall.
    let student = p.show_one("pipelines/hw.toml", "student");
    assert_eq!(student["metrics"]["resolution"].as_f64(), Some(16.0));
    assert!(student["metrics"]["final_loss"]
        .as_f64()
        .unwrap()
        .is_finite());
    let emb = p.show_one("pipelines/hw.toml", "emb");
    assert_eq!(
        student["metrics"]["gflops"], emb["metrics"]["gflops"],
        "the student's cost is counted at 16 x 8, as embed counts it"
    );
    assert_eq!(p.embeddings_shape(&emb), vec![12, 8]);
    assert_eq!(
        p.show_one("pipelines/hw.toml", "imported")["metrics"]["resolution"].as_f64(),
        Some(32.0),
        "an imported height x width reports its height, as embed does"
    );
}

#[test]
fn square_pairs_key_as_their_integers_in_distill_and_import() {
    let p = project(&pipeline("32", "16", "teacher_resolution = 32,", "16"));
    let ran = p.run_json("pipelines/hw.toml", &[]);
    assert!(ran.values().all(|(s, _)| s == "ran"), "{ran:?}");
    p.write(
        "pipelines/hw.toml",
        &pipeline(
            "32",
            "[16, 16]",
            "teacher_resolution = [32, 32],",
            "[16, 16]",
        ),
    );
    let planned = p.plan_json("pipelines/hw.toml", &[]);
    assert!(
        planned.values().all(|(s, _)| s == "cached"),
        "the same keys: {planned:?}"
    );
    // A non-square import resolution is another label, so another key.
    p.write(
        "pipelines/hw.toml",
        &pipeline("32", "16", "teacher_resolution = 32,", "[16, 8]"),
    );
    let planned = p.plan_json("pipelines/hw.toml", &[]);
    assert_eq!(planned["imported"].0, "to-run", "{planned:?}");
    assert_eq!(planned["student"].0, "cached", "{planned:?}");
}
