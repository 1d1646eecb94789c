//! The MCP surface (docs/surfaces.md): the engine's tool catalogue over MCP, and `tmws mcp`,
//! which serves it over stdio.
//!
//! `tools/list` is the catalogue, each tool's input schema made from its request type and
//! its output schema from its answer type; `tools/call` hands the arguments to
//! `Engine::call` and answers the text, the same answer as structured content, and a
//! resource link for each document it names, which `resources/read` reads at
//! `tmws://ref/<refId>`. An error is a tool result with
//! `isError: true`, its message (and hint) as text and `{error, category, hint}` as
//! structured content, never a crashed server. `initialize` is answered at once: the index
//! syncs and watches in the background. stdout is the protocol, so logs go to stderr.
//! `tmws serve` serves the same handler at `/mcp`.
//!
//! Both generations of the protocol are served alike: the legacy handshake (`initialize`,
//! then a session) and the stateless one (`server/discover`, then requests that each say
//! who the client is in `_meta`). Each call finds its client session by a handle
//! (`query::Handle`): the `Mcp-Session-Id` the client sends, else the client info of the
//! request (`_meta`, else the handshake's), else a `session` argument the server minted
//! and told the client. Who the session speaks for is the server's `--agent`, else the
//! agent its HTTP token is bound to, else the name its client reports (self-reported);
//! the name rmcp gives a request whose client said nothing names no one.
//!
//! Each client session records what it did as a session entry when it ends or goes idle.
//! `tmws mcp` ends on stdin closed (exit 0), SIGINT (130) or SIGTERM (143), after
//! recording its sessions and the watcher's last commit.

use std::path::Path;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    ResultType, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

use crate::error::{Error, Result};
use crate::query::catalog::{self, Output};
use crate::query::{Engine, Handle, Session};
use crate::surface::http::TokenAgent;

/// The argument that carries a session handle the server minted.
const SESSION_ARG: &str = "session";

/// The MCP server: of one legacy HTTP session, of a stdio process, or of one stateless
/// HTTP request; the client session of each call is found by its handle.
#[derive(Debug, Clone)]
pub struct TmwsServer {
    engine: Engine,
    tools: Arc<Vec<Tool>>,
    /// `stdio` or `http`: handles of one surface never meet the other's.
    surface: &'static str,
    /// The legacy HTTP sessions this server served, ended when it is dropped (its
    /// session deleted or closed).
    served: Arc<Served>,
}

/// Handles of sessions that end with the server that served them.
#[derive(Debug, Default)]
struct Served {
    engine: Option<Engine>,
    handles: std::sync::Mutex<Vec<Handle>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let handles = std::mem::take(&mut *self.handles.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        if let Some(engine) = &self.engine {
            for h in &handles {
                engine.end_session(h);
            }
        }
    }
}

/// What a request tells of its client: the handle of its session, the agent its token is
/// bound to, the name it reports, and whether the handle was minted now.
struct Caller {
    handle: Handle,
    token_agent: Option<Arc<str>>,
    name: Option<String>,
    minted: bool,
}

/// A tool as `tools/list` gives it: name, title, description, hints, input and output
/// schemas.
pub(crate) fn listed(t: &dyn catalog::Tool, config: &crate::config::Config) -> Tool {
    let spec = t.spec();
    let annotations = ToolAnnotations::with_title(spec.title)
        .read_only(spec.hints.read_only)
        .destructive(spec.hints.destructive)
        .idempotent(spec.hints.idempotent)
        .open_world(spec.hints.open_world);
    Tool::new(spec.name, spec.description, Arc::new(t.schema(config)))
        .with_title(spec.title)
        .with_annotations(annotations)
        .with_raw_output_schema(output_schema(t))
}

/// A tool's output schema, made once per process: it depends only on the answer type, and
/// making all of them took milliseconds that every new session (one per `/mcp` client)
/// would pay again.
fn output_schema(t: &dyn catalog::Tool) -> Arc<JsonObject> {
    /// Each tool's name and output schema.
    type Made = Vec<(&'static str, Arc<JsonObject>)>;
    static MADE: std::sync::OnceLock<Made> = std::sync::OnceLock::new();
    let made =
        MADE.get_or_init(|| catalog::TOOLS.iter().map(|t| (t.spec().name, Arc::new(t.output_schema()))).collect());
    let name = t.spec().name;
    made.iter().find(|(n, _)| *n == name).map_or_else(|| Arc::new(t.output_schema()), |(_, s)| Arc::clone(s))
}

/// What a client reads a document's refId at: `tmws://ref/` and the refId, each byte but
/// the unreserved ones, `/` and `:` percent-encoded.
pub const REF_URI: &str = "tmws://ref/";

/// The MIME type of what `resources/read` gives: `workspace_read`'s answer, as YAML.
const READ_MIME: &str = "application/yaml";

/// The URI a client reads the document `ref_id` at.
pub fn ref_uri(ref_id: &str) -> String {
    let mut uri = String::from(REF_URI);
    for b in ref_id.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/:".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

/// The refId a `tmws://ref/` URI names, or why it names none: another scheme, a bad escape,
/// or a path that could leave the root (an absolute path, `.` or `..` segments, a
/// backslash, a control character).
pub fn ref_of_uri(raw: &str) -> std::result::Result<String, String> {
    // The URI as an error shows it: its start only, control characters escaped.
    let shown: String = raw.chars().take(200).flat_map(char::escape_debug).collect();
    let uri = if raw.chars().nth(200).is_some() { format!("{shown}…") } else { shown };
    let Some(rest) = raw.strip_prefix(REF_URI) else {
        return Err(format!("not a tmws document URI: `{uri}`; documents are read at {REF_URI}<refId>"));
    };
    if rest.contains(['?', '#']) {
        return Err(format!("a document URI has no query or fragment: `{uri}`"));
    }
    let mut bytes = Vec::with_capacity(rest.len());
    let mut it = rest.bytes();
    while let Some(b) = it.next() {
        if b != b'%' {
            bytes.push(b);
            continue;
        }
        let hex = [it.next(), it.next()];
        let digit = |d: Option<u8>| d.and_then(|d| char::from(d).to_digit(16));
        match hex.map(digit) {
            [Some(h), Some(l)] => bytes.push(u8::try_from(h * 16 + l).unwrap_or(0)),
            _ => return Err(format!("a bad %-escape in `{uri}`")),
        }
    }
    let ref_id = String::from_utf8(bytes).map_err(|_| format!("`{uri}` is not UTF-8 once unescaped"))?;
    if ref_id.is_empty() {
        return Err(format!("`{uri}` names no refId"));
    }
    if ref_id.starts_with('/') || ref_id.contains('\\') || ref_id.chars().any(char::is_control) {
        return Err(format!(
            "`{uri}` is not a refId: refIds are paths relative to the root, memory ids or commit:<sha>"
        ));
    }
    if ref_id.split('/').any(|s| s == "." || s == ".." || s.is_empty()) {
        return Err(format!("`{uri}` is not a refId: it has an empty, `.` or `..` segment"));
    }
    Ok(ref_id)
}

/// A document an answer names, as a resource link.
fn link(l: &catalog::Link) -> ContentBlock {
    let mut r =
        Resource::new(ref_uri(&l.ref_id), l.ref_id.clone()).with_title(l.title.clone()).with_mime_type(READ_MIME);
    if let Some(d) = &l.description {
        r = r.with_description(d.clone());
    }
    ContentBlock::resource_link(r)
}

impl TmwsServer {
    /// The server of `tmws mcp` (`surface` `stdio`) or of `/mcp` (`http`).
    pub fn new(engine: Engine, surface: &'static str) -> TmwsServer {
        let config = engine.config();
        let tools = catalog::TOOLS.iter().map(|t| listed(*t, config)).collect();
        let served = Arc::new(Served { engine: Some(engine.clone()), handles: Default::default() });
        TmwsServer { engine, tools: Arc::new(tools), surface, served }
    }

    /// Who the request comes from (see the module's doc). `args` loses its `session`.
    fn caller(
        &self,
        context: &RequestContext<RoleServer>,
        args: &mut serde_json::Map<String, serde_json::Value>,
    ) -> std::result::Result<Caller, ErrorData> {
        let parts = context.extensions.get::<axum::http::request::Parts>();
        let token_agent = parts.and_then(|p| p.extensions.get::<TokenAgent>()).and_then(|a| a.0.clone());
        let session_id = parts
            .and_then(|p| p.headers.get("mcp-session-id"))
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
            .map(str::to_owned);
        // Over HTTP a request without a session id is stateless: the handshake info rmcp
        // shows for it is made up (its own name), not the client's.
        let handshake = if parts.is_some() && session_id.is_none() {
            None
        } else {
            context.peer.peer_info().map(|i| i.client_info.clone())
        };
        let info = context.meta.client_info().or(handshake);
        let name = info.as_ref().map(|i| i.name.clone());
        let given = match args.remove(SESSION_ARG) {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(s)) if is_minted(&s) => Some(s),
            Some(_) => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "`{SESSION_ARG}` is a handle this server gave (s_ and 32 hex digits); leave it out otherwise"
                    ),
                    None,
                ));
            }
        };
        let (handle, minted) = if let Some(id) = session_id {
            (Handle::Id(id), false)
        } else if let Some(given) = given {
            (Handle::Minted(given), false)
        } else if let Some(info) = info {
            let agent = token_agent.as_deref().map(str::to_owned);
            (Handle::Client { surface: self.surface, agent, name: info.name, version: info.version }, false)
        } else {
            (Handle::Minted(mint()), true)
        };
        Ok(Caller { handle, token_agent, name, minted })
    }

    /// The client session of `caller`.
    fn session_of(&self, caller: &Caller) -> Session {
        let session = self.engine.client_session_of(caller.handle.clone(), caller.token_agent.as_deref());
        if let Some(name) = &caller.name {
            session.set_client(name);
        }
        if matches!(caller.handle, Handle::Id(_)) {
            let mut handles = self.served.handles.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if !handles.contains(&caller.handle) {
                handles.push(caller.handle.clone());
            }
        }
        session
    }

    fn error(&self, e: &Error) -> CallToolResult {
        let answer = self.engine.error_answer(e);
        let mut text = answer.error.clone();
        if let Some(hint) = &answer.hint {
            text.push_str("\nhint: ");
            text.push_str(hint);
        }
        let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
        result.structured_content = serde_json::to_value(&answer).ok();
        result
    }
}

impl ServerHandler for TmwsServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("tmws", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.engine.instructions())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::default())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourceTemplatesResult, ErrorData> {
        let template = ResourceTemplate::new(format!("{REF_URI}{{+refId}}"), "document")
            .with_title("A document, memory or commit by its refId")
            .with_description(
                "What workspace_read gives for the refId (a document's path from the root, a memory's id, \
commit:<sha>), as YAML; search results offer each as a link.",
            )
            .with_mime_type(READ_MIME);
        Ok(ListResourceTemplatesResult::with_all_items(vec![template]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ReadResourceResponse, ErrorData> {
        self.read_document(&request.uri, &context).await.map(ReadResourceResponse::from)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        if catalog::find(&request.name).is_none() {
            return Err(ErrorData::invalid_params(format!("no tool `{}`", request.name), None));
        }
        let mut args = request.arguments.unwrap_or_default();
        let caller = self.caller(&context, &mut args)?;
        let session = self.session_of(&caller);
        // A cancelled request stops waiting: a downstream call is cancelled in turn and its
        // connection is free again at once.
        let answer = tokio::select! {
            answer = self.engine.call(&session, &request.name, args) => answer,
            () = context.ct.cancelled() => return Ok(CallToolResult::error(vec![ContentBlock::text("cancelled")]).into()),
        };
        let mut result = match answer {
            // The text, the same answer as structured content, and the documents it names as
            // links a client reads with resources/read.
            Ok(Output::Text { text, answer, links, .. }) => {
                let content = std::iter::once(ContentBlock::text(text)).chain(links.iter().map(link)).collect();
                let mut result = CallToolResult::success(content);
                result.structured_content = Some(serde_json::Value::Object(answer));
                result
            }
            Ok(Output::Downstream(called)) => {
                let structured = called.structured();
                match serde_json::from_value::<CallToolResult>(called.result) {
                    Ok(mut result) => {
                        result.structured_content = Some(serde_json::Value::Object(structured));
                        // The other server may speak an older protocol, whose results have no
                        // `resultType`; this result is tmws' own, complete (rmcp leaves the
                        // field out again for a client of an older protocol).
                        result.result_type.get_or_insert(ResultType::COMPLETE);
                        result
                    }
                    Err(e) => self.error(&Error::Downstream(format!("the server's result does not parse: {e}"))),
                }
            }
            Err(e) => self.error(&e),
        };
        if caller.minted
            && let Handle::Minted(handle) = &caller.handle
        {
            // A client that says nothing of itself is told the handle of its session.
            result.content.push(ContentBlock::text(format!(
                "{SESSION_ARG}: {handle} (pass \"{SESSION_ARG}\": \"{handle}\" with your next calls: they are one session)"
            )));
        }
        Ok(result.into())
    }
}

impl TmwsServer {
    /// `resources/read`: what `workspace_read` gives for the refId the URI names
    /// (docs/surfaces.md#resources). A URI that names none is invalid params; a refId the
    /// index does not hold is not found.
    async fn read_document(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> std::result::Result<ReadResourceResult, ErrorData> {
        let ref_id = ref_of_uri(uri).map_err(|e| ErrorData::invalid_params(e, None))?;
        // A read is the client session's; a client that names none gets no session (nor a
        // handle) for it.
        let caller = self.caller(context, &mut serde_json::Map::new())?;
        let session = if caller.minted {
            self.engine.request_session(caller.token_agent.as_deref())
        } else {
            self.session_of(&caller)
        };
        let args = serde_json::Map::from_iter([("ref_id".to_owned(), serde_json::Value::from(ref_id))]);
        match self.engine.call(&session, "workspace_read", args).await {
            Ok(Output::Text { text, .. }) => {
                Ok(ReadResourceResult::new(vec![ResourceContents::text(text, uri).with_mime_type(READ_MIME)]))
            }
            Ok(Output::Downstream(_)) => {
                Err(ErrorData::internal_error("workspace_read answered as another server", None))
            }
            Err(e) => {
                let answer = self.engine.error_answer(&e);
                let data = serde_json::to_value(&answer).ok();
                Err(match e.category() {
                    crate::error::Category::NotFound => ErrorData::resource_not_found(answer.error, data),
                    crate::error::Category::Usage => ErrorData::invalid_params(answer.error, data),
                    _ => ErrorData::internal_error(answer.error, data),
                })
            }
        }
    }
}

/// A new session handle: `s_` and 128 random bits in hex.
fn mint() -> String {
    let mut bytes = [0u8; 16];
    // Without randomness, the time is still a handle no other client holds.
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        bytes = nanos.to_le_bytes();
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("s_{hex}")
}

/// Whether `text` is a handle as [`mint`] makes them.
fn is_minted(text: &str) -> bool {
    text.strip_prefix("s_").is_some_and(|h| h.len() == 32 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Runs `tmws mcp` on stdin/stdout until stdin closes (exit code 0), SIGINT (130) or
/// SIGTERM (143); with `agent`, every client writes and verifies as that name (`--agent`).
/// Either way its client sessions are recorded and the watcher commits before it exits.
pub fn run_stdio(root: &Path, agent: Option<&str>) -> Result<u8> {
    let engine = Engine::serve(root)?;
    if let Some(agent) = agent {
        engine.set_agent(agent)?;
    }
    let server = TmwsServer::new(engine.clone(), "stdio");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::environment("cannot start the async runtime", e))?;
    let signals = {
        let _entered = runtime.enter();
        super::Signals::listen()?
    };
    let result = runtime.block_on(async move {
        let (transport, pumps) =
            super::stdio::capped(tokio::io::stdin(), tokio::io::stdout(), crate::parse::jsonl::MAX_LINE_BYTES);
        let serving = async move {
            let result = match server.serve(transport).await {
                Ok(service) => service.waiting().await.map(|_| ()).map_err(|e| Error::environment("mcp", e)),
                // stdin closed before a client said anything: nothing to serve, not a failure.
                Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => Ok(()),
                Err(e) => Err(Error::environment("mcp", e)),
            };
            pumps.finish().await;
            result.map(|()| 0)
        };
        // A signal stops serving at once: what the client asked last is answered or not,
        // but what its session did is recorded.
        let code = tokio::select! {
            result = serving => result,
            code = signals.recv() => {
                tracing::info!("stopping on a signal: recording the session");
                Ok(code)
            }
        };
        // stdin closed or a signal: the client sessions are over, and recorded (docs/trust.md).
        let ending = engine.clone();
        let _ = tokio::task::spawn_blocking(move || ending.end_sessions()).await;
        engine.shutdown().await;
        code
    });
    // Sessions are recorded and the watcher has committed: nothing left needs waiting for,
    // and the blocking read of stdin may wait for a line that will never come (after a
    // signal, stdin is still open). An agent that follows SIGTERM with SIGKILL soon after
    // gets a server that is gone by then.
    runtime.shutdown_background();
    result
}

#[cfg(test)]
mod tests {
    use super::{ref_of_uri, ref_uri};

    #[test]
    fn every_ref_id_reads_back_from_its_uri() {
        for ref_id in [
            "resources/workspaces/acme/_decisions/260101-postgres.md",
            "resources/workspaces/日本語/OVERVIEW.md",
            "docs/a b%c#d?e.md",
            "m_3fa9c1d2e4b5",
            "commit:4f2a9c1d2e4b5f60718293a4b5c6d7e8f9012345",
        ] {
            let uri = ref_uri(ref_id);
            assert!(!uri.contains([' ', '?', '#']), "{uri}");
            assert_eq!(ref_of_uri(&uri).as_deref(), Ok(ref_id), "{uri}");
        }
        assert_eq!(ref_uri("docs/a b.md"), "tmws://ref/docs/a%20b.md");
    }

    #[test]
    fn a_uri_that_could_leave_the_root_names_no_ref_id() {
        for uri in [
            "tmws://ref/../x",
            "tmws://ref/a/%2e%2E/b",
            "tmws://ref/a/..%2Fb",
            "tmws://ref//etc/passwd",
            "tmws://ref/%2Fetc%2Fpasswd",
            "tmws://ref/a\\..\\b",
            "tmws://ref/a%00",
            "tmws://ref/a//b",
            "tmws://ref/./a",
            "file:///etc/passwd",
            "tmws://ref",
        ] {
            assert!(ref_of_uri(uri).is_err(), "{uri}");
        }
        let long = format!("tmws://ref/{}%0A/..", "a".repeat(1000));
        let e = ref_of_uri(&long).unwrap_err();
        assert!(e.len() < 400 && e.contains('…'), "{e}");
        assert!(ref_of_uri("tmws://ref/a\n/../b").unwrap_err().contains("a\\n/../b"));
    }
}
