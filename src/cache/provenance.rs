//! Provenance: what produced a result (the asymflow version and commit, the libtorch version,
//! the device and thread count, the host and the process that ran it) and its telemetry
//! (volatile measurements: seconds, images per second). Stored beside each result and shown by `asymflow show`, never
//! part of the key: a result must be reusable on another machine, and a byte-identical retrain
//! elsewhere must still cut off early (see the rule in [`super::key`]).

use std::collections::BTreeMap;

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

use super::store::{Index, IndexError};

/// What produced one result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The asymflow version (`0.1.0`).
    pub asymflow: String,
    /// The git commit asymflow was built from, or `unknown`.
    pub git_commit: String,
    /// The libtorch version the stage ran with; empty when not recorded.
    pub libtorch: String,
    /// Where it ran (`cpu`, `cuda:0`).
    pub device: String,
    /// Threads the stage could use.
    pub threads: i64,
    /// The GPUs the process was pinned to (`CUDA_VISIBLE_DEVICES`), if any.
    #[serde(default)]
    pub visible_devices: Option<String>,
    /// The host it ran on.
    #[serde(default)]
    pub host: String,
    /// The process that ran it: `engine`, `worker` (persistent), `exec` (one job, as under Slurm).
    #[serde(default)]
    pub runner: String,
    /// Volatile measurements the stage reported (seconds, throughput): shown, never keyed.
    #[serde(default)]
    pub telemetry: BTreeMap<String, f64>,
}

impl Provenance {
    /// This build of asymflow, running a stage on `device` with `threads` threads and the
    /// given libtorch version (empty when the caller does not know it).
    pub(crate) fn this_build(device: &str, threads: i64, libtorch: &str) -> Provenance {
        Provenance {
            asymflow: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: env!("ASYMFLOW_GIT_COMMIT").to_string(),
            libtorch: libtorch.to_string(),
            device: device.to_string(),
            threads,
            visible_devices: None,
            host: super::store::host_name(),
            runner: String::new(),
            telemetry: BTreeMap::new(),
        }
    }
}

impl Index {
    /// Records the provenance of `key`'s result (replacing an older one).
    pub(crate) fn record_provenance(&self, key: &str, p: &Provenance) -> Result<(), IndexError> {
        self.conn.execute(
            "INSERT OR REPLACE INTO provenance
                 (key, asymflow, git_commit, libtorch, device, threads, host, runner, telemetry,
                  visible_devices)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                key,
                p.asymflow,
                p.git_commit,
                p.libtorch,
                p.device,
                p.threads,
                p.host,
                p.runner,
                serde_json::to_string(&p.telemetry).expect("numbers serialise"),
                p.visible_devices,
            ],
        )?;
        Ok(())
    }

    /// The provenance of `key`'s result, if recorded.
    pub fn provenance(&self, key: &str) -> Result<Option<Provenance>, IndexError> {
        Ok(self
            .conn
            .query_row(
                "SELECT asymflow, git_commit, libtorch, device, threads, host, runner, telemetry,
                        visible_devices
                 FROM provenance WHERE key = ?1",
                [key],
                |r| {
                    Ok(Provenance {
                        asymflow: r.get(0)?,
                        git_commit: r.get(1)?,
                        libtorch: r.get(2)?,
                        device: r.get(3)?,
                        threads: r.get(4)?,
                        host: r.get(5)?,
                        runner: r.get(6)?,
                        telemetry: serde_json::from_str(&r.get::<_, String>(7)?)
                            .unwrap_or_default(),
                        visible_devices: r.get(8)?,
                    })
                },
            )
            .optional()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provenance_round_trips_and_names_this_build() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(dir.path()).unwrap();
        assert!(index.provenance("k").unwrap().is_none());
        let mut p = Provenance::this_build("cpu", 2, "2.7.0");
        p.telemetry.insert("train_seconds".into(), 12.5);
        assert_eq!(p.asymflow, env!("CARGO_PKG_VERSION"));
        assert!(!p.git_commit.is_empty());
        index.record_provenance("k", &p).unwrap();
        assert_eq!(index.provenance("k").unwrap(), Some(p));
    }
}
