//! What users wait for: the real `train-teacher`, `distill` and `train-classifier` runs, through
//! the tensor crate's `Run` implementations exactly as the worker runs them (split, loaders,
//! augmentation, loss curves, checkpoints), on quickstart-sized data with the quickstarts'
//! settings and fewer epochs; in the same run, the PyTorch eager script beside this file
//! (`train_stages.py`) with the same network, batch, resolution, optimiser and augmentation over
//! in-memory images of the same count and size. Prints images/s of each, the ratio, and where
//! asymflow's time goes (data, forward, backward, optimiser step, bookkeeping), read from the
//! breakdown line each stage writes to its log.
//!
//! Each stage runs in fp32 and again in bf16 (CPU autocast, `precision = "bf16"`), each against
//! the peer in the same precision.
//!
//! `cargo bench -p asymflow-tensor --bench train_stages` (`ASYMFLOW_BENCH_EPOCHS`, default 2;
//! `ASYMFLOW_BENCH_THREADS`, default 2). The PyTorch peer runs from the torch wheel the set-up
//! installed, or from `python3`'s own torch when `ASYMFLOW_BENCH_PYTHONPATH` is empty.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use asymflow::kind::{InputArtifact, Inputs, Params, StageContext};
use asymflow_tensor::nn::timing::parse_breakdown;
use serde_json::{json, Value};

/// One stage run: its artifact (for downstream stages) and its time breakdown.
struct Ran {
    artifact: InputArtifact,
    breakdown: BTreeMap<String, f64>,
    wall: f64,
}

/// Runs `kind` with its defaults overridden by `overrides`, in `root/name`, as a worker would.
fn run(
    root: &Path,
    name: &str,
    kind: &str,
    overrides: Value,
    inputs: &[(&str, &InputArtifact)],
) -> Ran {
    let registry = asymflow_tensor::registry();
    let stage = registry.get(kind).expect("a registered kind");
    let mut map: BTreeMap<String, Value> = stage
        .params()
        .iter()
        .filter_map(|d| d.default_value().map(|v| (d.name.to_string(), v)))
        .collect();
    if let Value::Object(o) = overrides {
        map.extend(o);
    }
    let params = Params(map);
    let inputs: Inputs = inputs
        .iter()
        .map(|(slot, a)| (slot.to_string(), vec![(*a).clone()]))
        .collect();
    let out = root.join(name);
    std::fs::create_dir_all(&out).expect("output folder");
    let project = PathBuf::from(".");
    let cancel = AtomicBool::new(false);
    let mut ctx = StageContext::new(
        name,
        &params,
        &inputs,
        out.clone(),
        &project,
        asymflow::kind::Device::Cpu,
        &cancel,
        None,
    );
    let start = Instant::now();
    registry
        .runner(kind)
        .expect("a runner")
        .run(&mut ctx)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let wall = start.elapsed().as_secs_f64();
    let (metrics, _) = ctx.finish();
    let outputs: BTreeMap<String, PathBuf> = std::fs::read_dir(&out)
        .expect("outputs")
        .map(|e| e.expect("entry"))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    let log = std::fs::read_to_string(&outputs["log.txt"]).unwrap_or_default();
    let breakdown = log
        .lines()
        .find_map(parse_breakdown)
        .map(|parts| parts.into_iter().collect())
        .unwrap_or_default();
    Ran {
        artifact: InputArtifact {
            stage: name.into(),
            kind: kind.into(),
            binding: BTreeMap::new(),
            params,
            key: name.into(),
            outputs,
            metrics,
            draws: Vec::new(),
        },
        breakdown,
        wall,
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The PyTorch peer's images/s by kind, or why not.
fn peer(args: &[String]) -> Result<BTreeMap<String, f64>, String> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/train_stages.py");
    let pythonpath = std::env::var("ASYMFLOW_BENCH_PYTHONPATH").unwrap_or_else(|_| {
        let home = std::env::var("ASYMFLOW_HOME").unwrap_or_else(|_| {
            let cache = std::env::var("XDG_CACHE_HOME").unwrap_or_else(|_| {
                format!("{}/.cache", std::env::var("HOME").unwrap_or_default())
            });
            format!("{cache}/asymflow")
        });
        format!("{home}/torch-2.11.0")
    });
    let out = Command::new("python3")
        .arg(&script)
        .args(args)
        .env("PYTHONPATH", pythonpath)
        .output()
        .map_err(|e| format!("running python3: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).map_err(|e| format!("peer output {line:?}: {e}"))
}

/// The three training runs of one precision, and the peer's images/s in the same precision.
struct Measured {
    teacher: Ran,
    student: Ran,
    classifier: Ran,
    peer: Result<BTreeMap<String, f64>, String>,
}

/// Runs the three stages and their peer in `precision` (`"fp32"` or `"bf16"`).
fn measure(root: &Path, precision: &str, epochs: usize, threads: usize) -> Measured {
    let root = root.join(precision);
    // The resolution-asymmetry quickstart's split and its teacher and student settings
    // (stages/raml-teacher-cpu.toml, stages/raml-student-cpu.toml).
    let split = run(
        &root,
        "split",
        "split",
        json!({"dataset": "synthetic", "classes": 96, "per_class": 40, "image_size": 64, "protocol": "half-classes"}),
        &[],
    );
    let teacher = run(
        &root,
        "teacher",
        "train-teacher",
        json!({"arch": "resnet18", "width": 16, "stem": "small", "pool": "gem", "embed_dim": 128,
               "loss": "norm-softmax", "scale": 16.0, "per_class": 0, "optimizer": "adam", "lr": 2e-3,
               "weight_decay": 0.0, "schedule": "one-cycle", "epochs": epochs, "batch_size": 64,
               "resolution": 64, "flip": false, "precision": precision}),
        &[("split", &split.artifact)],
    );
    let student = run(
        &root,
        "student",
        "distill",
        json!({"init": "teacher", "augmentations": 2, "coupled": true, "jitter": 0.5, "mixup": 0.2,
               "losses": ["abs", "rel_ts", "rel_ss"], "lambda_t": 0.7, "lambda_s": 0.7,
               "optimizer": "adam", "lr": 1e-3, "weight_decay": 0.0, "schedule": "one-cycle",
               "epochs": epochs, "batch_size": 32, "images_per_epoch": 640, "resolution": 32,
               "precision": precision}),
        &[("split", &split.artifact), ("teacher", &teacher.artifact)],
    );
    // The BCT quickstart's split and classifier settings (stages/bct-classifier-cpu.toml).
    let bct_split = run(
        &root,
        "bct-split",
        "split",
        json!({"dataset": "synthetic", "classes": 500, "per_class": 10, "image_size": 32, "detail_scale": 2.0,
               "protocol": "half-classes", "train_fraction": 0.8}),
        &[],
    );
    let classifier = run(
        &root,
        "classifier",
        "train-classifier",
        json!({"arch": "resnet18", "width": 16, "stem": "small", "embed_dim": 64, "head": "norm-softmax",
               "scale": 16.0, "margin": 0.0, "resolution": 32, "epochs": epochs, "batch_size": 32,
               "optimizer": "adam", "lr": 2e-3, "schedule": "one-cycle", "geometric": true, "crop_min": 0.6,
               "flip": false, "precision": precision}),
        &[("split", &bct_split.artifact)],
    );

    let images = |r: &Ran| r.breakdown.get("images").copied().unwrap_or(0.0) as usize / epochs;
    let args: Vec<String> = vec![
        "--threads".into(),
        threads.to_string(),
        "--epochs".into(),
        epochs.to_string(),
        "--teacher-images".into(),
        images(&teacher).to_string(),
        "--student-images".into(),
        images(&student).to_string(),
        "--classifier-images".into(),
        images(&classifier).to_string(),
        "--precision".into(),
        precision.into(),
    ];
    Measured {
        peer: peer(&args),
        teacher,
        student,
        classifier,
    }
}

fn main() {
    let threads = env_usize("ASYMFLOW_BENCH_THREADS", 2);
    let epochs = env_usize("ASYMFLOW_BENCH_EPOCHS", 2);
    tch::set_num_threads(threads as i32);
    tch::set_num_interop_threads(1);
    let dir = tempfile::tempdir().expect("temporary folder");
    let runs: Vec<(&str, Measured)> = ["fp32", "bf16"]
        .into_iter()
        .map(|precision| (precision, measure(dir.path(), precision, epochs, threads)))
        .collect();

    println!(
        "train_stages: the stages' runs on quickstart-sized data, {epochs} epochs each, {threads} threads; \
         images/s over the training run (distill: images, each with 2 views); each precision \
         against PyTorch eager in the same precision (bf16: CPU autocast)"
    );
    println!(
        "| stage | precision | asymflow images/s | PyTorch images/s | ratio | data | forward | backward | step | bookkeeping |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (precision, m) in &runs {
        for (label, key, ran) in [
            ("train-teacher (64 px, batch 64)", "teacher", &m.teacher),
            (
                "distill (64 -> 32 px, batch 32 x 2 views)",
                "distill",
                &m.student,
            ),
            (
                "train-classifier (32 px, batch 32)",
                "classifier",
                &m.classifier,
            ),
        ] {
            let b = &ran.breakdown;
            let total = b.get("total").copied().unwrap_or(ran.wall);
            let ours = b.get("images").copied().unwrap_or(0.0) / total;
            let (theirs, ratio) = match m.peer.as_ref().ok().and_then(|p| p.get(key)) {
                Some(&t) => (format!("{t:.1}"), format!("{:.2}x", ours / t)),
                None => ("-".into(), "-".into()),
            };
            let share = |part: &str| {
                let s = b.get(part).copied().unwrap_or(0.0);
                format!("{s:.2} s ({:.0}%)", 100.0 * s / total)
            };
            println!(
                "| {label} | {precision} | {ours:.1} | {theirs} | {ratio} | {} | {} | {} | {} | {} |",
                share("data"),
                share("forward"),
                share("backward"),
                share("step"),
                share("bookkeeping")
            );
        }
    }
    for (precision, m) in &runs {
        if let Err(e) = &m.peer {
            println!(
                "PyTorch peer ({precision}) unavailable, no ratio: {}",
                e.trim()
            );
        }
    }
}
