//! The command line: clap definitions and dispatch. One file per command beside this one.

mod cache_cmd;
mod common;
mod data_cmd;
pub mod exit;
mod export;
mod failure;
mod import;
mod kinds;
mod metrics;
mod output;
mod plan;
mod plan_memory;
mod pull;
mod push;
mod remote;
mod remote_gc;
mod report_cmd;
mod reports_cmd;
mod run;
mod serve;
mod show;
mod status;
mod why;
mod worker;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::exec::choice::{self, ExecutorChoice};

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

/// Verbosity and colour, for every command.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Print only results and errors (no progress, no per-instance lines).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print more: every cached instance of a run, the full reasons.
    #[arg(short, long, global = true)]
    pub verbose: bool,
    /// Colour the output: `auto` (when writing to a terminal and NO_COLOR is unset), `always`
    /// or `never`.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// When the output is a terminal and `NO_COLOR` is unset.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
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

/// Where the cache is.
#[derive(Debug, Clone, Args)]
pub struct CacheArgs {
    /// The cache folder (default: `cache/` in the project).
    #[arg(long, env = "ASYMFLOW_CACHE", value_name = "DIR", global = true)]
    pub cache: Option<PathBuf>,
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

/// A pipeline file with overrides.
#[derive(Debug, Clone, Args)]
pub struct PipelineArgs {
    /// The pipeline file (e.g. pipelines/quickstart.toml).
    pub file: PathBuf,
    /// Overrides.
    #[command(flatten)]
    pub overrides: OverrideArgs,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// The cache.
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// Command-line overrides of a pipeline.
#[derive(Debug, Clone, Default, Args)]
pub struct OverrideArgs {
    /// Override a value as if written in the file: `stages.student.params.lambda_t=0.8`,
    /// `vars.db_res=128`.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Sweep over values: replace an axis (`seed=0,1,2`, `seed=range(0,5)`) or sweep any
    /// parameter a stage's kind declares (`stages.student.params.lr=1e-3,2e-3`).
    #[arg(long = "sweep", value_name = "AXIS=V1,V2")]
    pub sweep: Vec<String>,
}

/// `asymflow plan`.
#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    /// The pipeline and overrides.
    #[command(flatten)]
    pub pipeline: PipelineArgs,
    // Where the instances to run would run (the help is the executors' to write).
    #[arg(long, value_enum, default_value_t = ExecutorChoice::Local, help = choice::PLAN_HELP)]
    pub executor: ExecutorChoice,
    /// Plan only these stages and what they need, as `run STAGE...` would run them.
    #[arg(value_name = "STAGE")]
    pub stages: Vec<String>,
    /// Do not ask the team's remote cache what it holds.
    #[arg(long)]
    pub offline: bool,
    /// The memory of the GPU the training stages will run on (80GiB, 40GB, 81920MiB): each
    /// training step whose estimated peak exceeds it is flagged with what to change.
    #[arg(long, value_name = "SIZE", env = "ASYMFLOW_DEVICE_MEMORY", value_parser = device_memory)]
    pub device_memory: Option<u64>,
}

/// `--device-memory`'s value in bytes.
fn device_memory(text: &str) -> Result<u64, String> {
    crate::exec::memory::advice::parse_size(text)
}

/// `asymflow run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The pipeline and overrides.
    #[command(flatten)]
    pub pipeline: PipelineArgs,
    /// Stages to run at once (CPU stages; device stages also need a free device).
    #[arg(long, short = 'j', default_value_t = default_jobs())]
    pub jobs: usize,
    /// Keep running every branch that does not depend on a failed stage; reports still
    /// render from whatever finished, with dashes for the rest.
    #[arg(long)]
    pub keep_going: bool,
    /// Trainings at once on a machine without GPUs (each gets cores / N threads); on a GPU
    /// machine there is one device slot per GPU.
    #[arg(long, default_value_t = 1, value_parser = clap::builder::ValueParser::new(clap::builder::RangedU64ValueParser::<usize>::new().range(1..)))]
    pub device_slots: usize,
    /// How often to run a job again whose worker process died (killed, out of memory) or
    /// whose cluster node failed or was preempted.
    #[arg(long, default_value_t = 0)]
    pub retries: usize,
    // Where stages run (the help is the executors' to write).
    #[arg(long, value_enum, default_value_t = ExecutorChoice::Local, help = choice::RUN_HELP)]
    pub executor: ExecutorChoice,
    // At most this many cluster jobs at once.
    #[arg(long, value_name = "N", help = choice::MAX_JOBS_HELP)]
    pub max_jobs: Option<usize>,
    /// Recompute this stage (or instance, `model[seed=0]`) even when it is cached; the old
    /// result's objects stay in the cache until `cache gc`. Repeatable.
    #[arg(long, value_name = "STAGE")]
    pub force: Vec<String>,
    /// Publish reports into this folder instead of `reports/PIPELINE/` (or
    /// `reports/PIPELINE+DIGEST/` for a run with overrides); only folders asymflow published
    /// there (they hold `.asymflow-published`) are replaced.
    #[arg(long, value_name = "DIR")]
    pub reports: Option<PathBuf>,
    /// Run only these stages (or instances) and what they need.
    #[arg(value_name = "STAGE")]
    pub stages: Vec<String>,
    /// Do not use the team's remote cache (no pulls, no pushes).
    #[arg(long, conflicts_with = "require_remote")]
    pub offline: bool,
    /// Fail when the team's remote cache is not configured or does not answer (instead of a
    /// warning and computing locally).
    #[arg(long)]
    pub require_remote: bool,
}

fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Parses the command line and runs the command. Errors in the pipeline file are printed
/// here and exit with [`exit::BAD_PIPELINE`]; other errors are returned to the binary.
pub fn run() -> anyhow::Result<ExitCode> {
    restore_sigpipe();
    let cli = Cli::parse();
    output::init(&cli.output);
    match dispatch(cli.command) {
        Err(error) if error.chain().any(|e| e.is::<crate::spec::SpecError>()) => {
            eprintln!("{}: {error}", output::paint_error("error"));
            for cause in error.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            Ok(exit::for_error(&error))
        }
        other => other,
    }
}

/// Rust ignores SIGPIPE, so `asymflow plan FILE | head` would panic on the closed pipe; like
/// other command-line tools, asymflow dies quietly instead. The cache stays consistent: it
/// survives `kill -9` at any moment.
fn restore_sigpipe() {
    // SAFETY: setting a signal's disposition to the default has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Runs one parsed command.
pub fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Run(args) => run::run(args),
        Command::Plan(args) => plan::plan(args),
        Command::Metrics {
            pipeline,
            csv,
            columns,
            stages,
        } => metrics::metrics(pipeline, csv, &columns, &stages),
        Command::Completions { shell, cache: _ } => {
            use clap::CommandFactory;
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "asymflow",
                &mut std::io::stdout(),
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Why {
            file,
            stage,
            overrides,
            json,
            cache,
        } => why::why(
            PipelineArgs {
                file,
                overrides,
                json,
                cache,
            },
            &stage,
        ),
        Command::Status(args) => status::status(args),
        Command::Show {
            target,
            overrides,
            json,
            cache,
        } => show::show(target, overrides, json, cache),
        Command::Report { pipeline, reports } => report_cmd::report(pipeline, reports.as_deref()),
        Command::Reports(args) => reports_cmd::reports(args),
        Command::Kinds { kind, cache: _ } => kinds::kinds(kind.as_deref()),
        Command::Data(DataCommand::Export {
            pipeline,
            stage,
            out,
            partition,
        }) => data_cmd::export(pipeline, &stage, &out, partition.as_deref()),
        Command::Serve(args) => serve::serve(args),
        Command::Cache(CacheCommand::Verify(args)) => cache_cmd::verify(args),
        Command::Cache(CacheCommand::Forget { keys, cache }) => cache_cmd::forget(cache, &keys),
        Command::Cache(CacheCommand::Gc {
            dry_run,
            older_than,
            keep,
            cache,
        }) => cache_cmd::gc(cache, dry_run, older_than, &keep),
        Command::Worker => worker::hand_over(&["serve".as_ref()]),
        Command::Exec { job, result } => worker::exec(&job, &result),
        Command::Remote(command) => remote::dispatch(command),
        Command::Push(args) => push::push(args),
        Command::Pull(args) => pull::pull(args),
        Command::Export(args) => export::export(args),
        Command::Import(args) => import::import(args),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
