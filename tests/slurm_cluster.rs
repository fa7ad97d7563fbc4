//! The Slurm executor against a real single-node Slurm with two fake GPUs, started by
//! `scripts/services/slurm.sh up` (which prints the `SLURM_CONF` and `ASYMFLOW_TEST_SLURM`
//! these tests read). Without it each test prints one `skipped:` line and passes.
//!
//! The jobs run `tests/fixtures/slurm/fake-exec.sh`, which keeps the contract of
//! `asymflow exec JOB --result RESULT`; [`crate::slurm::job_command`] is the one place to
//! switch to the real command. The tests share one cluster, so they take turns.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use asymflow::exec::executor::{Executor, FailureReason, JobEvent, JobOutcome};
use asymflow::exec::slurm::{job_logs, ClassProfile, SlurmExecutor, SlurmProfile};
use asymflow::kind::Resource;
use serde_json::json;

use crate::slurm::{drain, failure, job, job_command, until_finished};

static CLUSTER: Mutex<()> = Mutex::new(());

/// The cluster, one test at a time; `None` (after one line) when it is not running.
fn cluster() -> Option<MutexGuard<'static, ()>> {
    if std::env::var_os("ASYMFLOW_TEST_SLURM").is_none() {
        println!(
            "skipped: slurm not available (as root: eval \"$(scripts/services/slurm.sh up)\")"
        );
        return None;
    }
    Some(CLUSTER.lock().unwrap_or_else(|e| e.into_inner()))
}

fn executor(max_jobs: Option<usize>) -> SlurmExecutor {
    executor_timed(max_jobs, "00:10:00")
}

/// The per-key job folders under `cache/slurm` (the `arrays/` folder holds the job arrays,
/// whose elements link to these).
fn job_folders(cache: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(cache.join("slurm"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n != "arrays"))
        .collect()
}

fn executor_timed(max_jobs: Option<usize>, time: &str) -> SlurmExecutor {
    executor_with(max_jobs, time, true)
}

fn executor_with(max_jobs: Option<usize>, time: &str, arrays: bool) -> SlurmExecutor {
    let profile = SlurmProfile {
        arrays: Some(arrays),
        partition: Some("debug".into()),
        time: Some(time.into()),
        poll_interval: Some(0.2),
        device: ClassProfile {
            gres: Some("gpu:1".into()),
            ..ClassProfile::default()
        },
        ..SlurmProfile::default()
    };
    SlurmExecutor::new(profile, job_command(), max_jobs).unwrap()
}

/// Waits for notes until `count` jobs report running.
fn wait_running(ex: &mut SlurmExecutor, count: usize) {
    let start = Instant::now();
    let mut running = 0;
    while running < count {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "only {running} of {count} jobs started: {:?}",
            ex.jobs()
        );
        match ex.next_event(Duration::from_millis(200)) {
            Some(JobEvent::Note { message, .. }) if message.contains("is running") => running += 1,
            Some(JobEvent::Finished { id, outcome }) => {
                panic!("job {id} ended early: {outcome:?}")
            }
            _ => {}
        }
    }
}

fn active(ids: &[String]) -> String {
    let out = Command::new("squeue")
        .args(["-h", "-t", "PD,R,CG", "-j", &ids.join(","), "-o", "%i %T"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn jobs_run_two_at_a_time_each_on_its_own_fake_gpu() {
    let Some(_cluster) = cluster() else { return };
    let project = tempfile::tempdir().unwrap();
    let mut ex = executor(None);
    for i in 0..4 {
        let j = job(project.path(), &format!("train{i}"), json!({"seconds": 2}));
        ex.submit(i, j).unwrap();
        ex.flush();
    }
    let done = drain(&mut ex, Duration::from_secs(120));
    let mut spans = Vec::new();
    for (id, outcome) in &done {
        let JobOutcome::Done(r) = outcome else {
            panic!("job {id}: {outcome:?}")
        };
        let gpu = r.provenance.visible_devices.clone().unwrap();
        assert!(
            gpu == "0" || gpu == "1",
            "job {id} saw CUDA_VISIBLE_DEVICES={gpu}"
        );
        spans.push((r.started, r.finished, gpu));
    }
    assert_eq!(spans.len(), 4);
    let mut overlaps = 0;
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            if a.0 < b.1 && b.0 < a.1 {
                overlaps += 1;
                assert_ne!(a.2, b.2, "two jobs at once on one GPU: {spans:?}");
            }
        }
    }
    assert!(overlaps >= 1, "no two jobs ran at once: {spans:?}");
}

#[test]
fn a_failing_job_is_reported_with_its_id_and_log_tail() {
    let Some(_cluster) = cluster() else { return };
    let project = tempfile::tempdir().unwrap();
    let mut ex = executor(None);
    ex.submit(0, job(project.path(), "nan", json!({"mode": "fail"})))
        .unwrap();
    ex.flush();
    ex.submit(1, job(project.path(), "segv", json!({"mode": "crash"})))
        .unwrap();
    ex.flush();
    let segv_id = ex.slurm_job_id(1).unwrap().to_string();
    let done = drain(&mut ex, Duration::from_secs(120));

    let nan = failure(&done[&0]);
    assert_eq!(nan.reason, FailureReason::Stage);
    assert!(nan.message.starts_with("loss is NaN"), "{nan:?}");
    assert!(
        nan.log_tail
            .as_deref()
            .unwrap()
            .contains("the stage failed"),
        "{nan:?}"
    );

    let segv = failure(&done[&1]);
    assert_eq!(
        segv.reason,
        FailureReason::Executor {
            job_id: segv_id.clone(),
            state: "FAILED".into()
        }
    );
    assert!(
        segv.message.contains(&format!("Slurm job {segv_id}")),
        "{segv:?}"
    );
    let tail = segv.log_tail.as_deref().unwrap();
    assert!(tail.contains("Segmentation fault"), "{tail}");
    assert!(
        tail.contains(&format!("asymflow: Slurm job {segv_id}")),
        "{tail}"
    );
}

#[test]
fn a_job_past_its_time_limit_is_reported_as_timeout() {
    let Some(_cluster) = cluster() else { return };
    let project = tempfile::tempdir().unwrap();
    // One minute is Slurm's smallest limit; slurmctld checks limits every 30 s.
    let mut ex = executor_timed(None, "1");
    ex.submit(0, job(project.path(), "slow", json!({"seconds": 300})))
        .unwrap();
    ex.flush();
    let id = ex.slurm_job_id(0).unwrap().to_string();
    let (_, outcome) = until_finished(&mut ex, 0, Duration::from_secs(180));
    let f = failure(&outcome);
    assert_eq!(
        f.reason,
        FailureReason::Executor {
            job_id: id,
            state: "TIMEOUT".into()
        }
    );
    assert!(f.message.contains("raise `time`"), "{f:?}");
    let tail = f.log_tail.as_deref().unwrap();
    assert!(tail.contains("DUE TO TIME LIMIT"), "{tail}");
}

#[test]
fn scancel_from_outside_is_reported_as_cancelled() {
    let Some(_cluster) = cluster() else { return };
    let project = tempfile::tempdir().unwrap();
    let mut ex = executor(None);
    ex.submit(0, job(project.path(), "long", json!({"seconds": 60})))
        .unwrap();
    ex.flush();
    let id = ex.slurm_job_id(0).unwrap().to_string();
    wait_running(&mut ex, 1);
    let status = Command::new("scancel").arg(&id).status().unwrap();
    assert!(status.success());
    let (_, outcome) = until_finished(&mut ex, 0, Duration::from_secs(60));
    let f = failure(&outcome);
    assert_eq!(
        f.reason,
        FailureReason::Executor {
            job_id: id,
            state: "CANCELLED".into()
        }
    );
    assert!(f.message.contains("from outside"), "{f:?}");
}

#[test]
fn a_requeued_job_is_followed_to_its_result() {
    let Some(_cluster) = cluster() else { return };
    let project = tempfile::tempdir().unwrap();
    let mut ex = executor(None);
    let j = job(project.path(), "requeued", json!({"seconds": 4}));
    let log_dir = j.cache_dir.clone();
    let key = j.key.clone();
    ex.submit(0, j).unwrap();
    ex.flush();
    let id = ex.slurm_job_id(0).unwrap().to_string();
    wait_running(&mut ex, 1);
    // Slurm reports RUNNING before slurmd has started the batch script; requeued before its
    // first line, the job would never print "(restart 0)". Requeue once the script is going.
    let start = Instant::now();
    while !job_logs(&log_dir, &key)
        .iter()
        .any(|log| std::fs::read_to_string(log).is_ok_and(|text| text.contains("fake-exec: key=")))
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "job {id} is running but its script never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let scontrol = |args: &[&str]| Command::new("scontrol").args(args).status().unwrap();
    assert!(scontrol(&["requeue", &id]).success());
    // A requeued job waits two minutes before it may start again; once it waits, make it
    // eligible now.
    let start = Instant::now();
    loop {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "job {id} was not requeued"
        );
        let out = Command::new("squeue")
            .args(["-h", "-j", &id, "-o", "%T|%r"])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&out.stdout).trim() == "PENDING|BeginTime" {
            assert!(scontrol(&["update", &format!("jobid={id}"), "StartTime=now"]).success());
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let (notes, outcome) = until_finished(&mut ex, 0, Duration::from_secs(60));
    assert!(
        matches!(outcome, JobOutcome::Done(_)),
        "{outcome:?} {notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains(&format!("Slurm job {id} was requeued (restart 1)"))),
        "{notes:?}"
    );
    let logs = job_logs(&log_dir, &key);
    assert_eq!(logs.len(), 1, "one job id across the requeue");
    let log = std::fs::read_to_string(&logs[0]).unwrap();
    assert!(
        log.contains("(restart 0)") && log.contains("(restart 1)"),
        "{log}"
    );
}

#[test]
fn ctrl_c_cancels_every_job_the_run_submitted() {
    let Some(_cluster) = cluster() else { return };
    let project = tempfile::tempdir().unwrap();
    let mut ex = executor(None);
    for i in 0..3 {
        let j = job(project.path(), &format!("long{i}"), json!({"seconds": 60}));
        ex.submit(i, j).unwrap();
        ex.flush();
    }
    wait_running(&mut ex, 2);
    let ids = ex.cancel_all();
    assert_eq!(ids.len(), 3);
    let done = drain(&mut ex, Duration::from_secs(60));
    assert_eq!(done.len(), 3);
    for outcome in done.values() {
        assert_eq!(
            failure(outcome).reason,
            FailureReason::Interrupted,
            "{outcome:?}"
        );
    }
    assert_eq!(active(&ids), "", "jobs still queued or running");
}

#[test]
fn a_restarted_engine_follows_its_jobs_and_submits_nothing_twice() {
    let Some(_cluster) = cluster() else { return };
    let project = tempfile::tempdir().unwrap();
    let slow = job(project.path(), "slow", json!({"seconds": 4}));
    let quick = job(project.path(), "quick", json!({}));
    let mut leases = BTreeMap::new();
    {
        let mut first = executor(None);
        first.submit(0, slow.clone()).unwrap();
        first.flush();
        first.submit(1, quick.clone()).unwrap();
        first.flush();
        leases.insert(0, first.slurm_job_id(0).unwrap().to_string());
        leases.insert(1, first.slurm_job_id(1).unwrap().to_string());
        // The engine dies here, without shutdown: its jobs go on.
    }
    let result = |key: &str, id: &str| {
        project
            .path()
            .join("cache/slurm")
            .join(key)
            .join(format!("{id}.result.json"))
    };
    let start = Instant::now();
    while !result(&quick.key, &leases[&1]).exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the quick job never finished"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        !active(&[leases[&0].clone()]).is_empty(),
        "the slow job should still run"
    );

    // Without arrays `--max-jobs` counts jobs (with them it throttles each array's `%K`).
    let mut second = executor_with(Some(2), "00:10:00", false);
    second.adopt(10, &slow, &leases[&0]).unwrap();
    second.adopt(11, &quick, &leases[&1]).unwrap();
    assert!(
        !second.has_room(Resource::Device),
        "adopted jobs count under --max-jobs"
    );
    let done = drain(&mut second, Duration::from_secs(60));
    assert!(matches!(done[&10], JobOutcome::Done(_)), "{done:?}");
    assert!(matches!(done[&11], JobOutcome::Done(_)), "{done:?}");
    for j in [&slow, &quick] {
        assert_eq!(
            job_logs(&j.cache_dir, &j.key).len(),
            1,
            "one Slurm job per key"
        );
    }
}

#[test]
fn the_service_script_reports_a_usable_cluster() {
    let Some(_cluster) = cluster() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/services/slurm.sh");
    let out = Command::new("bash").arg(script).arg("up").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("export SLURM_CONF="), "{text}");
    let sinfo = Command::new("sinfo")
        .args(["-h", "-o", "%G"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&sinfo.stdout).contains("gpu:fake:2"));
}

/// The issue's scenario with the engine: `asymflow run --executor slurm` sends the device
/// stages to Slurm (two at a time on the two fake GPUs), runs the CPU stages here, and ends
/// with the same results as a local run of the same pipeline.
#[test]
fn a_pipeline_run_with_executor_slurm_matches_a_local_run() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let pipeline = r#"
[pipeline]
name = "cluster"

[sweep]
seed = [0, 1]

[stages.split]
kind = "test-echo"
params = { value = 1 }

[stages.train]
kind = "test-echo"
inputs = { input = "split" }
params = { value = "${sweep.seed}", device = true, sleep_ms = 1500 }

[stages.embed]
kind = "test-echo"
inputs = { input = "train" }
params = { value = 10, device = true }

[stages.evaluate]
kind = "test-echo"
inputs = { input = "embed" }
params = { value = 100 }
"#;
    let profile = "[executor.slurm]\npartition = \"debug\"\ntime = \"00:10:00\"\npoll_interval = 0.2\n\n[executor.slurm.device]\ngres = \"gpu:1\"\n";
    let values = |dir: &Path, extra: &[&str]| {
        run_then_read(
            dir,
            "pipelines/cluster.toml",
            extra,
            "value",
            &[("ASYMFLOW_TEST_KINDS", "worker")],
        )
    };
    // The cache must be where the compute node sees it: this machine's own disk.
    let on_slurm = tempfile::tempdir().unwrap();
    let here = tempfile::tempdir().unwrap();
    for dir in [on_slurm.path(), here.path()] {
        std::fs::create_dir_all(dir.join("pipelines")).unwrap();
        std::fs::write(dir.join("pipelines/cluster.toml"), pipeline).unwrap();
    }
    std::fs::write(on_slurm.path().join("asymflow.toml"), profile).unwrap();
    let cluster_values = values(on_slurm.path(), &["--executor", "slurm", "--max-jobs", "2"]);
    let local_values = values(here.path(), &[]);
    assert_eq!(cluster_values, local_values);
    assert_eq!(cluster_values.len(), 7, "{cluster_values:?}");
    // The device stages ran as Slurm jobs (their job folders are in the cache), each on its
    // own fake GPU, and the CPU stages did not.
    let jobs = job_folders(&on_slurm.path().join("cache")).len();
    assert_eq!(jobs, 4, "two trainings and two embeddings went to Slurm");
}

/// Runs `asymflow run FILE --json EXTRA` in `dir` (with `env`), then reads `metric` of every
/// instance that has it: label -> value.
fn run_then_read(
    dir: &Path,
    file: &str,
    extra: &[&str],
    metric: &str,
    env: &[(&str, &str)],
) -> BTreeMap<String, f64> {
    let asymflow = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_asymflow"));
        cmd.args(args)
            .current_dir(dir)
            .env_remove("ASYMFLOW_CACHE")
            .env_remove("ASYMFLOW_TEST_KINDS");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "asymflow {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let mut args = vec!["run", file, "--json"];
    args.extend_from_slice(extra);
    asymflow(&args);
    let rows: serde_json::Value =
        serde_json::from_slice(&asymflow(&["metrics", file, "--json"])).unwrap();
    let rows = rows
        .as_array()
        .cloned()
        .or_else(|| rows["instances"].as_array().cloned())
        .expect("metrics --json lists instances");
    rows.iter()
        .filter_map(|r| {
            let label = r["label"].as_str().or(r["instance"].as_str())?;
            Some((label.to_string(), r["metrics"][metric].as_f64()?))
        })
        .collect()
}

/// The profile of the engine-level tests on this cluster.
const ENGINE_PROFILE: &str = "[executor.slurm]\npartition = \"debug\"\ntime = \"00:10:00\"\npoll_interval = 0.2\n\n[executor.slurm.device]\ngres = \"gpu:1\"\n";

/// A project with [`crate::slurm_engine::PIPELINE`] whose trainings sleep `ms` each.
fn engine_project(root: &Path, ms: u64) -> std::path::PathBuf {
    let dir = crate::slurm_engine::project(root, Some(ENGINE_PROFILE));
    let slow = crate::slurm_engine::PIPELINE.replace(
        "device = true }",
        &format!("device = true, sleep_ms = {ms} }}"),
    );
    assert_ne!(slow, crate::slurm_engine::PIPELINE);
    std::fs::write(dir.join("pipelines/engine.toml"), slow).unwrap();
    dir
}

/// The Slurm job ids an engine's log says it submitted.
fn submitted(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|l| l.split(" as Slurm job ").nth(1))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// The issue's restart scenario with the engine: `asymflow run --executor slurm` killed with
/// SIGKILL while its jobs run, one finishing while no engine watches; the restarted run
/// follows both jobs from the leases, submits nothing, and ends with a local run's results.
#[test]
fn a_killed_engine_restarted_follows_its_jobs_from_the_leases() {
    use crate::slurm_engine::{local_values, spawn_run, values, wait_exit, wait_for};
    let Some(_cluster) = cluster() else { return };
    let root = tempfile::tempdir().unwrap();
    let dir = engine_project(root.path(), 4000);
    let first_log = dir.join("first.log");
    let mut first = spawn_run(&dir, &first_log);
    let text = wait_for(&first_log, "is running", 2, Duration::from_secs(90));
    let ids = submitted(&text);
    assert_eq!(ids.len(), 2, "{text}");
    first.kill().unwrap();
    first.wait().unwrap();
    assert_eq!(
        active(&ids).lines().count(),
        2,
        "the jobs outlive the engine"
    );
    // Let one job finish while no engine watches.
    let start = Instant::now();
    while active(&ids).lines().count() == 2 {
        assert!(start.elapsed() < Duration::from_secs(60), "no job ended");
        std::thread::sleep(Duration::from_millis(100));
    }
    let second_log = dir.join("second.log");
    let mut second = spawn_run(&dir, &second_log);
    let exit = wait_exit(&mut second, Duration::from_secs(120), &second_log);
    let text = std::fs::read_to_string(&second_log).unwrap();
    assert!(exit.success(), "{exit:?}\n{text}");
    assert_eq!(
        text.matches("submitted by an earlier run").count(),
        2,
        "{text}"
    );
    assert!(submitted(&text).is_empty(), "submitted again:\n{text}");
    let folders = job_folders(&dir.join("cache"));
    assert_eq!(folders.len(), 2, "{folders:?}");
    for folder in &folders {
        let key = folder.file_name().unwrap().to_str().unwrap();
        assert_eq!(
            job_logs(&dir.join("cache"), key).len(),
            1,
            "one Slurm job for {key}"
        );
    }
    assert_eq!(values(&dir), local_values());
}

/// Ctrl-C at engine level: `run --executor slurm` scancels what it submitted, says so per
/// job, prints its summary and exits 130; nothing it submitted stays queued or running.
#[test]
fn ctrl_c_on_the_engine_scancels_its_jobs_and_exits_130() {
    use crate::slurm_engine::{spawn_run, wait_exit, wait_for};
    let Some(_cluster) = cluster() else { return };
    let root = tempfile::tempdir().unwrap();
    let dir = engine_project(root.path(), 60_000);
    let log = dir.join("run.log");
    let mut run = spawn_run(&dir, &log);
    let text = wait_for(&log, "is running", 2, Duration::from_secs(90));
    let ids = submitted(&text);
    assert_eq!(ids.len(), 2, "{text}");
    let pid = run.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let exit = wait_exit(&mut run, Duration::from_secs(60), &log);
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(exit.code(), Some(130), "{text}");
    for id in &ids {
        assert!(
            text.contains(&format!("Slurm job {id} was cancelled by this run")),
            "{text}"
        );
    }
    assert!(
        text.contains("1 ran, 0 cached, 0 failed, 4 skipped"),
        "{text}"
    );
    assert_eq!(active(&ids), "", "jobs still queued or running");
}

/// The real kinds, tiny: a split, a teacher per seed and its embeddings as Slurm jobs (CPU
/// jobs: this machine has no CUDA, so the device class asks for no GPU), evaluation and the
/// report here. Every metric equals a local run's, with the same threads per job.
const REAL: &str = r#"
[pipeline]
name = "real"

[sweep]
seed = [0, 1]

[stages.split]
kind = "split"
params = { dataset = "synthetic", classes = 8, per_class = 8, image_size = 32 }

[stages.teacher]
kind = "train-teacher"
inputs = { split = "split" }
params = { arch = "resnet18", width = 8, stem = "small", embed_dim = 16, resolution = 32,
           loss = "norm-softmax", scale = 16.0, optimizer = "adam", lr = 2e-3, epochs = 1,
           batch_size = 16, per_class = 0, seed = "${sweep.seed}" }

[stages.emb]
kind = "embed"
inputs = { split = "split", model = "teacher" }
params = { resolution = 32 }

[stages.eval]
kind = "evaluate"
inputs = { query = "emb", database = "emb" }

[stages.table]
kind = "report"
inputs = { results = "eval" }
params = { metrics = ["map"], over = "seed", plot_xy = [], title = "Real kinds on Slurm" }
"#;

#[test]
fn the_real_kinds_run_as_slurm_jobs_and_compute_what_they_compute_here() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let profile = "[executor.slurm]\npartition = \"debug\"\ntime = \"00:10:00\"\npoll_interval = 0.2\n\n[executor.slurm.device]\ncpus_per_task = 1\n";
    let maps =
        |dir: &Path, extra: &[&str]| run_then_read(dir, "pipelines/real.toml", extra, "map", &[]);
    let on_slurm = tempfile::tempdir().unwrap();
    let here = tempfile::tempdir().unwrap();
    for dir in [on_slurm.path(), here.path()] {
        std::fs::create_dir_all(dir.join("pipelines")).unwrap();
        std::fs::write(dir.join("pipelines/real.toml"), REAL).unwrap();
    }
    std::fs::write(on_slurm.path().join("asymflow.toml"), profile).unwrap();
    let cluster_maps = maps(on_slurm.path(), &["--executor", "slurm", "--max-jobs", "2"]);
    // One thread per training here too, as each Slurm job has (cpus_per_task = 1).
    let local_maps = maps(here.path(), &["--device-slots", "2"]);
    assert_eq!(cluster_maps.len(), 2, "{cluster_maps:?}");
    assert_eq!(cluster_maps, local_maps);
    let jobs = job_folders(&on_slurm.path().join("cache")).len();
    assert_eq!(jobs, 4, "two teachers and two embeddings went to Slurm");
    for dir in [on_slurm.path(), here.path()] {
        let table = std::fs::read_to_string(dir.join("reports/real/table/table.md"))
            .expect("the report is published");
        assert!(table.contains("Real kinds on Slurm"), "{table}");
    }
}
