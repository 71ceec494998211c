//! The stdio side of a child MCP server: its stdout passes through a line filter before rmcp
//! reads it.
//!
//! rmcp drops a line it cannot decode, so the request it answered would wait for its timeout.
//! The filter repairs what it can and remembers what it could not:
//!
//! - lone UTF-16 surrogate escapes (`"\ud800"`, which JavaScript's `JSON.stringify` emits for a
//!   string cut in the middle of an emoji) become `\ufffd`, and invalid UTF-8 becomes U+FFFD;
//! - a line that is still not JSON (a log line on stdout, nesting past serde_json's 128 levels)
//!   or is longer than [`MAX_LINE_BYTES`] is dropped. When the dropped line is a response (a
//!   top-level `id` and no `method`, found by [`IdScanner`] while the bytes stream past, without
//!   keeping them), the filter passes on a JSON-RPC error for that id instead
//!   ([`dropped_reply`]), so the request fails at once with the reason rather than after its
//!   timeout; otherwise the description is kept for the timeout message of the request it
//!   probably answered.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::ChildStdout;

/// The longest line passed on (rmcp's own limit): 16 MiB.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// What the filter last had to drop, for error messages.
pub type LastProblem = Arc<Mutex<Option<String>>>;

/// The `data` key that marks a JSON-RPC error the filter made up for a dropped reply
/// ([`dropped_reply`]); its value is the reason.
pub const DROPPED_REPLY_MARKER: &str = "codemodeDroppedReply";

/// The JSON-RPC error line (without newline) that stands in for a dropped reply to request
/// `id` (raw JSON: a number or a string): code -32603, message `reply dropped by codemode`,
/// `data: {"codemodeDroppedReply": reason}`.
pub fn dropped_reply(id: &serde_json::Value, reason: &str) -> Vec<u8> {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": -32603,
            "message": "reply dropped by codemode",
            "data": {DROPPED_REPLY_MARKER: reason}
        }
    })
    .to_string()
    .into_bytes()
}

/// Finds the top-level `id` of a JSON-RPC message and whether it has a top-level `method`,
/// fed byte by byte, in constant memory (the line may be far over the limit and is not kept).
/// Strings and escapes are tracked, so an `"id"` inside the result does not count.
#[derive(Debug, Default)]
pub struct IdScanner {
    depth: usize,
    in_string: bool,
    escape: bool,
    in_key: bool,
    expect_key: bool,
    key: Vec<u8>,
    key_overflow: bool,
    value_of: Option<Key>,
    value: Vec<u8>,
    id: Option<Vec<u8>>,
    method: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Id,
    Method,
}

impl IdScanner {
    /// Feeds the next bytes of the line.
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        let capturing = self.value_of == Some(Key::Id);
        if capturing && self.value.len() < 256 {
            self.value.push(b);
        }
        if self.in_string {
            if self.escape {
                self.escape = false;
            } else if b == b'\\' {
                self.escape = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.in_key {
                    self.in_key = false;
                    let key = (!self.key_overflow).then_some(self.key.as_slice());
                    self.value_of = match key {
                        Some(b"id") => Some(Key::Id),
                        Some(b"method") => Some(Key::Method),
                        _ => None,
                    };
                    self.value.clear();
                    return;
                }
            }
            if self.in_key && !self.escape {
                if self.key.len() < 8 {
                    self.key.push(b);
                } else {
                    self.key_overflow = true;
                }
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.in_key = true;
                    self.expect_key = false;
                    self.key.clear();
                    self.key_overflow = false;
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 {
                    self.expect_key = b == b'{';
                }
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.finish_value(true);
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b',' if self.depth == 1 => {
                self.finish_value(true);
                self.expect_key = true;
            }
            b':' if self.depth == 1 => {
                if let Some(Key::Id) = self.value_of {
                    self.value.clear();
                }
            }
            _ => {}
        }
    }

    /// Ends the value of the current top-level key (`trim_last`: the byte just pushed, `,` or
    /// `}`, is not part of it).
    fn finish_value(&mut self, trim_last: bool) {
        match self.value_of.take() {
            Some(Key::Id) if self.id.is_none() => {
                let mut value = std::mem::take(&mut self.value);
                if trim_last {
                    value.pop();
                }
                self.id = Some(value);
            }
            Some(Key::Method) => self.method = true,
            _ => {}
        }
    }

    /// The top-level `id` (a JSON number or string) of a message without a top-level `method`
    /// (a response, not a request of the server's own); `None` otherwise.
    pub fn response_id(&self) -> Option<serde_json::Value> {
        if self.method {
            return None;
        }
        let raw = self.id.as_ref()?;
        match serde_json::from_slice::<serde_json::Value>(raw).ok()? {
            id @ (serde_json::Value::Number(_) | serde_json::Value::String(_)) => Some(id),
            _ => None,
        }
    }
}

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
        let mut scanner = IdScanner::default();
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
                    scanner.feed(&line);
                    line = Vec::new();
                } else {
                    line.extend_from_slice(&buf[..take]);
                }
            }
            if too_long {
                scanner.feed(&buf[..take]);
            }
            reader.consume(take);
            if found {
                break;
            }
        }
        let pass_on = if too_long {
            match scanner.response_id() {
                Some(id) => Some(dropped_reply(
                    &id,
                    &format!("it is over the {MAX_LINE_BYTES}-byte limit of one message"),
                )),
                None => {
                    record(
                        &problem,
                        format!("a message over {MAX_LINE_BYTES} bytes was dropped"),
                    );
                    None
                }
            }
        } else {
            usable(&line, &problem)
        };
        if let Some(fixed) = pass_on {
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
                let mut scanner = IdScanner::default();
                scanner.feed(repaired.as_bytes());
                if let Some(id) = scanner.response_id() {
                    return Some(dropped_reply(
                        &id,
                        &format!("it is not JSON codemode can read ({e})"),
                    ));
                }
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

    fn scan(text: &str) -> Option<serde_json::Value> {
        let mut scanner = IdScanner::default();
        // Fed in odd pieces, as reads split the line.
        for chunk in text.as_bytes().chunks(3) {
            scanner.feed(chunk);
        }
        scanner.response_id()
    }

    #[test]
    fn the_scanner_finds_the_top_level_id_of_responses_only() {
        use serde_json::json;
        assert_eq!(
            scan(r#"{"jsonrpc":"2.0","id":7,"result":{"id":99}}"#),
            Some(json!(7))
        );
        assert_eq!(
            scan(
                r#"{"result":{"content":[{"id":1,"text":"\"id\":5,"}]},"jsonrpc":"2.0","id": 42 }"#
            ),
            Some(json!(42))
        );
        assert_eq!(scan(r#"{"id":"a,}b","error":{}}"#), Some(json!("a,}b")));
        assert_eq!(
            scan(r#"{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage"}"#),
            None
        );
        assert_eq!(scan(r#"{"method":"x","id":3}"#), None);
        assert_eq!(scan(r#"{"jsonrpc":"2.0","result":{}}"#), None);
        assert_eq!(scan(r#"{"id":{"x":1},"result":{}}"#), None);
        assert_eq!(scan(r#"{"identity":1,"result":{}}"#), None);
        assert_eq!(scan(r#"[{"id":1}]"#), None);
        // A line cut short (too long) still yields an id seen before the cut.
        assert_eq!(
            scan(r#"{"jsonrpc":"2.0","id":12,"result":{"content":[{"text":"xxxx"#),
            Some(json!(12))
        );
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
        // A broken reply with an id stands in for an error reply to that request.
        assert_eq!(
            String::from_utf8(usable(b"{\"id\": 1, \"result\": {\n", &problem).unwrap()).unwrap(),
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"reply dropped by codemode","data":{"codemodeDroppedReply":"it is not JSON codemode can read (EOF while parsing an object at line 1 column 21)"}}}"#
        );
        assert_eq!(*problem.lock().unwrap(), None);
        // Without an id (or from a server request) it is dropped and remembered.
        assert_eq!(
            usable(b"{\"method\": \"x\", \"id\": 1, \"params\": {\n", &problem),
            None
        );
        assert_eq!(
            problem.lock().unwrap().as_deref(),
            Some("a message that is not JSON was dropped (EOF while parsing an object at line 1 column 36; it starts \"{\\\"method\\\": \\\"x\\\", \\\"id\\\": 1, \\\"params\\\": {\")")
        );
    }
}
