//! How the CLI ends a subcommand: one line at a time on standard output ([`print_line`], which
//! survives a closed pipe) and the early stops `main` turns into an exit status ([`Failure`]).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// The exit status when standard output's reader went away: 128 + SIGPIPE, as a shell reports a
/// Unix tool killed by a closed pipe.
pub(crate) const EXIT_STDOUT_CLOSED: u8 = 141;

/// Set once a write to standard output found its reader gone (`EPIPE`).
pub(crate) static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `text` and a newline to standard output and flushes it. A closed pipe (`codemode exec
/// … | head -c0`) is not an error the user needs to read about: it is remembered, nothing more
/// is written, and `main` exits quietly with [`EXIT_STDOUT_CLOSED`] (`Ok(false)` tells a
/// caller that loops to stop). Any other write error is [`Failure::Run`].
pub(crate) fn print_line(text: &str) -> Result<bool, Failure> {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Ok(false);
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            Ok(false)
        }
        Err(e) => Err(Failure::Run(format!("cannot write standard output: {e}"))),
    }
}

/// Why a subcommand stopped early; `main` prints the message as one stderr line.
pub(crate) enum Failure {
    /// Bad usage (arguments, unreadable or invalid files): exit 2.
    Usage(String),
    /// The command could not run (runtime, I/O): exit 1.
    Run(String),
}
