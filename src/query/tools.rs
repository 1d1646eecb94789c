//! The tools of other MCP servers (docs/tools.md): `tool_search` and `tool_describe` answer
//! from the index and the registry file without contacting any server; `tool_call` checks
//! the server's live config against the registry and its approval against what it runs
//! now (`approval`), and goes through the lazy pool. A tmws running as another tmws'
//! downstream server serves no `tool_call`.
//!
//! Every call, answered or not, appends `{server, tool, at, ms, ok}` to
//! `.tmws/cache/usage.jsonl` (docs/pool.md), which popularity and sessions read.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{SecondsFormat, Utc};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::config::Config;
use crate::error::{Chain, Error, Result};
use crate::index::{Index, TextQuery};
use crate::layout::{self, REGISTRY_FILE};
use crate::model::DocKind;
use crate::parse::registry::{self as file, Registry as RegistryFile};
use crate::pool::{Called, Pool, Target};
use crate::query::api::ToolSearchRequest;
use crate::query::{approval, registry};
use crate::redact::redact;
use crate::store::{self, log::LockedLog};

/// The longest TTL a registry entry's `ttl_secs` gives a connection: the most the config's
/// `pool.default_ttl_secs` may say.
const MAX_TTL_SECS: u64 = crate::limits::POOL_TTL_SECS.max;

/// How many names an "unknown server/tool" error lists.
const NAMES_SHOWN: usize = 20;

/// One `tool_search` result.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ToolHit {
    pub server: String,
    pub tool: String,
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// 0–100, relative to the best result.
    pub score: u32,
}

/// The answer of `tool_search`.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ToolResults {
    /// The words asked (empty when a server's tools were listed).
    pub query: String,
    /// The tools found, best first.
    pub results: Vec<ToolHit>,
    /// The index may be behind the registry.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
}

/// `tool_search`: tools by words, from the index. With an empty query and a `server`, that
/// server's tools by name (from the registry).
pub(crate) fn search(
    index: &Index,
    registry: &Registry,
    req: &ToolSearchRequest,
    meaning: Option<std::sync::Arc<crate::index::meaning::QueryMeaning>>,
) -> Result<ToolResults> {
    let limit = req.limit as usize;
    if req.query.trim().is_empty() {
        let Some(server) = &req.server else {
            return Err(Error::Usage(
                "tool_search needs a query (words that describe what the tool should do), or a server to list"
                    .to_owned(),
            ));
        };
        let reg = registry.get()?;
        let entry = server_entry(&reg, server)?;
        let results = entry
            .tools
            .iter()
            .filter(|(_, t)| req.category.as_ref().is_none_or(|c| t.category.as_ref() == Some(c)))
            .take(limit)
            .map(|(name, t)| ToolHit {
                server: server.clone(),
                tool: name.clone(),
                summary: first_line(t.description.as_deref().unwrap_or_default()),
                category: t.category.clone(),
                score: 100,
            })
            .collect();
        return Ok(ToolResults { query: String::new(), results, stale: false });
    }
    let found = index.search(&TextQuery {
        query: req.query.clone(),
        kinds: vec![DocKind::Tool],
        namespaces: req.server.iter().cloned().collect(),
        categories: req.category.iter().cloned().collect(),
        limit,
        meaning,
        ..TextQuery::default()
    })?;
    let results = found
        .results
        .into_iter()
        .map(|h| {
            let server = h.namespace.clone().unwrap_or_else(|| h.ref_id.split('/').next().unwrap_or("").to_owned());
            ToolHit { server, tool: h.name, summary: h.summary, category: h.category, score: h.score }
        })
        .collect();
    Ok(ToolResults { query: req.query.clone(), results, stale: false })
}

/// `tool_describe`'s answer: what the registry holds about one tool.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ToolDescription {
    /// The server.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// What it does, as its server says.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub description: Option<Value>,
    /// When to use it, in a person's words.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub usage_hint: Option<Value>,
    /// Its category in the registry.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub category: Option<Value>,
    /// The tools to call before it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<String>>")]
    pub dependencies: Option<Value>,
    /// The JSON Schema of the tool's arguments.
    #[schemars(with = "serde_json::Map<String, Value>")]
    pub input_schema: Value,
}

/// `tool_describe`: a tool's description, usage hint, category, dependencies and full input
/// schema, from the registry.
pub(crate) fn describe(registry: &Registry, server: &str, tool: &str) -> Result<ToolDescription> {
    let reg = registry.get()?;
    let entry = server_entry(&reg, server)?;
    let t = tool_entry(entry, server, tool)?;
    let text = |v: &Option<String>| v.clone().filter(|s| !s.is_empty()).map(Value::from);
    Ok(ToolDescription {
        server: server.to_owned(),
        tool: tool.to_owned(),
        description: text(&t.description),
        usage_hint: text(&t.usage_hint),
        category: text(&t.category),
        dependencies: t.dependencies.clone().map(Value::from),
        input_schema: t.input_schema.clone().map_or_else(|| json!({"type": "object"}), Value::Object),
    })
}

/// `tool_call`'s answer: the downstream server's result, verbatim.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallAnswer {
    /// The MCP `CallToolResult` the server gave, as JSON.
    pub result: Value,
    /// Whether the server says the call failed.
    pub is_error: bool,
    /// How long starting the server took, when this call started it.
    pub started: Option<Duration>,
}

impl ToolCallAnswer {
    /// The result's structured content as `tool_call` answers it: the other server's
    /// `structuredContent` when it gave an object, else its content blocks as
    /// `{"content": [...]}` (structured content is always an object).
    pub fn structured(&self) -> Map<String, Value> {
        match self.result.get("structuredContent") {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::from_iter([(
                "content".to_owned(),
                self.result.get("content").cloned().unwrap_or_else(|| Value::Array(Vec::new())),
            )]),
        }
    }

    /// The result's text contents, one per line (other contents as JSON).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for c in self.result.get("content").and_then(Value::as_array).map_or(&[][..], Vec::as_slice) {
            match c.get("text").and_then(Value::as_str) {
                Some(t) => out.push_str(t),
                None => out.push_str(&c.to_string()),
            }
            out.push('\n');
        }
        out
    }
}

/// `tool_call`: the downstream result, verbatim; the usage log gets a line either way.
pub(crate) async fn call(
    root: &Path,
    config: &Config,
    registry: &Registry,
    pool: &Pool,
    server: &str,
    tool: &str,
    arguments: Map<String, Value>,
) -> Result<ToolCallAnswer> {
    let began = Instant::now();
    let answer = async {
        // A tmws that another tmws started as a downstream server, directly or through a
        // wrapper, calls nothing: each call could start one more tmws (docs/trust-boundary.md).
        if crate::pool::is_downstream() {
            return Err(Error::Conflict(format!(
                "tool_call is not served here: this tmws runs as a downstream server of another tmws ({} is set), \
and a registry entry that runs tmws itself must not start servers again; remove that entry from the client configs",
                crate::pool::DOWNSTREAM_MARKER
            )));
        }
        let reg = registry.get()?;
        let entry = server_entry(&reg, server)?;
        tool_entry(entry, server, tool)?;
        let (configured, _) = registry::configured(root, config)?;
        let Some(found) = configured.get(server) else {
            return Err(Error::Conflict(format!(
                "`{server}` is in the registry but in none of the client configs ({}); run `tmws registry build` to \
    bring the registry up to date",
                config.registry.sources.join(", ")
            )));
        };
        let recorded = entry.config_hash.as_deref().unwrap_or_default();
        if found.raw.config_hash() != recorded {
            return Err(Error::Conflict(format!(
                "the config of `{server}` changed since the registry was built; run `tmws registry build` to introspect \
    it again before calling it"
            )));
        }
        let connection = found.live.as_ref().map_err(|why| Error::Usage(why.clone()))?;
        // Nothing a repository names runs before the user approved it here, as it is now:
        // its connection and the files of the root it runs (docs/registry.md#approval).
        let launch = approval::launch(root, connection)?;
        let why = match approval::status(root, server, &launch)? {
            approval::Status::Approved => None,
            approval::Status::New => Some("it was never approved on this machine".to_owned()),
            approval::Status::Changed(what) => Some(format!("since it was approved, {}", what.join(", "))),
        };
        if let Some(why) = why {
            return Err(Error::Conflict(format!(
                "`{server}` is awaiting approval: {why}; run `tmws registry approve {server}` to see what it runs and \
allow it"
            )));
        }
        let approval = launch.hash();
        let target = Target {
            server,
            connection,
            persistent: entry.persistent.unwrap_or(false),
            // A hand-edited TTL is taken up to the longest the config allows.
            ttl: entry.ttl_secs.map(|s| Duration::from_secs(s.min(MAX_TTL_SECS))),
            exec: &launch.exec,
            approval: &approval,
        };
        // A server's stderr may hold a token it was started with: redacted like memories.
        let called = pool
            .call(&target, tool, arguments)
            .await
            .map_err(|why| Error::Downstream(redact(&crate::parse::clients::scrub_urls(&why)).text))?;
        Ok(answer_of(called))
    }
    .await;
    let ok = matches!(&answer, Ok(c) if !c.is_error);
    if let Err(e) = log_usage(root, server, tool, began.elapsed(), ok) {
        tracing::warn!("cannot write the usage log: {}", Chain(&e));
    }
    answer
}

fn answer_of(called: Called) -> ToolCallAnswer {
    ToolCallAnswer {
        is_error: called.result.is_error == Some(true),
        result: serde_json::to_value(&called.result).unwrap_or(Value::Null),
        started: called.started,
    }
}

/// Appends one line to the usage log.
fn log_usage(root: &Path, server: &str, tool: &str, took: Duration, ok: bool) -> Result<()> {
    let (server, tool) = (redact(server).text, redact(tool).text);
    let line = json!({
        "server": server,
        "tool": tool,
        "at": Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
        "ms": u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
        "ok": ok,
    });
    // The usage log is this machine's for the whole project: a linked worktree writes the
    // main worktree's.
    let root = &store::git::project_root(root);
    let mut log = LockedLog::open(root, &root.join(layout::USAGE_FILE), &root.join(layout::USAGE_LOCK))?;
    if log.is_empty()?
        && let Some(old) = store::read_opt(root, &root.join(layout::OLD_USAGE_FILE), store::cap::LOG)?
    {
        // The first call since the log moved: the old tracked log's lines come first.
        let old = String::from_utf8_lossy(jsonl_complete(&old)).into_owned();
        let mut lines: Vec<String> = old.lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect();
        lines.push(line.to_string());
        return log.append(&lines, false).map(drop);
    }
    log.append(&[line.to_string()], false).map(drop)
}

fn jsonl_complete(bytes: &[u8]) -> &[u8] {
    crate::parse::jsonl::complete(bytes)
}

/// The usage log (docs/pool.md): this machine's tool calls, in `.tmws/cache/usage.jsonl`;
/// until tmws has written there, the log tracked at its old place, read and left alone.
pub(crate) fn usage_bytes(root: &Path) -> Vec<u8> {
    let root = &store::git::project_root(root);
    let read = |rel: &str| store::read_opt(root, &root.join(rel), store::cap::LOG).ok().flatten();
    read(layout::USAGE_FILE).filter(|b| !b.is_empty()).or_else(|| read(layout::OLD_USAGE_FILE)).unwrap_or_default()
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().trim().to_owned()
}

fn server_entry<'a>(reg: &'a RegistryFile, server: &str) -> Result<&'a file::Server> {
    if let Some(e) = reg.servers.get(server) {
        return Ok(e);
    }
    let names: Vec<&str> = reg.servers.keys().map(String::as_str).take(NAMES_SHOWN).collect();
    Err(Error::NotFound(if names.is_empty() {
        format!("no server `{server}`: the registry is empty; run `tmws registry build`")
    } else {
        format!("no server `{server}` in the registry; servers: {}", names.join(", "))
    }))
}

fn tool_entry<'a>(entry: &'a file::Server, server: &str, tool: &str) -> Result<&'a file::Tool> {
    if let Some(t) = entry.tools.get(tool) {
        return Ok(t);
    }
    let names: Vec<&str> = entry.tools.keys().map(String::as_str).take(NAMES_SHOWN).collect();
    Err(Error::NotFound(format!(
        "`{server}` has no tool `{tool}` in the registry; its tools: {}",
        if names.is_empty() { "none".to_owned() } else { names.join(", ") }
    )))
}

/// A file's (length, modification time) when it was read (None: it did not exist).
type Stamp = Option<(u64, std::time::SystemTime)>;
/// The registry as read, shared between readers.
type Snapshot = Arc<RegistryFile>;

/// The registry file, read again only when it changed on disk.
#[derive(Debug)]
pub struct Registry {
    root: PathBuf,
    path: PathBuf,
    cached: Mutex<Option<(Stamp, Snapshot)>>,
}

impl Registry {
    pub fn new(root: &Path) -> Registry {
        Registry { root: root.to_path_buf(), path: root.join(REGISTRY_FILE), cached: Mutex::new(None) }
    }

    /// The registry as it is on disk now.
    pub fn get(&self) -> Result<Snapshot> {
        let stamp = store::stamp(&self.path);
        let mut cached = self.cached.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((s, reg)) = cached.as_ref()
            && *s == stamp
        {
            return Ok(reg.clone());
        }
        let reg = Arc::new(registry::load(&self.root)?);
        *cached = Some((stamp, reg.clone()));
        Ok(reg)
    }
}
