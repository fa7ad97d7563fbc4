//! The argument groups of the command line: the cache's place, a pipeline file with its
//! overrides, verbosity and colour, and `run`'s and `plan`'s own arguments.
//!
//! Its own file because nearly every command's file reads these groups, while the command
//! tree ([`super::command`]) names those files' own argument types: the groups sit below
//! both.

use std::path::PathBuf;

use clap::Args;

use crate::exec::choice::{self, ExecutorChoice};

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
