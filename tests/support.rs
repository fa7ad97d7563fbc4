//! Shared helpers: a throwaway project folder with pipeline files, and the `asymflow` binary
//! run inside it with the engine's test kinds enabled.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A temporary project: `pipelines/`, `stages/`, and a cache in `cache/`.
pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    /// `asymflow show FILE STAGE --json` of a stage with one instance (asserting success).
    pub fn show_one(&self, file: &str, stage: &str) -> serde_json::Value {
        let out = self.run(&["show", file, stage, "--json"]);
        assert!(
            out.status.success(),
            "show failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        doc.as_array()
            .and_then(|a| a.first().cloned())
            .unwrap_or(doc)
    }

    /// The shape of the `embeddings` tensor of a shown `embed` result, read from the
    /// safetensors header (8 bytes of length, then JSON).
    pub fn embeddings_shape(&self, shown: &serde_json::Value) -> Vec<u64> {
        let path = shown["outputs"]["embeddings.safetensors"]["path"]
            .as_str()
            .map(|rel| self.path().join(rel))
            .unwrap_or_else(|| panic!("no embeddings output in {shown}"));
        let bytes = std::fs::read(path).unwrap();
        let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + len]).unwrap();
        header["embeddings"]["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect()
    }

    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("pipelines")).unwrap();
        std::fs::create_dir_all(dir.path().join("stages")).unwrap();
        Project { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `pipelines/NAME.toml` (or any relative path).
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A command running `asymflow ARGS` in the project.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_asymflow"));
        cmd.args(args)
            .current_dir(self.path())
            .env("ASYMFLOW_TEST_KINDS", "1")
            .env_remove("ASYMFLOW_CACHE");
        cmd
    }

    /// Runs `asymflow ARGS`, returning the output.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("asymflow runs")
    }

    /// Runs `asymflow run FILE --json EXTRA`, asserting success; returns instance label ->
    /// (status, reason).
    pub fn run_json(&self, file: &str, extra: &[&str]) -> BTreeMap<String, (String, String)> {
        let mut args = vec!["run", file, "--json"];
        args.extend_from_slice(extra);
        let out = self.run(&args);
        assert!(
            out.status.success(),
            "asymflow run failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        statuses(&out.stdout)
    }

    /// `asymflow plan FILE --json EXTRA` as label -> (status, reason).
    pub fn plan_json(&self, file: &str, extra: &[&str]) -> BTreeMap<String, (String, String)> {
        let mut args = vec!["plan", file, "--json"];
        args.extend_from_slice(extra);
        let out = self.run(&args);
        assert!(
            out.status.success(),
            "asymflow plan failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        statuses(&out.stdout)
    }
}

/// Parses `run --json` / `plan --json` output into label -> (status, reason).
pub fn statuses(stdout: &[u8]) -> BTreeMap<String, (String, String)> {
    let doc: Value = serde_json::from_slice(stdout).expect("JSON output");
    doc["instances"]
        .as_array()
        .expect("instances")
        .iter()
        .map(|i| {
            let binding = i["binding"].as_object().unwrap();
            let label = if binding.is_empty() {
                i["stage"].as_str().unwrap().to_string()
            } else {
                let parts: Vec<String> = binding
                    .iter()
                    .map(|(k, v)| match v {
                        Value::String(s) => format!("{k}={s}"),
                        v => format!("{k}={v}"),
                    })
                    .collect();
                format!("{}[{}]", i["stage"].as_str().unwrap(), parts.join(","))
            };
            (
                label,
                (
                    i["status"].as_str().unwrap().to_string(),
                    i["reason"].as_str().unwrap_or("").to_string(),
                ),
            )
        })
        .collect()
}

/// The labels whose status is `status`.
pub fn with_status(map: &BTreeMap<String, (String, String)>, status: &str) -> Vec<String> {
    map.iter()
        .filter(|(_, (s, _))| s == status)
        .map(|(k, _)| k.clone())
        .collect()
}

/// Copies a folder tree.
pub fn copy_tree(src: &Path, dest: &Path) {
    std::fs::create_dir_all(dest).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let target = dest.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The instances of each stage of a pipeline file of this repository (its params), expanded
/// with `overrides` and planned without running anything.
pub fn expand(
    file: &str,
    overrides: &[asymflow::spec::Override],
) -> BTreeMap<String, Vec<asymflow::kind::Params>> {
    let registry = asymflow_tensor::registry();
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(file);
    let spec =
        asymflow::spec::load(&path, overrides, &registry).unwrap_or_else(|e| panic!("{file}: {e}"));
    let plan = asymflow::graph::Plan::build(spec).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut stages: BTreeMap<String, Vec<asymflow::kind::Params>> = BTreeMap::new();
    for i in plan.instances() {
        stages
            .entry(i.stage.clone())
            .or_default()
            .push((*i.params).clone());
    }
    stages
}

/// (stage, partition) of every instance of an expanded pipeline that reads a partition: what
/// a validation pipeline's tests check, so that no stage of it reads a test image.
pub fn partitions(expanded: &BTreeMap<String, Vec<asymflow::kind::Params>>) -> Vec<(&str, &str)> {
    expanded
        .iter()
        .flat_map(|(stage, instances)| {
            instances
                .iter()
                .filter_map(move |p| Some((stage.as_str(), p.str("partition").ok()?)))
        })
        .collect()
}

/// Every (stage, partition) of a validation pipeline: embeddings of `val-test`, everything
/// else (the networks) trained on `val-train`, and at least one network.
pub fn assert_validation_partitions(file: &str, partitions: &[(&str, &str)]) {
    let mut trained = 0;
    for (stage, partition) in partitions {
        if stage.starts_with("emb-") {
            assert_eq!(*partition, "val-test", "{file}: {stage}");
        } else {
            assert_eq!(*partition, "val-train", "{file}: {stage}");
            trained += 1;
        }
    }
    assert!(trained > 0, "{file}");
}

/// `file`, a search of this repository that chooses a quickstart's recipe on the validation
/// split, parsed and checked to be one: each stage's `partition` as
/// [`assert_validation_partitions`] wants it, and `plan` of the file (in a project with the
/// repository's stage templates) finding no stage that reads a test image.
pub fn search_on_validation(file: &str) -> toml::Table {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(repo.join(file)).unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap();
    let partitions: Vec<(&str, &str)> = table["stages"]
        .as_table()
        .unwrap()
        .iter()
        .filter_map(|(stage, spec)| {
            let partition = spec.get("params")?.get("partition")?;
            Some((stage.as_str(), partition.as_str().unwrap()))
        })
        .collect();
    assert_validation_partitions(file, &partitions);
    let p = Project::new();
    copy_tree(&repo.join("stages"), &p.path().join("stages"));
    p.write(file, &text);
    let out = p.run(&["plan", file, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(plan.get("reads_test_images").is_none(), "{plan}");
    table
}

/// The keys of every successful result in the index of the cache at `cache`, read straight
/// from SQLite.
pub fn ok_keys(cache: &Path) -> Vec<String> {
    let db = rusqlite::Connection::open(cache.join("index.sqlite")).unwrap();
    let mut runs = db
        .prepare("SELECT key FROM runs WHERE status = 'ok'")
        .unwrap();
    runs.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Asserts that every metric each result in the cache at `cache` recorded is one its kind
/// declares ([`asymflow::kind::Stage::records`]): the declarations are what plan-time report
/// checks trust, so a kind that records a name it does not declare fails here. Returns how
/// many results were checked.
pub fn assert_recorded_metrics_are_declared(cache: &Path) -> usize {
    let registry = asymflow_tensor::stages::registry();
    let keys = ok_keys(cache);
    let index = asymflow::cache::Cache::new(cache).index().unwrap();
    for key in &keys {
        let record = index.lookup(key).unwrap().expect("a successful run");
        let kind = &record.kind;
        let stage = registry.get(kind).unwrap_or_else(|| panic!("kind {kind}"));
        let key_doc: Value = serde_json::from_str(&record.key_json).unwrap();
        let params: asymflow::kind::Params =
            serde_json::from_value(key_doc["params"].clone()).unwrap();
        let Some(declared) = stage.records(&params) else {
            panic!("kind `{kind}` declares no metrics");
        };
        for name in record.metrics.keys() {
            assert!(
                asymflow::kind::declares_metric(declared.iter().map(String::as_str), name),
                "a `{kind}` result records `{name}`, which the kind does not declare \
                 (Stage::records: {declared:?})"
            );
        }
    }
    keys.len()
}

/// The lines test kinds with a `trace` param appended to `trace.txt` in the project: one per
/// instance that really ran.
pub fn trace_lines(p: &Project) -> Vec<String> {
    std::fs::read_to_string(p.path().join("trace.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Asserts that `cache verify` finds nothing wrong (`when` names the moment, for the message).
pub fn verify_clean(p: &Project, when: &str) {
    let out = p.run(&["cache", "verify"]);
    assert!(
        out.status.success(),
        "{when}: cache verify found problems:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
