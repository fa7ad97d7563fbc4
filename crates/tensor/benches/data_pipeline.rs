//! Images decoded + augmented per second: asymflow's `TrainLoader` against torchvision's
//! equivalent pipeline (PIL + transforms + DataLoader), side by side in one run on the same
//! JPEG files, with the ratio printed. Speed is measured here, never asserted in tests.
//!
//! The workload: `ASYMFLOW_BENCH_IMAGES` (default 512) JPEG files of 500 x 375 pixels (CUB's
//! typical size; quality 90, rendered by the synthetic generator and upsampled so the files
//! have realistic structure), 8 classes, written once to a temporary ImageFolder. Per image,
//! both sides decode, re-sample the largest side to 224, take a random resized crop to
//! 224 x 224 (area 25-100%), flip, apply SimCLR colour distortion of strength 0.5, convert to
//! normalised floats and batch 32 images. asymflow uses a 2-thread rayon pool
//! (`ASYMFLOW_BENCH_THREADS`), torchvision 2 DataLoader workers; both after a warm-up.
//!
//! Run: `cargo bench --bench data_pipeline` (or, without a release build of the
//! dependencies, `cargo test --bench data_pipeline`, whose dev profile is optimised too). The
//! peer needs python3 with torch 2.11.0 and torchvision 0.26.0 importable: PYTHONPATH is set
//! to `$ASYMFLOW_HOME/torch-2.11.0` and `$ASYMFLOW_HOME/bench-py` (ASYMFLOW_HOME defaults to
//! `~/.cache/asymflow`), where `pip install --target ~/.cache/asymflow/bench-py pillow
//! torchvision==0.26.0 numpy --no-deps` puts them. Without the peer, only asymflow's number
//! is printed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use asymflow::data::image_ops::{resize, Filter};
use asymflow::data::listing::image_folder;
use asymflow_tensor::data::{
    AugmentConfig, FileDataset, Sampling, SplitItem, SyntheticParams, TrainConfig, TrainLoader,
};

const RESOLUTION: u32 = 224;
const BATCH: usize = 32;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Writes `n` JPEG files of 500 x 375 into `root/CLASS/`.
fn write_images(root: &Path, n: usize) {
    let params = SyntheticParams {
        classes: 8,
        per_class: n.div_ceil(8),
        image_size: 192,
        detail_scale: 3.0,
        seed: 1,
    };
    (0..n).for_each(|i| {
        let img = resize(&params.render(i), 500, 375, Filter::Bicubic);
        let dir = root.join(format!("class_{}", params.label(i)));
        std::fs::create_dir_all(&dir).unwrap();
        let file = std::fs::File::create(dir.join(format!("{i:05}.jpg"))).unwrap();
        let mut enc =
            image::codecs::jpeg::JpegEncoder::new_with_quality(std::io::BufWriter::new(file), 90);
        enc.encode_image(&img).unwrap();
    });
}

fn asymflow_rate(root: &Path, threads: usize) -> (usize, f64) {
    let listing = image_folder(root).unwrap();
    let items: Vec<SplitItem> = listing
        .entries
        .iter()
        .map(|e| SplitItem {
            id: e.id.clone(),
            label: e.label,
            camera: None,
        })
        .collect();
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap(),
    );
    let config = TrainConfig {
        resolution: RESOLUTION.into(),
        batch_size: BATCH,
        sampling: Sampling::Shuffle,
        images_per_epoch: None,
        augment: AugmentConfig {
            jitter: 0.5,
            ..AugmentConfig::default()
        },
        seed: 0,
    };
    let loader = TrainLoader::new(Arc::new(FileDataset::new(root)), &items, config)
        .unwrap()
        .with_pool(pool);
    // Warm-up (page cache, allocator), like the peer's.
    for batch in loader.epoch(99).take(2) {
        batch.unwrap();
    }
    let start = Instant::now();
    let mut n = 0;
    for batch in loader.epoch(0) {
        n += batch.unwrap().images.size()[0] as usize;
    }
    (n, start.elapsed().as_secs_f64())
}

fn peer_rate(root: &Path, workers: usize) -> Result<f64, String> {
    let home = std::env::var("ASYMFLOW_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/asymflow")
        });
    let mut pythonpath = vec![home.join("bench-py"), home.join("torch-2.11.0")];
    if let Ok(existing) = std::env::var("PYTHONPATH") {
        pythonpath.extend(std::env::split_paths(&existing));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/torchvision_data.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(root)
        .args([
            "--resolution",
            &RESOLUTION.to_string(),
            "--batch",
            &BATCH.to_string(),
        ])
        .args(["--workers", &workers.to_string()])
        .env("PYTHONPATH", std::env::join_paths(pythonpath).unwrap())
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or("failed")
            .to_string());
    }
    let line = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value =
        serde_json::from_str(line.trim()).map_err(|e| format!("{e}: {line}"))?;
    v["images_per_s"]
        .as_f64()
        .ok_or_else(|| format!("no images_per_s in {line}"))
}

fn main() {
    // `cargo test --bench` passes libtest flags; there is nothing to filter here.
    let n = env_usize("ASYMFLOW_BENCH_IMAGES", 512);
    let threads = env_usize("ASYMFLOW_BENCH_THREADS", 2);
    let dir = tempfile::tempdir().unwrap();
    write_images(dir.path(), n);
    println!("data pipeline: {n} JPEG files of 500x375 -> {RESOLUTION}x{RESOLUTION} crops, batches of {BATCH}");

    let (count, secs) = asymflow_rate(dir.path(), threads);
    let ours = count as f64 / secs;
    println!(
        "  asymflow TrainLoader ({threads} threads): {ours:8.1} images/s ({count} in {secs:.2}s)"
    );
    match peer_rate(dir.path(), threads) {
        Ok(theirs) => {
            println!("  torchvision DataLoader ({threads} workers): {theirs:8.1} images/s");
            println!("  ratio asymflow / torchvision: {:.2}x", ours / theirs);
        }
        Err(e) => println!("  torchvision peer not run: {e}"),
    }
}
