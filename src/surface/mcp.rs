//! The MCP surface (docs/surfaces.md): the engine's tool catalogue over MCP, and `tmws mcp`,
//! which serves it over stdio.
//!
//! `tools/list` is the catalogue, each tool's input schema made from its request type;
//! `tools/call` hands the arguments to `Engine::call`. An error is a tool result with
//! `isError: true`, its message (and hint) as text and `{error, category, hint}` as
//! structured content, never a crashed server. Each client session records what it did as
//! a session entry when it ends (stdin closed, HTTP session deleted) or goes idle. `initialize` is answered at once: the index
//! syncs and watches in the background. stdout is the protocol, so logs go to stderr. The
//! server exits when stdin closes, after the watcher has committed. `tmws serve` serves the
//! same handler at `/mcp`, one per session.

use std::path::Path;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

use crate::error::{Error, Result};
use crate::query::catalog::{self, Output};
use crate::query::{Engine, Session};

/// The MCP server of one client session.
#[derive(Debug, Clone)]
pub struct TmwsServer {
    engine: Engine,
    session: Session,
    tools: Arc<Vec<Tool>>,
}

/// A tool as `tools/list` gives it: name, title, description, hints, input schema.
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
}

impl TmwsServer {
    pub fn new(engine: Engine) -> TmwsServer {
        let config = engine.config();
        let tools = catalog::TOOLS.iter().map(|t| listed(*t, config)).collect();
        let session = engine.client_session();
        TmwsServer { engine, session, tools: Arc::new(tools) }
    }

    /// The client session this server serves.
    pub fn session(&self) -> &Session {
        &self.session
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
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
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

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        if catalog::find(&request.name).is_none() {
            return Err(ErrorData::invalid_params(format!("no tool `{}`", request.name), None));
        }
        let args = request.arguments.unwrap_or_default();
        if let Some(info) = context.peer.peer_info() {
            self.session.set_client(&info.client_info.name);
        }
        // A cancelled request stops waiting: a downstream call is cancelled in turn and its
        // connection is free again at once.
        let answer = tokio::select! {
            answer = self.engine.call(&self.session, &request.name, args) => answer,
            () = context.ct.cancelled() => return Ok(CallToolResult::error(vec![ContentBlock::text("cancelled")]).into()),
        };
        Ok(match answer {
            Ok(Output::Text { text, .. }) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Ok(Output::Downstream(called)) => serde_json::from_value::<CallToolResult>(called.result)
                .unwrap_or_else(|e| self.error(&Error::Downstream(format!("the server's result does not parse: {e}")))),
            Err(e) => self.error(&e),
        }
        .into())
    }
}

/// Runs `tmws mcp` on stdin/stdout until stdin closes; with `agent`, every client writes
/// and verifies as that name (`--agent`).
pub fn run_stdio(root: &Path, agent: Option<&str>) -> Result<()> {
    let engine = Engine::serve(root)?;
    if let Some(agent) = agent {
        engine.set_agent(agent)?;
    }
    let server = TmwsServer::new(engine.clone());
    let session = server.session().clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::environment("cannot start the async runtime", e))?;
    runtime.block_on(async move {
        let (transport, pumps) =
            super::stdio::capped(tokio::io::stdin(), tokio::io::stdout(), crate::parse::jsonl::MAX_LINE_BYTES);
        let result = match server.serve(transport).await {
            Ok(service) => service.waiting().await.map(|_| ()).map_err(|e| Error::environment("mcp", e)),
            // stdin closed before a client said anything: nothing to serve, not a failure.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => Ok(()),
            Err(e) => Err(Error::environment("mcp", e)),
        };
        pumps.finish().await;
        // stdin closed: the client session is over, and recorded (docs/trust.md).
        let _ = tokio::task::spawn_blocking(move || session.end()).await;
        engine.shutdown().await;
        result
    })
}
