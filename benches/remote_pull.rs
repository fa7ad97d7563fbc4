//! Pulling results from an S3 remote, next to `dvc pull` of the same bytes in the same run.
//!
//! Needs the S3 test server: `eval "$(scripts/services/s3.sh up)"` (it exports
//! `ASYMFLOW_TEST_S3_ENDPOINT` and the AWS variables); without it the bench says so and exits.
//! DVC is looked up as `dvc` on PATH or under `~/.cache/asymflow/dvc-py`
//! (`pip install --target ~/.cache/asymflow/dvc-py 'dvc[s3]'`); without it only asymflow runs.
//!
//! The data has the shape of a quickstart's results (the quickstart itself trains for minutes,
//! so its bytes are synthesised): 9 model records with an 8 MiB checkpoint, 18 embedding
//! records with 2 MiB of embeddings, each with a small log and metrics file (about 110 MB in
//! 108 objects). A second set of 300 records of one 1 KiB object each measures the per-object
//! overhead. `asymflow pull` downloads 8 at a time (as here) and hashes every byte while it streams and writes it to the object store;
//! DVC's pull (default settings: its own parallel jobs) trusts the remote.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use asymflow::cache::remote::Remote;
use asymflow::cache::{Cache, OutputRef, RunRecord};
use asymflow::config::ProjectConfig;

/// (records, bytes of the big output per record, big output name, the kind declaring it).
const SHAPE: &[(usize, usize, &str, &str)] = &[
    (9, 8 << 20, "model.safetensors", "train-teacher"),
    (18, 2 << 20, "embeddings.safetensors", "embed"),
];

/// `n` bytes of a safetensors file (a remote checks a `.safetensors` output's header).
fn safetensors(seed: u64, n: usize) -> Vec<u8> {
    let header = format!("{{\"w\":{{\"dtype\":\"U8\",\"shape\":[{n}],\"data_offsets\":[0,{n}]}}}}");
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend(bytes(seed, n));
    out
}

fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// Records a synthetic result of `kind` with `files` (name, content) in `cache`; returns its
/// key.
fn record(cache: &Cache, id: &str, kind: &str, files: &[(&str, Vec<u8>)]) -> String {
    let key_json = format!("{{\"bench\":\"remote_pull\",\"id\":\"{id}\",\"kind\":\"{kind}\"}}");
    let key = blake3::hash(key_json.as_bytes()).to_hex().to_string();
    let mut outputs = BTreeMap::new();
    let mut sizes = Vec::new();
    for (name, content) in files {
        let (digest, size) = cache.objects().put_bytes(content).unwrap();
        sizes.push((digest.clone(), size));
        outputs.insert(
            name.to_string(),
            OutputRef {
                digest,
                is_dir: false,
            },
        );
    }
    let run = RunRecord {
        key: key.clone(),
        stage: id.into(),
        kind: kind.into(),
        pipeline: "bench".into(),
        binding: "{}".into(),
        key_json,
        started: 0.0,
        finished: 0.0,
        duration: 0.0,
        device: "cpu".into(),
        outputs,
        metrics: BTreeMap::new(),
    };
    cache.index().unwrap().record_success(&run, &sizes).unwrap();
    key
}

fn create_bucket(endpoint: &str, bucket: &str) {
    use std::io::{Read, Write};
    let host = endpoint.trim_start_matches("http://").trim_end_matches('/');
    let mut s = std::net::TcpStream::connect(host).expect("the S3 test server answers");
    write!(
        s,
        "PUT /{bucket} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut r = String::new();
    s.read_to_string(&mut r).unwrap();
    assert!(r.starts_with("HTTP/1.1 200"), "creating the bucket: {r}");
}

fn remote(endpoint: &str, url: &str) -> Remote {
    let config = ProjectConfig {
        remote: Some(url.into()),
        endpoint: Some(endpoint.into()),
        ..Default::default()
    };
    let mut kinds = asymflow::stages::registry();
    asymflow::stages::testing::register(&mut kinds);
    Remote::from_config(&config, std::sync::Arc::new(kinds))
        .unwrap()
        .unwrap()
}

/// Pushes `keys` from `src`, then pulls them into a fresh cache: (pull time, bytes, objects).
fn push_then_pull(remote: &Remote, src: &Cache, keys: &[String]) -> (Duration, u64, usize) {
    let index = src.index().unwrap();
    for key in keys {
        remote
            .push(src, &index.lookup(key).unwrap().unwrap())
            .unwrap();
    }
    let dest_dir = tempfile::tempdir().unwrap();
    let dest = Cache::new(dest_dir.path());
    let clock = Instant::now();
    let (mut bytes, mut objects) = (0u64, 0usize);
    for fetched in remote.fetch_many(&dest, keys, 8, None) {
        let fetched = fetched.unwrap().expect("pushed");
        bytes += fetched.bytes;
        objects += fetched.blobs;
    }
    (clock.elapsed(), bytes, objects)
}

fn dvc() -> Option<Command> {
    if Command::new("dvc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Some(Command::new("dvc"));
    }
    let site = std::path::PathBuf::from(std::env::var("HOME").ok()?).join(".cache/asymflow/dvc-py");
    if !site.join("dvc").is_dir() {
        return None;
    }
    let mut cmd = Command::new("python3");
    cmd.args(["-m", "dvc"]).env("PYTHONPATH", site);
    Some(cmd)
}

fn dvc_run(dir: &Path, args: &[&str]) -> bool {
    let Some(mut cmd) = dvc() else { return false };
    let out = cmd
        .args(args)
        .current_dir(dir)
        .env("DVC_NO_ANALYTICS", "1")
        .output()
        .expect("dvc starts");
    if !out.status.success() {
        eprintln!(
            "dvc {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out.status.success()
}

/// `dvc push` then `dvc pull` into an empty cache of the same files: the pull's time.
fn dvc_pull(
    endpoint: &str,
    bucket: &str,
    prefix: &str,
    files: &[(String, Vec<u8>)],
) -> Option<Duration> {
    dvc()?;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("data")).unwrap();
    for (name, content) in files {
        std::fs::write(d.join("data").join(name), content).unwrap();
    }
    let url = format!("s3://{bucket}/{prefix}");
    let ok = dvc_run(d, &["init", "--no-scm"])
        && dvc_run(d, &["remote", "add", "-d", "team", &url])
        && dvc_run(d, &["remote", "modify", "team", "endpointurl", endpoint])
        && dvc_run(d, &["add", "data"])
        && dvc_run(d, &["push"]);
    if !ok {
        return None;
    }
    std::fs::remove_dir_all(d.join("data")).unwrap();
    std::fs::remove_dir_all(d.join(".dvc/cache")).unwrap();
    let clock = Instant::now();
    dvc_run(d, &["pull"]).then(|| clock.elapsed())
}

fn main() {
    let Ok(endpoint) = std::env::var("ASYMFLOW_TEST_S3_ENDPOINT") else {
        println!("skipped: s3 not available (run `eval \"$(scripts/services/s3.sh up)\"` first)");
        return;
    };
    let bucket = format!("asymflow-bench-{}", std::process::id());
    create_bucket(&endpoint, &bucket);

    // The quickstart-shaped results.
    let src_dir = tempfile::tempdir().unwrap();
    let src = Cache::new(src_dir.path());
    let mut keys = Vec::new();
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut seed = 1u64;
    for &(n, size, name, kind) in SHAPE {
        for i in 0..n {
            seed += 1;
            let id = format!("{name}-{i}");
            let big = safetensors(seed, size);
            let log = bytes(seed + 1000, 2048);
            let metrics = format!("{{\"map\": 0.{seed}}}").into_bytes();
            let mut outputs = vec![
                (name, big.clone()),
                ("log.txt", log.clone()),
                ("metrics.json", metrics.clone()),
            ];
            if kind == "train-teacher" {
                outputs.push(("model.json", format!("{{\"id\":{seed}}}").into_bytes()));
                outputs.push(("loss.json", b"{\"epochs\":[]}".to_vec()));
            }
            keys.push(record(&src, &id, kind, &outputs));
            files.push((format!("{id}.bin"), big));
            files.push((format!("{id}.log"), log));
            files.push((format!("{id}.json"), metrics));
        }
    }
    let r = remote(&endpoint, &format!("s3://{bucket}/asymflow"));
    let (t, b, o) = push_then_pull(&r, &src, &keys);
    let mbps = b as f64 / 1e6 / t.as_secs_f64();
    println!(
        "asymflow pull: {:.1} MB in {o} objects, {} records: {:.2} s, {mbps:.1} MB/s (every byte hashed)",
        b as f64 / 1e6,
        keys.len(),
        t.as_secs_f64()
    );
    let dvc_big = dvc_pull(&endpoint, &bucket, "dvc", &files);

    // Many small objects: the per-object overhead.
    let small_dir = tempfile::tempdir().unwrap();
    let small = Cache::new(small_dir.path());
    let mut small_keys = Vec::new();
    let mut small_files = Vec::new();
    for i in 0..300u64 {
        // 1 KiB of JSON (a `.json` output must parse).
        let mut content = format!("{{\"i\":{i},\"pad\":\"").into_bytes();
        content.resize(1022, b'x');
        content.extend_from_slice(b"\"}");
        small_keys.push(record(
            &small,
            &format!("small-{i}"),
            "test-echo",
            &[("value.json", content.clone())],
        ));
        small_files.push((format!("small-{i}.bin"), content));
    }
    let (ts, _, os) = push_then_pull(&r, &small, &small_keys);
    println!(
        "asymflow pull: {os} objects of 1 KiB (one record each): {:.2} s, {:.2} ms per object (record + blob)",
        ts.as_secs_f64(),
        ts.as_secs_f64() * 1e3 / os as f64
    );
    let dvc_small = dvc_pull(&endpoint, &bucket, "dvc-small", &small_files);

    match (dvc_big, dvc_small) {
        (Some(tb), Some(tsm)) => {
            println!(
                "dvc pull:      same {:.1} MB in {} files: {:.2} s, {:.1} MB/s (asymflow/dvc time {:.2}x)",
                b as f64 / 1e6,
                files.len(),
                tb.as_secs_f64(),
                b as f64 / 1e6 / tb.as_secs_f64(),
                t.as_secs_f64() / tb.as_secs_f64()
            );
            println!(
                "dvc pull:      300 files of 1 KiB: {:.2} s, {:.2} ms per file (asymflow/dvc time {:.2}x)",
                tsm.as_secs_f64(),
                tsm.as_secs_f64() * 1e3 / 300.0,
                ts.as_secs_f64() / tsm.as_secs_f64()
            );
        }
        _ => println!("dvc: not installed (pip install --target ~/.cache/asymflow/dvc-py 'dvc[s3]'); asymflow only"),
    }
}
