//! One line of a memory log (docs/memory-log.md): the [`Op`] type, which every writer builds and
//! every reader reads, and from which `schemas/memory-op.schema.json` is generated.
//!
//! Reading is as tolerant as the fold needs to be: only `op` and `id` are required, and a
//! field that is there must have its type (or the line is skipped, with a finding that
//! names the field); the fields a reader can do without when they are malformed (a
//! problem's fields, `author`, `session`, `task`) are read as absent instead. Unknown fields are
//! ignored by readers, and compaction keeps their lines byte for byte. A line tmws writes
//! is the op serialized in the order its fields are declared, so the bytes on disk are the
//! type's.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::cite::Cite;
use super::session::SessionRecord;
use super::task::TaskRecord;
use crate::model::{Diagnostic, Rule};
use crate::parse::lenient;
use crate::parse::time::is_time;

/// What an op does to the entry it names: `add` an entry (or a new incarnation of its id),
/// `delete` it (with a time: a tombstone that kills every `add` of its id made before),
/// `update` fields of a live entry (`set`), `link` a live entry to a commit, `review` settle
/// a proposal (an entry an agent wrote while review is on: docs/review.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Add,
    Delete,
    Update,
    Link,
    Review,
}

/// What a person decided of a proposal: `approve` makes it live like any other entry,
/// `reject` deletes it (a `delete` op is written with the `review` op).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Approve,
    Reject,
}

impl Decision {
    /// Its name as the log writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Approve => "approve",
            Decision::Reject => "reject",
        }
    }
}

/// The `review` value of an `add` that is a proposal.
pub const PROPOSED: &str = "proposed";

/// Whether a front-matter `review` value marks a proposal.
pub fn proposes(value: Option<&serde_json::Value>) -> bool {
    value.and_then(serde_json::Value::as_str).is_some_and(|v| v.trim() == PROPOSED)
}

/// One line of a memory log (`.tmws/memory/{namespace}.jsonl`): an op on one entry. An
/// `add` carries the entry; `delete`, `update` and `link` name it by `id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    title = "One line of a memory log (.tmws/memory/{namespace}.jsonl)",
    extend("$id" = "memory-op.schema.json"),
    transform = written
)]
pub struct Op {
    pub op: Kind,
    /// The entry: `m_` and the first 12 hex digits of blake3(namespace + content).
    #[schemars(length(min = 1), regex(pattern = r"^m_[0-9a-f]{12}$"))]
    pub id: String,
    /// The namespace: the name of the log the op belongs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns: Option<String>,
    /// When the op was written: RFC 3339, which tmws writes as UTC seconds with `Z`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub at: Option<String>,
    /// When the entry expires (an `add`), or would have expired (a `delete`: its tombstone
    /// is kept until then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub expires_at: Option<String>,
    /// Free text; the well-known kinds are note, session, problem, pattern and decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The upsert key: an `add` with a key supersedes the live entry that holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// What is remembered, secrets redacted, cut to the namespace's `max_content_chars`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The writer's summary, or the first sentences of the content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Labels for filtering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Where the memory came from (`user`, `session`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Who wrote it: an agent's name, or `human` for the person at the command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// How much it matters, 0 to 1 (0.5 when not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1))]
    pub importance: Option<f64>,
    /// The git branch and HEAD it was written on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<Git>,
    /// A session record's structured fields (`kind: session`).
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionRecord>,
    /// A task record's structured fields (`kind: task`).
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskRecord>,
    /// How it was written: tmws' surface and the client (filled by tmws, never by a caller).
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub author: Option<Author>,
    /// `proposed` on an `add` an agent wrote while review is on (docs/review.md): left out of
    /// every answer until a `review` op approves it.
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub review: Option<String>,
    /// What a `review` op decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// Who decided a `review` op: the person's name as tmws knows it (`human` at the command
    /// line).
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The live entries an approval superseded (each deleted by a `delete` op written with it).
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<Vec<String>>,
    /// A problem entry's problem (`kind: problem`).
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// A problem entry's solution, once there is one.
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub solution: Option<String>,
    /// A problem entry's outcome: solved, workaround or open.
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The files a problem entry is about.
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<String>>,
    /// The code the entry is about (docs/memory-log.md#citations): files, spans of lines or
    /// symbols, each with the commit and the hash of what it cited then.
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub cites: Option<Vec<Cite>>,
    /// blake3 (hex) of the content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// What an `update` changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<Box<Set>>,
    /// The commit a `link` names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The files that commit changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_changed: Option<Vec<String>>,
}

/// What an `update` changes: each field given replaces the entry's, as an `add` holds it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Set {
    /// The entry's new tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Its new kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Its new upsert key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Its new summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Its new content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Its new importance, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1))]
    pub importance: Option<f64>,
    /// Its new writer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// When it now expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub expires_at: Option<String>,
    /// Where it now says it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Where in git it now says it was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<Git>,
    /// How it now says it was written.
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub author: Option<Author>,
    /// A problem entry's new problem.
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// A problem entry's solution, found since.
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub solution: Option<String>,
    /// A problem entry's new outcome.
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The files a problem entry is now about.
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<String>>,
    /// The code it now cites.
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub cites: Option<Vec<Cite>>,
    /// blake3 (hex) of its new content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
}

/// Where in git an entry was written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Git {
    /// The branch checked out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// HEAD's commit, its first 12 hex digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// How an op came to be written (docs/memory-log.md): answers say where recalled text came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Author {
    /// tmws' surface: `cli`, `mcp`, `http` or `hook`, or `upkeep` for tmws' own upkeep.
    #[serde(default)]
    pub surface: String,
    /// The client's name, from its `initialize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The client session's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

impl Author {
    /// A person at the command line.
    pub fn cli() -> Author {
        Author { surface: "cli".to_owned(), client: None, session: None }
    }

    /// tmws' own upkeep, run in the background of `watch`, `mcp` and `serve` (`[upkeep]`).
    pub fn upkeep() -> Author {
        Author { surface: "upkeep".to_owned(), client: None, session: None }
    }
}

/// The fields an op of each kind is incomplete without, besides `op` and `id`: tmws always
/// writes them; a line without one is read all the same, and `check` warns about it.
const WRITTEN: [(Kind, &[&str]); 5] = [
    (Kind::Add, &["at", "ns", "content", "summary", "expires_at", "hash"]),
    (Kind::Delete, &["at"]),
    (Kind::Update, &["at", "set"]),
    (Kind::Link, &["at", "commit"]),
    (Kind::Review, &["at", "decision"]),
];

/// Why a line that is a JSON object is not an op the fold takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    /// The field at fault, when there is one (its first mention places the finding).
    pub field: Option<String>,
    pub why: String,
}

impl Skip {
    fn at(field: &str, why: String) -> Skip {
        Skip { field: Some(field.to_owned()), why }
    }
}

/// The finding of a skipped line: at the first mention of the field at fault in `text`,
/// line `line`.
pub fn skipped(line: usize, text: &str, skip: &Skip) -> Diagnostic {
    let column =
        skip.field.as_ref().and_then(|f| text.find(&format!("\"{f}\""))).map_or(1, |i| text[..i].chars().count() + 1);
    Diagnostic::error(Rule::JsonlLine, line, column, format!("{}; line skipped", skip.why))
        .with_hint("fix or delete the line: every reader skips it, compaction keeps it as it is")
}

impl Op {
    /// Whether this `add` is a proposal waiting for a person's review.
    pub fn is_proposed(&self) -> bool {
        self.review.as_deref().is_some_and(|r| r.trim() == PROPOSED)
    }

    /// An op of `kind` on entry `id`, with no other field.
    pub fn new(kind: Kind, id: impl Into<String>) -> Op {
        Op {
            op: kind,
            id: id.into(),
            ns: None,
            at: None,
            expires_at: None,
            kind: None,
            key: None,
            content: None,
            summary: None,
            tags: None,
            source: None,
            agent: None,
            importance: None,
            git: None,
            session: None,
            task: None,
            author: None,
            review: None,
            decision: None,
            by: None,
            supersedes: None,
            problem: None,
            solution: None,
            outcome: None,
            files: None,
            cites: None,
            hash: None,
            set: None,
            commit: None,
            files_changed: None,
        }
    }

    /// The line that holds this op (without its `\n`).
    pub fn line(&self) -> String {
        // Serializing plain fields, strings and numbers into a string cannot fail; an
        // importance that is not a number would be written as `null`, read back as absent.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads one line's text. `Err`: not JSON (or not an object), as every JSONL reader
    /// reports it; `Ok(Err)`: an object the fold skips, and why.
    pub fn read(text: &str) -> serde_json::Result<Result<Op, Skip>> {
        // serde would read an array as a struct, field by field: an op is an object.
        if !text.trim_start().starts_with('{') {
            serde_json::from_str::<IgnoredAny>(text)?;
            return Err(serde::de::Error::custom("not a JSON object"));
        }
        match serde_json::from_str::<Op>(text) {
            Ok(op) => Ok(op.problem().map_or(Ok(op), Err)),
            Err(e) => {
                // A line that is not JSON at all says so, wherever serde stopped.
                serde_json::from_str::<IgnoredAny>(text)?;
                Ok(Err(located(text, &e, false)))
            }
        }
    }

    /// Why the fold cannot take this op though it has every type right: a blank id, a
    /// time that is not one, an importance out of range, a `link` to a blank commit.
    pub fn problem(&self) -> Option<Skip> {
        if self.id.trim().is_empty() {
            return Some(Skip::at("id", must("id", false)));
        }
        for (name, time) in [("at", &self.at), ("expires_at", &self.expires_at)] {
            if time.as_deref().is_some_and(|t| !is_time(t)) {
                return Some(Skip::at(name, must(name, false)));
            }
        }
        if self.op == Kind::Review && self.decision.is_none() {
            return Some(Skip::at("decision", must("decision", false)));
        }
        if self.op == Kind::Link && self.commit.as_deref().is_some_and(|c| c.trim().is_empty()) {
            return Some(Skip::at("commit", "a `link` needs a non-empty `commit`".into()));
        }
        if self.importance.is_some_and(|i| !(0.0..=1.0).contains(&i)) {
            return Some(Skip::at("importance", must("importance", false)));
        }
        let set = self.set.as_deref()?;
        if set.expires_at.as_deref().is_some_and(|t| !is_time(t)) {
            return Some(Skip::at("expires_at", must("expires_at", true)));
        }
        if set.importance.is_some_and(|i| !(0.0..=1.0).contains(&i)) {
            return Some(Skip::at("importance", must("importance", true)));
        }
        None
    }

    /// The fields tmws always writes for an op of this kind that this one lacks.
    pub fn missing(&self) -> Vec<&'static str> {
        let written = WRITTEN.iter().find(|(k, _)| *k == self.op).map_or(&[][..], |(_, f)| *f);
        written
            .iter()
            .copied()
            .filter(|f| match *f {
                "at" => self.at.is_none(),
                "ns" => self.ns.is_none(),
                "content" => self.content.is_none(),
                "summary" => self.summary.is_none(),
                "expires_at" => self.expires_at.is_none(),
                "hash" => self.hash.is_none(),
                "set" => self.set.is_none(),
                "commit" => self.commit.is_none(),
                "decision" => self.decision.is_none(),
                _ => false,
            })
            .collect()
    }
}

/// The JSON Schema of a memory log's lines, generated from [`Op`].
pub fn schema() -> schemars::Schema {
    crate::schema::generator().into_root_schema_for::<Op>()
}

/// Adds [`WRITTEN`] to the schema of [`Op`]: `at` wherever every kind writes it, the rest
/// per kind.
fn written(schema: &mut schemars::Schema) {
    let all: Vec<&str> =
        WRITTEN[0].1.iter().copied().filter(|f| WRITTEN.iter().all(|(_, fields)| fields.contains(f))).collect();
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.extend(all.iter().map(|f| Value::from(*f)));
    }
    // What tmws always writes it never writes as null.
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for (_, fields) in WRITTEN {
            for f in fields {
                if let Some(p) = props.get_mut(*f) {
                    crate::schema::not_null(p);
                }
            }
        }
    }
    let conditions: Vec<Value> = WRITTEN
        .iter()
        .filter_map(|(kind, fields)| {
            let rest: Vec<&str> = fields.iter().copied().filter(|f| !all.contains(f)).collect();
            (!rest.is_empty()).then(|| {
                serde_json::json!({
                    "if": {"properties": {"op": {"const": kind}}, "required": ["op"]},
                    "then": {"required": rest},
                })
            })
        })
        .collect();
    schema.insert("allOf".into(), Value::Array(conditions));
}

/// What the schema says a field must be, for messages: "`importance` must be a number from
/// 0 to 1". `in_set`: a field of an update's `set`.
fn must(field: &str, in_set: bool) -> String {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    let schema = SCHEMA.get_or_init(|| schema().to_value());
    let props = |s: &Value| s.get("properties").cloned().unwrap_or(Value::Null);
    let owner =
        if in_set { resolve(schema, schema.pointer("/properties/set").unwrap_or(&Value::Null)) } else { schema };
    let text = match props(owner).get(field) {
        Some(p) => format!("`{field}` must be {}", expected(schema, p)),
        None => format!("`{field}` has the wrong type"),
    };
    if in_set { format!("in `set`: {text}") } else { text }
}

/// A subschema with its `$ref` (or the one schema of an `anyOf` with null, as options
/// are written) followed.
fn resolve<'a>(root: &'a Value, s: &'a Value) -> &'a Value {
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        return root.pointer(r.trim_start_matches('#')).map_or(s, |t| resolve(root, t));
    }
    if let Some(Value::Array(any)) = s.get("anyOf")
        && let [one] = any.iter().filter(|a| a.get("type") != Some(&Value::from("null"))).collect::<Vec<_>>()[..]
    {
        return resolve(root, one);
    }
    s
}

/// A schema in words.
fn expected(root: &Value, s: &Value) -> String {
    let s = resolve(root, s);
    if let Some(Value::Array(values)) = s.get("enum") {
        let names: Vec<String> =
            values.iter().map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned)).collect();
        return format!("one of {}", names.join(", "));
    }
    let ty = match s.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or(""),
        _ => "",
    };
    match ty {
        "string" if s.get("format").is_some_and(|f| f == "date-time") => {
            "an RFC 3339 time, e.g. 2026-11-22T10:00:00Z".into()
        }
        "string" if s.get("minLength").is_some_and(|m| m.as_u64() > Some(0)) => "a non-empty string".into(),
        "string" => "a string".into(),
        "number" | "integer" => match (s.get("minimum"), s.get("maximum")) {
            (Some(lo), Some(hi)) => format!("a number from {lo} to {hi}"),
            _ => "a number".into(),
        },
        "boolean" => "true or false".into(),
        "array" => format!("a list of {}", plural(&expected(root, s.get("items").unwrap_or(&Value::Null)))),
        "object" => match s.get("properties").and_then(Value::as_object) {
            Some(props) if !props.is_empty() && props.values().all(|p| expected(root, p) == "a string") => {
                let names: Vec<String> = props.keys().map(|k| format!("`{k}`")).collect();
                format!("an object of strings {}", names.join(" and "))
            }
            _ => "an object".into(),
        },
        _ => "of another shape".into(),
    }
}

/// "a string" → "strings".
fn plural(one: &str) -> String {
    let bare = one.strip_prefix("a ").or_else(|| one.strip_prefix("an ")).unwrap_or(one);
    format!("{bare}s")
}

/// The field a data error of serde's points at, and what it must be. `in_set`: `text` is
/// an update's `set`.
fn located(text: &str, e: &serde_json::Error, in_set: bool) -> Skip {
    let message = crate::parse::json_error_message(e);
    let named = |prefix: &str| message.strip_prefix(prefix).and_then(|m| m.strip_suffix('`')).map(str::to_owned);
    let in_set_too = |why: String| if in_set { format!("in `set`: {why}") } else { why };
    if let Some(field) = named("missing field `") {
        let why = if field == "op" { "`op` is missing".to_owned() } else { must(&field, in_set) };
        return Skip { field: None, why };
    }
    if let Some(field) = named("duplicate field `") {
        return Skip { why: in_set_too(format!("`{field}` is given twice")), field: Some(field) };
    }
    // The field whose value starts last at or before the place serde stopped at. The
    // values are slices of `text`, so where they start is where they are in it.
    let Ok(fields) = serde_json::from_str::<BTreeMap<String, &RawValue>>(text) else {
        return Skip { field: None, why: in_set_too(message) };
    };
    let stop = e.column().saturating_sub(1);
    let base = text.as_ptr() as usize;
    let at_fault = fields
        .iter()
        .map(|(name, raw)| (name, (raw.get().as_ptr() as usize).saturating_sub(base), raw.get()))
        .filter(|(_, start, _)| *start <= stop)
        .max_by_key(|(_, start, _)| *start);
    let Some((field, _, raw)) = at_fault else { return Skip { field: None, why: in_set_too(message) } };
    if field == "set" && !in_set {
        match serde_json::from_str::<Set>(raw) {
            Err(inner) if raw.trim_start().starts_with('{') => return located(raw, &inner, true),
            _ => return Skip::at("set", must("set", false)),
        }
    }
    Skip::at(field, must(field, in_set))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Why a line is skipped, and the field the finding points at.
    fn skip(text: &str) -> (Option<String>, String) {
        match Op::read(text) {
            Ok(Err(s)) => (s.field, s.why),
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn a_skipped_line_names_its_field_and_what_the_schema_wants_there() {
        let time = "must be an RFC 3339 time, e.g. 2026-11-22T10:00:00Z";
        let cases: &[(&str, Option<&str>, &str)] = &[
            (r#"{"op":"add","id":"m_1","at":"yesterday"}"#, Some("at"), &format!("`at` {time}")),
            (r#"{"op":"add","id":"m_1","at":5,"content":"c"}"#, Some("at"), &format!("`at` {time}")),
            (r#"{"op":"add","id":"m_1","expires_at":"soon"}"#, Some("expires_at"), &format!("`expires_at` {time}")),
            (r#"{"op":"merge","id":"x"}"#, Some("op"), "`op` must be one of add, delete, update, link, review"),
            (r#"{"op":1,"id":"x"}"#, Some("op"), "`op` must be one of add, delete, update, link, review"),
            (r#"{"id":"x"}"#, None, "`op` is missing"),
            (r#"{"op":"add"}"#, None, "`id` must be a non-empty string"),
            (r#"{"op":"delete","id":5}"#, Some("id"), "`id` must be a non-empty string"),
            (r#"{"op":"add","id":"   "}"#, Some("id"), "`id` must be a non-empty string"),
            (r#"{"op":"add","id":"x","id":"y"}"#, Some("id"), "`id` is given twice"),
            (r#"{"op":"add","id":"x","kind":3}"#, Some("kind"), "`kind` must be a string"),
            (r#"{"op":"add","id":"x","tags":"a"}"#, Some("tags"), "`tags` must be a list of strings"),
            (r#"{"op":"add","id":"x","tags":["a",1]}"#, Some("tags"), "`tags` must be a list of strings"),
            (
                r#"{"op":"add","id":"x","importance":1.5}"#,
                Some("importance"),
                "`importance` must be a number from 0 to 1",
            ),
            (
                r#"{"op":"add","id":"x","importance":"high"}"#,
                Some("importance"),
                "`importance` must be a number from 0 to 1",
            ),
            (
                r#"{"op":"add","id":"x","git":{"branch":1}}"#,
                Some("git"),
                "`git` must be an object of strings `branch` and `commit`",
            ),
            (r#"{"op":"update","id":"x","set":"no"}"#, Some("set"), "`set` must be an object"),
            (
                r#"{"op":"update","id":"x","set":{"importance":"high","key":7}}"#,
                Some("importance"),
                "in `set`: `importance` must be a number from 0 to 1",
            ),
            (
                r#"{"op":"update","id":"x","set":{"expires_at":"x"}}"#,
                Some("expires_at"),
                &format!("in `set`: `expires_at` {time}"),
            ),
            (r#"{"op":"link","id":"x","commit":" "}"#, Some("commit"), "a `link` needs a non-empty `commit`"),
            (
                r#"{"op":"link","id":"x","files_changed":[1]}"#,
                Some("files_changed"),
                "`files_changed` must be a list of strings",
            ),
        ];
        for (text, field, why) in cases {
            assert_eq!(skip(text), (field.map(str::to_owned), (*why).to_owned()), "{text}");
        }
    }

    #[test]
    fn what_readers_can_do_without_is_read_as_absent_and_anything_but_an_object_is_not_an_op() {
        let op = Op::read(r#"{"op":"add","id":"x","problem":5,"author":"cli","session":[],"future":{"a":1}}"#)
            .unwrap()
            .unwrap();
        assert_eq!((op.problem, op.author, op.session), (None, None, None));
        let op = Op::read(r#"{"op":"add","id":"x","at":null,"tags":null}"#).unwrap().unwrap();
        assert_eq!(
            (op.missing(), op.at, op.tags),
            (vec!["at", "ns", "content", "summary", "expires_at", "hash"], None, None)
        );
        for not_json in ["nope", r#"{"op": 5, garbage"#, r#"{"op":"add","id":"x""#] {
            assert!(
                Op::read(not_json).unwrap_err().is_syntax() || Op::read(not_json).unwrap_err().is_eof(),
                "{not_json}"
            );
        }
        for not_an_object in ["[1]", "null", "\"op\""] {
            assert!(Op::read(not_an_object).unwrap_err().is_data(), "{not_an_object}");
        }
    }

    #[test]
    fn every_line_tmws_wrote_reads_and_writes_back_byte_for_byte() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/formats");
        let mut lines = 0;
        for log in [
            "memory/short-term.jsonl",
            "memory/long-term.jsonl",
            "outside-git/short-term.jsonl",
            "outside-git/long-term.jsonl",
        ] {
            let text = std::fs::read_to_string(dir.join(log)).unwrap();
            for line in text.lines() {
                let op = Op::read(line).unwrap().unwrap();
                assert!(op.missing().is_empty(), "{line}");
                assert_eq!(op.line(), line);
                lines += 1;
            }
        }
        assert!(lines > 10);
    }

    #[test]
    fn the_schema_requires_what_each_kind_of_op_is_written_with() {
        let schema = schema().to_value();
        assert_eq!(schema["required"], serde_json::json!(["op", "id", "at"]));
        assert_eq!(schema["allOf"][0]["if"]["properties"]["op"]["const"], "add");
        assert_eq!(
            schema["allOf"][0]["then"]["required"],
            serde_json::json!(["ns", "content", "summary", "expires_at", "hash"])
        );
        assert_eq!(schema["properties"]["importance"]["maximum"], 1);
    }
}
