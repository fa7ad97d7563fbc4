//! Leases: which process is computing which key, so two processes never compute one key
//! twice. A lease names its holder (host, pid) and carries a heartbeat; a lease whose holder
//! died or stopped heart-beating is taken over.
//!
//! Two rules keep a live lease from being taken over:
//! - The heartbeat comes from a [`Heartbeat`] guard: its own thread and its own SQLite
//!   connection, beating every [`HEARTBEAT_EVERY`] (a sixth of [`LEASE_STALE_AFTER`]), so
//!   neither data-set hashing nor a busy index on the scheduler's thread can starve it.
//! - A holder is declared dead by its PID only when the PID is known to mean the same
//!   process: same host name, same boot, same PID namespace, and the process's start time
//!   recorded in the lease. Containers sharing a host name but not a PID namespace see each
//!   other's leases as alive until their heartbeats stop.
//!
//! A lease may also carry the [`ExternalJob`] its holder submitted (a Slurm job id and its
//! folder). The job outlives a killed engine; whoever takes the lease over gets it back in
//! [`Lease::Adopt`] and follows that job instead of computing the key a second time.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::{params, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};

use super::store::{host_name, now, Index, IndexError};

/// A lease whose heartbeat is older than this belongs to a dead or hung process.
pub(crate) const LEASE_STALE_AFTER: Duration = Duration::from_secs(30);

/// A job that runs outside the engine's process tree (a Slurm batch job), as the key's
/// lease records it: enough for a later engine to find it and its files again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalJob {
    /// Which executor submitted it (`slurm`).
    pub executor: String,
    /// That executor's id for it (the Slurm job id).
    pub id: String,
    /// The folder of its files (script, log, result).
    pub dir: std::path::PathBuf,
}

/// The outcome of asking for a lease.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Lease {
    /// We hold it now.
    Acquired,
    /// We hold it now, taken over from a holder that died after submitting `0`, which may
    /// still be queued, running, or finished: follow it rather than compute the key again.
    Adopt(ExternalJob),
    /// A live process holds it.
    HeldBy {
        /// Its host.
        host: String,
        /// Its process id.
        pid: i64,
    },
}

/// How often a [`Heartbeat`] refreshes its leases: well inside [`LEASE_STALE_AFTER`], so a
/// few slow beats never make a live lease look stale.
pub(crate) const HEARTBEAT_EVERY: Duration = Duration::from_secs(LEASE_STALE_AFTER.as_secs() / 6);

/// One lease as `status` and `serve` list it: key, host, pid, liveness, seconds since its
/// last heartbeat.
pub(crate) type LeaseRow = (String, String, i64, String, f64);

/// Whether a lease belongs to a process that died or stopped heart-beating. `liveness` is the
/// token the holder recorded ([`liveness_token`]); empty for leases written before it existed.
pub(crate) fn lease_is_stale(
    holder_host: &str,
    holder_pid: i64,
    liveness: &str,
    heartbeat: f64,
) -> bool {
    now() - heartbeat > LEASE_STALE_AFTER.as_secs_f64()
        || (holder_host == host_name() && holder_is_dead(holder_pid, liveness))
}

/// Whether the holder is certainly dead, judged by its PID. Only when the token shows the PID
/// lives in our boot and PID namespace can the PID be checked; otherwise only the heartbeat
/// can tell.
fn holder_is_dead(pid: i64, liveness: &str) -> bool {
    if liveness.is_empty() {
        return !process_alive(pid);
    }
    let mut parts = liveness.splitn(3, '|');
    let (Some(boot), Some(ns), Some(start)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    if boot.is_empty() || ns.is_empty() || boot != boot_id() || ns != pid_namespace() {
        return false;
    }
    match process_start_time(pid) {
        None => !process_alive(pid),
        Some(actual) => actual != start,
    }
}

/// This process's liveness token: `boot id|PID namespace|start time`, each empty when the
/// system does not say.
pub(crate) fn liveness_token() -> String {
    format!(
        "{}|{}|{}",
        boot_id(),
        pid_namespace(),
        process_start_time(std::process::id() as i64).unwrap_or_default()
    )
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn pid_namespace() -> String {
    std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The start time of process `pid` in clock ticks since boot (field 22 of `/proc/PID/stat`),
/// which tells a process from a later one that reused its PID.
fn process_start_time(pid: i64) -> Option<String> {
    if pid <= 0 {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces; count after it.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19).map(str::to_string)
}

fn process_alive(pid: i64) -> bool {
    if pid <= 0 || pid > i64::from(i32::MAX) {
        return false;
    }
    // SAFETY: kill with signal 0 only checks whether the process exists.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Keeps the leases of one owner fresh from a thread of its own, with its own index
/// connection, until dropped.
#[derive(Debug)]
pub(crate) struct Heartbeat {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Heartbeat {
    /// Starts beating for `owner`'s leases in the cache at `cache_dir`, every
    /// [`HEARTBEAT_EVERY`].
    pub fn start(cache_dir: &Path, owner: &str) -> Result<Heartbeat, IndexError> {
        Self::start_every(cache_dir, owner, HEARTBEAT_EVERY)
    }

    fn start_every(
        cache_dir: &Path,
        owner: &str,
        every: Duration,
    ) -> Result<Heartbeat, IndexError> {
        let index = Index::open(cache_dir)?;
        // A beat that cannot get the database within one period gives up; the next one tries
        // again, long before the lease could look stale.
        index.conn.busy_timeout(every)?;
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let owner = owner.to_string();
        let signal = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("asymflow-heartbeat".into())
            .spawn(move || {
                let (lock, cvar) = &*signal;
                let mut stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
                loop {
                    let (guard, _) = cvar
                        .wait_timeout(stopped, every)
                        .unwrap_or_else(|p| p.into_inner());
                    stopped = guard;
                    if *stopped {
                        break;
                    }
                    drop(stopped);
                    if let Err(e) = index.heartbeat(&owner) {
                        tracing::warn!("lease heartbeat: {e}");
                    }
                    stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
                }
            })
            .map_err(IndexError::Heartbeat)?;
        Ok(Heartbeat {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        let (lock, cvar) = &*self.stop;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
        cvar.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Index {
    /// Tries to take the lease on `key` for `owner`. A lease held by a dead process on this
    /// host, or with a heartbeat older than [`LEASE_STALE_AFTER`], is taken over.
    pub(crate) fn try_lease(&mut self, key: &str, owner: &str) -> Result<Lease, IndexError> {
        let host = host_name();
        let pid = std::process::id() as i64;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        type Holder = (String, String, i64, String, f64, Option<String>);
        let holder: Option<Holder> = tx
            .query_row(
                "SELECT owner, host, pid, liveness, heartbeat, external FROM leases WHERE key = ?1",
                [key],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                },
            )
            .optional()?;
        let mut adopted = None;
        if let Some((holder, holder_host, holder_pid, liveness, heartbeat, external)) = holder {
            let stale = lease_is_stale(&holder_host, holder_pid, &liveness, heartbeat);
            if holder != owner && !stale {
                return Ok(Lease::HeldBy {
                    host: holder_host,
                    pid: holder_pid,
                });
            }
            if holder != owner {
                adopted = external.as_deref().and_then(parse_external);
            }
        }
        let external = adopted
            .as_ref()
            .map(|job| serde_json::to_string(job).expect("an ExternalJob serialises"));
        tx.execute(
            "INSERT OR REPLACE INTO leases (key, owner, host, pid, heartbeat, liveness, external) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![key, owner, host, pid, now(), liveness_token(), external],
        )?;
        tx.commit()?;
        Ok(adopted.map_or(Lease::Acquired, Lease::Adopt))
    }

    /// Records in `owner`'s lease on `key` the external job computing it, or that none is
    /// (the key is computed in a local process).
    pub(crate) fn set_external(
        &self,
        key: &str,
        owner: &str,
        job: Option<&ExternalJob>,
    ) -> Result<(), IndexError> {
        let text = job.map(|j| serde_json::to_string(j).expect("an ExternalJob serialises"));
        self.conn.execute(
            "UPDATE leases SET external = ?1 WHERE key = ?2 AND owner = ?3",
            params![text, key, owner],
        )?;
        Ok(())
    }

    /// The leases that carry an external job: (key, the job, whether the holder is gone).
    pub(crate) fn external_jobs(&self) -> Result<Vec<(String, ExternalJob, bool)>, IndexError> {
        let mut stmt = self.conn.prepare(
            "SELECT key, host, pid, liveness, heartbeat, external FROM leases \
             WHERE external IS NOT NULL ORDER BY key",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, f64>(4)?,
                r.get::<_, String>(5)?,
            ))
        })?;
        let mut jobs = Vec::new();
        for row in rows {
            let (key, host, pid, liveness, heartbeat, external) = row?;
            if let Some(job) = parse_external(&external) {
                jobs.push((key, job, lease_is_stale(&host, pid, &liveness, heartbeat)));
            }
        }
        Ok(jobs)
    }

    /// Refreshes the heartbeat of every lease `owner` holds.
    pub fn heartbeat(&self, owner: &str) -> Result<(), IndexError> {
        self.conn.execute(
            "UPDATE leases SET heartbeat = ?1 WHERE owner = ?2",
            params![now(), owner],
        )?;
        Ok(())
    }

    /// Releases `owner`'s lease on `key`.
    pub fn release(&self, key: &str, owner: &str) -> Result<(), IndexError> {
        self.conn.execute(
            "DELETE FROM leases WHERE key = ?1 AND owner = ?2",
            params![key, owner],
        )?;
        Ok(())
    }

    /// Releases every lease `owner` holds.
    pub(crate) fn release_all(&self, owner: &str) -> Result<(), IndexError> {
        self.conn
            .execute("DELETE FROM leases WHERE owner = ?1", [owner])?;
        Ok(())
    }

    /// Removes leases whose process is gone; returns how many. A lease that carries an
    /// external job stays: the job may still run, and the next run follows it through it.
    pub(crate) fn drop_stale_leases(&self) -> Result<usize, IndexError> {
        let stale: Vec<String> = {
            let mut stmt = self.conn.prepare(
                "SELECT key, host, pid, liveness, heartbeat FROM leases WHERE external IS NULL",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, f64>(4)?,
                ))
            })?;
            rows.filter_map(Result::ok)
                .filter(|(_, host, pid, live, hb)| lease_is_stale(host, *pid, live, *hb))
                .map(|(key, ..)| key)
                .collect()
        };
        for key in &stale {
            self.conn
                .execute("DELETE FROM leases WHERE key = ?1", [key])?;
        }
        Ok(stale.len())
    }

    /// Leases currently recorded: (key, host, pid, seconds since heartbeat).
    pub fn leases(&self) -> Result<Vec<LeaseRow>, IndexError> {
        let mut stmt = self
            .conn
            .prepare("SELECT key, host, pid, liveness, heartbeat FROM leases")?;
        let t = now();
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                t - r.get::<_, f64>(4)?,
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

/// A lease's external job; one this asymflow cannot read (a newer one wrote it) is ignored,
/// with a warning, and the key is computed again.
fn parse_external(text: &str) -> Option<ExternalJob> {
    match serde_json::from_str(text) {
        Ok(job) => Some(job),
        Err(e) => {
            tracing::warn!("ignoring a lease's external job `{text}`: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_lease_blocks_and_a_dead_one_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = Index::open(dir.path()).unwrap();
        assert_eq!(index.try_lease("k", "me").unwrap(), Lease::Acquired);
        // Another owner in this (live) process is blocked.
        assert!(matches!(
            index.try_lease("k", "other").unwrap(),
            Lease::HeldBy { .. }
        ));
        // A lease recorded for a process that does not exist is stale.
        index
            .conn
            .execute(
                "UPDATE leases SET pid = 2147483000, owner = 'ghost' WHERE key = 'k'",
                [],
            )
            .unwrap();
        assert_eq!(index.try_lease("k", "other").unwrap(), Lease::Acquired);
    }

    #[test]
    fn issue11_heartbeat_has_its_own_thread_and_connection() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = Index::open(dir.path()).unwrap();
        assert_eq!(index.try_lease("k", "me").unwrap(), Lease::Acquired);
        index
            .conn
            .execute("UPDATE leases SET heartbeat = heartbeat - 1000", [])
            .unwrap();
        // The scheduler's connection is busy in a long write transaction; the beat still comes.
        let tx = index
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        let beat = Heartbeat::start_every(dir.path(), "me", Duration::from_millis(20)).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        tx.commit().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        drop(beat);
        let (_, _, _, _, age) = index.leases().unwrap().remove(0);
        assert!(
            age < 5.0,
            "the heartbeat thread did not refresh the lease: {age}s old"
        );
        const { assert!(HEARTBEAT_EVERY.as_secs() * 3 <= LEASE_STALE_AFTER.as_secs()) };
    }

    #[test]
    fn issue11_a_holder_in_another_pid_namespace_is_alive_while_it_beats() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = Index::open(dir.path()).unwrap();
        assert_eq!(index.try_lease("k", "me").unwrap(), Lease::Acquired);
        // Same host name, a PID that does not exist here, but another PID namespace: the PID
        // says nothing, so the fresh heartbeat keeps the lease.
        index
            .conn
            .execute(
                "UPDATE leases SET pid = 2147483000, owner = 'ghost', liveness = ?1",
                [format!("{}|pid:[1]|42", boot_id())],
            )
            .unwrap();
        assert!(matches!(
            index.try_lease("k", "other").unwrap(),
            Lease::HeldBy { .. }
        ));
        // In our namespace, a PID whose process started at another time was reused: dead.
        index
            .conn
            .execute(
                "UPDATE leases SET pid = ?1, liveness = ?2",
                rusqlite::params![
                    std::process::id() as i64,
                    format!("{}|{}|1", boot_id(), pid_namespace())
                ],
            )
            .unwrap();
        assert_eq!(index.try_lease("k", "other").unwrap(), Lease::Acquired);
    }

    #[test]
    fn a_dead_holders_external_job_is_handed_to_whoever_takes_the_lease_over() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = Index::open(dir.path()).unwrap();
        let job = ExternalJob {
            executor: "slurm".into(),
            id: "4242".into(),
            dir: dir.path().join("slurm/k"),
        };
        assert_eq!(index.try_lease("k", "me").unwrap(), Lease::Acquired);
        index.set_external("k", "me", Some(&job)).unwrap();
        // Someone else's lease is untouched by our record.
        index.set_external("j", "me", Some(&job)).unwrap();
        let listed = index.external_jobs().unwrap();
        assert_eq!(listed, vec![("k".to_string(), job.clone(), false)]);
        // While the holder lives, the job is its own.
        assert!(matches!(
            index.try_lease("k", "other").unwrap(),
            Lease::HeldBy { .. }
        ));
        // The holder dies: the lease is taken over at once, the job handed on, and the new
        // holder's lease still carries it; a dead holder's job survives `cache gc`.
        index
            .conn
            .execute(
                "UPDATE leases SET pid = 2147483000, owner = 'ghost' WHERE key = 'k'",
                [],
            )
            .unwrap();
        assert!(index.external_jobs().unwrap()[0].2);
        assert_eq!(index.drop_stale_leases().unwrap(), 0);
        assert_eq!(
            index.try_lease("k", "other").unwrap(),
            Lease::Adopt(job.clone())
        );
        assert_eq!(index.external_jobs().unwrap()[0].1, job);
        // A run that computes the key itself clears the record.
        index.set_external("k", "other", None).unwrap();
        assert!(index.external_jobs().unwrap().is_empty());
        // A lease released normally carries nothing on.
        index.release("k", "other").unwrap();
        assert_eq!(index.try_lease("k", "third").unwrap(), Lease::Acquired);
        // A record this asymflow cannot read is ignored: the key is computed again.
        index
            .conn
            .execute(
                "UPDATE leases SET pid = 2147483000, owner = 'ghost', external = '{\"x\":1}'",
                [],
            )
            .unwrap();
        assert_eq!(index.try_lease("k", "fourth").unwrap(), Lease::Acquired);
    }

    #[test]
    fn an_index_of_schema_5_gains_the_external_column_and_keeps_its_leases() {
        let dir = tempfile::tempdir().unwrap();
        {
            let conn = rusqlite::Connection::open(dir.path().join("index.sqlite")).unwrap();
            for m in &super::super::store::MIGRATIONS[..5] {
                conn.execute_batch(m).unwrap();
            }
            conn.pragma_update(None, "user_version", 5).unwrap();
            conn.execute(
                "INSERT INTO leases (key, owner, host, pid, heartbeat, liveness) VALUES ('k', 'ghost', 'h', 1, 0, '')",
                [],
            )
            .unwrap();
        }
        let mut index = Index::open(dir.path()).unwrap();
        assert!(index.external_jobs().unwrap().is_empty());
        assert_eq!(index.leases().unwrap().len(), 1);
        assert_eq!(index.try_lease("k", "me").unwrap(), Lease::Acquired);
    }
}
