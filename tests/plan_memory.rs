//! `plan` estimates the peak device memory of each training step it would run and, given the
//! device's memory (`--device-memory`), flags a step that exceeds it with a setting that fits
//! (issue 32). The estimate itself is checked against measured allocations in
//! `crates/tensor/tests/memory_estimate.rs`.

use crate::support::Project;

/// The resolution-asymmetry paper's teacher (448 px, 5 mined negatives per anchor) and
/// student (224 px, 8 views), batch 200, fp32, no accumulation or chunks: far over any GPU.
const PIPELINE: &str = r#"
[pipeline]
name = "memory"

[stages.split]
kind = "split"
params = { dataset = "sop", root = "data/none", protocol = "provided" }

[stages.teacher]
kind = "train-teacher"
inputs = { split = "split" }
params = { arch = "resnet50", width = 64, resolution = 448, batch_size = 200, per_class = 4, mining = "pool", negatives = 5 }

[stages.student]
kind = "distill"
inputs = { split = "split", teacher = "teacher" }
params = { resolution = 224, batch_size = 200, augmentations = 8 }
"#;

const FILE: &str = "pipelines/memory.toml";

fn plan(p: &Project, extra: &[&str]) -> String {
    let mut args = vec!["plan", FILE];
    args.extend_from_slice(extra);
    String::from_utf8_lossy(&p.run(&args).stdout).into_owned()
}

fn gib_after(text: &str, stage: &str) -> f64 {
    let at = text.find(&format!("{stage}  ")).expect(stage);
    let rest = &text[at..];
    let from = rest.find("peak memory ~ ").expect("an estimate") + "peak memory ~ ".len();
    rest[from..].split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn issue32_plan_shows_each_training_steps_peak_memory_and_what_fits_the_device() {
    let p = Project::new();
    p.write(FILE, PIPELINE);
    let text = plan(&p, &[]);
    assert!(
        text.contains("peak memory ~ ")
            && text.contains("(fp32, 1200 images with gradients at once)"),
        "{text}"
    );
    assert!(
        text.contains("(fp32, 1600 images with gradients at once)"),
        "{text}"
    );
    assert!(!text.contains("over the"), "no device memory given: {text}");

    // bf16 and chunks shrink what the student holds; accumulation splits the teacher's batch.
    let fp32 = gib_after(&text, "student");
    let smaller = plan(
        &p,
        &[
            "--set",
            "stages.student.params.chunks=8",
            "--set",
            "stages.student.params.precision=\"bf16\"",
        ],
    );
    let chunked = gib_after(&smaller, "student");
    assert!(
        chunked < fp32 / 8.0,
        "{fp32} GiB -> {chunked} GiB: {smaller}"
    );

    // bf16 alone first (the student), then a split in the current precision (the teacher's
    // batch in 10 batches of 5 whole classes).
    let over = plan(&p, &["--device-memory", "80GiB"]);
    assert!(
        over.contains("over the 80.0 GiB device (with 1.0 GiB kept free for the CUDA context): set batch_size = 20, accumulate = 10 (the same 200 images per step, each batch 5 whole classes)"),
        "{over}"
    );
    assert!(
        over.contains("student  input split runs first")
            && over.contains(": set precision = \"bf16\"\n"),
        "{over}"
    );
    // On 40 GB (37.3 GiB) more of each; on 16 GiB the teacher needs bf16 as well.
    let small = plan(&p, &["--device-memory", "40GB"]);
    assert!(small.contains("over the 37.3 GiB device"), "{small}");
    assert!(
        small.contains(": set batch_size = 8, accumulate = 25 "),
        "{small}"
    );
    assert!(
        small.contains(": set chunks = 5 (the same gradient, 40 images per chunk)"),
        "{small}"
    );
    let tiny = plan(&p, &["--device-memory", "16GiB"]);
    assert!(
        tiny.contains(": set precision = \"bf16\", batch_size = 8, accumulate = 25 "),
        "{tiny}"
    );

    // The suggestion, applied, fits.
    let doc: serde_json::Value = serde_json::from_slice(
        &p.run(&["plan", FILE, "--json", "--device-memory", "80GiB"])
            .stdout,
    )
    .unwrap();
    let teacher = doc["instances"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["stage"] == "teacher")
        .unwrap();
    assert_eq!(teacher["memory"]["fits"], false);
    let advice = teacher["memory"]["advice"][0].as_str().unwrap().to_string();
    let sets: Vec<String> = advice
        .split(" (")
        .next()
        .unwrap()
        .split(", ")
        .map(|kv| {
            let (k, v) = kv.split_once(" = ").unwrap();
            format!("stages.teacher.params.{k}={v}")
        })
        .collect();
    let mut args = vec!["plan", FILE, "--json", "--device-memory", "80GiB"];
    for set in &sets {
        args.extend_from_slice(&["--set", set.as_str()]);
    }
    let fixed: serde_json::Value = serde_json::from_slice(&p.run(&args).stdout).unwrap();
    let teacher = fixed["instances"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["stage"] == "teacher")
        .unwrap();
    assert_eq!(teacher["memory"]["fits"], true, "{sets:?}: {teacher}");

    let bad = p.run(&["plan", FILE, "--device-memory", "80 parsecs"]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("unknown unit `parsecs`"), "{err}");
}
