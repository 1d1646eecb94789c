//! `tmws serve`: REST routes and MCP streamable HTTP on one port (docs/surfaces.md).
//!
//! Every request but `/health` passes one guard first (`guard.rs`): its `Host` must name
//! this server, a present `Origin` must be the server's own, and it needs
//! `Authorization: Bearer <token>` (the token: `token.rs`). Request bodies over 1 MiB get
//! 413, a client has 10 s to send its headers (`listen.rs`), and error bodies name paths
//! relative to the root. SIGINT or SIGTERM stops the server gracefully: open MCP sessions
//! are closed, requests in flight finish, the watcher commits.

mod guard;
mod listen;
mod token;
mod ui;

pub use self::guard::TokenAgent;
pub use self::token::{AGENT_TOKENS_FILE, TokenSource, agent_tokens, resolve_token};

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Map, Value};

use crate::error::{Category, Error, ErrorAnswer, Result};
use crate::query::Engine;
use crate::query::api::Format;
use crate::query::catalog::{self, Output, Tool};
use crate::surface::mcp::TmwsServer;

/// The default address of `tmws serve`.
pub const DEFAULT_ADDR: &str = "127.0.0.1:3456";
/// Larger request bodies are refused with 413.
pub const MAX_BODY: usize = 1 << 20;
/// How long a graceful shutdown may take before the server stops anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Parses `--addr`: an IP address and port, or a host name that resolves locally.
pub fn parse_addr(text: &str) -> Result<SocketAddr> {
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    text.to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| Error::Usage(format!("--addr {text}: not an address and port such as {DEFAULT_ADDR}")))
}

#[derive(Debug, Clone)]
struct AppState {
    engine: Engine,
    guard: std::sync::Arc<guard::Guard>,
    /// The web view's sessions and charts (`ui/`).
    ui: Arc<ui::Ui>,
}

/// An error answer: a status and a JSON body `{error, category, hint?}`.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    answer: ErrorAnswer,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        let category = match status.as_u16() {
            404 => Category::NotFound,
            400 | 401 | 403 | 405 | 413 => Category::Usage,
            _ => Category::Environment,
        };
        ApiError { status, answer: ErrorAnswer { error: message.into(), category, hint: None } }
    }

    fn hint(mut self, hint: impl Into<String>) -> ApiError {
        self.answer.hint = Some(hint.into());
        self
    }

    fn of(engine: &Engine, e: &Error) -> ApiError {
        let status = StatusCode::from_u16(e.category().http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        ApiError { status, answer: engine.error_answer(e) }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_value(&self.answer).unwrap_or_default();
        let mut response = (self.status, json_body(&body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

fn json_body(v: &serde_json::Value) -> ([(header::HeaderName, HeaderValue); 1], String) {
    ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], format!("{v}\n"))
}

/// The arguments of a query string: a parameter given twice is a list.
fn query_args(uri: &Uri) -> std::result::Result<Map<String, Value>, ApiError> {
    let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(uri)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, format!("query string: {}", e.body_text())))?;
    let mut args = Map::new();
    for (k, v) in pairs {
        match args.get_mut(&k) {
            Some(Value::Array(list)) => list.push(Value::String(v)),
            Some(one) => *one = Value::Array(vec![one.take(), Value::String(v)]),
            None => {
                args.insert(k, Value::String(v));
            }
        }
    }
    Ok(args)
}

/// Runs `tool` with `args` and answers with its text: YAML, or JSON when `format=json` or
/// when the client accepts JSON first (docs/answers.md).
async fn run(
    app: &AppState,
    (headers, agent): (&HeaderMap, Option<&TokenAgent>),
    tool: &'static dyn Tool,
    mut args: Map<String, Value>,
) -> Response {
    if !args.contains_key("format") {
        let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
        if accept.split(',').next().is_some_and(|first| first.trim().starts_with("application/json")) {
            args.insert("format".into(), Value::from("json"));
        }
    }
    let session = app.engine.request_session(agent.and_then(|a| a.0.as_deref()));
    match app.engine.call_tool(&session, tool, args).await {
        Ok(Output::Text { text, format: Format::Json, .. }) => {
            ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], format!("{text}\n"))
                .into_response()
        }
        Ok(Output::Text { text, format: Format::Yaml, .. }) => {
            ([(header::CONTENT_TYPE, HeaderValue::from_static("application/yaml; charset=utf-8"))], text)
                .into_response()
        }
        Ok(Output::Downstream(called)) => json_body(&called.result).into_response(),
        Err(e) => ApiError::of(&app.engine, &e).into_response(),
    }
}

/// A request to a tool's route: its parameters from the query string, the path's
/// `{param}` segments and, for POST, the JSON object in the body.
async fn tool_route(
    app: AppState,
    route: &'static catalog::Route,
    tool: &'static dyn Tool,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let mut args = match query_args(&parts.uri) {
        Ok(args) => args,
        Err(e) => return e.into_response(),
    };
    for (name, value) in path_params(route.path, parts.uri.path()) {
        args.insert(name.to_owned(), Value::String(value));
    }
    if route.method == catalog::Method::Post {
        let example = route.example.unwrap_or("POST a JSON object");
        let body = match body.collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) => {
                return ApiError::new(StatusCode::BAD_REQUEST, format!("cannot read the body: {e}")).into_response();
            }
        };
        match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Object(fields)) => args.extend(fields),
            Ok(_) => {
                return ApiError::new(StatusCode::BAD_REQUEST, "body: not a JSON object").hint(example).into_response();
            }
            Err(e) => {
                return ApiError::new(StatusCode::BAD_REQUEST, format!("body: {e}")).hint(example).into_response();
            }
        }
    }
    run(&app, (&parts.headers, parts.extensions.get::<TokenAgent>()), tool, args).await
}

/// The values of the `{param}` segments of `template` in `path`, percent-decoded.
fn path_params(template: &'static str, path: &str) -> Vec<(&'static str, String)> {
    template
        .split('/')
        .zip(path.split('/'))
        .filter_map(|(t, p)| {
            let name = t.strip_prefix('{')?.strip_suffix('}')?;
            let value = percent_encoding::percent_decode_str(p).decode_utf8_lossy().into_owned();
            Some((name, value))
        })
        .collect()
}

/// Whether `path` is one of `template`'s (a `{param}` segment matches any one segment).
fn matches_template(template: &str, path: &str) -> bool {
    let (t, p): (Vec<&str>, Vec<&str>) = (template.split('/').collect(), path.split('/').collect());
    t.len() == p.len()
        && t.iter().zip(&p).all(|(t, p)| (t.starts_with('{') && t.ends_with('}') && !p.is_empty()) || t == p)
}

/// The routes of `path`: those spelled as it is, else those whose template it matches
/// (a literal route wins over a `{param}` one, as the router decides).
fn routes_of(known: &[&'static catalog::Route], path: &str) -> Vec<&'static catalog::Route> {
    let exact: Vec<_> = known.iter().copied().filter(|r| r.path == path).collect();
    if !exact.is_empty() {
        return exact;
    }
    known.iter().copied().filter(|r| matches_template(r.path, path)).collect()
}

/// Every route of the tool table.
fn table_routes() -> Vec<&'static catalog::Route> {
    catalog::routes().map(|(r, _)| r).collect()
}

async fn get_health(State(app): State<AppState>) -> Response {
    let health = app.engine.health();
    let body = serde_json::json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "ready": health.ready,
        "lag_ms": health.lag_ms,
    });
    json_body(&body).into_response()
}

async fn get_metrics(State(app): State<AppState>) -> Response {
    let text = app.engine.metrics_text();
    ([(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"))], text)
        .into_response()
}

/// A route that exists, asked with a method it does not take: the JSON error every other
/// error has, not axum's empty 405.
async fn wrong_method(known: Arc<[&'static catalog::Route]>, request: Request) -> ApiError {
    let path = request.uri().path().to_owned();
    let mut methods: Vec<catalog::Method> = routes_of(&known, &path).iter().map(|r| r.method).collect();
    methods.sort_unstable();
    let allowed = if methods.is_empty() {
        "GET".to_owned()
    } else {
        methods.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", ")
    };
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, format!("{} is not a method of {path}", request.method()))
        .hint(format!("{path} takes {allowed}"))
}

/// rmcp answers a client's `DELETE /mcp` (ending its session) with 202, which clients
/// take for a failure (the Python SDK logs "Session termination failed: 202"): the
/// session is ended, so it is 200.
async fn session_ended_is_ok(request: Request, next: Next) -> Response {
    let ends_session = request.method() == axum::http::Method::DELETE && request.uri().path() == "/mcp";
    let mut response = next.run(request).await;
    if ends_session && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}

/// The routes that are not a tool's.
const OWN_ROUTES: [&str; 4] = ["GET /health", "GET /metrics", "/mcp", "GET /ui"];

async fn not_found(known: Arc<[&'static catalog::Route]>, request: Request) -> ApiError {
    let routes: Vec<String> = known
        .iter()
        .map(|r| format!("{} {}{}", r.method.as_str(), r.path, r.asks))
        .chain(OWN_ROUTES.iter().map(|r| (*r).to_owned()))
        .collect();
    ApiError::new(StatusCode::NOT_FOUND, format!("no route {} {}", request.method(), request.uri().path()))
        .hint(format!("routes: {}", routes.join(", ")))
}

/// 413 for a body over `MAX_BODY`, whether announced by `Content-Length` or streamed.
async fn limit_body(request: Request, next: Next) -> Response {
    let too_large =
        || ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, format!("request body over {MAX_BODY} bytes")).into_response();
    let announced =
        request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > MAX_BODY as u64) {
        return too_large();
    }
    let (parts, body) = request.into_parts();
    let bytes = match Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => return too_large(),
        Err(e) => return ApiError::new(StatusCode::BAD_REQUEST, format!("cannot read the body: {e}")).into_response(),
    };
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// Counts each request by route and status for `/metrics`: by the route's template
/// (`/memory/{id}`), so that ids do not make a label each.
async fn count(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let route = match routes_of(&table_routes(), path).first() {
        Some(r) => r.path,
        None if path == "/health" => "/health",
        None if path == "/metrics" => "/metrics",
        None if path == "/mcp" || path.starts_with("/mcp/") => "/mcp",
        None if ui::is_ui(path) => "/ui",
        None => "other",
    };
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    app.engine.count_request(route, response.status().as_u16());
    app.ui.record(started.elapsed(), app.engine.health().lag_ms);
    response
}

/// A route for each of `routes`, running its tool, then `more` routes; a request to no
/// route, or with a method its route does not take, is answered with the routes there are.
fn tool_routes(
    mut router: Router<AppState>,
    routes: impl Iterator<Item = (&'static catalog::Route, &'static dyn Tool)>,
    more: impl FnOnce(Router<AppState>) -> Router<AppState>,
) -> Router<AppState> {
    let routes: Vec<_> = routes.collect();
    let known: Arc<[&'static catalog::Route]> = routes.iter().map(|(r, _)| *r).collect();
    let mut paths: Vec<&'static str> = routes.iter().map(|(r, _)| r.path).collect();
    paths.sort_unstable();
    paths.dedup();
    for path in paths {
        let mut methods = MethodRouter::new();
        for &(route, tool) in routes.iter().filter(|(r, _)| r.path == path) {
            let handler = move |State(app): State<AppState>, request: Request| tool_route(app, route, tool, request);
            methods = match route.method {
                catalog::Method::Get => methods.get(handler),
                catalog::Method::Post => methods.post(handler),
                catalog::Method::Delete => methods.delete(handler),
            };
        }
        router = router.route(path, methods);
    }
    let also = known.clone();
    // After every route: the fallback of a wrong method is set on the routes made so far.
    more(router)
        .fallback(move |request: Request| not_found(known.clone(), request))
        .method_not_allowed_fallback(move |request: Request| wrong_method(also.clone(), request))
}

/// The whole application: routes, `/mcp`, and the layers (count → guard → body limit).
fn app(engine: Engine, guard: guard::Guard, token: &str, mcp_config: StreamableHttpServerConfig) -> Router {
    let state =
        AppState { engine: engine.clone(), guard: std::sync::Arc::new(guard), ui: Arc::new(ui::Ui::new(token)) };
    // The guard checks `Host` for every route, `/mcp` included, by one rule.
    let mcp = StreamableHttpService::new(
        move || Ok(TmwsServer::new(engine.clone(), "http")),
        LocalSessionManager::default().into(),
        mcp_config.disable_allowed_hosts().with_max_request_body_bytes(MAX_BODY),
    );
    tool_routes(Router::new(), catalog::routes(), |router| {
        ui::routes(
            router.route("/health", get(get_health)).route("/metrics", get(get_metrics)).nest_service("/mcp", mcp),
        )
    })
    .layer(middleware::from_fn(session_ended_is_ok))
    .layer(middleware::from_fn(limit_body))
    .layer(middleware::from_fn_with_state(state.clone(), guard::check))
    .layer(middleware::from_fn_with_state(state.clone(), count))
    .with_state(state)
}

/// What `tmws serve` tells its caller once it listens.
#[derive(Debug, Clone)]
pub struct Listening {
    pub addr: SocketAddr,
    pub token_source: TokenSource,
}

/// Runs `tmws serve` on `addr` until SIGINT or SIGTERM; `on_listening` is called once the
/// port is bound. With `agent`, every request writes and verifies as that name (`--agent`).
pub fn serve(root: &Path, addr: SocketAddr, agent: Option<&str>, on_listening: impl FnOnce(&Listening)) -> Result<()> {
    let loopback = addr.ip().is_loopback();
    // The engine first: it sets aside a cache that a repository brought, token included.
    let engine = Engine::serve(root)?;
    if let Some(agent) = agent {
        engine.set_agent(agent)?;
    }
    let (token, token_source) = resolve_token(root, std::env::var("TMWS_TOKEN").ok(), loopback)?;
    let agents = agent_tokens(root, &token)?;
    if !agents.is_empty() {
        let names: Vec<&str> = agents.iter().map(|a| &*a.agent).collect();
        tracing::info!("tokens bound to agents: {}", names.join(", "));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::environment("cannot start the async runtime", e))?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(addr))
        .map_err(|e| Error::environment(format!("cannot listen on {addr}"), e))?;
    let bound = listener.local_addr().map_err(|e| Error::environment(format!("cannot listen on {addr}"), e))?;
    let signals = {
        let _guard = runtime.enter();
        crate::surface::Signals::listen()?
    };
    let mcp_config = StreamableHttpServerConfig::default();
    let sessions = mcp_config.cancellation_token.clone();
    let router = app(engine.clone(), guard::Guard::new(bound, &token).with_agents(&agents), &token, mcp_config);
    on_listening(&Listening { addr: bound, token_source });
    runtime.block_on(async move {
        let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
        let stop = async move {
            let _ = signals.recv().await;
            tracing::info!("stopping: closing MCP sessions and finishing requests");
            sessions.cancel();
            let _ = stopping_tx.send(());
        };
        tokio::select! {
            () = listen::serve(listener, router, stop) => {}
            () = async {
                let _ = stopping_rx.await;
                tokio::time::sleep(SHUTDOWN_GRACE).await;
            } => tracing::warn!("connections still open after {SHUTDOWN_GRACE:?}: stopping anyway"),
        }
    });
    // The MCP sessions of stateless clients end with the server: each is recorded.
    let ending = engine.clone();
    let _ = runtime.block_on(async move { tokio::task::spawn_blocking(move || ending.end_sessions()).await });
    runtime.block_on(engine.shutdown());
    runtime.shutdown_timeout(Duration::from_secs(1));
    Ok(())
}

#[cfg(test)]
mod tests {
    use tower::ServiceExt;

    use super::*;
    use crate::surface::tests::{PING, Ping, root};

    #[test]
    fn a_tool_in_the_table_is_a_route_that_runs_it() {
        let (_dir, engine) = root();
        let guard = guard::Guard::new("127.0.0.1:1".parse().unwrap(), "t");
        let state = AppState { engine, guard: std::sync::Arc::new(guard), ui: Arc::new(ui::Ui::new("t")) };
        let router = tool_routes(Router::new(), PING.http.iter().map(|r| (r, &Ping as &'static dyn Tool)), |r| r)
            .with_state(state);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let ask = |method: &str, uri: &str| {
            let request = Request::builder().method(method).uri(uri).body(Body::empty()).unwrap();
            runtime.block_on(async {
                let response = router.clone().oneshot(request).await.unwrap();
                let status = response.status().as_u16();
                let body = response.into_body().collect().await.unwrap().to_bytes();
                (status, String::from_utf8(body.to_vec()).unwrap())
            })
        };
        assert_eq!(
            ask("GET", "/ping?word=hi&format=json"),
            (200, "{\n  \"said\": \"hi\",\n  \"root_has_tmws\": true\n}\n".into())
        );
        let (status, body) = ask("POST", "/ping?word=hi");
        assert_eq!(status, 405, "{body}");
        let (status, body) = ask("GET", "/nowhere");
        assert_eq!(status, 404);
        assert!(body.contains("GET /ping"), "the 404 lists the table's routes: {body}");
    }
}
