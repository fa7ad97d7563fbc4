//! Every class of pipeline mistake: found before anything runs, with file, line, column and
//! a hint.

use crate::support::Project;

/// Runs `plan` on `text` and returns stderr, asserting failure and that nothing ran.
fn error_of(text: &str) -> String {
    let p = Project::new();
    p.write("pipelines/bad.toml", text);
    p.write(
        "stages/base.toml",
        "kind = \"test-echo\"\nparams = { value = 1 }\n",
    );
    let out = p.run(&["run", "pipelines/bad.toml"]);
    assert!(!out.status.success(), "expected an error for:\n{text}");
    assert!(
        !p.path().join("cache/objects").exists(),
        "nothing may run on a spec error"
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

fn assert_at(stderr: &str, line_col: &str, message: &str) {
    let expected = format!("pipelines/bad.toml:{line_col}: {message}");
    assert!(
        stderr.contains(&expected),
        "expected `{expected}` in:\n{stderr}"
    );
}

#[test]
fn toml_syntax() {
    let e = error_of("[stages.a]\nkind = \"test-echo\"\nparams = { value = }\n");
    assert_at(&e, "3:20", "TOML syntax");
}

#[test]
fn unknown_stage_kind_with_suggestion() {
    let e = error_of("[stages.a]\nkind = \"test-ecko\"\n");
    assert_at(&e, "2:8", "unknown stage kind `test-ecko`");
    assert!(e.contains("did you mean `test-echo`?"), "{e}");
}

#[test]
fn unknown_parameter_with_suggestion() {
    let e = error_of("[stages.a]\nkind = \"test-echo\"\nparams = { valeu = 1 }\n");
    assert_at(&e, "3:12", "unknown parameter `valeu` for kind `test-echo`");
    assert!(e.contains("did you mean `value`?"), "{e}");
}

#[test]
fn missing_parameter() {
    let e = error_of(
        "[stages.src]\nkind = \"test-echo\"\n[stages.a]\nkind = \"test-strict\"\ninputs = { source = \"src\" }\n",
    );
    assert_at(&e, "3:9", "stage `a` is missing parameter `count`");
    assert!(e.contains("hint: add `count = ...`"), "{e}");
}

#[test]
fn wrong_type() {
    let e = error_of("[stages.a]\nkind = \"test-echo\"\nparams = { sleep_ms = \"long\" }\n");
    assert_at(
        &e,
        "3:23",
        "parameter `sleep_ms` of kind `test-echo` expects int, found the string \"long\"",
    );
}

#[test]
fn wrong_type_through_a_sweep_axis() {
    let e = error_of(
        "[sweep]\nms = [1, \"x\"]\n[stages.a]\nkind = \"test-echo\"\nparams = { sleep_ms = \"${sweep.ms}\" }\n",
    );
    assert_at(&e, "5:23", "parameter `sleep_ms` of kind `test-echo` expects int, found the string \"x\" (with ms = \"x\")");
}

#[test]
fn unknown_input_stage_and_slot() {
    let e = error_of("[stages.a]\nkind = \"test-echo\"\ninputs = { input = \"teacher\" }\n");
    assert_at(&e, "3:20", "input `input` names unknown stage `teacher`");
    let e = error_of("[stages.a]\nkind = \"test-echo\"\n[stages.b]\nkind = \"test-echo\"\ninputs = { inptu = \"a\" }\n");
    assert_at(&e, "5:12", "unknown input `inptu` for kind `test-echo`");
    assert!(e.contains("did you mean `input`?"), "{e}");
}

#[test]
fn dependency_cycle_is_named() {
    let e = error_of(
        "[stages.a]\nkind = \"test-echo\"\ninputs = { input = \"c\" }\n\
         [stages.b]\nkind = \"test-echo\"\ninputs = { input = \"a\" }\n\
         [stages.c]\nkind = \"test-echo\"\ninputs = { input = \"b\" }\n",
    );
    assert!(e.contains("dependency cycle: "), "{e}");
    assert!(
        e.contains("a -> b -> c -> a")
            || e.contains("b -> c -> a -> b")
            || e.contains("c -> a -> b -> c"),
        "{e}"
    );
}

#[test]
fn unknown_sweep_axis() {
    let e = error_of("[sweep]\nseed = [0]\n[stages.a]\nkind = \"test-echo\"\nparams = { value = \"${sweep.sed}\" }\n");
    assert_at(&e, "5:20", "unknown sweep axis `sed`");
    assert!(e.contains("did you mean `seed`?"), "{e}");
    let e =
        error_of("[sweep]\nseed = [0]\n[stages.a]\nkind = \"test-echo\"\ngather = [\"sede\"]\n");
    assert_at(&e, "5:11", "gather names unknown sweep axis `sede`");
}

#[test]
fn bad_interpolation() {
    let e = error_of("[stages.a]\nkind = \"test-echo\"\nparams = { value = \"${env.HOME}\" }\n");
    assert_at(&e, "3:20", "bad interpolation `${env.HOME}`");
    let e = error_of(
        "[vars]\nx = 1\n[stages.a]\nkind = \"test-echo\"\nparams = { value = \"${vars.y}\" }\n",
    );
    assert_at(&e, "5:20", "unknown variable `y`");
}

#[test]
fn missing_template_file() {
    let e = error_of("[stages.a]\nextends = \"stages/nope.toml\"\n");
    assert_at(&e, "2:11", "template file `stages/nope.toml` not found");
}

#[test]
fn templates_supply_defaults_and_the_stage_wins() {
    let p = Project::new();
    p.write(
        "stages/base.toml",
        "kind = \"test-echo\"\nparams = { value = 1, sleep_ms = 0 }\n",
    );
    p.write(
        "pipelines/ok.toml",
        "[stages.a]\nextends = \"stages/base.toml\"\nparams = { value = 5 }\n",
    );
    let out = p.run_json("pipelines/ok.toml", &[]);
    assert_eq!(out["a"].0, "ran");
    let show = p.run(&["show", "pipelines/ok.toml", "a", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(doc[0]["metrics"]["value"], 5.0);
}

#[test]
fn a_bad_override_points_at_the_command_line() {
    let p = Project::new();
    p.write("pipelines/ok.toml", "[stages.a]\nkind = \"test-echo\"\n");
    let out = p.run(&[
        "plan",
        "pipelines/ok.toml",
        "--set",
        "stages.b.params.value=1",
    ]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        e.contains("<command line --set>:1:1: no stage `b` to override"),
        "{e}"
    );
}

#[test]
fn issue28_out_of_range_values_are_plan_errors_with_a_place() {
    let e = error_of("[stages.split]\nkind = \"split\"\nparams = { classes = -5 }\n");
    assert_at(
        &e,
        "3:22",
        "parameter `classes` of kind `split` must be >= 2, found -5",
    );
    let e = error_of("[stages.split]\nkind = \"split\"\nparams = { detail_scale = 0 }\n");
    assert_at(
        &e,
        "3:27",
        "parameter `detail_scale` of kind `split` must be in [0.25, 16], found 0",
    );
    // Each number of a list, and a value reached through a sweep axis.
    let e = error_of("[stages.split]\nkind = \"split\"\nparams = { subsets = [25, 0] }\n");
    assert_at(
        &e,
        "3:22",
        "each number of parameter `subsets` of kind `split` must be in [1, 100], found 0",
    );
    let e = error_of(
        "[sweep]\nf = [0.5, 1.0]\n[stages.split]\nkind = \"split\"\nparams = { train_fraction = \"${sweep.f}\" }\n",
    );
    assert_at(
        &e,
        "5:29",
        "parameter `train_fraction` of kind `split` must be in (0, 1), found 1 (with f = 1.0)",
    );
}

#[test]
fn issue28_out_of_range_overrides_point_at_the_command_line() {
    let p = Project::new();
    p.write("pipelines/ok.toml", "[stages.split]\nkind = \"split\"\n");
    let out = p.run(&[
        "plan",
        "pipelines/ok.toml",
        "--set",
        "stages.split.params.classes=-5",
    ]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        e.contains("<command line --set>:1:29: parameter `classes` of kind `split` must be >= 2"),
        "{e}"
    );
}

#[test]
fn issue28_every_default_is_inside_its_declared_range() {
    let mut registry = asymflow::stages::registry();
    asymflow::stages::testing::register(&mut registry);
    for kind in registry.kinds() {
        for decl in kind.params() {
            let (Some(range), Some(default)) = (decl.range, decl.default_value()) else {
                continue;
            };
            let numbers: Vec<f64> = match &default {
                serde_json::Value::Array(items) => {
                    items.iter().filter_map(|v| v.as_f64()).collect()
                }
                other => other.as_f64().into_iter().collect(),
            };
            for n in numbers {
                assert!(
                    range.contains(n),
                    "{}.{}: default {n} outside {}",
                    kind.kind(),
                    decl.name,
                    range.describe()
                );
            }
        }
    }
}

#[test]
fn issue28_a_pipeline_that_is_not_utf8_gets_a_position() {
    let p = Project::new();
    let path = p.path().join("pipelines/bad.toml");
    std::fs::write(&path, b"[stages.a]\nkind = \"test-echo\"\n# caf\xe9\n").unwrap();
    let out = p.run(&["plan", "pipelines/bad.toml"]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        e.contains("pipelines/bad.toml:3:6: byte 0xe9 is not UTF-8 text"),
        "{e}"
    );
    // In a template, the place is the template's.
    std::fs::write(
        p.path().join("stages/t.toml"),
        b"kind = \"test-echo\"\xff\n",
    )
    .unwrap();
    p.write(
        "pipelines/ok.toml",
        "[stages.a]\nextends = \"stages/t.toml\"\n",
    );
    let out = p.run(&["plan", "pipelines/ok.toml"]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("stages/t.toml:1:19: byte 0xff is not UTF-8 text"),
        "{e}"
    );
}

/// `asymflow ARGS` in `p`, killed and failed if it takes more than 20 s.
fn run_bounded(p: &Project, args: &[&str]) -> std::process::Output {
    let mut child = p
        .cmd(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(20) {
            child.kill().unwrap();
            panic!("asymflow {args:?} blocked");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn issue28_extends_to_a_fifo_or_a_device_says_so_and_never_blocks() {
    let p = Project::new();
    mkfifo(&p.path().join("stages/fifo.toml"));
    std::os::unix::fs::symlink("/dev/zero", p.path().join("stages/zero.toml")).unwrap();
    p.write(
        "pipelines/fifo.toml",
        "[stages.a]\nextends = \"stages/fifo.toml\"\n",
    );
    let out = run_bounded(&p, &["plan", "pipelines/fifo.toml"]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        e.contains("pipelines/fifo.toml:2:11: cannot read template `stages/fifo.toml`: it is a FIFO (named pipe), not a regular file"),
        "{e}"
    );
    p.write(
        "pipelines/zero.toml",
        "[stages.a]\nextends = \"stages/zero.toml\"\n",
    );
    let out = run_bounded(&p, &["plan", "pipelines/zero.toml"]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        e.contains("pipelines/zero.toml:2:11: cannot read template `stages/zero.toml`: it is a device, not a regular file"),
        "{e}"
    );
    assert!(!e.contains("not found"), "{e}");
    // The pipeline file itself.
    mkfifo(&p.path().join("pipelines/pipe.toml"));
    let out = run_bounded(&p, &["plan", "pipelines/pipe.toml"]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("cannot read pipeline file pipelines/pipe.toml: it is a FIFO (named pipe), not a regular file"),
        "{e}"
    );
}

#[test]
fn misspelt_partition_is_found_before_anything_runs() {
    let e = error_of(
        "[stages.split]\nkind = \"split\"\nparams = { dataset = \"synthetic\", classes = 4, per_class = 2, image_size = 16 }\n\
         [stages.emb-model]\nkind = \"train-classifier\"\ninputs = { split = \"split\" }\n\
         params = { partition = \"trian\", width = 8, embed_dim = 8, resolution = 16, epochs = 1 }\n",
    );
    assert_at(
        &e,
        "7:24",
        "stage `emb-model`: partition `trian` is not one that split `split` writes (test, train)",
    );
    assert!(e.contains("did you mean `train`?"), "{e}");
}

#[test]
fn a_validation_partition_needs_the_validation_option() {
    let e = error_of(
        "[stages.split]\nkind = \"split\"\nparams = { dataset = \"synthetic\", classes = 4, per_class = 2, image_size = 16, subsets = [50] }\n\
         [stages.net]\nkind = \"train-classifier\"\ninputs = { split = \"split\" }\n\
         params = { partition = \"val-train\", width = 8, embed_dim = 8, resolution = 16, epochs = 1 }\n",
    );
    assert!(
        e.contains(
            "partition `val-train` is not one that split `split` writes (test, train, train-50)"
        ) && e.contains("`validation = true` adds val-train"),
        "{e}"
    );
}
