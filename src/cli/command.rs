//! The command tree: [`Cli`] as clap parses it, every command and subcommand, and their
//! help texts with examples.
//!
//! Its own file because it names the argument types of the commands' own files
//! ([`super::pull::PullArgs`], [`super::remote::RemoteCommand`], ...) while those files read
//! the shared groups in [`super::args`]; the dispatcher ([`super::dispatch`]) sits above it.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use super::args::{CacheArgs, OutputArgs, OverrideArgs, PipelineArgs, PlanArgs, RunArgs};
use super::{exit, export, import, pull, remote, reports_cmd, serve};
use crate::exec::choice;

/// Declarative experiment pipelines with artifact caching for asymmetric and
/// backward-compatible embedding research.
#[derive(Debug, Parser)]
#[command(name = "asymflow", version, about, long_about = None, after_help = exit::HELP)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
    /// How much to print.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a pipeline: compute every instance the cache does not hold.
    #[command(after_help = RUN_HELP)]
    Run(RunArgs),
    /// List every instance as cached or to run, and why, with its resolved params (`--json`),
    /// without running anything.
    #[command(after_help = PLAN_HELP)]
    Plan(PlanArgs),
    /// Explain which key fields of a stage changed since it last ran.
    #[command(after_help = WHY_HELP)]
    Why {
        /// The pipeline file.
        file: PathBuf,
        /// The stage, or one instance of it (`model[seed=0]`).
        stage: String,
        /// Overrides.
        #[command(flatten)]
        overrides: OverrideArgs,
        /// Print JSON: each instance with its typed reasons.
        #[arg(long)]
        json: bool,
        /// The cache.
        #[command(flatten)]
        cache: CacheArgs,
    },
    /// Summarise the cache: results, failures, leases, objects, recent runs.
    #[command(after_help = STATUS_HELP)]
    Status(CacheArgs),
    /// Show one result: a stage of a pipeline (`show FILE STAGE`) or a key (`show KEY`):
    /// resolved params, inputs, output files (paths you can open), metrics, times.
    #[command(after_help = SHOW_HELP)]
    Show {
        /// A pipeline file and a stage name or instance label (`model[seed=0]`), or a key (or
        /// a unique prefix of one).
        #[arg(num_args = 1..=2, required = true)]
        target: Vec<String>,
        /// Overrides.
        #[command(flatten)]
        overrides: OverrideArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// The cache.
        #[command(flatten)]
        cache: CacheArgs,
    },
    /// Render a pipeline's reports from the cache alone, training nothing.
    #[command(after_help = REPORT_HELP)]
    Report {
        /// The pipeline and overrides.
        #[command(flatten)]
        pipeline: PipelineArgs,
        /// Publish into this folder instead of `reports/PIPELINE/`; only folders asymflow
        /// published there (they hold `.asymflow-published`) are replaced.
        #[arg(long, value_name = "DIR")]
        reports: Option<PathBuf>,
    },
    /// List the folders under reports/: each pipeline's own, and the variants that runs with
    /// `--set`/`--sweep` published (with their overrides); delete variants with `--clean` or
    /// `reports rm NAME`.
    #[command(after_help = REPORTS_HELP)]
    Reports(reports_cmd::ReportsArgs),
    /// Print every instance's metrics: one row per instance with its stage, sweep values,
    /// metrics and key (a table that fits the terminal, `--csv` or `--json` at full
    /// precision), for your own plots.
    #[command(after_help = METRICS_HELP)]
    Metrics {
        /// The pipeline and overrides.
        #[command(flatten)]
        pipeline: PipelineArgs,
        /// Print CSV.
        #[arg(long, conflicts_with = "json")]
        csv: bool,
        /// Only these columns, in this order: sweep axes, metrics, `stage`, `instance`, `key`
        /// (default: the stage, the sweep axes and every metric, as many as fit).
        #[arg(long, value_name = "A,B,C", value_delimiter = ',')]
        columns: Vec<String>,
        /// Only these stages (or instance labels, `student[seed=7]`).
        #[arg(value_name = "STAGE")]
        stages: Vec<String>,
    },
    /// List stage kinds, or the parameters and inputs of one kind.
    #[command(after_help = "Examples:\n  asymflow kinds\n  asymflow kinds distill")]
    Kinds {
        /// A kind to describe.
        kind: Option<String>,
        /// Accepted as everywhere (a global flag); `kinds` reads no cache.
        #[command(flatten)]
        cache: CacheArgs,
    },
    /// Print a shell completion script (`asymflow completions bash > ~/.local/share/bash-completion/completions/asymflow`).
    #[command(
        after_help = "Examples:\n  asymflow completions bash > ~/.local/share/bash-completion/completions/asymflow\n  asymflow completions zsh > ~/.zfunc/_asymflow\n  asymflow completions fish > ~/.config/fish/completions/asymflow.fish"
    )]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
        /// Accepted as everywhere (a global flag); `completions` reads no cache.
        #[command(flatten)]
        cache: CacheArgs,
    },
    /// Maintain the cache.
    #[command(
        subcommand,
        after_help = "Examples:\n  asymflow cache verify\n  asymflow cache gc --dry-run\n  asymflow cache forget 3fa2c1"
    )]
    Cache(CacheCommand),
    /// Look at data sets.
    #[command(
        subcommand,
        after_help = "Examples:\n  asymflow data export pipelines/quickstart.toml split out/ --partition train"
    )]
    Data(DataCommand),
    /// A persistent worker for the tensor kinds, speaking line-delimited JSON on stdin and
    /// stdout (started by `run`; not for typing).
    #[command(hide = true)]
    Worker,
    // Run one job file in this process (what a cluster job runs; the help is the executors').
    #[command(about = choice::EXEC_ABOUT, after_help = choice::EXEC_EXAMPLES)]
    Exec {
        /// The job file (JSON), as the engine writes it.
        job: PathBuf,
        /// Where to write the outcome (JSON).
        #[arg(long)]
        result: PathBuf,
    },
    /// The team's remote cache (`remote` in asymflow.toml or ASYMFLOW_REMOTE).
    #[command(
        subcommand,
        after_help = "Examples:\n  asymflow remote status\n  asymflow remote gc pipelines/quickstart.toml --dry-run"
    )]
    Remote(remote::RemoteCommand),
    /// Publish a pipeline's local results to the team's remote.
    #[command(after_help = PUSH_HELP)]
    Push(PipelineArgs),
    /// Fetch what a pipeline's instances need from the team's remote, verified.
    #[command(after_help = PULL_HELP)]
    Pull(pull::PullArgs),
    /// Copy results out: a bundle (`-o results.tar`) or one stage's (or instance's) outputs
    /// into a folder.
    #[command(after_help = EXPORT_HELP)]
    Export(export::ExportArgs),
    /// Import a bundle written by `export -o`, verifying every record and object.
    #[command(
        after_help = "Examples:\n  asymflow import results.tar\n  asymflow import results.tar --cache /data/asymflow-cache"
    )]
    Import(import::ImportArgs),
    /// Browse pipelines and results in a local web dashboard (read-only).
    #[command(
        after_help = "Examples:\n  asymflow serve\n  asymflow serve --port 0 --cache /data/asymflow-cache"
    )]
    Serve(serve::ServeArgs),
}

/// `asymflow data ...`.
#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// Write the images of a split stage as an ImageFolder tree of PNGs (`OUT/PARTITION/CLASS/`).
    #[command(
        after_help = "Examples:\n  asymflow data export pipelines/quickstart.toml split out/ --partition train\n  asymflow data export pipelines/quickstart.toml split out/ --json"
    )]
    Export {
        /// The pipeline and overrides.
        #[command(flatten)]
        pipeline: PipelineArgs,
        /// The split stage.
        stage: String,
        /// The folder to write.
        out: PathBuf,
        /// Only this partition (e.g. `train`).
        #[arg(long)]
        partition: Option<String>,
    },
}

/// `asymflow cache ...`.
#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Rehash every object; quarantine corrupt ones and forget the results that use corrupt or
    /// missing objects.
    #[command(
        after_help = "Examples:\n  asymflow cache verify\n  asymflow cache verify --cache /data/asymflow-cache"
    )]
    Verify(CacheArgs),
    /// Forget results by key (a unique prefix each), so their stages run again.
    #[command(
        after_help = "Examples:\n  asymflow cache forget 3fa2c1\n  asymflow cache forget 3fa2c1 9b07e4 --cache /data/asymflow-cache"
    )]
    Forget {
        /// Keys or unique key prefixes (as `status` and `show` print them).
        #[arg(required = true, value_name = "KEY")]
        keys: Vec<String>,
        /// The cache.
        #[command(flatten)]
        cache: CacheArgs,
    },
    /// Delete objects no recorded result references (and results older than --older-than).
    #[command(
        after_help = "Examples:\n  asymflow cache gc --dry-run\n  asymflow cache gc --older-than 30"
    )]
    Gc {
        /// Only say what would be deleted.
        #[arg(long)]
        dry_run: bool,
        /// Also forget results that finished more than this many days ago.
        #[arg(long, value_name = "DAYS")]
        older_than: Option<f64>,
        /// Keep exactly what these pipelines' instances use; forget every other result (as
        /// `dvc gc -w`). Repeatable: `--keep pipelines/a.toml --keep pipelines/b.toml`.
        #[arg(long, value_name = "FILE", num_args = 1..)]
        keep: Vec<PathBuf>,
        /// The cache.
        #[command(flatten)]
        cache: CacheArgs,
    },
}

const REPORTS_HELP: &str = "Examples:
  asymflow reports                     every folder, with each variant's overrides
  asymflow reports --clean             delete every variant folder (only what asymflow published)
  asymflow reports rm quickstart+1a2b3c4d";

const RUN_HELP: &str = "Examples:
  asymflow run pipelines/quickstart.toml
  asymflow run pipelines/quickstart.toml student eval-ts   only these stages and what they need
  asymflow run pipelines/quickstart.toml 'student[seed=1]'  one instance and what it needs
  asymflow run pipelines/quickstart.toml --sweep seed=0 --set vars.db_res=48
  asymflow run pipelines/quickstart.toml --sweep stages.student.params.lambda_t=0.5,0.7
  asymflow run pipelines/quickstart.toml --sweep 'seed=range(0,5)'
  asymflow run pipelines/quickstart.toml --force student   recompute even when cached
  asymflow run pipelines/quickstart.toml --keep-going --json

Runs with --set/--sweep that change the pipeline publish their reports to
reports/PIPELINE+DIGEST/ (DIGEST names the resolved pipeline; or --reports DIR), never over the
plain pipeline's reports/PIPELINE/; `asymflow reports` lists and cleans them.

Exit codes: 0 success, 1 other error, 2 bad command line, 3 bad pipeline file or override,
4 a stage failed, 130 interrupted.";

const PLAN_HELP: &str = "Examples:
  asymflow plan pipelines/quickstart.toml
  asymflow plan pipelines/quickstart.toml --sweep seed=0 --json   with each instance's resolved params
  asymflow plan pipelines/quickstart.toml 'student[seed=1]'   one instance and its ancestors

Exits with 4 when an instance cannot run (its data is missing: \"fingerprint failed\").";

const WHY_HELP: &str = "Examples:
  asymflow why pipelines/quickstart.toml student
  asymflow why pipelines/quickstart.toml 'student[seed=0]' --set stages.student.params.lambda_t=0.8";

const STATUS_HELP: &str = "Examples:
  asymflow status
  asymflow status --cache /data/asymflow-cache";

const SHOW_HELP: &str = "Examples:
  asymflow show pipelines/quickstart.toml teacher
  asymflow show pipelines/quickstart.toml 'student[query_res=32,seed=0]' --json
  asymflow show 3fa2c1                     a key, or a unique prefix of one";

const REPORT_HELP: &str = "Examples:
  asymflow report pipelines/quickstart.toml
  asymflow report pipelines/quickstart.toml --sweep seed=0 --reports /tmp/seed0
  asymflow report pipelines/quickstart.toml --json";

const METRICS_HELP: &str = "Examples:
  asymflow metrics pipelines/quickstart.toml
  asymflow metrics pipelines/quickstart.toml eval-ts --csv > eval-ts.csv
  asymflow metrics pipelines/quickstart.toml eval-ts --columns seed,map
  asymflow metrics pipelines/quickstart.toml 'eval-ts[seed=1]'
  asymflow metrics pipelines/quickstart.toml --json";

const PUSH_HELP: &str = "Examples:
  asymflow push pipelines/quickstart.toml
  asymflow push pipelines/quickstart.toml --sweep seed=0 --json";

const PULL_HELP: &str = "Examples:
  asymflow pull pipelines/quickstart.toml
  asymflow pull --all --cache /data/asymflow-cache";

const EXPORT_HELP: &str = "Examples:
  asymflow export pipelines/quickstart.toml -o results.tar   a bundle for `asymflow import`
  asymflow export pipelines/quickstart.toml student out/     each instance's outputs
  asymflow export pipelines/quickstart.toml 'student[seed=1]' out/   one instance's outputs";

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
