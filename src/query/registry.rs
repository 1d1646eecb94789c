//! The sparse registry (docs/registry.md): `.tmws/registry/index.json`, built from the MCP
//! client configs by introspecting each server once.
//!
//! Only servers the user approved on this machine, as they are now, are started
//! (`approval`): `review` says which are new or changed and shows each as the user is to
//! see it before approving (command, folder, env and header names, URL without its
//! secrets, the user's variables it takes, the files of the root it runs), `grant`
//! approves exactly that. A server whose `config_hash` is unchanged is kept as it is
//! (`force` redoes it). A new or changed one is introspected — all of them at once, each
//! within a timeout — and its entry rebuilt, keeping the hand-edited fields of the old one
//! (`description`, `persistent`, `ttl_secs`; per tool `description`, `category`,
//! `usage_hint`, `dependencies`). A server that fails keeps its previous entry with the
//! error in `metadata.error`, its URLs shown without user info or query values and the
//! rest redacted; so does one that lists more than `MAX_TOOLS` tools. Servers no longer in
//! any config are dropped. The file is written atomically, pretty-printed with keys in a
//! stable order, so that people can edit and diff it, and never larger than its readers
//! take (16 MiB): a build that would write more keeps the old file and fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;

use super::approval;
use crate::config::Config;
use crate::error::{Chain, Error, Result};
use crate::layout::REGISTRY_FILE;
use crate::parse::clients::{self, Connection, Server, Vars};
use crate::parse::jsonl;
use crate::parse::registry::{self as file, Metadata, Registry, Tool};
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
            if is_this_tmws(root, &server) {
                continue;
            }
            servers.entry(server.name.clone()).or_insert(server);
        }
    }
    Ok((servers, problems))
}

/// Whether a configured server is tmws itself, which is never catalogued (it would call
/// itself): named as tmws (`Connection::is_tmws_by_name`, skipped when the config is
/// read), or whatever its name, a command that is this running binary (the same file) or
/// a copy of it (the same length and bytes), or `cargo run -- mcp` naming no binary in a
/// root whose `Cargo.toml` is tmws's package.
fn is_this_tmws(root: &Path, server: &Server) -> bool {
    let Ok(live) = &server.live else { return false };
    if let Some(names) = live.cargo_run_mcp() {
        if !names.is_empty() {
            return false;
        }
        let manifest = root.join(live.manifest_path().unwrap_or("Cargo.toml"));
        let Ok(Some(text)) = store::read_text_opt(root, &manifest, store::cap::CONFIG) else { return false };
        let Ok(cargo) = text.parse::<toml::Table>() else { return false };
        let name = |v: &toml::Value| v.get("name").and_then(toml::Value::as_str).is_some_and(clients::named_tmws);
        return cargo.get("package").is_some_and(name)
            || cargo.get("bin").and_then(toml::Value::as_array).is_some_and(|bins| bins.iter().any(name));
    }
    let Some(command) = live.command.as_deref().filter(|c| !c.is_empty() && !c.contains('\0')) else { return false };
    let Some(exe) = this_binary() else { return false };
    let program = if command.contains('/') {
        root.join(command)
    } else {
        let path = std::env::var_os("PATH").unwrap_or_default();
        match std::env::split_paths(&path).map(|d| root.join(d).join(command)).find(|p| store::is_executable(p)) {
            Some(p) => p,
            None => return false,
        }
    };
    if store::same_file(&program, &exe.path) {
        return true;
    }
    if store::file_len(&program) != Some(exe.len) {
        return false;
    }
    let Some(ours) = exe.hash.get_or_init(|| store::hash_file(&exe.path, exe.len).ok()) else { return false };
    store::canonicalize(&program).ok().and_then(|p| store::hash_file(&p, exe.len).ok()).as_ref() == Some(ours)
}

/// The running tmws: its file, length and (once asked) the hash of its bytes.
struct ThisBinary {
    path: PathBuf,
    len: u64,
    hash: std::sync::OnceLock<Option<String>>,
}

fn this_binary() -> Option<&'static ThisBinary> {
    static EXE: std::sync::OnceLock<Option<ThisBinary>> = std::sync::OnceLock::new();
    EXE.get_or_init(|| {
        let path = std::env::current_exe().ok().and_then(|p| store::canonicalize(&p).ok())?;
        let len = store::file_len(&path)?;
        Some(ThisBinary { path, len, hash: std::sync::OnceLock::new() })
    })
    .as_ref()
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

/// Whether the index holds the registry file as it is on disk now: `tool_search` answers
/// from the index, and says `stale: true` when it may be behind the file (a build, or an
/// edit, that the process keeping the index has not applied yet).
pub(crate) fn indexed_as_now(index: &crate::index::Index) -> bool {
    index.holds_as_now(REGISTRY_FILE)
}

/// The registry as it is on disk (an empty one when there is none).
pub fn load(root: &Path) -> Result<Registry> {
    let Some(text) = store::read_text_opt(root, &root.join(REGISTRY_FILE), store::cap::CONFIG)? else {
        return Ok(Registry::default());
    };
    match Registry::read(&text) {
        Ok(Some(registry)) => Ok(registry),
        Ok(None) => Err(Error::Environment(format!("{REGISTRY_FILE}: not a JSON object"))),
        Err(e) => Err(Error::environment(format!("{REGISTRY_FILE}:{}:{}", e.line(), e.column()), e)),
    }
}

/// A server's entry from what it said, keeping the hand-edited fields of `old`.
fn entry(conn: &Connection, seen: &Introspection, old: Option<&file::Server>) -> file::Server {
    let mut sorted: Vec<&(String, String, Value)> = seen.tools.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let tools = sorted
        .into_iter()
        .map(|(name, description, schema)| {
            let old = old.and_then(|o| o.tools.get(name));
            let tool = Tool {
                description: old.and_then(|t| t.description.clone()).or_else(|| Some(description.clone())),
                input_schema: match schema {
                    Value::Object(m) => Some(m.clone()),
                    _ => None,
                },
                category: old.and_then(|t| t.category.clone()),
                usage_hint: old.and_then(|t| t.usage_hint.clone()),
                dependencies: old.and_then(|t| t.dependencies.clone()),
                other: serde_json::Map::new(),
            };
            (name.clone(), tool)
        })
        .collect();
    let description = seen.instructions.clone().unwrap_or_else(|| seen.name.clone());
    file::Server {
        description: old
            .and_then(|o| o.description.clone())
            .or_else(|| Some(description.lines().next().unwrap_or_default().to_owned())),
        config_hash: Some(conn.config_hash()),
        connection: serde_json::to_value(conn.stored()).ok(),
        persistent: old.and_then(|o| o.persistent).or(Some(false)),
        ttl_secs: old.and_then(|o| o.ttl_secs),
        metadata: Some(Metadata {
            cold_start_ms: Some(u64::try_from(seen.cold_start.as_millis()).unwrap_or(u64::MAX)),
            introspected_at: Some(Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)),
            popularity: Some(0.0),
            ..Metadata::default()
        }),
        tools,
        other: serde_json::Map::new(),
    }
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
/// server. Only servers the user approved as they are now are started (`registry approve`,
/// or the approval `registry build` asks for first); the others await approval. Failing
/// servers are in the answer (the caller exits non-zero).
pub fn build(root: &Path, config: &Config, force: bool, timeout: Duration) -> Result<Built> {
    let (servers, mut problems) = configured(root, config)?;
    let old = match load(root) {
        Ok(old) => old,
        // A registry too large to read (an older build wrote it) is built again from the
        // client configs; one that is not JSON is a person's edit, and stays an error.
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::InvalidData => {
            problems.push(format!("{REGISTRY_FILE}: {source}: built again from the client configs"));
            Registry::default()
        }
        Err(e) => return Err(e),
    };
    let old_servers = old.servers;
    let mut waiting = std::collections::BTreeSet::new();
    let mut unlaunched: BTreeMap<String, String> = BTreeMap::new();
    let mut todo: Vec<(String, Connection, pool::Exec)> = Vec::new();
    for s in servers.values() {
        let old = old_servers.get(&s.name);
        let stale = force
            || old.and_then(|o| o.config_hash.as_deref()) != Some(s.raw.config_hash().as_str())
            || old.and_then(|o| o.metadata.as_ref()).is_some_and(|m| m.error.is_some());
        let Ok(live) = &s.live else { continue };
        // What it runs is looked at for every server, so that one awaiting approval is
        // named even when its entry is up to date.
        let launch = match approval::launch(root, live) {
            Ok(l) => l,
            Err(e) => {
                unlaunched.insert(s.name.clone(), format!("cannot read what it runs: {e}"));
                continue;
            }
        };
        if approval::status(root, &s.name, &launch)? != approval::Status::Approved {
            waiting.insert(s.name.clone());
        } else if stale {
            todo.push((s.name.clone(), live.clone(), launch.exec));
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::environment("cannot start the async runtime", e))?;
    let seen: BTreeMap<String, std::result::Result<Introspection, String>> = runtime.block_on(async {
        // In parallel, but not hundreds of processes at once.
        let limit = std::sync::Arc::new(tokio::sync::Semaphore::new(INTROSPECT_AT_ONCE));
        let tasks: Vec<_> = todo
            .into_iter()
            .map(|(name, conn, exec)| {
                let limit = limit.clone();
                tokio::spawn(async move {
                    let _turn = limit.acquire_owned().await;
                    (name, pool::introspect(&conn, &exec, timeout).await)
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
    let mut new_servers = BTreeMap::new();
    for (name, server) in &servers {
        let conn = &server.raw;
        let old_entry = old_servers.get(name);
        let tools_of = |e: &file::Server| e.tools.len();
        let failed = server.live.as_ref().err().or(unlaunched.get(name)).map(|why| Err(why.clone()));
        let result = seen.get(name).or(failed.as_ref()).map(|r| match r {
            Ok(s) if s.tools.len() > MAX_TOOLS => Err(format!(
                "it lists {} tools, more than the {MAX_TOOLS} a server may have in the registry; its previous entry \
is kept",
                s.tools.len()
            )),
            other => other.clone(),
        });
        match result {
            None if waiting.contains(name) => {
                outcomes.push((name.clone(), Outcome::AwaitingApproval));
                if let Some(e) = old_entry {
                    new_servers.insert(name.clone(), e.clone());
                }
            }
            None => {
                let e = old_entry.cloned().unwrap_or_default();
                outcomes.push((name.clone(), Outcome::Unchanged { tools: tools_of(&e) }));
                new_servers.insert(name.clone(), e);
            }
            Some(Ok(s)) => {
                let e = entry(conn, &s, old_entry);
                let cold_start_ms = u64::try_from(s.cold_start.as_millis()).unwrap_or(u64::MAX);
                outcomes.push((name.clone(), Outcome::Introspected { tools: tools_of(&e), cold_start_ms }));
                new_servers.insert(name.clone(), e);
            }
            Some(Err(why)) => {
                let why = &shown_error(&why);
                let mut e = old_entry.cloned().unwrap_or_else(|| file::Server {
                    description: Some(String::new()),
                    config_hash: Some(conn.config_hash()),
                    connection: serde_json::to_value(conn.stored()).ok(),
                    persistent: Some(false),
                    metadata: Some(Metadata::default()),
                    ..file::Server::default()
                });
                e.metadata.get_or_insert_default().error = Some(why.clone());
                outcomes.push((name.clone(), Outcome::Failed(why.clone())));
                new_servers.insert(name.clone(), e);
            }
        }
    }
    let popular = popularity(root, Utc::now());
    for (name, e) in &mut new_servers {
        e.metadata.get_or_insert_default().popularity = Some(popular.get(name).copied().unwrap_or(0.0));
    }
    // What a server says of itself (instructions, tool descriptions, errors) and what an
    // old registry kept are redacted like everything else tmws writes.
    let registry = redacted(&Registry { version: file::VERSION.to_owned(), servers: new_servers })?;
    let text = registry.text().map_err(|e| Error::environment("", e))?;
    // Every reader takes the registry up to the cap: one it would refuse is never written.
    if text.len() as u64 > MAX_REGISTRY_BYTES {
        let biggest = registry
            .servers
            .iter()
            .map(|(n, e)| (n.as_str(), serde_json::to_string(e).map_or(0, |t| t.len())))
            .max_by_key(|(_, len)| *len)
            .map(|(n, len)| format!("; the largest server is `{n}` ({} MiB)", len >> 20))
            .unwrap_or_default();
        return Err(Error::Environment(format!(
            "{REGISTRY_FILE}: the registry would be {} MiB, more than the {} MiB tmws reads{biggest}; it was not \
written (the old one is kept): remove servers with many or large tools from the client configs",
            text.len() >> 20,
            MAX_REGISTRY_BYTES >> 20
        )));
    }
    store::write_atomic(root, &root.join(REGISTRY_FILE), text.as_bytes())?;
    Ok(Built { outcomes, problems })
}

/// The registry with every string in it redacted; one that cannot be read back once
/// redacted is never written.
fn redacted(registry: &Registry) -> Result<Registry> {
    let failed = |e| {
        Error::environment(format!("{REGISTRY_FILE}: the registry could not be redacted, so it was not written"), e)
    };
    let mut value = serde_json::to_value(registry).map_err(failed)?;
    crate::redact::redact_value(&mut value);
    serde_json::from_value(value).map_err(failed)
}

/// The most tools one server may have in the registry (docs/performance.md budgets 1,000 tools over
/// 200 servers); a server that lists more fails its build and keeps its previous entry.
pub const MAX_TOOLS: usize = 10_000;

/// The largest registry a build writes: what every reader takes (docs/trust-boundary.md).
const MAX_REGISTRY_BYTES: u64 = store::cap::CONFIG;

/// An error of a server as it is stored and shown: every URL in it as scheme, host and
/// path (no user info, no query values), then redacted like any text tmws writes.
fn shown_error(why: &str) -> String {
    crate::redact::redact(&clients::scrub_urls(why)).text
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
            tracing::warn!("cannot start the registry build: {}", Chain(&e));
            *self.state.lock().unwrap_or_else(|e| e.into_inner()) = (false, false);
        }
    }

    fn build_once(&self) {
        // A tmws started as a downstream server starts none of its own: a registry entry
        // that runs tmws cannot make it start itself again and again.
        if pool::is_downstream() {
            tracing::info!("registry: not built again under another tmws ({})", pool::DOWNSTREAM_MARKER);
            return;
        }
        match build(&self.root, &self.config, false, INTROSPECT_TIMEOUT) {
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
            Err(e) => tracing::warn!("registry build failed: {}", Chain(&e)),
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

/// A server of the client configs that awaits the user's approval, as the user is shown it before
/// approving (docs/registry.md#approval): what it runs and where, which names of the user's
/// environment it takes, which files of the root it runs. No value of a variable, header or secret
/// is shown.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Pending {
    pub server: String,
    /// Never approved on this machine (else approved before, and changed since).
    pub new: bool,
    /// What changed since it was approved, in words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
    /// `stdio` or `http`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The command line as written (`${VAR}` by name, secrets redacted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The folder it runs in: the root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The names of the environment variables it is given.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// The URL, with user info and query values replaced (`${VAR}` by name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The names of the headers it is sent.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<String>,
    /// The variables of the user's environment its config takes (their values go to the
    /// server once it is approved).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub uses_env: Vec<String>,
    /// The files and PATH folders inside the root that it runs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// What the approval records: exactly what was shown.
    #[serde(skip)]
    launch: approval::Launch,
}

/// The servers of the client configs that need the user's approval.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Review {
    /// New or changed since approved.
    pub pending: Vec<Pending>,
    /// Named, and approved already as they are: their command lines.
    pub approved: Vec<(String, String)>,
    /// Named (or configured), but their config cannot start them: why.
    pub unusable: Vec<(String, String)>,
}

/// The command line (or URL) of a server as written, secrets redacted.
fn runs_of(raw: &Connection) -> String {
    crate::redact::redact(&approval::shown(&raw.stored())).text
}

/// What `registry build` and `registry approve` show and ask for: the servers named (every
/// configured one when `names` is empty) that are new or changed since approved.
pub fn review(root: &Path, config: &Config, names: &[String]) -> Result<Review> {
    let (servers, _) = configured(root, config)?;
    for name in names {
        if !servers.contains_key(name) {
            let known: Vec<&str> = servers.keys().map(String::as_str).collect();
            return Err(Error::NotFound(format!(
                "no server `{name}` in the client configs; known: {}",
                if known.is_empty() { "none".to_owned() } else { known.join(", ") }
            )));
        }
    }
    let shown_root = store::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()).display().to_string();
    let mut out = Review::default();
    for s in servers.values().filter(|s| names.is_empty() || names.contains(&s.name)) {
        let live = match &s.live {
            Ok(l) => l,
            Err(why) => {
                out.unusable.push((s.name.clone(), why.clone()));
                continue;
            }
        };
        let launch = match approval::launch(root, live) {
            Ok(l) => l,
            Err(e) => {
                out.unusable.push((s.name.clone(), format!("cannot read what it runs: {e}")));
                continue;
            }
        };
        let (new, changed) = match approval::status(root, &s.name, &launch)? {
            approval::Status::Approved => {
                out.approved.push((s.name.clone(), runs_of(&s.raw)));
                continue;
            }
            approval::Status::New => (true, Vec::new()),
            approval::Status::Changed(what) => (false, what),
        };
        let stdio = s.raw.kind == "stdio";
        let redact = |t: &str| crate::redact::redact(t).text;
        out.pending.push(Pending {
            server: s.name.clone(),
            new,
            changed,
            kind: if stdio { "stdio".to_owned() } else { "http".to_owned() },
            command: stdio.then(|| runs_of(&s.raw)),
            cwd: stdio.then(|| shown_root.clone()),
            env: s.raw.env.keys().map(|k| redact(k)).collect(),
            url: s.raw.url.as_deref().filter(|_| !stdio).map(|u| redact(&clients::url_shown(u))),
            headers: s.raw.headers.keys().map(|k| redact(k)).collect(),
            uses_env: s.env_vars.clone(),
            files: launch.files(),
            launch,
        });
    }
    Ok(out)
}

/// Approves exactly what the user was shown: a file that changed since is not approved by
/// it (the server then awaits approval again).
pub fn grant(root: &Path, pending: &[Pending]) -> Result<()> {
    let chosen: Vec<(String, approval::Launch)> =
        pending.iter().map(|p| (p.server.clone(), p.launch.clone())).collect();
    approval::approve(root, &chosen)
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
    let servers = load(root)?.servers;
    let (configured, _) = configured(root, config)?;
    let mut approvals = BTreeMap::new();
    for (name, s) in &configured {
        let approved = match &s.live {
            Ok(live) => {
                let launch = approval::launch(root, live).ok();
                match launch {
                    Some(l) => approval::status(root, name, &l)? == approval::Status::Approved,
                    None => false,
                }
            }
            Err(_) => false,
        };
        approvals.insert(name.clone(), if approved { "approved" } else { "awaiting approval" });
    }
    let approval_of = |name: &str| approvals.get(name).copied().unwrap_or("not configured");
    let mut rows: Vec<Listed> = servers
        .iter()
        .map(|(name, e)| Listed {
            server: name.clone(),
            tools: e.tools.len(),
            cold_start_ms: e.metadata.as_ref().and_then(|m| m.cold_start_ms),
            popularity: popular.get(name).copied().unwrap_or(0.0),
            error: e.metadata.as_ref().and_then(|m| m.error.as_deref()).map(shown_error),
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
