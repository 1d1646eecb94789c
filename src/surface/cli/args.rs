//! The flags of the commands that run a tool, made from the tool's request type.
//!
//! `ToolArgs<T>` is a clap `Args` whose arguments are the properties of `T`'s JSON Schema:
//! each becomes `--param-name` (or the spelling `T::FLAGS` gives it), with the schema's
//! description as its help, its default shown, a list repeatable and comma-separated, a
//! boolean a switch. Parsing gives the arguments as text, which the engine reads as the
//! schema says, exactly as it reads an HTTP query string. So a parameter added to a request
//! type is a flag of its command with nothing written here. `--format` is the CLI's own.

use std::marker::PhantomData;

use clap::{Arg, ArgAction, ArgMatches, Command};
use serde_json::{Map, Value};

use crate::config::Config;
use crate::query::api::{Params, Spelling, kind_of};

/// The arguments of a tool command, as text keyed by parameter name.
#[derive(Debug, Clone)]
pub(crate) struct ToolArgs<T, L = Nothing> {
    pub args: Map<String, Value>,
    /// A positional read from stdin when it was left out or `-`.
    pub stdin: Option<&'static str>,
    _params: PhantomData<(T, L)>,
}

/// Parameters the tool needs that its command lets a person leave out, because the
/// command does something useful without them.
pub(crate) trait Leave: Send + Sync + 'static {
    const OUT: &'static [&'static str];
    /// What the help of those parameters adds: what the command does without them.
    const NOTE: &'static str = "";
}

/// Every parameter the tool needs is needed on the command line too.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Nothing;

impl Leave for Nothing {
    const OUT: &'static [&'static str] = &[];
}

/// `tmws context` without `--workspace` lists the workspaces.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Workspace;

impl Leave for Workspace {
    const OUT: &'static [&'static str] = &["workspace"];
    const NOTE: &'static str = " Leave it out to see the workspaces, domains and repositories there are.";
}

/// The parameters of `T` with their schemas, in order, but the CLI's own `format`.
fn params<T: Params>() -> Vec<(String, Value)> {
    let schema = T::schema(&Config::default());
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().filter(|(k, _)| *k != "format").map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

/// The parameters the command line must give: those the tool needs, but those `L` leaves out.
fn required<T: Params, L: Leave>() -> Vec<String> {
    let schema = T::schema(&Config::default());
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).filter(|p| !L::OUT.contains(p)).map(str::to_owned).collect())
        .unwrap_or_default()
}

fn spelling<T: Params>(param: &str) -> Option<Spelling> {
    T::FLAGS.iter().find(|f| f.param == param).map(|f| f.spelling)
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

impl<T: Params, L: Leave> ToolArgs<T, L> {
    /// The arguments, made when the command is parsed or its help shown: a run builds only
    /// its own command's (each is a JSON Schema made and read).
    fn build(mut cmd: Command) -> Command {
        let required = required::<T, L>();
        for (name, prop) in params::<T>() {
            let kind = kind_of(&prop).to_owned();
            let switch = kind == "boolean";
            let spelled = spelling::<T>(&name);
            let mut text = help(&prop);
            match spelled {
                Some(Spelling::PositionalOrStdin) => text.push_str(" Read from stdin when left out or `-`."),
                Some(Spelling::Positional { rest: true }) => text.push_str(" Several words need no quotes."),
                Some(Spelling::Positional { .. }) => {}
                Some(Spelling::Off(_)) => text = format!("Turns `{name}` off. {text}"),
                _ if L::OUT.contains(&name.as_str()) => text.push_str(L::NOTE),
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
            let positional = matches!(
                spelling::<T>(&name),
                Some(Spelling::Positional { .. } | Spelling::PositionalOrStdin | Spelling::Off(_))
            );
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
}

impl<T: Params, L: Leave> clap::Args for ToolArgs<T, L> {
    fn augment_args(cmd: Command) -> Command {
        cmd.defer(Self::build)
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl<T: Params, L: Leave> clap::FromArgMatches for ToolArgs<T, L> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut args = Map::new();
        let mut stdin = None;
        for (name, prop) in params::<T>() {
            let kind = kind_of(&prop);
            match spelling::<T>(&name) {
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
                    _ => stdin = T::FLAGS.iter().find(|f| f.param == name).map(|f| f.param),
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
        if T::STDIN_UNLESS.iter().any(|p| args.contains_key(*p)) {
            stdin = None;
        }
        Ok(ToolArgs { args, stdin, _params: PhantomData })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use clap::{Args, FromArgMatches};
    use serde_json::json;

    use super::*;
    use crate::query::api::{ContextRequest, MemoryAddRequest, MemoryGetRequest, SearchRequest};

    fn parse<T: Params>(words: &[&str]) -> Result<ToolArgs<T>, clap::Error> {
        let cmd = ToolArgs::<T>::augment_args(Command::new("t"));
        let m = cmd.try_get_matches_from(std::iter::once("t").chain(words.iter().copied()))?;
        ToolArgs::<T>::from_arg_matches(&m)
    }

    #[test]
    fn flags_are_made_from_the_request_and_spelled_as_it_says() {
        let a =
            parse::<ContextRequest>(&["-w", "dev", "--topics", "a,b", "--topics", "c", "--no-defaults", "--tag", "x"])
                .unwrap();
        assert_eq!(
            Value::Object(a.args),
            json!({"workspace": "dev", "topics": ["a,b", "c"], "include_defaults": false, "filter_tags": ["x"]})
        );
        let r = ContextRequest::from_args(parse::<ContextRequest>(&["-w", "dev", "--topics", "a,b"]).unwrap().args)
            .unwrap();
        assert_eq!((r.topics, r.include_defaults), (vec!["a".to_owned(), "b".to_owned()], true));
        // A query of several words needs no quotes.
        let a = parse::<SearchRequest>(&["connection", "pool", "--limit", "3", "--kind", "entry"]).unwrap();
        assert_eq!(Value::Object(a.args), json!({"query": "connection pool", "kinds": ["entry"], "limit": "3"}));
        let a = parse::<MemoryGetRequest>(&["m_1", "--content"]).unwrap();
        assert_eq!(Value::Object(a.args), json!({"id": "m_1", "include_content": true}));
        let a = parse::<MemoryAddRequest>(&["-", "-n", "long-term"]).unwrap();
        assert_eq!((Value::Object(a.args), a.stdin), (json!({"namespace": "long-term"}), Some("content")));
        assert!(parse::<ContextRequest>(&[]).is_err(), "--workspace is required");
        assert!(parse::<SearchRequest>(&["x", "--bogus"]).is_err());
    }

    #[test]
    fn help_is_the_schema_description_with_its_default() {
        let mut cmd = ToolArgs::<SearchRequest>::augment_args(Command::new("search"));
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
