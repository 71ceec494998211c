//! A stdio child's stderr: always drained, so a chatty server never blocks on a full pipe; the
//! last [`TAIL_BYTES`] are kept so error messages can quote the line that says what went wrong.

use std::sync::{Arc, Mutex};

use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;

/// Bytes of a child's stderr kept for error messages (the rest is logged at `debug` and dropped).
pub(crate) const TAIL_BYTES: usize = 2_048;

/// Characters of the quoted stderr line, at most.
const QUOTE_CHARS: usize = 300;

/// The last [`TAIL_BYTES`] a server's children wrote to stderr (shared by every connection of
/// one server, so a reconnect keeps what the previous child said).
#[derive(Clone, Default)]
pub(crate) struct StderrTail {
    bytes: Arc<Mutex<Vec<u8>>>,
}

impl StderrTail {
    /// Spawns a task that reads `stderr` until it closes: every chunk goes to `tracing` at
    /// `debug` (its first 512 bytes) and into the tail. Must run inside a tokio runtime.
    pub(crate) fn drain(&self, server: &str, mut stderr: ChildStderr) {
        let tail = self.bytes.clone();
        let name = server.to_string();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                match stderr.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        tracing::debug!(server = %name, "stderr: {}", String::from_utf8_lossy(&buf[..n.min(512)]));
                        if let Ok(mut tail) = tail.lock() {
                            tail.extend_from_slice(&buf[..n]);
                            if tail.len() > TAIL_BYTES {
                                let cut = tail.len() - TAIL_BYTES;
                                tail.drain(..cut);
                            }
                        }
                    }
                }
            }
        });
    }

    /// The kept bytes as text (lossy UTF-8, trimmed; at most [`TAIL_BYTES`] bytes of input).
    pub(crate) fn text(&self) -> String {
        let tail = self.bytes.lock().map(|t| t.clone()).unwrap_or_default();
        String::from_utf8_lossy(&tail).trim().to_string()
    }

    /// The line to quote in an error message ([`error_line`], at most 300 characters), or
    /// `None` when nothing was written.
    pub(crate) fn quote(&self) -> Option<String> {
        let tail = self.text();
        if tail.is_empty() {
            None
        } else {
            Some(error_line(&tail).chars().take(QUOTE_CHARS).collect())
        }
    }
}

/// The line of a child's stderr tail that best says what went wrong: for npm (`npx` of a package
/// that does not exist, a failed install) the first `npm error` line after its `code` line
/// (`npm error 404 Not Found - GET …`; npm ends with a line naming its log file); otherwise the
/// last line that names an error (Node and Python end a crash with a stack trace or a version
/// line below `TypeError: …`), else the last line.
fn error_line(tail: &str) -> &str {
    let lines: Vec<&str> = tail
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let npm = lines
        .iter()
        .find(|l| l.starts_with("npm error ") && !l.starts_with("npm error code "));
    npm.or_else(|| {
        lines
            .iter()
            .rev()
            .find(|l| l.contains("Error") || l.contains("error"))
    })
    .or(lines.last())
    .copied()
    .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::{error_line, StderrTail, QUOTE_CHARS};

    #[test]
    fn the_stderr_line_that_says_what_went_wrong() {
        let npm = "npm error code E404\n\
            npm error 404 Not Found - GET https://registry.npmjs.org/nope - Not found\n\
            npm error 404\n\
            npm error 404  'nope@*' is not in this registry.\n\
            npm error A complete log of this run can be found in: /root/.npm/_logs/x.log\n";
        assert_eq!(
            error_line(npm),
            "npm error 404 Not Found - GET https://registry.npmjs.org/nope - Not found"
        );
        let node = "/srv/x.js:3\n  throw new TypeError('no config');\n  ^\n\n\
            TypeError: no config\n    at Object.<anonymous> (/srv/x.js:3:9)\n\nNode.js v20.20.2\n";
        assert_eq!(error_line(node), "TypeError: no config");
        let python = "Traceback (most recent call last):\n  File \"/srv/errors.py\", line 1\n\
            ValueError: bad port\n";
        assert_eq!(error_line(python), "ValueError: bad port");
        assert_eq!(
            error_line("starting\nlistening on stdio\n"),
            "listening on stdio"
        );
        assert_eq!(error_line(""), "");
    }

    #[test]
    fn quotes_are_one_line_of_at_most_300_characters() {
        let tail = StderrTail::default();
        assert_eq!(tail.quote(), None);
        tail.bytes
            .lock()
            .unwrap()
            .extend_from_slice(format!("  Error: {}\nbye\n", "é".repeat(400)).as_bytes());
        let quote = tail.quote().unwrap();
        assert_eq!(quote.chars().count(), QUOTE_CHARS);
        assert_eq!(quote, format!("Error: {}", "é".repeat(QUOTE_CHARS - 7)));
        assert!(tail.text().starts_with("Error: é"));
    }
}
