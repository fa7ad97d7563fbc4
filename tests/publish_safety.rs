//! Issue 28, item 1: publishing replaces only what asymflow published. Every published folder
//! holds `.asymflow-published`; anything else at a report's place (a user's folder, a file, a
//! folder from before the marker) is refused with the place and the way out, and nothing in it
//! is touched. `--reports` inside the cache is refused. Item 8's tampered `is_dir` flag fails
//! naming the output instead of publishing a manifest as a file.

use std::path::Path;

use crate::support::Project;

const MARKER: &str = ".asymflow-published";

/// A value stage and a report stage named `report_name`.
fn project_with_report(report_name: &str) -> Project {
    let p = Project::new();
    p.write(
        "pipelines/p.toml",
        &format!(
            "[stages.a]\nkind = \"test-echo\"\nparams = {{ value = 1 }}\n\
             [stages.{report_name}]\nkind = \"report\"\ninputs = {{ results = [\"a\"] }}\n\
             params = {{ metrics = [\"value\"], plot_xy = [] }}\n"
        ),
    );
    p
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn refused(p: &Project, args: &[&str]) -> String {
    let out = p.run(args);
    let err = stderr(&out);
    assert!(!out.status.success(), "{args:?} must fail:\n{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn issue28_reports_never_replace_a_users_folder() {
    let p = project_with_report("notes");
    let chapter = p.write("paper/notes/chapter1.tex", "\\chapter{Mine}\n");
    let err = refused(&p, &["run", "pipelines/p.toml", "--reports", "paper"]);
    assert!(err.contains("refusing to replace paper/notes"), "{err}");
    assert!(err.contains("a folder asymflow did not publish"), "{err}");
    assert!(err.contains("--reports"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&chapter).unwrap(),
        "\\chapter{Mine}\n"
    );
    // Refused before anything ran: no hours of training before the error.
    assert!(!p.path().join("cache/objects").exists());
    // `report` (rendering from the cache) refuses the same way.
    p.run_json("pipelines/p.toml", &["a"]);
    let err = refused(&p, &["report", "pipelines/p.toml", "--reports", "paper"]);
    assert!(err.contains("refusing to replace paper/notes"), "{err}");
    assert!(chapter.exists());
}

#[test]
fn issue28_reports_dot_never_replaces_the_pipelines_folder() {
    let p = project_with_report("pipelines");
    let err = refused(&p, &["run", "pipelines/p.toml", "--reports", "."]);
    assert!(err.contains("refusing to replace ./pipelines"), "{err}");
    assert!(p.path().join("pipelines/p.toml").is_file());
}

#[test]
fn issue28_a_file_where_a_report_goes_survives() {
    let p = project_with_report("notes");
    let file = p.write("paper/notes", "my notes\n");
    let err = refused(&p, &["run", "pipelines/p.toml", "--reports", "paper"]);
    assert!(err.contains("it is a file"), "{err}");
    assert_eq!(std::fs::read_to_string(file).unwrap(), "my notes\n");
}

#[test]
fn issue28_reports_inside_the_cache_are_refused() {
    let p = project_with_report("report");
    for inside in ["cache", "cache/reports", "cache/../cache/x"] {
        let err = refused(&p, &["run", "pipelines/p.toml", "--reports", inside]);
        assert!(err.contains("inside the cache folder"), "{inside}: {err}");
    }
    // Through a link to the cache, too.
    std::fs::create_dir_all(p.path().join("cache")).unwrap();
    std::os::unix::fs::symlink(p.path().join("cache"), p.path().join("shortcut")).unwrap();
    let err = refused(&p, &["run", "pipelines/p.toml", "--reports", "shortcut/r"]);
    assert!(err.contains("inside the cache folder"), "{err}");
}

#[test]
fn issue28_republishing_over_asymflows_own_output_still_works() {
    let p = project_with_report("notes");
    p.run_json("pipelines/p.toml", &["--reports", "paper"]);
    let marker = std::fs::read_to_string(p.path().join("paper/notes").join(MARKER)).unwrap();
    assert!(
        marker.starts_with("asymflow published this folder"),
        "{marker}"
    );
    assert!(
        marker.contains("pipeline: p\ninstance: notes\nkey: "),
        "{marker}"
    );
    // A changed result replaces the folder it published, on `run` and on `report`.
    p.write(
        "pipelines/p.toml",
        &std::fs::read_to_string(p.path().join("pipelines/p.toml"))
            .unwrap()
            .replace("value = 1", "value = 7"),
    );
    p.run_json("pipelines/p.toml", &["--reports", "paper"]);
    let table = std::fs::read_to_string(p.path().join("paper/notes/table.md")).unwrap();
    assert!(table.contains('7'), "{table}");
    let out = p.run(&["report", "pipelines/p.toml", "--reports", "paper"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The default place works the same way, and an empty folder is taken.
    std::fs::create_dir_all(p.path().join("reports/p/notes")).unwrap();
    p.run_json("pipelines/p.toml", &[]);
    assert!(p.path().join("reports/p/notes").join(MARKER).is_file());
}

#[test]
fn issue28_a_folder_published_before_the_marker_says_how_to_resolve() {
    let p = project_with_report("report");
    p.write("reports/p/report/table.md", "an old table\n");
    let err = refused(&p, &["run", "pipelines/p.toml"]);
    assert!(err.contains("reports/p/report"), "{err}");
    assert!(err.contains("rm -r"), "{err}");
    assert!(p.path().join("reports/p/report/table.md").is_file());
}

#[test]
fn issue28_export_into_a_users_folder_is_refused_and_re_export_works() {
    let p = project_with_report("report");
    p.run_json("pipelines/p.toml", &[]);
    let mine = p.write("out/thesis.tex", "mine\n");
    let err = refused(&p, &["export", "pipelines/p.toml", "a", "out"]);
    assert!(err.contains("refusing to replace out"), "{err}");
    assert!(mine.is_file());
    for _ in 0..2 {
        let out = p.run(&["export", "pipelines/p.toml", "a", "fresh"]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(p.path().join("fresh/value.json").is_file());
    }
    let err = refused(&p, &["export", "pipelines/p.toml", "a", "cache/a"]);
    assert!(err.contains("inside the cache folder"), "{err}");
}

fn sql(project: &Path, statement: &str) {
    let conn = rusqlite::Connection::open(project.join("cache/index.sqlite")).unwrap();
    conn.execute_batch(statement).unwrap();
}

#[test]
fn issue28_a_tampered_is_dir_flag_names_the_output_and_publishes_nothing() {
    let p = project_with_report("report");
    p.run_json("pipelines/p.toml", &[]);
    let before = std::fs::read_to_string(p.path().join("reports/p/report/table.md")).unwrap();
    sql(
        p.path(),
        "UPDATE outputs SET is_dir = 1 WHERE name = 'table.md'",
    );
    let err = refused(&p, &["run", "pipelines/p.toml"]);
    assert!(err.contains("output `table.md`"), "{err}");
    assert!(
        err.contains("recorded as a folder but holds a file"),
        "{err}"
    );
    assert!(err.contains("reports/p/report"), "{err}");
    // The published folder is as it was, and the result was forgotten: the next run
    // recomputes it and publishes.
    assert_eq!(
        std::fs::read_to_string(p.path().join("reports/p/report/table.md")).unwrap(),
        before
    );
    let statuses = p.run_json("pipelines/p.toml", &[]);
    assert_eq!(statuses["report"].0, "ran");
    assert!(p.path().join("reports/p/report/table.md").is_file());
}
