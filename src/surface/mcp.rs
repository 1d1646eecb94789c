//! The MCP tools (DESIGN §7.2) and `tmws mcp`, which serves them over stdio.
//!
//! It answers `initialize` and `tools/list` at once: the sync and the watcher run in the
//! background (`service`), and queries answer from the latest commit, with `stale: true`
//! when the index is behind. Tool errors are results with `isError: true`. stdout is the
//! protocol, so logs go to stderr. The server exits when stdin closes, after the watcher
//! has committed. `tmws serve` serves the same tools at `/mcp`, one `TmwsServer` per
//! session.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::{Error, Result};
use crate::index::SearchRequest;
use crate::model::DocKind;
use crate::query::context::{self, ContextRequest, Format};
use crate::surface::service::Service;

/// The MCP server: the tools over one root, for one session.
#[derive(Debug, Clone)]
pub struct TmwsServer {
    service: Service,
    /// Whether this session was already sent the context defaults (DESIGN §4.1).
    defaults_sent: Arc<AtomicBool>,
    #[allow(dead_code, reason = "read by the code #[tool_handler] generates")]
    tool_router: ToolRouter<Self>,
}

/// Output format of an answer.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FormatParam {
    /// YAML: the default, fewer tokens.
    #[default]
    Yaml,
    /// JSON, for programs.
    Json,
}

impl From<FormatParam> for Format {
    fn from(f: FormatParam) -> Format {
        match f {
            FormatParam::Yaml => Format::Yaml,
            FormatParam::Json => Format::Json,
        }
    }
}

/// Parameters of `workspace_get_context`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ContextParams {
    /// The workspace: a folder name under `resources/workspaces/`, e.g. `devtools`.
    pub workspace: String,
    /// A domain inside the workspace, e.g. `common`.
    #[serde(default)]
    pub domain: Option<String>,
    /// A repository inside the domain (needs `domain`), e.g. `tmws-cli`.
    #[serde(default)]
    pub repository: Option<String>,
    /// Topics whose entries to return: `plans`, `decisions`, `lessons`, `features`,
    /// `architecture`, `spikes`, any other `_topic` folder name, `overview` for the scope's
    /// full overview, or `["*"]` for every topic found in the scope.
    #[serde(default)]
    pub topics: Vec<String>,
    /// Return the orientation defaults (scope overview, folder tree, overviews, decision and
    /// lesson summaries, skills). Default true; pass false on follow-up calls in the same
    /// session to save tokens.
    #[serde(default)]
    pub include_defaults: Option<bool>,
    /// Only entries with one of these statuses (e.g. `["in_progress"]`).
    #[serde(default)]
    pub filter_status: Vec<String>,
    /// Only entries carrying all of these tags.
    #[serde(default)]
    pub filter_tags: Vec<String>,
    /// Only entries of this category (decisions and lessons).
    #[serde(default)]
    pub filter_category: Option<String>,
    /// `yaml` (default) or `json`.
    #[serde(default)]
    pub format: Option<FormatParam>,
    /// Answer cap in characters: default 24000, at most 100000.
    #[serde(default)]
    pub max_chars: Option<u64>,
}

/// Parameters of `workspace_search`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct SearchParams {
    /// Words to look for. Stemmed, identifiers split (`symbols` finds
    /// `get_symbols_overview`), CJK matched inside sentences; "double quotes" make a phrase.
    pub query: String,
    /// Only this scope and below: `workspace[/domain[/repository]]`.
    #[serde(default)]
    pub scope: Option<String>,
    /// Only entries of these topics.
    #[serde(default)]
    pub topics: Vec<String>,
    /// Only these kinds: overview, topic_overview, entry, rule, skill, doc, memory.
    #[serde(default)]
    pub kinds: Vec<String>,
    /// Only items with one of these statuses.
    #[serde(default)]
    pub filter_status: Vec<String>,
    /// Only items carrying all of these tags.
    #[serde(default)]
    pub filter_tags: Vec<String>,
    /// How many results (default 10, at most 100).
    #[serde(default)]
    pub limit: Option<u64>,
    /// `yaml` (default) or `json`.
    #[serde(default)]
    pub format: Option<FormatParam>,
}

fn text_result(text: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

fn error_result(e: &Error) -> CallToolResult {
    let mut text = e.to_string();
    if let Some(hint) = e.hint() {
        text.push_str("\nhint: ");
        text.push_str(hint);
    }
    CallToolResult::error(vec![ContentBlock::text(text)])
}

#[tool_router]
impl TmwsServer {
    pub fn new(service: Service) -> TmwsServer {
        TmwsServer { service, defaults_sent: Arc::new(AtomicBool::new(false)), tool_router: Self::tool_router() }
    }

    #[tool(
        name = "workspace_get_context",
        description = "Orient yourself in a workspace before working in it: returns the scope's overview, its folder tree, \
summaries of every overview, decision and lesson that applies, and the loaded skills (the defaults), plus, for the \
topics you name, each topic's overview and the summaries of its entries (decisions and lessons with their bodies). \
Call it once at the start of a task with the workspace (and domain/repository if you know them); call again with \
include_defaults=false and topics=[...] to dig into plans, decisions, lessons or any topic. Answers are YAML \
summaries with _meta.document_path for reading a whole file. An unknown scope is an error that lists the known ones."
    )]
    async fn workspace_get_context(
        &self,
        Parameters(p): Parameters<ContextParams>,
    ) -> std::result::Result<CallToolResult, ErrorData> {
        let include_defaults = p.include_defaults.unwrap_or(true);
        let req = ContextRequest {
            workspace: p.workspace,
            domain: p.domain,
            repository: p.repository,
            topics: p.topics,
            include_defaults,
            filter_status: p.filter_status,
            filter_tags: p.filter_tags,
            filter_category: p.filter_category,
            max_chars: p.max_chars.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        };
        match self.service.context(&req).await {
            Ok(v) => {
                if include_defaults && self.defaults_sent.swap(true, Ordering::Relaxed) {
                    self.service.count_redundant_defaults();
                    tracing::info!("workspace_get_context: defaults asked for again in this session");
                }
                Ok(text_result(context::render(&v, p.format.unwrap_or_default().into())))
            }
            Err(e) => Ok(error_result(&e)),
        }
    }

    #[tool(
        name = "workspace_search",
        description = "Full-text search over the workspace's overviews, plans, decisions, lessons, any topic entries, \
rules, skills, indexed docs and memories; best match first. Use it when you know what you are looking for but not \
where it is. Returns refId (the file path, or a memory's id), kind, scope, topic, name, a one-line summary, tags, \
status and a 0-100 score; read the file at refId for the whole text. Filters narrow without reordering."
    )]
    async fn workspace_search(
        &self,
        Parameters(p): Parameters<SearchParams>,
    ) -> std::result::Result<CallToolResult, ErrorData> {
        let answer = async {
            let req = SearchRequest {
                query: p.query,
                scope: p.scope,
                topics: p.topics,
                kinds: DocKind::parse_all(&p.kinds)?,
                status: p.filter_status,
                tags: p.filter_tags,
                limit: p.limit.map_or(10, |n| usize::try_from(n.clamp(1, 100)).unwrap_or(10)),
            };
            self.service.search(&req).await
        }
        .await;
        match answer {
            Ok(v) => Ok(text_result(context::render(&v, p.format.unwrap_or_default().into()))),
            Err(e) => Ok(error_result(&e)),
        }
    }
}

#[tool_handler]
impl ServerHandler for TmwsServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("tmws", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "tmws holds this project's workspace knowledge (overviews, plans, decisions, lessons) and memories. \
Start a task with workspace_get_context; use workspace_search to find something specific.",
            )
    }
}

/// Runs `tmws mcp` on stdin/stdout until stdin closes.
pub fn run_stdio(root: &Path) -> Result<()> {
    let (service, background) = Service::start(root)?;
    let server = TmwsServer::new(service);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Usage(format!("cannot start the async runtime: {e}")))?;
    let result = runtime.block_on(async move {
        let service = match server.serve(rmcp::transport::stdio()).await {
            Ok(service) => service,
            // stdin closed before a client said anything: nothing to serve, not a failure.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => return Err(Error::Usage(format!("mcp: {e}"))),
        };
        service.waiting().await.map_err(|e| Error::Usage(format!("mcp: {e}")))?;
        Ok::<(), Error>(())
    });
    background.stop();
    result
}
