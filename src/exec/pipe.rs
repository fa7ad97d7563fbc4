//! Writing to a child's pipe without dying of SIGPIPE.
//!
//! The command line restores SIGPIPE's default action, so that `asymflow plan FILE | head`
//! ends quietly (`cli::restore_sigpipe`). The same default would kill the engine, silently,
//! when it writes to a worker that has just died (killed, out of memory): the write must fail
//! with `BrokenPipe` instead, so the job fails with a clear message and `--retries` can run it
//! again. SIGPIPE is raised in the writing thread, so blocking it there for the write, and
//! taking a signal the write left pending before unblocking, confines the change to this
//! write; the rest of the process keeps the default.

/// Runs `write` with SIGPIPE blocked in this thread: a write to a closed pipe returns
/// `BrokenPipe` instead of ending the process.
pub(crate) fn without_sigpipe<T>(write: impl FnOnce() -> T) -> T {
    // SAFETY: plain signal-mask calls on stack-allocated sets; every set is initialised by
    // sigemptyset before use, and the previous mask is restored before returning.
    unsafe {
        let mut pipe: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe);
        libc::sigaddset(&mut pipe, libc::SIGPIPE);
        let mut previous: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe, &mut previous);
        let result = write();
        let already_blocked = libc::sigismember(&previous, libc::SIGPIPE) == 1;
        if !already_blocked {
            let now = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            while libc::sigtimedwait(&pipe, std::ptr::null_mut(), &now) == libc::SIGPIPE {}
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
        result
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::process::{Command, Stdio};

    use super::without_sigpipe;

    #[test]
    fn a_write_to_a_dead_child_fails_with_broken_pipe_under_the_default_sigpipe_action() {
        let mut child = Command::new("true")
            .stdin(Stdio::piped())
            .spawn()
            .expect("`true` runs");
        let mut stdin = child.stdin.take().expect("piped");
        child.wait().expect("`true` ends");
        // The command line's disposition: without the guard this write would end the test
        // process (the whole test binary fails loudly).
        // SAFETY: changing a signal's disposition has no preconditions.
        let before = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
        let result = without_sigpipe(|| {
            stdin
                .write_all(&[b'x'; 1 << 16])
                .and_then(|()| stdin.flush())
        });
        // SAFETY: as above; puts back what the test harness had.
        unsafe { libc::signal(libc::SIGPIPE, before) };
        let error = result.expect_err("the reader is gone");
        assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe);
    }
}
