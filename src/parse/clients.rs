//! MCP client configs (docs/registry.md), read as their clients read them: the `mcpServers` map
//! of `.mcp.json` (Claude Code), `.cursor/mcp.json` and `.gemini/settings.json`, the
//! `servers` map of `.vscode/mcp.json` — JSON with comments and trailing commas — and the
//! `[mcp_servers.NAME]` tables of `.codex/config.toml`.
//!
//! A connection is a stdio command (`command`, `args`, `env`) or an HTTP endpoint (`url`,
//! `headers`). Each server is read twice: as written (`raw`, what the registry stores and
//! hashes, the same on every machine) and with the client's variables expanded (`live`,
//! what starts it): `${workspaceFolder}`, `${userHome}`, `${env:VAR}`, `${VAR}` and
//! `${VAR:-default}`, and Gemini's `$VAR`. A `${input:…}` (VS Code prompts for it) cannot be
//! expanded: the server's live connection is an error that names the input. In the stored
//! connection, values that look like secrets (an env var or header named like a token, a
//! key, a password; or a value shaped like an API key) are `${VAR}` references, never
//! literal. The `config_hash` is blake3 of the stored connection's canonical JSON (keys
//! sorted, no spaces), so rotating a secret does not make the registry stale, while any
//! other change does. An entry that runs `tmws mcp` (under any name: `Connection::is_tmws_by_name`) is
//! tmws itself and is skipped. The
//! names of the user's environment variables a server's live connection takes are kept
//! (shown before it is approved), and `url_shown` / `scrub_urls` show a URL, alone or in
//! an error, as scheme, host and path with its user info and query values replaced.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{Diagnostic, Rule};
use crate::redact;

/// How to reach one server: a command over stdio, or a URL.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(transform = connection_kinds)]
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

/// The kinds of connection in the schema of [`Connection`], and what each needs: a stdio
/// server a `command`, the others a `url`.
fn connection_kinds(schema: &mut schemars::Schema) {
    const KINDS: [&str; 4] = ["stdio", "http", "sse", "streamable-http"];
    if let Some(Value::Object(kind)) = schema.get_mut("properties").and_then(|p| p.get_mut("type")) {
        kind.remove("type");
        kind.insert("enum".into(), Value::from(KINDS.to_vec()));
    }
    let needs = |kinds: &[&str], field: &str| {
        serde_json::json!({
            "if": {"properties": {"type": {"enum": kinds}}, "required": ["type"]},
            "then": {"required": [field]},
        })
    };
    schema.insert("allOf".into(), Value::Array(vec![needs(&KINDS[..1], "command"), needs(&KINDS[1..], "url")]));
}

impl Connection {
    /// The connection as the registry stores it (docs/registry.md): an env or header value under
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

    /// blake3 (hex) of the canonical JSON of the connection as it is, secrets included: what
    /// an approval on this machine holds (never written to the repository).
    pub fn exact_hash(&self) -> String {
        let v = serde_json::to_value(self).unwrap_or(Value::Null);
        blake3::hash(canonical(&v).as_bytes()).to_hex().to_string()
    }

    /// Whether this entry starts tmws' own MCP server, as far as its words tell: a
    /// program named `tmws` or `tmws-…` / `tmws_…` (a copy kept under another name, with
    /// or without `.exe`) given `mcp`, or `cargo run … -- mcp` with a `--bin` or
    /// `--package` named so. The registry also knows tmws by its file (`query::registry`):
    /// a path to this very binary or a copy of it, whatever it is called, and `cargo run --
    /// mcp` naming nothing in a package named tmws ([`Connection::cargo_run_mcp`]).
    pub fn is_tmws_by_name(&self) -> bool {
        self.cargo_run_mcp().is_some_and(|names| names.iter().any(|n| named_tmws(n))) || self.program_is_tmws()
    }

    /// A program named like tmws, given `mcp`.
    fn program_is_tmws(&self) -> bool {
        let Some(cmd) = &self.command else { return false };
        let program = cmd.rsplit(['/', '\\']).next().unwrap_or(cmd);
        let program = program.strip_suffix(".exe").unwrap_or(program);
        named_tmws(program) && self.args.iter().any(|a| a == "mcp")
    }

    /// For `cargo run [--bin B | -p P]… -- mcp …`: the binaries and packages it names
    /// (none: the package of the folder it runs in, or of its `--manifest-path`).
    pub fn cargo_run_mcp(&self) -> Option<Vec<&str>> {
        let cmd = self.command.as_deref()?;
        let program = cmd.rsplit(['/', '\\']).next().unwrap_or(cmd);
        if program.strip_suffix(".exe").unwrap_or(program) != "cargo" {
            return None;
        }
        let dashes = self.args.iter().position(|a| a == "--")?;
        let (cargo, tool) = self.args.split_at(dashes);
        if !cargo.iter().any(|a| a == "run") || !tool.iter().skip(1).any(|a| a == "mcp") {
            return None;
        }
        let spaced = cargo.iter().zip(cargo.iter().skip(1)).filter_map(|(flag, value)| {
            matches!(flag.as_str(), "--bin" | "-p" | "--package").then_some(value.as_str())
        });
        let joined = cargo.iter().filter_map(|a| a.strip_prefix("--bin=").or_else(|| a.strip_prefix("--package=")));
        Some(spaced.chain(joined).collect())
    }

    /// The `--manifest-path` of a `cargo run`, if it names one.
    pub fn manifest_path(&self) -> Option<&str> {
        let args = &self.args;
        args.iter()
            .zip(args.iter().skip(1))
            .find(|(f, _)| *f == "--manifest-path")
            .map(|(_, v)| v.as_str())
            .or_else(|| args.iter().find_map(|a| a.strip_prefix("--manifest-path=")))
    }
}

/// Whether a program, binary or package is named as tmws is: `tmws`, or `tmws-…`,
/// `tmws_…`, `tmws.…` (a copy kept under another name).
pub fn named_tmws(name: &str) -> bool {
    name == "tmws" || name.strip_prefix("tmws").is_some_and(|rest| rest.starts_with(['-', '_', '.']))
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

/// Whether `text` is nothing but variable references (`${VAR}`, `${env:VAR}`) and `:`: a
/// value shown by name, which holds no secret as written.
fn only_references(text: &str) -> bool {
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix(':') {
            rest = r;
        } else if let Some(body) = rest.strip_prefix("${")
            && let Some(end) = body.find('}')
        {
            rest = &body[end + 1..];
        } else {
            return false;
        }
    }
    !text.is_empty()
}

/// A URL as tmws shows it in an error, a log line or before an approval: its scheme, host
/// and path, with its user info and the value of every query parameter replaced by a mark
/// (a value that is only a `${VAR}` reference is shown by name) and no fragment.
pub fn url_shown(url: &str) -> String {
    let Some(at) = url.find("://") else { return url.to_owned() };
    let (scheme, rest) = (&url[..at], &url[at + 3..]);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, rest) = rest.split_at(end);
    let host = match authority.rsplit_once('@') {
        Some((user, host)) if only_references(user) => format!("{user}@{host}"),
        Some((_, host)) => format!("{}@{host}", redact::mark("url-credentials")),
        None => authority.to_owned(),
    };
    let rest = rest.split('#').next().unwrap_or_default();
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut out = format!("{scheme}://{host}{path}");
    if !query.is_empty() {
        let shown: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, v)) if v.is_empty() || only_references(v) => format!("{k}={v}"),
                Some((k, _)) => format!("{k}={}", redact::mark("url-query")),
                None => pair.to_owned(),
            })
            .collect();
        out.push('?');
        out.push_str(&shown.join("&"));
    }
    out
}

/// `text` with every URL in it (`scheme://…` up to a space, a quote or a closing bracket,
/// without the punctuation that ends a sentence) shown as [`url_shown`] shows it: what an error of a server's connection says about it
/// never holds its credentials or query values.
pub fn scrub_urls(text: &str) -> String {
    if !text.contains("://") {
        return text.to_owned();
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    let mut from = 0;
    while let Some(i) = text[from..].find("://").map(|i| from + i) {
        let mut start = i;
        while start > done && (bytes[start - 1].is_ascii_alphanumeric() || b"+.-".contains(&bytes[start - 1])) {
            start -= 1;
        }
        let mut end = text[i + 3..]
            .find(|c: char| c.is_whitespace() || "\"'<>`)]}".contains(c))
            .map_or(text.len(), |e| i + 3 + e);
        // Punctuation after a URL (`URL: why`, `URL.`) belongs to the sentence.
        while end > i + 3 && b":.,;!?".contains(&bytes[end - 1]) {
            end -= 1;
        }
        if start == i || !bytes[start].is_ascii_alphabetic() {
            from = i + 3;
            continue;
        }
        out.push_str(&text[done..start]);
        out.push_str(&url_shown(&text[start..end]));
        done = end;
        from = end;
    }
    out.push_str(&text[done..]);
    out
}

fn strings(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned()))).collect())
        .unwrap_or_default()
}

/// The client a config file belongs to, by its path: what it calls its server map and
/// which variables it expands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// `.mcp.json`: `${VAR}`, `${VAR:-default}`.
    Claude,
    /// `.cursor/mcp.json`: `${workspaceFolder}`, `${userHome}`, `${env:VAR}`…
    Cursor,
    /// `.vscode/mcp.json`: the `servers` map; `${workspaceFolder}`, `${env:VAR}`, `${input:…}`…
    VsCode,
    /// `.codex/config.toml`: `[mcp_servers.NAME]`; nothing is expanded.
    Codex,
    /// `.gemini/settings.json`: `$VAR`, `${VAR}`, `${VAR:-default}`; `httpUrl`.
    Gemini,
}

impl Client {
    /// The client of a config at `source` (root-relative).
    pub fn of(source: &str) -> Client {
        let s = source.replace('\\', "/");
        if s.ends_with(".toml") {
            Client::Codex
        } else if s.ends_with(".vscode/mcp.json") {
            Client::VsCode
        } else if s.ends_with(".cursor/mcp.json") {
            Client::Cursor
        } else if s.ends_with(".gemini/settings.json") {
            Client::Gemini
        } else {
            Client::Claude
        }
    }
}

/// What a config's variables stand for.
#[derive(Debug, Clone, Default)]
pub struct Vars {
    /// The project folder (`${workspaceFolder}`).
    pub workspace: String,
    /// The user's home folder (`${userHome}`).
    pub home: Option<String>,
    /// The environment.
    pub env: BTreeMap<String, String>,
}

/// One server of a client config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub name: String,
    /// As written: what the registry stores and hashes.
    pub raw: Connection,
    /// With the client's variables expanded: what starts it, or why it cannot be.
    pub live: Result<Connection, String>,
    /// The variables of the user's environment that its live connection takes, by name
    /// (shown before the user approves it, never their values).
    pub env_vars: Vec<String>,
}

/// The servers of one client config file at `source`, in name order, with what was wrong
/// in it.
pub fn parse(source: &str, text: &str, vars: &Vars) -> (Vec<Server>, Vec<Diagnostic>) {
    let client = Client::of(source);
    let root = match client {
        Client::Codex => match text.parse::<toml::Table>() {
            Ok(t) => serde_json::to_value(t).unwrap_or(Value::Null),
            Err(e) => {
                let (line, column) = e.span().map_or((1, 1), |s| super::line_col(text, s.start));
                return (
                    Vec::new(),
                    vec![Diagnostic::error(Rule::Registry, line, column, format!("invalid TOML: {}", e.message()))],
                );
            }
        },
        _ => match jsonc(text) {
            Ok(v) => v,
            Err(d) => return (Vec::new(), vec![*d]),
        },
    };
    let map = match client {
        Client::Codex => root.get("mcp_servers"),
        Client::VsCode => root.get("servers").or_else(|| root.get("mcpServers")),
        _ => root.get("mcpServers").or_else(|| root.get("servers")),
    };
    let Some(map) = map.and_then(Value::as_object) else { return (Vec::new(), Vec::new()) };
    let mut diags = Vec::new();
    let mut out = Vec::new();
    let sorted: BTreeMap<&String, &Value> = map.iter().collect();
    for (name, entry) in sorted {
        let at = |what: &str| Diagnostic::error(Rule::Registry, 1, 1, format!("server `{name}`: {what}"));
        if entry.get("enabled").and_then(Value::as_bool) == Some(false)
            || entry.get("disabled").and_then(Value::as_bool) == Some(true)
        {
            continue;
        }
        let text = |k: &str| entry.get(k).and_then(Value::as_str).map(str::to_owned);
        let declared = text("type");
        let url = text("url").or_else(|| text("httpUrl")).or_else(|| text("serverUrl"));
        let kind = match (declared.as_deref(), &url) {
            (Some(k @ ("stdio" | "http" | "sse" | "streamable-http")), _) => k.to_owned(),
            (None, Some(_)) => "http".to_owned(),
            (None, None) => "stdio".to_owned(),
            (Some(other), _) => {
                diags.push(at(&format!("unknown type `{other}`")));
                continue;
            }
        };
        let mut headers = strings(entry.get("headers"));
        headers.extend(strings(entry.get("http_headers")));
        if let Some(var) = text("bearer_token_env_var") {
            headers.insert("Authorization".into(), format!("Bearer ${{{var}}}"));
        }
        let raw = Connection {
            kind,
            command: text("command"),
            args: entry
                .get("args")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default(),
            env: strings(entry.get("env")),
            url,
            headers,
        };
        if raw.kind == "stdio" && raw.command.as_deref().is_none_or(|c| c.trim().is_empty()) {
            diags.push(at("a stdio server needs `command`"));
            continue;
        }
        if raw.kind != "stdio" && raw.url.is_none() {
            diags.push(at("an HTTP server needs `url`"));
            continue;
        }
        if raw.is_tmws_by_name() {
            continue;
        }
        let mut used = std::collections::BTreeSet::new();
        let live = expand_connection(&raw, client, vars, &mut used)
            .map_err(|why| format!("server `{name}` in {source}: {why}"));
        out.push(Server { name: name.clone(), raw, live, env_vars: used.into_iter().collect() });
    }
    (out, diags)
}

/// JSON with comments and trailing commas, as VS Code and Cursor write it; an error is one
/// diagnostic at its line and column.
fn jsonc(text: &str) -> Result<Value, Box<Diagnostic>> {
    let options = jsonc_parser::ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        ..Default::default()
    };
    match jsonc_parser::parse_to_serde_value::<Value>(text, &options) {
        Ok(v) => Ok(v),
        Err(e) => Err(Box::new(Diagnostic::error(
            Rule::Registry,
            e.line_display(),
            e.column_display(),
            format!("invalid JSON: {}", e.kind()),
        ))),
    }
}

/// The connection with `client`'s variables expanded in every value that starts or reaches
/// the server.
fn expand_connection(
    raw: &Connection,
    client: Client,
    vars: &Vars,
    used: &mut std::collections::BTreeSet<String>,
) -> Result<Connection, String> {
    let mut x = |s: &str| expand(s, client, vars, used);
    let mut live = raw.clone();
    live.command = raw.command.as_deref().map(&mut x).transpose()?;
    live.args = raw.args.iter().map(|a| x(a)).collect::<Result<_, _>>()?;
    live.url = raw.url.as_deref().map(&mut x).transpose()?;
    for (k, v) in &raw.env {
        live.env.insert(k.clone(), x(v)?);
    }
    for (k, v) in &raw.headers {
        live.headers.insert(k.clone(), x(v)?);
    }
    Ok(live)
}

/// `text` with `client`'s variables expanded. A variable the client itself would leave as
/// it is (Codex expands nothing; an unknown `${…}`) stays. The names of the environment
/// variables it takes are noted in `used`.
fn expand(
    text: &str,
    client: Client,
    vars: &Vars,
    used: &mut std::collections::BTreeSet<String>,
) -> Result<String, String> {
    if client == Client::Codex || !text.contains('$') {
        return Ok(text.to_owned());
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(body) = after.strip_prefix('{')
            && let Some(end) = body.find('}')
        {
            let name = &body[..end];
            out.push_str(&variable(name, client, vars, used)?.unwrap_or_else(|| format!("${{{name}}}")));
            rest = &body[end + 1..];
            continue;
        }
        // Gemini also expands `$VAR`.
        let len = after.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
        if client == Client::Gemini && len > 0 && !after.as_bytes()[0].is_ascii_digit() {
            let name = &after[..len];
            used.insert(name.to_owned());
            out.push_str(vars.env.get(name).map_or("", String::as_str));
            rest = &after[len..];
            continue;
        }
        out.push('$');
        rest = after;
    }
    out.push_str(rest);
    Ok(out)
}

/// The value of `${name}`, None when the client would leave it as it is.
fn variable(
    name: &str,
    client: Client,
    vars: &Vars,
    used: &mut std::collections::BTreeSet<String>,
) -> Result<Option<String>, String> {
    let mut env = |var: &str| {
        used.insert(var.to_owned());
        vars.env.get(var).cloned()
    };
    Ok(match name.split_once(':') {
        Some(("env", var)) => Some(env(var).unwrap_or_default()),
        Some(("input", id)) => {
            return Err(format!(
                "`${{input:{id}}}` is a value VS Code asks for when it starts the server, which tmws cannot ask: \
put it in an environment variable and write `${{env:NAME}}`"
            ));
        }
        Some(("workspaceFolder", _)) => Some(vars.workspace.clone()),
        Some((var, default)) if default.starts_with('-') && matches!(client, Client::Claude | Client::Gemini) => {
            Some(env(var).filter(|v| !v.is_empty()).unwrap_or_else(|| default[1..].to_owned()))
        }
        Some(_) => None,
        None => match name {
            "workspaceFolder" => Some(vars.workspace.clone()),
            "workspaceFolderBasename" => Some(
                std::path::Path::new(&vars.workspace)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            ),
            "userHome" => vars.home.clone(),
            "pathSeparator" | "/" => Some("/".to_owned()),
            var if matches!(client, Client::Claude | Client::Gemini)
                || var.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_') =>
            {
                match env(var) {
                    Some(v) => Some(v),
                    None if client == Client::Claude => {
                        return Err(format!(
                            "environment variable {var} is not set (and `${{{var}}}` has no `:-default`)"
                        ));
                    }
                    None => None,
                }
            }
            _ => None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.mcp.json`'s servers as written.
    fn parse(text: &str) -> (Vec<(String, Connection)>, Vec<Diagnostic>) {
        let (servers, diags) = super::parse(".mcp.json", text, &Vars::default());
        (servers.into_iter().map(|s| (s.name, s.raw)).collect(), diags)
    }

    fn vars() -> Vars {
        Vars {
            workspace: "/home/ann/acme".into(),
            home: Some("/home/ann".into()),
            env: BTreeMap::from([("TOKEN".to_owned(), "t0k3n".to_owned()), ("REGION".to_owned(), "eu".to_owned())]),
        }
    }

    #[test]
    fn each_client_format_is_read_with_its_variables() {
        let vscode = r#"{
            // VS Code writes comments and trailing commas.
            "inputs": [{"type": "promptString", "id": "key", "password": true}],
            "servers": {
                "docs": {"type": "stdio", "command": "${userHome}/bin/docs", "args": ["--root", "${workspaceFolder}", "--name", "${workspaceFolderBasename}"], "env": {"T": "${env:TOKEN}"},},
                "asks": {"command": "x", "env": {"KEY": "${input:key}"}},
            },
        }"#;
        let (servers, diags) = super::parse(".vscode/mcp.json", vscode, &vars());
        assert!(diags.is_empty(), "{diags:?}");
        let docs = servers.iter().find(|s| s.name == "docs").unwrap();
        assert_eq!(
            docs.raw.args,
            ["--root", "${workspaceFolder}", "--name", "${workspaceFolderBasename}"],
            "stored as written"
        );
        let live = docs.live.as_ref().unwrap();
        assert_eq!(live.command.as_deref(), Some("/home/ann/bin/docs"));
        assert_eq!(live.args, ["--root", "/home/ann/acme", "--name", "acme"]);
        assert_eq!(live.env["T"], "t0k3n");
        let asks = servers.iter().find(|s| s.name == "asks").unwrap();
        let why = asks.live.as_ref().unwrap_err();
        assert!(
            why.starts_with("server `asks` in .vscode/mcp.json: `${input:key}` is a value VS Code asks for"),
            "{why}"
        );

        let codex = "# Codex\n[mcp_servers.search]\ncommand = \"npx\"\nargs = [\"-y\", \"search-mcp\", \"${TOKEN}\"]\nenv = { LOG = \"warn\" }\n\n[mcp_servers.remote]\nurl = \"https://mcp.example/x\"\nbearer_token_env_var = \"TOKEN\"\n\n[mcp_servers.off]\ncommand = \"y\"\nenabled = false\n";
        let (servers, diags) = super::parse(".codex/config.toml", codex, &vars());
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(servers.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["remote", "search"]);
        assert_eq!(servers[1].live.as_ref().unwrap().args[2], "${TOKEN}", "Codex expands nothing");
        assert_eq!(
            (servers[0].raw.kind.as_str(), servers[0].raw.headers["Authorization"].as_str()),
            ("http", "Bearer ${TOKEN}")
        );

        let gemini = r#"{"mcpServers": {
            "g": {"command": "g", "args": ["--region", "$REGION", "${MISSING:-fallback}"]},
            "h": {"httpUrl": "https://mcp.example/h"}
        }}"#;
        let (servers, _) = super::parse(".gemini/settings.json", gemini, &vars());
        assert_eq!(servers[0].live.as_ref().unwrap().args, ["--region", "eu", "fallback"]);
        assert_eq!(servers[1].raw.url.as_deref(), Some("https://mcp.example/h"));

        let claude = r#"{"mcpServers": {"c": {"command": "c", "args": ["${TOKEN}", "${NOPE:-x}"]}, "d": {"command": "d", "args": ["${NOPE}"]}}}"#;
        let (servers, _) = super::parse(".mcp.json", claude, &vars());
        assert_eq!(servers[0].live.as_ref().unwrap().args, ["t0k3n", "x"]);
        assert!(servers[1].live.as_ref().unwrap_err().contains("environment variable NOPE is not set"));
    }

    #[test]
    fn a_broken_config_is_one_diagnostic_at_its_line() {
        let (_, diags) = super::parse(
            ".vscode/mcp.json",
            "{\n  // ok\n  \"servers\": {\n    \"a\": {\"command\": }\n  }\n}",
            &vars(),
        );
        assert_eq!((diags.len(), diags[0].line), (1, 4), "{diags:?}");
        let (_, diags) = super::parse(".codex/config.toml", "[mcp_servers.a]\ncommand = \n", &vars());
        assert_eq!((diags.len(), diags[0].line), (1, 2), "{diags:?}");
    }

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
    fn tmws_is_known_under_any_name_it_runs_by() {
        let runs = |command: &str, args: &[&str]| {
            Connection {
                command: Some(command.to_owned()),
                args: args.iter().map(|a| (*a).to_owned()).collect(),
                ..Connection::default()
            }
            .is_tmws_by_name()
        };
        assert!(runs("tmws", &["mcp"]));
        assert!(runs("/opt/bin/tmws-dev", &["mcp", "--agent", "claude"]));
        assert!(runs("C:\\tools\\tmws.exe", &["mcp"]));
        assert!(runs("./target/debug/tmws_old", &["--root", ".", "mcp"]));
        assert!(!runs("cargo", &["run", "--", "mcp"]), "the registry looks at the package");
        assert!(runs("cargo", &["run", "-q", "--bin", "tmws", "--", "mcp", "--agent", "x"]));
        assert!(runs("cargo", &["run", "--package=tmws", "--", "mcp"]));
        assert!(!runs("cargo", &["run", "--bin", "other-server", "--", "mcp"]));
        assert!(!runs("cargo", &["run", "--", "serve"]));
        assert!(!runs("tmws", &["serve"]));
        assert!(!runs("tmwsd", &["mcp"]), "another program that only starts like it");
        assert!(!runs("uvx", &["tmws-mcp", "mcp"]));
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
    fn urls_in_errors_keep_scheme_host_and_path_only() {
        let key = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(
            url_shown(&format!("http://127.0.0.1:9/mcp?key={key}&mode=fast#frag")),
            "http://127.0.0.1:9/mcp?key=[REDACTED:url-query]&mode=[REDACTED:url-query]"
        );
        assert_eq!(
            url_shown("https://bob:pw@mcp.example/x?token=${TOKEN}&empty="),
            "https://[REDACTED:url-credentials]@mcp.example/x?token=${TOKEN}&empty="
        );
        assert_eq!(url_shown("https://${USER}:${PASS}@h/p"), "https://${USER}:${PASS}@h/p");
        let error = format!(
            "http://127.0.0.1:1/mcp?key={key}: initialize failed: error sending request for url \
(http://127.0.0.1:1/mcp?key={key}): Connection refused; see \"https://u:p@x.example\""
        );
        let scrubbed = scrub_urls(&error);
        assert!(!scrubbed.contains(key) && !scrubbed.contains("u:p"), "{scrubbed}");
        assert_eq!(
            scrubbed,
            "http://127.0.0.1:1/mcp?key=[REDACTED:url-query]: initialize failed: error sending request for url \
(http://127.0.0.1:1/mcp?key=[REDACTED:url-query]): Connection refused; see \"https://[REDACTED:url-credentials]@x.example\""
        );
        assert_eq!(scrub_urls("no url here, just a :// mark"), "no url here, just a :// mark");
    }

    #[test]
    fn the_variables_a_server_takes_from_the_environment_are_named() {
        let text = r#"{"mcpServers": {"r": {"url": "https://x/${env:AWS_SECRET_ACCESS_KEY}", "headers": {"A": "Bearer ${GITHUB_TOKEN}"}, "env": {"P": "${workspaceFolder}"}}}}"#;
        let (servers, _) = super::parse(".cursor/mcp.json", text, &vars());
        assert_eq!(servers[0].env_vars, ["AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"]);
    }

    #[test]
    fn invalid_json_is_one_diagnostic_with_its_position() {
        let (servers, diags) = parse("{\n  \"mcpServers\": {,}\n}");
        assert!(servers.is_empty());
        assert_eq!((diags[0].line, diags[0].column), (2, 18));
    }
}
