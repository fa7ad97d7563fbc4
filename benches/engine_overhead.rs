//! Engine overhead: a no-op rerun (everything cached) of a 1,000-instance sweep and `plan` of a
//! 10,000-instance sweep, with per-instance costs; and, where DVC is installed, the no-op rerun
//! of an equivalent 300-stage pipeline next to `dvc repro` in the same run (the ratio is what
//! to read; absolute times depend on the machine).
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
    for k in testing::kinds() {
        r.register(k);
    }
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
    let options = RunOptions {
        jobs: 2,
        keep_going: false,
        progress: false,
        remote: None,
    };
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
        "no-op rerun of {n} instances: {:.1} ms ({:.1} us per instance; cold run {:.1} s)",
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
        "plan of {n} instances: {:.1} ms ({:.1} us per instance)",
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

fn main() {
    let registry = test_registry();
    let thousand = noop_rerun(1000, &registry);
    println!(
        "  target: under 100 ms -> {}",
        if thousand < Duration::from_millis(100) {
            "met"
        } else {
            "NOT met"
        }
    );
    plan_many(10_000, &registry);
    let ours = noop_rerun(300, &registry);
    match dvc_noop(300) {
        Some(theirs) => println!(
            "no-op rerun of 300 trivial stages: asymflow {:.1} ms, dvc repro {:.0} ms: asymflow is {:.0}x faster",
            ours.as_secs_f64() * 1e3,
            theirs.as_secs_f64() * 1e3,
            theirs.as_secs_f64() / ours.as_secs_f64()
        ),
        None => println!("dvc not installed: `pip install --target ~/.cache/asymflow/dvc-py dvc` to compare"),
    }
}
