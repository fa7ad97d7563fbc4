//! The project configuration: `asymflow.toml` beside `pipelines/`, for settings that belong to
//! a project and its team rather than to one pipeline (where the shared remote cache is,
//! whether `run` pushes to it). Environment variables override the file, so a CI job or a
//! laptop can point elsewhere without editing it.
//!
//! ```toml
//! remote = "s3://team-bucket/asymflow"   # or "file:///mnt/team/asymflow"
//! push = true                            # `run` pushes what it computes (default false)
//! endpoint = "http://127.0.0.1:9000"     # a non-AWS S3 store (MinIO, Ceph, moto)
//! region = "eu-west-1"
//! ```
//!
//! | setting    | environment               |
//! |------------|---------------------------|
//! | `remote`   | `ASYMFLOW_REMOTE` (set but empty: no remote) |
//! | `push`     | `ASYMFLOW_PUSH` (`1`/`0`) |
//! | `endpoint` | `ASYMFLOW_REMOTE_ENDPOINT`, else the AWS variables |
//! | secret     | `ASYMFLOW_REMOTE_SECRET` only: a secret never lives in a file under version control |
//!
//! Tables other than the keys above are reserved for other parts of asymflow (`[executor]`),
//! so they are accepted and left to their readers; an unknown top-level key is an error that
//! names the file.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The file name, looked for in the project folder.
pub(crate) const CONFIG_FILE: &str = "asymflow.toml";

/// Why the configuration could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not valid.
    #[error("{path}: {message}\n  (settings: remote, push, endpoint, region; tables: [executor])")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line and column from the TOML parser.
        message: String,
    },
    /// An environment variable has a value that means nothing.
    #[error("{var}={value}: expected 1 or 0 (true or false)")]
    BadEnv {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
    },
}

/// The settings of a project.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    /// The team's remote cache (`s3://bucket/prefix` or `file:///path`).
    #[serde(default)]
    pub remote: Option<String>,
    /// Push results to the remote after computing them.
    #[serde(default)]
    pub push: bool,
    /// The S3 endpoint, for stores other than AWS.
    #[serde(default)]
    pub endpoint: Option<String>,
    /// The S3 region.
    #[serde(default)]
    pub region: Option<String>,
    /// The executors' settings (read by the executors, not here).
    #[serde(default)]
    pub executor: Option<toml::Table>,
    /// The team secret signing remote records (from `ASYMFLOW_REMOTE_SECRET` only).
    #[serde(skip)]
    pub secret: Option<String>,
}

impl ProjectConfig {
    /// Reads `project_dir/asymflow.toml` (absent means defaults), then applies the
    /// environment.
    pub fn load(project_dir: &Path) -> Result<ProjectConfig, ConfigError> {
        let path = project_dir.join(CONFIG_FILE);
        let mut config = match std::fs::read_to_string(&path) {
            Ok(text) => toml::from_str(&text).map_err(|e| ConfigError::Invalid {
                path: path.clone(),
                message: e.to_string().trim_end().to_string(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => ProjectConfig::default(),
            Err(source) => return Err(ConfigError::Io { path, source }),
        };
        config.apply_env(|var| std::env::var(var).ok())?;
        Ok(config)
    }

    /// Overrides settings from environment variables (`get` reads one).
    pub(crate) fn apply_env(
        &mut self,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<(), ConfigError> {
        let non_empty = |var: &str| get(var).filter(|v| !v.trim().is_empty());
        // Set but empty turns the remote off, whatever the file says.
        match get("ASYMFLOW_REMOTE") {
            Some(remote) if remote.trim().is_empty() => self.remote = None,
            Some(remote) => self.remote = Some(remote),
            None => {}
        }
        if let Some(endpoint) = non_empty("ASYMFLOW_REMOTE_ENDPOINT") {
            self.endpoint = Some(endpoint);
        }
        if let Some(secret) = non_empty("ASYMFLOW_REMOTE_SECRET") {
            self.secret = Some(secret);
        }
        if let Some(value) = non_empty("ASYMFLOW_PUSH") {
            self.push = match value.trim() {
                "1" | "true" => true,
                "0" | "false" => false,
                _ => {
                    return Err(ConfigError::BadEnv {
                        var: "ASYMFLOW_PUSH",
                        value,
                    })
                }
            };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_read_and_the_environment_overrides_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "remote = \"file:///mnt/team\"\npush = true\n[executor.slurm]\npartition = \"gpu\"\n",
        )
        .unwrap();
        let mut config: ProjectConfig =
            toml::from_str(&std::fs::read_to_string(dir.path().join(CONFIG_FILE)).unwrap())
                .unwrap();
        assert_eq!(config.remote.as_deref(), Some("file:///mnt/team"));
        assert!(config.push);
        assert!(config.executor.is_some());
        config
            .apply_env(|v| match v {
                "ASYMFLOW_REMOTE" => Some("s3://b/p".into()),
                "ASYMFLOW_PUSH" => Some("0".into()),
                "ASYMFLOW_REMOTE_SECRET" => Some("team".into()),
                _ => None,
            })
            .unwrap();
        assert_eq!(config.remote.as_deref(), Some("s3://b/p"));
        assert!(!config.push);
        assert_eq!(config.secret.as_deref(), Some("team"));
    }

    #[test]
    fn an_unknown_key_and_a_bad_variable_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CONFIG_FILE), "remot = \"s3://b\"\n").unwrap();
        let err = ProjectConfig::load(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("asymflow.toml") && err.contains("remot"),
            "{err}"
        );
        let err = ProjectConfig::default()
            .apply_env(|v| (v == "ASYMFLOW_PUSH").then(|| "yes please".into()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("ASYMFLOW_PUSH"), "{err}");
    }
}
