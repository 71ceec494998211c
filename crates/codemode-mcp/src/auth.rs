//! OAuth 2.1 for streamable HTTP MCP servers (MCP authorization, rmcp's `auth` feature).
//!
//! Every HTTP server connects through an [`OAuthHttpClient`]: requests go out without a token
//! until the server answers 401 with a `WWW-Authenticate` challenge (or 403
//! `insufficient_scope`); then the client discovers the authorization server from the challenge
//! (protected resource metadata, RFC 9728, then RFC 8414 / OpenID discovery), registers itself
//! (dynamic client registration, RFC 7591) with a loopback redirect URI, and prints the
//! authorization URL on stderr:
//!
//! ```text
//! codemode: MCP server "notes" needs authorization; open this URL in a browser: https://…
//! ```
//!
//! The browser's redirect lands on a one-shot listener on `127.0.0.1` (RFC 8252 §7.3), the code
//! is exchanged for tokens (PKCE S256, the `resource` indicator of RFC 8707), and the request
//! that was refused is sent again with the token. Nothing opens a browser: the flow works the
//! same over SSH or in a container, where the user opens the URL wherever they like, as long as
//! the redirect can reach this machine's loopback (a browser on the same machine).
//!
//! Tokens are kept in a [`FileCredentialStore`] under the user's config directory, one file per
//! server URL, so the next run reuses (and refreshes) them without asking again. Servers that
//! never answer 401 are unaffected: no token is sent and nothing is stored.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationCallback, AuthorizationManager, CredentialStore,
    StoredCredentials,
};
use rmcp::transport::streamable_http_client::SseError;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

/// How long one authorization waits for the browser's redirect, in ms (the connect and call
/// timeouts of [`crate::ClientOptions`] may end it sooner). 300,000.
pub const AUTHORIZATION_WAIT: Duration = Duration::from_millis(300_000);

/// Most authorizations one connection runs (the first login plus scope step-ups) before it
/// gives up, so a server that keeps refusing every token cannot loop forever. 3.
pub const MAX_AUTHORIZATIONS: u32 = 3;

/// The line printed on stderr before the URL.
const URL_MARKER: &str = "open this URL in a browser: ";

/// The client name sent in dynamic client registration.
const CLIENT_NAME: &str = "codemode";

/// The directory of the token files: `$XDG_CONFIG_HOME/codemode/oauth` when `XDG_CONFIG_HOME`
/// is an absolute path, else `$HOME/.config/codemode/oauth`; `None` without either.
pub fn token_dir() -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .map(|home| home.join(".config"))
        })?;
    Some(config.join("codemode").join("oauth"))
}

/// The token file name for a server URL: its `[A-Za-z0-9.-]` characters (others become `_`, at
/// most 64 kept) and a 64-bit FNV-1a hash of the whole URL in hex, so two URLs never share a
/// file by accident and the name still says which server it is.
pub fn token_file_name(url: &str) -> String {
    let readable: String = url
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in url.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{readable}-{hash:016x}.json")
}

/// One server's OAuth credentials (client id, tokens, granted scopes) in one JSON file
/// `{"url": …, "credentials": {…}}` inside [`token_dir`]. The directory is created with mode
/// 0700 and files are written 0600 (a temporary file renamed over the old one). A directory or
/// file that group or others can write (or, for files, read), or that is a symbolic link, is
/// refused with a [`AuthError::CredentialStoreError`] naming it and its mode, never used.
#[derive(Debug, Clone)]
pub struct FileCredentialStore {
    dir: PathBuf,
    file: PathBuf,
    url: String,
}

impl FileCredentialStore {
    /// The store of `url`'s credentials in `dir` (nothing is touched until the first load or
    /// save).
    pub fn new(dir: &Path, url: &str) -> Self {
        FileCredentialStore {
            dir: dir.to_path_buf(),
            file: dir.join(token_file_name(url)),
            url: url.to_owned(),
        }
    }

    /// The token file's path.
    pub fn path(&self) -> &Path {
        &self.file
    }

    fn error(&self, what: impl std::fmt::Display) -> AuthError {
        AuthError::CredentialStoreError(what.to_string())
    }

    /// Refuses `path` when it is a symbolic link, not a directory (`dir`) or regular file,
    /// another user's, or its mode has any bit of `forbidden`: the checked path for operator
    /// files' rule (`codemode_files::check`, docs/threat-model.md "Files an operator names").
    fn check(
        &self,
        path: &Path,
        meta: &std::fs::Metadata,
        dir: bool,
        forbidden: u32,
    ) -> Result<(), AuthError> {
        let expect = if dir {
            codemode_files::Expect::Directory
        } else {
            codemode_files::Expect::File
        };
        let rules = codemode_files::Rules {
            forbidden_mode: forbidden,
            root_may_own: false,
        };
        codemode_files::check(meta, expect, &rules).map_err(|e| {
            self.error(format!(
                "refusing to use the OAuth token store {}: {e}",
                path.display()
            ))
        })
    }

    fn check_dir(&self) -> Result<bool, AuthError> {
        match std::fs::symlink_metadata(&self.dir) {
            Ok(meta) => {
                self.check(&self.dir, &meta, true, 0o022)?;
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(self.error(format!("{}: {e}", self.dir.display()))),
        }
    }

    fn load_sync(&self) -> Result<Option<StoredCredentials>, AuthError> {
        if !self.check_dir()? {
            return Ok(None);
        }
        let meta = match std::fs::symlink_metadata(&self.file) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.error(format!("{}: {e}", self.file.display()))),
        };
        self.check(&self.file, &meta, false, 0o077)?;
        // Opened without following a link and checked again on the open descriptor, so a file
        // swapped in between the two looks is refused too.
        let mut options = std::fs::OpenOptions::new();
        options.read(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
        }
        let mut file = options
            .open(&self.file)
            .map_err(|e| self.error(format!("{}: {e}", self.file.display())))?;
        let opened = file
            .metadata()
            .map_err(|e| self.error(format!("{}: {e}", self.file.display())))?;
        self.check(&self.file, &opened, false, 0o077)?;
        let mut text = String::new();
        std::io::Read::read_to_string(&mut file, &mut text)
            .map_err(|e| self.error(format!("{}: {e}", self.file.display())))?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| self.error(format!("{}: not a token file: {e}", self.file.display())))?;
        if value.get("url").and_then(|u| u.as_str()) != Some(self.url.as_str()) {
            // Another URL whose name hashed the same: not ours.
            return Ok(None);
        }
        let credentials = serde_json::from_value(value["credentials"].clone())
            .map_err(|e| self.error(format!("{}: not a token file: {e}", self.file.display())))?;
        Ok(Some(credentials))
    }

    fn save_sync(&self, credentials: &StoredCredentials) -> Result<(), AuthError> {
        if !self.check_dir()? {
            if let Some(parent) = self.dir.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| self.error(format!("{}: {e}", parent.display())))?;
            }
            let mut builder = std::fs::DirBuilder::new();
            #[cfg(unix)]
            {
                use std::os::unix::fs::DirBuilderExt;
                builder.mode(0o700);
            }
            match builder.create(&self.dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(self.error(format!("{}: {e}", self.dir.display()))),
            }
            self.check_dir()?;
        }
        let text = serde_json::to_string_pretty(&serde_json::json!({
            "url": self.url,
            "credentials": credentials,
        }))
        .map_err(|e| self.error(e))?;
        let tmp = self.dir.join(format!(
            ".{}.{}.tmp",
            token_file_name(&self.url),
            uuid::Uuid::new_v4().simple()
        ));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let written = options.open(&tmp).and_then(|mut file| {
            use std::io::Write;
            file.write_all(text.as_bytes())?;
            file.sync_all()
        });
        let renamed = written.and_then(|()| std::fs::rename(&tmp, &self.file));
        if let Err(e) = renamed {
            let _ = std::fs::remove_file(&tmp);
            return Err(self.error(format!("{}: {e}", self.file.display())));
        }
        Ok(())
    }

    fn clear_sync(&self) -> Result<(), AuthError> {
        match std::fs::remove_file(&self.file) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.error(format!("{}: {e}", self.file.display()))),
        }
    }
}

#[async_trait::async_trait]
impl CredentialStore for FileCredentialStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.load_sync()
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.save_sync(&credentials)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.clear_sync()
    }
}

/// Why the server refused a request: the `WWW-Authenticate` header of a 401, or of a 403 with
/// `insufficient_scope` and the scope it asked for.
#[derive(Debug, Clone)]
enum Challenge {
    Unauthorized(String),
    InsufficientScope(String, Option<String>),
}

struct Inner {
    server: String,
    /// Plain `http://` to a host that is not loopback: OAuth is refused ([`cleartext_host`]).
    cleartext: Option<String>,
    auth: AuthClient<reqwest::Client>,
    /// One authorization at a time; requests refused meanwhile wait for it.
    authorizing: tokio::sync::Mutex<()>,
    /// Authorizations completed (a request refused before one finished retries after it).
    generation: AtomicU32,
    /// Authorizations started.
    attempts: AtomicU32,
}

/// The streamable HTTP client of every HTTP MCP server: rmcp's [`AuthClient`] (a stored token
/// is sent, refreshed when it expires) plus the interactive authorization described in the
/// module docs when the server refuses a request. Cheap to clone (one shared state).
#[derive(Clone)]
pub struct OAuthHttpClient {
    inner: Arc<Inner>,
}

/// The client [`crate::ServerClient`] connects to the HTTP server `server` at `url` through:
/// `None` (plain HTTP, no OAuth) when the configured `headers` carry an `Authorization` header
/// of their own, or when `url` is not a URL rmcp's auth manager takes (the plain transport then
/// reports it).
pub async fn client_for(
    server: &str,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Option<OAuthHttpClient> {
    if headers
        .keys()
        .any(|k| k.eq_ignore_ascii_case("authorization"))
    {
        return None;
    }
    match OAuthHttpClient::new(server, url).await {
        Ok(client) => Some(client),
        Err(error) => {
            tracing::warn!(server, %error, "no OAuth for this server");
            None
        }
    }
}

impl OAuthHttpClient {
    /// The client of server `server` (its configured name, for messages) at `url`, with tokens in
    /// [`token_dir`] (kept in memory only when there is no config directory). Reads stored
    /// credentials; a store that cannot be read (a refused mode, a broken file) is logged and
    /// costs only the stored tokens.
    ///
    /// # Errors
    /// [`AuthError`] when `url` is not a URL or the HTTP client cannot be built.
    pub async fn new(server: &str, url: &str) -> Result<Self, AuthError> {
        let mut manager = AuthorizationManager::new(url).await?;
        let cleartext = cleartext_host(url);
        // Stored tokens are never sent in clear text either.
        if let Some(dir) = token_dir().filter(|_| cleartext.is_none()) {
            let store = FileCredentialStore::new(&dir, url);
            let readable = store.load_sync();
            match readable {
                Ok(Some(_)) => {
                    manager.set_credential_store(store);
                    if let Err(error) = manager.initialize_from_store().await {
                        tracing::warn!(server, %error, "stored OAuth credentials not usable");
                    }
                }
                Ok(None) => manager.set_credential_store(store),
                Err(error) => {
                    tracing::warn!(server, %error, "OAuth token store refused; tokens stay in memory");
                    eprintln!("codemode: MCP server {server:?}: {error}");
                }
            }
        }
        Ok(OAuthHttpClient {
            inner: Arc::new(Inner {
                server: server.to_owned(),
                cleartext,
                auth: AuthClient::new(mcp_http_client()?, manager),
                authorizing: tokio::sync::Mutex::new(()),
                generation: AtomicU32::new(0),
                attempts: AtomicU32::new(0),
            }),
        })
    }

    /// Runs `call`; when the server refuses it (401, or 403 `insufficient_scope`), authorizes
    /// and runs it once more with the new token.
    async fn with_authorization<T, F, Fut>(
        &self,
        auth_header: Option<String>,
        call: F,
    ) -> Result<T, StreamableHttpError<reqwest::Error>>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: std::future::Future<Output = Result<T, StreamableHttpError<reqwest::Error>>>,
    {
        let generation = self.inner.generation.load(Ordering::Acquire);
        let challenge = match call(auth_header.clone()).await {
            Err(StreamableHttpError::AuthRequired(e)) => {
                Challenge::Unauthorized(e.www_authenticate_header)
            }
            Err(StreamableHttpError::InsufficientScope(e)) => {
                Challenge::InsufficientScope(e.www_authenticate_header, e.required_scope)
            }
            other => return other,
        };
        // A static Authorization header from the config is the user's choice: no OAuth.
        if auth_header.is_some() {
            return Err(match challenge {
                Challenge::Unauthorized(h) => StreamableHttpError::AuthRequired(
                    rmcp::transport::streamable_http_client::AuthRequiredError::new(h),
                ),
                Challenge::InsufficientScope(h, s) => StreamableHttpError::InsufficientScope(
                    rmcp::transport::streamable_http_client::InsufficientScopeError::new(h, s),
                ),
            });
        }
        self.authorize(generation, challenge).await?;
        call(None).await
    }

    /// One authorization (unless another finished since `generation`): discovery, registration,
    /// the URL on stderr, the redirect, the token exchange.
    async fn authorize(&self, generation: u32, challenge: Challenge) -> Result<(), AuthError> {
        let _one = self.inner.authorizing.lock().await;
        if self.inner.generation.load(Ordering::Acquire) != generation {
            return Ok(());
        }
        let server = &self.inner.server;
        if let Some(host) = &self.inner.cleartext {
            return Err(AuthError::AuthorizationFailed(format!(
                "MCP server {server:?} asks for OAuth authorization over plain http:// to {host}, which is not this machine: codemode sends authorization codes and tokens only over https:// or to loopback; use the server's https:// URL, or give it an Authorization header in the config"
            )));
        }
        let attempt = self.inner.attempts.fetch_add(1, Ordering::AcqRel) + 1;
        if attempt > MAX_AUTHORIZATIONS {
            return Err(AuthError::AuthorizationFailed(format!(
                "MCP server {server:?} refused the token of {MAX_AUTHORIZATIONS} authorizations in a row; giving up"
            )));
        }
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| AuthError::InternalError(format!("cannot listen on 127.0.0.1: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| AuthError::InternalError(e.to_string()))?
            .port();
        let redirect_uri = format!("http://127.0.0.1:{port}/callback");
        let mut manager = self.inner.auth.auth_manager.lock().await;
        let (header, required_scope) = match &challenge {
            Challenge::Unauthorized(h) => (h.as_str(), None),
            Challenge::InsufficientScope(h, s) => (h.as_str(), s.as_deref()),
        };
        let resolution = manager
            .resolve_metadata_from_challenge(Some(header))
            .await?;
        manager.set_metadata(resolution.metadata);
        let scopes = match required_scope {
            None if attempt == 1 => manager.select_initial_scopes(&[]).await,
            scope => manager.select_scopes(scope, &[]),
        };
        let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let config = manager
            .register_client(CLIENT_NAME, &redirect_uri, &scope_refs)
            .await?;
        manager.configure_client(config)?;
        let url = manager.get_authorization_url(&scope_refs).await?;
        // Not held while a person is in the browser: requests of other runs to this server get
        // their (missing) token at once and queue on `authorizing` instead of on this lock.
        drop(manager);
        eprintln!(
            "codemode: MCP server {server:?} needs authorization; {URL_MARKER}{url}\ncodemode: waiting for the browser to return to {redirect_uri} (at most {} s, and no longer than the request's own timeout)",
            AUTHORIZATION_WAIT.as_secs()
        );
        let state = query_value(&url, "state").ok_or_else(|| {
            AuthError::InternalError("the authorization URL carries no state".into())
        })?;
        let callback =
            tokio::time::timeout(AUTHORIZATION_WAIT, wait_for_callback(listener, port, state))
                .await
                .map_err(|_| {
                    AuthError::AuthorizationFailed(format!(
                        "nobody completed the authorization of MCP server {server:?} within {} s",
                        AUTHORIZATION_WAIT.as_secs()
                    ))
                })??;
        self.inner
            .auth
            .auth_manager
            .lock()
            .await
            .exchange_code_for_token_with_issuer(
                &callback.code,
                &callback.csrf_token,
                callback.issuer.as_deref(),
            )
            .await?;
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
        eprintln!("codemode: MCP server {server:?} authorized");
        Ok(())
    }
}

/// The reqwest client MCP requests go through: the one rmcp's `from_config` builds (its builder
/// is private), so OAuth changes nothing else about HTTP. No idle pooling (avoids the ~40 ms
/// delayed-ACK stalls rmcp documents) and only same-origin 307/308 redirects are followed, at
/// most 10: a 301/302/303 would turn the POST into a bodyless GET, and a cross-origin redirect
/// would hand the session id, the configured headers and the bearer token to another host.
fn mcp_http_client() -> Result<reqwest::Client, AuthError> {
    const MAX_REDIRECTS: usize = 10;
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let preserves_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|original| original.origin() == attempt.url().origin());
        if !preserves_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("exceeded {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(policy)
        .build()
        .map_err(|e| AuthError::InternalError(format!("cannot build the HTTP client: {e}")))
}

/// Serves `http://127.0.0.1:<port>/callback` until a GET redirect carrying the authorization
/// request's own `state` arrives, with `code` (or an OAuth `error`); other paths get 404, other
/// methods 405, and a callback with another or no `state` 400 while the wait goes on, so a local
/// process or a web page probing 127.0.0.1 cannot end the flow or use up an attempt (the PKCE
/// verifier stays with the real redirect). The browser sees a one-line page.
async fn wait_for_callback(
    listener: tokio::net::TcpListener,
    port: u16,
    expected_state: String,
) -> Result<AuthorizationCallback, AuthError> {
    let expected_state = Arc::new(expected_state);
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<AuthorizationCallback, AuthError>>(1);
    loop {
        tokio::select! {
            result = rx.recv() => {
                return result.unwrap_or_else(|| Err(AuthError::InternalError("callback listener closed".into())));
            }
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let tx = tx.clone();
                let expected_state = expected_state.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                        let tx = tx.clone();
                        let expected_state = expected_state.clone();
                        async move {
                            let uri = request.uri();
                            if uri.path() != "/callback" {
                                return Ok::<_, std::convert::Infallible>(page(404, "not found"));
                            }
                            if request.method() != http::Method::GET {
                                return Ok(page(405, "method not allowed"));
                            }
                            let full = format!("http://127.0.0.1:{port}{uri}");
                            if query_value(&full, "state").as_deref() != Some(expected_state.as_str()) {
                                return Ok(page(400, "codemode: this is not the redirect codemode is waiting for (state does not match)."));
                            }
                            let denied = url_error(&full);
                            let result = match denied {
                                Some(error) => Err(AuthError::AuthorizationFailed(format!("the authorization server answered {error}"))),
                                None => AuthorizationCallback::from_redirect_url(&full),
                            };
                            let ok = result.is_ok();
                            let _ = tx.try_send(result);
                            Ok(if ok {
                                page(200, "codemode: authorization received; you can close this page.")
                            } else {
                                page(400, "codemode: the authorization failed; see the terminal.")
                            })
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        }
    }
}

/// The host of `url` when it is plain `http://` to a host that is not loopback (`localhost`,
/// `*.localhost`, 127.0.0.0/8, `::1`): OAuth there would carry the authorization code and the
/// bearer tokens in clear text (OAuth 2.1 requires TLS but for loopback). `None` otherwise,
/// including for a URL that does not parse (the transport reports that one).
fn cleartext_host(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    if parsed.scheme() != "http" {
        return None;
    }
    let host = parsed.host_str()?.to_ascii_lowercase();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => bare == "localhost" || bare.ends_with(".localhost"),
    };
    (!loopback).then_some(host)
}

/// The `error` (and `error_description`) of an OAuth error redirect, if it is one, without
/// control characters (it is printed on a terminal) and at most 300 characters each.
fn url_error(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let pairs: HashMap<_, _> = parsed.query_pairs().collect();
    let clean =
        |text: &str| -> String { text.chars().filter(|c| !c.is_control()).take(300).collect() };
    let error = clean(pairs.get("error")?);
    Some(match pairs.get("error_description") {
        Some(description) => format!("{error}: {}", clean(description)),
        None => error,
    })
}

/// The value of query parameter `key` of `url`.
fn query_value(url: &str, key: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

fn page(status: u16, text: &str) -> hyper::Response<String> {
    let mut response = hyper::Response::new(format!("{text}\n"));
    *response.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::OK);
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

impl StreamableHttpClient for OAuthHttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.with_authorization(auth_header, |token| {
            self.inner.auth.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.with_authorization(auth_header, |token| {
            self.inner.auth.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.with_authorization(auth_header, |token| {
            self.inner.auth.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        // Never authorize just to end a session.
        self.inner
            .auth
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.with_authorization(auth_header, |token| {
            self.inner.auth.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.with_authorization(auth_header, |token| {
            self.inner.auth.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Starts the callback listener; returns its port and the task waiting for the redirect.
    async fn listen() -> (
        u16,
        tokio::task::JoinHandle<Result<AuthorizationCallback, AuthError>>,
    ) {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        (
            port,
            tokio::spawn(wait_for_callback(listener, port, "st4te".to_string())),
        )
    }

    #[tokio::test]
    async fn the_callback_takes_code_state_and_iss_and_ignores_other_paths() {
        let (port, waiting) = listen().await;
        let http = reqwest::Client::new();
        let other = http
            .get(format!("http://127.0.0.1:{port}/favicon.ico"))
            .send()
            .await
            .unwrap();
        assert_eq!(other.status(), 404);
        let page = http
            .get(format!(
                "http://127.0.0.1:{port}/callback?code=c0de&state=st4te&iss=https%3A%2F%2Fas.example"
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), 200);
        assert_eq!(
            page.text().await.unwrap(),
            "codemode: authorization received; you can close this page.\n"
        );
        let callback = waiting.await.unwrap().unwrap();
        assert_eq!(callback.code, "c0de");
        assert_eq!(callback.csrf_token, "st4te");
        assert_eq!(callback.issuer.as_deref(), Some("https://as.example"));
    }

    #[tokio::test]
    async fn a_callback_with_another_state_is_refused_and_the_wait_goes_on() {
        let (port, waiting) = listen().await;
        let http = reqwest::Client::new();
        for probe in ["?error=x&state=wrong", "?error=x", "?code=c&state=other"] {
            let page = http
                .get(format!("http://127.0.0.1:{port}/callback{probe}"))
                .send()
                .await
                .unwrap();
            assert_eq!(page.status(), 400, "{probe}");
        }
        let post = http
            .post(format!(
                "http://127.0.0.1:{port}/callback?code=c&state=st4te"
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(post.status(), 405);
        assert!(!waiting.is_finished());
        let page = http
            .get(format!(
                "http://127.0.0.1:{port}/callback?code=real&state=st4te"
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), 200);
        assert_eq!(waiting.await.unwrap().unwrap().code, "real");
    }

    #[tokio::test]
    async fn an_error_redirect_fails_with_the_servers_words() {
        let (port, waiting) = listen().await;
        let page = reqwest::get(format!(
            "http://127.0.0.1:{port}/callback?error=access_denied&error_description=the+user+said+no%1b%5B2J&state=st4te"
        ))
        .await
        .unwrap();
        assert_eq!(page.status(), 400);
        let error = waiting.await.unwrap().unwrap_err().to_string();
        assert_eq!(
            error,
            // The ESC of `\x1b[2J` (clear screen) is gone: the text is printed on a terminal.
            "OAuth authorization failed: the authorization server answered access_denied: the user said no[2J"
        );
    }

    #[test]
    fn oauth_is_refused_over_cleartext_to_other_hosts() {
        for (url, expected) in [
            ("https://mcp.example.com/mcp", None),
            ("http://127.0.0.1:8080/mcp", None),
            ("http://127.9.9.9/mcp", None),
            ("http://[::1]:9/mcp", None),
            ("http://localhost:3000/mcp", None),
            ("http://LocalHost/mcp", None),
            ("http://api.localhost/mcp", None),
            ("http://mcp.example.com/mcp", Some("mcp.example.com")),
            ("http://10.0.0.7:9000/mcp", Some("10.0.0.7")),
            ("http://[2001:db8::1]/mcp", Some("[2001:db8::1]")),
            (
                "http://localhost.example.com/mcp",
                Some("localhost.example.com"),
            ),
            ("not a url", None),
        ] {
            assert_eq!(cleartext_host(url).as_deref(), expected, "{url}");
        }
    }

    #[tokio::test]
    async fn a_challenge_over_cleartext_fails_with_the_reason_and_sends_nothing() {
        let client = OAuthHttpClient::new("remote", "http://10.0.0.7:9/mcp")
            .await
            .unwrap();
        let error = client
            .authorize(0, Challenge::Unauthorized("Bearer".into()))
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "OAuth authorization failed: MCP server \"remote\" asks for OAuth authorization over plain http:// to 10.0.0.7, which is not this machine: codemode sends authorization codes and tokens only over https:// or to loopback; use the server's https:// URL, or give it an Authorization header in the config"
        );
        assert_eq!(client.inner.attempts.load(Ordering::Acquire), 0);
    }

    #[test]
    fn file_names_keep_the_host_and_hash_the_whole_url() {
        // The hash is FNV-1a 64 of the whole URL (checked against an independent implementation).
        assert_eq!(
            token_file_name("https://mcp.example.com/v1/mcp?x=1"),
            "mcp.example.com_v1_mcp_x_1-e15cd1f1221842e1.json"
        );
    }
}
