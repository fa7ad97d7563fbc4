//! Training throughput (images per second) of a teacher step and of a distillation step,
//! side by side with an equivalent PyTorch eager script (`benches/train_throughput.py`: same
//! network, batch, resolution and thread count) in one run; prints the ratios (target >= 1.0).
//!
//! `cargo bench --bench train_throughput` (set `ASYMFLOW_BENCH_THREADS`, default 2). The
//! PyTorch peer runs from the torch wheel the set-up installed
//! (`${ASYMFLOW_HOME:-~/.cache/asymflow}/torch-2.11.0`), or from `python3`'s own torch when
//! `ASYMFLOW_BENCH_PYTHONPATH` is set to an empty string.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use asymflow_tensor::nn::checkpoint::{copy_vars, Model, ModelMeta};
use asymflow_tensor::nn::train::{DistillStep, TeacherLoss, TeacherStep};
use asymflow_tensor::nn::{
    Arch, ClassifierConfig, DistillLoss, HeadKind, NetConfig, Optim, OptimConfig, OptimKind, Pool,
    ScheduleConfig, Stem,
};
use tch::{Device, Kind, Tensor};

const WIDTH: i64 = 16;
const EMBED_DIM: i64 = 128;
const CLASSES: i64 = 48;
const BATCH: i64 = 64;
const RES: i64 = 64;
const STUDENT_RES: i64 = 32;
const AUGMENTATIONS: i64 = 4;
const WARMUP: usize = 3;
const STEPS: usize = 15;

fn net() -> NetConfig {
    NetConfig {
        arch: Arch::Resnet18,
        width: WIDTH,
        stem: Stem::Small,
        pool: Pool::Gem,
        embed_dim: EMBED_DIM,
        gem_p: 3.0,
        pool_l2n: true,
        embed_relu: false,
    }
}

fn adamw() -> OptimConfig {
    OptimConfig {
        kind: OptimKind::Adamw,
        lr: 1e-3,
        weight_decay: 1e-4,
        schedule: ScheduleConfig::constant(),
    }
}

fn timed(mut step: impl FnMut(), warmup: usize, steps: usize) -> f64 {
    for _ in 0..warmup {
        step();
    }
    let start = Instant::now();
    for _ in 0..steps {
        step();
    }
    start.elapsed().as_secs_f64()
}

fn rust_throughput() -> (f64, f64) {
    tch::manual_seed(0);
    let head = ClassifierConfig {
        kind: HeadKind::NormSoftmax,
        classes: CLASSES,
        dim: EMBED_DIM,
        scale: 16.0,
        margin: 0.0,
    };
    let model = Model::new(ModelMeta::new(net(), Some(head)), Device::Cpu);
    let optim = Optim::new(&model.vs, &adamw(), 1, WARMUP + STEPS).expect("optimiser");
    let mut teacher =
        TeacherStep::new(model, optim, TeacherLoss::Classifier, false, 1).expect("teacher");
    let x = Tensor::randn([BATCH, 3, RES, RES], tch::kind::FLOAT_CPU);
    let y = Tensor::randint(CLASSES, [BATCH], (Kind::Int64, Device::Cpu));
    let t_teacher = timed(
        || {
            teacher.batch(&x, &y);
        },
        WARMUP,
        STEPS,
    );

    let frozen = Model::new(ModelMeta::new(net(), None), Device::Cpu);
    let student = Model::new(ModelMeta::new(net(), None), Device::Cpu);
    copy_vars(&frozen.vs, &student.vs).expect("copy");
    let optim = Optim::new(&student.vs, &adamw(), 1, WARMUP + STEPS).expect("optimiser");
    let loss = DistillLoss {
        abs: true,
        lambda_t: Some(0.7),
        lambda_s: Some(0.7),
    };
    let mut distill = DistillStep::new(student, frozen, optim, loss, AUGMENTATIONS, false, 1);
    let tx = Tensor::randn([BATCH, 3, RES, RES], tch::kind::FLOAT_CPU);
    let sx = Tensor::randn([BATCH, 3, STUDENT_RES, STUDENT_RES], tch::kind::FLOAT_CPU);
    let t_distill = timed(
        || {
            distill.batch(&tx, &sx);
        },
        WARMUP,
        STEPS,
    );
    let images = (BATCH as usize * STEPS) as f64;
    (images / t_teacher, images / t_distill)
}

fn python_throughput(threads: i32) -> Result<(f64, f64), String> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/train_throughput.py");
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
        .args(["--threads", &threads.to_string()])
        .args([
            "--width",
            &WIDTH.to_string(),
            "--embed-dim",
            &EMBED_DIM.to_string(),
        ])
        .args([
            "--classes",
            &CLASSES.to_string(),
            "--batch",
            &BATCH.to_string(),
        ])
        .args([
            "--res",
            &RES.to_string(),
            "--student-res",
            &STUDENT_RES.to_string(),
        ])
        .args(["--augmentations", &AUGMENTATIONS.to_string()])
        .args([
            "--warmup",
            &WARMUP.to_string(),
            "--steps",
            &STEPS.to_string(),
        ])
        .env("PYTHONPATH", pythonpath)
        .output()
        .map_err(|e| format!("running python3: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    let v: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("peer output {line:?}: {e}"))?;
    let get = |k: &str| {
        v[k].as_f64()
            .ok_or_else(|| format!("peer output lacks {k}"))
    };
    Ok((get("teacher_images_per_s")?, get("distill_images_per_s")?))
}

fn main() {
    let threads: i32 = std::env::var("ASYMFLOW_BENCH_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    tch::set_num_threads(threads);
    println!(
        "train_throughput: ResNet-18 width {WIDTH}, small stem, GeM, {EMBED_DIM}-d; batch {BATCH}; \
         teacher {RES} px (normalised softmax); distillation teacher {RES} px -> student \
         {STUDENT_RES} px, P = {AUGMENTATIONS}, all three terms; AdamW; {threads} threads; \
         {STEPS} timed steps after {WARMUP}"
    );
    let (rt, rd) = rust_throughput();
    match python_throughput(threads) {
        Ok((pt, pd)) => {
            println!(
                "{:<22} {:>12} {:>12} {:>8}",
                "step (images/s)", "asymflow", "pytorch", "ratio"
            );
            println!(
                "{:<22} {:>12.1} {:>12.1} {:>8.2}",
                "teacher",
                rt,
                pt,
                rt / pt
            );
            println!(
                "{:<22} {:>12.1} {:>12.1} {:>8.2}",
                "distillation",
                rd,
                pd,
                rd / pd
            );
        }
        Err(e) => {
            println!("teacher: {rt:.1} images/s, distillation: {rd:.1} images/s");
            println!("PyTorch peer unavailable, no ratio: {e}");
        }
    }
}
