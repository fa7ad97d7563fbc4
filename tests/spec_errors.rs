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
