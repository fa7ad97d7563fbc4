//! `asymflow-worker`: runs the stage kinds that need tensors, for the engine.
//!
//! - `asymflow-worker serve`: a persistent worker speaking the engine's line-delimited JSON
//!   protocol on stdin/stdout (the engine starts one per slot, `asymflow worker`).
//! - `asymflow-worker exec JOB.json --result RESULT.json`: one job in this process (what a
//!   Slurm job runs, `asymflow exec`).

use std::path::PathBuf;
use std::process::ExitCode;

use asymflow_tensor::worker::Torch;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut registry = asymflow_tensor::registry();
    if std::env::var_os("ASYMFLOW_TEST_KINDS").is_some() {
        // The engine's own tests run its test kinds in workers too (`ASYMFLOW_TEST_KINDS=worker`).
        asymflow::stages::testing::register(&mut registry);
    }
    let runtime = Torch::init();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["serve"] => match asymflow::exec::worker::serve(&registry, &runtime) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("asymflow-worker: {e}");
                ExitCode::FAILURE
            }
        },
        ["exec", job, "--result", result] => {
            match asymflow::exec::worker::exec_file(
                &PathBuf::from(job),
                &PathBuf::from(result),
                &registry,
                &runtime,
            ) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("asymflow-worker: {e}");
                    ExitCode::from(2)
                }
            }
        }
        _ => {
            eprintln!(
                "usage: asymflow-worker serve | asymflow-worker exec JOB.json --result RESULT.json\n\
                 (started by asymflow; see `asymflow run --help`)"
            );
            ExitCode::from(2)
        }
    }
}
