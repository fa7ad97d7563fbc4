//! The entry point of the binary: parse the command line, then hand each command to the file
//! that runs it; a pipeline-file error is printed here with its exit code.
//!
//! Its own file because it is the one place that calls every command's file: above them all,
//! where the module root would make each command import the file that imports it.

use std::process::ExitCode;

use clap::Parser;

use super::args::PipelineArgs;
use super::command::{CacheCommand, Cli, Command, DataCommand};
use super::{
    cache_cmd, data_cmd, exit, export, import, kinds, metrics, output, plan, pull, push, remote,
    report_cmd, reports_cmd, serve, show, status, why, worker,
};

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
pub(crate) fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Run(args) => super::run::run(args),
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
