//! Connecting one [`ServerClient`]: `server/discover` with the `initialize` fallback, over stdio
//! (a child process, its stderr kept, its stdout filtered) or streamable HTTP, the handler that
//! routes the server's notifications and requests, and the watch that marks a connection broken.

use super::*;

impl ServerClient {
    /// The handler of this server's requests (elicitation, sampling) and notifications; also
    /// what answers its 2026-07-28 input requests (`rounds.rs`).
    pub(crate) fn handler(&self) -> Handler {
        Handler {
            server: self.name.clone(),
            on_tools_changed: self.on_tools_changed.clone(),
            on_content_changed: self.on_content_changed.clone(),
            forward: self.forward.clone(),
        }
    }

    /// Connects with `server/discover` (2026-07-28), falling back to `initialize`
    /// (`lifecycle.rs`). A server that knows the current revision's discovery but supports only
    /// older versions answers it with `-32022` listing them; rmcp gives up there, so the client
    /// connects again (a new child, for stdio) with the `initialize` handshake.
    pub(super) async fn connect(&self) -> Result<Connection, ClientError> {
        match self.connect_with(lifecycle::auto()).await {
            Err(ClientError::Connect { source, .. }) if lifecycle::only_legacy(&source) => {
                tracing::info!(server = %self.name, "MCP server supports only revisions with initialize; connecting again with it");
                self.connect_with(ClientLifecycleMode::Initialize).await
            }
            other => other,
        }
    }

    async fn connect_with(&self, mode: ClientLifecycleMode) -> Result<Connection, ClientError> {
        let handler = self.handler();
        let fail = |source| ClientError::Connect {
            server: self.name.clone(),
            stderr: self.stderr.quote(),
            source: Box::new(source),
        };
        let (broken_tx, broken) = tokio::sync::watch::channel(None);
        let mut child = None;
        let service = match &self.config {
            ServerConfig::Stdio {
                command,
                args,
                env,
                cwd,
                ..
            } => {
                if let Some(cwd) = cwd.as_ref().filter(|cwd| !cwd.is_dir()) {
                    return Err(ClientError::CwdNotDirectory {
                        server: self.name.clone(),
                        cwd: cwd.clone(),
                    });
                }
                let mut process =
                    ChildProcess::spawn(command, args, env, cwd.as_deref()).map_err(|source| {
                        ClientError::Spawn {
                            server: self.name.clone(),
                            command: command.clone(),
                            source,
                        }
                    })?;
                let Some(pipes) = process.take_stdio() else {
                    return Err(ClientError::StdioNotPiped {
                        server: self.name.clone(),
                    });
                };
                self.stderr.drain(&self.name, pipes.stderr);
                let (reader, writer) = tokio::io::duplex(64 * 1024);
                tokio::spawn(stdio::filter_stdout(
                    pipes.stdout,
                    writer,
                    self.last_problem.clone(),
                ));
                child = Some(process);
                let transport =
                    rmcp::transport::async_rw::AsyncRwTransport::new_client(reader, pipes.stdin);
                handler
                    .serve_with_lifecycle(lifecycle::ProbeGuard::new(transport), mode)
                    .await
                    .map_err(fail)?
            }
            ServerConfig::Http { url, headers, .. } => {
                let mut custom = HashMap::new();
                for (key, value) in headers {
                    let name = http::HeaderName::from_bytes(key.as_bytes()).map_err(|source| {
                        ClientError::HeaderName {
                            server: self.name.clone(),
                            key: key.clone(),
                            source,
                        }
                    })?;
                    let value = http::HeaderValue::from_str(value).map_err(|source| {
                        ClientError::HeaderValue {
                            server: self.name.clone(),
                            key: key.clone(),
                            source,
                        }
                    })?;
                    custom.insert(name, value);
                }
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom);
                config.retry_config = Arc::new(sse_retry());
                let broken = Arc::new(broken_tx);
                // OAuth (auth.rs) unless the config sends its own Authorization header.
                if let Some(oauth) = crate::auth::client_for(&self.name, url, headers).await {
                    let inner = lifecycle::ProbeGuard::new(
                        StreamableHttpClientTransport::with_client(oauth, config),
                    );
                    handler
                        .serve_with_lifecycle(Watched { inner, broken }, mode)
                        .await
                        .map_err(fail)?
                } else {
                    let inner = lifecycle::ProbeGuard::new(
                        StreamableHttpClientTransport::from_config(config),
                    );
                    handler
                        .serve_with_lifecycle(Watched { inner, broken }, mode)
                        .await
                        .map_err(fail)?
                }
            }
        };
        let capabilities = service
            .peer()
            .peer_info()
            .and_then(|info| serde_json::to_value(&info.capabilities).ok())
            .unwrap_or(Value::Null);
        let peer = service.peer().clone();
        lifecycle::listen_for_list_changes(
            &self.name,
            &peer,
            self.on_tools_changed.clone(),
            self.on_content_changed.clone(),
        );
        Ok(Connection {
            service,
            peer,
            capabilities,
            broken,
            child,
        })
    }
}
