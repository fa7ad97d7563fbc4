//! The reliability suite of issue 11: the cache under crashes, concurrency, corruption, a full
//! disk, and hostile pipeline files. Each test is sized for a 2-core machine and uses the
//! engine's test kinds (`test-echo`), whose `trace` file counts real executions.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use rand::{Rng, SeedableRng};

use crate::support::{statuses, trace_lines, verify_clean, Project};

const CHAIN: &str = r#"
[sweep]
seed = [1, 2]
[stages.a]
kind = "test-echo"
params = { value = "${sweep.seed}", sleep_ms = 150, trace = "trace.txt" }
[stages.b]
kind = "test-echo"
inputs = { input = "a" }
params = { value = "${sweep.seed}", sleep_ms = 150, trace = "trace.txt" }
[stages.c]
kind = "test-echo"
inputs = { input = "b" }
params = { value = "${sweep.seed}", sleep_ms = 100, trace = "trace.txt" }
[stages.d]
kind = "test-echo"
inputs = { input = "c" }
gather = ["seed"]
params = { value = 1000, sleep_ms = 50, trace = "trace.txt" }
"#;

/// The trace line an instance writes: its stage and value, the seed for every per-seed stage
/// (so two instances of one stage never share a line) and 1000 for `d`, which gathers.
fn trace_line(label: &str) -> String {
    let stage = label.split('[').next().unwrap();
    match label.split_once("[seed=") {
        Some((_, seed)) => format!("{stage} {}", seed.trim_end_matches(']')),
        None => format!("{stage} 1000"),
    }
}

#[test]
fn crash_safety_kill_9_at_20_random_moments() {
    let p = Project::new();
    p.write("pipelines/chain.toml", CHAIN);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let mut kills = 0;
    while kills < 20 {
        let cached_before: BTreeSet<String> = p
            .plan_json("pipelines/chain.toml", &[])
            .into_iter()
            .filter(|(_, (s, _))| s == "cached")
            .map(|(label, _)| trace_line(&label))
            .collect();
        if cached_before.len() == 7 {
            // Everything is done: start over in a fresh cache so every kill hits live work.
            std::fs::remove_dir_all(p.path().join("cache")).unwrap();
            std::fs::remove_file(p.path().join("trace.txt")).unwrap();
            continue;
        }
        let traced = trace_lines(&p).len();
        let mut child = p
            .cmd(&["run", "pipelines/chain.toml", "--json", "--jobs", "2"])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(rng.random_range(0..700)));
        let _ = child.kill(); // SIGKILL, wherever it is: start-up, a stage, a commit
        child.wait().unwrap();
        kills += 1;
        verify_clean(&p, &format!("after kill {kills}"));
        // Only unfinished instances ever run again: nothing that was cached before this run
        // was executed by it.
        let rerun: Vec<String> = trace_lines(&p)[traced..]
            .iter()
            .filter(|l| cached_before.contains(*l))
            .cloned()
            .collect();
        assert!(
            rerun.is_empty(),
            "kill {kills}: cached instances ran again: {rerun:?}"
        );
    }
    let out = p.run_json("pipelines/chain.toml", &[]);
    assert!(
        out.values().all(|(s, _)| s == "ran" || s == "cached"),
        "{out:?}"
    );
    verify_clean(&p, "at the end");
    assert!(p
        .plan_json("pipelines/chain.toml", &[])
        .values()
        .all(|(s, _)| s == "cached"));
}

#[test]
fn concurrency_four_runs_on_one_cache_compute_each_key_once() {
    let p = Project::new();
    p.write("pipelines/chain.toml", CHAIN);
    let children: Vec<_> = (0..4)
        .map(|_| {
            p.cmd(&["run", "pipelines/chain.toml", "--json"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Every process's summary is whole and names every instance.
        assert_eq!(statuses(&out.stdout).len(), 7);
    }
    let mut lines = trace_lines(&p);
    lines.sort();
    assert_eq!(
        lines,
        vec!["a 1", "a 2", "b 1", "b 2", "c 1", "c 2", "d 1000"],
        "each key computed exactly once"
    );
    verify_clean(&p, "after the concurrent runs");
}

fn objects_of(p: &Project, label: &str) -> Vec<(String, String)> {
    let out = p.run(&["show", "pipelines/two.toml", label, "--json"]);
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    shown[0]["outputs"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(n, d)| (n.clone(), d["digest"].as_str().unwrap().to_string()))
        .collect()
}

fn object_path(p: &Project, digest: &str) -> std::path::PathBuf {
    p.path()
        .join("cache/objects")
        .join(&digest[..2])
        .join(&digest[2..])
}

/// An output object removed from the store by hand makes its instance run again, and only it:
/// `run` checks a batch's outputs in one pass over the store (as `plan` does), which must see
/// the removal as a look-up per object did.
#[test]
fn an_output_removed_by_hand_reruns_its_instance_alone() {
    let p = Project::new();
    p.write(
        "pipelines/two.toml",
        "[sweep]\ni = [0, 1, 2, 3]\n[stages.s]\nkind = \"test-echo\"\nparams = { value = \"${sweep.i}\" }\n",
    );
    p.run_json("pipelines/two.toml", &[]);
    let (_, digest) = objects_of(&p, "s[i=2]").into_iter().next().unwrap();
    std::fs::remove_file(object_path(&p, &digest)).unwrap();
    let plan = p.run(&["plan", "pipelines/two.toml"]);
    let plan = String::from_utf8_lossy(&plan.stdout);
    assert!(plan.contains("1 to run"), "{plan}");
    let out = p.run_json("pipelines/two.toml", &[]);
    let ran: Vec<&str> = out
        .iter()
        .filter(|(_, (status, _))| status == "ran")
        .map(|(label, _)| label.as_str())
        .collect();
    assert_eq!(ran, ["s[i=2]"], "{out:?}");
    assert!(object_path(&p, &digest).is_file(), "the object is back");
}

#[test]
fn corruption_a_flipped_byte_in_every_object_is_caught_before_use() {
    let p = Project::new();
    p.write(
        "pipelines/two.toml",
        "[stages.up]\nkind = \"test-echo\"\nparams = { value = 7, trace = \"trace.txt\" }\n\
         [stages.down]\nkind = \"test-echo\"\ninputs = { input = \"up\" }\nparams = { value = 0 }\n",
    );
    p.run_json("pipelines/two.toml", &[]);
    let objects = objects_of(&p, "up");
    assert!(objects.len() >= 3, "{objects:?}");
    for (round, (name, digest)) in objects.iter().enumerate() {
        let path = object_path(&p, digest);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[0] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        // The consumer must run again (a new value), so it reads the producer's objects.
        let value = format!("stages.down.params.value={}", round + 1);
        let out = p.run_json("pipelines/two.toml", &["--set", &value]);
        let down = &out["down"];
        assert_eq!(down.0, "ran", "{name}: {out:?}");
        // Detected before use: the consumer's verified read of every input object failed, so
        // the producer ran again.
        assert_eq!(trace_lines(&p).len(), round + 2, "{name} was used corrupt");
        // The consumer got good bytes: its record holds the producer's true value.
        let shown = p.run(&[
            "show",
            "pipelines/two.toml",
            "down",
            "--json",
            "--set",
            &value,
        ]);
        let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
        assert_eq!(shown[0]["metrics"]["value"], 7.0 + (round + 1) as f64);
        verify_clean(&p, name);
    }
}

#[test]
fn disk_full_a_stage_that_does_not_fit_fails_cleanly() {
    let p = Project::new();
    let cache = p.path().join("small-cache");
    std::fs::create_dir_all(&cache).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&cache)
        .output()
        .is_ok_and(|o| o.status.success());
    if !mounted {
        eprintln!("skipped: a small tmpfs could not be mounted (run the tests as root to get it)");
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(&cache);
    p.write(
        "pipelines/big.toml",
        "[stages.small]\nkind = \"test-echo\"\nparams = { value = 1 }\n\
         [stages.big]\nkind = \"test-echo\"\ninputs = { input = \"small\" }\n\
         params = { value = 2, pad_bytes = 3145728 }\n",
    );
    let out = p
        .cmd(&["run", "pipelines/big.toml", "--json", "--keep-going"])
        .env("ASYMFLOW_CACHE", &cache)
        .output()
        .unwrap();
    assert!(!out.status.success(), "a 3 MiB output fitted in 1 MiB");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let summary = statuses(&out.stdout);
    assert_eq!(summary["small"].0, "ran", "{summary:?}");
    assert_eq!(summary["big"].0, "failed", "{summary:?}");
    assert!(summary["big"].1.contains("No space left"), "{summary:?}");
    // Nothing half-written is recorded, and the cache verifies clean.
    let verify = p
        .cmd(&["cache", "verify"])
        .env("ASYMFLOW_CACHE", &cache)
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
    let conn = rusqlite::Connection::open(cache.join("index.sqlite")).unwrap();
    let ok: i64 = conn
        .query_row("SELECT count(*) FROM runs WHERE status = 'ok'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(ok, 1, "only the small stage is a result");
    let gc = p
        .cmd(&["cache", "gc"])
        .env("ASYMFLOW_CACHE", &cache)
        .output()
        .unwrap();
    assert!(gc.status.success());
}

mod fuzz {
    use proptest::prelude::*;

    use asymflow::graph::Plan;
    use asymflow::kind::Registry;

    /// Fragments of pipeline files, valid and broken, that the generator splices together.
    const FRAGMENTS: &[&str] = &[
        "[pipeline]\nname = \"p\"\n",
        "[pipeline]\nname = \"/etc\"\n",
        "[vars]\nx = 1\ny = \"${vars.x}\"\n",
        "[sweep]\nseed = [1, 2, 3]\n",
        "[sweep]\npair = { a = [1, 2], b = [3] }\n",
        "[sweep]\nseed = []\n",
        "[stages.a]\nkind = \"test-echo\"\nparams = { value = \"${sweep.seed}\" }\n",
        "[stages.b]\nkind = \"test-echo\"\ninputs = { input = \"a\" }\n",
        "[stages.c]\nkind = \"test-echo\"\ninputs = { input = [\"a\", \"b\", \"zz\"] }\ngather = [\"seed\"]\n",
        "[stages.a]\nkind = \"test-echo\"\ninputs = { input = \"b\" }\n",
        "[stages.t]\nextends = \"stages/base.toml\"\n",
        "[stages.t2]\nextends = \"stages/loop.toml\"\n",
        "[stages.t3]\nextends = \"/proc/self/environ\"\n",
        "[stages.\"../x\"]\nkind = \"test-echo\"\n",
        "[stages.s]\nkind = \"test-strict\"\nparams = { count = 1.5 }\n",
        "[stages.n]\nkind = \"test-echo\"\nparams = { value = nan, sleep_ms = inf }\n",
        "[stages.u]\nkind = \"no-such-kind\"\nwhat = 1\n",
        "x = 1979-05-27T07:32:00Z\n",
        "[stages.e]\nkind = \"test-echo\"\nparams = { value = \"${sweep.\" }\n",
        "[stages.e2]\nkind = \"test-echo\"\nparams = { value = \"${vars.nope}\", sleep_ms = 99999999999999999999 }\n",
        "\u{feff}\r\n[stages.crlf]\r\nkind = \"test-echo\"\r\n",
        "[[stages]]\n",
        "[stages]\na = 1\n",
        "key = \"\u{0}\u{7f}é€😀\"\n",
        "[sweep]\nbig = [",
    ];

    fn nasty_corpus() -> Vec<String> {
        let mut corpus = vec![
            String::new(),
            "[".into(),
            "a = [".repeat(500),
            format!("a = {}1{}", "[".repeat(300), "]".repeat(300)),
            format!("a = {}", "{ b = ".repeat(300)),
            "\"".repeat(1000),
            "[stages.a]\nkind = \"test-echo\"\n".repeat(50),
            (0..300)
                .map(|i| format!("[stages.s{i}]\nkind = \"test-echo\"\ninputs = {{ input = \"s{}\" }}\n", (i + 1) % 300))
                .collect(),
            format!("[stages.a]\nkind = \"test-echo\"\nparams = {{ value = \"{}\" }}\n", "${sweep.x}".repeat(200)),
            "[sweep]\na = [1,2,3,4,5,6,7,8,9,10]\nb = [1,2,3,4,5,6,7,8,9,10]\nc = [1,2,3,4,5,6,7,8,9,10]\nd = [1,2,3,4,5,6,7,8,9,10]\ne = [1,2,3,4,5,6,7,8,9,10]\nf = [1,2,3,4,5,6,7,8,9,10]\n[stages.x]\nkind = \"test-echo\"\nparams = { value = \"${sweep.a}${sweep.b}${sweep.c}${sweep.d}${sweep.e}${sweep.f}\" }\n".into(),
            "[pipeline]\nname = \"\u{0}\"\n".into(),
            "[stages.\"\"]\nkind = \"test-echo\"\n".into(),
            "[stages.a]\nkind = \"test-echo\"\nparams = { value = 1e400 }\n".into(),
            "[stages.a]\nkind = \"test-echo\"\nparams = { value = -0x8000000000000000 }\n".into(),
        ];
        for f in FRAGMENTS {
            corpus.push((*f).to_string());
        }
        corpus
    }

    struct Harness {
        _dir: tempfile::TempDir,
        file: std::path::PathBuf,
        registry: Registry,
    }

    impl Harness {
        fn new() -> Harness {
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(dir.path().join("pipelines")).unwrap();
            std::fs::create_dir_all(dir.path().join("stages")).unwrap();
            std::fs::write(
                dir.path().join("stages/base.toml"),
                "kind = \"test-echo\"\nparams = { value = 1 }\n",
            )
            .unwrap();
            std::fs::write(
                dir.path().join("stages/loop.toml"),
                "extends = \"loop.toml\"\n",
            )
            .unwrap();
            let mut registry = asymflow::stages::registry();
            asymflow::stages::testing::register(&mut registry);
            Harness {
                file: dir.path().join("pipelines/fuzz.toml"),
                _dir: dir,
                registry,
            }
        }

        /// Loads `text` as a pipeline: any outcome but a panic is fine, and every error must
        /// carry a file, line and column.
        fn check(&self, text: &str) -> Result<(), String> {
            std::fs::write(&self.file, text).unwrap();
            let result =
                asymflow::spec::load(&self.file, &[], &self.registry).and_then(Plan::build);
            match result {
                Ok(_) => Ok(()),
                Err(e) if e.loc.is_some() => {
                    let shown = e.to_string();
                    let (line, col) = e.line_col().unwrap();
                    if shown.contains(&format!(":{line}:{col}: ")) {
                        Ok(())
                    } else {
                        Err(format!("error without its place: {shown}"))
                    }
                }
                Err(e) => Err(format!("error without a location: {e}\nfor:\n{text}")),
            }
        }
    }

    #[test]
    fn fuzz_corpus_of_nasty_files_never_panics_and_always_locates() {
        let h = Harness::new();
        for text in nasty_corpus() {
            h.check(&text).unwrap();
        }
    }

    fn pipeline_text() -> impl Strategy<Value = String> {
        (
            prop::collection::vec(prop::sample::select(FRAGMENTS), 0..7),
            any::<String>(),
            any::<usize>(),
            prop::collection::vec(any::<u8>(), 0..4),
            any::<usize>(),
        )
            .prop_map(|(fragments, noise, at, bytes, cut)| {
                let mut text = fragments.concat();
                // Splice noise at a character boundary, flip a few bytes into ASCII noise,
                // and sometimes truncate: the shapes a hand-edited file goes wrong in.
                let mut at = at % (text.len() + 1);
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                if !noise.is_empty() {
                    text.insert_str(at, &noise);
                }
                for b in bytes {
                    let pos = (b as usize * 7919) % (text.len() + 1);
                    if text.is_char_boundary(pos) {
                        text.insert(pos, (b'!' + b % 90) as char);
                    }
                }
                if cut % 5 == 0 {
                    let mut end = cut % (text.len() + 1);
                    while !text.is_char_boundary(end) {
                        end -= 1;
                    }
                    text.truncate(end);
                }
                text
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 10_000,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn fuzz_spec_parser_and_resolver_never_panic(text in pipeline_text()) {
            thread_local! { static H: Harness = Harness::new(); }
            let verdict = H.with(|h| h.check(&text));
            prop_assert!(verdict.is_ok(), "{}", verdict.unwrap_err());
        }
    }
}
