//! Remote records: `ac/<stage key>.json`, what a teammate's run produced (outputs with their
//! digests, metrics, provenance), in an envelope that carries the record's exact bytes and,
//! with a team secret, their signature.
//!
//! Nothing in a record is trusted before [`Envelope::open`] has checked it: the key is 64
//! lowercase hex digits, matches the object's name and is the blake3 of the record's key JSON
//! (so a record cannot claim another stage's inputs); the kind it names is the kind in its key
//! JSON, and its output names are exactly what that kind declares; every digest is 64
//! lowercase hex digits; every output name and manifest path is relative, without `..`, so a
//! malicious record cannot make a download land outside the cache. The local store's own
//! validation (the trust work) covers the same ground for local records; the checks are
//! repeated here because a remote record arrives from outside.
//!
//! A record carries no numbers of its own: its metrics are the `metrics.json` output it names
//! by digest, read from the downloaded, hash-checked object ([`read_metrics`]), so without a
//! team secret an edited record can point at other objects (which must still pass the content
//! checks of [`super::content`]) but cannot make up a number. Format 1 records carried a
//! `metrics` field in the body; it is ignored.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::cache::objects::Manifest;
use crate::cache::{OutputRef, RunRecord};
use crate::kind::{check_outputs, Registry, Violation};

/// The envelope format this asymflow writes and reads.
/// 2: the body has no `metrics` (they are read from the `metrics.json` object); format 1 bodies
/// parse, their `metrics` ignored.
pub(crate) const ENVELOPE_FORMAT: u32 = 2;

/// Why a record or a manifest was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Invalid {
    /// The JSON does not parse.
    #[error("not a record: {0}")]
    Json(String),
    /// Written by a newer asymflow.
    #[error(
        "record format {0} is newer than this asymflow reads ({ENVELOPE_FORMAT}); upgrade asymflow"
    )]
    Format(u32),
    /// A digest or key is not 64 lowercase hex digits.
    #[error("{what} `{value}` is not 64 lowercase hex digits")]
    Digest {
        /// Which field.
        what: String,
        /// Its value.
        value: String,
    },
    /// The record is stored under another key than it says.
    #[error("stored as {stored} but its key JSON hashes to {actual}")]
    Key {
        /// The name of the object.
        stored: String,
        /// blake3 of its key JSON.
        actual: String,
    },
    /// A path that could leave the cache.
    #[error("{what} `{path}` is not a plain relative path (absolute, `..`, empty or backslash)")]
    Path {
        /// Which field.
        what: String,
        /// The path.
        path: String,
    },
    /// A metric that is not a finite number.
    #[error("metric `{0}` is not a finite number")]
    Metric(String),
    /// The `metrics.json` object is not a JSON object of numbers.
    #[error("its metrics.json is not a JSON object of numbers: {0}")]
    Metrics(String),
    /// The record's kind is not the kind its key was computed for.
    #[error("it says kind `{claimed}` but its key is for kind `{keyed}`")]
    Kind {
        /// What the record says.
        claimed: String,
        /// What its key JSON says.
        keyed: String,
    },
    /// A kind this asymflow does not know (so its outputs cannot be checked).
    #[error("kind `{0}` is unknown to this asymflow (upgrade it, or the record is forged)")]
    UnknownKind(String),
    /// Output names that are not what the kind declares.
    #[error("its outputs are not what kind `{kind}` declares: {why}")]
    Outputs {
        /// The kind.
        kind: String,
        /// The violations.
        why: String,
    },
    /// An output's content is not of its type (a model that is not safetensors, a JSON file
    /// that does not parse): a record naming the wrong objects.
    #[error("output {output} (cas/{digest}) is not what its name says: {why}")]
    Content {
        /// The output's name.
        output: String,
        /// The object.
        digest: String,
        /// What is wrong with it.
        why: String,
    },
    /// Signing is on and the record carries no signature.
    #[error("unsigned, and ASYMFLOW_REMOTE_SECRET requires signed records")]
    Unsigned,
    /// The signature does not match.
    #[error("bad signature (edited, or signed with another secret)")]
    BadSignature,
}

/// One output in a record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RemoteOutput {
    /// Its digest (a manifest's, for a directory).
    pub digest: String,
    /// Whether it is a directory.
    pub is_dir: bool,
}

/// The signed part of a record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RecordBody {
    /// The stage key.
    pub key: String,
    /// The canonical key JSON (its blake3 is the key).
    pub key_json: String,
    /// The stage's name where it ran.
    pub stage: String,
    /// Its kind.
    pub kind: String,
    /// The pipeline's name.
    pub pipeline: String,
    /// The sweep binding (JSON).
    pub binding: String,
    /// Seconds since the epoch.
    pub started: f64,
    /// Seconds since the epoch.
    pub finished: f64,
    /// Wall-clock seconds.
    pub duration: f64,
    /// Where it ran.
    pub device: String,
    /// Output name -> object. The metrics are the `metrics.json` among them.
    pub outputs: BTreeMap<String, RemoteOutput>,
    /// Who pushed it (host name) and with which asymflow: provenance, never part of the key.
    pub pushed_by: String,
}

/// What is stored at `ac/<key>.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Envelope {
    /// [`ENVELOPE_FORMAT`].
    pub format: u32,
    /// The [`RecordBody`] as JSON, kept as the exact bytes that were signed.
    pub body: String,
    /// HMAC-SHA256 of key and body (hex), when pushed with a team secret.
    #[serde(default)]
    pub signature: Option<String>,
}

/// The local store's rule for digests: a remote is held to the same one.
pub(crate) use crate::cache::objects::is_digest;

/// Whether `p` is a plain relative path that stays inside the folder it is joined to (the
/// local store's rule, [`crate::cache::objects::check_relative_path`]).
pub(crate) fn is_safe_relative(p: &str) -> bool {
    crate::cache::objects::check_relative_path(p, "").is_ok()
}

fn check_digest(what: &str, value: &str) -> Result<(), Invalid> {
    if is_digest(value) {
        Ok(())
    } else {
        Err(Invalid::Digest {
            what: what.into(),
            value: value.chars().take(80).collect(),
        })
    }
}

/// Checks a manifest that arrived from outside: digests and paths.
pub(crate) fn check_manifest(manifest: &Manifest) -> Result<(), Invalid> {
    for (path, digest) in &manifest.entries {
        if !is_safe_relative(path) {
            return Err(Invalid::Path {
                what: "manifest entry".into(),
                path: path.chars().take(200).collect(),
            });
        }
        check_digest(&format!("digest of {path}"), digest)?;
    }
    Ok(())
}

impl RecordBody {
    /// The body of a local record.
    pub(crate) fn from_run(run: &RunRecord) -> RecordBody {
        RecordBody {
            key: run.key.clone(),
            key_json: run.key_json.clone(),
            stage: run.stage.clone(),
            kind: run.kind.clone(),
            pipeline: run.pipeline.clone(),
            binding: run.binding.clone(),
            started: run.started,
            finished: run.finished,
            duration: run.duration,
            device: run.device.clone(),
            outputs: run
                .outputs
                .iter()
                .map(|(name, o)| {
                    (
                        name.clone(),
                        RemoteOutput {
                            digest: o.digest.clone(),
                            is_dir: o.is_dir,
                        },
                    )
                })
                .collect(),
            pushed_by: format!(
                "{} (asymflow {})",
                crate::cache::store::host_name(),
                env!("CARGO_PKG_VERSION")
            ),
        }
    }

    /// The local record this body describes, with `metrics` read from its verified
    /// `metrics.json` ([`read_metrics`]).
    pub fn to_run(&self, metrics: BTreeMap<String, f64>) -> RunRecord {
        RunRecord {
            key: self.key.clone(),
            stage: self.stage.clone(),
            kind: self.kind.clone(),
            pipeline: self.pipeline.clone(),
            binding: self.binding.clone(),
            key_json: self.key_json.clone(),
            started: self.started,
            finished: self.finished,
            duration: self.duration,
            device: self.device.clone(),
            outputs: self
                .outputs
                .iter()
                .map(|(name, o)| {
                    (
                        name.clone(),
                        OutputRef {
                            digest: o.digest.clone(),
                            is_dir: o.is_dir,
                        },
                    )
                })
                .collect(),
            metrics,
        }
    }

    /// Checks every field that names a file, an object or a kind: the key against the key
    /// JSON, the kind against the key JSON and the output names against what `kinds` declares
    /// for it.
    pub fn validate(&self, stored_as: &str, kinds: &Registry) -> Result<(), Invalid> {
        check_digest("stage key", &self.key)?;
        let actual = blake3::hash(self.key_json.as_bytes()).to_hex().to_string();
        if self.key != stored_as || actual != self.key {
            return Err(Invalid::Key {
                stored: stored_as.chars().take(80).collect(),
                actual,
            });
        }
        for (name, output) in &self.outputs {
            if !is_safe_relative(name) {
                return Err(Invalid::Path {
                    what: "output name".into(),
                    path: name.chars().take(200).collect(),
                });
            }
            check_digest(&format!("digest of output {name}"), &output.digest)?;
        }
        self.check_kind(kinds)
    }

    /// The kind is the one the key was computed for, and the outputs are what it declares.
    fn check_kind(&self, kinds: &Registry) -> Result<(), Invalid> {
        let keyed: serde_json::Value =
            serde_json::from_str(&self.key_json).map_err(|e| Invalid::Json(e.to_string()))?;
        let keyed = keyed.get("kind").and_then(|k| k.as_str()).unwrap_or("");
        if keyed != self.kind {
            return Err(Invalid::Kind {
                claimed: self.kind.chars().take(80).collect(),
                keyed: keyed.chars().take(80).collect(),
            });
        }
        let stage = kinds
            .get(&self.kind)
            .ok_or_else(|| Invalid::UnknownKind(self.kind.chars().take(80).collect()))?;
        check_outputs(stage, self.outputs.keys().map(String::as_str)).map_err(|e| {
            Invalid::Outputs {
                kind: self.kind.clone(),
                why: e
                    .violations
                    .iter()
                    .map(|v| match v {
                        Violation::Missing { file, .. } => format!("{file} is missing"),
                        Violation::Undeclared { file } => {
                            format!(
                                "`{}` is not declared",
                                file.chars().take(80).collect::<String>()
                            )
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            }
        })
    }
}

/// The metrics in a `metrics.json` object's bytes (already verified against its digest):
/// finite numbers by name.
pub(crate) fn read_metrics(bytes: &[u8]) -> Result<BTreeMap<String, f64>, Invalid> {
    let metrics: BTreeMap<String, f64> =
        serde_json::from_slice(bytes).map_err(|e| Invalid::Metrics(e.to_string()))?;
    if let Some((name, _)) = metrics.iter().find(|(_, v)| !v.is_finite()) {
        return Err(Invalid::Metric(name.clone()));
    }
    Ok(metrics)
}

impl Envelope {
    /// Wraps (and with a secret, signs) a body.
    pub(crate) fn seal(body: &RecordBody, secret: Option<&str>) -> Envelope {
        let json = serde_json::to_string(body).expect("records serialise");
        Envelope {
            format: ENVELOPE_FORMAT,
            signature: secret.map(|s| super::signing::sign(s, &body.key, &json)),
            body: json,
        }
    }

    /// The bytes stored on the remote.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("envelopes serialise")
    }

    /// Parses, authenticates and validates the record stored as `ac/<key>.json`. With a
    /// secret, an unsigned or badly signed record is rejected; without one, signatures cannot
    /// be checked (every blob is still verified by digest and content). The flag says whether
    /// the record carried a signature this call could not check (no secret).
    pub(crate) fn open(
        bytes: &[u8],
        key: &str,
        secret: Option<&str>,
        kinds: &Registry,
    ) -> Result<(RecordBody, bool), Invalid> {
        let envelope: Envelope =
            serde_json::from_slice(bytes).map_err(|e| Invalid::Json(e.to_string()))?;
        if envelope.format > ENVELOPE_FORMAT {
            return Err(Invalid::Format(envelope.format));
        }
        if let Some(secret) = secret {
            let signature = envelope.signature.as_deref().ok_or(Invalid::Unsigned)?;
            if !super::signing::verify(secret, key, &envelope.body, signature) {
                return Err(Invalid::BadSignature);
            }
        }
        let body: RecordBody =
            serde_json::from_str(&envelope.body).map_err(|e| Invalid::Json(e.to_string()))?;
        body.validate(key, kinds)?;
        let unchecked = secret.is_none() && envelope.signature.is_some();
        Ok((body, unchecked))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds() -> Registry {
        let mut kinds = crate::stages::registry();
        crate::stages::testing::register(&mut kinds);
        kinds
    }

    fn body() -> RecordBody {
        let key_json = "{\"kind\":\"test-echo\"}".to_string();
        RecordBody {
            key: blake3::hash(key_json.as_bytes()).to_hex().to_string(),
            key_json,
            stage: "teacher".into(),
            kind: "test-echo".into(),
            pipeline: "p".into(),
            binding: "{}".into(),
            started: 1.0,
            finished: 2.0,
            duration: 1.0,
            device: "cpu".into(),
            outputs: BTreeMap::from([(
                "value.json".to_string(),
                RemoteOutput {
                    digest: "ab".repeat(32),
                    is_dir: false,
                },
            )]),
            pushed_by: "test".into(),
        }
    }

    #[test]
    fn a_sealed_record_opens_with_and_without_the_secret() {
        let (b, k) = (body(), kinds());
        let signed = Envelope::seal(&b, Some("team")).to_bytes();
        assert_eq!(
            Envelope::open(&signed, &b.key, Some("team"), &k).unwrap(),
            (b.clone(), false)
        );
        // Without the secret the signature cannot be checked, and the caller is told.
        assert_eq!(
            Envelope::open(&signed, &b.key, None, &k).unwrap(),
            (b.clone(), true)
        );
        let unsigned = Envelope::seal(&b, None).to_bytes();
        assert_eq!(
            Envelope::open(&unsigned, &b.key, None, &k).unwrap(),
            (b.clone(), false)
        );
        assert_eq!(
            Envelope::open(&unsigned, &b.key, Some("team"), &k),
            Err(Invalid::Unsigned)
        );
        assert_eq!(
            Envelope::open(&signed, &b.key, Some("other"), &k),
            Err(Invalid::BadSignature)
        );
    }

    #[test]
    fn an_edited_record_is_rejected_when_signing_is_on() {
        let b = body();
        let mut env = Envelope::seal(&b, Some("team"));
        env.body = env.body.replace("\"cpu\"", "\"cuda\"");
        let bytes = env.to_bytes();
        assert_eq!(
            Envelope::open(&bytes, &b.key, Some("team"), &kinds()),
            Err(Invalid::BadSignature)
        );
    }

    #[test]
    fn paths_digests_keys_and_metrics_are_validated() {
        let (b, k) = (body(), kinds());
        for bad in [
            "/etc/passwd",
            "../x",
            "a/../../x",
            "",
            "a\\b",
            "./a",
            "a//b",
        ] {
            assert!(!is_safe_relative(bad), "{bad}");
            let mut r = b.clone();
            let o = r.outputs.remove("value.json").unwrap();
            r.outputs.insert(bad.to_string(), o);
            assert!(
                matches!(r.validate(&b.key, &k), Err(Invalid::Path { .. })),
                "{bad}"
            );
        }
        assert!(is_safe_relative("sub/file.png"));
        let mut r = b.clone();
        r.outputs.get_mut("value.json").unwrap().digest = "AB".repeat(32);
        assert!(matches!(
            r.validate(&b.key, &k),
            Err(Invalid::Digest { .. })
        ));
        let mut r = b.clone();
        r.outputs.get_mut("value.json").unwrap().digest = "../../etc".into();
        assert!(matches!(
            r.validate(&b.key, &k),
            Err(Invalid::Digest { .. })
        ));
        assert!(matches!(
            b.validate(&"0".repeat(64), &k),
            Err(Invalid::Key { .. })
        ));
        let mut r = b.clone();
        r.key_json = "{\"kind\":\"other\"}".into();
        assert!(matches!(r.validate(&b.key, &k), Err(Invalid::Key { .. })));
        assert!(matches!(
            read_metrics(b"{\"m\":1e999}"),
            Err(Invalid::Metrics(_))
        ));
        assert!(matches!(read_metrics(b"[1]"), Err(Invalid::Metrics(_))));
        assert_eq!(read_metrics(b"{\"m\":0.5}").unwrap()["m"], 0.5);
        // The kind must be the key's, and the outputs what it declares.
        let mut r = b.clone();
        r.kind = "train-teacher".into();
        assert!(matches!(r.validate(&b.key, &k), Err(Invalid::Kind { .. })));
        let mut r = b.clone();
        let o = r.outputs.remove("value.json").unwrap();
        r.outputs.insert("model.safetensors".into(), o);
        let err = r.validate(&b.key, &k).unwrap_err();
        assert!(matches!(err, Invalid::Outputs { .. }), "{err}");
        assert!(err.to_string().contains("value.json is missing"), "{err}");
        let mut r = body();
        r.key_json = "{\"kind\":\"no-such-kind\"}".into();
        r.kind = "no-such-kind".into();
        r.key = blake3::hash(r.key_json.as_bytes()).to_hex().to_string();
        assert!(matches!(
            r.validate(&r.key, &k),
            Err(Invalid::UnknownKind(_))
        ));
        let manifest = Manifest {
            entries: vec![("../escape".into(), "ab".repeat(32))],
        };
        assert!(check_manifest(&manifest).is_err());
    }
}
