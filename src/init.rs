//! `tmws init`: make a folder a tmws root (DESIGN §2).
//!
//! Creates `.tmws/` with a commented `config.toml`, git-ignores the derived cache, marks
//! the JSONL logs `merge=union` so that two people appending merge cleanly, and optionally
//! registers `tmws mcp` in MCP client configs. Running it again changes nothing; existing
//! files are merged into, never replaced.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

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
}

impl McpClient {
    /// The project config file, relative to the root.
    pub fn config_path(self) -> &'static str {
        match self {
            McpClient::Claude => layout::CLAUDE_CONFIG,
            McpClient::Cursor => layout::CURSOR_CONFIG,
            McpClient::Vscode => layout::VSCODE_CONFIG,
        }
    }

    /// The key holding the map of servers.
    fn servers_key(self) -> &'static str {
        match self {
            McpClient::Vscode => "servers",
            McpClient::Claude | McpClient::Cursor => "mcpServers",
        }
    }

    fn entry(self) -> Value {
        match self {
            McpClient::Vscode => serde_json::json!({"type": "stdio", "command": "tmws", "args": ["mcp"]}),
            McpClient::Claude | McpClient::Cursor => serde_json::json!({"command": "tmws", "args": ["mcp"]}),
        }
    }
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
# Uncomment a line to change it. An unknown key or a wrong type is an error.

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

# [retrieval]
# top_k = 5
# min_score = 0.15
# answer_cap_chars = 24000

# [memory]
# fsync = true
# compact_garbage_ratio = 0.5

# [watch]
# debounce_ms = 50

# Extra Markdown folders or globs to index as kind `doc`, e.g. ["docs/adr", "docs/**/*.md"].
# [index]
# include = []

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
"#;

/// Initialises `root` (which need not exist yet).
pub fn init(root: &Path, clients: &[McpClient]) -> Result<InitReport> {
    store::create_dir_all(root)?;
    let root = store::canonicalize(root)?;
    let mut changes = Vec::new();

    let config = root.join(CONFIG_FILE);
    if store::exists(&config) {
        changes.push(Change { path: CONFIG_FILE.into(), action: Action::Unchanged, detail: "kept as it is".into() });
    } else {
        store::write_atomic(&root, &config, CONFIG_TEMPLATE.as_bytes())?;
        changes.push(Change {
            path: CONFIG_FILE.into(),
            action: Action::Created,
            detail: "every key commented, with its default".into(),
        });
    }
    changes.push(ensure_line(&root, ".gitignore", GITIGNORE_LINE, &[".tmws/cache", "/.tmws/cache/", "/.tmws/cache"])?);
    changes.push(ensure_line(&root, ".gitattributes", GITATTRIBUTES_LINE, &[])?);

    let mut seen = Vec::new();
    for &client in clients {
        if !seen.contains(&client) {
            seen.push(client);
            changes.push(register_client(&root, client)?);
        }
    }
    Ok(InitReport { root, changes })
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

/// Whether a server entry runs `tmws mcp`.
pub fn runs_tmws_mcp(entry: &Value) -> bool {
    let command = entry.get("command").and_then(Value::as_str).unwrap_or("");
    let program = Path::new(command).file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let first_arg = entry.get("args").and_then(Value::as_array).and_then(|a| a.first()).and_then(Value::as_str);
    program == "tmws" && first_arg == Some("mcp")
}

/// Adds a `tmws` server to a client's project config, keeping every other entry.
fn register_client(root: &Path, client: McpClient) -> Result<Change> {
    let rel = client.config_path();
    let path = root.join(rel);
    let existing = store::read_text_opt(root, &path, store::cap::CONFIG)?;
    let mut doc = match &existing {
        None => Value::Object(Map::new()),
        Some(text) if text.trim().is_empty() => Value::Object(Map::new()),
        Some(text) => serde_json::from_str::<Value>(text).map_err(|e| Error::WithLine {
            path: PathBuf::from(rel),
            line: e.line(),
            column: e.column(),
            message: format!("invalid JSON ({}); the file was left as it is", crate::parse::json_error_message(&e)),
            hint: Some("fix the file (comments are not JSON), then run `tmws init` again".into()),
        })?,
    };
    let not_an_object = |what: &str| Error::WithLine {
        path: PathBuf::from(rel),
        line: 1,
        column: 1,
        message: format!("{what} is not a JSON object; the file was left as it is"),
        hint: None,
    };
    let top = doc.as_object_mut().ok_or_else(|| not_an_object("the document"))?;
    let servers = top
        .entry(client.servers_key())
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| not_an_object(&format!("`{}`", client.servers_key())))?;
    if let Some((name, _)) = servers.iter().find(|(_, e)| runs_tmws_mcp(e)) {
        return Ok(Change {
            path: rel.into(),
            action: Action::Unchanged,
            detail: format!("server `{name}` already runs `tmws mcp`"),
        });
    }
    let replaced = servers.insert("tmws".to_owned(), client.entry()).is_some();
    let mut text = serde_json::to_string_pretty(&doc).map_err(|e| Error::Environment(e.to_string()))?;
    text.push('\n');
    store::write_atomic(root, &path, text.as_bytes())?;
    let action = if existing.is_some() { Action::Updated } else { Action::Created };
    let detail = if replaced {
        "replaced server `tmws` with one that runs `tmws mcp`"
    } else {
        "added server `tmws` (runs `tmws mcp`)"
    };
    Ok(Change { path: rel.into(), action, detail: detail.into() })
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
    }

    #[test]
    fn recognises_tmws_entries() {
        assert!(runs_tmws_mcp(&serde_json::json!({"command": "/usr/local/bin/tmws", "args": ["mcp", "--root", "."]})));
        assert!(!runs_tmws_mcp(&serde_json::json!({"command": "tmws", "args": ["serve"]})));
        assert!(!runs_tmws_mcp(&serde_json::json!({"command": "uvx", "args": ["serena"]})));
    }
}
