//! Progress display: one bar for the pipeline's instances, one per running stage (epochs or
//! batches), and result lines printed above the bars. Bars are hidden for `--json` and when
//! stderr is not a terminal; result lines then go to stderr as plain text.
//!
//! Each stage bar is prefixed with its instance's label (`model[seed=0]`), several instances
//! of one stage run side by side; bars show an ETA, and the pipeline bar redraws every second
//! so its elapsed time moves while a long training runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

static QUIET: AtomicBool = AtomicBool::new(false);

/// `-q`: no bars and no result lines for the rest of the process (failures are still reported
/// by the command itself).
pub(crate) fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// The run's progress display.
pub struct Progress {
    multi: Option<MultiProgress>,
    overall: Option<ProgressBar>,
}

impl Progress {
    /// A display for `total` instances; without `enabled` (or a terminal) only the result
    /// lines are printed, to stderr, so `--json` keeps stdout for the document.
    pub fn new(enabled: bool, total: u64) -> Self {
        let interactive = enabled && std::io::IsTerminal::is_terminal(&std::io::stderr());
        if !interactive {
            return Progress {
                multi: None,
                overall: None,
            };
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let overall = multi.add(ProgressBar::new(total));
        overall.set_style(
            ProgressStyle::with_template(
                "{prefix} [{bar:30}] {pos}/{len} instances, {elapsed} elapsed, ETA {eta}",
            )
            .expect("static template")
            .progress_chars("=> "),
        );
        overall.set_prefix("pipeline");
        overall.enable_steady_tick(Duration::from_secs(1));
        Progress {
            multi: Some(multi),
            overall: Some(overall),
        }
    }

    /// One instance finished (cached, ran, failed or skipped).
    pub(crate) fn inc(&self) {
        if let Some(bar) = &self.overall {
            bar.inc(1);
        }
    }

    /// A bar for a stage that starts running.
    pub(crate) fn stage_bar(&self, label: &str) -> Option<ProgressBar> {
        let multi = self.multi.as_ref()?;
        let bar = multi.add(ProgressBar::new(0));
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix} [{bar:30}] {pos}/{len} {msg}, {elapsed} elapsed, ETA {eta}",
            )
            .expect("static template")
            .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        bar.set_message(String::new());
        Some(bar)
    }

    /// A line above the bars (or on stderr).
    pub fn println(&self, line: &str) {
        if QUIET.load(Ordering::Relaxed) {
            return;
        }
        match &self.multi {
            Some(multi) => {
                let _ = multi.println(line);
            }
            None => eprintln!("{line}"),
        }
    }

    /// Removes the bars.
    pub fn finish(&self) {
        if let Some(bar) = &self.overall {
            bar.finish_and_clear();
        }
    }
}
