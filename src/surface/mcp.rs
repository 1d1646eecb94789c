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

/// Parameters of `memory_add`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct MemoryAddParams {
    /// What to remember, in plain words. Secrets (API keys, passwords) are redacted before
    /// anything is written.
    pub content: String,
    /// `short-term` (default, kept 14 days) or `long-term` (kept for years), or another
    /// namespace from the config.
    #[serde(default)]
    pub namespace: Option<String>,
    /// One line that says what this is; default: the first sentences of the content.
    #[serde(default)]
    pub summary: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    /// Who or what it came from (default `user`).
    #[serde(default)]
    pub source: Option<String>,
    /// `note` (default), `session`, `problem`, `pattern`, `decision`, or any word.
    #[serde(default)]
    pub kind: Option<String>,
    /// An upsert key such as `auth/token-refresh`: replaces the live entry with this key.
    #[serde(default)]
    pub key: Option<String>,
    /// 0 to 1 (default 0.5).
    #[serde(default)]
    pub importance: Option<f64>,
    /// The agent writing it (you).
    #[serde(default)]
    pub agent: Option<String>,
}

/// Parameters of `memory_search`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct MemorySearchParams {
    /// Words to look for, or a memory id (`m_` and 12 hex digits) to fetch that entry.
    pub query: String,
    #[serde(default)]
    pub namespace: Option<String>,
    /// Only memories carrying all of these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Only this kind, e.g. `problem` to find similar problems and their solutions.
    #[serde(default)]
    pub kind: Option<String>,
    /// Only memories written on this git branch; `*` for all.
    #[serde(default)]
    pub branch: Option<String>,
    /// How many results (default 5, at most 100).
    #[serde(default)]
    pub limit: Option<u64>,
    /// Leave out results scoring under this, relative to the best (0 to 1, default 0.15).
    #[serde(default)]
    pub min_score: Option<f64>,
    /// Add the first 1,200 characters of each content.
    #[serde(default)]
    pub include_content: Option<bool>,
    /// `yaml` (default) or `json`.
    #[serde(default)]
    pub format: Option<FormatParam>,
}

/// Parameters of `memory_get` and `memory_delete`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct MemoryIdParams {
    /// The memory's id, as `memory_add` or `memory_search` gave it.
    pub id: String,
    /// `memory_get` only: include the whole content.
    #[serde(default)]
    pub include_content: Option<bool>,
}

/// Parameters of `memory_stats` and `memory_cleanup`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct NoParams {}

/// Parameters of `memory_clear`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct MemoryClearParams {
    /// The namespace to empty (`short-term`, `long-term`, …).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Empty every namespace instead.
    #[serde(default)]
    pub all: Option<bool>,
    /// Must be true: clearing cannot be undone.
    #[serde(default)]
    pub confirm: Option<bool>,
}

/// Parameters of `session_record`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct SessionRecordParams {
    /// Start of the window: an RFC 3339 time, a date (2026-11-22) or a commit. Default: the
    /// last recorded session, else 24 hours ago.
    #[serde(default)]
    pub since: Option<String>,
    /// The agent recording the session.
    #[serde(default)]
    pub agent: Option<String>,
}

/// Parameters of `tool_search`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ToolSearchParams {
    /// What the tool should do, in words (`find a symbol`, `library docs`); identifiers are
    /// split, so `find_symbol` and `getLibraryDocs` are found by their words. May be empty
    /// with `server` to list that server's tools.
    pub query: String,
    /// Only tools of this category (as the registry names them).
    #[serde(default)]
    pub category: Option<String>,
    /// Only tools of this server.
    #[serde(default)]
    pub server: Option<String>,
    /// How many results (default 8, at most 50).
    #[serde(default)]
    pub limit: Option<u64>,
    /// `yaml` (default) or `json`.
    #[serde(default)]
    pub format: Option<FormatParam>,
}

/// Parameters of `tool_describe`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ToolDescribeParams {
    /// The server, as `tool_search` named it.
    pub server: String,
    /// The tool, as `tool_search` named it.
    pub tool: String,
}

/// Parameters of `tool_call`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ToolCallParams {
    /// The server, as `tool_search` named it.
    pub server: String,
    /// The tool, as `tool_search` named it.
    pub tool: String,
    /// The tool's arguments, following the input schema that `tool_describe` gives.
    #[serde(default)]
    pub arguments: Option<serde_json::Map<String, serde_json::Value>>,
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
        TmwsServer {
            service,
            defaults_sent: Arc::new(AtomicBool::new(false)),
            tool_router: Self::tool_router() + Self::memory_router() + Self::tools_router(),
        }
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
                ..SearchRequest::default()
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

#[tool_router(router = memory_router)]
impl TmwsServer {
    #[tool(
        name = "memory_add",
        description = "Remember something for later sessions: a fact, a decision, a problem and its fix, what you did. \
Short-term (default) keeps for two weeks, long-term for years. Give a key (e.g. `auth/token-refresh`) to replace an \
earlier memory about the same thing. Adding the same content twice stores it once. Secrets are redacted. Returns the \
id and what was stored."
    )]
    async fn memory_add(
        &self,
        Parameters(p): Parameters<MemoryAddParams>,
    ) -> std::result::Result<CallToolResult, ErrorData> {
        let req = crate::query::memory::AddRequest {
            content: p.content,
            namespace: p.namespace,
            summary: p.summary,
            tags: p.tags,
            source: p.source,
            kind: p.kind,
            key: p.key,
            importance: p.importance,
            agent: p.agent,
            extra: serde_json::Map::new(),
        };
        Ok(match self.service.memory_add(&req) {
            Ok(v) => text_result(context::render(&v, Format::Yaml)),
            Err(e) => error_result(&e),
        })
    }

    #[tool(
        name = "memory_search",
        description = "Recall memories: what earlier sessions (yours or other agents') learned, decided, fixed or noted. \
Best match first, with id, namespace, kind, one-line summary, tags, a 0-100 score and when it was written; \
include_content adds a preview. Use kind=problem to find similar problems and their solutions. A memory id as the \
query returns that entry."
    )]
    async fn memory_search(
        &self,
        Parameters(p): Parameters<MemorySearchParams>,
    ) -> std::result::Result<CallToolResult, ErrorData> {
        let req = crate::query::memory::MemorySearch {
            query: p.query,
            namespace: p.namespace,
            tags: p.tags,
            kind: p.kind,
            branch: p.branch,
            limit: p.limit.map(|n| usize::try_from(n.clamp(1, 100)).unwrap_or(5)),
            min_score: p.min_score,
            include_content: p.include_content.unwrap_or(false),
        };
        Ok(match self.service.memory_search(&req).await {
            Ok(v) => text_result(context::render(&v, p.format.unwrap_or_default().into())),
            Err(e) => error_result(&e),
        })
    }

    #[tool(
        name = "memory_get",
        description = "Read one memory by id, with its whole content when include_content is true."
    )]
    async fn memory_get(
        &self,
        Parameters(p): Parameters<MemoryIdParams>,
    ) -> std::result::Result<CallToolResult, ErrorData> {
        Ok(match self.service.memory_get(&p.id, p.include_content.unwrap_or(false)).await {
            Ok(v) => text_result(context::render(&v, Format::Yaml)),
            Err(e) => error_result(&e),
        })
    }

    #[tool(
        name = "memory_delete",
        description = "Forget one memory by id (it is wrong or obsolete). The log keeps a delete record."
    )]
    async fn memory_delete(
        &self,
        Parameters(p): Parameters<MemoryIdParams>,
    ) -> std::result::Result<CallToolResult, ErrorData> {
        Ok(match self.service.memory_delete(&p.id).await {
            Ok(v) => text_result(context::render(&v, Format::Yaml)),
            Err(e) => error_result(&e),
        })
    }

    #[tool(
        name = "memory_stats",
        description = "How many memories each namespace holds, expired ones awaiting cleanup, log sizes, and how often \
this server was asked again for context defaults it had already sent (defaults_redundant)."
    )]
    async fn memory_stats(
        &self,
        Parameters(_): Parameters<NoParams>,
    ) -> std::result::Result<CallToolResult, ErrorData> {
        Ok(match self.service.memory_stats().await {
            Ok(v) => text_result(context::render(&v, Format::Yaml)),
            Err(e) => error_result(&e),
        })
    }

    #[tool(
        name = "memory_cleanup",
        description = "Compact the memory logs: expired entries and dead lines out, atomically. Rarely needed: logs \
are compacted automatically once half their lines are dead."
    )]
    async fn memory_cleanup(
        &self,
        Parameters(_): Parameters<NoParams>,
    ) -> std::result::Result<CallToolResult, ErrorData> {
        Ok(match self.service.memory_cleanup() {
            Ok(v) => text_result(context::render(&v, Format::Yaml)),
            Err(e) => error_result(&e),
        })
    }

    #[tool(
        name = "memory_clear",
        description = "Forget every memory of one namespace (or all: true). Cannot be undone; refused unless \
confirm is true. Only when the user asks for it."
    )]
    async fn memory_clear(
        &self,
        Parameters(p): Parameters<MemoryClearParams>,
    ) -> std::result::Result<CallToolResult, ErrorData> {
        let answer =
            self.service.memory_clear(p.namespace.as_deref(), p.all.unwrap_or(false), p.confirm.unwrap_or(false));
        Ok(match answer {
            Ok(v) => text_result(context::render(&v, Format::Yaml)),
            Err(e) => error_result(&e),
        })
    }

    #[tool(
        name = "session_record",
        description = "At the end of a session, record what happened in one long-term memory (kind session): the \
memories added, commits made and tool calls since the last recorded session (or since a time or commit). Later \
sessions find it with memory_search."
    )]
    async fn session_record(
        &self,
        Parameters(p): Parameters<SessionRecordParams>,
    ) -> std::result::Result<CallToolResult, ErrorData> {
        Ok(match self.service.session_record(p.since.as_deref(), p.agent.as_deref()) {
            Ok(v) => text_result(context::render(&v, Format::Yaml)),
            Err(e) => error_result(&e),
        })
    }
}

#[tool_router(router = tools_router)]
impl TmwsServer {
    #[tool(
        name = "tool_search",
        description = "Find a tool of the other MCP servers this project uses, by what it should do: returns server, \
tool, a one-line summary, category and a 0-100 score, best first. Answered from tmws's registry: no server is \
started. Then tool_describe gives the tool's input schema and tool_call calls it."
    )]
    async fn tool_search(
        &self,
        Parameters(p): Parameters<ToolSearchParams>,
    ) -> std::result::Result<CallToolResult, ErrorData> {
        let req = crate::query::tools::ToolSearch {
            query: p.query,
            category: p.category,
            server: p.server,
            limit: p.limit.map_or(8, |n| usize::try_from(n.clamp(1, 50)).unwrap_or(8)),
        };
        Ok(match self.service.tool_search(&req).await {
            Ok(v) => text_result(context::render(&v, p.format.unwrap_or_default().into())),
            Err(e) => error_result(&e),
        })
    }

    #[tool(
        name = "tool_describe",
        description = "The full description, usage hint and JSON input schema of one tool found with tool_search, \
to build the arguments of tool_call. No server is started."
    )]
    async fn tool_describe(
        &self,
        Parameters(p): Parameters<ToolDescribeParams>,
    ) -> std::result::Result<CallToolResult, ErrorData> {
        Ok(match self.service.tool_describe(&p.server, &p.tool) {
            Ok(v) => text_result(context::render(&v, Format::Yaml)),
            Err(e) => error_result(&e),
        })
    }

    #[tool(
        name = "tool_call",
        description = "Call a tool of another MCP server and get its result as that server gives it. The server is \
started on the first call and kept for a while; a call can take as long as the tool needs (up to the pool's \
timeout). Check the arguments with tool_describe first."
    )]
    async fn tool_call(
        &self,
        Parameters(p): Parameters<ToolCallParams>,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> std::result::Result<CallToolResult, ErrorData> {
        // A cancelled request stops waiting: the downstream call is cancelled in turn and
        // the connection is free again at once.
        let call = self.service.tool_call(&p.server, &p.tool, p.arguments.unwrap_or_default());
        Ok(tokio::select! {
            answer = call => match answer {
                Ok(result) => result,
                Err(e) => error_result(&e),
            },
            () = context.ct.cancelled() => CallToolResult::error(vec![ContentBlock::text("cancelled")]),
        })
    }
}

#[tool_handler(router = self.tool_router)]
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
    let pool = service.pool().clone();
    let server = TmwsServer::new(service);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Environment(format!("cannot start the async runtime: {e}")))?;
    let result = runtime.block_on(async move {
        let service = match server.serve(rmcp::transport::stdio()).await {
            Ok(service) => service,
            // stdin closed before a client said anything: nothing to serve, not a failure.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => return Err(Error::Environment(format!("mcp: {e}"))),
        };
        let waited = service.waiting().await.map_err(|e| Error::Environment(format!("mcp: {e}")));
        pool.shutdown().await;
        waited?;
        Ok::<(), Error>(())
    });
    background.stop();
    result
}
