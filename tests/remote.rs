//! The remote cache end to end, through the `asymflow` binary, against a shared-folder remote
//! on a temp folder and a real S3-compatible server (moto, started by
//! `scripts/services/s3.sh up`, which exports `ASYMFLOW_TEST_S3_ENDPOINT` and the AWS
//! variables). Each user is a project folder with its own local cache; the pipeline is a
//! teacher, two students and a report of the engine's `test-echo` kind, whose `trace` file
//! gets a line each time an instance really computes.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use object_store::{ObjectStore, ObjectStoreExt};
use serde_json::Value;

const PIPELINE: &str = r#"
[pipeline]
name = "team"

[stages.teacher]
kind = "test-echo"
params = { value = 10, trace = "trace.txt" }

[stages.student-a]
kind = "test-echo"
inputs = { input = "teacher" }
params = { value = 1, trace = "trace.txt" }

[stages.student-b]
kind = "test-echo"
inputs = { input = "teacher" }
params = { value = 2, trace = "trace.txt" }

[stages.table]
kind = "report"
inputs = { results = ["student-a", "student-b"] }
params = { metrics = ["value"], format = "fixed:1", plot_xy = [], title = "Team" }
"#;

/// Where the team's remote lives, and raw access to its objects (to break them on purpose).
enum Store {
    Folder(tempfile::TempDir),
    S3 { endpoint: String, bucket: String },
}

struct TeamRemote {
    store: Store,
}

impl TeamRemote {
    fn folder() -> TeamRemote {
        TeamRemote {
            store: Store::Folder(tempfile::tempdir().unwrap()),
        }
    }

    /// A fresh bucket on the test S3 server, or `None` (with the skip line) without one.
    fn s3(test: &str) -> Option<TeamRemote> {
        let Ok(endpoint) = std::env::var("ASYMFLOW_TEST_S3_ENDPOINT") else {
            println!(
                "skipped: s3 not available ({test}; run `eval \"$(scripts/services/s3.sh up)\"` first)"
            );
            return None;
        };
        let bucket = format!("asymflow-{:016x}", rand_u64());
        let (status, _) = http(&endpoint, "PUT", &format!("/{bucket}"), &[]);
        assert!(status == 200, "creating bucket {bucket}: HTTP {status}");
        Some(TeamRemote {
            store: Store::S3 { endpoint, bucket },
        })
    }

    /// Both kinds this machine can run.
    fn all(test: &str) -> Vec<TeamRemote> {
        let mut v = vec![TeamRemote::folder()];
        v.extend(TeamRemote::s3(test));
        v
    }

    fn name(&self) -> &'static str {
        match self.store {
            Store::Folder(_) => "folder",
            Store::S3 { .. } => "s3",
        }
    }

    /// The `asymflow.toml` pointing at it.
    fn config(&self, push: bool) -> String {
        let location = match &self.store {
            Store::Folder(dir) => format!("remote = \"file://{}\"\n", dir.path().display()),
            Store::S3 { endpoint, bucket } => {
                format!("remote = \"s3://{bucket}/team\"\nendpoint = \"{endpoint}\"\n")
            }
        };
        format!("{location}push = {push}\n")
    }

    fn get(&self, rel: &str) -> Option<Vec<u8>> {
        match &self.store {
            Store::Folder(dir) => std::fs::read(dir.path().join(rel)).ok(),
            Store::S3 { endpoint, bucket } => s3_call(endpoint, bucket, |store| async move {
                let got = store
                    .get(&object_store::path::Path::from(format!("team/{rel}")))
                    .await;
                match got {
                    Ok(r) => Some(r.bytes().await.unwrap().to_vec()),
                    Err(object_store::Error::NotFound { .. }) => None,
                    Err(e) => panic!("{e}"),
                }
            }),
        }
    }

    fn put(&self, rel: &str, bytes: &[u8]) {
        match &self.store {
            Store::Folder(dir) => std::fs::write(dir.path().join(rel), bytes).unwrap(),
            Store::S3 { endpoint, bucket } => {
                let bytes = bytes.to_vec();
                s3_call(endpoint, bucket, |store| async move {
                    let path = object_store::path::Path::from(format!("team/{rel}"));
                    store.put(&path, bytes.into()).await.unwrap();
                })
            }
        }
    }

    /// Names of the objects under `prefix` (`ac`, `cas`, `quarantine`).
    fn list(&self, prefix: &str) -> Vec<String> {
        match &self.store {
            Store::Folder(dir) => std::fs::read_dir(dir.path().join(prefix))
                .map(|d| {
                    d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                        .filter(|n| !n.starts_with('.') && !n.contains('#'))
                        .collect()
                })
                .unwrap_or_default(),
            Store::S3 { endpoint, bucket } => s3_call(endpoint, bucket, |store| async move {
                use futures::StreamExt;
                let prefix = object_store::path::Path::from(format!("team/{prefix}"));
                let metas: Vec<_> = store.list(Some(&prefix)).collect().await;
                metas
                    .into_iter()
                    .map(|m| m.unwrap().location.filename().unwrap().to_string())
                    .collect()
            }),
        }
    }
}

/// Runs `f` against the test bucket with object_store (the server wants signed requests for
/// objects).
fn s3_call<T, F: std::future::Future<Output = T>>(
    endpoint: &str,
    bucket: &str,
    f: impl FnOnce(std::sync::Arc<object_store::aws::AmazonS3>) -> F,
) -> T {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let store = object_store::aws::AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_endpoint(endpoint)
        .with_virtual_hosted_style_request(false)
        .with_client_options(object_store::ClientOptions::new().with_allow_http(true))
        .build()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(f(std::sync::Arc::new(store)))
}

fn rand_u64() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    t ^ (u64::from(std::process::id()) << 32)
}

/// A minimal HTTP/1.1 request to the (unauthenticated) test server: (status, body).
fn http(endpoint: &str, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let host = endpoint.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = std::net::TcpStream::connect(host).expect("the S3 test server answers");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP response");
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    let mut payload = response[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        payload = dechunk(&payload);
    }
    (status, payload)
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(end) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&data[..end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&data[end + 2..end + 2 + size]);
        data = &data[end + 4 + size..];
    }
}

/// One teammate: a project with the pipeline, their own cache, and the team's config.
struct User {
    dir: tempfile::TempDir,
    secret: Option<String>,
}

impl User {
    fn new(remote: &TeamRemote, push: bool) -> User {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("pipelines")).unwrap();
        std::fs::write(dir.path().join("pipelines/team.toml"), PIPELINE).unwrap();
        std::fs::write(dir.path().join("asymflow.toml"), remote.config(push)).unwrap();
        User { dir, secret: None }
    }

    fn with_secret(mut self, secret: &str) -> User {
        self.secret = Some(secret.into());
        self
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_asymflow"));
        cmd.args(args)
            .current_dir(self.path())
            .env("ASYMFLOW_TEST_KINDS", "1")
            .env_remove("ASYMFLOW_CACHE")
            .env_remove("ASYMFLOW_REMOTE")
            .env_remove("ASYMFLOW_PUSH")
            .env_remove("ASYMFLOW_REMOTE_ENDPOINT");
        match &self.secret {
            Some(s) => cmd.env("ASYMFLOW_REMOTE_SECRET", s),
            None => cmd.env_remove("ASYMFLOW_REMOTE_SECRET"),
        };
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("asymflow runs")
    }

    /// Runs `asymflow ARGS`, asserting success; returns (stdout, stderr).
    fn ok(&self, args: &[&str]) -> (String, String) {
        let out = self.run(args);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert!(
            out.status.success(),
            "asymflow {args:?} failed:\n{stdout}\n{stderr}"
        );
        (stdout, stderr)
    }

    /// The instances that really computed, in order (from the trace file).
    fn trained(&self) -> Vec<String> {
        std::fs::read_to_string(self.path().join("trace.txt"))
            .unwrap_or_default()
            .lines()
            .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
            .collect()
    }

    fn forget_trace(&self) {
        let _ = std::fs::remove_file(self.path().join("trace.txt"));
    }

    /// (instance, status) from `run --json`.
    fn run_statuses(&self, extra: &[&str]) -> (Vec<(String, String)>, String) {
        let mut args = vec!["run", "pipelines/team.toml", "--json"];
        args.extend_from_slice(extra);
        let (stdout, stderr) = self.ok(&args);
        let v: Value = serde_json::from_str(&stdout).unwrap();
        let statuses = v["instances"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                (
                    i["stage"].as_str().unwrap().to_string(),
                    i["status"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        (statuses, stderr)
    }

    fn key_of(&self, stage: &str) -> String {
        let (stdout, _) = self.ok(&["show", "pipelines/team.toml", stage, "--json"]);
        let v: Value = serde_json::from_str(&stdout).unwrap();
        v[0]["key"].as_str().unwrap().to_string()
    }

    fn output_digest(&self, stage: &str, output: &str) -> String {
        let (stdout, _) = self.ok(&["show", "pipelines/team.toml", stage, "--json"]);
        let v: Value = serde_json::from_str(&stdout).unwrap();
        v[0]["outputs"][output]["digest"]
            .as_str()
            .unwrap()
            .to_string()
    }
}

/// Every file under `dir` with its bytes, by relative path.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.push((
                    path.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&path).unwrap(),
                ));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn remote_a_teammate_trains_nothing_and_gets_byte_identical_reports() {
    for remote in TeamRemote::all("remote_a_teammate_trains_nothing") {
        let a = User::new(&remote, true);
        let b = User::new(&remote, false);
        a.ok(&["run", "pipelines/team.toml"]);
        assert_eq!(a.trained().len(), 3, "{}", remote.name());
        assert_eq!(
            remote.list("ac").len(),
            4,
            "{}: A pushed every record",
            remote.name()
        );

        let (plan, _) = b.ok(&["plan", "pipelines/team.toml"]);
        assert!(plan.contains("4 on remote"), "{}: {plan}", remote.name());
        let (statuses, _) = b.run_statuses(&[]);
        assert!(statuses.iter().all(|(_, s)| s == "cached"), "{statuses:?}");
        assert!(
            b.trained().is_empty(),
            "{}: B trained {:?}",
            remote.name(),
            b.trained()
        );
        assert_eq!(
            tree(&a.path().join("reports")),
            tree(&b.path().join("reports")),
            "{}: the reports differ",
            remote.name()
        );
        // Pulled results are recorded locally: offline, B still has everything.
        let (statuses, _) = b.run_statuses(&["--offline"]);
        assert!(statuses.iter().all(|(_, s)| s == "cached"));
    }
}

#[test]
fn remote_changing_one_student_computes_only_it_and_its_dependants() {
    for remote in TeamRemote::all("remote_changing_one_student") {
        let a = User::new(&remote, true);
        let b = User::new(&remote, false);
        a.ok(&["run", "pipelines/team.toml"]);
        let (statuses, _) = b.run_statuses(&["--set", "stages.student-b.params.value=5"]);
        let ran: Vec<&str> = statuses
            .iter()
            .filter(|(_, s)| s == "ran")
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(
            ran,
            ["student-b", "table"],
            "{}: {statuses:?}",
            remote.name()
        );
        assert_eq!(b.trained(), ["student-b"], "{}", remote.name());
    }
}

#[test]
fn remote_a_flipped_byte_is_detected_quarantined_and_recomputed() {
    for remote in TeamRemote::all("remote_a_flipped_byte") {
        let a = User::new(&remote, true);
        let b = User::new(&remote, false);
        a.ok(&["run", "pipelines/team.toml"]);
        let digest = a.output_digest("teacher", "value.json");
        let mut bytes = remote
            .get(&format!("cas/{digest}"))
            .expect("the blob was pushed");
        bytes[0] ^= 1;
        remote.put(&format!("cas/{digest}"), &bytes);

        let (statuses, stderr) = b.run_statuses(&[]);
        assert!(
            stderr.contains(&format!("cas/{digest} is corrupt")),
            "{}: no warning naming the blob:\n{stderr}",
            remote.name()
        );
        assert_eq!(b.trained(), ["teacher"], "{}: {statuses:?}", remote.name());
        assert!(b
            .path()
            .join(format!("cache/quarantine/remote-{digest}"))
            .is_file());
        assert_eq!(
            remote.list("quarantine"),
            std::slice::from_ref(&digest),
            "{}",
            remote.name()
        );
        assert!(!remote.list("cas").contains(&digest));
        // What B computed is right, and the same as A's.
        assert_eq!(b.output_digest("teacher", "value.json"), digest);
        let digests = |user: &User| {
            let (stdout, _) = user.ok(&["show", "pipelines/team.toml", "table", "--json"]);
            let v: Value = serde_json::from_str(&stdout).unwrap();
            v[0]["outputs"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(name, o)| (name.clone(), o["digest"].clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(digests(&b), digests(&a));
    }
}

#[test]
fn remote_an_edited_or_unsigned_record_is_rejected_when_signing_is_on() {
    for remote in TeamRemote::all("remote_an_edited_record") {
        let a = User::new(&remote, true).with_secret("team-secret");
        let b = User::new(&remote, false).with_secret("team-secret");
        a.ok(&["run", "pipelines/team.toml"]);
        let key = a.key_of("teacher");
        let path = format!("ac/{key}.json");
        let record = String::from_utf8(remote.get(&path).unwrap()).unwrap();
        assert!(record.contains("\"signature\":\""), "{record}");
        // The teacher's metric, edited in the record's body.
        let edited = record.replace("\\\"value\\\":10.0", "\\\"value\\\":99.0");
        assert_ne!(edited, record, "the edit applies");
        remote.put(&path, edited.as_bytes());

        let (_, stderr) = b.run_statuses(&[]);
        assert!(
            stderr.contains(&format!("remote record {key} rejected: bad signature")),
            "{}:\n{stderr}",
            remote.name()
        );
        assert_eq!(b.trained(), ["teacher"], "{}", remote.name());
        let (stdout, _) = b.ok(&["show", "pipelines/team.toml", "teacher", "--json"]);
        assert!(stdout.contains("\"value\": 10.0"), "{stdout}");

        // A record pushed without the secret is never used by a teammate who has it.
        let unsigned_remote = TeamRemote::folder();
        let c = User::new(&unsigned_remote, true);
        let d = User::new(&unsigned_remote, false).with_secret("team-secret");
        c.ok(&["run", "pipelines/team.toml"]);
        let (_, stderr) = d.run_statuses(&[]);
        assert!(stderr.contains("rejected: unsigned"), "{stderr}");
        assert_eq!(d.trained().len(), 3);
    }
}

#[test]
fn remote_two_users_pushing_the_same_keys_at_once_both_end_consistent() {
    for remote in TeamRemote::all("remote_two_users_pushing") {
        let a = User::new(&remote, false).with_secret("s");
        let b = User::new(&remote, false).with_secret("s");
        a.ok(&["run", "pipelines/team.toml"]);
        b.ok(&["run", "pipelines/team.toml"]);
        let spawn = |u: &User| {
            u.cmd(&["push", "pipelines/team.toml"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (push_a, push_b) = (spawn(&a), spawn(&b));
        let (ra, rb) = (
            push_a.wait_with_output().unwrap(),
            push_b.wait_with_output().unwrap(),
        );
        assert!(
            ra.status.success() && rb.status.success(),
            "{}",
            remote.name()
        );
        assert_eq!(remote.list("ac").len(), 4, "{}", remote.name());
        // Both pushes again: everything is already there, nothing fails.
        let (stdout, _) = a.ok(&["push", "pipelines/team.toml"]);
        assert_eq!(stdout.matches("already on remote").count(), 4, "{stdout}");
        // A third teammate gets everything from the remote, verified and signed.
        let c = User::new(&remote, false).with_secret("s");
        let (statuses, stderr) = c.run_statuses(&[]);
        assert!(
            statuses.iter().all(|(_, s)| s == "cached"),
            "{statuses:?}\n{stderr}"
        );
        assert!(c.trained().is_empty());
        assert!(!stderr.contains("warning"), "{stderr}");
    }
}

#[test]
fn remote_a_push_that_dies_halfway_leaves_no_visible_record() {
    for remote in TeamRemote::all("remote_a_push_that_dies_halfway") {
        let a = User::new(&remote, false);
        a.ok(&["run", "pipelines/team.toml"]);
        let key = a.key_of("teacher");
        // The teacher's last blob in upload order rots on A's disk: the push uploads the
        // blobs before it, then finds it corrupt and stops.
        let digest = a.output_digest("teacher", "value.json");
        std::fs::write(
            a.path()
                .join("cache/objects")
                .join(&digest[..2])
                .join(&digest[2..]),
            b"rotten",
        )
        .unwrap();
        let out = a.run(&["push", "pipelines/team.toml"]);
        assert!(!out.status.success(), "{}", remote.name());
        assert!(
            !remote.list("cas").is_empty(),
            "{}: some blobs went up",
            remote.name()
        );
        assert!(
            !remote.list("ac").contains(&format!("{key}.json")),
            "{}: a record without its blobs is visible",
            remote.name()
        );
        // A teammate computes the teacher instead of using half a push.
        let b = User::new(&remote, false);
        let (statuses, _) = b.run_statuses(&[]);
        assert!(statuses.iter().all(|(_, s)| s == "ran"), "{statuses:?}");
    }
}

#[test]
fn remote_bundles_round_trip_and_a_stage_exports_into_a_folder() {
    let remote = TeamRemote::folder();
    let a = User::new(&remote, false);
    a.ok(&["run", "pipelines/team.toml", "--offline"]);
    let bundle = a.path().join("results.tar");
    let (_, stderr) = a.ok(&[
        "export",
        "pipelines/team.toml",
        "-o",
        bundle.to_str().unwrap(),
    ]);
    assert!(stderr.contains("exported 4 records"), "{stderr}");
    assert!(
        remote.list("ac").is_empty(),
        "export does not touch the remote"
    );

    let b = User::new(&remote, false);
    let (_, stderr) = b.ok(&["import", bundle.to_str().unwrap()]);
    assert!(stderr.contains("imported 4 records"), "{stderr}");
    let (statuses, _) = b.run_statuses(&["--offline"]);
    assert!(statuses.iter().all(|(_, s)| s == "cached"), "{statuses:?}");
    assert!(b.trained().is_empty());
    assert_eq!(
        tree(&a.path().join("reports")),
        tree(&b.path().join("reports"))
    );

    // One stage's outputs into a folder.
    let out = b.path().join("teacher-out");
    b.ok(&[
        "export",
        "pipelines/team.toml",
        "teacher",
        out.to_str().unwrap(),
    ]);
    let value: Value =
        serde_json::from_slice(&std::fs::read(out.join("value.json")).unwrap()).unwrap();
    assert!(value.to_string().contains("10"), "{value}");
    // Neither a folder nor a bundle: a clear error.
    let err = b.run(&["export", "pipelines/team.toml"]);
    assert!(!err.status.success());
    assert!(String::from_utf8_lossy(&err.stderr).contains("-o results.tar"));
}

#[test]
fn remote_a_bundle_with_a_path_outside_the_cache_is_refused() {
    let remote = TeamRemote::folder();
    let a = User::new(&remote, false);
    a.ok(&["run", "pipelines/team.toml", "--offline"]);
    let bundle = a.path().join("evil.tar");
    {
        let mut tar = tar::Builder::new(std::fs::File::create(&bundle).unwrap());
        let data = b"owned";
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        // `append_data` refuses `..`, so the name is written into the header by hand.
        let name = b"../../escaped.txt";
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
        header.set_cksum();
        tar.append(&header, &data[..]).unwrap();
        tar.finish().unwrap();
    }
    let b = User::new(&remote, false);
    let out = b.run(&["import", bundle.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unexpected entry `../../escaped.txt`"),
        "{stderr}"
    );
    assert!(!b.path().join("escaped.txt").exists());
    assert!(!b.path().parent().unwrap().join("escaped.txt").exists());
}

#[test]
fn remote_a_record_naming_a_path_outside_the_cache_is_a_miss() {
    let remote = TeamRemote::folder();
    let a = User::new(&remote, true);
    a.ok(&["run", "pipelines/team.toml"]);
    let key = a.key_of("teacher");
    let path = format!("ac/{key}.json");
    let record = String::from_utf8(remote.get(&path).unwrap()).unwrap();
    let evil = record.replace("\\\"value.json\\\"", "\\\"../../value.json\\\"");
    assert_ne!(evil, record);
    remote.put(&path, evil.as_bytes());
    let b = User::new(&remote, false);
    let (_, stderr) = b.run_statuses(&[]);
    assert!(stderr.contains("is not a plain relative path"), "{stderr}");
    assert_eq!(b.trained(), ["teacher"]);
}

#[test]
fn remote_that_does_not_answer_is_a_warning_or_with_require_remote_an_error() {
    let remote = TeamRemote::folder();
    let user = User::new(&remote, true);
    // The shared folder is not mounted.
    std::fs::write(
        user.path().join("asymflow.toml"),
        "remote = \"file:///nonexistent/asymflow-team\"\npush = true\n",
    )
    .unwrap();
    let (statuses, stderr) = user.run_statuses(&[]);
    assert!(statuses.iter().all(|(_, s)| s == "ran"));
    assert!(
        stderr.contains("/nonexistent/asymflow-team does not exist") && stderr.contains("mkdir -p"),
        "{stderr}"
    );
    let out = user.run(&["run", "pipelines/team.toml", "--require-remote"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--require-remote"), "{stderr}");
    let (_, stderr) = user.run_statuses(&["--offline"]);
    assert!(!stderr.contains("warning"), "{stderr}");

    if let Some(s3) = TeamRemote::s3("remote_that_does_not_answer") {
        let Store::S3 { endpoint, .. } = &s3.store else {
            unreachable!()
        };
        std::fs::write(
            user.path().join("asymflow.toml"),
            format!("remote = \"s3://no-such-bucket-asymflow/x\"\nendpoint = \"{endpoint}\"\n"),
        )
        .unwrap();
        let out = user.run(&["remote", "status"]);
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("NoSuchBucket") && stderr.contains("fix: the bucket does not exist"),
            "{stderr}"
        );
        std::fs::write(
            user.path().join("asymflow.toml"),
            "remote = \"s3://b/x\"\nendpoint = \"http://127.0.0.1:9\"\n",
        )
        .unwrap();
        let out = user.run(&["remote", "status"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("does not answer"), "{stderr}");
    }
}

#[test]
fn remote_pull_fetches_what_a_pipeline_needs_and_status_shows_it() {
    for remote in TeamRemote::all("remote_pull_fetches") {
        let a = User::new(&remote, true);
        a.ok(&["run", "pipelines/team.toml"]);
        let b = User::new(&remote, false);
        let (stdout, _) = b.ok(&["remote", "status", "pipelines/team.toml"]);
        assert!(stdout.contains("4 records"), "{stdout}");
        assert_eq!(stdout.matches("not local").count(), 4, "{stdout}");
        let (_, stderr) = b.ok(&["pull", "pipelines/team.toml"]);
        assert!(stderr.contains("pulled 4 records"), "{stderr}");
        let (stdout, _) = b.ok(&["remote", "status", "pipelines/team.toml"]);
        assert_eq!(
            stdout.matches("local      on remote").count(),
            4,
            "{stdout}"
        );
        b.forget_trace();
        let (statuses, _) = b.run_statuses(&["--offline"]);
        assert!(statuses.iter().all(|(_, s)| s == "cached"));
        let c = User::new(&remote, false);
        let (_, stderr) = c.ok(&["pull", "--all"]);
        assert!(stderr.contains("pulled 4 records"), "{stderr}");
    }
}

/// A result with one large output (over the multipart threshold) in a fresh local cache.
fn large_result(dir: &Path) -> (asymflow::cache::Cache, asymflow::cache::RunRecord, Vec<u8>) {
    let cache = asymflow::cache::Cache::new(dir);
    let mut content = vec![0u8; (17 << 20) + 5];
    for (i, b) in content.iter_mut().enumerate() {
        *b = (i as u64).wrapping_mul(2_654_435_761).rotate_right(13) as u8;
    }
    let (digest, size) = cache.objects().put_bytes(&content).unwrap();
    let key_json = "{\"test\":\"large\"}".to_string();
    let run = asymflow::cache::RunRecord {
        key: blake3::hash(key_json.as_bytes()).to_hex().to_string(),
        stage: "teacher".into(),
        kind: "test-echo".into(),
        pipeline: "large".into(),
        binding: "{}".into(),
        key_json,
        started: 1.0,
        finished: 2.0,
        duration: 1.0,
        device: "cpu".into(),
        outputs: [(
            "model.safetensors".to_string(),
            asymflow::cache::OutputRef {
                digest: digest.clone(),
                is_dir: false,
            },
        )]
        .into(),
        metrics: Default::default(),
    };
    cache
        .index()
        .unwrap()
        .record_success(&run, &[(digest, size)])
        .unwrap();
    (cache, run, content)
}

#[test]
fn remote_a_large_blob_goes_up_in_parts_and_comes_back_verified() {
    for remote in TeamRemote::all("remote_a_large_blob") {
        let dir = tempfile::tempdir().unwrap();
        let user = User::new(&remote, false);
        let config = asymflow::config::ProjectConfig::load(user.path()).unwrap();
        let r = asymflow::cache::remote::Remote::from_config(&config)
            .unwrap()
            .unwrap();
        let (cache, run, content) = large_result(&dir.path().join("a"));
        let stats = r.push(&cache, &run).unwrap();
        assert!(
            stats.created && stats.blobs == 1,
            "{}: {stats:?}",
            remote.name()
        );
        assert_eq!(stats.bytes, content.len() as u64);
        // A second push finds it there.
        assert!(!r.push(&cache, &run).unwrap().created);
        let digest = &run.outputs["model.safetensors"].digest;
        assert_eq!(remote.get(&format!("cas/{digest}")).unwrap(), content);

        let fresh = asymflow::cache::Cache::new(&dir.path().join("b"));
        let fetched = r.fetch(&fresh, &run.key, None).unwrap().unwrap();
        assert_eq!(fetched.bytes, content.len() as u64);
        let path = fresh.objects().open_verified(digest).unwrap();
        assert_eq!(std::fs::read(path).unwrap(), content);
        assert!(fresh.index().unwrap().lookup(&run.key).unwrap().is_some());
    }
}
