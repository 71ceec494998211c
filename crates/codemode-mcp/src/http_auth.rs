//! Bearer tokens for [`crate::CodeModeServer::serve_http`] (`codemode serve --http ADDR --auth
//! FILE`; docs/deployment.md, "Bearer tokens and principals").
//!
//! The operator's file maps token hashes to principal names, one per line:
//! `<sha256 of the token, 64 lowercase hex digits> <principal>`; blank lines and lines starting
//! with `#` are skipped. Only hashes are stored, so the file is not a secret (who may write it
//! decides who gets in, so it is read through the checked operator-file path).
//!
//! A request is admitted when its `Authorization: Bearer <token>` hashes to a listed hash; the
//! request then carries its [`Principal`] (in the request's extensions) and the code-mode scope
//! follows from it. Any other request gets `401 Unauthorized` with `WWW-Authenticate: Bearer
//! realm="codemode"` (plus `error="invalid_token"` when a token was presented), as RFC 6750 §3
//! and the MCP authorization spec ask. Tokens are never logged: a refusal logs the peer only.
//!
//! Stateful MCP sessions (`Mcp-Session-Id`) belong to the principal that initialized them: a
//! request of another principal naming the session gets `404 Not Found`, as an unknown session.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Mutex, PoisonError};

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use sha2::{Digest, Sha256};

/// The longest principal name accepted in an auth file, in bytes.
pub const MAX_PRINCIPAL_BYTES: usize = 64;

/// Who is calling: the principal name the request's bearer token maps to. Inserted into the
/// request's extensions by [`HttpAuth::admit`]; the server reads it to pick the request's scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(pub String);

/// Why an auth file was refused. Messages name the line (1-based), never a token or a hash.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AuthFileError {
    /// A line is not `<64 hex digits> <principal>`.
    #[error("line {line}: expected `<sha256 hex of the token> <principal>`")]
    Malformed {
        /// 1-based line number.
        line: usize,
    },
    /// A principal name is empty, too long or has characters outside `A-Z a-z 0-9 . _ @ -`.
    #[error("line {line}: principal names are 1 to {MAX_PRINCIPAL_BYTES} characters of A-Z a-z 0-9 . _ @ -")]
    BadPrincipal {
        /// 1-based line number.
        line: usize,
    },
    /// The same hash is listed twice.
    #[error("line {line}: this token hash is already listed on line {first}")]
    Duplicate {
        /// 1-based line number of the repeat.
        line: usize,
        /// 1-based line number of the first listing.
        first: usize,
    },
    /// No token is listed: nobody could get in.
    #[error("no token hash is listed")]
    Empty,
}

/// The bearer-token check of `serve --http --auth FILE` (see the module docs). Cheap to share
/// (`Arc`); the session table is behind a mutex.
#[derive(Debug)]
pub struct HttpAuth {
    /// SHA-256 of each token → its principal.
    tokens: HashMap<[u8; 32], String>,
    /// Stateful MCP session id → the principal that initialized it.
    sessions: Mutex<HashMap<String, String>>,
}

/// Whether `name` is an acceptable principal name (1 to [`MAX_PRINCIPAL_BYTES`] bytes of
/// `A-Z a-z 0-9 . _ @ -`; never `:`, which separates scope fields).
fn valid_principal(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_PRINCIPAL_BYTES
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'@' | b'-'))
}

/// 32 bytes from 64 hex digits (either case); `None` otherwise.
fn parse_hash(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// The lowercase hex SHA-256 of `token`: what an auth file lists for it.
pub fn token_hash(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl HttpAuth {
    /// Parses an auth file's text (see the module docs).
    ///
    /// # Errors
    /// [`AuthFileError`] for the first bad line, a repeated hash, or a file listing nothing.
    pub fn parse(text: &str) -> Result<HttpAuth, AuthFileError> {
        let mut tokens = HashMap::new();
        let mut lines_of: HashMap<[u8; 32], usize> = HashMap::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let mut parts = trimmed.split_whitespace();
            let (Some(hash), Some(principal), None) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(AuthFileError::Malformed { line });
            };
            let hash = parse_hash(hash).ok_or(AuthFileError::Malformed { line })?;
            if !valid_principal(principal) {
                return Err(AuthFileError::BadPrincipal { line });
            }
            if let Some(first) = lines_of.insert(hash, line) {
                return Err(AuthFileError::Duplicate { line, first });
            }
            tokens.insert(hash, principal.to_string());
        }
        if tokens.is_empty() {
            return Err(AuthFileError::Empty);
        }
        Ok(HttpAuth {
            tokens,
            sessions: Mutex::new(HashMap::new()),
        })
    }

    /// The principal `headers`' bearer token maps to; `Err(presented)` when there is none
    /// (`presented`: a bearer token was sent but is unknown).
    fn principal(&self, headers: &http::HeaderMap) -> Result<Principal, bool> {
        let Some(value) = headers.get(http::header::AUTHORIZATION) else {
            return Err(false);
        };
        let value = value.to_str().map_err(|_| true)?;
        let (scheme, token) = value.trim().split_once(' ').ok_or(true)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(false);
        }
        let digest: [u8; 32] = Sha256::digest(token.trim().as_bytes()).into();
        self.tokens
            .get(&digest)
            .map(|name| Principal(name.clone()))
            .ok_or(true)
    }

    /// Admits `request` or answers it: a request with a known bearer token gets its
    /// [`Principal`] inserted into its extensions (`Ok`); one without gets the `401` answer,
    /// and one naming another principal's MCP session the `404` answer (`Err`). `peer` is
    /// logged on refusal; the token never is.
    pub fn admit<B>(
        &self,
        request: &mut http::Request<B>,
        peer: std::net::SocketAddr,
    ) -> Result<Principal, Box<http::Response<BoxBody<Bytes, Infallible>>>> {
        let principal = match self.principal(request.headers()) {
            Ok(principal) => principal,
            Err(presented) => {
                tracing::warn!(%peer, presented, "refused an MCP HTTP request without a valid bearer token");
                return Err(Box::new(unauthorized(presented)));
            }
        };
        if let Some(session) = request
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            let owner = self
                .sessions
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(session)
                .cloned();
            if owner.is_some_and(|owner| owner != principal.0) {
                tracing::warn!(%peer, principal = %principal.0, "refused a request naming another principal's MCP session");
                return Err(Box::new(plain(
                    http::StatusCode::NOT_FOUND,
                    "Not Found: Session not found",
                )));
            }
        }
        request.extensions_mut().insert(principal.clone());
        Ok(principal)
    }

    /// Records the session a response opened (its `Mcp-Session-Id`) as `principal`'s, and
    /// forgets a session a `DELETE` ended (`deleted`).
    pub fn note_session(
        &self,
        principal: &Principal,
        request_session: Option<&str>,
        response: &http::HeaderMap,
        deleted: bool,
    ) {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if deleted {
            if let Some(session) = request_session {
                sessions.remove(session);
            }
            return;
        }
        if let Some(opened) = response.get("mcp-session-id").and_then(|v| v.to_str().ok()) {
            sessions
                .entry(opened.to_string())
                .or_insert_with(|| principal.0.clone());
        }
    }

    /// How many tokens the file listed.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// `true` when no token is listed (never, for a parsed file).
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

/// The `401 Unauthorized` answer (RFC 6750 §3): `WWW-Authenticate: Bearer realm="codemode"`,
/// with `error="invalid_token"` when a token was presented.
fn unauthorized(presented: bool) -> http::Response<BoxBody<Bytes, Infallible>> {
    let mut response = plain(
        http::StatusCode::UNAUTHORIZED,
        "Unauthorized: this MCP endpoint needs an Authorization: Bearer token",
    );
    let challenge = if presented {
        "Bearer realm=\"codemode\", error=\"invalid_token\""
    } else {
        "Bearer realm=\"codemode\""
    };
    response.headers_mut().insert(
        http::header::WWW_AUTHENTICATE,
        http::HeaderValue::from_static(challenge),
    );
    response
}

/// A plain-text answer with `status`.
fn plain(
    status: http::StatusCode,
    text: &'static str,
) -> http::Response<BoxBody<Bytes, Infallible>> {
    let mut response = http::Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(auth: Option<&str>) -> http::Request<()> {
        let mut builder = http::Request::builder().uri("/mcp");
        if let Some(auth) = auth {
            builder = builder.header("authorization", auth);
        }
        builder.body(()).unwrap()
    }

    const PEER: std::net::SocketAddr =
        std::net::SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 1);

    #[test]
    fn parses_hashes_and_admits_known_tokens_only() {
        let file = format!(
            "# team\n{} alice\n\n{}   bob@example.com\n",
            token_hash("tok-a"),
            token_hash("tok-b").to_uppercase()
        );
        let auth = HttpAuth::parse(&file).unwrap();
        assert_eq!(auth.len(), 2);
        let mut ok = request(Some("Bearer tok-a"));
        assert_eq!(
            auth.admit(&mut ok, PEER).unwrap(),
            Principal("alice".into())
        );
        assert_eq!(
            ok.extensions().get::<Principal>(),
            Some(&Principal("alice".into()))
        );
        let mut bob = request(Some("bearer tok-b"));
        assert_eq!(auth.admit(&mut bob, PEER).unwrap().0, "bob@example.com");
        for (header, challenge) in [
            (None, "Bearer realm=\"codemode\""),
            (Some("Basic dXNlcjpwdw=="), "Bearer realm=\"codemode\""),
            (
                Some("Bearer tok-c"),
                "Bearer realm=\"codemode\", error=\"invalid_token\"",
            ),
        ] {
            let refused = auth.admit(&mut request(header), PEER).unwrap_err();
            assert_eq!(refused.status(), http::StatusCode::UNAUTHORIZED);
            assert_eq!(refused.headers()["www-authenticate"], challenge);
        }
    }

    #[test]
    fn refuses_bad_files_naming_the_line() {
        let hash = token_hash("x");
        assert_eq!(
            HttpAuth::parse("# nothing\n").unwrap_err(),
            AuthFileError::Empty
        );
        assert_eq!(
            HttpAuth::parse("abc alice").unwrap_err().to_string(),
            "line 1: expected `<sha256 hex of the token> <principal>`"
        );
        assert_eq!(
            HttpAuth::parse(&format!("\n{hash} a:b")).unwrap_err(),
            AuthFileError::BadPrincipal { line: 2 }
        );
        assert_eq!(
            HttpAuth::parse(&format!("{hash} a\n{hash} b")).unwrap_err(),
            AuthFileError::Duplicate { line: 2, first: 1 }
        );
        assert_eq!(
            HttpAuth::parse(&format!("{hash} a extra")).unwrap_err(),
            AuthFileError::Malformed { line: 1 }
        );
    }

    #[test]
    fn a_session_belongs_to_the_principal_that_opened_it() {
        let auth = HttpAuth::parse(&format!(
            "{} alice\n{} bob",
            token_hash("a"),
            token_hash("b")
        ))
        .unwrap();
        let mut opened = http::HeaderMap::new();
        opened.insert("mcp-session-id", "s1".parse().unwrap());
        auth.note_session(&Principal("alice".into()), None, &opened, false);
        let mut bob = request(Some("Bearer b"));
        bob.headers_mut()
            .insert("mcp-session-id", "s1".parse().unwrap());
        let refused = auth.admit(&mut bob, PEER).unwrap_err();
        assert_eq!(refused.status(), http::StatusCode::NOT_FOUND);
        let mut alice = request(Some("Bearer a"));
        alice
            .headers_mut()
            .insert("mcp-session-id", "s1".parse().unwrap());
        assert!(auth.admit(&mut alice, PEER).is_ok());
        auth.note_session(
            &Principal("alice".into()),
            Some("s1"),
            &http::HeaderMap::new(),
            true,
        );
        assert!(auth.admit(&mut bob, PEER).is_ok());
    }
}
