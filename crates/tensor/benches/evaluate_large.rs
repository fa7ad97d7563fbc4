//! Large retrieval evaluation: time and peak memory of `asymflow_tensor::metrics::retrieval` on
//! N x N embeddings (60,000 x 60,000, 512-d by default), against a brute-force numpy
//! reference (full similarity rows, full sort per query) on a subset of queries.
//!
//! Run: `cargo bench --bench evaluate_large -- [--n 60000] [--dim 512] [--per-class 20]
//! [--ref-queries 2000] [--noise-percent 300]`; without `--release` (the dev profile is
//! optimised): `cargo build --bench evaluate_large` and run the binary it names. The numpy reference runs when `python3` can import numpy, looked up
//! on `PYTHONPATH` and in `~/.cache/asymflow/bench-py` (install it there with
//! `pip install --target ~/.cache/asymflow/bench-py numpy`).
//!
//! The data are synthetic: class centres on the sphere plus noise, L2-normalised, seeded.
//! Queries and database are the same images (every query excluded from its own database, as
//! in the resolution-asymmetry protocol), so the full score matrix would be N^2 x 4 bytes
//! (14.4 GB at 60,000): the blocked evaluation holds one 64 MiB block.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use asymflow_tensor::metrics::scores::{block_rows, DEFAULT_BLOCK_BYTES};
use asymflow_tensor::metrics::{retrieval, EmbeddingSet, Exclusion};
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

fn peak_rss_mib() -> f64 {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}

fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}: not a number: {v}"))
        })
        .unwrap_or(default)
}

fn synthetic(n: usize, dim: usize, per_class: usize, noise: f32, seed: u64) -> EmbeddingSet {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let normal = Normal::new(0.0f32, 1.0).unwrap();
    let classes = n.div_ceil(per_class);
    let centres: Vec<f32> = (0..classes * dim)
        .map(|_| normal.sample(&mut rng))
        .collect();
    let mut data = vec![0f32; n * dim];
    let labels: Vec<i64> = (0..n).map(|i| (i / per_class) as i64).collect();
    for (i, row) in data.chunks_mut(dim).enumerate() {
        let c = &centres[labels[i] as usize * dim..(labels[i] as usize + 1) * dim];
        for (x, m) in row.iter_mut().zip(c) {
            *x = m + noise * normal.sample(&mut rng);
        }
        let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt() + 1e-6;
        row.iter_mut().for_each(|x| *x /= norm);
    }
    EmbeddingSet::new(data, dim, labels, None)
}

fn write_raw(dir: &Path, set: &EmbeddingSet) {
    let f32s: Vec<u8> = set.data.iter().flat_map(|x| x.to_le_bytes()).collect();
    let i64s: Vec<u8> = set.labels.iter().flat_map(|x| x.to_le_bytes()).collect();
    for side in ["query", "db"] {
        std::fs::write(dir.join(format!("{side}.f32")), &f32s).unwrap();
        std::fs::write(dir.join(format!("{side}_labels.i64")), &i64s).unwrap();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n = arg(&args, "--n", 60_000);
    let dim = arg(&args, "--dim", 512);
    let per_class = arg(&args, "--per-class", 20);
    let ref_queries = arg(&args, "--ref-queries", 2_000).min(n);

    // Noise (per coordinate, relative to unit-variance centres) large enough that classes
    // overlap and mAP is far from 0 and 1.
    let noise = arg(&args, "--noise-percent", 300) as f32 / 100.0;
    let set = synthetic(n, dim, per_class, noise, 0);
    let rss_data = peak_rss_mib();
    let ex = Exclusion {
        self_match: true,
        same_camera: false,
    };
    let rows = block_rows(n, DEFAULT_BLOCK_BYTES);

    let start = Instant::now();
    let full = retrieval(&set, &set, &[1, 5, 10], ex, rows).unwrap();
    let seconds = start.elapsed().as_secs_f64();
    let rss_eval = peak_rss_mib();
    println!(
        "asymflow  {n} x {n}, {dim}-d, {per_class} per class, blocks of {rows} queries: \
         {seconds:.1} s ({:.0} queries/s), mAP {:.4}, mAP(std) {:.4}, R@1 {:.4}; \
         peak RSS {rss_eval:.0} MiB ({rss_data:.0} MiB after generating the data; full score \
         matrix would be {:.0} MiB)",
        n as f64 / seconds,
        full.map,
        full.map_noninterp,
        full.recall[&1],
        (n * n * 4) as f64 / (1 << 20) as f64
    );

    // The same first `ref_queries` queries, both implementations.
    let sub = EmbeddingSet::new(
        set.data[..ref_queries * dim].to_vec(),
        dim,
        set.labels[..ref_queries].to_vec(),
        None,
    );
    let start = Instant::now();
    let ours = retrieval(&sub, &set, &[1], ex, rows).unwrap();
    let ours_s = start.elapsed().as_secs_f64();

    let dir = tempfile::tempdir().unwrap();
    write_raw(dir.path(), &set);
    let home = std::env::var("HOME").unwrap_or_default();
    let bench_py = format!("{home}/.cache/asymflow/bench-py");
    let pythonpath = match std::env::var("PYTHONPATH") {
        Ok(p) if !p.is_empty() => format!("{p}:{bench_py}"),
        _ => bench_py,
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/evaluate_reference.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(dir.path())
        .args([n, n, dim, ref_queries].map(|v| v.to_string()))
        .arg("1")
        .env("PYTHONPATH", pythonpath)
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout);
            let r: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
            let (map, map_noninterp, r1, secs) = (
                r["map"].as_f64().unwrap(),
                r["map_std"].as_f64().unwrap(),
                r["r1"].as_f64().unwrap(),
                r["seconds"].as_f64().unwrap(),
            );
            println!(
                "subset    first {ref_queries} queries: asymflow {ours_s:.2} s, numpy brute force \
                 {secs:.2} s (ratio {:.1}x); peak RSS numpy {:.0} MiB",
                secs / ours_s,
                r["peak_rss_mib"].as_f64().unwrap()
            );
            println!(
                "agreement mAP {:.6} vs {map:.6}, mAP(std) {:.6} vs {map_noninterp:.6}, R@1 {:.6} vs {r1:.6}",
                ours.map, ours.map_noninterp, ours.recall[&1]
            );
            let ok = (ours.map - map).abs() < 1e-6
                && (ours.map_noninterp - map_noninterp).abs() < 1e-6
                && (ours.recall[&1] - r1).abs() < 1e-9;
            println!("{}", if ok { "agree: yes" } else { "agree: NO" });
        }
        Ok(o) => println!(
            "numpy reference skipped: {}",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("python3 failed")
        ),
        Err(e) => println!("numpy reference skipped: python3 not runnable ({e})"),
    }
}
