//! The documentation cannot drift from the program: the README stays short, every docs page is
//! in the book's SUMMARY.md, every relative link resolves, the CLI reference is generated from
//! the clap definitions, the README's tour shows `pipelines/examples/tour.toml` as it is, and
//! every fenced block marked `sh runnable` runs as written.
//!
//! Regenerate the CLI reference after changing a command:
//! `ASYMFLOW_REGEN_DOCS=1 cargo test --release --test integration docs_`.

use std::path::{Path, PathBuf};

use clap::CommandFactory;

use crate::support::{copy_tree, Project};

const CLI_REFERENCE: &str = "docs/cli-reference.md";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every Markdown page under docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![repo().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The targets of `[text](target)` links in Markdown, outside fenced blocks.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

/// Fenced blocks whose info string is `info`, as their text.
fn blocks(text: &str, info: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        match (&mut current, trimmed.strip_prefix("```")) {
            (None, Some(tag)) if tag.trim() == info => current = Some(String::new()),
            (Some(_), Some(_)) => out.push(current.take().unwrap_or_default()),
            (Some(block), None) => {
                block.push_str(line);
                block.push('\n');
            }
            _ => {}
        }
    }
    out
}

#[test]
fn docs_readme_is_a_ten_minute_read() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines; move detail to docs/"
    );
}

#[test]
fn docs_every_page_is_in_the_book_and_every_relative_link_resolves() {
    let summary = std::fs::read_to_string(repo().join("docs/SUMMARY.md")).unwrap();
    let listed = links(&summary);
    let mut problems = Vec::new();
    for page in pages() {
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        let in_docs = page.parent() == Some(&repo().join("docs"));
        if in_docs && name != "SUMMARY.md" && !listed.contains(&name) {
            problems.push(format!("docs/{name} is not in docs/SUMMARY.md"));
        }
        let text = std::fs::read_to_string(&page).unwrap();
        for link in links(&text) {
            if link.contains("://") || link.starts_with('#') || link.starts_with("mailto:") {
                continue;
            }
            let path = link.split('#').next().unwrap_or(&link);
            if !page.parent().unwrap().join(path).exists() {
                problems.push(format!("{name}: link to {link} does not resolve"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The CLI reference as the program defines it: each command's `--help`, depth first.
fn cli_reference() -> String {
    fn walk(cmd: &mut clap::Command, path: &str, out: &mut String) {
        let mut cmd = cmd.clone().bin_name(path.to_string());
        out.push_str(&format!("\n## `{path}`\n\n```text\n"));
        let help = cmd.render_long_help().to_string();
        for line in help.lines() {
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out.push_str("```\n");
        let subs: Vec<clap::Command> = cmd
            .get_subcommands()
            .filter(|s| !s.is_hide_set() && s.get_name() != "help")
            .cloned()
            .collect();
        for mut sub in subs {
            let name = format!("{path} {}", sub.get_name());
            walk(&mut sub, &name, out);
        }
    }
    let mut out = String::from(
        "# CLI reference\n\nGenerated from the program's own definitions (`tests/docs.rs`); do not edit by hand.\n\
         After changing a command: `ASYMFLOW_REGEN_DOCS=1 cargo test --release --test integration docs_`.\n",
    );
    walk(&mut asymflow::cli::Cli::command(), "asymflow", &mut out);
    out
}

#[test]
fn docs_cli_reference_is_generated_from_the_clap_definitions() {
    let path = repo().join(CLI_REFERENCE);
    let now = cli_reference();
    if std::env::var("ASYMFLOW_REGEN_DOCS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &now).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == now,
        "{CLI_REFERENCE} is out of date; regenerate it: ASYMFLOW_REGEN_DOCS=1 cargo test --release --test integration docs_"
    );
}

#[test]
fn docs_the_readme_tour_shows_its_pipeline_file_as_it_is() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let shown = blocks(&readme, "toml")
        .into_iter()
        .next()
        .expect("a toml block");
    let file = std::fs::read_to_string(repo().join("pipelines/examples/tour.toml")).unwrap();
    let body: String = file
        .lines()
        .skip_while(|l| l.starts_with('#') || l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        shown, body,
        "README's tour and pipelines/examples/tour.toml differ"
    );
}

#[test]
fn docs_every_runnable_block_runs_as_written() {
    let p = Project::new();
    copy_tree(&repo().join("stages"), &p.path().join("stages"));
    copy_tree(
        &repo().join("pipelines/examples"),
        &p.path().join("pipelines/examples"),
    );
    let bin = Path::new(env!("CARGO_BIN_EXE_asymflow")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for block in blocks(&text, "sh runnable") {
            for line in block.lines() {
                let command = line.split(" #").next().unwrap_or(line).trim();
                if command.is_empty() {
                    continue;
                }
                let out = std::process::Command::new("sh")
                    .arg("-c")
                    .arg(command)
                    .current_dir(p.path())
                    .env("PATH", &path)
                    .env_remove("ASYMFLOW_CACHE")
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "{}: `{command}` failed:\n{}",
                    page.display(),
                    String::from_utf8_lossy(&out.stderr)
                );
                if command.starts_with("asymflow plan") && command.contains("lambda_t=0.8") {
                    let stdout = String::from_utf8_lossy(&out.stdout);
                    assert!(
                        stdout.contains("params.lambda_t 0.7 -> 0.8"),
                        "the README says the plan names the change: {stdout}"
                    );
                }
                ran += 1;
            }
        }
    }
    assert!(ran >= 5, "the README's tour block runs: {ran} commands");
}
