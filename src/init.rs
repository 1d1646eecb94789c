//! `tmws init`: make a folder a tmws root (docs/layout.md).
//!
//! Creates `.tmws/` with a commented `config.toml`, git-ignores the derived cache, marks
//! the JSONL logs `merge=union` so that two people appending merge cleanly, and optionally
//! registers `tmws mcp --agent CLIENT` in MCP client configs, adding the client's
//! hot-rules target to `rules.targets`, and installs agent hooks (`agent_hooks`). Running it again changes nothing but what it
//! brings up to date: an entry of its own that runs this machine's path once `tmws` is on
//! PATH, an entry without `--agent`. Existing files are merged into, never replaced.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::config::RulesTarget;
use crate::error::{Error, Result};
use crate::layout::{self, CONFIG_FILE};
use crate::store;

/// An MCP client whose project config `init` can register tmws in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum McpClient {
    Claude,
    Cursor,
    Vscode,
    Codex,
    Gemini,
}

impl McpClient {
    /// The project config file, relative to the root.
    pub fn config_path(self) -> &'static str {
        match self {
            McpClient::Claude => layout::CLAUDE_CONFIG,
            McpClient::Cursor => layout::CURSOR_CONFIG,
            McpClient::Vscode => layout::VSCODE_CONFIG,
            McpClient::Codex => layout::CODEX_CONFIG,
            McpClient::Gemini => layout::GEMINI_CONFIG,
        }
    }

    /// The key holding the map of servers.
    fn servers_key(self) -> &'static str {
        match self {
            McpClient::Vscode => "servers",
            McpClient::Codex => "mcp_servers",
            McpClient::Claude | McpClient::Cursor | McpClient::Gemini => "mcpServers",
        }
    }

    /// The client's name as tmws knows it: what `--mcp-client` takes, and the agent a
    /// server it starts writes and verifies as (`tmws mcp --agent NAME`).
    pub fn name(self) -> &'static str {
        match self {
            McpClient::Claude => "claude",
            McpClient::Cursor => "cursor",
            McpClient::Vscode => "vscode",
            McpClient::Codex => "codex",
            McpClient::Gemini => "gemini",
        }
    }

    /// The hot-rules file the client's agent reads (docs/hot-rules.md): Codex reads
    /// `AGENTS.md`, which is always written; VS Code's agent is Copilot's.
    pub fn rules_target(self) -> RulesTarget {
        match self {
            McpClient::Claude => RulesTarget::Claude,
            McpClient::Cursor => RulesTarget::Cursor,
            McpClient::Vscode => RulesTarget::Copilot,
            McpClient::Codex => RulesTarget::Agents,
            McpClient::Gemini => RulesTarget::Gemini,
        }
    }

    /// The arguments of the entry: the agent the server writes as, and the root named
    /// with the client's own workspace-folder variable where it has one (VS Code and
    /// Cursor may start a server in another folder); Claude Code, Codex and Gemini start it
    /// in the folder they run in (Claude Code also says `CLAUDE_PROJECT_DIR`), from where
    /// tmws finds the root by walking up.
    fn args(self) -> Vec<&'static str> {
        match self {
            McpClient::Vscode | McpClient::Cursor => {
                vec!["mcp", "--root", "${workspaceFolder}", "--agent", self.name()]
            }
            McpClient::Claude | McpClient::Codex | McpClient::Gemini => vec!["mcp", "--agent", self.name()],
        }
    }

    fn entry(self, command: &str) -> Value {
        let mut e = Map::new();
        if self == McpClient::Vscode {
            e.insert("type".into(), Value::from("stdio"));
        }
        e.insert("command".into(), Value::from(command));
        e.insert("args".into(), Value::from(self.args()));
        Value::Object(e)
    }
}

/// The command an entry runs: `tmws` when a `tmws` is on PATH (any tmws: the entry is
/// committed and runs on every machine), else this binary's absolute path, which is this
/// machine's only (a client starts servers with its own PATH, and `cargo build` puts tmws
/// nowhere on it).
pub fn command_for_clients(this_binary: Option<&Path>) -> String {
    let on_path = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            dir.is_absolute() && (store::is_executable(&dir.join("tmws")) || store::is_file(&dir.join("tmws.exe")))
        })
    });
    match this_binary {
        Some(exe) if !on_path => exe.display().to_string(),
        _ => "tmws".to_owned(),
    }
}

/// Whether `command` names a file of this machine (an absolute path) rather than one
/// PATH finds.
fn machine_specific(command: &str) -> bool {
    Path::new(command).is_absolute()
}

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Created,
    Updated,
    Unchanged,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub path: String,
    pub action: Action,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct InitReport {
    pub root: PathBuf,
    pub changes: Vec<Change>,
    /// The main worktree whose project a root in a linked git worktree joins: one
    /// project, whose approvals, usage log and commit links are kept there
    /// (docs/tasks.md#worktrees).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub joins: Option<PathBuf>,
}

impl InitReport {
    pub fn changed(&self) -> bool {
        self.changes.iter().any(|c| c.action != Action::Unchanged)
    }
}

/// The line `init` adds to `.gitignore`.
pub const GITIGNORE_LINE: &str = ".tmws/cache/";
/// The line `init` adds to `.gitattributes`.
pub const GITATTRIBUTES_LINE: &str = ".tmws/**/*.jsonl merge=union";

/// The commented config written by `init`: every key with its default.
pub const CONFIG_TEMPLATE: &str = r#"# tmws configuration. Every key is optional: the values shown are the defaults.
# Uncomment a line to change it. An unknown key, a wrong type or a value out of range is an
# error that names the key and its line.

# Memory namespaces (one JSONL log each under .tmws/memory/). Other names may be added.
# [namespaces.short-term]
# ttl_days = 14
# max_entries = 2000
# max_content_chars = 200000
# max_summary_chars = 1200
# half_life_days = 30.0

# [namespaces.long-term]
# ttl_days = 3650
# max_entries = 20000
# max_content_chars = 500000
# max_summary_chars = 1200
# half_life_days = 30.0

# What the tools take when a call leaves a parameter out: top_k is memory_search's limit
# (1 to 100), min_score its min_score (0 to 1), answer_cap_chars every answer's max_chars
# (100 to 100000); stale_factor multiplies the score of an item whose cited code changed
# or is gone (0 to 1).
# [retrieval]
# top_k = 5
# min_score = 0.15
# answer_cap_chars = 24000
# stale_factor = 0.5

# [memory]
# fsync = true
# compact_garbage_ratio = 0.5
# prune_below (unset: off): the upkeep deletes entries whose current importance fell below
# it (0.05, say).

# Sessions recorded by tmws mcp and serve when a client disconnects or stays idle.
# [sessions]
# auto = true
# idle_minutes = 30.0

# Memory upkeep inside tmws watch, mcp and serve (cleanup, prune, gc-branches): every
# every_secs (0: never), once no request came for idle_secs.
# [upkeep]
# every_secs = 86400
# idle_secs = 60

# A query from the command line on a root of auto_min_files files or more, when no tmws
# process keeps its index, starts `tmws watch` in the background: the next queries then
# skip the stat of every file. It stops after auto_idle_secs without a query.
# [watch]
# debounce_ms = 50
# auto = true
# auto_min_files = 5000
# auto_idle_secs = 600

# Extra Markdown folders or globs to index as kind `doc`, e.g. ["docs/adr", "docs/**/*.md"].
# [index]
# include = []

# Recall by meaning: "builtin" (the model inside tmws), "off" (words only), or a folder
# inside the root holding model.safetensors of the same format. `memories` names a folder
# inside the root holding a sentence-transformers BERT encoder (such as all-MiniLM-L6-v2):
# memories are then found by its vectors, closer in meaning, slower (milliseconds each).
# [semantic]
# model = "builtin"
# memories = "off"

# Review of what agents write: "write" stores it at once; "propose" keeps long-term
# memories and entries written through MCP, HTTP or hooks out of answers until
# `tmws review approve`. memory_add names a live memory this close in meaning (cosine)
# in `similar_to`.
# [review]
# agents = "write"
# duplicate_similarity = 0.92

# Briefings through agent hooks (`tmws hooks install CLIENT`): characters per event,
# and the least relevance (0-1) of what a prompt or a tool call is briefed with.
# [hooks]
# session_start_chars = 6000
# post_compact_chars = 6000
# prompt_chars = 2000
# pre_tool_chars = 1200
# min_score = 0.35

# Issue trackers, off until a section is written (docs/trackers.md). The token is read from
# the environment variable token_env names, never from a file. For example:
# [trackers]
# github: [trackers.github] with repo="owner/name", api_url="https://api.github.com", token_env="GITHUB_TOKEN"
# gitlab: [trackers.gitlab] with project="group/name", api_url="https://gitlab.com", token_env="GITLAB_TOKEN"
# jira: [trackers.jira] with project="PROJ", api_url="https://example.atlassian.net", token_env="JIRA_TOKEN", user_env="JIRA_USER"

# Downstream MCP servers: at most 10 live connections.
# [pool]
# max_size = 10
# default_ttl_secs = 900
# grace_secs = 60
# call_timeout_secs = 120
# queue_timeout_secs = 30

# [registry]
# sources = [".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json", ".codex/config.toml", ".gemini/settings.json"]

# Hot-memory rule files (agent/rules/common/*.md) together.
# [rules]
# total_budget_lines = 500
# The files `tmws build-rules` writes: agents (AGENTS.md, always), claude (CLAUDE.md),
# gemini (GEMINI.md), cursor (.cursor/rules/tmws.mdc), copilot
# (.github/copilot-instructions.md). `tmws init --mcp-client NAME` adds the client's.
# targets = ["agents"]

# Tasks (`tmws task start NAME`): the folder of their worktrees, relative to the main
# worktree or absolute; {repo} is the main worktree's folder name.
# [tasks]
# worktrees_dir = "../{repo}-worktrees"
"#;

/// Initialises `root` (which need not exist yet); `command` is what client entries run,
/// `this_binary` the running tmws (an entry running it by its path is tmws's own).
pub fn init(
    root: &Path,
    clients: &[McpClient],
    hooks: &[crate::agent_hooks::HookClient],
    command: &str,
    this_binary: Option<&Path>,
) -> Result<InitReport> {
    store::create_dir_all(root)?;
    let root = store::canonicalize(root)?;
    let mut changes = Vec::new();

    let config = root.join(CONFIG_FILE);
    let created = !store::exists(&config);
    if created {
        store::write_atomic(&root, &config, CONFIG_TEMPLATE.as_bytes())?;
    }
    let mut targets: Vec<RulesTarget> = Vec::new();
    for c in clients {
        if !targets.contains(&c.rules_target()) {
            targets.push(c.rules_target());
        }
    }
    let added = add_rules_targets(&root, &targets)?;
    let said = |added: &[RulesTarget]| {
        let names: Vec<String> = added.iter().map(|t| format!("`{}`", target_name(*t))).collect();
        format!("rules.targets gets {} (tmws build-rules writes its file)", names.join(", "))
    };
    changes.push(match (created, added.is_empty()) {
        (true, true) => Change {
            path: CONFIG_FILE.into(),
            action: Action::Created,
            detail: "every key commented, with its default".into(),
        },
        (true, false) => Change {
            path: CONFIG_FILE.into(),
            action: Action::Created,
            detail: format!("every key commented, with its default; {}", said(&added)),
        },
        (false, true) => Change { path: CONFIG_FILE.into(), action: Action::Unchanged, detail: "kept as it is".into() },
        (false, false) => Change { path: CONFIG_FILE.into(), action: Action::Updated, detail: said(&added) },
    });
    changes.push(ensure_line(&root, ".gitignore", GITIGNORE_LINE, &[".tmws/cache", "/.tmws/cache/", "/.tmws/cache"])?);
    changes.push(ensure_line(&root, ".gitattributes", GITATTRIBUTES_LINE, &[])?);

    let mut seen = Vec::new();
    for &client in clients {
        if !seen.contains(&client) {
            seen.push(client);
            changes.push(register_client(&root, client, command, this_binary)?);
        }
    }
    let installed = crate::agent_hooks::run(&root, hooks, crate::agent_hooks::HooksAction::Install, command)?;
    for f in installed.files {
        use crate::agent_hooks::HookState;
        let action = match f.state {
            HookState::Created => Action::Created,
            HookState::Updated => Action::Updated,
            _ => Action::Unchanged,
        };
        let detail = match action {
            Action::Unchanged => format!("{} hooks already run `tmws brief`", f.client.name()),
            _ => format!("{} hooks: {}", f.client.name(), f.details.join("; ")),
        };
        changes.push(Change { path: f.path, action, detail });
    }
    let joins = store::git::repository(&root).and_then(|r| r.main_worktree);
    Ok(InitReport { root, changes, joins })
}

/// A target's name in the config.
fn target_name(t: RulesTarget) -> String {
    serde_json::to_value(t).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// Adds `wanted` to `rules.targets` in the config (whose default is `["agents"]`), keeping
/// its comments: the template's commented `[rules]` and `targets` lines are uncommented
/// where they are, else the table is edited or added. Returns the targets it added.
fn add_rules_targets(root: &Path, wanted: &[RulesTarget]) -> Result<Vec<RulesTarget>> {
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let path = root.join(CONFIG_FILE);
    let text = store::read_text_opt(root, &path, store::cap::CONFIG)?.unwrap_or_default();
    let invalid = |why: String| Error::WithLine {
        path: PathBuf::from(CONFIG_FILE),
        line: 1,
        column: 1,
        message: format!("{why}; the file was left as it is"),
        hint: Some("fix the file, then run `tmws init` again".into()),
        cause: None,
    };
    let mut doc: toml_edit::DocumentMut =
        text.parse().map_err(|e: toml_edit::TomlError| invalid(format!("invalid TOML: {}", e.message())))?;
    let rules = doc.get("rules");
    if rules.is_some_and(|r| !r.is_table_like()) {
        return Err(invalid("`rules` is not a table".into()));
    }
    let current: Vec<String> = match rules.and_then(|r| r.get("targets")) {
        None => vec![target_name(RulesTarget::Agents)],
        Some(t) => match t.as_array() {
            Some(a) => a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
            None => return Err(invalid("`rules.targets` is not an array".into())),
        },
    };
    let added: Vec<RulesTarget> = wanted.iter().copied().filter(|t| !current.contains(&target_name(*t))).collect();
    if added.is_empty() {
        return Ok(added);
    }
    let all: Vec<String> = current.iter().cloned().chain(added.iter().map(|t| target_name(*t))).collect();
    let commented_table = "# [rules]\n";
    let commented_targets = "# targets = [\"agents\"]\n";
    let new_text = if rules.is_none()
        && text.starts_with("# tmws configuration.")
        && text.matches(commented_table).count() == 1
        && text.matches(commented_targets).count() == 1
        && text.find(commented_table) < text.find(commented_targets)
    {
        let list: Vec<String> = all.iter().map(|t| format!("\"{t}\"")).collect();
        text.replacen(commented_table, "[rules]\n", 1).replacen(
            commented_targets,
            &format!("targets = [{}]\n", list.join(", ")),
            1,
        )
    } else {
        let table = doc.entry("rules").or_insert(toml_edit::Item::Table(toml_edit::Table::new()));
        match table.get_mut("targets").and_then(toml_edit::Item::as_array_mut) {
            Some(array) => {
                for t in &added {
                    array.push(target_name(*t));
                }
            }
            None => {
                let mut array = toml_edit::Array::new();
                for t in &all {
                    array.push(t.as_str());
                }
                table["targets"] = toml_edit::value(array);
            }
        }
        doc.to_string()
    };
    store::write_atomic(root, &path, new_text.as_bytes())?;
    Ok(added)
}

/// Appends `line` to a text file unless it (or an equivalent) is already there.
fn ensure_line(root: &Path, name: &str, line: &str, equivalents: &[&str]) -> Result<Change> {
    let path = root.join(name);
    let existing = store::read_text_opt(root, &path, store::cap::CONFIG)?;
    let present =
        existing.as_deref().is_some_and(|t| t.lines().map(str::trim).any(|l| l == line || equivalents.contains(&l)));
    if present {
        return Ok(Change { path: name.into(), action: Action::Unchanged, detail: format!("already has `{line}`") });
    }
    let mut text = existing.clone().unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(line);
    text.push('\n');
    store::write_atomic(root, &path, text.as_bytes())?;
    let action = if existing.is_some() { Action::Updated } else { Action::Created };
    Ok(Change { path: name.into(), action, detail: format!("added `{line}`") })
}

/// Whether a server entry runs `tmws mcp`, by the name of its program (`tmws`, or a
/// copy named `tmws-dev`, `tmws.exe`…); `parse::clients` also knows `cargo run -- mcp`.
pub fn runs_tmws_mcp(entry: &Value) -> bool {
    let command = entry.get("command").and_then(Value::as_str).unwrap_or("");
    let args: Vec<String> = entry
        .get("args")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    crate::parse::clients::Connection { command: Some(command.to_owned()), args, ..Default::default() }
        .is_tmws_by_name()
}

/// What an entry of tmws's own lacks: `tmws` for the machine's path it runs, once `tmws`
/// is on PATH; `--agent NAME` (never replacing the one a user chose).
struct Missing {
    command: Option<String>,
    agent: bool,
}

impl Missing {
    fn of(entry: &Value, command: &str, this_binary: Option<&Path>) -> Missing {
        let current = entry.get("command").and_then(Value::as_str).unwrap_or("");
        let own_path = machine_specific(current)
            && (Path::new(current).file_stem().is_some_and(|s| s == "tmws")
                || this_binary.is_some_and(|exe| store::same_file(Path::new(current), exe)));
        let command = (command == "tmws" && current != "tmws" && own_path).then(|| command.to_owned());
        let has_agent = entry
            .get("args")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().filter_map(Value::as_str).any(|a| a == "--agent" || a.starts_with("--agent=")));
        Missing { command, agent: !has_agent }
    }

    fn any(&self) -> bool {
        self.command.is_some() || self.agent
    }

    /// What was brought up to date, for the report.
    fn said(&self, name: &str, client: McpClient) -> String {
        let mut parts = Vec::new();
        if let Some(c) = &self.command {
            parts.push(format!("now runs `{c}` (on PATH) instead of this machine's path"));
        }
        if self.agent {
            parts.push(format!("added `--agent {}`", client.name()));
        }
        format!("server `{name}`: {}", parts.join("; "))
    }
}

/// Adds a `tmws` server to a client's project config, keeping every other entry and the
/// user's comments: the file's text is edited where the entry goes, never rewritten. An
/// entry that runs tmws already is brought up to date ([`Missing`]) and otherwise kept.
fn register_client(root: &Path, client: McpClient, command: &str, this_binary: Option<&Path>) -> Result<Change> {
    let rel = client.config_path();
    let path = root.join(rel);
    let existing = store::read_text_opt(root, &path, store::cap::CONFIG)?;
    let invalid = |line: usize, column: usize, why: String| Error::WithLine {
        path: PathBuf::from(rel),
        line,
        column,
        message: format!("{why}; the file was left as it is"),
        hint: Some("fix the file, then run `tmws init` again".into()),
        cause: None,
    };
    let entry = client.entry(command);
    let text = existing.as_deref().filter(|t| !t.trim().is_empty());
    // What the file says now, to find an entry that runs tmws already.
    let current: Value = match (client, text) {
        (_, None) => Value::Object(Map::new()),
        (McpClient::Codex, Some(t)) => {
            let table = t.parse::<toml::Table>().map_err(|e| {
                let (line, column) = e.span().map_or((1, 1), |s| crate::parse::line_col(t, s.start));
                invalid(line, column, format!("invalid TOML: {}", e.message()))
            })?;
            serde_json::to_value(table).unwrap_or(Value::Null)
        }
        (_, Some(t)) => {
            let options = jsonc_parser::ParseOptions { allow_loose_object_property_names: false, ..Default::default() };
            jsonc_parser::parse_to_serde_value::<Value>(t, &options)
                .map_err(|e| invalid(e.line_display(), e.column_display(), format!("invalid JSON: {}", e.kind())))?
        }
    };
    let servers = match current.get(client.servers_key()) {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(_) => return Err(invalid(1, 1, format!("`{}` is not an object", client.servers_key()))),
    };
    if !current.is_object() {
        return Err(invalid(1, 1, "the document is not an object".into()));
    }
    let this_machine = |detail: String, runs: &str| {
        if machine_specific(runs) {
            format!(
                "{detail}; `{runs}` is this machine's path (tmws is not on PATH): run `tmws init --mcp-client {}` again once it is",
                client.name()
            )
        } else {
            detail
        }
    };
    if let Some((name, found)) = servers.and_then(|m| m.iter().find(|(_, e)| runs_tmws_mcp(e))) {
        let missing = Missing::of(found, command, this_binary);
        let runs = found.get("command").and_then(Value::as_str).unwrap_or("");
        if !missing.any() {
            return Ok(Change {
                path: rel.into(),
                action: Action::Unchanged,
                detail: this_machine(format!("server `{name}` already runs `tmws mcp`"), runs),
            });
        }
        let text = text.unwrap_or("");
        let new_text = match client {
            McpClient::Codex => update_toml(text, client, name, &missing).map_err(|e| invalid(1, 1, e))?,
            _ => update_json(text, client, name, &missing).map_err(|(line, column, why)| invalid(line, column, why))?,
        };
        store::write_atomic(root, &path, new_text.as_bytes())?;
        let runs = missing.command.as_deref().unwrap_or(runs);
        return Ok(Change {
            path: rel.into(),
            action: Action::Updated,
            detail: this_machine(missing.said(name, client), runs),
        });
    }
    let replaced = servers.is_some_and(|m| m.contains_key("tmws"));
    let new_text = match client {
        McpClient::Codex => {
            let mut doc: toml_edit::DocumentMut =
                text.unwrap_or("").parse().map_err(|e: toml_edit::TomlError| invalid(1, 1, e.to_string()))?;
            let mut table = toml_edit::Table::new();
            table["command"] = toml_edit::value(command);
            let mut args = toml_edit::Array::new();
            for a in client.args() {
                args.push(a);
            }
            table["args"] = toml_edit::value(args);
            let servers = doc.entry(client.servers_key()).or_insert(toml_edit::Item::Table(toml_edit::Table::new()));
            if let Some(t) = servers.as_table_mut() {
                t.set_implicit(true);
                t.insert("tmws", toml_edit::Item::Table(table));
            }
            doc.to_string()
        }
        _ => match text {
            None => {
                let mut doc = Map::new();
                let mut servers = Map::new();
                servers.insert("tmws".into(), entry);
                doc.insert(client.servers_key().into(), Value::Object(servers));
                let mut t = serde_json::to_string_pretty(&Value::Object(doc)).map_err(|e| Error::environment("", e))?;
                t.push('\n');
                t
            }
            Some(t) => {
                let cst =
                    jsonc_parser::cst::CstRootNode::parse(t, &jsonc_parser::ParseOptions::default()).map_err(|e| {
                        invalid(e.line_display(), e.column_display(), format!("invalid JSON: {}", e.kind()))
                    })?;
                let servers = cst.object_value_or_set().object_value_or_set(client.servers_key());
                match servers.get("tmws") {
                    Some(prop) => prop.set_value(cst_value(&entry)),
                    None => {
                        servers.append("tmws", cst_value(&entry));
                    }
                }
                cst.to_string()
            }
        },
    };
    store::write_atomic(root, &path, new_text.as_bytes())?;
    let action = if existing.is_some() { Action::Updated } else { Action::Created };
    let runs = format!("{command} {}", client.args().join(" "));
    let detail = if replaced {
        format!("replaced server `tmws` with one that runs `{runs}`")
    } else {
        format!("added server `tmws` (runs `{runs}`)")
    };
    Ok(Change { path: rel.into(), action, detail: this_machine(detail, command) })
}

/// The JSON config's text with the entry `name` brought up to date, its comments kept.
fn update_json(
    text: &str,
    client: McpClient,
    name: &str,
    missing: &Missing,
) -> std::result::Result<String, (usize, usize, String)> {
    use jsonc_parser::cst::CstInputValue as C;
    let cst = jsonc_parser::cst::CstRootNode::parse(text, &jsonc_parser::ParseOptions::default())
        .map_err(|e| (e.line_display(), e.column_display(), format!("invalid JSON: {}", e.kind())))?;
    let entry = cst
        .object_value()
        .and_then(|o| o.object_value(client.servers_key()))
        .and_then(|s| s.object_value(name))
        .ok_or_else(|| (1, 1, format!("server `{name}` is not an object")))?;
    if let Some(command) = &missing.command {
        match entry.get("command") {
            Some(prop) => prop.set_value(C::String(command.clone())),
            None => {
                entry.append("command", C::String(command.clone()));
            }
        }
    }
    if missing.agent {
        let args = entry.array_value_or_set("args");
        args.append(C::String("--agent".into()));
        args.append(C::String(client.name().into()));
    }
    Ok(cst.to_string())
}

/// The TOML config's text with the entry `name` brought up to date, its comments kept.
fn update_toml(text: &str, client: McpClient, name: &str, missing: &Missing) -> std::result::Result<String, String> {
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| e.to_string())?;
    let entry = doc
        .get_mut(client.servers_key())
        .and_then(|s| s.get_mut(name))
        .and_then(toml_edit::Item::as_table_like_mut)
        .ok_or_else(|| format!("server `{name}` is not a table"))?;
    if let Some(command) = &missing.command {
        entry.insert("command", toml_edit::value(command.as_str()));
    }
    if missing.agent {
        match entry.get_mut("args").and_then(toml_edit::Item::as_array_mut) {
            Some(args) => {
                args.push("--agent");
                args.push(client.name());
            }
            None => {
                let mut args = toml_edit::Array::new();
                args.push("mcp");
                args.push("--agent");
                args.push(client.name());
                entry.insert("args", toml_edit::value(args));
            }
        }
    }
    Ok(doc.to_string())
}

/// A JSON value as the CST editor inserts it.
fn cst_value(v: &Value) -> jsonc_parser::cst::CstInputValue {
    use jsonc_parser::cst::CstInputValue as C;
    match v {
        Value::Null => C::Null,
        Value::Bool(b) => C::Bool(*b),
        Value::Number(n) => C::Number(n.to_string()),
        Value::String(s) => C::String(s.clone()),
        Value::Array(a) => C::Array(a.iter().map(cst_value).collect()),
        Value::Object(m) => C::Object(m.iter().map(|(k, v)| (k.clone(), cst_value(v))).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn the_template_is_the_defaults() {
        assert_eq!(Config::parse(CONFIG_TEMPLATE).unwrap(), Config::default());
        let uncommented: String = CONFIG_TEMPLATE
            .lines()
            .filter(|l| l.starts_with("# [") || l.starts_with("# ") && l.contains(" = "))
            .map(|l| format!("{}\n", &l[2..]))
            .collect();
        assert_eq!(Config::parse(&uncommented).unwrap(), Config::default());
        // The ranges it states are the limits the config is checked against.
        use crate::limits::{ANSWER_CHARS, MEMORY_SEARCH_RESULTS, MIN_SCORE};
        let flat = CONFIG_TEMPLATE.replace("\n# ", " ");
        for said in [
            format!("top_k is memory_search's limit ({} to {})", MEMORY_SEARCH_RESULTS.min, MEMORY_SEARCH_RESULTS.max),
            format!("min_score its min_score ({} to {})", MIN_SCORE.min, MIN_SCORE.max),
            format!("answer_cap_chars every answer's max_chars ({} to {})", ANSWER_CHARS.min, ANSWER_CHARS.max),
        ] {
            assert!(flat.contains(&said), "{said}");
        }
    }

    #[test]
    fn recognises_tmws_entries() {
        assert!(runs_tmws_mcp(&serde_json::json!({"command": "/usr/local/bin/tmws", "args": ["mcp", "--root", "."]})));
        assert!(!runs_tmws_mcp(&serde_json::json!({"command": "tmws", "args": ["serve"]})));
        assert!(!runs_tmws_mcp(&serde_json::json!({"command": "uvx", "args": ["serena"]})));
    }
}
