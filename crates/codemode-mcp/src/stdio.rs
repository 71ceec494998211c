//! The stdio side of a child MCP server: its stdout passes through a line filter before rmcp
//! reads it.
//!
//! rmcp drops a line it cannot decode, so the request it answered would wait for its timeout.
//! The filter repairs what it can and remembers what it could not:
//!
//! - lone UTF-16 surrogate escapes (`"\ud800"`, which JavaScript's `JSON.stringify` emits for a
//!   string cut in the middle of an emoji) become `\ufffd`, and invalid UTF-8 becomes U+FFFD;
//! - a line that is still not JSON (a log line on stdout, nesting past serde_json's 128 levels)
//!   or is longer than [`MAX_LINE_BYTES`] is dropped, and its description is kept for the
//!   timeout message of the request it probably answered.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::ChildStdout;

/// The longest line passed on (rmcp's own limit): 16 MiB.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// What the filter last had to drop, for error messages.
pub type LastProblem = Arc<Mutex<Option<String>>>;

/// Copies `stdout` to `out` line by line (see the module docs) until either side closes.
pub async fn filter_stdout(
    stdout: ChildStdout,
    mut out: tokio::io::DuplexStream,
    problem: LastProblem,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line: Vec<u8> = Vec::new();
    loop {
        line.clear();
        let mut too_long = false;
        let mut eof = false;
        loop {
            let buf = match reader.fill_buf().await {
                Ok(buf) => buf,
                Err(_) => return,
            };
            if buf.is_empty() {
                eof = true;
                break;
            }
            let (take, found) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            if !too_long {
                if line.len() + take > MAX_LINE_BYTES {
                    too_long = true;
                    line = Vec::new();
                } else {
                    line.extend_from_slice(&buf[..take]);
                }
            }
            reader.consume(take);
            if found {
                break;
            }
        }
        if too_long {
            record(
                &problem,
                format!("a message over {MAX_LINE_BYTES} bytes was dropped"),
            );
        } else if let Some(fixed) = usable(&line, &problem) {
            if out.write_all(&fixed).await.is_err() || out.write_all(b"\n").await.is_err() {
                return;
            }
        }
        if eof {
            let _ = out.shutdown().await;
            return;
        }
    }
}

fn record(problem: &LastProblem, message: String) {
    tracing::debug!("MCP stdout filter: {message}");
    if let Ok(mut slot) = problem.lock() {
        *slot = Some(message);
    }
}

/// The line to pass on (without its newline), repaired if needed, or `None` to drop it.
fn usable(line: &[u8], problem: &LastProblem) -> Option<Vec<u8>> {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches(['\n', '\r']);
    if text.trim().is_empty() {
        return None;
    }
    // The surrogate repair runs first, whenever the line has a `\ud…` escape at all.
    let repaired = if text.contains("\\ud") || text.contains("\\uD") {
        replace_lone_surrogates(text)
    } else {
        text.to_string()
    };
    // A full parse, as rmcp will do: it also enforces serde_json's nesting limit.
    match serde_json::from_str::<serde_json::Value>(&repaired) {
        Ok(_) => Some(repaired.into_bytes()),
        Err(e) => {
            let start: String = text.chars().take(80).collect();
            let message =
                format!("a message that is not JSON was dropped ({e}; it starts {start:?})");
            if text.trim_start().starts_with('{') {
                record(problem, message);
            } else {
                // Log text on stdout answers nothing; it must not be blamed for a timeout.
                tracing::debug!("MCP stdout filter: {message}");
            }
            None
        }
    }
}

/// Replaces `\u` escapes of unpaired UTF-16 surrogates (`\ud800`–`\udfff`) with `\ufffd`;
/// escaped backslashes (`\\ud800` is text, not an escape) and everything else are kept.
pub fn replace_lone_surrogates(text: &str) -> String {
    fn escape_at(bytes: &[u8], i: usize) -> Option<u16> {
        if bytes.get(i) != Some(&b'\\') || bytes.get(i + 1) != Some(&b'u') {
            return None;
        }
        let hex = std::str::from_utf8(bytes.get(i + 2..i + 6)?).ok()?;
        u16::from_str_radix(hex, 16).ok()
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        match escape_at(bytes, i) {
            Some(unit @ 0xD800..=0xDBFF) => {
                if matches!(escape_at(bytes, i + 6), Some(0xDC00..=0xDFFF)) {
                    i += 12;
                } else {
                    let _ = unit;
                    out.push_str(&text[copied..i]);
                    out.push_str("\\ufffd");
                    i += 6;
                    copied = i;
                }
            }
            Some(0xDC00..=0xDFFF) => {
                out.push_str(&text[copied..i]);
                out.push_str("\\ufffd");
                i += 6;
                copied = i;
            }
            Some(_) => i += 6,
            None => i += 2,
        }
    }
    out.push_str(&text[copied.min(text.len())..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_are_replaced() {
        assert_eq!(replace_lone_surrogates(r#""a\ud800b""#), r#""a\ufffdb""#);
        assert_eq!(replace_lone_surrogates(r#""\udc00""#), r#""\ufffd""#);
        assert_eq!(
            replace_lone_surrogates(r#""\ud83d\ude00""#),
            r#""\ud83d\ude00""#
        );
        assert_eq!(replace_lone_surrogates(r#""\\ud800""#), r#""\\ud800""#);
        assert_eq!(
            replace_lone_surrogates(r#""\ud800\ud800x""#),
            r#""\ufffd\ufffdx""#
        );
        assert_eq!(replace_lone_surrogates(r#""\n\u0041""#), r#""\n\u0041""#);
        assert_eq!(replace_lone_surrogates("\"trailing \\"), "\"trailing \\");
    }

    #[test]
    fn lines_are_repaired_or_dropped() {
        let problem = LastProblem::default();
        assert_eq!(
            usable(b"{\"a\":1}\r\n", &problem),
            Some(b"{\"a\":1}".to_vec())
        );
        assert_eq!(
            usable(br#"{"t":"a\ud800"}"#, &problem),
            Some(br#"{"t":"a\ufffd"}"#.to_vec())
        );
        assert_eq!(usable(b"   \n", &problem), None);
        assert_eq!(*problem.lock().unwrap(), None);
        assert_eq!(usable(b"starting server...\n", &problem), None);
        assert_eq!(*problem.lock().unwrap(), None);
        assert_eq!(usable(b"{\"id\": 1, \"result\": {\n", &problem), None);
        assert_eq!(
            problem.lock().unwrap().as_deref(),
            Some("a message that is not JSON was dropped (EOF while parsing an object at line 1 column 21; it starts \"{\\\"id\\\": 1, \\\"result\\\": {\")")
        );
    }
}
