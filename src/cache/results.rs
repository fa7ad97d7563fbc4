//! The action cache: which keys have results, their outputs and metrics, the objects they
//! reference, the per-stage history `why` diffs against, and the queries `show`, `status`,
//! `cache gc` and `cache verify` need.
//!
//! Freshness rule: a key is a hit only when its row in `runs` has status `ok`; that row is
//! written in the same transaction as its `outputs` and `metrics`, after every output object
//! is already in the object store. A crash before the commit leaves no trace but unreferenced
//! objects, which `cache gc` removes.

use std::collections::BTreeMap;

use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::objects::{check_relative_path, is_digest};
use super::store::{Index, IndexError};

/// One output of a recorded run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OutputRef {
    /// Content digest (of the manifest, for a directory).
    pub digest: String,
    /// Whether it is a directory output.
    pub is_dir: bool,
}

/// A recorded successful run.
#[derive(Debug, Clone)]
pub struct RunRecord {
    /// The stage key (hex).
    pub key: String,
    /// The stage's name when it ran.
    pub stage: String,
    /// Its kind.
    pub kind: String,
    /// The pipeline's name.
    pub pipeline: String,
    /// The sweep binding (JSON).
    pub binding: String,
    /// The canonical key JSON (for `why`).
    pub key_json: String,
    /// Seconds since the epoch.
    pub started: f64,
    /// Seconds since the epoch.
    pub finished: f64,
    /// Wall-clock seconds.
    pub duration: f64,
    /// Where it ran (`cpu`, `cuda:0`).
    pub device: String,
    /// Output name -> object.
    pub outputs: BTreeMap<String, OutputRef>,
    /// Metric name -> value.
    pub metrics: BTreeMap<String, f64>,
}

/// One line of `asymflow status`'s recent runs.
#[derive(Debug, Clone)]
pub(crate) struct RecentRun {
    /// The key.
    pub key: String,
    /// The stage.
    pub stage: String,
    /// The pipeline.
    pub pipeline: String,
    /// `ok` or `failed`.
    pub status: String,
    /// Seconds it ran.
    pub duration: f64,
}

/// Checks a recorded output before anyone joins its name to a folder or its digest to the
/// store: the name is one safe path part, the digest 64 lowercase hex characters.
pub(crate) fn check_output(key: &str, name: &str, output: &OutputRef) -> Result<(), IndexError> {
    let unsafe_because = |what: String| IndexError::Unsafe {
        key: key.chars().take(64).collect(),
        what,
    };
    if name.contains('/') || check_relative_path(name, "an output name").is_err() {
        return Err(unsafe_because(format!(
            "the output name `{}`, which is not one plain file name",
            name.chars().take(100).collect::<String>()
        )));
    }
    if !is_digest(&output.digest) {
        return Err(unsafe_because(format!(
            "`{}` as the digest of output `{name}`",
            output.digest.chars().take(100).collect::<String>()
        )));
    }
    Ok(())
}

/// Hands `rows`, the rows of `key`, to `take` for each position in `chunk` (positions of
/// `keys`, in key order, from `next` on) whose key it is; returns where the next key's
/// positions start.
fn hand_over<T: Clone>(
    keys: &[&str],
    chunk: &[usize],
    mut next: usize,
    key: &str,
    rows: Vec<T>,
    take: &mut impl FnMut(&str, usize, Vec<T>) -> Result<(), IndexError>,
) -> Result<usize, IndexError> {
    while next < chunk.len() && keys[chunk[next]] < key {
        next += 1;
    }
    let same = chunk[next..]
        .iter()
        .take_while(|&&at| keys[at] == key)
        .count();
    if let Some((&last, rest)) = chunk[next..next + same].split_last() {
        for &at in rest {
            take(key, at, rows.clone())?;
        }
        take(key, last, rows)?;
    }
    Ok(next + same)
}

/// How many keys one query of [`Index::metrics_of_each`] or [`Index::outputs_of_each`] names:
/// far below SQLite's limit on bound values (32,766).
const KEYS_PER_QUERY: usize = 500;

impl Index {
    /// The successful run recorded for `key`, with its outputs and metrics.
    pub fn lookup(&self, key: &str) -> Result<Option<RunRecord>, IndexError> {
        let row = self
            .conn
            .prepare_cached(
                "SELECT stage, kind, pipeline, binding, key_json, started, finished, duration, device
                 FROM runs WHERE key = ?1 AND status = 'ok'",
            )?
            .query_row(
                [key],
                |r| {
                    Ok(RunRecord {
                        key: key.to_string(),
                        stage: r.get(0)?,
                        kind: r.get(1)?,
                        pipeline: r.get(2)?,
                        binding: r.get(3)?,
                        key_json: r.get(4)?,
                        started: r.get(5)?,
                        finished: r.get(6)?,
                        duration: r.get(7)?,
                        device: r.get(8)?,
                        outputs: BTreeMap::new(),
                        metrics: BTreeMap::new(),
                    })
                },
            )
            .optional()?;
        let Some(mut record) = row else {
            return Ok(None);
        };
        let mut stmt = self
            .conn
            .prepare_cached("SELECT name, digest, is_dir FROM outputs WHERE key = ?1")?;
        for row in stmt.query_map([key], |r| {
            Ok((
                r.get::<_, String>(0)?,
                OutputRef {
                    digest: r.get(1)?,
                    is_dir: r.get(2)?,
                },
            ))
        })? {
            let (name, output) = row?;
            check_output(key, &name, &output)?;
            record.outputs.insert(name, output);
        }
        record.metrics = self.metrics_of(key)?;
        Ok(Some(record))
    }

    /// The metrics recorded for `key` (none when it has no result).
    fn metrics_of(&self, key: &str) -> Result<BTreeMap<String, f64>, IndexError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT name, value FROM metrics WHERE key = ?1")?;
        let rows = stmt.query_map([key], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The metrics recorded for each of `keys`, in their order: what [`Self::lookup`] reads
    /// of them, for the dashboard, which shows every cached instance's metrics but reads the
    /// rest of a record only for the instances a page opens ([`Self::rows_of_each`]: a query
    /// per key spent most of its time crossing into SQLite and back, 0.26 s for 100,000 keys).
    pub(crate) fn metrics_of_each(
        &self,
        keys: &[&str],
    ) -> Result<Vec<BTreeMap<String, f64>>, IndexError> {
        let mut out: Vec<BTreeMap<String, f64>> = vec![BTreeMap::new(); keys.len()];
        self.rows_of_each(
            keys,
            "SELECT key, name, value FROM metrics WHERE key IN",
            |r| Ok((r.get::<_, String>(1)?, r.get::<_, f64>(2)?)),
            |_, at, rows| {
                out[at] = rows.into_iter().collect();
                Ok(())
            },
        )?;
        Ok(out)
    }

    /// The outputs of the successful run recorded for each of `keys`, handed to `take` with
    /// the key's position in `keys` (once per position; a key without such a run is not
    /// handed): what [`Self::lookup`] reads of them, for `plan`, which only asks whether each
    /// instance's result is there. Handed over, not returned: a map of outputs is a kilobyte,
    /// and `plan` keeps only their digests. Read many keys to a query ([`Self::rows_of_each`]).
    pub(crate) fn outputs_of_each(
        &self,
        keys: &[&str],
        mut take: impl FnMut(usize, BTreeMap<String, OutputRef>),
    ) -> Result<(), IndexError> {
        self.rows_of_each(
            keys,
            "SELECT r.key, o.name, o.digest, o.is_dir FROM runs r
             LEFT JOIN outputs o ON o.key = r.key WHERE r.status = 'ok' AND r.key IN",
            |r| {
                Ok((
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, Option<bool>>(3)?,
                ))
            },
            |key, at, rows| {
                let mut outputs = BTreeMap::new();
                for row in rows {
                    if let (Some(name), Some(digest), Some(is_dir)) = row {
                        let output = OutputRef { digest, is_dir };
                        check_output(key, &name, &output)?;
                        outputs.insert(name, output);
                    }
                }
                take(at, outputs);
                Ok(())
            },
        )
    }

    /// Runs `select` (a query whose first column is a key, ending in `IN`) for `keys`, up to
    /// [`KEYS_PER_QUERY`] of them bound to a query, and hands the rows of each key, as `read`
    /// makes them, to `take` with the key and its position in `keys` (once per position for a
    /// key named twice). The keys are bound in order and the rows read in the same order, so
    /// each key's rows are matched to its positions as the two lists are walked side by side.
    fn rows_of_each<T: Clone>(
        &self,
        keys: &[&str],
        select: &str,
        read: impl Fn(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
        mut take: impl FnMut(&str, usize, Vec<T>) -> Result<(), IndexError>,
    ) -> Result<(), IndexError> {
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by_key(|&at| keys[at]);
        for chunk in order.chunks(KEYS_PER_QUERY) {
            let marks = vec!["?"; chunk.len()].join(",");
            let mut stmt = self
                .conn
                .prepare_cached(&format!("{select} ({marks}) ORDER BY 1"))?;
            let mut rows =
                stmt.query(rusqlite::params_from_iter(chunk.iter().map(|&at| keys[at])))?;
            let mut next = 0;
            let mut group: Option<(String, Vec<T>)> = None;
            while let Some(row) = rows.next()? {
                let key = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
                if group.as_ref().is_some_and(|(k, _)| k != key) {
                    let (k, rows) = group.take().expect("a group is open");
                    next = hand_over(keys, chunk, next, &k, rows, &mut take)?;
                }
                let (_, rows) = group.get_or_insert_with(|| (key.to_string(), Vec::new()));
                rows.push(read(row)?);
            }
            if let Some((k, rows)) = group {
                hand_over(keys, chunk, next, &k, rows, &mut take)?;
            }
        }
        Ok(())
    }

    /// The canonical key JSON of `key`'s last run, successful or not.
    pub fn key_json(&self, key: &str) -> Result<Option<String>, IndexError> {
        Ok(self
            .conn
            .prepare_cached("SELECT key_json FROM runs WHERE key = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()?)
    }

    /// Records a successful run, its outputs, metrics and object sizes, and the stage history,
    /// in one transaction. Every object must already be in the store.
    pub fn record_success(
        &mut self,
        run: &RunRecord,
        object_sizes: &[(String, u64)],
    ) -> Result<(), IndexError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("DELETE FROM outputs WHERE key = ?1", [&run.key])?;
        tx.execute("DELETE FROM metrics WHERE key = ?1", [&run.key])?;
        tx.execute("DELETE FROM forgotten WHERE key = ?1", [&run.key])?;
        tx.execute(
            "INSERT OR REPLACE INTO runs
             (key, stage, kind, pipeline, binding, key_json, status, started, finished, duration, device, error)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'ok', ?7, ?8, ?9, ?10, NULL)",
            params![
                run.key, run.stage, run.kind, run.pipeline, run.binding, run.key_json,
                run.started, run.finished, run.duration, run.device
            ],
        )?;
        for (name, output) in &run.outputs {
            tx.execute(
                "INSERT INTO outputs (key, name, digest, is_dir) VALUES (?1, ?2, ?3, ?4)",
                params![run.key, name, output.digest, output.is_dir],
            )?;
        }
        for (name, value) in &run.metrics {
            tx.execute(
                "INSERT INTO metrics (key, name, value) VALUES (?1, ?2, ?3)",
                params![run.key, name, value],
            )?;
        }
        for (digest, size) in object_sizes {
            tx.execute(
                "INSERT INTO objects (digest, size, last_used) VALUES (?1, ?2, ?3)
                 ON CONFLICT(digest) DO UPDATE SET last_used = excluded.last_used",
                params![digest, *size as i64, run.finished],
            )?;
        }
        tx.execute(
            "INSERT OR REPLACE INTO history (pipeline, stage, binding, key, at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![run.pipeline, run.stage, run.binding, run.key, run.finished],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Records a failed run (never a cache hit; kept for `show` and `status`).
    pub(crate) fn record_failure(
        &mut self,
        run: &RunRecord,
        error: &str,
    ) -> Result<(), IndexError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let has_ok: bool = tx
            .query_row(
                "SELECT 1 FROM runs WHERE key = ?1 AND status = 'ok'",
                [&run.key],
                |_| Ok(true),
            )
            .optional()?
            .unwrap_or(false);
        if !has_ok {
            tx.execute(
                "INSERT OR REPLACE INTO runs
                 (key, stage, kind, pipeline, binding, key_json, status, started, finished, duration, device, error)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'failed', ?7, ?8, ?9, ?10, ?11)",
                params![
                    run.key, run.stage, run.kind, run.pipeline, run.binding, run.key_json,
                    run.started, run.finished, run.duration, run.device, error
                ],
            )?;
            tx.execute(
                "INSERT OR REPLACE INTO history (pipeline, stage, binding, key, at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![run.pipeline, run.stage, run.binding, run.key, run.finished],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Forgets `key`'s result (after one of its objects was found corrupt or missing, or
    /// when asked), remembering that it did, so a rerun of that key says "forgotten".
    pub fn forget(&mut self, key: &str) -> Result<(), IndexError> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT OR REPLACE INTO forgotten (key, at)
             SELECT key, ?2 FROM runs WHERE key = ?1 AND status = 'ok'",
            params![key, super::store::now()],
        )?;
        tx.execute("DELETE FROM runs WHERE key = ?1", [key])?;
        tx.execute("DELETE FROM outputs WHERE key = ?1", [key])?;
        tx.execute("DELETE FROM metrics WHERE key = ?1", [key])?;
        tx.execute("DELETE FROM provenance WHERE key = ?1", [key])?;
        tx.commit()?;
        Ok(())
    }

    /// The key the named stage instance last ran (or failed) with in `pipeline`.
    pub(crate) fn last_key(
        &self,
        pipeline: &str,
        stage: &str,
        binding: &str,
    ) -> Result<Option<String>, IndexError> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT key FROM history WHERE pipeline = ?1 AND stage = ?2 AND binding = ?3",
            )?
            .query_row(params![pipeline, stage, binding], |r| r.get(0))
            .optional()?)
    }

    /// Whether `key`'s result was forgotten (and not recomputed since).
    pub(crate) fn was_forgotten(&self, key: &str) -> Result<bool, IndexError> {
        Ok(self
            .conn
            .prepare_cached("SELECT 1 FROM forgotten WHERE key = ?1")?
            .query_row([key], |_| Ok(()))
            .optional()?
            .is_some())
    }

    /// The key JSON of the newest `limit` successful results of one instance (pipeline, stage,
    /// binding), newest first: what `why` compares a rerun with. One index range, however
    /// many results the cache holds. The limit is written into the statement, not bound:
    /// SQLite re-prepares a statement whose bound `LIMIT` changed, and binding it again for
    /// every instance counts as a change, so `plan` of 20,000 instances spent a third of its
    /// time parsing this query.
    pub(crate) fn instance_results(
        &self,
        pipeline: &str,
        stage: &str,
        binding: &str,
        limit: usize,
    ) -> Result<Vec<(String, String)>, IndexError> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT key, key_json FROM runs
             WHERE pipeline = ?1 AND stage = ?2 AND binding = ?3 AND status = 'ok'
             ORDER BY finished DESC LIMIT {limit}"
        ))?;
        let rows = stmt.query_map(params![pipeline, stage, binding], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The newest `limit` successful results of `kind`, newest first: (key JSON, seconds it
    /// ran, the host it ran on or "" when not recorded), for `plan`'s time estimate. One index
    /// range, however many results the cache holds.
    pub(crate) fn durations_of_kind(
        &self,
        kind: &str,
        limit: usize,
    ) -> Result<Vec<(String, f64, String)>, IndexError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT r.key_json, r.duration, coalesce(p.host, '') FROM runs r
             LEFT JOIN provenance p ON p.key = r.key
             WHERE r.kind = ?1 AND r.status = 'ok'
             ORDER BY r.finished DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![kind, limit as i64], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Keys whose hex starts with `prefix`, with their stage names (for `show KEY`).
    pub(crate) fn keys_with_prefix(
        &self,
        prefix: &str,
    ) -> Result<Vec<(String, String)>, IndexError> {
        let mut stmt = self
            .conn
            .prepare("SELECT key, stage FROM runs WHERE substr(key, 1, length(?1)) = ?1")?;
        let rows = stmt.query_map([prefix], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The error text of a failed run.
    pub fn failure(&self, key: &str) -> Result<Option<String>, IndexError> {
        Ok(self
            .conn
            .prepare_cached("SELECT error FROM runs WHERE key = ?1 AND status = 'failed'")?
            .query_row([key], |r| r.get(0))
            .optional()?
            .flatten())
    }

    /// Every output row of every successful run, unchecked: (key, output name, output), for
    /// `cache verify`, which checks each of them.
    pub(crate) fn recorded_outputs(&self) -> Result<Vec<(String, String, OutputRef)>, IndexError> {
        let mut stmt = self.conn.prepare(
            "SELECT o.key, o.name, o.digest, o.is_dir FROM outputs o JOIN runs r ON r.key = o.key
             WHERE r.status = 'ok' ORDER BY o.key, o.name",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                OutputRef {
                    digest: r.get(2)?,
                    is_dir: r.get(3)?,
                },
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Calls `visit` with every output row, unchecked and in no order: (its result's key when
    /// `with_key`, the digest, whether it is a directory manifest). Rows exist only for
    /// successful results (`record_success` writes them, `forget` deletes them), so no join
    /// with `runs` is needed; `cache gc` reads three million of them for a million results
    /// and borrows each row's text instead of allocating it.
    pub(crate) fn each_output_digest(
        &self,
        with_key: bool,
        mut visit: impl FnMut(Option<&str>, &str, bool),
    ) -> Result<(), IndexError> {
        let sql = if with_key {
            "SELECT digest, is_dir, key FROM outputs"
        } else {
            "SELECT digest, is_dir FROM outputs"
        };
        let mut stmt = self.conn.prepare(sql)?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let digest = row_text(row, 0)?;
            let is_dir = row.get::<_, bool>(1)?;
            let key = if with_key {
                Some(row_text(row, 2)?)
            } else {
                None
            };
            visit(key, digest, is_dir);
        }
        Ok(())
    }

    /// Keys of successful runs that finished before `cutoff` (seconds since the epoch).
    pub(crate) fn runs_finished_before(&self, cutoff: f64) -> Result<Vec<String>, IndexError> {
        let mut stmt = self
            .conn
            .prepare("SELECT key FROM runs WHERE finished < ?1")?;
        let rows = stmt.query_map([cutoff], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Drops `digest` from the objects table.
    pub(crate) fn forget_object(&self, digest: &str) -> Result<(), IndexError> {
        self.conn
            .execute("DELETE FROM objects WHERE digest = ?1", [digest])?;
        Ok(())
    }

    /// Keys of successful runs that reference `digest` directly.
    pub(crate) fn runs_referencing(&self, digest: &str) -> Result<Vec<String>, IndexError> {
        let mut stmt = self
            .conn
            .prepare("SELECT DISTINCT key FROM outputs WHERE digest = ?1")?;
        let rows = stmt.query_map([digest], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// (successful runs, failed runs, live leases, objects, total object bytes).
    pub fn summary(&self) -> Result<(i64, i64, i64, i64, i64), IndexError> {
        let ok = self
            .conn
            .query_row("SELECT count(*) FROM runs WHERE status = 'ok'", [], |r| {
                r.get(0)
            })?;
        let failed = self.conn.query_row(
            "SELECT count(*) FROM runs WHERE status = 'failed'",
            [],
            |r| r.get(0),
        )?;
        let leases = self
            .conn
            .query_row("SELECT count(*) FROM leases", [], |r| r.get(0))?;
        let (objects, bytes) = self.conn.query_row(
            "SELECT count(*), coalesce(sum(size), 0) FROM objects",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok((ok, failed, leases, objects, bytes))
    }

    /// Every successful result pipeline `pipeline` (by its name) ran, or last ran a stage
    /// instance with: keys, newest first. For the dashboard's history of results
    /// that are no longer in the pipeline's file.
    pub(crate) fn keys_of_pipeline(&self, pipeline: &str) -> Result<Vec<String>, IndexError> {
        let mut stmt = self.conn.prepare(
            "SELECT key FROM runs WHERE status = 'ok'
             AND (pipeline = ?1 OR key IN (SELECT key FROM history WHERE pipeline = ?1))
             ORDER BY finished DESC",
        )?;
        let rows = stmt.query_map([pipeline], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The most recent runs, newest first.
    pub(crate) fn recent_runs(&self, limit: usize) -> Result<Vec<RecentRun>, IndexError> {
        let mut stmt = self.conn.prepare(
            "SELECT key, stage, pipeline, status, finished, duration FROM runs ORDER BY finished DESC LIMIT ?1",
        )?;
        let rows = stmt.query_map([limit as i64], |r| {
            Ok(RecentRun {
                key: r.get(0)?,
                stage: r.get(1)?,
                pipeline: r.get(2)?,
                status: r.get(3)?,
                duration: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

/// Column `i` of `row` as borrowed text; any other type is an error, as `row.get` makes it.
fn row_text<'r>(row: &'r rusqlite::Row<'_>, i: usize) -> Result<&'r str, rusqlite::Error> {
    let value = row.get_ref(i)?;
    value
        .as_str()
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, value.data_type(), Box::new(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(key: &str) -> RunRecord {
        RunRecord {
            key: key.into(),
            stage: "teacher".into(),
            kind: "train-teacher".into(),
            pipeline: "p".into(),
            binding: "{}".into(),
            key_json: "{}".into(),
            started: 1.0,
            finished: 2.0,
            duration: 1.0,
            device: "cpu".into(),
            outputs: BTreeMap::from([(
                "model".into(),
                OutputRef {
                    digest: "ab".repeat(32),
                    is_dir: false,
                },
            )]),
            metrics: BTreeMap::from([("loss".into(), 0.5)]),
        }
    }

    #[test]
    fn migrations_apply_once_and_records_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = Index::open(dir.path()).unwrap();
        assert!(index.lookup("k").unwrap().is_none());
        index
            .record_success(&record("k"), &[("ab".repeat(32), 3)])
            .unwrap();
        drop(index);
        let index = Index::open(dir.path()).unwrap();
        let back = index.lookup("k").unwrap().unwrap();
        assert_eq!(back.metrics["loss"], 0.5);
        assert_eq!(back.outputs["model"].digest, "ab".repeat(32));
        assert_eq!(
            index.last_key("p", "teacher", "{}").unwrap().as_deref(),
            Some("k")
        );
    }

    /// An empty index and keys for more than two queries of [`KEYS_PER_QUERY`].
    fn chunked_keys() -> (tempfile::TempDir, Index, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(dir.path()).unwrap();
        let keys = (0..2 * KEYS_PER_QUERY + 3)
            .map(|i| format!("k{i}"))
            .collect();
        (dir, index, keys)
    }

    /// The chunked read answers what one query per key answers: across chunks, for a key
    /// named twice, for a key without metrics and for one the index does not hold.
    #[test]
    fn metrics_of_each_equals_a_look_up_per_key() {
        let (_dir, mut index, keys) = chunked_keys();
        for (i, key) in keys.iter().enumerate() {
            let mut run = record(key);
            run.metrics = match i % 3 {
                0 => BTreeMap::new(),
                1 => BTreeMap::from([("loss".into(), i as f64)]),
                _ => BTreeMap::from([("map".into(), 0.25), ("r1".into(), i as f64 / 2.0)]),
            };
            index.record_success(&run, &[("ab".repeat(32), 3)]).unwrap();
        }
        let mut asked: Vec<&str> = keys.iter().map(String::as_str).rev().collect();
        asked.extend(["k7", "absent", "k7"]);
        let each = index.metrics_of_each(&asked).unwrap();
        assert_eq!(each.len(), asked.len());
        for (key, metrics) in asked.iter().zip(&each) {
            assert_eq!(metrics, &index.metrics_of(key).unwrap(), "{key}");
        }
        assert_eq!(each[asked.len() - 1]["loss"], 7.0);
        assert!(each[asked.len() - 2].is_empty());
    }

    /// The chunked read answers what one query per key answers: across chunks, for a key
    /// named twice, for a result without outputs, a failed run and a key the index does not
    /// hold; an unsafe output name is an error, as it is for one key.
    #[test]
    fn outputs_of_each_equals_a_look_up_per_key() {
        let (_dir, mut index, keys) = chunked_keys();
        for (i, key) in keys.iter().enumerate() {
            let mut run = record(key);
            match i % 3 {
                0 => run.outputs.clear(),
                1 => {
                    let digest = format!("{:064x}", i);
                    run.outputs.insert(
                        "log".into(),
                        OutputRef {
                            digest,
                            is_dir: false,
                        },
                    );
                }
                _ => {}
            }
            let sizes: Vec<(String, u64)> = run
                .outputs
                .values()
                .map(|o| (o.digest.clone(), 3))
                .collect();
            index.record_success(&run, &sizes).unwrap();
        }
        index.record_failure(&record("failed"), "boom").unwrap();
        let mut asked: Vec<&str> = keys.iter().map(String::as_str).rev().collect();
        asked.extend(["k4", "absent", "failed", "k4"]);
        let mut each = vec![None; asked.len()];
        index
            .outputs_of_each(&asked, |at, outputs| {
                assert!(each[at].replace(outputs).is_none(), "handed once");
            })
            .unwrap();
        for (key, outputs) in asked.iter().zip(&each) {
            let looked_up = index.lookup(key).unwrap().map(|r| r.outputs);
            assert_eq!(outputs, &looked_up, "{key}");
        }
        assert_eq!(each[asked.len() - 1].as_ref().unwrap().len(), 2);
        let k2 = asked.iter().position(|k| *k == "k2").unwrap();
        assert_eq!(each[k2].as_ref().map(BTreeMap::len), Some(1));
        assert!(each[asked.len() - 3].is_none() && each[asked.len() - 2].is_none());
        let k0 = asked.iter().position(|k| *k == "k0").unwrap();
        assert_eq!(each[k0], Some(BTreeMap::new()), "a result without outputs");

        index
            .conn
            .execute(
                "UPDATE outputs SET name = '../x' WHERE key = 'k1' AND name = 'log'",
                [],
            )
            .unwrap();
        assert!(matches!(
            index.outputs_of_each(&["k2", "k1"], |_, _| {}),
            Err(IndexError::Unsafe { .. })
        ));
    }

    #[test]
    fn a_failure_is_never_a_hit() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = Index::open(dir.path()).unwrap();
        index.record_failure(&record("k"), "boom").unwrap();
        assert!(index.lookup("k").unwrap().is_none());
        assert_eq!(index.failure("k").unwrap().as_deref(), Some("boom"));
    }
}
