//! The `Origin` check of [`crate::CodeModeServer::serve_http`] (issue 27 item 10,
//! docs/threat-model.md "Limits and the layer that enforces them"): the header is parsed as a
//! URL (the `url` crate, WHATWG parsing) and accepted only when it is exactly a serialised origin
//! (RFC 6454 §7: scheme, host, optional port, nothing else) whose scheme is `http` or `https` and
//! whose host is a loopback name: `localhost`, `127.0.0.1` or `[::1]`, any port.
//!
//! rmcp's own allowlist check (kept behind this one) matches the header's pieces as text through
//! `http::Uri`, which let through `http://evil.example@localhost` (userinfo), `http://[::1].evil`
//! and `http://localhost:3000/x` (a path); none is an origin a browser sends, but a check should
//! parse, not match.

use std::convert::Infallible;
use std::net::{Ipv4Addr, Ipv6Addr};

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use url::{Host, Url};

/// Whether `origin` (an `Origin` header's value) is a loopback origin: it parses as a URL, is
/// its own origin's serialisation (compared ignoring ASCII case: no userinfo, path, query,
/// fragment or default port written out), has scheme `http` or `https`, and host `localhost`,
/// `127.0.0.1` or `::1`. `null` and anything else are refused.
pub fn is_loopback_origin(origin: &str) -> bool {
    let Ok(url) = Url::parse(origin) else {
        return false;
    };
    if !matches!(url.scheme(), "http" | "https") {
        return false;
    }
    if !url
        .origin()
        .ascii_serialization()
        .eq_ignore_ascii_case(origin)
    {
        return false;
    }
    match url.host() {
        Some(Host::Domain(name)) => name == "localhost",
        Some(Host::Ipv4(ip)) => ip == Ipv4Addr::LOCALHOST,
        Some(Host::Ipv6(ip)) => ip == Ipv6Addr::LOCALHOST,
        None => false,
    }
}

/// The `403 Forbidden` answer for a request whose `Origin` header is present and not a loopback
/// origin ([`is_loopback_origin`]; a header that is not UTF-8 is refused too); `None` when the
/// request may go on (no `Origin`: not from a browser). The body is rmcp's text for the same
/// refusal.
pub(crate) fn refuse_foreign_origin(
    headers: &http::HeaderMap,
) -> Option<http::Response<BoxBody<Bytes, Infallible>>> {
    let origin = headers.get(http::header::ORIGIN)?;
    if origin.to_str().is_ok_and(is_loopback_origin) {
        return None;
    }
    tracing::warn!(
        ?origin,
        "refused a request whose Origin is not a loopback origin"
    );
    let body = Full::new(Bytes::from_static(
        b"Forbidden: Origin header is not allowed",
    ))
    .boxed();
    let mut response = http::Response::new(body);
    *response.status_mut() = http::StatusCode::FORBIDDEN;
    Some(response)
}

#[cfg(test)]
mod tests {
    use super::is_loopback_origin;

    #[test]
    fn accepts_every_loopback_origin_and_nothing_else() {
        for origin in [
            "http://localhost",
            "https://localhost",
            "http://localhost:3000",
            "https://localhost:8443",
            "http://127.0.0.1",
            "http://127.0.0.1:6274",
            "https://127.0.0.1:1",
            "http://[::1]",
            "http://[::1]:5173",
            "https://[::1]:65535",
            "HTTP://LOCALHOST:3000",
        ] {
            assert!(is_loopback_origin(origin), "{origin}");
        }
        for origin in [
            // The three: userinfo, a bracketed name, a path.
            "http://evil.example@localhost",
            "http://[::1].evil",
            "http://localhost:3000/x",
            // Other ways to dress a foreign or non-origin value up.
            "http://localhost:3000/",
            "http://localhost:3000?x",
            "http://localhost:3000#x",
            "http://user:pw@127.0.0.1",
            "http://localhost.evil.example:8080",
            "http://localhost:80",
            "https://localhost:443",
            "http://127.0.0.2",
            "http://0x7f.0.0.1",
            "http://2130706433",
            "http://[::ffff:127.0.0.1]",
            "ws://localhost",
            "file://localhost",
            "https://evil.example",
            "null",
            "localhost:3000",
            " http://localhost",
            "",
        ] {
            assert!(!is_loopback_origin(origin), "{origin}");
        }
    }
}
