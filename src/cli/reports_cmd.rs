//! `asymflow reports`: the folders under `reports/` (each pipeline's, and the variants that
//! runs with overrides published, with those overrides), and their cleanup: `--clean` deletes
//! every variant, `reports rm NAME...` the named folders. Only what asymflow published is ever
//! deleted ([`crate::exec::report_folders::remove`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};

use super::common::print_json;
use crate::exec::report_folders::{self, Folder};

/// `asymflow reports [--clean]` and `asymflow reports rm NAME...`.
#[derive(Debug, Clone, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ReportsArgs {
    /// Remove folders.
    #[command(subcommand)]
    pub command: Option<ReportsCommand>,
    /// Delete every variant folder (`PIPELINE+DIGEST`, published by runs with `--set` or
    /// `--sweep`) that holds only what asymflow published; the pipelines' own folders stay.
    #[arg(long)]
    pub clean: bool,
    /// The reports folder (default: `reports/` in the project around the current folder).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `asymflow reports rm`.
#[derive(Debug, Clone, Subcommand)]
pub enum ReportsCommand {
    /// Delete report folders by name (as `asymflow reports` lists them), refusing any that holds
    /// something asymflow did not publish.
    Rm {
        /// Folder names under `reports/` (`toy+1a2b3c4d`, or a pipeline's own `toy`).
        #[arg(required = true, value_name = "NAME")]
        names: Vec<String>,
        /// The reports folder (default: `reports/` in the project around the current folder).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// Lists, cleans or removes.
pub fn reports(args: ReportsArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        Some(ReportsCommand::Rm { names, dir }) => {
            let root = root_of(dir)?;
            remove_all(&root, names.iter().map(String::as_str))
        }
        None if args.clean => {
            let root = root_of(args.dir)?;
            let variants: Vec<String> = report_folders::list(&root)?
                .into_iter()
                .filter(Folder::is_variant)
                .map(|f| f.name)
                .collect();
            if variants.is_empty() {
                println!("no variant folders in {}", root.display());
                return Ok(ExitCode::SUCCESS);
            }
            remove_all(&root, variants.iter().map(String::as_str))
        }
        None => {
            let root = root_of(args.dir)?;
            let folders = report_folders::list(&root)?;
            if args.json {
                print_json(&folders)?;
            } else {
                print_list(&root, &folders);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `--dir`, or `reports/` of the project around the current folder.
fn root_of(dir: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(dir) = dir {
        return Ok(dir);
    }
    let cwd = std::env::current_dir().context("current folder")?;
    Ok(crate::spec::resolve::find_project_dir(&cwd).join("reports"))
}

/// Removes each named folder; every refusal is reported, and makes the exit status 1.
fn remove_all<'a>(root: &Path, names: impl Iterator<Item = &'a str>) -> anyhow::Result<ExitCode> {
    let mut refused = 0;
    for name in names {
        match report_folders::remove(root, name) {
            Ok(path) => println!("deleted {}", path.display()),
            Err(e) => {
                refused += 1;
                eprintln!("error: {e}");
            }
        }
    }
    Ok(if refused == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// One line per folder: its name, what it holds, and the overrides of a variant.
fn print_list(root: &Path, folders: &[Folder]) {
    if folders.is_empty() {
        println!("no report folders in {}", root.display());
        return;
    }
    let width = folders.iter().map(|f| f.name.len()).max().unwrap_or(0);
    let now = crate::cache::store::now();
    for f in folders {
        let reports = super::output::count(f.reports, "report", "reports");
        let age = f
            .published
            .map(|at| format!(", published {}", ago(now - at)))
            .unwrap_or_default();
        let what = match &f.overrides {
            Some(overrides) => format!("variant of {}: {overrides}", f.pipeline),
            None => "as the pipeline file stands".to_string(),
        };
        let foreign = if f.removable {
            ""
        } else {
            " (holds files asymflow did not publish)"
        };
        println!("{:width$}  {what}  [{reports}{age}]{foreign}", f.name);
    }
    let variants = folders.iter().filter(|f| f.is_variant()).count();
    if variants > 0 {
        println!(
            "\n{} in {}: `asymflow reports --clean` deletes them all, `asymflow reports rm NAME` one",
            super::output::count(variants, "variant", "variants"),
            root.display()
        );
    }
}

/// `40 s ago`, `12 min ago`, `3 h ago`, `5 days ago`.
fn ago(seconds: f64) -> String {
    let s = seconds.max(0.0);
    if s < 90.0 {
        format!("{s:.0} s ago")
    } else if s < 5400.0 {
        format!("{:.0} min ago", s / 60.0)
    } else if s < 2.0 * 86400.0 {
        format!("{:.0} h ago", s / 3600.0)
    } else {
        format!("{:.0} days ago", s / 86400.0)
    }
}
