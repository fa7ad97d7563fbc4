//! The `asymflow` binary: parse the command line, run, print the error chain on failure.
//!
//! This is the engine: it never loads libtorch. The kinds that need tensors run in
//! `asymflow-worker` processes, which the engine starts with the environment libtorch needs
//! (`OMP_WAIT_POLICY=PASSIVE`, thread counts, `CUDA_VISIBLE_DEVICES`).

use std::process::ExitCode;

fn main() -> ExitCode {
    match asymflow::cli::run() {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error}");
            for cause in error.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}
