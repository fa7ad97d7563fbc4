//! Engine overhead, as a user waits for it: whole `asymflow` commands in separate processes
//! (`--version`, `kinds`, a no-op `run` of 1,000 instances, `plan` of 10,000, a no-op `run` of
//! 300 next to `dvc repro` of an equivalent 300-stage pipeline where DVC is installed), and the
//! same work in-process, so the gap between the two is the process start. The ratio to DVC is
//! what to read; absolute times depend on the machine.
//!
//! Run: `scripts/bench.sh engine_overhead` or `cargo bench --bench engine_overhead`. DVC is
//! looked up as `dvc` on PATH, or under `~/.cache/asymflow/dvc-py` (`pip install --target
//! ~/.cache/asymflow/dvc-py dvc`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use asymflow::cache::Cache;
use asymflow::exec::{plan_status, RunOptions};
use asymflow::graph::Plan;
use asymflow::kind::Registry;
use asymflow::stages::{registry, testing};

fn test_registry() -> Arc<Registry> {
    let mut r = registry();
    testing::register(&mut r);
    Arc::new(r)
}

fn sweep_pipeline(dir: &Path, n: usize) -> PathBuf {
    let values: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    let text = format!(
        "[pipeline]\nname = \"bench{n}\"\n[sweep]\ni = [{}]\n[stages.s]\nkind = \"test-echo\"\nparams = {{ value = \"${{sweep.i}}\" }}\n",
        values.join(", ")
    );
    std::fs::create_dir_all(dir.join("pipelines")).unwrap();
    let path = dir.join(format!("pipelines/bench{n}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn load(path: &Path, registry: &Registry) -> Plan {
    Plan::build(asymflow::spec::load(path, &[], registry).unwrap()).unwrap()
}

fn run_once(path: &Path, registry: &Arc<Registry>, cache: &Cache) -> (Duration, usize) {
    let clock = Instant::now();
    let plan = load(path, registry);
    let options = RunOptions::new(2, false, false);
    let summary = asymflow::exec::run(
        &plan,
        registry,
        cache,
        &options,
        &Arc::new(AtomicBool::new(false)),
    )
    .unwrap();
    (
        clock.elapsed(),
        summary.count(asymflow::exec::Status::Cached),
    )
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn noop_rerun(n: usize, registry: &Arc<Registry>) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let path = sweep_pipeline(dir.path(), n);
    let cache = Cache::new(&dir.path().join("cache"));
    let (cold, _) = run_once(&path, registry, &cache);
    let warm: Vec<Duration> = (0..5)
        .map(|_| {
            let (t, cached) = run_once(&path, registry, &cache);
            assert_eq!(cached, n, "the rerun must be a no-op");
            t
        })
        .collect();
    let warm = median(warm);
    println!(
        "  no-op rerun of {n} instances: {:.1} ms ({:.1} us per instance; cold run {:.1} s)",
        warm.as_secs_f64() * 1e3,
        warm.as_secs_f64() * 1e6 / n as f64,
        cold.as_secs_f64()
    );
    warm
}

fn plan_many(n: usize, registry: &Arc<Registry>) {
    let dir = tempfile::tempdir().unwrap();
    let path = sweep_pipeline(dir.path(), n);
    let cache = Cache::new(&dir.path().join("cache"));
    let times: Vec<Duration> = (0..3)
        .map(|_| {
            let clock = Instant::now();
            let plan = load(&path, registry);
            let planned = plan_status(&plan, registry, &cache).unwrap();
            assert_eq!(planned.len(), n);
            clock.elapsed()
        })
        .collect();
    let t = median(times);
    println!(
        "  plan of {n} instances: {:.1} ms ({:.1} us per instance)",
        t.as_secs_f64() * 1e3,
        t.as_secs_f64() * 1e6 / n as f64
    );
}

fn dvc() -> Option<Command> {
    if Command::new("dvc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Some(Command::new("dvc"));
    }
    let home = std::env::var("HOME").ok()?;
    let site = PathBuf::from(home).join(".cache/asymflow/dvc-py");
    if !site.join("dvc").is_dir() {
        return None;
    }
    let mut cmd = Command::new("python3");
    cmd.args(["-m", "dvc"]).env("PYTHONPATH", site);
    Some(cmd)
}

fn dvc_noop(n: usize) -> Option<Duration> {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let mut cmd = dvc()?;
        let out = cmd
            .args(args)
            .current_dir(dir.path())
            .env("DVC_NO_ANALYTICS", "1")
            .output()
            .ok()?;
        out.status.success().then_some(()).or_else(|| {
            eprintln!(
                "dvc {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            None
        })
    };
    run(&["init", "--no-scm", "-q"])?;
    let mut yaml = String::from("stages:\n");
    for i in 0..n {
        yaml.push_str(&format!(
            "  s{i}:\n    cmd: echo {i} > out{i}.txt\n    outs:\n      - out{i}.txt\n"
        ));
    }
    std::fs::write(dir.path().join("dvc.yaml"), yaml).unwrap();
    run(&["repro", "-q"])?;
    let times: Vec<Duration> = (0..3)
        .map(|_| {
            let clock = Instant::now();
            run(&["repro", "-q"]).map(|_| clock.elapsed())
        })
        .collect::<Option<_>>()?;
    Some(median(times))
}

/// The `asymflow` binary built beside this benchmark (`target/release/deps/..`).
fn asymflow_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap();
    [dir.join("asymflow"), dir.join("../asymflow")]
        .into_iter()
        .find(|p| p.is_file())
        .expect("build the binary first: cargo build --release")
}

/// Median wall time of `asymflow ARGS` in `dir` over `reps` runs (after one warm-up run).
fn time_command(dir: &Path, args: &[&str], reps: usize) -> Duration {
    let run = || {
        let clock = Instant::now();
        let out = Command::new(asymflow_binary())
            .args(args)
            .current_dir(dir)
            .env("ASYMFLOW_TEST_KINDS", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "asymflow {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        clock.elapsed()
    };
    run();
    median((0..reps).map(|_| run()).collect())
}

/// Peak resident memory of the largest child process so far, in MiB.
fn children_peak_mib() -> f64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}

fn report(what: &str, t: Duration, target_ms: f64) {
    let ms = t.as_secs_f64() * 1e3;
    let verdict = if ms < target_ms { "met" } else { "NOT met" };
    println!("  {what}: {ms:.1} ms (target under {target_ms:.0} ms: {verdict})");
}

fn whole_commands(registry: &Arc<Registry>) -> Duration {
    println!("whole commands (separate processes, median):");
    let dir = tempfile::tempdir().unwrap();
    report(
        "asymflow --version",
        time_command(dir.path(), &["--version"], 20),
        20.0,
    );
    println!(
        "    peak resident memory: {:.1} MiB (target under 40)",
        children_peak_mib()
    );
    report(
        "asymflow kinds",
        time_command(dir.path(), &["kinds"], 20),
        20.0,
    );

    let thousand = sweep_pipeline(dir.path(), 1000);
    let cache = Cache::new(&dir.path().join("cache"));
    run_once(&thousand, registry, &cache);
    let file = thousand.to_string_lossy().into_owned();
    report(
        "no-op run of 1,000 instances",
        time_command(dir.path(), &["run", &file, "--json"], 5),
        100.0,
    );
    let big = sweep_pipeline(dir.path(), 10_000);
    let file = big.to_string_lossy().into_owned();
    report(
        "plan of 10,000 instances",
        time_command(dir.path(), &["plan", &file, "--json"], 3),
        300.0,
    );
    let three = sweep_pipeline(dir.path(), 300);
    run_once(&three, registry, &cache);
    let file = three.to_string_lossy().into_owned();
    let t = time_command(dir.path(), &["run", &file, "--json"], 5);
    println!(
        "  no-op run of 300 instances: {:.1} ms",
        t.as_secs_f64() * 1e3
    );
    t
}

fn main() {
    let registry = test_registry();
    let whole_300 = whole_commands(&registry);
    match dvc_noop(300) {
        Some(theirs) => println!(
            "  dvc repro of 300 trivial stages (no-op): {:.0} ms: the asymflow command is {:.0}x faster (target at least 25x)",
            theirs.as_secs_f64() * 1e3,
            theirs.as_secs_f64() / whole_300.as_secs_f64()
        ),
        None => println!("  dvc not installed: `pip install --target ~/.cache/asymflow/dvc-py dvc` to compare"),
    }
    println!("in-process (no process start):");
    noop_rerun(1000, &registry);
    plan_many(10_000, &registry);
    noop_rerun(300, &registry);
}
