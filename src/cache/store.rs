//! The SQLite index of the cache (`index.sqlite`, WAL): one connection type, [`Index`], and
//! its schema. What the index holds is split by concept: [`super::results`] (the action cache:
//! runs, outputs, metrics, the object table), [`super::leases`] (who is computing what) and
//! [`super::memo`] (remembered file hashes). Each adds its methods to [`Index`].
//!
//! Migrations are append-only (like cargo's `util/sqlite.rs`): [`MIGRATIONS`] only ever grows,
//! and `pragma user_version` records how many have been applied. Never edit a past migration.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, TransactionBehavior};

/// A cache-index error.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// SQLite failed.
    #[error("cache index: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A recorded result names an output or digest that could write outside its folder.
    #[error("cache index: result {key} records {what}; the index may have been tampered with: run `asymflow cache verify` to forget such results")]
    Unsafe {
        /// The result's key.
        key: String,
        /// What is wrong with it.
        what: String,
    },
    /// The lease heartbeat thread could not start.
    #[error("cache index: cannot start the lease heartbeat thread: {0}")]
    Heartbeat(std::io::Error),
    /// The index was written by a newer asymflow.
    #[error("cache index {path} has schema version {found}, newer than this asymflow knows ({known}); upgrade asymflow or use another --cache")]
    TooNew {
        /// The index file.
        path: String,
        /// Its version.
        found: usize,
        /// Ours.
        known: usize,
    },
}

/// The schema, one statement batch per version. Append only.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: the action cache, objects, leases, the per-stage history for `why`, the hash memo.
    "CREATE TABLE runs (
        key TEXT PRIMARY KEY,
        stage TEXT NOT NULL,
        kind TEXT NOT NULL,
        pipeline TEXT NOT NULL,
        binding TEXT NOT NULL,
        key_json TEXT NOT NULL,
        status TEXT NOT NULL,
        started REAL NOT NULL,
        finished REAL NOT NULL,
        duration REAL NOT NULL,
        device TEXT NOT NULL,
        error TEXT
    );
    CREATE TABLE outputs (
        key TEXT NOT NULL,
        name TEXT NOT NULL,
        digest TEXT NOT NULL,
        is_dir INTEGER NOT NULL,
        PRIMARY KEY (key, name)
    );
    CREATE TABLE metrics (
        key TEXT NOT NULL,
        name TEXT NOT NULL,
        value REAL NOT NULL,
        PRIMARY KEY (key, name)
    );
    CREATE TABLE objects (
        digest TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        last_used REAL NOT NULL
    );
    CREATE TABLE leases (
        key TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        heartbeat REAL NOT NULL
    );
    CREATE TABLE history (
        pipeline TEXT NOT NULL,
        stage TEXT NOT NULL,
        binding TEXT NOT NULL,
        key TEXT NOT NULL,
        at REAL NOT NULL,
        PRIMARY KEY (pipeline, stage, binding)
    );
    CREATE TABLE file_hashes (
        path TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        digest TEXT NOT NULL
    );",
    // 2: lease liveness beyond the PID: `boot id|PID namespace|process start time`.
    "ALTER TABLE leases ADD COLUMN liveness TEXT NOT NULL DEFAULT '';",
    // 3: the hash memo also keyed on device, inode and ctime, as git's index is (a rewrite at
    // the same size with the mtime put back is still seen).
    "ALTER TABLE file_hashes ADD COLUMN dev INTEGER NOT NULL DEFAULT -1;
    ALTER TABLE file_hashes ADD COLUMN ino INTEGER NOT NULL DEFAULT -1;
    ALTER TABLE file_hashes ADD COLUMN ctime_ns INTEGER NOT NULL DEFAULT -1;",
    // 4: provenance of each result (what produced it, never part of its key).
    "CREATE TABLE provenance (
        key TEXT PRIMARY KEY,
        asymflow TEXT NOT NULL,
        git_commit TEXT NOT NULL,
        libtorch TEXT NOT NULL,
        device TEXT NOT NULL,
        threads INTEGER NOT NULL
    );",
    // 5: provenance says where and by what a result ran, and keeps its telemetry.
    "ALTER TABLE provenance ADD COLUMN host TEXT NOT NULL DEFAULT '';
     ALTER TABLE provenance ADD COLUMN runner TEXT NOT NULL DEFAULT '';
     ALTER TABLE provenance ADD COLUMN telemetry TEXT NOT NULL DEFAULT '{}';
     ALTER TABLE provenance ADD COLUMN visible_devices TEXT;",
    // 6: the job a lease's holder submitted to a cluster (JSON of `ExternalJob`), so a
    // restarted engine follows it instead of submitting again; NULL for local work.
    "ALTER TABLE leases ADD COLUMN external TEXT;",
    // 7: `why` explains a rerun against the closest cached result of the same instance, and
    // `plan` estimates durations from results of the same kind: both look results up by an
    // index, never by scanning every result. `forgotten` remembers which keys `cache forget`
    // (or `cache verify`, `cache gc`) removed, so a rerun says so.
    "CREATE INDEX runs_by_instance ON runs (pipeline, stage, binding, status, finished);
     CREATE INDEX runs_by_kind ON runs (kind, status, finished);
     CREATE TABLE forgotten (key TEXT PRIMARY KEY, at REAL NOT NULL);",
    // 8: what `status` asks of an index that grew for years, answered from indexes instead of
    // a scan of every row (a million results took seconds): results counted by status, the
    // most recent ones (and `cache gc --older-than`'s old ones) by time, the objects' count
    // and bytes from their sizes.
    "CREATE INDEX runs_status ON runs(status);
     CREATE INDEX runs_finished ON runs(finished);
     CREATE INDEX objects_size ON objects(size);",
    // 9: `plan` and the dashboard read a result's outputs (and its metrics) by key for every
    // instance they show, 100,000 for a large sweep. Stored clustered by (key, name) (WITHOUT
    // ROWID), one B-tree descent finds all of a result's rows, where the row-id tables took
    // one more per row; `runs(key, status)` answers "is this a success" from the index alone.
    "CREATE TABLE outputs_by_key (
        key TEXT NOT NULL,
        name TEXT NOT NULL,
        digest TEXT NOT NULL,
        is_dir INTEGER NOT NULL,
        PRIMARY KEY (key, name)
    ) WITHOUT ROWID;
    INSERT INTO outputs_by_key (key, name, digest, is_dir)
        SELECT key, name, digest, is_dir FROM outputs;
    DROP TABLE outputs;
    ALTER TABLE outputs_by_key RENAME TO outputs;
    CREATE TABLE metrics_by_key (
        key TEXT NOT NULL,
        name TEXT NOT NULL,
        value REAL NOT NULL,
        PRIMARY KEY (key, name)
    ) WITHOUT ROWID;
    INSERT INTO metrics_by_key (key, name, value) SELECT key, name, value FROM metrics;
    DROP TABLE metrics;
    ALTER TABLE metrics_by_key RENAME TO metrics;
    CREATE INDEX runs_key_status ON runs(key, status);",
];

/// The index connection. One per thread; SQLite serialises writers.
pub struct Index {
    pub(super) conn: Connection,
}

/// Seconds since the Unix epoch.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// This machine's name (for leases).
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "localhost".into())
}

impl Index {
    /// Opens (creating and migrating) `cache_dir/index.sqlite`.
    pub fn open(cache_dir: &Path) -> Result<Index, IndexError> {
        std::fs::create_dir_all(cache_dir).map_err(|e| {
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                Some(format!(
                    "cannot create cache folder {}: {e}",
                    cache_dir.display()
                )),
            )
        })?;
        let path = cache_dir.join("index.sqlite");
        let mut conn = Connection::open(&path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        use_wal(&conn)?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        let version: usize = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version > MIGRATIONS.len() {
            return Err(IndexError::TooNew {
                path: path.display().to_string(),
                found: version,
                known: MIGRATIONS.len(),
            });
        }
        if version < MIGRATIONS.len() {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Exclusive)?;
            let version: usize = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
            for (i, migration) in MIGRATIONS.iter().enumerate().skip(version) {
                tx.execute_batch(migration)?;
                tx.pragma_update(None, "user_version", i + 1)?;
            }
            tx.commit()?;
        }
        Ok(Index { conn })
    }
}

/// How long a connection waits for another process's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Puts the index in WAL mode (persistent, so once per file). Switching needs the database to
/// itself, and SQLite answers `SQLITE_BUSY` at once, without its busy handler, when another
/// process has it open at that moment: two runs starting on a fresh cache both switch. So the
/// mode is read first, and the switch retried until [`BUSY_TIMEOUT`].
fn use_wal(conn: &Connection) -> Result<(), rusqlite::Error> {
    let clock = std::time::Instant::now();
    loop {
        let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
        if mode.eq_ignore_ascii_case("wal") {
            return Ok(());
        }
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0)) {
            Ok(_) => return Ok(()),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && clock.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e),
        }
    }
}

/// A consistent read of the index: until it is dropped, every query on its connection sees one
/// snapshot, and SQLite takes its WAL read lock once instead of once per statement (`plan` of
/// 10,000 instances spent a third of its time taking and releasing those locks).
pub(crate) struct ReadSnapshot<'a> {
    _tx: rusqlite::Transaction<'a>,
}

impl Index {
    /// SQLite's `data_version`: it changes when any other connection commits to the index,
    /// so two equal readings on one connection mean nothing was written in between.
    pub(crate) fn data_version(&self) -> Result<i64, IndexError> {
        Ok(self
            .conn
            .pragma_query_value(None, "data_version", |r| r.get(0))?)
    }

    /// Starts a [`ReadSnapshot`]; for reads only (dropping it rolls back).
    pub(crate) fn read_snapshot(&self) -> Result<ReadSnapshot<'_>, IndexError> {
        Ok(ReadSnapshot {
            _tx: self.conn.unchecked_transaction()?,
        })
    }
}
