//! `tmws mcp`: the MCP server over stdio (DESIGN §7.2).
//!
//! It answers `initialize` and `tools/list` at once: the index is opened (not synced) up
//! front, and a background thread runs the sync and then the watcher, exactly as
//! `tmws watch` does. Queries read the latest commit; while a sync is under way they wait
//! for it at most 200 ms and otherwise answer with `stale: true`. Tool errors are results
//! with `isError: true`. stdout is the protocol, so logs go to stderr. The server exits
//! when stdin closes, after the watcher has committed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::{Error, Result};
use crate::index::watch::WatchUpdate;
use crate::index::{Index, SearchRequest};
use crate::model::DocKind;
use crate::query::Workspace;
use crate::query::context::{self, ContextRequest, Format};

/// How long a query waits for a running sync before it answers `stale: true`.
const STALE_WAIT: Duration = Duration::from_millis(200);

/// What the background sync is doing, for queries to judge freshness.
#[derive(Debug, Default)]
pub struct SyncState {
    /// The first sync finished (or another process keeps the index).
    ready: AtomicBool,
    /// A sync is under way.
    busy: AtomicBool,
}

impl SyncState {
    fn fresh(&self) -> bool {
        self.ready.load(Ordering::Acquire) && !self.busy.load(Ordering::Acquire)
    }
}

/// The background half of a server: the watcher thread and its stop flag.
#[derive(Debug)]
pub struct Background {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    /// Opens the root's index for writing (when free) and starts the sync and the watcher
    /// in a thread. Returns at once.
    pub fn start(root: &Path, state: Arc<SyncState>) -> Result<Background> {
        let mut ws = Workspace::open(root)?;
        if let Some(why) = ws.rebuilt_on_open() {
            tracing::warn!("rebuilt the index from the files: {why}");
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("tmws-watch".into())
            .spawn(move || {
                let result = ws.watch(&flag, |update| match update {
                    WatchUpdate::Syncing => state.busy.store(true, Ordering::Release),
                    WatchUpdate::Synced(r) | WatchUpdate::Applied(r) => {
                        for (path, what) in &r.changes {
                            tracing::info!("{what} {path}");
                        }
                        state.ready.store(true, Ordering::Release);
                        state.busy.store(false, Ordering::Release);
                    }
                    WatchUpdate::Following | WatchUpdate::TookOver => state.ready.store(true, Ordering::Release),
                    WatchUpdate::Failed(e) => {
                        tracing::warn!("index sync failed: {e}");
                        state.busy.store(false, Ordering::Release);
                    }
                });
                if let Err(e) = result {
                    tracing::error!("the index watcher stopped: {e}");
                }
                state.ready.store(true, Ordering::Release);
                state.busy.store(false, Ordering::Release);
            })
            .map_err(|e| Error::Usage(format!("cannot start the watcher thread: {e}")))?;
        Ok(Background { stop, thread: Some(thread) })
    }

    /// Stops the watcher (it commits what it applied) and waits for it.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The MCP server: the tools over one root.
#[derive(Debug, Clone)]
pub struct TmwsServer {
    root: PathBuf,
    index: Arc<Index>,
    state: Arc<SyncState>,
    /// Whether this session was already sent the context defaults, and how often they
    /// were asked for again (DESIGN §4.1).
    defaults_sent: Arc<AtomicBool>,
    defaults_redundant: Arc<AtomicU64>,
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
    pub fn new(root: &Path, index: Index, state: Arc<SyncState>) -> TmwsServer {
        TmwsServer {
            root: root.to_path_buf(),
            index: Arc::new(index),
            state,
            defaults_sent: Arc::new(AtomicBool::new(false)),
            defaults_redundant: Arc::new(AtomicU64::new(0)),
            tool_router: Self::tool_router(),
        }
    }

    /// How often this session asked again for defaults it had already been sent.
    pub fn defaults_redundant(&self) -> u64 {
        self.defaults_redundant.load(Ordering::Relaxed)
    }

    /// Waits (at most `STALE_WAIT`) for a running sync, then makes the latest commit
    /// visible. Returns whether the index may be behind the files.
    async fn settle(&self) -> std::result::Result<bool, Error> {
        let deadline = Instant::now() + STALE_WAIT;
        while !self.state.fresh() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.index.reload()?;
        Ok(!self.state.fresh())
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
        let answer = async {
            let stale = self.settle().await?;
            context::get_context(&self.root, &self.index, &req, stale)
        }
        .await;
        match answer {
            Ok(v) => {
                if include_defaults && self.defaults_sent.swap(true, Ordering::Relaxed) {
                    self.defaults_redundant.fetch_add(1, Ordering::Relaxed);
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
            let kinds = p
                .kinds
                .iter()
                .map(|k| {
                    DocKind::parse(k).ok_or_else(|| {
                        let known: Vec<&str> = DocKind::ALL.iter().map(|k| k.as_str()).collect();
                        Error::Usage(format!("unknown kind `{k}`; known kinds: {}", known.join(", ")))
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let req = SearchRequest {
                query: p.query,
                scope: p.scope,
                topics: p.topics,
                kinds,
                status: p.filter_status,
                tags: p.filter_tags,
                limit: p.limit.map_or(10, |n| usize::try_from(n.clamp(1, 100)).unwrap_or(10)),
            };
            let stale = self.settle().await?;
            let results = self.index.search(&req)?;
            let mut v = serde_json::to_value(&results).map_err(|e| Error::Usage(e.to_string()))?;
            if stale && let Some(m) = v.as_object_mut() {
                m.insert("stale".into(), serde_json::Value::Bool(true));
            }
            Ok::<_, Error>(v)
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
    let state = Arc::new(SyncState::default());
    let background = Background::start(root, state.clone())?;
    let index = Index::open_reader(root)?;
    let server = TmwsServer::new(root, index, state);
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
