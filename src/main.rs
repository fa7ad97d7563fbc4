//! The `asymflow` binary: parse the command line, run, print the error chain on failure.

use std::process::ExitCode;

fn main() -> ExitCode {
    passive_openmp();
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

/// libtorch's OpenMP threads spin while they wait for work by default; when stages share the
/// cores (a training beside an evaluation, or a busy machine) the spinning steals the CPU from
/// real work (measured: a training batch took 10.5 s spinning against 0.8 s passive). libgomp
/// reads `OMP_WAIT_POLICY` when it is loaded, before `main`, so the binary re-executes itself
/// once with the variable set. A user's own setting wins; if the re-exec fails, asymflow runs
/// as it is.
fn passive_openmp() {
    use std::os::unix::process::CommandExt;
    if std::env::var_os("OMP_WAIT_POLICY").is_some() {
        return;
    }
    if let Ok(exe) = std::env::current_exe() {
        let error = std::process::Command::new(exe)
            .args(std::env::args_os().skip(1))
            .env("OMP_WAIT_POLICY", "PASSIVE")
            .exec();
        eprintln!("note: could not re-run with OMP_WAIT_POLICY=PASSIVE ({error}); continuing");
    }
}
