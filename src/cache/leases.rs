//! Leases: which process is computing which key, so two processes never compute one key
//! twice. A lease names its holder (host, pid) and carries a heartbeat; a lease whose holder
//! died or stopped heart-beating is taken over.

use std::time::Duration;

use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::store::{host_name, now, Index, IndexError};

/// A lease whose heartbeat is older than this belongs to a dead or hung process.
pub const LEASE_STALE_AFTER: Duration = Duration::from_secs(30);

/// The outcome of asking for a lease.
#[derive(Debug, Clone, PartialEq)]
pub enum Lease {
    /// We hold it now.
    Acquired,
    /// A live process holds it.
    HeldBy {
        /// Its host.
        host: String,
        /// Its process id.
        pid: i64,
    },
}

/// Whether a lease belongs to a process that died (on this host) or stopped heart-beating.
pub fn lease_is_stale(holder_host: &str, holder_pid: i64, heartbeat: f64) -> bool {
    (holder_host == host_name() && !process_alive(holder_pid))
        || now() - heartbeat > LEASE_STALE_AFTER.as_secs_f64()
}

fn process_alive(pid: i64) -> bool {
    // SAFETY: kill with signal 0 only checks whether the process exists.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

impl Index {
    /// Tries to take the lease on `key` for `owner`. A lease held by a dead process on this
    /// host, or with a heartbeat older than [`LEASE_STALE_AFTER`], is taken over.
    pub fn try_lease(&mut self, key: &str, owner: &str) -> Result<Lease, IndexError> {
        let host = host_name();
        let pid = std::process::id() as i64;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let holder: Option<(String, String, i64, f64)> = tx
            .query_row(
                "SELECT owner, host, pid, heartbeat FROM leases WHERE key = ?1",
                [key],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?;
        if let Some((holder, holder_host, holder_pid, heartbeat)) = holder {
            let stale = lease_is_stale(&holder_host, holder_pid, heartbeat);
            if holder != owner && !stale {
                return Ok(Lease::HeldBy {
                    host: holder_host,
                    pid: holder_pid,
                });
            }
        }
        tx.execute(
            "INSERT OR REPLACE INTO leases (key, owner, host, pid, heartbeat) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![key, owner, host, pid, now()],
        )?;
        tx.commit()?;
        Ok(Lease::Acquired)
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
    pub fn release_all(&self, owner: &str) -> Result<(), IndexError> {
        self.conn
            .execute("DELETE FROM leases WHERE owner = ?1", [owner])?;
        Ok(())
    }

    /// Removes leases whose process is gone; returns how many.
    pub fn drop_stale_leases(&self) -> Result<usize, IndexError> {
        let stale: Vec<String> = {
            let mut stmt = self
                .conn
                .prepare("SELECT key, host, pid, heartbeat FROM leases")?;
            let rows = stmt.query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, f64>(3)?,
                ))
            })?;
            rows.filter_map(Result::ok)
                .filter(|(_, host, pid, hb)| lease_is_stale(host, *pid, *hb))
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
    pub fn leases(&self) -> Result<Vec<(String, String, i64, f64)>, IndexError> {
        let mut stmt = self
            .conn
            .prepare("SELECT key, host, pid, heartbeat FROM leases")?;
        let t = now();
        let rows = stmt.query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, t - r.get::<_, f64>(3)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
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
}
