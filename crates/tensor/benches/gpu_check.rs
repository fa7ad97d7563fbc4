//! The timing part of `scripts/gpu-check.sh`: a ResNet-50 teacher step at 224 and 448 px and a
//! distillation step (teacher at 448 px, student at 224 px), in fp32 and in bf16 autocast,
//! through the same step code the stages run (`nn::train`), side by side with PyTorch eager on
//! the same GPU (`benches/gpu_check.py`: same network, batch, resolution, optimiser and
//! precision). Prints one table: images/s of each and the ratio, and for each case the peak
//! device memory of one step as the engine estimates it before a stage runs
//! (`asymflow::exec::memory`) beside the peak PyTorch's CUDA allocator measured for the same
//! step (its constants were calibrated on PyTorch's peaks on a CPU; the estimate leaves out
//! the classifier head and cuDNN's workspace, which the measured peak holds).
//!
//! `cargo bench -p asymflow-tensor --bench gpu_check` (`ASYMFLOW_GPU_CHECK_STEPS` timed steps,
//! default 10, after 3 warm-up steps). Without a CUDA device it prints one line and exits 0.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use asymflow::exec::memory::{Frozen, NetShape, Step, Trained};
use asymflow::stages::groups::precision::Precision as EnginePrecision;

use asymflow_tensor::nn::checkpoint::{copy_vars, Model, ModelMeta};
use asymflow_tensor::nn::train::{DistillStep, TeacherLoss, TeacherStep};
use asymflow_tensor::nn::{
    Arch, ClassifierConfig, DistillLoss, HeadKind, NetConfig, Optim, OptimConfig, OptimKind, Pool,
    Precision, ScheduleConfig, Stem,
};
use tch::{Device, Kind, Tensor};

const EMBED_DIM: i64 = 512;
const CLASSES: i64 = 100;
const WARMUP: usize = 3;

/// One timed case.
#[derive(Clone, Copy)]
enum Case {
    Teacher {
        res: i64,
        batch: i64,
    },
    Distill {
        big: i64,
        small: i64,
        images: i64,
        views: i64,
    },
}

impl Case {
    fn name(self) -> String {
        match self {
            Case::Teacher { res, batch } => format!("teacher step, {res} px, batch {batch}"),
            Case::Distill {
                big,
                small,
                images,
                views,
            } => format!("distillation step, {big} -> {small} px, {images} x {views} views"),
        }
    }

    /// Images per step (distillation: every view).
    fn images(self) -> i64 {
        match self {
            Case::Teacher { batch, .. } => batch,
            Case::Distill { images, views, .. } => images * views,
        }
    }

    /// The engine's estimate of the peak bytes of one step of this case (AdamW: two moments).
    fn estimate(self, precision: Precision) -> u64 {
        let net = NetShape {
            arch: "resnet50".into(),
            width: 64,
            small_stem: false,
            embed_dim: EMBED_DIM as u64,
        };
        let precision = match precision {
            Precision::Fp32 => EnginePrecision::Fp32,
            Precision::Bf16 => EnginePrecision::Bf16,
        };
        let trained = Trained {
            net: net.clone(),
            moments: 2,
        };
        let step = match self {
            Case::Teacher { res, batch } => {
                let (side, rows) = (res as u64, batch as u64);
                Step {
                    trained,
                    input: (side, side),
                    rows,
                    input_pixels: rows * side * side,
                    frozen: None,
                    precision,
                }
            }
            Case::Distill {
                big,
                small,
                images,
                views,
            } => {
                let (big, small, rows) = (big as u64, small as u64, (images * views) as u64);
                Step {
                    trained,
                    input: (small, small),
                    rows,
                    input_pixels: rows * (small * small + big * big),
                    frozen: Some(Frozen {
                        net,
                        input: (big, big),
                        rows,
                    }),
                    precision,
                }
            }
        };
        step.estimate().expect("resnet50 is measured").bytes
    }

    /// The arguments of the PyTorch peer for this case.
    fn peer_args(self) -> Vec<String> {
        match self {
            Case::Teacher { res, batch } => {
                vec!["teacher".into(), res.to_string(), batch.to_string()]
            }
            Case::Distill {
                big,
                small,
                images,
                views,
            } => vec![
                "distill".into(),
                format!("{big}:{small}"),
                format!("{images}:{views}"),
            ],
        }
    }
}

const CASES: [Case; 3] = [
    Case::Teacher {
        res: 224,
        batch: 64,
    },
    Case::Teacher {
        res: 448,
        batch: 16,
    },
    Case::Distill {
        big: 448,
        small: 224,
        images: 16,
        views: 2,
    },
];

fn net() -> NetConfig {
    NetConfig {
        arch: Arch::Resnet50,
        width: 64,
        stem: Stem::Imagenet,
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
        lr: 1e-4,
        weight_decay: 1e-4,
        schedule: ScheduleConfig::constant(),
    }
}

/// Seconds for `steps` calls of `step` after the warm-up, the GPU drained before and after.
fn timed(device: Device, steps: usize, mut step: impl FnMut()) -> f64 {
    for _ in 0..WARMUP {
        step();
    }
    if let Device::Cuda(i) = device {
        tch::Cuda::synchronize(i as i64);
    }
    let start = Instant::now();
    for _ in 0..steps {
        step();
    }
    if let Device::Cuda(i) = device {
        tch::Cuda::synchronize(i as i64);
    }
    start.elapsed().as_secs_f64()
}

/// asymflow's images/s for one case in one precision.
fn ours(case: Case, precision: Precision, device: Device, steps: usize) -> f64 {
    tch::manual_seed(0);
    let seconds = match case {
        Case::Teacher { res, batch } => {
            let head = ClassifierConfig {
                kind: HeadKind::NormSoftmax,
                classes: CLASSES,
                dim: EMBED_DIM,
                scale: 30.0,
                margin: 0.0,
            };
            let model = Model::new(ModelMeta::new(net(), Some(head)), device);
            let optim = Optim::new(&model.vs, &adamw(), 1, WARMUP + steps).expect("optimiser");
            let mut step = TeacherStep::new(model, optim, TeacherLoss::Classifier, false, 1)
                .expect("teacher")
                .with_precision(precision);
            let x = Tensor::randn([batch, 3, res, res], (Kind::Float, device));
            let y = Tensor::randint(CLASSES, [batch], (Kind::Int64, device));
            timed(device, steps, || {
                step.batch(&x, &y);
            })
        }
        Case::Distill {
            big,
            small,
            images,
            views,
        } => {
            let teacher = Model::new(ModelMeta::new(net(), None), device);
            let student = Model::new(ModelMeta::new(net(), None), device);
            copy_vars(&teacher.vs, &student.vs).expect("copy");
            let optim = Optim::new(&student.vs, &adamw(), 1, WARMUP + steps).expect("optimiser");
            let loss = DistillLoss {
                abs: true,
                lambda_t: Some(0.7),
                lambda_s: Some(0.7),
            };
            let mut step = DistillStep::new(student, teacher, optim, loss, views, false, 1)
                .with_precision(precision);
            let n = images * views;
            let tv = Tensor::randn([n, 3, big, big], (Kind::Float, device));
            let sv = Tensor::randn([n, 3, small, small], (Kind::Float, device));
            timed(device, steps, || {
                step.batch(&tv, &sv);
            })
        }
    };
    (case.images() as usize * steps) as f64 / seconds
}

/// What the PyTorch peer measured for every case and precision, in order: images/s and the
/// peak bytes its CUDA allocator held.
#[derive(serde::Deserialize)]
struct PeerNumbers {
    rates: Vec<f64>,
    peaks: Vec<f64>,
}

/// The PyTorch peer's numbers, or why there are none.
fn peer(steps: usize) -> Result<PeerNumbers, String> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/gpu_check.py");
    let pythonpath = std::env::var("ASYMFLOW_BENCH_PYTHONPATH").unwrap_or_else(|_| {
        let home = std::env::var("ASYMFLOW_HOME").unwrap_or_else(|_| {
            let cache = std::env::var("XDG_CACHE_HOME").unwrap_or_else(|_| {
                format!("{}/.cache", std::env::var("HOME").unwrap_or_default())
            });
            format!("{cache}/asymflow")
        });
        format!("{home}/torch-2.11.0")
    });
    let mut cmd = Command::new("python3");
    cmd.arg(&script)
        .args([
            "--steps",
            &steps.to_string(),
            "--warmup",
            &WARMUP.to_string(),
        ])
        .args([
            "--embed-dim",
            &EMBED_DIM.to_string(),
            "--classes",
            &CLASSES.to_string(),
        ]);
    for case in CASES {
        cmd.arg("--case").arg(case.peer_args().join(","));
    }
    let out = cmd
        .env("PYTHONPATH", pythonpath)
        .output()
        .map_err(|e| format!("running python3: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    let v: PeerNumbers =
        serde_json::from_str(line).map_err(|e| format!("peer output {line:?}: {e}"))?;
    for (what, numbers) in [("rates", &v.rates), ("peaks", &v.peaks)] {
        if numbers.len() != CASES.len() * 2 {
            return Err(format!(
                "peer gave {} {what}, expected {}",
                numbers.len(),
                CASES.len() * 2
            ));
        }
    }
    Ok(v)
}

/// Bytes in GiB, as the table shows them.
fn gib(bytes: f64) -> String {
    format!("{:.2} GiB", bytes / f64::from(1u32 << 30))
}

fn main() {
    if !tch::Cuda::is_available() {
        println!("gpu_check: libtorch sees no CUDA device; nothing to time");
        return;
    }
    let steps: usize = std::env::var("ASYMFLOW_GPU_CHECK_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let device = Device::Cuda(0);
    tch::Cuda::cudnn_set_benchmark(true);
    let mut rows = Vec::new();
    for case in CASES {
        for precision in [Precision::Fp32, Precision::Bf16] {
            rows.push((case, precision, ours(case, precision, device, steps)));
        }
    }
    let peer = peer(steps);
    println!(
        "ResNet-50 (ImageNet stem, GeM, {EMBED_DIM}-d), AdamW, {steps} timed steps after {WARMUP}; \
         images/s on cuda:0 (ratio: asymflow / PyTorch eager)"
    );
    println!("| what | asymflow fp32 | asymflow bf16 | PyTorch fp32 | PyTorch bf16 |");
    println!("|---|---|---|---|---|");
    for (i, case) in CASES.iter().enumerate() {
        let (fp32, bf16) = (rows[2 * i].2, rows[2 * i + 1].2);
        let cell = |ours: f64, j: usize| match &peer {
            Ok(v) => format!("{:.1} ({:.2}x)", v.rates[j], ours / v.rates[j]),
            Err(_) => "-".to_string(),
        };
        println!(
            "| {}, images/s | {fp32:.1} | {bf16:.1} | {} | {} |",
            case.name(),
            cell(fp32, 2 * i),
            cell(bf16, 2 * i + 1)
        );
    }
    for (i, case) in CASES.iter().enumerate() {
        let estimates = [Precision::Fp32, Precision::Bf16].map(|p| case.estimate(p) as f64);
        let cell = |j: usize| match &peer {
            Ok(v) => format!(
                "{} (estimate / peak {:.2})",
                gib(v.peaks[2 * i + j]),
                estimates[j] / v.peaks[2 * i + j]
            ),
            Err(_) => "-".to_string(),
        };
        println!(
            "| {}, peak memory: asymflow's estimate, PyTorch's measured peak | {} | {} | {} | {} |",
            case.name(),
            gib(estimates[0]),
            gib(estimates[1]),
            cell(0),
            cell(1)
        );
    }
    if let Err(e) = peer {
        println!("PyTorch peer unavailable, no ratio: {}", e.trim());
    }
}
