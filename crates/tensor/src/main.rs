//! `asymflow-worker`: runs the stage kinds that need tensors, for the engine.
//!
//! - `asymflow-worker serve`: a persistent worker speaking the engine's line-delimited JSON
//!   protocol on stdin/stdout (the engine starts one per slot, `asymflow worker`).
//! - `asymflow-worker exec JOB.json --result RESULT.json`: one job in this process (what a
//!   Slurm job runs, `asymflow exec`).

use std::path::PathBuf;
use std::process::ExitCode;

use asymflow_tensor::worker::Torch;

/// The tensor kinds, and in test builds (feature `test-kinds`) the engine's test kinds when
/// `ASYMFLOW_TEST_KINDS` is set (the engine's tests run them in workers too).
fn registry() -> asymflow::kind::Registry {
    #[allow(unused_mut)]
    let mut registry = asymflow_tensor::registry();
    #[cfg(feature = "test-kinds")]
    if std::env::var_os("ASYMFLOW_TEST_KINDS").is_some() {
        asymflow::stages::testing::register(&mut registry);
    }
    registry
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let registry = registry();
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
