//! OAuth failures reach the user as one error, at once: an HTTP server that answers every
//! request with 401 but publishes no authorization metadata (so registration fails), and the same server configured
//! with its own `Authorization` header (no OAuth is attempted then).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_mcp::{ClientOptions, ServerClient, ServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A loopback HTTP server answering every request with 401 and a Bearer challenge (no
/// `resource_metadata`); every well-known metadata path is a 401 too. Returns its URL and the
/// number of requests it got.
async fn always_401() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let counter = counter.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let mut seen = Vec::new();
                loop {
                    let Ok(n) = stream.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    // One request per connection is enough for this stub: answer once the
                    // headers (and a body of the announced length) are in.
                    if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&seen[..end]).to_ascii_lowercase();
                        let length = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        if seen.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                counter.fetch_add(1, Ordering::SeqCst);
                let body = "unauthorized";
                let response = format!(
                    "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm=\"stub\"\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (format!("http://127.0.0.1:{port}/mcp"), hits)
}

fn options() -> ClientOptions {
    ClientOptions {
        connect_timeout: Duration::from_millis(10_000),
        ..ClientOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_without_authorization_metadata_fails_the_connect_at_once() {
    let home = tempfile::tempdir().unwrap();
    std::env::set_var("XDG_CONFIG_HOME", home.path());
    let (url, _hits) = always_401().await;
    let client = ServerClient::new(
        "locked",
        ServerConfig::Http {
            url: url.clone(),
            headers: BTreeMap::new(),
            timeout: None,
        },
        options(),
        Arc::new(|| {}),
    );
    let started = Instant::now();
    let error = client.list().await.unwrap_err().to_string();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    // No protected-resource metadata: rmcp falls back to the 2025-03-26 default endpoints at
    // the server's origin, and registration there is refused.
    assert_eq!(
        error,
        "MCP server \"locked\" failed to connect: Send message error Transport error: Auth error: \
         Registration failed: HTTP 401 Unauthorized: unauthorized, when send discover request"
    );
    // Nothing was stored for a server that was never authorized.
    assert!(!home.path().join("codemode/oauth").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_authorization_header_turns_oauth_off() {
    let (url, hits) = always_401().await;
    let mut headers = BTreeMap::new();
    headers.insert("Authorization".to_string(), "Bearer wrong".to_string());
    let client = ServerClient::new(
        "static",
        ServerConfig::Http {
            url,
            headers,
            timeout: None,
        },
        options(),
        Arc::new(|| {}),
    );
    let error = client.list().await.unwrap_err().to_string();
    assert_eq!(
        error,
        "MCP server \"static\" failed to connect: Send message error Transport error: Auth required, \
         when send discover request"
    );
    // One request (the initialize POST): no metadata discovery, no registration.
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}
