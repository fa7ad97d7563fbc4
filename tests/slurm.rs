//! The Slurm executor against fake `sbatch`/`squeue`/`scontrol`/`sacct`/`scancel`
//! (tests/fixtures/slurm/bin): every state a job passes through, each failure state, requeue,
//! cancel, `--max-jobs`, purged jobs with and without accounting, and an engine restart.
//! The test moves each fake job along and runs its batch script itself, so nothing depends on
//! timing. `slurm_cluster.rs` runs the same executor against a real Slurm.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use asymflow::exec::executor::{
    Executor, ExecutorError, FailureReason, Job, JobEvent, JobFailure, JobId, JobOutcome, Resources,
};
use asymflow::exec::slurm::{
    job_logs, recorded_outcome, ClassProfile, JobCommand, SlurmExecutor, SlurmProfile,
};
use asymflow::kind::{Device, Params, Resource};
use serde_json::{json, Value};

/// The stand-in for `asymflow exec` (same contract): switch to
/// `JobCommand::asymflow_exec(Path::new(env!("CARGO_BIN_EXE_asymflow")))` once `exec` exists.
pub fn job_command() -> JobCommand {
    let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/slurm/fake-exec.sh");
    JobCommand::new([
        fake.to_string_lossy().into_owned(),
        "{job}".into(),
        "--result".into(),
        "{result}".into(),
    ])
}

/// A device-class job of `stage` in `project` (cache in `project/cache`); `params` choose
/// what the fake exec does (`mode`, `seconds`).
pub fn job(project: &Path, stage: &str, params: Value) -> Job {
    let Value::Object(map) = params.clone() else {
        panic!("params must be an object")
    };
    let key = blake3::hash(format!("{stage}{params}{}", project.display()).as_bytes())
        .to_hex()
        .to_string();
    Job {
        key,
        key_json: "{}".into(),
        label: format!("{stage}[seed=0]"),
        pipeline: "slurm-test".into(),
        stage: stage.into(),
        kind: "test".into(),
        binding: BTreeMap::new(),
        params: Params(map.into_iter().collect()),
        inputs: BTreeMap::new(),
        resources: Resources {
            class: Resource::Device,
            device: Device::Cpu,
            threads: 1,
        },
        project_dir: project.to_path_buf(),
        cache_dir: project.join("cache"),
        timeout_seconds: None,
    }
}

/// Events until job `id` finishes (at most `limit`): its notes and its outcome.
pub fn until_finished(
    ex: &mut SlurmExecutor,
    id: JobId,
    limit: Duration,
) -> (Vec<String>, JobOutcome) {
    let start = Instant::now();
    let mut notes = Vec::new();
    while start.elapsed() < limit {
        match ex.next_event(Duration::from_millis(200)) {
            Some(JobEvent::Finished { id: got, outcome }) if got == id => return (notes, outcome),
            Some(JobEvent::Note { id: got, message }) if got == id => notes.push(message),
            _ => {}
        }
    }
    panic!("job {id} did not finish within {limit:?}; notes: {notes:?}")
}

/// Every event within `limit`, until no job is followed.
pub fn drain(ex: &mut SlurmExecutor, limit: Duration) -> BTreeMap<JobId, JobOutcome> {
    let start = Instant::now();
    let mut done = BTreeMap::new();
    while start.elapsed() < limit {
        match ex.next_event(Duration::from_millis(200)) {
            Some(JobEvent::Finished { id, outcome }) => {
                done.insert(id, outcome);
            }
            Some(_) => {}
            None if ex.jobs().is_empty() => return done,
            None => {}
        }
    }
    panic!("jobs still followed after {limit:?}: {:?}", ex.jobs())
}

/// The notes that arrive within `wait` (for jobs that do not finish).
fn notes_for(ex: &mut SlurmExecutor, wait: Duration) -> Vec<String> {
    let start = Instant::now();
    let mut notes = Vec::new();
    while start.elapsed() < wait {
        match ex.next_event(Duration::from_millis(50)) {
            Some(JobEvent::Note { message, .. }) => notes.push(message),
            Some(other) => panic!("unexpected {other:?}"),
            None => {}
        }
    }
    notes
}

pub fn failure(outcome: &JobOutcome) -> &JobFailure {
    match outcome {
        JobOutcome::Failed(f) => f,
        JobOutcome::Done(_) => panic!("expected a failure, got {outcome:?}"),
    }
}

/// A fake cluster in a temporary folder: the fixture tools in `bin/`, their state beside.
pub struct FakeSlurm {
    dir: tempfile::TempDir,
}

impl FakeSlurm {
    pub fn new() -> FakeSlurm {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/slurm/bin");
        for entry in std::fs::read_dir(src).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), bin.join(entry.file_name())).unwrap();
        }
        std::fs::create_dir_all(dir.path().join("state/jobs")).unwrap();
        FakeSlurm { dir }
    }

    pub fn project(&self) -> PathBuf {
        let p = self.dir.path().join("project");
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    fn executor(&self, max_jobs: Option<usize>) -> SlurmExecutor {
        self.executor_with(max_jobs, None)
    }

    fn executor_with(&self, max_jobs: Option<usize>, setup: Option<&str>) -> SlurmExecutor {
        let profile = SlurmProfile {
            setup: setup.map(str::to_string),
            ..self.profile()
        };
        SlurmExecutor::new(profile, job_command(), max_jobs).unwrap()
    }

    /// The profile of this cluster: its tools, a fast poll, a GPU per device job.
    pub fn profile(&self) -> SlurmProfile {
        SlurmProfile {
            partition: Some("gpu".into()),
            time: Some("01:00:00".into()),
            poll_interval: Some(0.02),
            bin_dir: Some(self.dir.path().join("bin")),
            device: ClassProfile {
                gres: Some("gpu:1".into()),
                ..ClassProfile::default()
            },
            ..SlurmProfile::default()
        }
    }

    /// The folder of the fake tools (the profile's `bin_dir`).
    pub fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    /// The ids of the jobs `sbatch` took (`ID`, or `ID_INDEX` for array elements), in order.
    pub fn job_ids(&self) -> Vec<String> {
        let mut ids: Vec<(u64, u64, String)> = std::fs::read_dir(self.state().join("jobs"))
            .unwrap()
            .filter_map(|e| {
                let name = e.ok()?.file_name().to_str()?.to_string();
                let (a, t) = name.split_once('_').unwrap_or((&name, "0"));
                Some((a.parse().ok()?, t.parse().ok()?, name))
            })
            .collect();
        ids.sort_unstable();
        ids.into_iter().map(|(_, _, id)| id).collect()
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    pub fn set(&self, id: &str, field: &str, value: &str) {
        std::fs::write(
            self.state().join("jobs").join(id).join(field),
            format!("{value}\n"),
        )
        .unwrap();
    }

    pub fn get(&self, id: &str, field: &str) -> String {
        std::fs::read_to_string(self.state().join("jobs").join(id).join(field))
            .unwrap()
            .trim()
            .to_string()
    }

    pub fn running(&self, id: &str) {
        self.set(id, "state", "RUNNING");
        self.set(id, "reason", "None");
        self.set(id, "nodes", "gpu07");
    }

    /// Runs job `id`'s batch script as slurmd would (log appended), and records how it ended.
    pub fn run(&self, id: &str) -> i32 {
        let log = self.get(id, "output");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let mut cmd = Command::new("bash");
        if let Some((array, index)) = id.split_once('_') {
            cmd.env("SLURM_ARRAY_JOB_ID", array)
                .env("SLURM_ARRAY_TASK_ID", index);
        }
        let status = cmd
            .arg(self.state().join("jobs").join(id).join("script"))
            .env("SLURM_JOB_ID", id.replace('_', "0"))
            .env("CUDA_VISIBLE_DEVICES", "0")
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .status()
            .unwrap();
        let code = status.code().unwrap_or(-1);
        self.set(id, "state", if code == 0 { "COMPLETED" } else { "FAILED" });
        self.set(id, "exit_code", &format!("{code}:0"));
        code
    }

    pub fn append_log(&self, id: &str, text: &str) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.get(id, "output"))
            .unwrap();
        writeln!(f, "{text}").unwrap();
    }

    /// How many times `sbatch` was called.
    pub fn sbatch_calls(&self) -> usize {
        self.calls()
            .iter()
            .filter(|c| c.starts_with("sbatch"))
            .count()
    }

    pub fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.state().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

#[test]
fn a_job_goes_from_sbatch_through_the_queue_to_its_result() {
    let fake = FakeSlurm::new();
    let project = fake.project();
    let mut ex = fake.executor(None);
    let j = job(&project, "teacher", json!({"mode": "ok"}));
    let key = j.key.clone();
    ex.submit(0, j).unwrap();
    ex.flush();
    let id = ex.slurm_job_id(0).unwrap().to_string();
    assert_eq!(id, "100");

    let args: Vec<String> = fake.get(&id, "args").lines().map(str::to_string).collect();
    assert!(args.contains(&"--parsable".to_string()), "{args:?}");
    assert!(
        args.contains(&format!(
            "--job-name=teacher_seed=0-asymflow-{}",
            &key[..16]
        )),
        "{args:?}"
    );
    assert!(args.contains(&"--gres=gpu:1".to_string()), "{args:?}");
    assert!(args.contains(&"--partition=gpu".to_string()), "{args:?}");
    let log = fake.get(&id, "output");
    assert_eq!(
        PathBuf::from(&log),
        project.join("cache/slurm").join(&key).join("100.log")
    );

    let job_file = project.join("cache/slurm").join(&key).join("job.json");
    let written: Job = serde_json::from_slice(&std::fs::read(job_file).unwrap()).unwrap();
    assert_eq!(
        written.resources.device,
        Device::Cuda(0),
        "a GPU job sees its GPU as cuda:0"
    );

    let notes = notes_for(&mut ex, Duration::from_millis(150));
    assert!(
        notes[0].starts_with("submitted teacher[seed=0] as Slurm job 100"),
        "{notes:?}"
    );
    assert!(
        notes.contains(&"waiting in Slurm's queue: 1 job (Priority)".to_string()),
        "{notes:?}"
    );
    fake.running(&id);
    let notes = notes_for(&mut ex, Duration::from_millis(150));
    assert_eq!(notes, ["Slurm job 100 is running on gpu07"]);
    assert_eq!(ex.jobs()[0].state.as_deref(), Some("RUNNING"));

    assert_eq!(fake.run(&id), 0);
    let (_, outcome) = until_finished(&mut ex, 0, Duration::from_secs(5));
    let JobOutcome::Done(result) = outcome else {
        panic!("expected done, got {outcome:?}")
    };
    assert_eq!(result.provenance.visible_devices.as_deref(), Some("0"));
    assert_eq!(result.metrics["value"], 1.0);
    assert!(ex.jobs().is_empty());
    assert_eq!(job_logs(&project.join("cache"), &key), [PathBuf::from(log)]);
}

#[test]
fn polls_batch_every_job_into_one_squeue_call() {
    let fake = FakeSlurm::new();
    let project = fake.project();
    let mut ex = fake.executor(None);
    for i in 0..3 {
        ex.submit(i, job(&project, &format!("s{i}"), json!({})))
            .unwrap();
        ex.flush();
    }
    notes_for(&mut ex, Duration::from_millis(100));
    let squeues: Vec<String> = fake
        .calls()
        .into_iter()
        .filter(|c| c.starts_with("squeue"))
        .collect();
    assert!(!squeues.is_empty());
    assert!(
        squeues
            .iter()
            .all(|c| c == "squeue -h -r -t all -j 100,101,102 -o %i|%T|%r|%N"),
        "{squeues:?}"
    );
    // Pending jobs never cost a scontrol or sacct call.
    assert!(!fake
        .calls()
        .iter()
        .any(|c| c.starts_with("scontrol") || c.starts_with("sacct")));
}

#[test]
fn each_failure_state_is_reported_with_the_job_id_and_the_log_tail() {
    for state in [
        "TIMEOUT",
        "OUT_OF_MEMORY",
        "NODE_FAIL",
        "CANCELLED",
        "BOOT_FAIL",
        "PREEMPTED",
    ] {
        let fake = FakeSlurm::new();
        let project = fake.project();
        let mut ex = fake.executor(None);
        ex.submit(0, job(&project, "teacher", json!({}))).unwrap();
        ex.flush();
        fake.running("100");
        fake.append_log(
            "100",
            &format!("epoch 3 of 10\nslurmstepd: error: *** JOB 100 {state} ***"),
        );
        fake.set("100", "state", state);
        let (_, outcome) = until_finished(&mut ex, 0, Duration::from_secs(5));
        let f = failure(&outcome);
        assert_eq!(
            f.reason,
            FailureReason::Executor {
                job_id: "100".into(),
                state: state.into()
            },
            "{state}"
        );
        assert!(
            f.message.contains("Slurm job 100") && f.message.contains("100.log"),
            "{f:?}"
        );
        let tail = f.log_tail.as_deref().unwrap();
        assert!(
            tail.contains(&format!("*** JOB 100 {state} ***")),
            "{state}: {tail}"
        );
    }
}

#[test]
fn a_stage_failure_and_a_crash_come_from_the_job_files() {
    let fake = FakeSlurm::new();
    let project = fake.project();
    let mut ex = fake.executor(None);
    ex.submit(0, job(&project, "nan", json!({"mode": "fail"})))
        .unwrap();
    ex.flush();
    ex.submit(1, job(&project, "segv", json!({"mode": "crash"})))
        .unwrap();
    ex.flush();
    assert_eq!(fake.run("100"), 1);
    assert_eq!(fake.run("101"), 139);
    let done = drain(&mut ex, Duration::from_secs(5));

    let nan = failure(&done[&0]);
    assert_eq!(
        nan.reason,
        FailureReason::Stage,
        "the result file's own reason"
    );
    assert!(nan.message.starts_with("loss is NaN at epoch 3"), "{nan:?}");
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
            job_id: "101".into(),
            state: "FAILED".into()
        }
    );
    assert!(segv.message.contains("exited with status 139"), "{segv:?}");
    assert!(
        segv.log_tail
            .as_deref()
            .unwrap()
            .contains("Segmentation fault"),
        "{segv:?}"
    );
}

#[test]
fn a_requeued_job_is_followed_to_its_result() {
    let fake = FakeSlurm::new();
    let project = fake.project();
    let mut ex = fake.executor(None);
    ex.submit(0, job(&project, "teacher", json!({}))).unwrap();
    ex.flush();
    fake.running("100");
    notes_for(&mut ex, Duration::from_millis(100));
    fake.set("100", "state", "PREEMPTED");
    let notes = notes_for(&mut ex, Duration::from_millis(30));
    assert!(
        notes.iter().any(|n| n.contains("preempted; waiting")),
        "{notes:?}"
    );
    fake.set("100", "state", "PENDING");
    fake.set("100", "restarts", "1");
    let notes = notes_for(&mut ex, Duration::from_millis(100));
    assert!(
        notes.contains(&"Slurm job 100 was requeued (restart 1); following it".to_string()),
        "{notes:?}"
    );
    fake.running("100");
    assert_eq!(fake.run("100"), 0);
    let (notes, outcome) = until_finished(&mut ex, 0, Duration::from_secs(5));
    assert!(
        matches!(outcome, JobOutcome::Done(_)),
        "{outcome:?} {notes:?}"
    );
    assert_eq!(fake.sbatch_calls(), 1);
}

#[test]
fn cancel_scancels_and_reports_an_interruption() {
    let fake = FakeSlurm::new();
    let project = fake.project();
    let mut ex = fake.executor(None);
    ex.submit(0, job(&project, "a", json!({}))).unwrap();
    ex.flush();
    ex.submit(1, job(&project, "b", json!({}))).unwrap();
    ex.flush();
    ex.submit(2, job(&project, "c", json!({}))).unwrap();
    ex.flush();
    fake.running("100");
    ex.cancel(0);
    assert!(
        fake.calls().contains(&"scancel 100".to_string()),
        "{:?}",
        fake.calls()
    );
    let (_, outcome) = until_finished(&mut ex, 0, Duration::from_secs(5));
    assert_eq!(failure(&outcome).reason, FailureReason::Interrupted);
    // Ctrl-C: everything left, in one scancel.
    assert_eq!(ex.cancel_all(), ["101", "102"]);
    assert!(
        fake.calls().contains(&"scancel 101 102".to_string()),
        "{:?}",
        fake.calls()
    );
    let done = drain(&mut ex, Duration::from_secs(5));
    assert!(
        done.values()
            .all(|o| failure(o).reason == FailureReason::Interrupted),
        "{done:?}"
    );
    assert_eq!(fake.get("102", "state"), "CANCELLED");
}

#[test]
fn shutdown_cancels_what_is_still_queued() {
    let fake = FakeSlurm::new();
    let project = fake.project();
    let mut ex = fake.executor(None);
    ex.submit(0, job(&project, "a", json!({}))).unwrap();
    ex.flush();
    ex.shutdown();
    assert_eq!(fake.get("100", "state"), "CANCELLED");
    assert!(ex.jobs().is_empty());
}

#[test]
fn max_jobs_caps_what_is_queued_at_once() {
    let fake = FakeSlurm::new();
    let project = fake.project();
    let profile = SlurmProfile {
        arrays: Some(false),
        ..fake.profile()
    };
    let mut ex = SlurmExecutor::new(profile, job_command(), Some(2)).unwrap();
    assert!(ex.has_room(Resource::Device));
    ex.submit(0, job(&project, "a", json!({}))).unwrap();
    ex.flush();
    ex.submit(1, job(&project, "b", json!({}))).unwrap();
    ex.flush();
    assert!(!ex.has_room(Resource::Device));
    assert_eq!(fake.run("100"), 0);
    until_finished(&mut ex, 0, Duration::from_secs(5));
    assert!(ex.has_room(Resource::Device));
    assert!(matches!(
        SlurmExecutor::new(SlurmProfile::default(), job_command(), Some(0)),
        Err(ExecutorError::Other(m)) if m.contains("--max-jobs")
    ));
}

#[test]
fn a_purged_job_is_read_from_sacct_or_else_from_its_files() {
    // With accounting: sacct tells the state of a job slurmctld forgot.
    let fake = FakeSlurm::new();
    std::fs::write(fake.state().join("accounting"), "").unwrap();
    let project = fake.project();
    let mut ex = fake.executor(None);
    ex.submit(0, job(&project, "a", json!({}))).unwrap();
    ex.flush();
    fake.set("100", "state", "TIMEOUT");
    fake.set("100", "purged", "");
    let (_, outcome) = until_finished(&mut ex, 0, Duration::from_secs(5));
    assert!(
        matches!(&failure(&outcome).reason, FailureReason::Executor { state, .. } if state == "TIMEOUT"),
        "{outcome:?}"
    );
    assert!(fake
        .calls()
        .iter()
        .any(|c| c.starts_with("sacct -n -P -X -j 100")));

    // Without: the result file decides, and sacct is asked only once per run.
    let fake = FakeSlurm::new();
    let project = fake.project();
    let mut ex = fake.executor(None);
    ex.submit(0, job(&project, "a", json!({}))).unwrap();
    ex.flush();
    ex.submit(1, job(&project, "b", json!({}))).unwrap();
    ex.flush();
    assert_eq!(fake.run("100"), 0);
    fake.set("100", "purged", "");
    let (_, outcome) = until_finished(&mut ex, 0, Duration::from_secs(5));
    assert!(matches!(outcome, JobOutcome::Done(_)), "{outcome:?}");
    fake.set("101", "purged", "");
    let (_, outcome) = until_finished(&mut ex, 1, Duration::from_secs(5));
    assert!(
        matches!(&failure(&outcome).reason, FailureReason::Executor { state, .. } if state == "UNKNOWN"),
        "{outcome:?}"
    );
    assert_eq!(
        fake.calls()
            .iter()
            .filter(|c| c.starts_with("sacct"))
            .count(),
        1
    );
}

#[test]
fn a_restarted_engine_follows_the_job_instead_of_submitting_again() {
    let fake = FakeSlurm::new();
    let project = fake.project();
    let running = job(&project, "a", json!({}));
    let finished = job(&project, "b", json!({}));
    let (ran, done) = {
        let mut first = fake.executor(None);
        first.submit(0, running.clone()).unwrap();
        first.flush();
        first.submit(1, finished.clone()).unwrap();
        first.flush();
        (
            first.slurm_job_id(0).unwrap().to_string(),
            first.slurm_job_id(1).unwrap().to_string(),
        )
        // The engine is killed here: no shutdown, the jobs stay queued.
    };
    fake.running(&ran);
    assert_eq!(fake.run(&done), 0);
    let finished_outcome = recorded_outcome(&finished.cache_dir, &finished.key, &done);
    assert!(matches!(finished_outcome, Some(JobOutcome::Done(_))));
    assert_eq!(
        recorded_outcome(&running.cache_dir, &running.key, &ran),
        None
    );

    let mut second = fake.executor(None);
    second.adopt(7, &running, &ran).unwrap();
    match second.next_event(Duration::ZERO) {
        Some(JobEvent::Note { id: 7, message }) => {
            assert!(message.contains("following Slurm job 100"), "{message}")
        }
        other => panic!("expected a note, got {other:?}"),
    }
    second.adopt(8, &finished, &done).unwrap();
    assert!(second.adopt(9, &running, "12;x").is_err());
    let (_, outcome) = until_finished(&mut second, 8, Duration::from_secs(5));
    assert_eq!(Some(outcome), finished_outcome);
    assert_eq!(second.slurm_job_id(7), Some(ran.as_str()));
    assert_eq!(fake.run(&ran), 0);
    let (_, outcome) = until_finished(&mut second, 7, Duration::from_secs(5));
    assert!(matches!(outcome, JobOutcome::Done(_)), "{outcome:?}");
    assert_eq!(fake.sbatch_calls(), 2);
}

#[test]
fn an_engine_killed_before_it_recorded_the_job_id_finds_the_job_by_name() {
    let fake = FakeSlurm::new();
    let project = fake.project();
    let queued = job(&project, "a", json!({}));
    let cancelled = job(&project, "b", json!({}));
    {
        let mut first = fake.executor(None);
        first.submit(0, queued.clone()).unwrap();
        first.flush();
        first.submit(1, cancelled.clone()).unwrap();
        first.flush();
        // Killed before the job ids reached the leases: the next engine knows nothing of them.
    }
    assert_eq!(fake.job_ids(), ["100", "101"]);
    fake.set("101", "state", "CANCELLED");
    // A job of `b`'s name that writes into another cache is not this cache's job.
    let mut other = cancelled.clone();
    other.cache_dir = fake.state().join("other-cache");
    let mut third = fake.executor(None);
    third.submit(0, other).unwrap();
    third.flush();

    let mut second = fake.executor(None);
    second.submit(3, queued.clone()).unwrap();
    second.flush();
    assert_eq!(second.slurm_job_id(3), Some("100"));
    match second.next_event(Duration::ZERO) {
        Some(JobEvent::Note { id: 3, message }) => {
            assert!(message.contains("following Slurm job 100"), "{message}")
        }
        other => panic!("expected a note, got {other:?}"),
    }
    second.submit(4, cancelled).unwrap();
    second.flush();
    assert_eq!(second.slurm_job_id(4), Some("103"), "b's own job ended");
    assert_eq!(fake.run("100"), 0);
    let (_, outcome) = until_finished(&mut second, 3, Duration::from_secs(5));
    assert!(matches!(outcome, JobOutcome::Done(_)), "{outcome:?}");
    assert_eq!(
        fake.sbatch_calls(),
        4,
        "a once; b, b into the other cache, b again; never a twice"
    );
}

#[test]
fn sbatch_errors_and_missing_tools_say_what_to_do() {
    let fake = FakeSlurm::new();
    let project = fake.project();
    std::fs::write(
        fake.state().join("sbatch_error"),
        "sbatch: error: invalid partition specified: gpu\n",
    )
    .unwrap();
    let mut ex = fake.executor(None);
    ex.submit(0, job(&project, "a", json!({}))).unwrap();
    ex.flush();
    let (_, outcome) = until_finished(&mut ex, 0, Duration::from_secs(5));
    let f = failure(&outcome);
    assert!(
        f.message.contains("a[seed=0]") && f.message.contains("invalid partition"),
        "{f:?}"
    );
    assert!(
        matches!(&f.reason, FailureReason::Executor { state, .. } if state == "REFUSED"),
        "{f:?}"
    );
    assert_eq!(
        fake.sbatch_calls(),
        1,
        "a refusal that does not pass is not retried"
    );
    assert!(ex.jobs().is_empty());

    let profile = SlurmProfile {
        bin_dir: Some(fake.dir.path().join("nowhere")),
        ..SlurmProfile::default()
    };
    let mut ex = SlurmExecutor::new(profile, job_command(), None).unwrap();
    ex.submit(0, job(&project, "a", json!({}))).unwrap();
    ex.flush();
    let (_, outcome) = until_finished(&mut ex, 0, Duration::from_secs(5));
    let err = &failure(&outcome).message;
    assert!(
        err.contains("not found") && err.contains("bin_dir"),
        "{err}"
    );
}

#[test]
fn a_bad_profile_is_refused_before_anything_is_submitted() {
    let profile = SlurmProfile {
        time: Some("4 hours".into()),
        ..SlurmProfile::default()
    };
    let err = SlurmExecutor::new(profile, job_command(), None)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("executor.slurm.time:"), "{err}");
}

#[test]
fn a_failing_squeue_skips_one_poll_and_loses_nothing() {
    let fake = FakeSlurm::new();
    let project = fake.project();
    let mut ex = fake.executor(None);
    ex.submit(0, job(&project, "a", json!({}))).unwrap();
    ex.flush();
    std::fs::write(
        fake.state().join("squeue_error"),
        "squeue: error: slurm_receive_msg: Socket timed out on send/recv operation\n",
    )
    .unwrap();
    assert_eq!(fake.run("100"), 0);
    let (_, outcome) = until_finished(&mut ex, 0, Duration::from_secs(5));
    assert!(matches!(outcome, JobOutcome::Done(_)), "{outcome:?}");
    assert!(
        !fake.state().join("squeue_error").exists(),
        "the failing squeue ran"
    );
}

#[test]
fn the_setup_line_runs_first_and_its_failure_ends_the_job() {
    let fake = FakeSlurm::new();
    let project = fake.project();
    let mut ex = fake.executor_with(None, Some("echo setting up && export READY=1"));
    ex.submit(0, job(&project, "a", json!({}))).unwrap();
    ex.flush();
    assert_eq!(fake.run("100"), 0);
    let (_, outcome) = until_finished(&mut ex, 0, Duration::from_secs(5));
    assert!(matches!(outcome, JobOutcome::Done(_)), "{outcome:?}");
    let log = std::fs::read_to_string(fake.get("100", "output")).unwrap();
    assert!(log.contains("setting up\nfake-exec:"), "{log}");

    let mut ex = fake.executor_with(None, Some("module load cuda/99"));
    ex.submit(1, job(&project, "b", json!({}))).unwrap();
    ex.flush();
    assert_eq!(fake.run("101"), 127);
    let (_, outcome) = until_finished(&mut ex, 1, Duration::from_secs(5));
    let f = failure(&outcome);
    assert!(f.message.contains("exited with status 127"), "{f:?}");
    let tail = f.log_tail.as_deref().unwrap();
    assert!(
        tail.contains("the profile's setup line failed (status 127)"),
        "{tail}"
    );
    assert!(
        !tail.contains("fake-exec"),
        "the command must not run: {tail}"
    );
}

/// Issue 29, item 8: a per-user limit refuses `sbatch`; the run keeps following what it
/// submitted, says what happened, tries again after a back-off, and submits once the limit
/// passes. Without any job of the run left in Slurm, it gives up after a bounded number of
/// tries, and those jobs fail with sbatch's message.
#[test]
fn a_refused_sbatch_backs_off_keeps_following_and_submits_later() {
    let fake = FakeSlurm::new();
    let project = fake.project();
    let mut ex = fake.executor(None);
    ex.submit(0, job(&project, "a", json!({}))).unwrap();
    ex.flush();
    assert_eq!(ex.slurm_job_id(0), Some("100"));
    let limit = "sbatch: error: QOSMaxSubmitJobPerUserLimit\nsbatch: error: Batch job \
                 submission failed: Job violates accounting/QOS policy (job submit limit, \
                 user's size and/or time limits)\n";
    std::fs::write(fake.state().join("sbatch_error"), limit).unwrap();
    ex.submit(1, job(&project, "b", json!({}))).unwrap();
    ex.flush();
    assert_eq!(ex.slurm_job_id(1), None);
    let notes = notes_for(&mut ex, Duration::from_millis(200));
    let refused: Vec<&String> = notes.iter().filter(|n| n.contains("refused")).collect();
    assert!(!refused.is_empty(), "{notes:?}");
    assert!(
        refused[0].contains("sbatch refused b[seed=0]")
            && refused[0].contains("QOSMaxSubmitJobPerUserLimit")
            && refused[0].contains("trying again in")
            && refused[0].contains("already submitted are followed"),
        "{refused:?}"
    );
    // The submitted job is still followed to its end.
    assert_eq!(fake.run("100"), 0);
    let (_, outcome) = until_finished(&mut ex, 0, Duration::from_secs(5));
    assert!(matches!(outcome, JobOutcome::Done(_)), "{outcome:?}");
    // The limit passes: b is submitted at the next try.
    std::fs::remove_file(fake.state().join("sbatch_error")).unwrap();
    let start = Instant::now();
    while ex.slurm_job_id(1).is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "b was never submitted"
        );
        ex.next_event(Duration::from_millis(50));
    }
    let b = ex.slurm_job_id(1).unwrap().to_string();
    assert_eq!(fake.run(&b), 0);
    let (_, outcome) = until_finished(&mut ex, 1, Duration::from_secs(5));
    assert!(matches!(outcome, JobOutcome::Done(_)), "{outcome:?}");

    // A limit that never passes, with nothing of the run in Slurm: bounded, then failed.
    std::fs::write(fake.state().join("sbatch_error"), limit).unwrap();
    let before = fake.sbatch_calls();
    ex.submit(2, job(&project, "c", json!({}))).unwrap();
    ex.flush();
    let (notes, outcome) = until_finished(&mut ex, 2, Duration::from_secs(30));
    let f = failure(&outcome);
    assert!(
        matches!(&f.reason, FailureReason::Executor { state, .. } if state == "REFUSED"),
        "{f:?}"
    );
    assert!(f.message.contains("refused c[seed=0] 8 times"), "{f:?}");
    assert_eq!(fake.sbatch_calls() - before, 8, "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("try 7 of 8")), "{notes:?}");
}

/// Issue 29, item 9: the ready instances of one stage go to Slurm as one job array, throttled
/// by --max-jobs; each element runs its own job file and writes its files into its own key's
/// folder under its element id; the elements are followed one by one.
#[test]
fn ready_instances_of_one_stage_go_as_one_throttled_job_array() {
    let fake = FakeSlurm::new();
    let project = fake.project();
    let mut ex = fake.executor(Some(2));
    let jobs: Vec<Job> = (0..5)
        .map(|i| {
            let mut j = job(&project, "train", json!({"lr": i}));
            j.label = format!("train[seed={i}]");
            j
        })
        .collect();
    for (i, j) in jobs.iter().enumerate() {
        assert!(
            ex.has_room(Resource::Device),
            "arrays take every ready instance"
        );
        ex.submit(i, j.clone()).unwrap();
    }
    ex.submit(9, job(&project, "other", json!({}))).unwrap();
    ex.flush();
    assert_eq!(fake.sbatch_calls(), 2, "{:?}", fake.calls());
    assert_eq!(
        fake.job_ids(),
        ["100_0", "100_1", "100_2", "100_3", "100_4", "101"]
    );
    let args = fake.get("100_0", "args");
    assert!(args.lines().any(|a| a == "--array=0-4%2"), "{args}");
    assert!(
        args.lines()
            .any(|a| a.starts_with("--job-name=train-asymflow-")),
        "{args}"
    );
    for (i, j) in jobs.iter().enumerate() {
        assert_eq!(ex.slurm_job_id(i), Some(format!("100_{i}").as_str()));
        let log = PathBuf::from(fake.get(&format!("100_{i}"), "output"));
        assert_eq!(
            log.parent().unwrap().canonicalize().unwrap(),
            project
                .join("cache/slurm")
                .join(&j.key)
                .canonicalize()
                .unwrap(),
            "{log:?}"
        );
    }
    let notes = notes_for(&mut ex, Duration::from_millis(150));
    assert!(
        notes.iter().any(|n| n.starts_with(
            "submitted train[seed=3] as Slurm job 100_3 (element 3 of an array of 5, at most 2 at once"
        )),
        "{notes:?}"
    );
    assert!(
        notes.contains(&"waiting in Slurm's queue: 6 jobs (Priority)".to_string()),
        "{notes:?}"
    );
    let squeue = fake
        .calls()
        .into_iter()
        .rfind(|c| c.starts_with("squeue"))
        .unwrap();
    assert_eq!(squeue, "squeue -h -r -t all -j 100,101 -o %i|%T|%r|%N");
    for i in [3, 0, 1, 4, 2] {
        let id = format!("100_{i}");
        fake.running(&id);
        assert_eq!(fake.run(&id), 0);
        let (_, outcome) = until_finished(&mut ex, i, Duration::from_secs(5));
        assert!(matches!(outcome, JobOutcome::Done(_)), "{outcome:?}");
        let key_dir = project.join("cache/slurm").join(&jobs[i].key);
        let log = std::fs::read_to_string(key_dir.join(format!("{id}.log"))).unwrap();
        assert!(
            log.contains(&format!("fake-exec: key={}", jobs[i].key)),
            "element {i} ran another job file: {log}"
        );
        assert!(key_dir.join(format!("{id}.result.json")).exists());
        assert_eq!(
            job_logs(&project.join("cache"), &jobs[i].key),
            [key_dir.join(format!("{id}.log"))]
        );
    }
    // A failed element is its own failure.
    fake.set("101", "state", "TIMEOUT");
    let (_, outcome) = until_finished(&mut ex, 9, Duration::from_secs(5));
    assert!(
        matches!(&failure(&outcome).reason, FailureReason::Executor { state, .. } if state == "TIMEOUT")
    );
}

/// Issue 29, item 9: an engine restarted from the leases follows array elements by their
/// `ARRAY_INDEX` ids; one killed while sbatch ran finds the elements by the array's name.
#[test]
fn array_elements_are_followed_after_an_engine_restart() {
    let fake = FakeSlurm::new();
    let project = fake.project();
    let a = job(&project, "train", json!({"lr": 1}));
    let b = job(&project, "train", json!({"lr": 2}));
    {
        let mut first = fake.executor(None);
        first.submit(0, a.clone()).unwrap();
        first.submit(1, b.clone()).unwrap();
        first.flush();
        assert_eq!(first.slurm_job_id(1), Some("100_1"));
        // Killed before the ids reached the leases.
    }
    let mut second = fake.executor(None);
    second.adopt(5, &a, "100_0").unwrap();
    second.submit(6, b.clone()).unwrap();
    second.flush();
    assert_eq!(
        second.slurm_job_id(6),
        Some("100_1"),
        "found by the array's name"
    );
    assert_eq!(fake.sbatch_calls(), 1);
    for id in ["100_0", "100_1"] {
        assert_eq!(fake.run(id), 0);
    }
    let done = drain(&mut second, Duration::from_secs(5));
    assert!(
        done.values().all(|o| matches!(o, JobOutcome::Done(_))),
        "{done:?}"
    );
}

/// Issue 29, item 10: a drained node and a failing squeue are said once, then again when
/// they change, instead of a silent wait.
#[test]
fn queue_reasons_and_squeue_failures_are_shown_once_then_on_change() {
    let fake = FakeSlurm::new();
    let project = fake.project();
    let mut ex = fake.executor(None);
    ex.submit(0, job(&project, "a", json!({}))).unwrap();
    ex.flush();
    let notes = notes_for(&mut ex, Duration::from_millis(150));
    assert_eq!(
        notes
            .iter()
            .filter(|n| n.contains("waiting in Slurm's queue"))
            .count(),
        1,
        "{notes:?}"
    );
    fake.set("100", "reason", "ReqNodeNotAvail, UnavailableNodes:gpu07");
    let notes = notes_for(&mut ex, Duration::from_millis(200));
    assert_eq!(
        notes,
        [
            "waiting in Slurm's queue: 1 job (ReqNodeNotAvail, UnavailableNodes:gpu07) - a node \
          it needs is down, drained or reserved; `sinfo -R` says why"
        ],
    );
    std::fs::write(
        fake.state().join("squeue_error"),
        "squeue: error: slurm_receive_msg: Socket timed out on send/recv operation\n",
    )
    .unwrap();
    std::fs::write(fake.state().join("squeue_error_keep"), "").unwrap();
    let notes = notes_for(&mut ex, Duration::from_millis(300));
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with("squeue: squeue: error: slurm_receive_msg: Socket timed out")
            && notes[0].contains("the 1 jobs of this run are still followed"),
        "{notes:?}"
    );
    std::fs::remove_file(fake.state().join("squeue_error_keep")).unwrap();
    std::fs::remove_file(fake.state().join("squeue_error")).unwrap();
    let notes = notes_for(&mut ex, Duration::from_millis(150));
    assert_eq!(notes, ["squeue answers again"]);
}

/// Issue 29, item 10: a CUDA failure on the node is a short, clear error, not libtorch's
/// frames.
#[test]
fn a_cuda_failure_is_a_clear_error() {
    let fake = FakeSlurm::new();
    let project = fake.project();
    let mut ex = fake.executor(None);
    ex.submit(0, job(&project, "train", json!({"mode": "cuda"})))
        .unwrap();
    ex.flush();
    assert_eq!(fake.run("100"), 1);
    let (_, outcome) = until_finished(&mut ex, 0, Duration::from_secs(5));
    let f = failure(&outcome);
    let tail = f.log_tail.as_deref().unwrap();
    assert!(
        f.message.len() < 1000,
        "{} bytes: {}",
        f.message.len(),
        f.message
    );
    assert!(
        f.message
            .starts_with("CUDA failed on the node: stage panicked")
            && f.message.contains("no CUDA-capable device is detected")
            && f.message.contains("[executor.slurm.device]"),
        "{}",
        f.message
    );
    assert!(!tail.contains("frame #"), "{tail}");
    assert!(
        tail.contains("CUDA error: no CUDA-capable device"),
        "{tail}"
    );
}
