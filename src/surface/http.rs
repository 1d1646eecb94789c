//! `tmws serve`: REST routes and MCP streamable HTTP on one port (DESIGN §7.3).
//!
//! Every route but `/health` needs `Authorization: Bearer <token>`. The token is
//! `TMWS_TOKEN`, else `.tmws/cache/token`, which the first start on a loopback address
//! creates (mode 0600). A non-loopback address is refused unless a token exists. Request
//! bodies over 1 MiB get 413. SIGINT or SIGTERM stops the server gracefully: open MCP
//! sessions are closed, requests in flight finish, the watcher commits.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde::Deserialize;

use crate::error::{Error, Result};
use crate::index::SearchRequest;
use crate::layout::TOKEN_FILE;
use crate::model::DocKind;
use crate::query::context::{self, ContextRequest, Format};
use crate::store;
use crate::surface::mcp::TmwsServer;
use crate::surface::service::Service;

/// The default address of `tmws serve`.
pub const DEFAULT_ADDR: &str = "127.0.0.1:3456";
/// Larger request bodies are refused with 413.
pub const MAX_BODY: usize = 1 << 20;
/// How long a graceful shutdown may take before the server stops anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Where the bearer token came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenSource {
    /// `TMWS_TOKEN`.
    Env,
    /// `.tmws/cache/token`, as it was.
    File,
    /// `.tmws/cache/token`, created by this start.
    Created,
}

/// The bearer token for a server bound to a loopback address (`loopback`) or not.
pub fn resolve_token(root: &Path, env: Option<String>, loopback: bool) -> Result<(String, TokenSource)> {
    if let Some(token) = env.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()) {
        return Ok((token, TokenSource::Env));
    }
    let path = root.join(TOKEN_FILE);
    if let Some(text) = store::read_text_opt(&path)? {
        let token = text.trim().to_owned();
        if token.is_empty() {
            return Err(Error::Usage(format!(
                "{}: the token file is empty; delete it to have a new one made",
                path.display()
            )));
        }
        return Ok((token, TokenSource::File));
    }
    if !loopback {
        return Err(Error::Usage(
            "refusing to serve on a non-loopback address without a token: set TMWS_TOKEN, or start once on \
127.0.0.1 to create .tmws/cache/token"
                .into(),
        ));
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| Error::Environment(format!("cannot make a token: {e}")))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    if store::create_private(&path, format!("{token}\n").as_bytes())? {
        Ok((token, TokenSource::Created))
    } else {
        // Another server made it first: use theirs.
        resolve_token(root, None, loopback)
    }
}

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
    service: Service,
    /// `Bearer <token>`, as the header must read.
    expected: String,
}

/// An error answer: a status and a JSON body `{error, hint?}`.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    message: String,
    hint: Option<String>,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError { status, message: message.into(), hint: None }
    }

    fn hint(mut self, hint: impl Into<String>) -> ApiError {
        self.hint = Some(hint.into());
        self
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        let status = StatusCode::from_u16(e.category().http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        ApiError { status, message: e.to_string(), hint: e.hint().map(str::to_owned) }
    }
}

impl From<QueryRejection> for ApiError {
    fn from(e: QueryRejection) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, e.body_text())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = serde_json::json!({ "error": self.message });
        if let Some(hint) = self.hint {
            body["hint"] = hint.into();
        }
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

/// The answer format: `format=` when given, else JSON when the client accepts only JSON
/// first, else YAML (DESIGN §4).
fn answer_format(format: Option<&str>, headers: &HeaderMap) -> std::result::Result<Format, ApiError> {
    match format {
        Some("yaml") => Ok(Format::Yaml),
        Some("json") => Ok(Format::Json),
        Some(other) => {
            Err(ApiError::new(StatusCode::BAD_REQUEST, format!("unknown format `{other}`; use yaml or json")))
        }
        None => {
            let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
            let wants_json = accept.split(',').next().is_some_and(|first| first.trim().starts_with("application/json"));
            Ok(if wants_json { Format::Json } else { Format::Yaml })
        }
    }
}

fn answer(v: &serde_json::Value, format: Format) -> Response {
    let (kind, text) = match format {
        Format::Yaml => ("application/yaml; charset=utf-8", context::render(v, format)),
        Format::Json => ("application/json", format!("{}\n", context::render(v, format))),
    };
    ([(header::CONTENT_TYPE, HeaderValue::from_static(kind))], text).into_response()
}

/// A comma-separated list parameter.
fn list(param: Option<String>) -> Vec<String> {
    param
        .map(|p| p.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// A `true`/`false` parameter.
fn flag(name: &str, param: Option<&str>) -> std::result::Result<Option<bool>, ApiError> {
    match param {
        None => Ok(None),
        Some("true" | "1") => Ok(Some(true)),
        Some("false" | "0") => Ok(Some(false)),
        Some(other) => Err(ApiError::new(StatusCode::BAD_REQUEST, format!("{name}={other}: use true or false"))),
    }
}

/// `GET /workspace/context`: the parameters of DESIGN §4.1, lists comma-separated.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ContextQuery {
    workspace: Option<String>,
    domain: Option<String>,
    repository: Option<String>,
    topics: Option<String>,
    include_defaults: Option<String>,
    filter_status: Option<String>,
    filter_tags: Option<String>,
    filter_category: Option<String>,
    format: Option<String>,
    max_chars: Option<usize>,
}

async fn get_context(
    State(app): State<AppState>,
    headers: HeaderMap,
    query: std::result::Result<Query<ContextQuery>, QueryRejection>,
) -> std::result::Result<Response, ApiError> {
    let Query(q) = query?;
    let format = answer_format(q.format.as_deref(), &headers)?;
    let workspace = q.workspace.ok_or_else(|| {
        ApiError::new(StatusCode::BAD_REQUEST, "missing parameter `workspace`")
            .hint("GET /workspace/context?workspace=NAME[&domain=D&repository=R&topics=a,b]")
    })?;
    let req = ContextRequest {
        workspace,
        domain: q.domain,
        repository: q.repository,
        topics: list(q.topics),
        include_defaults: flag("include_defaults", q.include_defaults.as_deref())?.unwrap_or(true),
        filter_status: list(q.filter_status),
        filter_tags: list(q.filter_tags),
        filter_category: q.filter_category,
        max_chars: q.max_chars,
    };
    let v = app.service.context(&req).await?;
    Ok(answer(&v, format))
}

/// `GET /workspace/search`: the parameters of DESIGN §4.2, lists comma-separated.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchQuery {
    query: Option<String>,
    scope: Option<String>,
    topics: Option<String>,
    kinds: Option<String>,
    filter_status: Option<String>,
    filter_tags: Option<String>,
    limit: Option<usize>,
    format: Option<String>,
}

async fn get_search(
    State(app): State<AppState>,
    headers: HeaderMap,
    query: std::result::Result<Query<SearchQuery>, QueryRejection>,
) -> std::result::Result<Response, ApiError> {
    let Query(q) = query?;
    let format = answer_format(q.format.as_deref(), &headers)?;
    let text = q.query.ok_or_else(|| {
        ApiError::new(StatusCode::BAD_REQUEST, "missing parameter `query`").hint("GET /workspace/search?query=WORDS")
    })?;
    let req = SearchRequest {
        query: text,
        scope: q.scope,
        topics: list(q.topics),
        kinds: DocKind::parse_all(&list(q.kinds))?,
        status: list(q.filter_status),
        tags: list(q.filter_tags),
        limit: q.limit.unwrap_or(10).clamp(1, 100),
        ..SearchRequest::default()
    };
    let v = app.service.search(&req).await?;
    Ok(answer(&v, format))
}

/// `POST /memory`: the parameters of `memory_add` as a JSON object.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MemoryAddBody {
    content: String,
    namespace: Option<String>,
    summary: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    source: Option<String>,
    kind: Option<String>,
    key: Option<String>,
    importance: Option<f64>,
    agent: Option<String>,
}

/// `?format=` alone.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FormatQuery {
    format: Option<String>,
}

async fn post_memory(
    State(app): State<AppState>,
    headers: HeaderMap,
    query: std::result::Result<Query<FormatQuery>, QueryRejection>,
    body: axum::body::Bytes,
) -> std::result::Result<Response, ApiError> {
    let Query(q) = query?;
    let format = answer_format(q.format.as_deref(), &headers)?;
    let b: MemoryAddBody = serde_json::from_slice(&body).map_err(|e| {
        ApiError::new(StatusCode::BAD_REQUEST, format!("body: {e}"))
            .hint("POST a JSON object such as {\"content\": \"…\", \"namespace\": \"long-term\"}")
    })?;
    let req = crate::query::memory::AddRequest {
        content: b.content,
        namespace: b.namespace,
        summary: b.summary,
        tags: b.tags,
        source: b.source,
        kind: b.kind,
        key: b.key,
        importance: b.importance,
        agent: b.agent,
        extra: serde_json::Map::new(),
    };
    Ok(answer(&app.service.memory_add(&req)?, format))
}

/// `GET /memory/search`: the parameters of `memory_search`, lists comma-separated.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MemorySearchQuery {
    query: Option<String>,
    namespace: Option<String>,
    tags: Option<String>,
    kind: Option<String>,
    branch: Option<String>,
    limit: Option<usize>,
    min_score: Option<f64>,
    include_content: Option<String>,
    format: Option<String>,
}

async fn get_memory_search(
    State(app): State<AppState>,
    headers: HeaderMap,
    query: std::result::Result<Query<MemorySearchQuery>, QueryRejection>,
) -> std::result::Result<Response, ApiError> {
    let Query(q) = query?;
    let format = answer_format(q.format.as_deref(), &headers)?;
    let text = q.query.ok_or_else(|| {
        ApiError::new(StatusCode::BAD_REQUEST, "missing parameter `query`").hint("GET /memory/search?query=WORDS")
    })?;
    let req = crate::query::memory::MemorySearch {
        query: text,
        namespace: q.namespace,
        tags: list(q.tags),
        kind: q.kind,
        branch: q.branch,
        limit: q.limit,
        min_score: q.min_score,
        include_content: flag("include_content", q.include_content.as_deref())?.unwrap_or(false),
    };
    Ok(answer(&app.service.memory_search(&req).await?, format))
}

/// `GET /memory/{id}`'s query.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MemoryGetQuery {
    include_content: Option<String>,
    format: Option<String>,
}

async fn get_memory(
    State(app): State<AppState>,
    headers: HeaderMap,
    axum::extract::Path(id): axum::extract::Path<String>,
    query: std::result::Result<Query<MemoryGetQuery>, QueryRejection>,
) -> std::result::Result<Response, ApiError> {
    let Query(q) = query?;
    let format = answer_format(q.format.as_deref(), &headers)?;
    let content = flag("include_content", q.include_content.as_deref())?.unwrap_or(false);
    Ok(answer(&app.service.memory_get(&id, content).await?, format))
}

async fn delete_memory(
    State(app): State<AppState>,
    headers: HeaderMap,
    axum::extract::Path(id): axum::extract::Path<String>,
    query: std::result::Result<Query<FormatQuery>, QueryRejection>,
) -> std::result::Result<Response, ApiError> {
    let Query(q) = query?;
    let format = answer_format(q.format.as_deref(), &headers)?;
    Ok(answer(&app.service.memory_delete(&id).await?, format))
}

async fn get_memory_stats(
    State(app): State<AppState>,
    headers: HeaderMap,
    query: std::result::Result<Query<FormatQuery>, QueryRejection>,
) -> std::result::Result<Response, ApiError> {
    let Query(q) = query?;
    let format = answer_format(q.format.as_deref(), &headers)?;
    Ok(answer(&app.service.memory_stats().await?, format))
}

async fn get_health(State(app): State<AppState>) -> Response {
    let state = app.service.state();
    let body = serde_json::json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "ready": state.is_ready(),
        "lag_ms": u64::try_from(state.lag().as_millis()).unwrap_or(u64::MAX),
    });
    json_body(&body).into_response()
}

async fn get_metrics(State(app): State<AppState>) -> Response {
    let text = app.service.metrics_text();
    ([(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"))], text)
        .into_response()
}

async fn not_found(request: Request) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, format!("no route {} {}", request.method(), request.uri().path()))
        .hint("routes: /workspace/context, /workspace/search, /health, /metrics, /mcp")
}

/// Compares without stopping at the first difference, so timing tells nothing of the token.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 401 without the right bearer token (but on `/health`).
async fn require_token(State(app): State<AppState>, request: Request, next: Next) -> Response {
    if request.uri().path() == "/health" {
        return next.run(request).await;
    }
    let given = request.headers().get(header::AUTHORIZATION).map(HeaderValue::as_bytes).unwrap_or_default();
    if !same(given, app.expected.as_bytes()) {
        return ApiError::new(StatusCode::UNAUTHORIZED, "missing or wrong bearer token")
            .hint(format!("send `Authorization: Bearer TOKEN`; the token is TMWS_TOKEN or the content of {TOKEN_FILE}"))
            .into_response();
    }
    next.run(request).await
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

/// Counts each request by route and status for `/metrics`.
async fn count(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let route = match request.uri().path() {
        "/workspace/context" => "/workspace/context",
        "/workspace/search" => "/workspace/search",
        "/health" => "/health",
        "/metrics" => "/metrics",
        p if p == "/mcp" || p.starts_with("/mcp/") => "/mcp",
        p if p == "/memory" || p.starts_with("/memory/") => "/memory",
        _ => "other",
    };
    let response = next.run(request).await;
    app.service.metrics().count_request(route, response.status().as_u16());
    response
}

/// The whole application: routes, `/mcp`, and the layers (count → token → body limit).
fn app(service: Service, token: &str, loopback: bool, mcp_config: StreamableHttpServerConfig) -> Router {
    let state = AppState { service: service.clone(), expected: format!("Bearer {token}") };
    let mcp_config = if loopback { mcp_config } else { mcp_config.disable_allowed_hosts() };
    let mcp = StreamableHttpService::new(
        move || Ok(TmwsServer::new(service.clone())),
        LocalSessionManager::default().into(),
        mcp_config.with_max_request_body_bytes(MAX_BODY),
    );
    Router::new()
        .route("/workspace/context", get(get_context))
        .route("/workspace/search", get(get_search))
        .route("/memory", axum::routing::post(post_memory))
        .route("/memory/search", get(get_memory_search))
        .route("/memory/stats", get(get_memory_stats))
        .route("/memory/{id}", get(get_memory).delete(delete_memory))
        .route("/health", get(get_health))
        .route("/metrics", get(get_metrics))
        .nest_service("/mcp", mcp)
        .fallback(not_found)
        .layer(middleware::from_fn(limit_body))
        .layer(middleware::from_fn_with_state(state.clone(), require_token))
        .layer(middleware::from_fn_with_state(state.clone(), count))
        .with_state(state)
}

/// SIGINT and SIGTERM, listened for from the moment this is made (so a signal that comes
/// right after the server says it listens is not lost to the default action).
struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    /// Must run inside the runtime.
    fn listen() -> Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let err = |e: std::io::Error| Error::Environment(format!("cannot listen for signals: {e}"));
            Ok(Signals {
                interrupt: signal(SignalKind::interrupt()).map_err(err)?,
                terminate: signal(SignalKind::terminate()).map_err(err)?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// Resolves at the first SIGINT or SIGTERM.
    async fn recv(mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// What `tmws serve` tells its caller once it listens.
#[derive(Debug, Clone)]
pub struct Listening {
    pub addr: SocketAddr,
    pub token_source: TokenSource,
}

/// Runs `tmws serve` on `addr` until SIGINT or SIGTERM; `on_listening` is called once the
/// port is bound.
pub fn serve(root: &Path, addr: SocketAddr, on_listening: impl FnOnce(&Listening)) -> Result<()> {
    let loopback = addr.ip().is_loopback();
    let (token, token_source) = resolve_token(root, std::env::var("TMWS_TOKEN").ok(), loopback)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Environment(format!("cannot start the async runtime: {e}")))?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(addr))
        .map_err(|e| Error::Environment(format!("cannot listen on {addr}: {e}")))?;
    let bound = listener.local_addr().map_err(|e| Error::Environment(format!("cannot listen on {addr}: {e}")))?;
    let signals = {
        let _guard = runtime.enter();
        Signals::listen()?
    };
    let (service, background) = Service::start(root)?;
    let mcp_config = StreamableHttpServerConfig::default();
    let sessions = mcp_config.cancellation_token.clone();
    let pool = service.pool().clone();
    let router = app(service, &token, loopback, mcp_config);
    on_listening(&Listening { addr: bound, token_source });
    let result = runtime.block_on(async move {
        let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
        let server = axum::serve(listener, router).with_graceful_shutdown(async move {
            signals.recv().await;
            tracing::info!("stopping: closing MCP sessions and finishing requests");
            sessions.cancel();
            let _ = stopping_tx.send(());
        });
        let server = std::pin::pin!(server.into_future());
        tokio::select! {
            r = server => r.map_err(|e| Error::Environment(format!("serve: {e}"))),
            () = async {
                let _ = stopping_rx.await;
                tokio::time::sleep(SHUTDOWN_GRACE).await;
            } => {
                tracing::warn!("connections still open after {SHUTDOWN_GRACE:?}: stopping anyway");
                Ok(())
            }
        }
    });
    runtime.block_on(pool.shutdown());
    background.stop();
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}
