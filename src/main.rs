//! The `asymflow` binary: parse the command line, run, print the error chain on failure.

use std::process::ExitCode;

fn main() -> ExitCode {
    // libtorch's OpenMP threads spin while they wait for work by default; when stages share
    // the cores (a training beside an evaluation, or a busy machine) the spinning steals the
    // CPU from real work (measured: a batch took 10.5 s spinning against 0.8 s passive).
    // The variable must be set before libtorch starts its thread pool; a user's own choice wins.
    if std::env::var_os("OMP_WAIT_POLICY").is_none() {
        std::env::set_var("OMP_WAIT_POLICY", "PASSIVE");
    }
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
