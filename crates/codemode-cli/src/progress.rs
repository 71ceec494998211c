//! Signs of life on a terminal (issue 16 item 7): while `codemode` connects to MCP servers or
//! runs a program, one status line on standard error says what it is doing and for how long
//! (`codemode: connecting to MCP server(s) memory, notes… 2.4 s`), redrawn in place and erased
//! when the work ends. Nothing at all is written when standard error is not a terminal (a pipe,
//! a file, a test), so scripts and hosts see only the command's own output.
//!
//! The line appears only after [`DELAY`], so quick work never flickers, and it steps aside for
//! an approval prompt ([`pause`] / [`resume`]): a person never sees it over a question.
//!
//! A hand-rolled line rather than `indicatif`: the whole job is one redrawn line on a thread,
//! about forty lines, and a dependency would add more than that to every build.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long work runs before its status line appears.
pub(crate) const DELAY: Duration = Duration::from_millis(400);
/// How often the line is redrawn.
const TICK: Duration = Duration::from_millis(100);

/// The terminal line's state, locked around every draw.
static LINE: Mutex<Line> = Mutex::new(Line {
    paused: 0,
    drawn: false,
});

/// See [`LINE`].
struct Line {
    /// Prompts currently on the terminal; while non-zero nothing is drawn.
    paused: usize,
    /// A status line is on the screen (to be erased).
    drawn: bool,
}

fn line() -> std::sync::MutexGuard<'static, Line> {
    LINE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Erases the current terminal line (carriage return, then ANSI "erase line").
const ERASE: &str = "\r\x1b[2K";

/// Stops drawing (and erases the line) until [`resume`]: for a prompt on the terminal.
pub(crate) fn pause() {
    let mut line = line();
    line.paused += 1;
    if std::mem::take(&mut line.drawn) {
        let _ = write!(std::io::stderr(), "{ERASE}");
    }
}

/// Undoes one [`pause`].
pub(crate) fn resume() {
    let mut line = line();
    line.paused = line.paused.saturating_sub(1);
}

/// One status line while some work runs; [`Status::finish`] (or dropping it) erases it.
pub(crate) struct Status {
    running: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
}

impl Status {
    /// Starts showing `what` (e.g. `running the program`) with the elapsed seconds, when
    /// standard error is a terminal; otherwise does nothing.
    pub(crate) fn start(what: String) -> Status {
        if !std::io::stderr().is_terminal() {
            return Status { running: None };
        }
        let done = Arc::new(AtomicBool::new(false));
        let stop = done.clone();
        let started = Instant::now();
        let drawer = std::thread::Builder::new()
            .name("codemode-progress".into())
            .spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(TICK);
                    let elapsed = started.elapsed();
                    let mut line = line();
                    if elapsed < DELAY || line.paused > 0 || stop.load(Ordering::SeqCst) {
                        continue;
                    }
                    let text = format!("{ERASE}codemode: {what}… {:.1} s", elapsed.as_secs_f64());
                    line.drawn = write!(std::io::stderr(), "{text}").is_ok() || line.drawn;
                }
                if std::mem::take(&mut line().drawn) {
                    let _ = write!(std::io::stderr(), "{ERASE}");
                }
            });
        match drawer {
            Ok(handle) => Status {
                running: Some((done, handle)),
            },
            Err(_) => Status { running: None },
        }
    }

    /// Ends the work: the line is erased before this returns.
    pub(crate) fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some((done, handle)) = self.running.take() {
            done.store(true, Ordering::SeqCst);
            let _ = handle.join();
        }
    }
}

impl Drop for Status {
    fn drop(&mut self) {
        self.stop();
    }
}
