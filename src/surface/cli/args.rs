//! The flags of the commands that run a tool, made from the tool's request type.
//!
//! A tool command's arguments are the properties of its request's JSON Schema: each
//! becomes `--param-name` (or the spelling the request's `FLAGS` gives it), with the schema's
//! description as its help, its default shown, a list repeatable and comma-separated, a
//! boolean a switch. Parsing gives the arguments as text, which the engine reads as the
//! schema says, exactly as it reads an HTTP query string. So a parameter added to a request
//! type is a flag of its command with nothing written here. `--format` is the CLI's own.

use clap::{Arg, ArgAction, ArgMatches, Command};
use serde_json::{Map, Value};

use crate::config::Config;
use crate::query::api::{Spelling, kind_of};
use crate::query::catalog::{Optional, Tool};

/// The parameters of `tool` with their schemas, in order, but the CLI's own `format`.
fn params(tool: &dyn Tool) -> Vec<(String, Value)> {
    let schema = tool.schema(&Config::default());
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().filter(|(k, _)| *k != "format").map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

/// The parameters the command line must give: those the tool needs, but the one its
/// command lets a person leave out.
fn required(tool: &dyn Tool, optional: Option<Optional>) -> Vec<String> {
    let schema = tool.schema(&Config::default());
    let left_out = |p: &str| optional.is_some_and(|o| o.param == p);
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).filter(|p| !left_out(p)).map(str::to_owned).collect())
        .unwrap_or_default()
}

fn spelling(tool: &dyn Tool, param: &str) -> Option<Spelling> {
    tool.flags().iter().find(|f| f.param == param).map(|f| f.spelling)
}

/// `filter_status` as a flag: `filter-status`.
fn kebab(param: &str) -> String {
    param.replace('_', "-")
}

/// The help of a parameter: its description, with its values where the schema lists them.
fn help(prop: &Value) -> String {
    let mut text = prop.get("description").and_then(Value::as_str).unwrap_or_default().to_owned();
    if let Some(values) = prop.get("enum").and_then(Value::as_array) {
        let names: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
        text.push_str(&format!(" [possible values: {}]", names.join(", ")));
    }
    text
}

/// ` [default: …]` for a parameter whose default says something (not false, empty or none).
fn default_note(prop: &Value) -> String {
    match prop.get("default") {
        Some(Value::Bool(_) | Value::Array(_)) | None => String::new(),
        Some(Value::String(s)) if s.is_empty() => String::new(),
        Some(Value::Object(m)) if m.is_empty() => String::new(),
        Some(Value::String(s)) => format!(" [default: {s}]"),
        Some(v) => format!(" [default: {v}]"),
    }
}

/// Adds the tool's parameters to `cmd` as its flags and positionals.
pub(crate) fn build(mut cmd: Command, tool: &dyn Tool, optional: Option<Optional>) -> Command {
    let required = required(tool, optional);
    for (name, prop) in params(tool) {
        let kind = kind_of(&prop).to_owned();
        let switch = kind == "boolean";
        let spelled = spelling(tool, &name);
        let mut text = help(&prop);
        match spelled {
            Some(Spelling::PositionalOrStdin) => text.push_str(" Read from stdin when left out or `-`."),
            Some(Spelling::Positional { rest: true }) => text.push_str(" Several words need no quotes."),
            Some(Spelling::Positional { .. }) => {}
            Some(Spelling::Off(_)) => text = format!("Turns `{name}` off. {text}"),
            _ if optional.is_some_and(|o| o.param == name) => {
                text.push_str(optional.map_or("", |o| o.note));
            }
            _ if kind == "array" => text.push_str(" Repeatable, or comma-separated."),
            _ => {}
        }
        text.push_str(&default_note(&prop));
        let mut arg = Arg::new(name.clone()).help(text);
        let value_name = match spelled {
            Some(Spelling::Long(long, _)) => long.to_uppercase().replace('-', "_"),
            _ => name.to_uppercase(),
        };
        arg = match spelled {
            Some(Spelling::Positional { rest }) => {
                let arg = arg.value_name(value_name).required(required.contains(&name));
                if rest { arg.num_args(1..).action(ArgAction::Append) } else { arg }
            }
            Some(Spelling::PositionalOrStdin) => arg.value_name(value_name).required(false),
            Some(Spelling::Off(long)) => arg.long(long).action(ArgAction::SetTrue),
            Some(Spelling::Long(long, short)) => {
                let arg = arg.long(long);
                let arg = if let Some(c) = short { arg.short(c) } else { arg };
                let arg = if long != kebab(&name) { arg.visible_alias(kebab(&name)) } else { arg };
                if switch { arg.action(ArgAction::SetTrue) } else { arg.value_name(value_name) }
            }
            Some(Spelling::LongAlias(long)) => {
                let arg = arg.long(long).visible_alias(kebab(&name));
                if switch { arg.action(ArgAction::SetTrue) } else { arg.value_name(value_name) }
            }
            None if switch => arg.long(kebab(&name)).action(ArgAction::SetTrue),
            None => arg.long(kebab(&name)).value_name(value_name),
        };
        let positional =
            matches!(spelled, Some(Spelling::Positional { .. } | Spelling::PositionalOrStdin | Spelling::Off(_)));
        // A list, or an object given as `--flag K=V` more than once (or as JSON).
        if matches!(kind.as_str(), "array" | "object") && !positional {
            arg = arg.action(ArgAction::Append);
        }
        // `--limit -1` is a value out of range, which the tool says so, not a flag.
        if matches!(kind.as_str(), "integer" | "number") {
            arg = arg.allow_negative_numbers(true);
        }
        if !positional && !switch && required.contains(&name) {
            arg = arg.required(true);
        }
        cmd = cmd.arg(arg);
    }
    cmd
}

/// How the command line spells each parameter of `tool`: `--expected-hash`, or the
/// positional's `REF_ID`.
pub(crate) fn spellings(tool: &dyn Tool) -> Vec<(String, String)> {
    params(tool)
        .into_iter()
        .map(|(name, _)| {
            let shown = match spelling(tool, &name) {
                Some(Spelling::Positional { .. } | Spelling::PositionalOrStdin) => name.to_uppercase(),
                Some(Spelling::Off(long) | Spelling::LongAlias(long) | Spelling::Long(long, _)) => format!("--{long}"),
                None => format!("--{}", kebab(&name)),
            };
            (name, shown)
        })
        .collect()
}

/// A tool's usage error as the command line says it: every parameter the message names
/// (in backticks, or as its first word, or any name with an `_` in it, which no sentence
/// has) becomes the flag or positional that gives it. The engine's messages name
/// parameters, as MCP and HTTP callers know them.
pub(crate) fn in_cli_words(message: &str, spellings: &[(String, String)]) -> String {
    let flag = |word: &str| spellings.iter().find(|(p, _)| p == word).map(|(_, f)| f.as_str());
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    let mut first = true;
    while !rest.is_empty() {
        let start = rest.find(is_name).unwrap_or(rest.len());
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest.find(|c: char| !is_name(c)).unwrap_or(rest.len());
        let word = &rest[..end];
        if word.is_empty() {
            break;
        }
        let before = out.chars().last();
        let after = rest[end..].chars().next();
        let quoted = before == Some('`') && after == Some('`');
        let leading = first && start == 0 && matches!(after, Some(' ' | ':'));
        let preceded_by_dash = matches!(before, Some('-' | '.' | '/'));
        match flag(word) {
            Some(f) if !preceded_by_dash && (quoted || leading || word.contains('_')) => out.push_str(f),
            _ => out.push_str(word),
        }
        first = false;
        rest = &rest[end..];
    }
    out
}

/// A tool's error as the command line shows it: a usage error's message, and any error's
/// hint, in the command line's words ([`in_cli_words`]).
pub(crate) fn cli_error(e: crate::error::Error, tool: &dyn Tool) -> crate::error::Error {
    use crate::error::Error;
    let words = spellings(tool);
    match e {
        Error::Usage(m) => Error::Usage(in_cli_words(&m, &words)),
        Error::Hinted { error, hint } => cli_error(*error, tool).with_hint(in_cli_words(&hint, &words)),
        other => other,
    }
}

/// The arguments of a tool command, as text keyed by parameter name, and the parameter to
/// read from stdin, if one is.
pub(crate) fn parse(m: &ArgMatches, tool: &dyn Tool) -> (Map<String, Value>, Option<&'static str>) {
    let mut args = Map::new();
    let mut stdin = None;
    for (name, prop) in params(tool) {
        let kind = kind_of(&prop);
        match spelling(tool, &name) {
            Some(Spelling::Off(_)) => {
                if m.get_flag(&name) {
                    args.insert(name, Value::Bool(false));
                }
            }
            Some(Spelling::Positional { rest: true }) => {
                if let Some(words) = m.get_many::<String>(&name) {
                    let words: Vec<&str> = words.map(String::as_str).collect();
                    args.insert(name, Value::String(words.join(" ")));
                }
            }
            Some(Spelling::PositionalOrStdin) => match m.get_one::<String>(&name) {
                Some(v) if v != "-" => {
                    args.insert(name, Value::String(v.clone()));
                }
                _ => stdin = tool.flags().iter().find(|f| f.param == name).map(|f| f.param),
            },
            _ if kind == "boolean" => {
                if m.get_flag(&name) {
                    args.insert(name, Value::Bool(true));
                }
            }
            _ if kind == "array" => {
                if let Some(values) = m.get_many::<String>(&name) {
                    args.insert(name, Value::Array(values.map(|v| Value::String(v.clone())).collect()));
                }
            }
            _ if kind == "object" => {
                if let Some(values) = m.get_many::<String>(&name) {
                    let mut values: Vec<Value> = values.map(|v| Value::String(v.clone())).collect();
                    let value = if values.len() == 1 { values.remove(0) } else { Value::Array(values) };
                    args.insert(name, value);
                }
            }
            _ => {
                if let Some(v) = m.get_one::<String>(&name) {
                    args.insert(name, Value::String(v.clone()));
                }
            }
        }
    }
    if tool.stdin_unless().iter().any(|p| args.contains_key(*p)) {
        stdin = None;
    }
    (args, stdin)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::query::api::{ContextRequest, Params};
    use crate::query::catalog::{self, MemoryAdd, MemoryGet, Search};

    /// What the command line gave: the arguments and the parameter read from stdin.
    struct Parsed {
        args: Map<String, Value>,
        stdin: Option<&'static str>,
    }

    fn parse(tool: &dyn Tool, words: &[&str]) -> Result<Parsed, clap::Error> {
        let cmd = build(Command::new("t"), tool, None);
        let m = cmd.try_get_matches_from(std::iter::once("t").chain(words.iter().copied()))?;
        let (args, stdin) = super::parse(&m, tool);
        Ok(Parsed { args, stdin })
    }

    #[test]
    fn flags_are_made_from_the_request_and_spelled_as_it_says() {
        let a =
            parse(&catalog::Context, &["-w", "dev", "--topics", "a,b", "--topics", "c", "--no-defaults", "--tag", "x"])
                .unwrap();
        assert_eq!(
            Value::Object(a.args),
            json!({"workspace": "dev", "topics": ["a,b", "c"], "include_defaults": false, "filter_tags": ["x"]})
        );
        let r = ContextRequest::from_args(parse(&catalog::Context, &["-w", "dev", "--topics", "a,b"]).unwrap().args)
            .unwrap();
        assert_eq!((r.topics, r.include_defaults), (vec!["a".to_owned(), "b".to_owned()], true));
        // A query of several words needs no quotes.
        let a = parse(&Search, &["connection", "pool", "--limit", "3", "--kind", "entry"]).unwrap();
        assert_eq!(Value::Object(a.args), json!({"query": "connection pool", "kinds": ["entry"], "limit": "3"}));
        let a = parse(&MemoryGet, &["m_1", "--content"]).unwrap();
        assert_eq!(Value::Object(a.args), json!({"id": "m_1", "include_content": true}));
        let a = parse(&MemoryAdd, &["-", "-n", "long-term"]).unwrap();
        assert_eq!((Value::Object(a.args), a.stdin), (json!({"namespace": "long-term"}), Some("content")));
        assert!(parse(&catalog::Context, &[]).is_err(), "--workspace is required");
        assert!(parse(&Search, &["x", "--bogus"]).is_err());
    }

    #[test]
    fn usage_errors_name_the_flags_and_positionals_of_the_command_line() {
        let words = spellings(&catalog::EntryWrite);
        let say = |m: &str| in_cli_words(m, &words);
        assert_eq!(
            say("ref_id needs expected_hash: read the entry with workspace_read, which gives its hash"),
            "--ref-id needs --expected-hash: read the entry with workspace_read, which gives its hash"
        );
        let words = spellings(&catalog::WorkspaceRead);
        assert_eq!(in_cli_words("ref_id is empty: give the refId", &words), "REF_ID is empty: give the refId");
        let words = spellings(&Search);
        let say = |m: &str| in_cli_words(m, &words);
        assert_eq!(say("limit 0 is outside 1 to 100"), "--limit 0 is outside 1 to 100");
        assert_eq!(say("limit: `ten` is not a whole number"), "--limit: `ten` is not a whole number");
        assert_eq!(say("over the limit of 64: `limit`"), "over the limit of 64: `--limit`");
        assert_eq!(say("max_chars 99 is outside 100 to 100000"), "--max-chars 99 is outside 100 to 100000");
    }

    #[test]
    fn help_is_the_schema_description_with_its_default() {
        let mut cmd = build(Command::new("search"), &Search, None);
        let help = cmd.render_help().to_string();
        let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(help.contains("--limit <LIMIT>"), "{help}");
        assert!(flat.contains("How many results at most, 1 to 100. [default: 10]"), "{help}");
        assert!(help.contains("--status <STATUS>"), "{help}");
        assert!(
            flat.contains("Only items with one of these statuses, e.g. `in_progress`. Repeatable, or comma-separated."),
            "{help}"
        );
        assert!(!help.contains("--format"), "the CLI's own: {help}");
    }
}
