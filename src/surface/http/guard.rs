//! Who may ask: every request to `tmws serve`, REST or `/mcp`, is checked here first
//! (docs/surfaces.md). `/health` alone is answered to anyone: it tells only that the server
//! runs, its version and whether its index is ready, and probes send what `Host` they like.
//!
//! - `Host` must name this server: `localhost`, a loopback address, or the address it is
//!   bound to (any host when it is bound to all addresses, which no list of names could
//!   cover). A web page whose name an attacker points at this machine (DNS rebinding)
//!   sends its own name and is refused.
//! - A present `Origin` must be this server's own: `http(s)://HOST[:PORT]` with a host the
//!   rule above allows (the request's own `Host` when bound to all addresses) and the port
//!   the server listens on or the client addressed. Clients other than browsers send none.
//! - `Authorization: Bearer <token>` must carry the token, or one of the tokens bound to
//!   an agent (`token.rs`); the scheme is matched in any case and the token is compared in
//!   constant time. The agent a token is bound to goes with the request ([`TokenAgent`]):
//!   what it writes and verifies is written as that agent. The web view's paths (`/ui`)
//!   need none: a browser there shows a session cookie, which `ui/` checks instead.
//! - A request with two `Host` or two `Origin` headers is malformed (RFC 9110 §7.2: 400),
//!   whatever the route: which of the two a check read and which one a proxy in front
//!   used could differ.

use std::net::IpAddr;

use axum::extract::{Request, State};
use axum::http::uri::Authority;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::token::AGENT_TOKENS_FILE;
use super::{ApiError, AppState};
use crate::layout::TOKEN_FILE;

/// What a request must show to be let through.
#[derive(Debug, Clone)]
pub(super) struct Guard {
    /// The address the server is bound to: its IP, or unspecified for all of them.
    ip: IpAddr,
    port: u16,
    /// A hash of the token, so that comparing takes the same time wherever it differs
    /// (`blake3::Hash` compares in constant time).
    token: blake3::Hash,
    /// Hashes of the tokens bound to an agent, with the agent.
    agents: Vec<(blake3::Hash, std::sync::Arc<str>)>,
}

/// The agent the request's token is bound to (None for the server's own token), put in
/// the request's extensions by the guard.
#[derive(Debug, Clone, Default)]
pub struct TokenAgent(pub Option<std::sync::Arc<str>>);

/// A host and port as a `Host` header or an origin names them: the host lowercased,
/// without the brackets of an IPv6 address.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostPort {
    host: String,
    port: Option<u16>,
}

impl HostPort {
    fn parse(text: &str) -> Option<HostPort> {
        // A `user@` part is no part of a Host header; `Authority` would drop it silently.
        if text.contains('@') {
            return None;
        }
        let authority = Authority::try_from(text).ok()?;
        let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
        Some(HostPort { host, port: authority.port_u16() })
    }
}

/// At most 64 characters of what a client sent, for a message.
fn shown(text: &str) -> String {
    match text.char_indices().nth(64) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

impl Guard {
    pub(super) fn new(bound: std::net::SocketAddr, token: &str) -> Guard {
        Guard { ip: bound.ip(), port: bound.port(), token: blake3::hash(token.as_bytes()), agents: Vec::new() }
    }

    /// With these tokens bound to agents (`token::AgentToken`).
    pub(super) fn with_agents(mut self, agents: &[super::token::AgentToken]) -> Guard {
        self.agents = agents.iter().map(|a| (blake3::hash(a.token.as_bytes()), a.agent.clone())).collect();
        self
    }

    /// Whether `host` names this server.
    fn host_allowed(&self, host: &str) -> bool {
        if self.ip.is_unspecified() || host == "localhost" {
            return true;
        }
        host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback() || ip == self.ip)
    }

    /// Whether `origin` (the `Origin` header) is this server's own, for a request to `host`.
    fn origin_allowed(&self, origin: &str, host: &HostPort) -> bool {
        let Some((scheme, rest)) = origin.split_once("://") else { return false };
        let default_port = match scheme.to_ascii_lowercase().as_str() {
            "http" => 80,
            "https" => 443,
            _ => return false,
        };
        // An origin is a scheme, a host and a port: nothing after them.
        if rest.contains(['/', '?', '#']) {
            return false;
        }
        let Some(origin) = HostPort::parse(rest) else { return false };
        let same_host =
            if self.ip.is_unspecified() { origin.host == host.host } else { self.host_allowed(&origin.host) };
        let port = origin.port.unwrap_or(default_port);
        same_host && (port == self.port || port == host.port.unwrap_or(default_port))
    }

    /// Whether `Authorization` carries a token, `Bearer` in any case, then the token: the
    /// server's own (`Some(None)`) or one bound to an agent (`Some(Some(agent))`).
    fn authorized(&self, headers: &HeaderMap) -> Option<TokenAgent> {
        let value = headers.get(header::AUTHORIZATION).map(|v| v.as_bytes())?;
        let space = value.iter().position(|&b| b == b' ')?;
        let (scheme, token) = value.split_at(space);
        if !scheme.eq_ignore_ascii_case(b"bearer") {
            return None;
        }
        let hash = blake3::hash(token.trim_ascii());
        // Every hash is compared, so that the time taken does not tell which matched.
        let mut found = (hash == self.token).then(TokenAgent::default);
        for (bound, agent) in &self.agents {
            if hash == *bound {
                found = Some(TokenAgent(Some(agent.clone())));
            }
        }
        found
    }

    /// Lets the request through, with the agent its token is bound to, or says why not.
    fn admit(&self, uri: &Uri, headers: &HeaderMap) -> Result<TokenAgent, ApiError> {
        for (name, shown) in [(header::HOST, "Host"), (header::ORIGIN, "Origin")] {
            let n = headers.get_all(&name).iter().count();
            if n > 1 {
                return Err(ApiError::new(StatusCode::BAD_REQUEST, format!("{n} {shown} headers: a request has one"))
                    .hint(format!("send one {shown} header")));
            }
        }
        if uri.path() == "/health" {
            return Ok(TokenAgent::default());
        }
        let host_text = match headers.get(header::HOST) {
            Some(v) => v.to_str().map_err(|_| ApiError::new(StatusCode::BAD_REQUEST, "the Host header is not text"))?,
            None => uri
                .authority()
                .map(Authority::as_str)
                .ok_or_else(|| ApiError::new(StatusCode::BAD_REQUEST, "no Host header"))?,
        };
        let host = HostPort::parse(host_text).ok_or_else(|| {
            ApiError::new(StatusCode::BAD_REQUEST, format!("Host `{}`: not a host and port", shown(host_text)))
        })?;
        if !self.host_allowed(&host.host) {
            let names = if self.ip.is_loopback() {
                format!("localhost or {}", self.ip)
            } else {
                format!("localhost, 127.0.0.1 or {}", self.ip)
            };
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                format!("Host `{}` is not this server", shown(host_text)),
            )
            .hint(format!(
                "address this server as {names}; other names are refused so that a web page cannot reach it \
through DNS rebinding"
            )));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let text = String::from_utf8_lossy(origin.as_bytes());
            if !self.origin_allowed(&text, &host) {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    format!("Origin `{}` is not this server's own", shown(&text)),
                )
                .hint(
                    "requests from web pages of other sites are refused; clients other than browsers send no Origin",
                ));
            }
        }
        if super::ui::is_ui(uri.path()) {
            return Ok(TokenAgent::default());
        }
        self.authorized(headers).ok_or_else(|| {
            ApiError::new(StatusCode::UNAUTHORIZED, "missing or wrong bearer token").hint(format!(
                "send `Authorization: Bearer TOKEN`; the token is TMWS_TOKEN or the content of {TOKEN_FILE}, or \
one bound to an agent in {AGENT_TOKENS_FILE}"
            ))
        })
    }
}

/// The layer: 400, 403 or 401 unless the request passes (see the module's doc); a request
/// let through carries the agent its token is bound to.
pub(super) async fn check(State(app): State<AppState>, mut request: Request, next: Next) -> Response {
    match app.guard.admit(request.uri(), request.headers()) {
        Ok(agent) => {
            request.extensions_mut().insert(agent);
            next.run(request).await
        }
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    fn guard(bound: &str) -> Guard {
        Guard::new(bound.parse().unwrap(), TOKEN)
    }

    /// The status `admit` gives a request to `path` with these headers (200 when let through).
    fn status(g: &Guard, path: &str, headers: &[(&str, &str)]) -> u16 {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            map.append(header::HeaderName::from_bytes(k.as_bytes()).unwrap(), HeaderValue::from_str(v).unwrap());
        }
        match g.admit(&path.parse().unwrap(), &map) {
            Ok(_) => 200,
            Err(e) => e.status.as_u16(),
        }
    }

    #[test]
    fn hosts_name_this_server_or_are_refused() {
        let auth = ("authorization", "Bearer 0123456789abcdef0123456789abcdef");
        let cases = [
            ("127.0.0.1:3456", "127.0.0.1:3456", 200),
            ("127.0.0.1:3456", "localhost:3456", 200),
            ("127.0.0.1:3456", "LOCALHOST", 200),
            ("127.0.0.1:3456", "127.0.0.2:3456", 200),
            ("127.0.0.1:3456", "[::1]:3456", 200),
            ("127.0.0.1:3456", "evil.example:3456", 403),
            ("127.0.0.1:3456", "localhost.evil.example", 403),
            ("127.0.0.1:3456", "10.0.0.5:3456", 403),
            ("127.0.0.1:3456", "user@localhost:3456", 400),
            ("127.0.0.1:3456", "local host", 400),
            ("10.0.0.5:3456", "10.0.0.5:3456", 200),
            ("10.0.0.5:3456", "localhost:3456", 200),
            ("10.0.0.5:3456", "devbox.example:3456", 403),
            ("10.0.0.5:3456", "10.0.0.6:3456", 403),
            ("0.0.0.0:3456", "devbox.example:3456", 200),
            ("[::]:3456", "10.0.0.6", 200),
        ];
        for (bound, host, want) in cases {
            assert_eq!(status(&guard(bound), "/some/route", &[("host", host), auth]), want, "{bound} {host}");
        }
        // No Host at all: only an absolute URI names one.
        assert_eq!(status(&guard("127.0.0.1:3456"), "/metrics", &[auth]), 400);
        assert_eq!(status(&guard("127.0.0.1:3456"), "http://localhost:3456/metrics", &[auth]), 200);
    }

    #[test]
    fn an_origin_must_be_the_servers_own() {
        let cases = [
            ("127.0.0.1:3456", "localhost:3456", "http://localhost:3456", 200),
            ("127.0.0.1:3456", "127.0.0.1:3456", "http://localhost:3456", 200),
            ("127.0.0.1:3456", "127.0.0.1:3456", "HTTPS://127.0.0.1:3456", 200),
            ("127.0.0.1:80", "127.0.0.1", "http://127.0.0.1", 200),
            // Addressed through a forwarded port: the port the client used.
            ("127.0.0.1:3456", "localhost:8080", "http://localhost:8080", 200),
            ("127.0.0.1:3456", "localhost:3456", "http://evil.example", 403),
            ("127.0.0.1:3456", "localhost:3456", "http://evil.example:3456", 403),
            ("127.0.0.1:3456", "localhost:3456", "http://localhost:5173", 403),
            ("127.0.0.1:3456", "localhost:3456", "http://localhost", 403),
            ("127.0.0.1:3456", "localhost:3456", "null", 403),
            ("127.0.0.1:3456", "localhost:3456", "file://localhost:3456", 403),
            ("127.0.0.1:3456", "localhost:3456", "http://localhost:3456/page", 403),
            ("127.0.0.1:3456", "localhost:3456", "http://user@localhost:3456", 403),
            ("0.0.0.0:3456", "devbox.example:3456", "http://devbox.example:3456", 200),
            ("0.0.0.0:3456", "devbox.example:3456", "http://evil.example:3456", 403),
        ];
        let auth = ("authorization", "Bearer 0123456789abcdef0123456789abcdef");
        for (bound, host, origin, want) in cases {
            let got = status(&guard(bound), "/some/route", &[("host", host), ("origin", origin), auth]);
            assert_eq!(got, want, "{bound} {host} {origin}");
        }
    }

    #[test]
    fn the_bearer_scheme_is_matched_in_any_case_and_health_is_open() {
        let g = guard("127.0.0.1:3456");
        let with = |auth: &str| status(&g, "/metrics", &[("host", "127.0.0.1:3456"), ("authorization", auth)]);
        for ok in [
            "Bearer 0123456789abcdef0123456789abcdef",
            "bearer 0123456789abcdef0123456789abcdef",
            "BEARER 0123456789abcdef0123456789abcdef",
            "Bearer   0123456789abcdef0123456789abcdef ",
        ] {
            assert_eq!(with(ok), 200, "{ok}");
        }
        for wrong in [
            "Bearer 0123456789abcdef0123456789abcdeF",
            "Bearer 0123456789abcdef0123456789abcde",
            "Bearer",
            "Bearer ",
            "Basic 0123456789abcdef0123456789abcdef",
            "Bearer0123456789abcdef0123456789abcdef",
            "0123456789abcdef0123456789abcdef",
        ] {
            assert_eq!(with(wrong), 401, "{wrong}");
        }
        assert_eq!(status(&g, "/metrics", &[("host", "127.0.0.1:3456")]), 401);
        // /health is answered to anyone.
        assert_eq!(status(&g, "/health", &[("host", "127.0.0.1:3456")]), 200);
        assert_eq!(status(&g, "/health", &[("host", "x"), ("origin", "http://evil.example")]), 200);
    }

    #[test]
    fn two_hosts_or_two_origins_are_a_bad_request_on_every_route() {
        let g = guard("127.0.0.1:3456");
        let auth = ("authorization", "Bearer 0123456789abcdef0123456789abcdef");
        let host = ("host", "127.0.0.1:3456");
        let origin = ("origin", "http://127.0.0.1:3456");
        assert_eq!(status(&g, "/some/route", &[host, auth]), 200);
        assert_eq!(status(&g, "/some/route", &[host, host, auth]), 400);
        assert_eq!(status(&g, "/some/route", &[host, ("host", "evil.example"), auth]), 400);
        assert_eq!(status(&g, "/some/route", &[host, origin, origin, auth]), 400);
        assert_eq!(status(&g, "/health", &[host, host]), 400);
        let mut map = HeaderMap::new();
        map.append(header::HOST, HeaderValue::from_static("127.0.0.1:3456"));
        map.append(header::HOST, HeaderValue::from_static("localhost:3456"));
        let e = g.admit(&"/metrics".parse().unwrap(), &map).unwrap_err();
        assert_eq!(e.answer.error, "2 Host headers: a request has one");
    }

    #[test]
    fn what_a_client_sent_is_shown_cut() {
        assert_eq!(shown("localhost"), "localhost");
        let long = "a".repeat(100);
        assert_eq!(shown(&long), format!("{}…", "a".repeat(64)));
    }
}
