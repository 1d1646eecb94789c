//! MCP client configs (DESIGN §2.4): the `mcpServers` map of `.mcp.json` and
//! `.cursor/mcp.json`, the `servers` map of `.vscode/mcp.json`, read into connections the
//! registry stores and the pool starts.
//!
//! A connection is a stdio command (`command`, `args`, `env`) or an HTTP endpoint (`url`,
//! `headers`). The live connection (what starts the server) keeps the config's values; in
//! the stored one (what the registry writes), values that look like secrets (an env var or header named like a token, a
//! key, a password; or a value shaped like an API key) are stored as `${VAR}` references,
//! never literally. The `config_hash` is blake3 of the connection's canonical JSON (keys
//! sorted, no spaces) after that substitution, so rotating a secret does not make the
//! registry stale, while any other change does. An entry that runs `tmws mcp` is tmws
//! itself and is skipped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{Diagnostic, Rule};
use crate::redact;

/// How to reach one server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connection {
    /// `stdio`, `http`, `sse` or `streamable-http`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

impl Connection {
    /// The connection as the registry stores it (DESIGN §2.4): an env or header value under
    /// a secret-looking name as a `${VAR}` reference; any other secret in the command, args,
    /// env, headers or URL (user info, query parameters) redacted; the value after a
    /// secret-looking flag (`--token X`) redacted whole.
    pub fn stored(&self) -> Connection {
        let mut c = self.clone();
        let clean = |text: &mut String| {
            redact::redact_in_place(text);
        };
        for (k, v) in c.env.iter_mut().chain(c.headers.iter_mut()) {
            if looks_secret(k, v) {
                *v = reference(k);
            } else {
                clean(v);
            }
        }
        if let Some(cmd) = &mut c.command {
            clean(cmd);
        }
        if let Some(url) = &mut c.url {
            clean(url);
        }
        let mut after_flag: Option<String> = None;
        for arg in &mut c.args {
            match after_flag.take() {
                Some(flag) if redact::secret_named(&flag, arg) => *arg = redact::mark("secret-flag"),
                _ => clean(arg),
            }
            if arg.starts_with('-') && !arg.contains('=') {
                after_flag = Some(arg.trim_start_matches('-').to_owned());
            }
        }
        c
    }

    /// blake3 (hex) of the canonical JSON of the stored connection.
    pub fn config_hash(&self) -> String {
        // serde_json with `preserve_order` keeps insertion order: sort through a BTreeMap.
        let v = serde_json::to_value(self.stored()).unwrap_or(Value::Null);
        blake3::hash(canonical(&v).as_bytes()).to_hex().to_string()
    }

    /// Whether this entry starts tmws' own MCP server.
    pub fn is_tmws(&self) -> bool {
        let Some(cmd) = &self.command else { return false };
        let program = cmd.rsplit(['/', '\\']).next().unwrap_or(cmd);
        let program = program.strip_suffix(".exe").unwrap_or(program);
        program == "tmws" && self.args.iter().any(|a| a == "mcp")
    }
}

/// JSON text with object keys sorted at every level and no whitespace.
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, &Value> = m.iter().collect();
            let parts: Vec<String> =
                sorted.into_iter().map(|(k, v)| format!("{}:{}", Value::String(k.clone()), canonical(v))).collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// Whether the value under `name` (an env var, a header) must not be stored literally: the
/// name says it is a secret (`GITHUB_TOKEN`, `Authorization`, `X-Api-Key`), and it is not a
/// reference already.
pub fn looks_secret(name: &str, value: &str) -> bool {
    if value.is_empty() || value.starts_with("${") && value.ends_with('}') {
        return false;
    }
    name.eq_ignore_ascii_case("authorization") || redact::secret_named(name, value)
}

/// The reference that replaces a secret value: `${NAME}` (an env var of that name).
fn reference(name: &str) -> String {
    let var: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    format!("${{{var}}}")
}

fn strings(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned()))).collect())
        .unwrap_or_default()
}

/// The servers of one client config file (its `mcpServers` map, or VS Code's `servers`),
/// in name order, with what was wrong in it.
pub fn parse(text: &str) -> (Vec<(String, Connection)>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let root: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            let d = Diagnostic::error(Rule::Registry, e.line(), e.column().max(1), format!("invalid JSON: {e}"));
            return (Vec::new(), vec![d]);
        }
    };
    let Some(map) = root.get("mcpServers").or_else(|| root.get("servers")).and_then(Value::as_object) else {
        return (Vec::new(), diags);
    };
    let mut out = Vec::new();
    let sorted: BTreeMap<&String, &Value> = map.iter().collect();
    for (name, entry) in sorted {
        let text = |k: &str| entry.get(k).and_then(Value::as_str).map(str::to_owned);
        let declared = text("type");
        let url = text("url").or_else(|| text("serverUrl"));
        let kind = match (declared.as_deref(), &url) {
            (Some(k @ ("stdio" | "http" | "sse" | "streamable-http")), _) => k.to_owned(),
            (None, Some(_)) => "http".to_owned(),
            (None, None) => "stdio".to_owned(),
            (Some(other), _) => {
                diags.push(Diagnostic::error(Rule::Registry, 1, 1, format!("server `{name}`: unknown type `{other}`")));
                continue;
            }
        };
        let conn = Connection {
            kind,
            command: text("command"),
            args: entry
                .get("args")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default(),
            env: strings(entry.get("env")),
            url,
            headers: strings(entry.get("headers")),
        };
        if conn.kind == "stdio" && conn.command.as_deref().is_none_or(|c| c.trim().is_empty()) {
            diags.push(Diagnostic::error(
                Rule::Registry,
                1,
                1,
                format!("server `{name}`: a stdio server needs `command`"),
            ));
            continue;
        }
        if conn.kind != "stdio" && conn.url.is_none() {
            diags.push(Diagnostic::error(Rule::Registry, 1, 1, format!("server `{name}`: an HTTP server needs `url`")));
            continue;
        }
        if conn.is_tmws() {
            continue;
        }
        out.push((name.clone(), conn));
    }
    (out, diags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_in_args_urls_and_headers_are_never_stored() {
        let text = r#"{"mcpServers": {
            "gh": {"command": "npx", "args": ["-y", "gh-mcp", "--token=ghp_Zq3Xv9Lm2Np8Rt5Wy7Bc4Df6Gh1Jk0Ab2Cd4", "--api-key", "Xk29dLq0Pz7Wm3Vb", "--verbose", "--port", "8080"]},
            "remote": {"url": "https://bob:S3cr3tPw@mcp.internal/x?api_key=9f8e7d6c5b4a3f2e1d0c&mode=fast", "headers": {"X-Api-Key": "abc123def456ghi789", "X-Trace": "on"}}
        }}"#;
        let (servers, _) = parse(text);
        let gh = servers[0].1.stored();
        assert_eq!(
            gh.args,
            [
                "-y",
                "gh-mcp",
                "--token=[REDACTED:github-pat]",
                "--api-key",
                "[REDACTED:secret-flag]",
                "--verbose",
                "--port",
                "8080"
            ]
        );
        let remote = servers[1].1.stored();
        assert_eq!(
            remote.url.as_deref(),
            Some(
                "https://bob:[REDACTED:url-credentials]@mcp.internal/x?api_key=[REDACTED:url-secret-parameter]&mode=fast"
            )
        );
        assert_eq!(remote.headers["X-Api-Key"], "${X_API_KEY}");
        assert_eq!(remote.headers["X-Trace"], "on");
        assert_eq!(
            servers[0].1.args[2], "--token=ghp_Zq3Xv9Lm2Np8Rt5Wy7Bc4Df6Gh1Jk0Ab2Cd4",
            "the live connection keeps it"
        );
    }

    #[test]
    fn stdio_and_http_servers_with_secrets_as_references_and_tmws_skipped() {
        let text = r#"{"mcpServers": {
            "serena": {"command": "uvx", "args": ["serena-mcp"], "env": {"GITHUB_TOKEN": "ghp_abc", "LOG": "info", "X": "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "DATABASE_URL": "postgres://u:Pw9x2kQ@db/x"}},
            "context7": {"url": "https://mcp.example/ctx", "headers": {"Authorization": "Bearer xyz", "Accept": "json"}},
            "tmws": {"command": "/usr/local/bin/tmws", "args": ["mcp"]},
            "weird": {"type": "carrier-pigeon"},
            "empty": {"args": []}
        }}"#;
        let (servers, diags) = parse(text);
        let names: Vec<&str> = servers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["context7", "serena"]);
        let serena = &servers[1].1;
        assert_eq!(serena.kind, "stdio");
        assert_eq!(serena.env["GITHUB_TOKEN"], "ghp_abc", "the live connection keeps the value");
        let serena = &serena.stored();
        assert_eq!(
            serena.env,
            BTreeMap::from([
                ("GITHUB_TOKEN".to_owned(), "${GITHUB_TOKEN}".to_owned()),
                ("DATABASE_URL".to_owned(), "postgres://u:[REDACTED:url-credentials]@db/x".to_owned()),
                ("LOG".to_owned(), "info".to_owned()),
                ("X".to_owned(), "[REDACTED:stripe-access-token]".to_owned()),
            ])
        );
        let ctx = &servers[0].1.stored();
        assert_eq!((ctx.kind.as_str(), ctx.url.as_deref()), ("http", Some("https://mcp.example/ctx")));
        assert_eq!(ctx.headers["Authorization"], "${AUTHORIZATION}");
        assert_eq!(ctx.headers["Accept"], "json");
        let messages: Vec<&str> = diags.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            messages,
            ["server `empty`: a stdio server needs `command`", "server `weird`: unknown type `carrier-pigeon`"]
        );
    }

    #[test]
    fn the_hash_ignores_key_order_and_secret_values_but_not_the_rest() {
        let a = parse(r#"{"servers": {"s": {"command": "x", "args": ["1"], "env": {"API_KEY": "one", "A": "b"}}}}"#).0;
        let b = parse(r#"{"servers": {"s": {"env": {"A": "b", "API_KEY": "two"}, "args": ["1"], "command": "x"}}}"#).0;
        let c = parse(r#"{"servers": {"s": {"command": "x", "args": ["2"], "env": {"API_KEY": "one", "A": "b"}}}}"#).0;
        assert_eq!(a[0].1.config_hash(), b[0].1.config_hash());
        assert_ne!(a[0].1.config_hash(), c[0].1.config_hash());
        assert_eq!(a[0].1.config_hash().len(), 64);
    }

    #[test]
    fn invalid_json_is_one_diagnostic_with_its_position() {
        let (servers, diags) = parse("{\n  \"mcpServers\": {,}\n}");
        assert!(servers.is_empty());
        assert_eq!((diags[0].line, diags[0].column), (2, 18));
    }
}
