//! The sparse registry (DESIGN §2.4): `.tmws/registry/index.json`, built from the MCP
//! client configs by introspecting each server once.
//!
//! A server whose `config_hash` is unchanged is kept as it is (`force` redoes it). A new or
//! changed one is introspected — all of them at once, each within a timeout — and its
//! entry rebuilt, keeping the hand-edited fields of the old one (`description`,
//! `persistent`, `ttl_secs`; per tool `description`, `category`, `usage_hint`,
//! `dependencies`). A server that fails keeps its previous entry with the error in
//! `metadata.error`. Servers no longer in any config are dropped. The file is written
//! atomically, pretty-printed with keys in a stable order, so that people can edit and
//! diff it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value, json};

use super::approval;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::layout::REGISTRY_FILE;
use crate::parse::clients::{self, Connection, Server, Vars};
use crate::parse::jsonl;
use crate::pool::{self, Introspection};
use crate::store;

/// What building did to one server.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Introspected now: tools and cold start.
    Introspected { tools: usize, cold_start_ms: u64 },
    /// Its config did not change.
    Unchanged { tools: usize },
    /// Introspection failed; the previous entry (if any) is kept.
    Failed(String),
    /// New or changed since the user last approved it: not started (`registry approve`).
    AwaitingApproval,
}

/// The servers of every configured client config, by name (the first source naming a
/// server wins), with what was wrong in the files.
pub fn configured(root: &Path, config: &Config) -> Result<(BTreeMap<String, Server>, Vec<String>)> {
    let vars = Vars {
        workspace: store::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()).display().to_string(),
        home: std::env::var("HOME").ok().filter(|h| !h.is_empty()),
        env: std::env::vars().collect(),
    };
    let mut servers = BTreeMap::new();
    let mut problems = Vec::new();
    for source in &config.registry.sources {
        let Some(text) = store::read_text_opt(root, &root.join(source), store::cap::CONFIG)? else { continue };
        let (found, diags) = clients::parse(source, &text, &vars);
        for d in diags {
            problems.push(format!("{source}:{}:{}: {}", d.line, d.column, d.message));
        }
        for server in found {
            servers.entry(server.name.clone()).or_insert(server);
        }
    }
    Ok((servers, problems))
}

/// A server of the client configs, as `registry build` records it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ConfiguredServer {
    pub name: String,
    /// The blake3 of its canonical connection, which the registry entry must carry.
    pub config_hash: String,
    /// Its connection as the registry stores it (secret-looking values as `${VAR}`).
    pub connection: Value,
}

/// The servers of the client configs, by name.
pub fn configured_servers(root: &Path, config: &Config) -> Result<Vec<ConfiguredServer>> {
    let (servers, _) = configured(root, config)?;
    Ok(servers
        .into_values()
        .map(|s| ConfiguredServer {
            config_hash: s.raw.config_hash(),
            connection: serde_json::to_value(s.raw.stored()).unwrap_or(Value::Null),
            name: s.name,
        })
        .collect())
}

/// The registry as it is on disk (an empty one when there is none).
pub fn load(root: &Path) -> Result<Map<String, Value>> {
    let Some(text) = store::read_text_opt(root, &root.join(REGISTRY_FILE), store::cap::CONFIG)? else {
        return Ok(Map::new());
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(Error::Environment(format!("{REGISTRY_FILE}: not a JSON object"))),
        Err(e) => Err(Error::Environment(format!("{REGISTRY_FILE}:{}:{}: {e}", e.line(), e.column()))),
    }
}

/// Copies `keys` of `old` over `new` where `old` has them.
fn keep(new: &mut Map<String, Value>, old: Option<&Value>, keys: &[&str]) {
    let Some(Value::Object(old)) = old else { return };
    for k in keys {
        if let Some(v) = old.get(*k) {
            new.insert((*k).to_owned(), v.clone());
        }
    }
}

/// A server's entry from what it said, keeping the hand-edited fields of `old`.
fn entry(conn: &Connection, seen: &Introspection, old: Option<&Value>) -> Value {
    let mut tools = Map::new();
    let mut sorted: Vec<&(String, String, Value)> = seen.tools.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, description, schema) in sorted {
        let mut t = Map::new();
        t.insert("description".into(), json!(description));
        t.insert("input_schema".into(), schema.clone());
        keep(
            &mut t,
            old.and_then(|o| o.get("tools")).and_then(|t| t.get(name)),
            &["description", "category", "usage_hint", "dependencies"],
        );
        tools.insert(name.clone(), Value::Object(t));
    }
    let mut e = Map::new();
    let description = seen.instructions.clone().unwrap_or_else(|| seen.name.clone());
    e.insert("description".into(), json!(description.lines().next().unwrap_or_default()));
    e.insert("config_hash".into(), json!(conn.config_hash()));
    e.insert("connection".into(), serde_json::to_value(conn.stored()).unwrap_or(Value::Null));
    e.insert("persistent".into(), json!(false));
    keep(&mut e, old, &["description", "persistent", "ttl_secs"]);
    e.insert(
        "metadata".into(),
        json!({
            "cold_start_ms": u64::try_from(seen.cold_start.as_millis()).unwrap_or(u64::MAX),
            "introspected_at": Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true),
            "popularity": 0.0,
        }),
    );
    e.insert("tools".into(), Value::Object(tools));
    Value::Object(e)
}

/// What `build` did.
#[derive(Debug, Clone, PartialEq)]
pub struct Built {
    /// Each configured server, by name.
    pub outcomes: Vec<(String, Outcome)>,
    /// What was wrong in the client configs (`file:line:col: message`).
    pub problems: Vec<String>,
}

/// `tmws registry build [--force]`: writes the registry and says what happened to each
/// server. Failing servers are in the answer (the caller exits non-zero).
pub fn build(root: &Path, config: &Config, force: bool, timeout: Duration, by_user: bool) -> Result<Built> {
    let (servers, problems) = configured(root, config)?;
    let old = load(root)?;
    let old_servers = old.get("servers").and_then(Value::as_object).cloned().unwrap_or_default();
    // The user who runs the build approves what it starts; a build the watcher runs starts
    // only what was approved before (a `git pull` runs nothing, DESIGN §2.4).
    if by_user {
        let live: Vec<(String, Connection)> =
            servers.values().filter_map(|s| s.live.as_ref().ok().map(|l| (s.name.clone(), l.clone()))).collect();
        approval::approve(root, &live)?;
    }
    let mut waiting = std::collections::BTreeSet::new();
    let todo: Vec<(String, Connection)> = servers
        .values()
        .filter(|s| {
            force
                || old_servers.get(&s.name).and_then(|o| o.get("config_hash")).and_then(Value::as_str)
                    != Some(s.raw.config_hash().as_str())
                || old_servers.get(&s.name).and_then(|o| o.pointer("/metadata/error")).is_some()
        })
        .filter_map(|s| match &s.live {
            Ok(live) if approval::approved(root, &s.name, live) => Some((s.name.clone(), live.clone())),
            Ok(_) => {
                waiting.insert(s.name.clone());
                None
            }
            Err(_) => None,
        })
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Environment(format!("cannot start the async runtime: {e}")))?;
    let seen: BTreeMap<String, std::result::Result<Introspection, String>> = runtime.block_on(async {
        // In parallel, but not hundreds of processes at once.
        let limit = std::sync::Arc::new(tokio::sync::Semaphore::new(INTROSPECT_AT_ONCE));
        let tasks: Vec<_> = todo
            .into_iter()
            .map(|(name, conn)| {
                let limit = limit.clone();
                tokio::spawn(async move {
                    let _turn = limit.acquire_owned().await;
                    (name, pool::introspect(&conn, timeout).await)
                })
            })
            .collect();
        let mut out = BTreeMap::new();
        for t in tasks {
            if let Ok((name, r)) = t.await {
                out.insert(name, r);
            }
        }
        out
    });
    let mut outcomes = Vec::new();
    let mut new_servers = Map::new();
    for (name, server) in &servers {
        let conn = &server.raw;
        let old_entry = old_servers.get(name);
        let tools_of = |v: &Value| v.get("tools").and_then(Value::as_object).map_or(0, Map::len);
        let failed_live = server.live.as_ref().err().map(|why| Err(why.clone()));
        match seen.get(name).or(failed_live.as_ref()) {
            None if waiting.contains(name) => {
                let e = old_entry.cloned().unwrap_or(Value::Null);
                outcomes.push((name.clone(), Outcome::AwaitingApproval));
                if !e.is_null() {
                    new_servers.insert(name.clone(), e);
                }
            }
            None => {
                let e = old_entry.cloned().unwrap_or(Value::Null);
                outcomes.push((name.clone(), Outcome::Unchanged { tools: tools_of(&e) }));
                new_servers.insert(name.clone(), e);
            }
            Some(Ok(s)) => {
                let e = entry(conn, s, old_entry);
                let cold_start_ms = u64::try_from(s.cold_start.as_millis()).unwrap_or(u64::MAX);
                outcomes.push((name.clone(), Outcome::Introspected { tools: tools_of(&e), cold_start_ms }));
                new_servers.insert(name.clone(), e);
            }
            Some(Err(why)) => {
                let why = &crate::redact::redact(why).text;
                let mut e = match old_entry {
                    Some(Value::Object(o)) => o.clone(),
                    _ => {
                        let mut m = Map::new();
                        m.insert("description".into(), json!(""));
                        m.insert("config_hash".into(), json!(conn.config_hash()));
                        m.insert("connection".into(), serde_json::to_value(conn.stored()).unwrap_or(Value::Null));
                        m.insert("persistent".into(), json!(false));
                        m.insert("metadata".into(), json!({}));
                        m.insert("tools".into(), json!({}));
                        m
                    }
                };
                if let Some(Value::Object(meta)) = e.get_mut("metadata") {
                    meta.insert("error".into(), json!(why));
                } else {
                    e.insert("metadata".into(), json!({"error": why}));
                }
                outcomes.push((name.clone(), Outcome::Failed(why.clone())));
                new_servers.insert(name.clone(), Value::Object(e));
            }
        }
    }
    let popular = popularity(root, Utc::now());
    for (name, e) in new_servers.iter_mut() {
        let share = json!(popular.get(name).copied().unwrap_or(0.0));
        match e.get_mut("metadata") {
            Some(Value::Object(meta)) => {
                meta.insert("popularity".into(), share);
            }
            _ => {
                if let Value::Object(e) = e {
                    e.insert("metadata".into(), json!({"popularity": share}));
                }
            }
        }
    }
    let mut registry = json!({"version": "1", "servers": new_servers});
    // What a server says of itself (instructions, tool descriptions, errors) and what an
    // old registry kept are redacted like everything else tmws writes.
    crate::redact::redact_value(&mut registry);
    let mut text = serde_json::to_string_pretty(&registry).map_err(|e| Error::Environment(e.to_string()))?;
    text.push('\n');
    store::write_atomic(root, &root.join(REGISTRY_FILE), text.as_bytes())?;
    Ok(Built { outcomes, problems })
}

/// How many servers `build` introspects at the same time.
const INTROSPECT_AT_ONCE: usize = 8;

/// How long one server may take to be introspected (`tmws registry build --timeout-ms`).
pub const INTROSPECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Builds the registry again in a background thread when a client config changes: only
/// the servers whose `config_hash` changed are introspected. One build at a time; a change
/// during a build runs one more build after it.
#[derive(Debug, Clone)]
pub struct Rebuilder {
    root: PathBuf,
    config: Arc<Config>,
    /// (a build runs, another is wanted after it)
    state: Arc<Mutex<(bool, bool)>>,
}

impl Rebuilder {
    pub fn new(root: &Path, config: &Config) -> Rebuilder {
        Rebuilder { root: root.to_path_buf(), config: Arc::new(config.clone()), state: Arc::default() }
    }

    /// Asks for a build; returns at once.
    pub fn poke(&self) {
        {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if state.0 {
                state.1 = true;
                return;
            }
            *state = (true, false);
        }
        let this = self.clone();
        let spawned = std::thread::Builder::new().name("tmws-registry".into()).spawn(move || {
            loop {
                this.build_once();
                let mut state = this.state.lock().unwrap_or_else(|e| e.into_inner());
                if !state.1 {
                    state.0 = false;
                    return;
                }
                state.1 = false;
            }
        });
        if let Err(e) = spawned {
            tracing::warn!("cannot start the registry build: {e}");
            *self.state.lock().unwrap_or_else(|e| e.into_inner()) = (false, false);
        }
    }

    fn build_once(&self) {
        match build(&self.root, &self.config, false, INTROSPECT_TIMEOUT, false) {
            Ok(built) => {
                for p in &built.problems {
                    tracing::warn!("registry: {p}");
                }
                for (name, outcome) in &built.outcomes {
                    match outcome {
                        Outcome::Introspected { tools, cold_start_ms } => {
                            tracing::info!("registry: {name}: {tools} tools, cold start {cold_start_ms} ms");
                        }
                        Outcome::Failed(why) => tracing::warn!("registry: {name}: failed: {why}"),
                        Outcome::AwaitingApproval => tracing::warn!(
                            "registry: {name} is new or changed and not approved on this machine: not started; run \
`tmws registry approve {name}`"
                        ),
                        Outcome::Unchanged { .. } => {}
                    }
                }
            }
            Err(e) => tracing::warn!("registry build failed: {e}"),
        }
    }
}

/// One row of `tmws registry list`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Listed {
    pub server: String,
    pub tools: usize,
    pub cold_start_ms: Option<u64>,
    pub popularity: f64,
    pub error: Option<String>,
    /// `approved`, `awaiting approval` (new or changed in a client config since the user
    /// last approved it: nothing starts it), or `not configured` (in the registry only).
    pub approval: &'static str,
}

/// A server `registry approve` approved: what it runs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Approved {
    pub server: String,
    /// The command line (or the URL), secrets redacted.
    pub runs: String,
    /// Whether it was approved already, as it is.
    pub already: bool,
}

/// `tmws registry approve [SERVER]… [--all]`: approves servers of the client configs on
/// this machine, exactly as they are now.
pub fn approve(root: &Path, config: &Config, names: &[String], all: bool) -> Result<Vec<Approved>> {
    let (servers, _) = configured(root, config)?;
    if names.is_empty() && !all {
        return Err(Error::Usage("name the servers to approve, or pass --all for every one awaiting approval".into()));
    }
    let mut chosen: Vec<&Server> = Vec::new();
    for name in names {
        match servers.get(name) {
            Some(s) => chosen.push(s),
            None => {
                let known: Vec<&str> = servers.keys().map(String::as_str).collect();
                return Err(Error::NotFound(format!(
                    "no server `{name}` in the client configs; known: {}",
                    if known.is_empty() { "none".to_owned() } else { known.join(", ") }
                )));
            }
        }
    }
    if names.is_empty() {
        chosen = servers.values().collect();
    }
    let mut out = Vec::new();
    let mut to_approve = Vec::new();
    for s in chosen {
        let live = s.live.as_ref().map_err(|why| Error::Usage(why.clone()))?;
        let already = approval::approved(root, &s.name, live);
        if names.is_empty() && already {
            continue;
        }
        out.push(Approved {
            server: s.name.clone(),
            runs: crate::redact::redact(&approval::shown(live)).text,
            already,
        });
        to_approve.push((s.name.clone(), live.clone()));
    }
    approval::approve(root, &to_approve)?;
    Ok(out)
}

/// How long `registry approve` gives each server it introspects.
pub const APPROVE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long back popularity looks.
const POPULARITY_DAYS: i64 = 30;

/// Each server's share of the tool calls of the last 30 days (`usage.jsonl`), 0–1 rounded to
/// three decimals; servers without calls are absent.
pub fn popularity(root: &Path, now: DateTime<Utc>) -> BTreeMap<String, f64> {
    let bytes = super::tools::usage_bytes(root);
    let (lines, _) = jsonl::parse(&bytes);
    let since = now - chrono::Duration::days(POPULARITY_DAYS);
    let mut calls: BTreeMap<String, u64> = BTreeMap::new();
    let mut total = 0u64;
    for line in lines {
        let v = &line.value;
        let (Some(server), Some(at)) = (v.get("server").and_then(Value::as_str), v.get("at").and_then(Value::as_str))
        else {
            continue;
        };
        let Ok(at) = DateTime::parse_from_rfc3339(at) else { continue };
        if at.with_timezone(&Utc) < since || at.with_timezone(&Utc) > now + chrono::Duration::minutes(5) {
            continue;
        }
        *calls.entry(server.to_owned()).or_default() += 1;
        total += 1;
    }
    calls.into_iter().map(|(s, n)| (s, (n as f64 / total as f64 * 1000.0).round() / 1000.0)).collect()
}

/// `tmws registry list`: every server of the registry and of the client configs, by name,
/// with its popularity now and whether it is approved on this machine.
pub fn list(root: &Path, config: &Config) -> Result<Vec<Listed>> {
    let popular = popularity(root, Utc::now());
    let reg = load(root)?;
    let servers = reg.get("servers").and_then(Value::as_object).cloned().unwrap_or_default();
    let (configured, _) = configured(root, config)?;
    let approval_of = |name: &str| match configured.get(name).map(|s| s.live.as_ref()) {
        None => "not configured",
        Some(Ok(live)) if approval::approved(root, name, live) => "approved",
        Some(_) => "awaiting approval",
    };
    let mut rows: Vec<Listed> = servers
        .iter()
        .map(|(name, e)| Listed {
            server: name.clone(),
            tools: e.get("tools").and_then(Value::as_object).map_or(0, Map::len),
            cold_start_ms: e.pointer("/metadata/cold_start_ms").and_then(Value::as_u64),
            popularity: popular.get(name).copied().unwrap_or(0.0),
            error: e.pointer("/metadata/error").and_then(Value::as_str).map(|s| crate::redact::redact(s).text),
            approval: approval_of(name),
        })
        .collect();
    for name in configured.keys().filter(|n| !servers.contains_key(*n)) {
        rows.push(Listed {
            server: name.clone(),
            tools: 0,
            cold_start_ms: None,
            popularity: 0.0,
            error: None,
            approval: approval_of(name),
        });
    }
    rows.sort_by(|a, b| a.server.cmp(&b.server));
    Ok(rows)
}
