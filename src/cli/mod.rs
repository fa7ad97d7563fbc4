//! The command line: clap definitions and dispatch. One file per command beside this one.

mod cache_cmd;
mod common;
mod data_cmd;
mod kinds;
mod plan;
mod report_cmd;
mod run;
mod serve;
mod show;
mod status;
mod why;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// Declarative experiment pipelines with artifact caching for asymmetric and
/// backward-compatible embedding research.
#[derive(Debug, Parser)]
#[command(name = "asymflow", version, about, long_about = None)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a pipeline: compute every instance the cache does not hold.
    Run(RunArgs),
    /// List every instance as cached or to run, and why, without running anything.
    Plan(PipelineArgs),
    /// Explain which key fields of a stage changed since it last ran.
    Why {
        /// The pipeline file.
        file: PathBuf,
        /// The stage.
        stage: String,
        /// Overrides.
        #[command(flatten)]
        overrides: OverrideArgs,
        /// The cache.
        #[command(flatten)]
        cache: CacheArgs,
    },
    /// Summarise the cache: results, failures, leases, objects, recent runs.
    Status(CacheArgs),
    /// Show one result: a stage of a pipeline (`show FILE STAGE`) or a key (`show KEY`).
    Show {
        /// A pipeline file and a stage name, or a key (or a unique prefix of one).
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
    Report(PipelineArgs),
    /// List stage kinds, or the parameters and inputs of one kind.
    Kinds {
        /// A kind to describe.
        kind: Option<String>,
    },
    /// Maintain the cache.
    #[command(subcommand)]
    Cache(CacheCommand),
    /// Look at data sets.
    #[command(subcommand)]
    Data(DataCommand),
    /// Browse pipelines and results in a local web dashboard (read-only).
    Serve(serve::ServeArgs),
}

/// `asymflow data ...`.
#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// Write the images of a split stage as an ImageFolder tree of PNGs (`OUT/PARTITION/CLASS/`).
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
    /// Rehash every object; quarantine corrupt ones and forget the results that used them.
    Verify(CacheArgs),
    /// Delete objects no recorded result references (and results older than --older-than).
    Gc {
        /// Only say what would be deleted.
        #[arg(long)]
        dry_run: bool,
        /// Also forget results that finished more than this many days ago.
        #[arg(long, value_name = "DAYS")]
        older_than: Option<f64>,
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
    /// Replace a sweep axis: `seed=0,1,2`.
    #[arg(long = "sweep", value_name = "AXIS=V1,V2")]
    pub sweep: Vec<String>,
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
    /// Keep running every branch that does not depend on a failed stage.
    #[arg(long)]
    pub keep_going: bool,
}

fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Parses the command line and runs the command.
pub fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    dispatch(cli.command)
}

/// Runs one parsed command.
pub fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Run(args) => run::run(args),
        Command::Plan(args) => plan::plan(args),
        Command::Why {
            file,
            stage,
            overrides,
            cache,
        } => why::why(
            PipelineArgs {
                file,
                overrides,
                json: false,
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
        Command::Report(args) => report_cmd::report(args),
        Command::Kinds { kind } => kinds::kinds(kind.as_deref()),
        Command::Data(DataCommand::Export {
            pipeline,
            stage,
            out,
            partition,
        }) => data_cmd::export(pipeline, &stage, &out, partition.as_deref()),
        Command::Serve(args) => serve::serve(args),
        Command::Cache(CacheCommand::Verify(args)) => cache_cmd::verify(args),
        Command::Cache(CacheCommand::Gc {
            dry_run,
            older_than,
            cache,
        }) => cache_cmd::gc(cache, dry_run, older_than),
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
