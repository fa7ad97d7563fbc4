//! How much to print and whether in colour (`-q`, `-v`, `--color`), set once per process.
//!
//! Colour follows the usual conventions: `auto` colours only a terminal, and `NO_COLOR`
//! (<https://no-color.org>) turns it off; `always` is for pagers such as `less -R`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use super::args::{ColorChoice, OutputArgs};

static LEVEL: AtomicU8 = AtomicU8::new(NORMAL);
static COLOR_OUT: AtomicBool = AtomicBool::new(false);
static COLOR_ERR: AtomicBool = AtomicBool::new(false);

const QUIET: u8 = 0;
const NORMAL: u8 = 1;
const VERBOSE: u8 = 2;

/// Reads the flags.
pub fn init(args: &OutputArgs) {
    let level = if args.quiet {
        QUIET
    } else if args.verbose {
        VERBOSE
    } else {
        NORMAL
    };
    LEVEL.store(level, Ordering::Relaxed);
    crate::exec::progress::set_quiet(level == QUIET);
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let (out, err) = match args.color {
        ColorChoice::Always => (true, true),
        ColorChoice::Never => (false, false),
        ColorChoice::Auto => (
            !no_color && std::io::stdout().is_terminal(),
            !no_color && std::io::stderr().is_terminal(),
        ),
    };
    COLOR_OUT.store(out, Ordering::Relaxed);
    COLOR_ERR.store(err, Ordering::Relaxed);
}

/// `-q`: only results and errors.
pub(crate) fn quiet() -> bool {
    LEVEL.load(Ordering::Relaxed) == QUIET
}

/// `-v`: more detail.
pub(crate) fn verbose() -> bool {
    LEVEL.load(Ordering::Relaxed) == VERBOSE
}

fn paint(text: &str, code: &str, on: bool) -> String {
    if on {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// A status word on stdout (`cached` green, `to-run` yellow, `failed` red).
pub(crate) fn status_word(word: &str) -> String {
    let code = match word.trim() {
        "cached" | "ran" | "fresh" => "32",
        "to-run" | "dirty" | "skipped" => "33",
        "failed" | "cannot-run" => "31",
        _ => return word.to_string(),
    };
    paint(word, code, COLOR_OUT.load(Ordering::Relaxed))
}

/// A status word on stderr.
pub(crate) fn status_word_err(word: &str) -> String {
    let code = match word.trim() {
        "ran" | "cached" => "32",
        "skipped" | "waiting" => "33",
        "failed" => "31",
        _ => return word.to_string(),
    };
    paint(word, code, COLOR_ERR.load(Ordering::Relaxed))
}

/// `error` in bold red on stderr.
pub(crate) fn paint_error(word: &str) -> String {
    paint(word, "1;31", COLOR_ERR.load(Ordering::Relaxed))
}

/// `1 instance`, `2 instances`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
