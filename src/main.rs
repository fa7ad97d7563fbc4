//! The `asymflow` binary: parse the command line, run, print the error chain on failure.

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
