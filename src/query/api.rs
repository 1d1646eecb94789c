//! The requests of every tool, defined once: parameters, defaults, limits and validation.
//!
//! Each request is a `serde` + `schemars` struct whose doc comments are the parameter
//! descriptions an MCP client sees. MCP deserialises the arguments into it directly, HTTP
//! from the query string or the body, and the CLI from flags that it generates from the
//! same schema ([`Params::schema`], spelled as [`Params::FLAGS`] says): a parameter added
//! here appears on all three surfaces with the same default, limit and error.
//!
//! Values that arrive as text (a query string, a flag, an MCP client that sends `"1"` for
//! `1`) are turned into the types the schema names by [`coerce`] before deserialising, so
//! every surface accepts the same spellings and refuses the same mistakes.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::limits::{self, Limit};
pub use crate::limits::{MAX_NAME_CHARS, MAX_QUERY_BYTES, MAX_TAG_CHARS, MAX_TAGS};

/// The most `max_chars` may ask for (docs/answers.md).
pub const MAX_MAX_CHARS: usize = limits::ANSWER_CHARS.max as usize;
/// The least `max_chars` may ask for: room to say that the answer was cut, and how to get
/// the rest.
pub const MIN_MAX_CHARS: usize = limits::ANSWER_CHARS.min as usize;

/// How an answer is written: YAML (fewer tokens) or JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum Format {
    #[default]
    Yaml,
    Json,
}

/// How the CLI spells a parameter, where it is not `--param-name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spelling {
    /// `--long`, with `-short` when given, and other long names it also answers to.
    Long(&'static str, Option<char>),
    /// A positional argument. `rest`: every remaining word, joined by spaces (a query).
    Positional { rest: bool },
    /// A positional argument read from stdin when it is left out or `-`.
    PositionalOrStdin,
    /// A boolean that is true by default and turned off by this flag (`--no-defaults`).
    Off(&'static str),
    /// An alias of `Long`: the flag `long` with the short `short`, also `--param-name`.
    LongAlias(&'static str),
}

/// One parameter's CLI spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flag {
    pub param: &'static str,
    pub spelling: Spelling,
}

const fn flag(param: &'static str, spelling: Spelling) -> Flag {
    Flag { param, spelling }
}

/// A tool's request.
pub trait Params: DeserializeOwned + JsonSchema + Clone + std::fmt::Debug + Send + 'static {
    /// The CLI's spelling of the parameters that are not `--param-name`.
    const FLAGS: &'static [Flag] = &[];
    /// Parameters whose presence means a `PositionalOrStdin` left out is not read from
    /// stdin (`memory add --problem …` needs no content).
    const STDIN_UNLESS: &'static [&'static str] = &[];

    /// Defaults that come from the config, as the schema publishes them.
    fn config_defaults(_config: &Config) -> Vec<(&'static str, Value)> {
        Vec::new()
    }

    /// Changes to the schema's properties that a doc comment cannot make: descriptions that
    /// list values known only in code.
    fn amend_schema(_props: &mut Map<String, Value>) {}

    /// Checks every parameter against its range and the input limits of docs/trust-boundary.md (a
    /// value out of range is an error, never clamped); returns the answer's cap in characters.
    fn validate(&self, _config: &Config) -> Result<usize> {
        Ok(MAX_MAX_CHARS)
    }

    /// The JSON Schema of the parameters, as MCP publishes it: plain types (no `null`),
    /// the defaults of this config, no bookkeeping keys.
    fn schema(config: &Config) -> Map<String, Value> {
        let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
        let schema = generator.into_root_schema_for::<Self>();
        let mut v = serde_json::to_value(schema).unwrap_or_default();
        let mut out = Map::new();
        if let Value::Object(m) = &mut v {
            for key in ["type", "properties", "required", "additionalProperties"] {
                if let Some(x) = m.remove(key) {
                    out.insert(key.to_owned(), x);
                }
            }
        }
        if let Some(Value::Object(props)) = out.get_mut("properties") {
            for prop in props.values_mut() {
                plain(prop);
            }
            Self::amend_schema(props);
            for (name, value) in Self::config_defaults(config) {
                if let Some(Value::Object(p)) = props.get_mut(name) {
                    p.insert("default".into(), value);
                }
            }
        }
        out.entry("type").or_insert_with(|| Value::from("object"));
        out.entry("properties").or_insert_with(|| Value::Object(Map::new()));
        out
    }

    /// Reads the parameters from arguments of any surface: values given as text are turned
    /// into the types the schema names first; an unknown parameter is an error that lists
    /// the known ones.
    fn from_args(mut args: Map<String, Value>) -> Result<Self> {
        coerce(&mut args, &plain_schema::<Self>())?;
        serde_json::from_value(Value::Object(args)).map_err(|e| Error::Usage(parameter_error(&e.to_string())))
    }
}

/// The schema of `T` with the defaults of no config, made once per process: what `coerce`
/// reads types from on every call.
fn plain_schema<T: Params>() -> std::sync::Arc<Map<String, Value>> {
    use std::any::TypeId;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock, PoisonError};
    type Schemas = Mutex<HashMap<TypeId, Arc<Map<String, Value>>>>;
    static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
    let cache = SCHEMAS.get_or_init(Mutex::default);
    if let Some(s) = cache.lock().unwrap_or_else(PoisonError::into_inner).get(&TypeId::of::<T>()) {
        return s.clone();
    }
    let schema = Arc::new(T::schema(&Config::default()));
    cache.lock().unwrap_or_else(PoisonError::into_inner).insert(TypeId::of::<T>(), schema.clone());
    schema
}

/// A schema property as clients can fill it: `["integer", "null"]` becomes `integer`, a
/// `null` default goes, and so do number formats nobody reads.
fn plain(prop: &mut Value) {
    let Value::Object(p) = prop else { return };
    // A doc comment's lines are one paragraph: clients wrap it themselves.
    if let Some(Value::String(d)) = p.get_mut("description") {
        *d = d
            .split("\n\n")
            .map(|para| para.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
            .join("\n\n");
    }
    if let Some(Value::Array(types)) = p.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| t.as_str() != Some("null")).cloned().collect();
        if kept.len() == 1 {
            p.insert("type".into(), kept[0].clone());
        }
    }
    if p.get("default") == Some(&Value::Null) {
        p.remove("default");
    }
    p.remove("format");
    if p.get("minimum") == Some(&Value::from(0)) && p.get("maximum").is_none() {
        p.remove("minimum");
    }
}

/// serde's message for a bad parameter, in the words of a parameter list.
fn parameter_error(message: &str) -> String {
    let m = message.replace("unknown field", "unknown parameter").replace("missing field", "missing parameter");
    m.split(" at line ").next().unwrap_or(&m).to_owned()
}

/// The type a schema property names (`string`, `integer`, `number`, `boolean`, `array`,
/// `object`).
pub fn kind_of(prop: &Value) -> &str {
    prop.get("type").and_then(Value::as_str).unwrap_or("string")
}

/// Turns text values into the types the schema's properties name: `"5"` into `5` where an
/// integer is wanted, `"true"` into `true`, `"a,b"` into `["a", "b"]` where a list is, and
/// a JSON text into an object. Values already of their type are left alone.
pub fn coerce(args: &mut Map<String, Value>, schema: &Map<String, Value>) -> Result<()> {
    let Some(Value::Object(props)) = schema.get("properties") else { return Ok(()) };
    for (name, value) in args.iter_mut() {
        let Some(prop) = props.get(name) else { continue };
        let bad = |what: &str, text: &str| Error::Usage(format!("{name}: `{}` is not {what}", preview(text)));
        if let (Some(allowed), Value::String(s)) = (prop.get("enum").and_then(Value::as_array), &*value)
            && !allowed.iter().any(|a| a.as_str() == Some(s.as_str()))
        {
            let names: Vec<&str> = allowed.iter().filter_map(Value::as_str).collect();
            return Err(Error::Usage(format!("{name}: `{}` is not one of {}", preview(s), names.join(", "))));
        }
        let converted = match (kind_of(prop), &*value) {
            ("integer", Value::String(s)) => {
                // Every integer parameter is a count or a size: none is below zero.
                let n: u64 = s.trim().parse().map_err(|_| bad("a whole number of 0 or more", s))?;
                Value::from(n)
            }
            ("number", Value::String(s)) => {
                let n: f64 = s.trim().parse().map_err(|_| bad("a number", s))?;
                serde_json::Number::from_f64(n).map(Value::Number).ok_or_else(|| bad("a number", s))?
            }
            ("boolean", Value::String(s)) => match s.trim() {
                "true" | "1" | "yes" => Value::Bool(true),
                "false" | "0" | "no" => Value::Bool(false),
                _ => return Err(bad("true or false", s)),
            },
            ("array", Value::String(s)) => {
                Value::Array(s.split(',').map(str::trim).filter(|p| !p.is_empty()).map(Value::from).collect())
            }
            ("array", Value::Array(items)) if items.iter().any(|i| i.as_str().is_some_and(|s| s.contains(','))) => {
                // Repeated flags, some of them lists themselves: `--tag a,b --tag c`.
                let mut all = Vec::new();
                for item in items {
                    match item {
                        Value::String(s) => {
                            all.extend(s.split(',').map(str::trim).filter(|p| !p.is_empty()).map(Value::from));
                        }
                        other => all.push(other.clone()),
                    }
                }
                Value::Array(all)
            }
            ("object", Value::String(s)) => Value::Object(object_of(name, std::slice::from_ref(s))?),
            ("object", Value::Array(items)) if items.iter().all(Value::is_string) => {
                let texts: Vec<String> = items.iter().filter_map(Value::as_str).map(str::to_owned).collect();
                Value::Object(object_of(name, &texts)?)
            }
            _ => continue,
        };
        *value = converted;
    }
    Ok(())
}

/// An object parameter given as text (a command line, a query string): each text is a JSON
/// object or one `KEY=VALUE`, whose value is read as YAML (`tags=[a, b]`, `done=true`,
/// `status=new`; `null` or `~` is a null); later ones win.
fn object_of(name: &str, texts: &[String]) -> Result<Map<String, Value>> {
    let mut out = Map::new();
    for text in texts {
        let trimmed = text.trim_start();
        if trimmed.starts_with('{') {
            match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(m)) => out.extend(m),
                Ok(_) => return Err(Error::Usage(format!("{name}: must be a JSON object"))),
                Err(e) => return Err(Error::Usage(format!("{name}: not valid JSON: {e}"))),
            }
            continue;
        }
        let Some((key, value)) = text.split_once('=').filter(|(k, _)| !k.trim().is_empty()) else {
            return Err(Error::Usage(format!("{name}: must be a JSON object, e.g. '{{\"text\": \"hi\"}}'")));
        };
        // A scalar or a list; `a: b` is the text it looks like, not a mapping.
        let value = match crate::parse::yaml::parse(value, 1) {
            (Some(node), diags) if diags.is_empty() => match node.to_json() {
                Value::Object(_) => Value::String(value.to_owned()),
                v => v,
            },
            _ => Value::String(value.to_owned()),
        };
        out.insert(key.trim().to_owned(), value);
    }
    Ok(out)
}

/// The start of an over-long input, for error messages that must not echo it whole. The
/// input is redacted before it is cut: a secret cut short is no longer one the redactor
/// knows, and its start would be shown.
pub fn preview(text: &str) -> String {
    const SHOWN: usize = 60;
    // What is shown comes from the start: the redactor reads a window of it large enough
    // to hold a whole key that begins there, not the megabytes an over-long input may have.
    const READ: usize = 64 << 10;
    let window = text.char_indices().nth(READ).map_or(text, |(at, _)| &text[..at]);
    let redacted = crate::redact::redact(window);
    let shown = redacted.text.as_str();
    if shown.chars().count() <= SHOWN {
        return shown.to_owned();
    }
    let head: String = shown.chars().take(SHOWN).collect();
    format!("{head}… ({} chars)", text.chars().count())
}

/// `Some(text)` unless it is longer than `max` characters (an error naming `what`).
pub(crate) fn within(what: &str, text: &str, max: usize) -> Result<()> {
    let n = text.chars().count();
    if n > max {
        return Err(Error::Usage(format!("{what} is {n} characters, over the limit of {max}: `{}`", preview(text))));
    }
    Ok(())
}

/// Checks a list of tags against the input limits (docs/trust-boundary.md).
pub(crate) fn tags_within(tags: &[String]) -> Result<()> {
    if tags.len() > MAX_TAGS {
        return Err(Error::Usage(format!("{} tags, over the limit of {MAX_TAGS}", tags.len())));
    }
    tags.iter().try_for_each(|t| within("a tag", t, MAX_TAG_CHARS))
}

/// A query's text within its limit.
pub(crate) fn query_within(query: &str) -> Result<()> {
    if query.len() > MAX_QUERY_BYTES {
        return Err(Error::Usage(format!(
            "the query is {} bytes, over the limit of {MAX_QUERY_BYTES}: `{}`",
            query.len(),
            preview(query)
        )));
    }
    Ok(())
}

/// `max_chars`, or the config's answer cap, within [`limits::ANSWER_CHARS`]. The config's
/// cap is checked against the same limit when it loads, so only a `max_chars` the caller
/// gave can fail here.
pub(crate) fn answer_cap(max_chars: Option<u32>, config: &Config) -> Result<usize> {
    let max = max_chars.map_or(config.retrieval.answer_cap_chars as u64, u64::from);
    let max = limits::ANSWER_CHARS.check("max_chars", max).map_err(Error::Usage)?;
    Ok(max as usize)
}

/// A `limit` parameter within its limit.
pub(crate) fn limit_within(value: u32, limit: &Limit<u64>) -> Result<usize> {
    let n = limit.check("limit", u64::from(value)).map_err(Error::Usage)?;
    Ok(n as usize)
}

/// A fraction parameter (`min_score`, `importance`) within its limit.
pub(crate) fn fraction_within(param: &str, value: f64, limit: &Limit<f64>) -> Result<f64> {
    limit.check(param, value).map_err(Error::Usage)
}

fn yes() -> bool {
    true
}

/// A `limit` parameter's default, as serde asks for it.
fn search_results() -> u32 {
    limits::SEARCH_RESULTS.default as u32
}

fn recall_results() -> u32 {
    limits::RECALL_RESULTS.default as u32
}

fn tool_search_results() -> u32 {
    limits::TOOL_SEARCH_RESULTS.default as u32
}

fn memory_list_results() -> u32 {
    limits::MEMORY_LIST_RESULTS.default as u32
}

fn cap_default(config: &Config) -> (&'static str, Value) {
    ("max_chars", Value::from(config.retrieval.answer_cap_chars))
}

/// Parameters of `workspace_get_context` (docs/tools.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextRequest {
    /// The workspace: the name of a folder under `resources/workspaces/`, e.g. `devtools`.
    /// An unknown name is an error that lists the known ones.
    pub workspace: String,
    /// A domain: a folder inside the workspace, e.g. `common`. Narrows the answer to it;
    /// the workspace's decisions and lessons still come with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// A repository: a folder inside the domain, e.g. `tmws-cli` (needs `domain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// Topics whose entries to return: `plans`, `decisions`, `lessons`, `features`,
    /// `architecture`, `spikes`, any other `_topic` folder name, `overview` for the scope's
    /// full overview, or `*` for every topic found in the scope.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topics: Vec<String>,
    /// Whether the answer holds the orientation defaults (scope overview, folder tree,
    /// overviews, decision and lesson summaries, skills); leave them out on follow-up calls
    /// in the same session to save tokens.
    #[serde(default = "yes")]
    pub include_defaults: bool,
    /// Only entries with one of these statuses (e.g. `in_progress`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filter_status: Vec<String>,
    /// Only entries carrying all of these tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filter_tags: Vec<String>,
    /// Only entries of this category (decisions and lessons have one, e.g. `architecture`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter_category: Option<String>,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
    /// Answer cap in characters, 100 to 100000; a longer answer is cut and says how to get
    /// the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = limits::ANSWER_CHARS.min, max = limits::ANSWER_CHARS.max))]
    pub max_chars: Option<u32>,
}

impl Default for ContextRequest {
    fn default() -> Self {
        ContextRequest {
            workspace: String::new(),
            domain: None,
            repository: None,
            topics: Vec::new(),
            include_defaults: true,
            filter_status: Vec::new(),
            filter_tags: Vec::new(),
            filter_category: None,
            format: Format::Yaml,
            max_chars: None,
        }
    }
}

impl Params for ContextRequest {
    const FLAGS: &'static [Flag] = &[
        flag("workspace", Spelling::Long("workspace", Some('w'))),
        flag("domain", Spelling::Long("domain", Some('d'))),
        flag("repository", Spelling::Long("repository", Some('r'))),
        flag("include_defaults", Spelling::Off("no-defaults")),
        flag("filter_status", Spelling::Long("status", None)),
        flag("filter_tags", Spelling::Long("tag", None)),
        flag("filter_category", Spelling::Long("category", None)),
    ];

    fn config_defaults(config: &Config) -> Vec<(&'static str, Value)> {
        vec![cap_default(config)]
    }

    fn validate(&self, config: &Config) -> Result<usize> {
        for name in [Some(&self.workspace), self.domain.as_ref(), self.repository.as_ref()].into_iter().flatten() {
            within("a scope name", name, MAX_NAME_CHARS)?;
        }
        tags_within(&self.filter_tags)?;
        answer_cap(self.max_chars, config)
    }
}

/// Parameters of `workspace_search` (docs/tools.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    /// Words to look for. Stemmed, identifiers split (`symbols` finds
    /// `get_symbols_overview`), Japanese, Chinese and Korean matched inside sentences;
    /// "double quotes" make a phrase.
    pub query: String,
    /// Only this scope and below: `workspace[/domain[/repository]]`, e.g. `devtools/common`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Only entries of these topics: the names of `_topic` folders without the `_`, e.g.
    /// `plans`, `decisions`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topics: Vec<String>,
    /// Only these kinds of item (the schema lists them all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<String>,
    /// Only items with one of these statuses, e.g. `in_progress`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filter_status: Vec<String>,
    /// Only items carrying all of these tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filter_tags: Vec<String>,
    /// Only items about this issue: `123`, `#123`, `PROJ-123` or `owner/repo#12` (commits
    /// whose message names it, memories written on its branch, sessions that worked on
    /// it). A query that is nothing but an issue reference (`#123`) lists them too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue: Option<String>,
    /// How many results at most, 1 to 100.
    #[serde(default = "search_results")]
    #[schemars(range(min = limits::SEARCH_RESULTS.min, max = limits::SEARCH_RESULTS.max))]
    pub limit: u32,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
    /// Answer cap in characters, 100 to 100000; a longer answer is cut and says how to get
    /// the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = limits::ANSWER_CHARS.min, max = limits::ANSWER_CHARS.max))]
    pub max_chars: Option<u32>,
}

impl SearchRequest {
    /// The index terms of the issues searched: the written form of `issue`, else those of
    /// a query that is nothing but issue references (`#123`, `PROJ-7 #8`); and whether the
    /// query's words are those references (then the items are listed rather than
    /// searched). `#12` finds `owner/repo#12` too (its item holds both terms); `owner/repo#12`
    /// finds only that repository's.
    pub fn issue_terms(&self) -> Result<(Vec<String>, bool)> {
        use crate::parse::issue_ref;
        if let Some(text) = &self.issue {
            let r = issue_ref::parse(text).ok_or_else(|| {
                Error::Usage(format!(
                    "`{}` is not an issue reference: give 123, #123, PROJ-123 or owner/repo#12",
                    preview(text)
                ))
            })?;
            return Ok((vec![r.to_string()], false));
        }
        let words: Vec<&str> = self.query.split_whitespace().collect();
        let refs = issue_ref::from_message(&self.query);
        let only_refs = !words.is_empty() && words.iter().all(|w| issue_ref::from_message(w).len() == 1);
        if only_refs && words.len() == refs.len() {
            return Ok((refs.iter().map(ToString::to_string).collect(), true));
        }
        Ok((Vec::new(), false))
    }

    /// A search for `query` with every other parameter at its default.
    pub fn new(query: impl Into<String>) -> SearchRequest {
        SearchRequest {
            query: query.into(),
            scope: None,
            topics: Vec::new(),
            kinds: Vec::new(),
            filter_status: Vec::new(),
            filter_tags: Vec::new(),
            issue: None,
            limit: search_results(),
            format: Format::Yaml,
            max_chars: None,
        }
    }
}

impl Params for SearchRequest {
    const FLAGS: &'static [Flag] = &[
        flag("query", Spelling::Positional { rest: true }),
        flag("topics", Spelling::Long("topic", None)),
        flag("kinds", Spelling::Long("kind", None)),
        flag("filter_status", Spelling::Long("status", None)),
        flag("filter_tags", Spelling::Long("tag", None)),
    ];

    fn config_defaults(config: &Config) -> Vec<(&'static str, Value)> {
        vec![cap_default(config)]
    }

    /// The kinds as the index knows them, so that the description names every one.
    fn amend_schema(props: &mut Map<String, Value>) {
        let kinds: Vec<&str> = crate::model::DocKind::ALL.iter().map(|k| k.as_str()).collect();
        if let Some(Value::Object(p)) = props.get_mut("kinds") {
            p.insert("description".into(), Value::from(format!("Only these kinds of item: {}.", kinds.join(", "))));
        }
    }

    fn validate(&self, config: &Config) -> Result<usize> {
        query_within(&self.query)?;
        tags_within(&self.filter_tags)?;
        self.issue_terms()?;
        limit_within(self.limit, &limits::SEARCH_RESULTS)?;
        answer_cap(self.max_chars, config)
    }
}

/// Parameters of `recall` (docs/tools.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallRequest {
    /// The task about to be done, in plain words (`fix the token refresh race in the auth
    /// middleware`).
    pub task: String,
    /// A scope (`workspace[/domain[/repository]]`): its entries (decisions, lessons,
    /// runbooks, …), those below it and those of the scopes above it. By default every
    /// scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// How many results at most, 1 to 50.
    #[serde(default = "recall_results")]
    #[schemars(range(min = limits::RECALL_RESULTS.min, max = limits::RECALL_RESULTS.max))]
    pub limit: u32,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
    /// Answer cap in characters, 100 to 100000; a longer answer is cut from its last
    /// result and says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = limits::ANSWER_CHARS.min, max = limits::ANSWER_CHARS.max))]
    pub max_chars: Option<u32>,
}

impl RecallRequest {
    /// A recall for `task` with every other parameter at its default.
    pub fn new(task: impl Into<String>) -> RecallRequest {
        RecallRequest { task: task.into(), scope: None, limit: recall_results(), format: Format::Yaml, max_chars: None }
    }
}

impl Params for RecallRequest {
    const FLAGS: &'static [Flag] = &[flag("task", Spelling::Positional { rest: true })];

    fn config_defaults(config: &Config) -> Vec<(&'static str, Value)> {
        vec![cap_default(config)]
    }

    fn validate(&self, config: &Config) -> Result<usize> {
        query_within(&self.task)?;
        if self.task.trim().is_empty() {
            return Err(Error::Usage("empty task: say in a few words what you are about to do".into()));
        }
        if let Some(s) = &self.scope {
            within("the scope", s, MAX_NAME_CHARS)?;
        }
        limit_within(self.limit, &limits::RECALL_RESULTS)?;
        answer_cap(self.max_chars, config)
    }
}

/// Parameters of `memory_add` (docs/tools.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryAddRequest {
    /// What to remember, in plain words. Secrets (API keys, passwords) are redacted before
    /// anything is written; content over the namespace's limit is cut. May be left out
    /// when `problem` is given: the problem and its solution are then the content.
    #[serde(default)]
    pub content: String,
    /// `short-term` (kept 14 days) or `long-term` (kept for years), or another namespace of
    /// the config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// One line that says what this is; by default the first sentences of the content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Tags to find it by.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Who or what it came from (by default `user`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// `note` (the default), `session`, `problem`, `pattern`, `decision`, or any word.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// An upsert key such as `auth/token-refresh`: replaces the live entry with this key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// How much it matters, 0 to 1 (by default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<f64>,
    /// The agent it is written as, e.g. `claude-code`. Only the command line names it (by
    /// default `human`, the person); over MCP and HTTP it is always the session's identity
    /// (the server's --agent, else the client's name) and what is given here is not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// A problem met (makes the entry `kind: problem`): what went wrong, as another agent
    /// would describe it when it meets it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// How the problem was solved (or worked around).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub solution: Option<String>,
    /// `solved`, `workaround` or `open`; by default `solved` with a solution, else `open`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// Files the problem or its solution touched, e.g. `src/auth.rs`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// The code this memory is about, so that tmws can tell when it goes stale: `path`,
    /// `path:L1-L2` or `path#symbol`, each optionally `@commit` (e.g. `src/pool.rs:120-140`).
    /// tmws fills in the commit (HEAD) and the hash of the cited text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cites: Vec<String>,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
}

/// How a problem can end (docs/memory-log.md#problems).
pub const OUTCOMES: [&str; 3] = ["solved", "workaround", "open"];

/// At most this many files are named by one problem.
pub const MAX_FILES: usize = 100;

impl MemoryAddRequest {
    /// An add of `content` with every other parameter at its default.
    pub fn new(content: impl Into<String>) -> MemoryAddRequest {
        MemoryAddRequest { content: content.into(), ..MemoryAddRequest::default() }
    }
}

impl Params for MemoryAddRequest {
    const FLAGS: &'static [Flag] = &[
        flag("content", Spelling::PositionalOrStdin),
        flag("namespace", Spelling::Long("namespace", Some('n'))),
        flag("tags", Spelling::Long("tag", None)),
        flag("files", Spelling::Long("file", None)),
        flag("cites", Spelling::Long("cite", None)),
    ];
    const STDIN_UNLESS: &'static [&'static str] = &["problem"];

    /// Content there to remember (or a problem), an importance within 0..1, problem fields only on
    /// a problem, and the input limits (docs/trust-boundary.md) on the names and tags an add writes
    /// (the content's is the namespace's, which cuts it).
    fn validate(&self, _config: &Config) -> Result<usize> {
        let problem = self.problem.as_deref().is_some_and(|p| !p.trim().is_empty());
        if self.content.trim().is_empty() && !problem {
            return Err(Error::Usage("empty content: give the text to remember (or a problem)".into()));
        }
        if !problem && (self.solution.is_some() || self.outcome.is_some() || !self.files.is_empty()) {
            return Err(Error::Usage(
                "`solution`, `outcome` and `files` belong to a problem: give `problem` too".into(),
            ));
        }
        if problem && self.kind.as_deref().is_some_and(|k| k != "problem") {
            return Err(Error::Usage(format!(
                "a problem is kind `problem`, not `{}`: leave kind out",
                preview(self.kind.as_deref().unwrap_or_default())
            )));
        }
        for (what, v) in [("the problem", &self.problem), ("the solution", &self.solution)] {
            if let Some(v) = v {
                within(what, v, MAX_BODY_CHARS)?;
            }
        }
        if let Some(o) = &self.outcome
            && !OUTCOMES.contains(&o.as_str())
        {
            return Err(Error::Usage(format!("outcome `{}` is not one of {}", preview(o), OUTCOMES.join(", "))));
        }
        if self.files.len() > MAX_FILES {
            return Err(Error::Usage(format!("{} files: at most {MAX_FILES}", self.files.len())));
        }
        for f in &self.files {
            within("a file", f, MAX_NAME_CHARS)?;
        }
        if self.cites.len() > limits::MAX_CITES {
            return Err(Error::Usage(format!("{} citations: at most {}", self.cites.len(), limits::MAX_CITES)));
        }
        for c in &self.cites {
            crate::memory::cite::Cite::parse(c).map_err(|why| {
                Error::Usage(if why.starts_with('`') { format!("citation {why}") } else { format!("citation: {why}") })
            })?;
        }
        if let Some(i) = self.importance {
            fraction_within("importance", i, &limits::IMPORTANCE)?;
        }
        let names = [("key", &self.key), ("kind", &self.kind), ("source", &self.source), ("agent", &self.agent)];
        for (what, v) in names {
            if let Some(v) = v {
                within(what, v, MAX_NAME_CHARS)?;
            }
        }
        if let Some(ns) = &self.namespace {
            within("the namespace", ns, MAX_NAME_CHARS)?;
        }
        tags_within(&self.tags)?;
        Ok(MAX_MAX_CHARS)
    }
}

/// Parameters of `memory_search` (docs/tools.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemorySearchRequest {
    /// Words to look for, or a memory id (`m_` and 12 hex digits) to fetch that entry.
    pub query: String,
    /// Only memories of this namespace: `short-term`, `long-term` or another of the config.
    /// By default every namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Only memories carrying all of these tags, e.g. `release`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Only memories of this kind: `note`, `session`, `problem`, `pattern`, `decision` or
    /// any other word they were added with; `problem` finds similar problems and their
    /// solutions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Only memories written on this git branch; `*` for all. By default what the checked-out
    /// commit can see: memories of the current branch, the default branch, branches merged
    /// into it, and those written outside git.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// How many results at most, 1 to 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = limits::MEMORY_SEARCH_RESULTS.min, max = limits::MEMORY_SEARCH_RESULTS.max))]
    pub limit: Option<u32>,
    /// Leave out results scoring under this, relative to the best (0 to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = limits::MIN_SCORE.min, max = limits::MIN_SCORE.max))]
    pub min_score: Option<f64>,
    /// Add the first 1,200 characters of each content.
    #[serde(default)]
    pub include_content: bool,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
    /// Answer cap in characters, 100 to 100000; a longer answer is cut and says how to get
    /// the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = limits::ANSWER_CHARS.min, max = limits::ANSWER_CHARS.max))]
    pub max_chars: Option<u32>,
}

impl MemorySearchRequest {
    /// A search for `query` with every other parameter at its default.
    pub fn new(query: impl Into<String>) -> MemorySearchRequest {
        MemorySearchRequest {
            query: query.into(),
            namespace: None,
            tags: Vec::new(),
            kind: None,
            branch: None,
            limit: None,
            min_score: None,
            include_content: false,
            format: Format::Yaml,
            max_chars: None,
        }
    }
}

impl Params for MemorySearchRequest {
    const FLAGS: &'static [Flag] = &[
        flag("query", Spelling::Positional { rest: true }),
        flag("namespace", Spelling::Long("namespace", Some('n'))),
        flag("tags", Spelling::Long("tag", None)),
    ];

    fn config_defaults(config: &Config) -> Vec<(&'static str, Value)> {
        vec![
            ("limit", Value::from(config.retrieval.top_k)),
            ("min_score", Value::from(config.retrieval.min_score)),
            cap_default(config),
        ]
    }

    fn validate(&self, config: &Config) -> Result<usize> {
        query_within(&self.query)?;
        tags_within(&self.tags)?;
        for (what, v) in [("the namespace", &self.namespace), ("kind", &self.kind), ("branch", &self.branch)] {
            if let Some(v) = v {
                within(what, v, MAX_NAME_CHARS)?;
            }
        }
        // Left out, both come from the config, which was checked against the same limits
        // when it loaded: only a value the caller gave can fail.
        limit_within(self.limit_or(config), &limits::MEMORY_SEARCH_RESULTS)?;
        fraction_within("min_score", self.min_score_or(config), &limits::MIN_SCORE)?;
        answer_cap(self.max_chars, config)
    }
}

impl MemorySearchRequest {
    /// `limit`, or the config's `retrieval.top_k`.
    pub(crate) fn limit_or(&self, config: &Config) -> u32 {
        self.limit.unwrap_or(u32::try_from(config.retrieval.top_k).unwrap_or(u32::MAX))
    }

    /// `min_score`, or the config's `retrieval.min_score`.
    pub(crate) fn min_score_or(&self, config: &Config) -> f64 {
        self.min_score.unwrap_or(config.retrieval.min_score)
    }
}

/// Parameters of `memory_list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryListRequest {
    /// Only memories of this namespace: `short-term`, `long-term` or another of the config.
    /// By default every namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Only memories added since then: a date (`2026-11-01`), a time (RFC 3339) or a span
    /// back from now (`30m`, `12h`, `7d`, `2w`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Only memories carrying all of these tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Only memories of this kind (`note`, `session`, `problem`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Only memories written on this git branch; `*` for all. By default what the checked-out
    /// commit can see, as memory_search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// How many at most, 1 to 100.
    #[serde(default = "memory_list_results")]
    #[schemars(range(min = limits::MEMORY_LIST_RESULTS.min, max = limits::MEMORY_LIST_RESULTS.max))]
    pub limit: u32,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
    /// Answer cap in characters, 100 to 100000; a longer answer is cut and says how to get
    /// the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = limits::ANSWER_CHARS.min, max = limits::ANSWER_CHARS.max))]
    pub max_chars: Option<u32>,
}

impl Params for MemoryListRequest {
    const FLAGS: &'static [Flag] =
        &[flag("namespace", Spelling::Long("namespace", Some('n'))), flag("tags", Spelling::Long("tag", None))];

    fn config_defaults(config: &Config) -> Vec<(&'static str, Value)> {
        vec![cap_default(config)]
    }

    fn validate(&self, config: &Config) -> Result<usize> {
        tags_within(&self.tags)?;
        for (what, v) in
            [("the namespace", &self.namespace), ("kind", &self.kind), ("branch", &self.branch), ("since", &self.since)]
        {
            if let Some(v) = v {
                within(what, v, MAX_NAME_CHARS)?;
            }
        }
        limit_within(self.limit, &limits::MEMORY_LIST_RESULTS)?;
        answer_cap(self.max_chars, config)
    }
}

/// Parameters of `memory_get`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryGetRequest {
    /// The memory's id, as `memory_add` or `memory_search` gave it.
    pub id: String,
    /// Include the whole content.
    #[serde(default)]
    pub include_content: bool,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
    /// Answer cap in characters, 100 to 100000; a longer answer is cut and says how to get
    /// the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = limits::ANSWER_CHARS.min, max = limits::ANSWER_CHARS.max))]
    pub max_chars: Option<u32>,
}

impl Params for MemoryGetRequest {
    const FLAGS: &'static [Flag] =
        &[flag("id", Spelling::Positional { rest: false }), flag("include_content", Spelling::LongAlias("content"))];

    fn config_defaults(config: &Config) -> Vec<(&'static str, Value)> {
        vec![cap_default(config)]
    }

    fn validate(&self, config: &Config) -> Result<usize> {
        within("an id", &self.id, MAX_NAME_CHARS)?;
        answer_cap(self.max_chars, config)
    }
}

/// Parameters of `issue_show`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IssueShowRequest {
    /// The issue: `123`, `#123`, `GH-123`, `owner/repo#12`, `PROJ-123`, or its web address.
    pub reference: String,
    /// The most characters of the issue's body shown, 0 to 20000.
    #[serde(default = "issue_body_chars")]
    #[schemars(range(min = 0, max = 20000))]
    pub body_chars: u32,
    /// How many of the latest comments are shown, each cut to a few lines, 0 to 50.
    #[serde(default = "issue_comments")]
    #[schemars(range(min = 0, max = 50))]
    pub comments: u32,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
    /// Answer cap in characters, 100 to 100000; a longer answer is cut and says how to get
    /// the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = limits::ANSWER_CHARS.min, max = limits::ANSWER_CHARS.max))]
    pub max_chars: Option<u32>,
}

fn issue_body_chars() -> u32 {
    2000
}

fn issue_comments() -> u32 {
    5
}

impl Params for IssueShowRequest {
    const FLAGS: &'static [Flag] = &[flag("reference", Spelling::Positional { rest: false })];

    fn config_defaults(config: &Config) -> Vec<(&'static str, Value)> {
        vec![cap_default(config)]
    }

    fn validate(&self, config: &Config) -> Result<usize> {
        within("an issue reference", &self.reference, 512)?;
        if self.body_chars > 20_000 || self.comments > 50 {
            return Err(Error::Usage("body_chars is 0 to 20000 and comments 0 to 50".into()));
        }
        answer_cap(self.max_chars, config)
    }
}

/// Parameters of `memory_delete`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryDeleteRequest {
    /// The memory's id, as `memory_add` or `memory_search` gave it.
    pub id: String,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
}

impl Params for MemoryDeleteRequest {
    const FLAGS: &'static [Flag] = &[flag("id", Spelling::Positional { rest: false })];

    fn validate(&self, _config: &Config) -> Result<usize> {
        within("an id", &self.id, MAX_NAME_CHARS)?;
        Ok(MAX_MAX_CHARS)
    }
}

/// Parameters of `trust_verify` (docs/trust.md). The verifier is the session's identity (the
/// server's `--agent`, else the name the client gave in `initialize`): never a parameter,
/// so an agent cannot vouch for itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrustVerifyRequest {
    /// The agent whose work was checked, by the name its memories carry as `agent`.
    pub agent: String,
    /// Whether its work held up.
    pub success: bool,
    /// What was checked: a test run, a review, a commit.
    pub evidence: String,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
}

impl Params for TrustVerifyRequest {
    fn validate(&self, _config: &Config) -> Result<usize> {
        within("an agent", &self.agent, MAX_NAME_CHARS)?;
        within("the evidence", &self.evidence, MAX_DESCRIPTION_CHARS)?;
        Ok(MAX_MAX_CHARS)
    }
}

/// Parameters of `workspace_list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceListRequest {
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
    /// Answer cap in characters, 100 to 100000; a longer answer is cut and says how to get
    /// the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = limits::ANSWER_CHARS.min, max = limits::ANSWER_CHARS.max))]
    pub max_chars: Option<u32>,
}

impl Params for WorkspaceListRequest {
    fn config_defaults(config: &Config) -> Vec<(&'static str, Value)> {
        vec![cap_default(config)]
    }

    fn validate(&self, config: &Config) -> Result<usize> {
        answer_cap(self.max_chars, config)
    }
}

/// The longest body `entry_write` takes (docs/trust-boundary.md).
pub const MAX_BODY_CHARS: usize = 1_000_000;
/// The longest description `entry_write` takes.
pub const MAX_DESCRIPTION_CHARS: usize = 2_000;

/// Parameters of `entry_write` (docs/tools.md) and `tmws new`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntryWriteRequest {
    /// The topic: `decisions`, `lessons`, `plans`, any other topic folder's name without its
    /// `_` (a new one is made), or `overview` for the scope's own OVERVIEW.md.
    pub topic: String,
    /// The entry's name, one line; the file is named `YYMMDD-kebab-name.md` from it and
    /// today's date.
    pub name: String,
    /// The workspace, e.g. `acme` (workspace_list gives them). With topic `overview`, a new
    /// one is made.
    pub workspace: String,
    /// A domain inside the workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// A repository inside the domain (needs `domain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// One sentence that says what the entry is.
    pub description: String,
    /// Other front-matter fields, e.g. `{"status": "in_progress", "tags": ["auth"]}`; a
    /// plan's `status` is `new` unless given, `created` is today. On the command line
    /// `--field status=in_progress --field tags=[auth, api]`; a `null` value removes a field.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub fields: Map<String, Value>,
    /// The Markdown after the front-matter. Left out, a new decision, lesson or plan gets
    /// the headings of its kind to fill in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// To change an existing entry or overview: its refId (the path workspace_read or a
    /// search gave). Needs `expected_hash`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ref_id: Option<String>,
    /// The `hash` workspace_read gave for the version you changed: if the file changed since,
    /// nothing is written and the call fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_hash: Option<String>,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
}

impl Params for EntryWriteRequest {
    const FLAGS: &'static [Flag] = &[
        flag("topic", Spelling::Positional { rest: false }),
        flag("name", Spelling::Positional { rest: false }),
        flag("workspace", Spelling::Long("workspace", Some('w'))),
        flag("domain", Spelling::Long("domain", Some('d'))),
        flag("repository", Spelling::Long("repository", Some('r'))),
        flag("fields", Spelling::Long("field", None)),
    ];

    fn validate(&self, _config: &Config) -> Result<usize> {
        for (what, v) in [("the topic", &self.topic), ("the name", &self.name), ("the workspace", &self.workspace)] {
            within(what, v, MAX_NAME_CHARS)?;
        }
        for (what, v) in [("the domain", &self.domain), ("the repository", &self.repository)] {
            if let Some(v) = v {
                within(what, v, MAX_NAME_CHARS)?;
            }
        }
        within("the description", &self.description, MAX_DESCRIPTION_CHARS)?;
        if let Some(body) = &self.body {
            within("the body", body, MAX_BODY_CHARS)?;
        }
        if self.fields.len() > MAX_TAGS {
            return Err(Error::Usage(format!("{} fields, over the limit of {MAX_TAGS}", self.fields.len())));
        }
        for (key, value) in &self.fields {
            within("a field name", key, MAX_NAME_CHARS)?;
            within(&format!("field `{key}`"), &value.to_string(), MAX_DESCRIPTION_CHARS)?;
        }
        if self.name.trim().is_empty() {
            return Err(Error::Usage("the name is empty: give the entry a one-line name".into()));
        }
        if self.name.contains('\n') {
            return Err(Error::Usage("the name is one line: put the rest in the description or the body".into()));
        }
        if self.description.trim().is_empty() {
            return Err(Error::Usage("the description is empty: one sentence that says what the entry is".into()));
        }
        match (&self.ref_id, &self.expected_hash) {
            (Some(_), None) => Err(Error::Usage(
                "ref_id needs expected_hash: read the entry with workspace_read, which gives its hash".into(),
            )),
            (None, Some(_)) => Err(Error::Usage("expected_hash goes with the ref_id of the entry to change".into())),
            _ => Ok(MAX_MAX_CHARS),
        }
    }
}

/// Parameters of `workspace_read`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceReadRequest {
    /// What to read, as `workspace_search` or `workspace_get_context` named it: a
    /// document's path (`resources/workspaces/acme/_decisions/260101-x.md`), a memory's id
    /// (`m_3fa9c1d2e4b5`) or a commit (`commit:<sha>`).
    pub ref_id: String,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
    /// Answer cap in characters, 100 to 100000; a longer body is cut and the answer says how
    /// to get the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = limits::ANSWER_CHARS.min, max = limits::ANSWER_CHARS.max))]
    pub max_chars: Option<u32>,
}

impl Params for WorkspaceReadRequest {
    const FLAGS: &'static [Flag] = &[flag("ref_id", Spelling::Positional { rest: false })];

    fn config_defaults(config: &Config) -> Vec<(&'static str, Value)> {
        vec![cap_default(config)]
    }

    fn validate(&self, config: &Config) -> Result<usize> {
        within("a refId", &self.ref_id, MAX_QUERY_BYTES)?;
        if self.ref_id.trim().is_empty() {
            return Err(Error::Usage("ref_id is empty: give the refId a search or the context answered".into()));
        }
        answer_cap(self.max_chars, config)
    }
}

/// Parameters of `memory_stats` and `memory_cleanup`: only the answer's format.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FormatOnly {
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
}

impl Params for FormatOnly {}

/// Parameters of `memory_clear`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryClearRequest {
    /// The namespace to empty (`short-term`, `long-term`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Empty every namespace instead.
    #[serde(default)]
    pub all: bool,
    /// Must be true: clearing cannot be undone.
    #[serde(default)]
    pub confirm: bool,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
}

impl Params for MemoryClearRequest {
    const FLAGS: &'static [Flag] =
        &[flag("namespace", Spelling::Long("namespace", Some('n'))), flag("confirm", Spelling::Long("yes", None))];
}

/// Parameters of `session_record`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionRecordRequest {
    /// Start of the window: an RFC 3339 time, a date (2026-11-22) or a commit. By default
    /// the end of the last recorded session, else 24 hours ago.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// The agent recording the session. Only the command line names it; over MCP and
    /// HTTP it is the session's identity (the server's --agent, else the client's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
}

impl Params for SessionRecordRequest {
    fn validate(&self, _config: &Config) -> Result<usize> {
        for (what, v) in [("since", &self.since), ("agent", &self.agent)] {
            if let Some(v) = v {
                within(what, v, MAX_NAME_CHARS)?;
            }
        }
        Ok(MAX_MAX_CHARS)
    }
}

/// Parameters of `tool_search` (docs/tools.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSearchRequest {
    /// What the tool should do, in words (`find a symbol`, `library docs`); identifiers are
    /// split, so `find_symbol` and `getLibraryDocs` are found by their words. May be empty
    /// with `server`, to list that server's tools.
    #[serde(default)]
    pub query: String,
    /// Only tools of this category (as the registry names them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Only tools of this server, e.g. `serena`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// How many results at most, 1 to 50.
    #[serde(default = "tool_search_results")]
    #[schemars(range(min = limits::TOOL_SEARCH_RESULTS.min, max = limits::TOOL_SEARCH_RESULTS.max))]
    pub limit: u32,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
    /// Answer cap in characters, 100 to 100000; a longer answer is cut and says how to get
    /// the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = limits::ANSWER_CHARS.min, max = limits::ANSWER_CHARS.max))]
    pub max_chars: Option<u32>,
}

impl ToolSearchRequest {
    /// A search for `query` with every other parameter at its default.
    pub fn new(query: impl Into<String>) -> ToolSearchRequest {
        ToolSearchRequest {
            query: query.into(),
            category: None,
            server: None,
            limit: tool_search_results(),
            format: Format::Yaml,
            max_chars: None,
        }
    }
}

impl Params for ToolSearchRequest {
    const FLAGS: &'static [Flag] = &[flag("query", Spelling::Positional { rest: true })];

    fn config_defaults(config: &Config) -> Vec<(&'static str, Value)> {
        vec![cap_default(config)]
    }

    fn validate(&self, config: &Config) -> Result<usize> {
        query_within(&self.query)?;
        for (what, v) in [("category", &self.category), ("server", &self.server)] {
            if let Some(v) = v {
                within(what, v, MAX_NAME_CHARS)?;
            }
        }
        limit_within(self.limit, &limits::TOOL_SEARCH_RESULTS)?;
        answer_cap(self.max_chars, config)
    }
}

/// Parameters of `tool_describe`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolDescribeRequest {
    /// The server's name, as `tool_search` gives it, e.g. `serena`.
    pub server: String,
    /// The tool's name on that server, as `tool_search` gives it, e.g. `find_symbol`.
    pub tool: String,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
    /// Answer cap in characters, 100 to 100000; a longer answer is cut and says how to get
    /// the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = limits::ANSWER_CHARS.min, max = limits::ANSWER_CHARS.max))]
    pub max_chars: Option<u32>,
}

impl Params for ToolDescribeRequest {
    const FLAGS: &'static [Flag] =
        &[flag("server", Spelling::Positional { rest: false }), flag("tool", Spelling::Positional { rest: false })];

    fn config_defaults(config: &Config) -> Vec<(&'static str, Value)> {
        vec![cap_default(config)]
    }

    fn validate(&self, config: &Config) -> Result<usize> {
        within("a server name", &self.server, MAX_NAME_CHARS)?;
        within("a tool name", &self.tool, MAX_NAME_CHARS)?;
        answer_cap(self.max_chars, config)
    }
}

/// Parameters of `tool_call`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCallRequest {
    /// The server's name, as `tool_search` gives it, e.g. `serena`.
    pub server: String,
    /// The tool's name on that server, as `tool_search` gives it, e.g. `find_symbol`.
    pub tool: String,
    /// The tool's arguments as a JSON object, following the input schema that
    /// `tool_describe` gives, e.g. `{"name_path": "Engine"}`.
    #[serde(default)]
    pub arguments: Map<String, Value>,
}

impl Params for ToolCallRequest {
    const FLAGS: &'static [Flag] = &[
        flag("server", Spelling::Positional { rest: false }),
        flag("tool", Spelling::Positional { rest: false }),
        flag("arguments", Spelling::Positional { rest: false }),
    ];

    fn validate(&self, _config: &Config) -> Result<usize> {
        within("a server name", &self.server, MAX_NAME_CHARS)?;
        within("a tool name", &self.tool, MAX_NAME_CHARS)?;
        Ok(MAX_MAX_CHARS)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn schemas_publish_plain_types_and_the_config_defaults() {
        let mut config = Config::default();
        config.retrieval.top_k = 7;
        let s = Value::Object(MemorySearchRequest::schema(&config));
        assert_eq!(s["required"], json!(["query"]));
        assert_eq!(s["additionalProperties"], json!(false));
        assert_eq!(
            s["properties"]["limit"],
            json!({
                "description": "How many results at most, 1 to 100.",
                "type": "integer",
                "default": 7,
                "minimum": 1,
                "maximum": 100
            })
        );
        assert_eq!(
            (&s["properties"]["max_chars"]["minimum"], &s["properties"]["max_chars"]["maximum"]),
            (&json!(100), &json!(100_000))
        );
        assert_eq!(s["properties"]["include_content"]["type"], "boolean");
        assert_eq!(s["properties"]["include_content"]["default"], false);
        assert_eq!(
            s["properties"]["namespace"],
            json!({
                "description": "Only memories of this namespace: `short-term`, `long-term` or another of the config. \
            By default every namespace.",
                "type": "string"
            })
        );
        assert_eq!(s["properties"]["format"]["enum"], json!(["yaml", "json"]));
        let s = Value::Object(SearchRequest::schema(&config));
        assert_eq!(
            s["properties"]["limit"],
            json!({
                "description": "How many results at most, 1 to 100.",
                "type": "integer",
                "default": 10,
                "maximum": 100,
                "minimum": 1
            })
        );
        assert_eq!(s["properties"]["max_chars"]["default"], 24_000);
        assert_eq!(
            s["properties"]["kinds"]["description"],
            "Only these kinds of item: overview, topic_overview, entry, rule, skill, doc, memory, server, tool, commit."
        );
        // Every property has a description.
        for s in
            [ContextRequest::schema(&config), ToolCallRequest::schema(&config), MemoryClearRequest::schema(&config)]
        {
            for (name, p) in s["properties"].as_object().unwrap() {
                assert!(p["description"].as_str().is_some_and(|d| !d.is_empty()), "{name}");
            }
        }
    }

    #[test]
    fn text_values_are_read_as_the_schema_says_and_mistakes_are_named() {
        let args = |v: Value| v.as_object().unwrap().clone();
        let r = SearchRequest::from_args(args(json!({"query": "x", "limit": "3", "kinds": "entry, memory"}))).unwrap();
        assert_eq!((r.limit, r.kinds), (3, vec!["entry".to_owned(), "memory".to_owned()]));
        let r = MemoryGetRequest::from_args(args(json!({"id": "m_1", "include_content": "true"}))).unwrap();
        assert!(r.include_content);
        let r =
            ToolCallRequest::from_args(args(json!({"server": "s", "tool": "t", "arguments": "{\"a\": 1}"}))).unwrap();
        assert_eq!(Value::Object(r.arguments), json!({"a": 1}));
        let r = MemorySearchRequest::from_args(args(json!({"query": "q", "tags": ["a,b", "c"]}))).unwrap();
        assert_eq!(r.tags, ["a", "b", "c"]);
        let err = |v: Value| SearchRequest::from_args(args(v)).unwrap_err().to_string();
        assert_eq!(err(json!({"query": "x", "limit": "many"})), "limit: `many` is not a whole number of 0 or more");
        assert_eq!(err(json!({"query": "x", "limit": "-1"})), "limit: `-1` is not a whole number of 0 or more");
        assert_eq!(
            err(json!({"query": "x", "colour": 1})),
            "unknown parameter `colour`, expected one of `query`, `scope`, `topics`, `kinds`, `filter_status`, \
`filter_tags`, `issue`, `limit`, `format`, `max_chars`"
        );
        assert_eq!(err(json!({})), "missing parameter `query`");
        assert_eq!(err(json!({"query": "x", "format": "xml"})), "format: `xml` is not one of yaml, json");
        assert_eq!(
            ToolCallRequest::from_args(args(json!({"server": "s", "tool": "t", "arguments": "[1]"})))
                .unwrap_err()
                .to_string(),
            "arguments: must be a JSON object, e.g. '{\"text\": \"hi\"}'"
        );
    }

    #[test]
    fn limits_are_errors_that_do_not_echo_the_input_whole() {
        let long = "x".repeat(10_000);
        let e = within("key", &long, MAX_NAME_CHARS).unwrap_err().to_string();
        assert!(e.starts_with("key is 10000 characters, over the limit of 256: `xxx"), "{e}");
        assert!(e.len() < 200, "{e}");
        assert!(query_within(&"q".repeat(5000)).unwrap_err().to_string().ends_with("… (5000 chars)`"));
        assert_eq!(limit_within(0, &limits::SEARCH_RESULTS).unwrap_err().to_string(), "limit 0 is outside 1 to 100");
        assert_eq!(
            answer_cap(Some(10), &Config::default()).unwrap_err().to_string(),
            "max_chars 10 is outside 100 to 100000"
        );
        assert_eq!(answer_cap(None, &Config::default()).unwrap(), 24_000);
        let tags: Vec<String> = (0..65).map(|i| i.to_string()).collect();
        assert_eq!(tags_within(&tags).unwrap_err().to_string(), "65 tags, over the limit of 64");
    }

    /// Every request type that takes an answer cap, with the least arguments it needs.
    fn capped_requests(config: &Config) -> Vec<(&'static str, Result<usize>)> {
        let args = |v: Value| v.as_object().unwrap().clone();
        let q = || args(json!({"query": "x"}));
        vec![
            ("ContextRequest", ContextRequest::from_args(args(json!({"workspace": "w"}))).unwrap().validate(config)),
            ("SearchRequest", SearchRequest::from_args(q()).unwrap().validate(config)),
            ("RecallRequest", RecallRequest::from_args(args(json!({"task": "x"}))).unwrap().validate(config)),
            ("MemorySearchRequest", MemorySearchRequest::from_args(q()).unwrap().validate(config)),
            ("MemoryListRequest", MemoryListRequest::from_args(Map::new()).unwrap().validate(config)),
            ("MemoryGetRequest", MemoryGetRequest::from_args(args(json!({"id": "m_1"}))).unwrap().validate(config)),
            (
                "WorkspaceReadRequest",
                WorkspaceReadRequest::from_args(args(json!({"ref_id": "a.md"}))).unwrap().validate(config),
            ),
            ("WorkspaceListRequest", WorkspaceListRequest::from_args(Map::new()).unwrap().validate(config)),
            ("ToolSearchRequest", ToolSearchRequest::from_args(q()).unwrap().validate(config)),
            (
                "ToolDescribeRequest",
                ToolDescribeRequest::from_args(args(json!({"server": "s", "tool": "t"}))).unwrap().validate(config),
            ),
        ]
    }

    /// The config keys that give a parameter its default, each with the limit the parameter
    /// is checked against. Each value at and just beyond the ends of that limit is tried in
    /// the config: one the config takes must be one every request takes when the caller
    /// leaves the parameter out, and one the request would refuse must be refused when the
    /// config loads. So every config bound lies inside its request bound.
    #[test]
    fn every_config_value_that_loads_is_one_the_tools_take() {
        let counts = [
            ("retrieval", "answer_cap_chars", limits::ANSWER_CHARS),
            ("retrieval", "top_k", limits::MEMORY_SEARCH_RESULTS),
        ];
        for (section, key, limit) in counts {
            for value in [limit.min.saturating_sub(1), limit.min, limit.max, limit.max + 1] {
                let text = format!("[{section}]\n{key} = {value}\n");
                match Config::parse(&text) {
                    Ok(config) => {
                        assert!(limit.contains(value), "{section}.{key} = {value} loads, but no request takes it");
                        for (tool, checked) in capped_requests(&config) {
                            assert!(checked.is_ok(), "{section}.{key} = {value} makes {tool} fail: {checked:?}");
                        }
                    }
                    Err(d) => {
                        assert!(!limit.contains(value), "{section}.{key} = {value} is refused: {}", d.message);
                        assert_eq!(d.message, format!("`{section}.{key}` {}", limit.rule()));
                    }
                }
            }
        }
        let fractions = [
            ("retrieval", "min_score", limits::MIN_SCORE),
            ("memory", "prune_below", limits::IMPORTANCE),
            ("review", "duplicate_similarity", limits::DUPLICATE_SIMILARITY),
        ];
        for (section, key, limit) in fractions {
            for value in [limit.min - 0.01, limit.min, limit.max, limit.max + 0.01] {
                let loaded = Config::parse(&format!("[{section}]\n{key} = {value:?}\n"));
                assert_eq!(loaded.is_ok(), limit.contains(value), "{section}.{key} = {value}");
                if let Ok(config) = loaded {
                    for (tool, checked) in capped_requests(&config) {
                        assert!(checked.is_ok(), "{section}.{key} = {value} makes {tool} fail: {checked:?}");
                    }
                }
            }
        }
        // `memory cleanup --below` and the upkeep's `memory.prune_below` share one limit.
        assert!(limits::IMPORTANCE.contains(Config::default().memory.prune_below.unwrap_or(0.0)));
        // A namespace name the config takes is one the `namespace` parameter takes.
        let name = "n".repeat(MAX_NAME_CHARS);
        let config = Config::parse(&format!("[namespaces.{name}]\n")).unwrap();
        let add = MemoryAddRequest { namespace: Some(name), ..MemoryAddRequest::new("x") };
        assert!(add.validate(&config).is_ok());
    }

    /// What a parameter's description says of its range is what its schema publishes.
    #[test]
    fn descriptions_name_the_ranges_the_schemas_publish() {
        let config = Config::default();
        let schemas = [
            ContextRequest::schema(&config),
            SearchRequest::schema(&config),
            RecallRequest::schema(&config),
            MemorySearchRequest::schema(&config),
            MemoryListRequest::schema(&config),
            MemoryGetRequest::schema(&config),
            WorkspaceReadRequest::schema(&config),
            WorkspaceListRequest::schema(&config),
            ToolSearchRequest::schema(&config),
            ToolDescribeRequest::schema(&config),
        ];
        let mut seen = 0;
        for s in schemas {
            for (name, p) in s["properties"].as_object().unwrap() {
                let (Some(min), Some(max)) = (p.get("minimum"), p.get("maximum")) else { continue };
                let said = format!("{} to {}", min.as_f64().unwrap(), max.as_f64().unwrap());
                let description = p["description"].as_str().unwrap();
                assert!(description.contains(&said), "{name}: `{description}` does not say {said}");
                if let Some(default) = p.get("default").and_then(Value::as_f64) {
                    assert!(default >= min.as_f64().unwrap() && default <= max.as_f64().unwrap(), "{name}");
                }
                seen += 1;
            }
        }
        assert!(seen >= 15, "{seen}");
    }

    #[test]
    fn every_request_is_checked_in_one_place_against_the_config() {
        let config = Config::default();
        let args = |v: Value| v.as_object().unwrap().clone();
        let err = |r: Result<usize>| r.unwrap_err().to_string();
        let add = |v: Value| MemoryAddRequest::from_args(args(v)).unwrap().validate(&config);
        assert_eq!(err(add(json!({"content": " \n "}))), "empty content: give the text to remember (or a problem)");
        assert_eq!(
            err(add(json!({"content": "x", "solution": "y"}))),
            "`solution`, `outcome` and `files` belong to a problem: give `problem` too"
        );
        assert_eq!(
            err(add(json!({"problem": "x", "kind": "note"}))),
            "a problem is kind `problem`, not `note`: leave kind out"
        );
        assert_eq!(
            err(add(json!({"problem": "x", "outcome": "fixed"}))),
            "outcome `fixed` is not one of solved, workaround, open"
        );
        assert_eq!(add(json!({"problem": "x", "solution": "y", "outcome": "workaround"})).unwrap(), MAX_MAX_CHARS);
        assert_eq!(err(add(json!({"content": "x", "importance": 1.5}))), "importance 1.5 is outside 0 to 1");
        assert_eq!(add(json!({"content": "x"})).unwrap(), MAX_MAX_CHARS);
        let search = |v: Value| MemorySearchRequest::from_args(args(v)).unwrap().validate(&config);
        assert_eq!(err(search(json!({"query": "x", "min_score": -0.5}))), "min_score -0.5 is outside 0 to 1");
        assert_eq!(err(search(json!({"query": "x", "limit": 101}))), "limit 101 is outside 1 to 100");
        assert_eq!(search(json!({"query": "x", "max_chars": 500})).unwrap(), 500);
        let tools = |v: Value| ToolSearchRequest::from_args(args(v)).unwrap().validate(&config);
        assert_eq!(err(tools(json!({"query": "x", "limit": 51}))), "limit 51 is outside 1 to 50");
        assert_eq!(tools(json!({"query": "x"})).unwrap(), 24_000);
    }
}
