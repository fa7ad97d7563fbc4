//! The remote cache: the same two things as a local cache, an action cache and objects, on a
//! shared folder or an S3-compatible store, so a teammate gets a trained teacher in seconds
//! instead of retraining it.
//!
//! Layout: `cas/<blake3>` holds blobs, `ac/<stage key>.json` holds records (outputs with
//! digests, metrics, provenance; see [`record`]). The local SQLite index is never shared: each
//! machine keeps its own and fills it from the remote (WAL does not work on network file
//! systems).
//!
//! The guarantees, and where they are kept:
//! - a record is published only after every blob it names, with create-only puts (the first
//!   writer wins; an existing object is success): [`push`];
//! - every download is hashed while it streams into a temp file and used only if it matches;
//!   a mismatch quarantines the blob (locally and on the remote) and is a miss; a record whose
//!   blobs are missing is a miss: [`download`];
//! - with a team secret records are signed, and an unsigned or badly signed record is a miss;
//!   every path and digest in a record is validated before it is used, its kind must be the
//!   one its key was computed for and its output names what that kind declares: [`record`],
//!   [`signing`]; a puller without the secret facing signed records is told, once, that it
//!   cannot check them;
//! - a record carries no numbers: its metrics are read from the `metrics.json` object it names,
//!   after that object is verified, and every output whose type can be told from its bytes is
//!   checked for it (a model is safetensors): [`content`], [`download`];
//! - servers that ignore create-only puts are detected, once, and the user told: [`backend`];
//! - `remote gc` aborts the multipart uploads a killed push left on S3, which `object_store`
//!   cannot list: [`uploads`];
//! - bundles (`export -o results.tar`, `import`) carry the same layout and go through the
//!   same verification: [`bundle`].
//!
//! The rest of asymflow calls three things: [`Remote::fetch`] (read-through: a local miss
//! found on the remote is pulled, verified and recorded), [`Remote::push`], and
//! [`Remote::lookup`] (what `plan` shows as "on remote").

mod backend;
pub mod bundle;
mod content;
mod credentials;
mod download;
mod error;
pub mod gc;
mod limits;
mod push;
pub mod record;
mod signing;
mod uploads;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::cache::{Cache, RunRecord};
use crate::config::ProjectConfig;
use crate::kind::Registry;

pub(crate) use download::Fetched;
pub use error::RemoteError;
pub(crate) use push::PushStats;
pub(crate) use record::Invalid;

/// The outcome of fetching one key.
pub(crate) type FetchResult = Result<Option<Fetched>, RemoteError>;

/// What `remote status` reports about the store itself.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RemoteSummary {
    /// Where it points.
    pub url: String,
    /// Records (`ac/`), when counted: counting lists every record.
    pub records: Option<usize>,
    /// Blobs (`cas/`), when counted.
    pub blobs: Option<usize>,
    /// Bytes in blobs, when counted.
    pub bytes: Option<u64>,
    /// Whether records are signed and checked.
    pub signing: bool,
    /// Whether `run` pushes.
    pub push: bool,
}

/// Where a remote's warnings go (standard error unless a command says otherwise).
pub(crate) type WarnSink = Box<dyn Fn(&str) + Send + Sync>;

/// A record that passed every check, with the metrics of its verified `metrics.json`.
type Looked = (record::RecordBody, BTreeMap<String, f64>);

/// A remote cache.
pub struct Remote {
    backend: backend::Backend,
    secret: Option<String>,
    push_after_run: bool,
    /// The kinds whose output declarations records are checked against.
    kinds: Arc<Registry>,
    /// Set when the remote failed during a run: the rest of the run stays local instead of
    /// waiting on it for every instance.
    unavailable: AtomicBool,
    /// Where warnings go.
    warn: WarnSink,
    /// Whether the "signed records, no secret" warning was given.
    told_unchecked: AtomicBool,
    /// Whether the store honours create-only puts (found out at the first push).
    create_only: OnceLock<bool>,
    /// Records read and checked by this process, by key: a pull looks a record up and then
    /// fetches it without reading it again.
    looked: Mutex<HashMap<String, Looked>>,
    /// Records read from the store (`ac/` GETs), for tests and benchmarks.
    record_reads: AtomicUsize,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("url", &self.backend.url)
            .field("signing", &self.secret.is_some())
            .field("push", &self.push_after_run)
            .finish()
    }
}

impl Remote {
    fn new(
        backend: backend::Backend,
        secret: Option<String>,
        push_after_run: bool,
        kinds: Arc<Registry>,
    ) -> Remote {
        Remote {
            backend,
            secret,
            push_after_run,
            kinds,
            unavailable: AtomicBool::new(false),
            warn: Box::new(|m| eprintln!("{m}")),
            told_unchecked: AtomicBool::new(false),
            create_only: OnceLock::new(),
            looked: Mutex::new(HashMap::new()),
            record_reads: AtomicUsize::new(0),
        }
    }

    /// The remote a project's configuration names, if any (nothing is contacted yet). Records
    /// are checked against the output declarations of `kinds`.
    pub fn from_config(
        config: &ProjectConfig,
        kinds: Arc<Registry>,
    ) -> Result<Option<Remote>, RemoteError> {
        let Some(url) = &config.remote else {
            return Ok(None);
        };
        let conn = backend::Connection {
            endpoint: config.endpoint.clone(),
            region: config.region.clone(),
        };
        Ok(Some(Remote::new(
            backend::Backend::open(url, &conn)?,
            config.secret.clone(),
            config.push,
            kinds,
        )))
    }

    /// A remote on a folder (`file://`), signing with `secret` (bundles, tests).
    pub fn folder(
        dir: &Path,
        secret: Option<String>,
        kinds: Arc<Registry>,
    ) -> Result<Remote, RemoteError> {
        let url = url::Url::from_directory_path(dir)
            .map_err(|()| RemoteError::local(dir, "not an absolute folder"))?;
        Ok(Remote::new(
            backend::Backend::open(url.as_str(), &backend::Connection::default())?,
            secret,
            false,
            kinds,
        ))
    }

    /// How many records this process has read from the store.
    pub fn record_reads(&self) -> usize {
        self.record_reads.load(Ordering::Relaxed)
    }

    /// Where it points.
    pub fn url(&self) -> &str {
        &self.backend.url
    }

    /// Whether `run` pushes what it computes.
    pub(crate) fn push_after_run(&self) -> bool {
        self.push_after_run
    }

    /// Contacts the remote and, with `count`, counts what it holds; an error says what and how
    /// to fix it. Counting lists every record and blob (a million records are a thousand
    /// listing requests on S3), so only a command that asks for it counts.
    pub fn summary(&self, count: bool) -> Result<RemoteSummary, RemoteError> {
        self.probe()?;
        let (records, blobs, bytes) = if count {
            let records = self.backend.list("ac")?;
            let blobs = self.backend.list("cas")?;
            let bytes = blobs.iter().map(|(_, s)| s).sum();
            (Some(records.len()), Some(blobs.len()), Some(bytes))
        } else {
            (None, None, None)
        };
        Ok(RemoteSummary {
            url: self.backend.url.clone(),
            records,
            blobs,
            bytes,
            signing: self.secret.is_some(),
            push: self.push_after_run,
        })
    }

    /// Checks that the remote answers, with these credentials, and the bucket exists.
    pub fn probe(&self) -> Result<(), RemoteError> {
        // A listing, not a HEAD: S3 answers a HEAD in a missing bucket with a plain 404.
        self.backend.list("probe").map(|_| ())
    }

    /// Every stage key the remote holds a record for.
    pub fn keys(&self) -> Result<Vec<String>, RemoteError> {
        Ok(self
            .backend
            .list("ac")?
            .into_iter()
            .filter_map(|(path, _)| {
                let key = path.strip_prefix("ac/")?.strip_suffix(".json")?;
                record::is_digest(key).then(|| key.to_string())
            })
            .collect())
    }

    /// The record stored for `key`, authenticated and validated, with the metrics of its
    /// verified `metrics.json` but without its other blobs (what `plan` reports as "on
    /// remote"). `None` when there is none.
    pub fn lookup(&self, key: &str) -> Result<Option<RunRecord>, RemoteError> {
        Ok(self
            .looked(key)?
            .map(|(body, metrics)| body.to_run(metrics)))
    }

    /// The checked record and its metrics, read once per process.
    fn looked(&self, key: &str) -> Result<Option<Looked>, RemoteError> {
        if let Some(found) = self.memo().get(key) {
            return Ok(Some(found.clone()));
        }
        let Some(body) = self.lookup_body(key)? else {
            return Ok(None);
        };
        let metrics = self.remote_metrics(&body)?;
        let found = (body, metrics);
        self.memo().insert(key.to_string(), found.clone());
        Ok(Some(found))
    }

    fn memo(&self) -> std::sync::MutexGuard<'_, HashMap<String, Looked>> {
        self.looked.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The metrics of `body`: its `metrics.json` object, downloaded and checked against its
    /// digest (none when the record has no metrics).
    fn remote_metrics(
        &self,
        body: &record::RecordBody,
    ) -> Result<BTreeMap<String, f64>, RemoteError> {
        let Some(output) = body.outputs.get(crate::kind::METRICS_OUTPUT) else {
            return Ok(BTreeMap::new());
        };
        let digest = &output.digest;
        let Some(bytes) = self.backend.get_bytes(&format!("cas/{digest}"))? else {
            return Err(RemoteError::MissingBlob {
                key: body.key.clone(),
                digest: digest.clone(),
            });
        };
        let actual = blake3::hash(&bytes).to_hex().to_string();
        if &actual != digest {
            return Err(RemoteError::Corrupt {
                digest: digest.clone(),
                actual,
                quarantined: "nothing (found by a lookup; a pull quarantines it)".into(),
            });
        }
        record::read_metrics(&bytes).map_err(|why| RemoteError::Rejected {
            key: body.key.clone(),
            why,
        })
    }

    fn lookup_body(&self, key: &str) -> Result<Option<record::RecordBody>, RemoteError> {
        if !record::is_digest(key) {
            return Err(RemoteError::Rejected {
                key: key.chars().take(80).collect(),
                why: Invalid::Digest {
                    what: "stage key".into(),
                    value: key.chars().take(80).collect(),
                },
            });
        }
        self.record_reads.fetch_add(1, Ordering::Relaxed);
        let Some(bytes) = self.backend.get_bytes(&format!("ac/{key}.json"))? else {
            return Ok(None);
        };
        let (body, unchecked) =
            record::Envelope::open(&bytes, key, self.secret.as_deref(), &self.kinds).map_err(
                |why| RemoteError::Rejected {
                    key: key.to_string(),
                    why,
                },
            )?;
        if unchecked && !self.told_unchecked.swap(true, Ordering::Relaxed) {
            (self.warn)(&format!(
                "warning: the records on {} are signed, but ASYMFLOW_REMOTE_SECRET is not set here: their signatures cannot be checked, so an edited record goes unnoticed (its objects are still verified by digest and type, and its metrics read from its verified metrics.json); set the team's secret to check them",
                self.backend.url
            ));
        }
        Ok(Some(body))
    }

    /// Read-through: when the remote holds `key`, downloads every blob of its record into the
    /// local object store (each verified while it streams), then records the run in the local
    /// index. `None` when the remote has no record. A rejected record, a corrupt or missing
    /// blob is an error for which [`RemoteError::is_miss`] holds: the caller computes. A record
    /// this process already looked up is not read again.
    pub fn fetch(
        &self,
        cache: &Cache,
        key: &str,
        progress: Option<&indicatif::ProgressBar>,
    ) -> Result<Option<Fetched>, RemoteError> {
        let memo = self.memo().get(key).map(|(body, _)| body.clone());
        let body = match memo {
            Some(body) => body,
            None => match self.lookup_body(key)? {
                Some(body) => body,
                None => return Ok(None),
            },
        };
        download::fetch_record(&self.backend, cache, &body, progress).map(Some)
    }

    /// [`Remote::fetch`] of every key in `keys`, `parallel` at a time (downloads are mostly
    /// waiting on the network, so a pull of many small results needs them side by side).
    /// The results are in the order of `keys`.
    pub fn fetch_many(
        &self,
        cache: &Cache,
        keys: &[String],
        parallel: usize,
        progress: Option<&indicatif::ProgressBar>,
    ) -> Vec<FetchResult> {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results: Vec<std::sync::Mutex<Option<FetchResult>>> =
            keys.iter().map(|_| std::sync::Mutex::new(None)).collect();
        std::thread::scope(|scope| {
            for _ in 0..parallel.clamp(1, keys.len().max(1)) {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(key) = keys.get(i) else { break };
                    let result = self.fetch(cache, key, progress);
                    *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
                });
            }
        });
        results
            .into_iter()
            .map(|m| {
                m.into_inner()
                    .unwrap_or_else(|p| p.into_inner())
                    .expect("every key was fetched")
            })
            .collect()
    }

    /// Whether the store honours create-only puts ("first writer wins"), found out once per
    /// process with a probe object; the first answer `false` is also a warning saying what
    /// that means.
    pub(crate) fn create_only_holds(&self) -> Result<bool, RemoteError> {
        if let Some(holds) = self.create_only.get() {
            return Ok(*holds);
        }
        let holds = self.backend.create_only_holds()?;
        if self.create_only.set(holds).is_ok() && !holds {
            (self.warn)(&format!(
                "warning: {} ignores create-only puts (If-None-Match): a second write of an object replaced the first, so \"the first writer wins\" does not hold there. asymflow checks for an existing record before writing one, which leaves a short race: two teammates pushing the same stage at the same moment may both write, and the later record replaces the earlier (both are verified when pulled). Blobs are named by their content, so rewriting one changes nothing.",
                self.backend.url
            ));
        }
        Ok(holds)
    }

    /// Publishes a local record and its blobs: blobs first, the record last, each only when
    /// the remote does not have it yet (a HEAD first, then a create-only put). Blobs are
    /// verified locally before they leave.
    pub fn push(&self, cache: &Cache, run: &RunRecord) -> Result<PushStats, RemoteError> {
        self.create_only_holds()?;
        push::push_record(
            &self.backend,
            cache,
            run,
            self.secret.as_deref(),
            &self.kinds,
        )
    }

    /// [`Remote::push`] of every record in `runs`, `parallel` at a time; `done` is called after
    /// each (in the order they finish). The results are in the order of `runs`.
    pub(crate) fn push_many(
        &self,
        cache: &Cache,
        runs: &[RunRecord],
        parallel: usize,
        done: &(dyn Fn(&RunRecord, &Result<PushStats, RemoteError>) + Sync),
    ) -> Vec<Result<PushStats, RemoteError>> {
        if let Err(e) = self.create_only_holds() {
            return runs
                .iter()
                .map(|_| Err(error::clone_unavailable(&e)))
                .collect();
        }
        let next = AtomicUsize::new(0);
        let results: Vec<Mutex<Option<Result<PushStats, RemoteError>>>> =
            runs.iter().map(|_| Mutex::new(None)).collect();
        std::thread::scope(|scope| {
            for _ in 0..parallel.clamp(1, runs.len().max(1)) {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(run) = runs.get(i) else { break };
                    let result = self.push(cache, run);
                    done(run, &result);
                    *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
                });
            }
        });
        results
            .into_iter()
            .map(|m| {
                m.into_inner()
                    .unwrap_or_else(|p| p.into_inner())
                    .expect("every record was pushed")
            })
            .collect()
    }

    /// For `run`: [`Remote::fetch`] with every failure turned into a warning (through `warn`)
    /// and a miss, so the stage computes. After the remote itself fails once, the rest of the
    /// run does not ask it again.
    pub(crate) fn read_through(
        &self,
        cache: &Cache,
        key: &str,
        warn: &dyn Fn(&str),
    ) -> Option<RunRecord> {
        if self.unavailable.load(Ordering::Relaxed) {
            return None;
        }
        match self.fetch(cache, key, None) {
            Ok(fetched) => fetched.map(|f| f.record),
            Err(e) if e.is_miss() => {
                warn(&format!("warning: {e}; computing it instead"));
                None
            }
            Err(e) => {
                self.unavailable.store(true, Ordering::Relaxed);
                warn(&format!(
                    "warning: {e}\n  the rest of this run computes locally"
                ));
                None
            }
        }
    }

    /// For `run` with `push = true`: [`Remote::push`], a failure being a warning.
    pub(crate) fn push_after(&self, cache: &Cache, run: &RunRecord, warn: &dyn Fn(&str)) {
        if self.unavailable.load(Ordering::Relaxed) {
            return;
        }
        if let Err(e) = self.push(cache, run) {
            if !e.is_miss() {
                self.unavailable.store(true, Ordering::Relaxed);
            }
            warn(&format!(
                "warning: pushing {} failed: {e}\n  `asymflow push FILE` retries later",
                run.stage
            ));
        }
    }
}
