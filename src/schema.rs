//! The JSON Schemas of front-matter, log ops, the registry and skills (docs/workspace-documents.md,
//! docs/memory-log.md, docs/registry.md).
//!
//! The schema files of front-matter and skills under `schemas/` are embedded into the
//! binary at build time; those of tmws' own formats (memory ops, the registry, the trust
//! log) are generated from their types ([`generator`]), and a test holds their files
//! under `schemas/` equal to what the types generate. A project
//! may override the schema of a topic with `.tmws/schemas/{topic}.schema.json`. Validation
//! errors are reduced to `Violation`s that name a rule, a JSON pointer and a message a
//! person can act on; the caller turns the pointer into a file position.

use std::sync::OnceLock;

use serde_json::Value;

use crate::model::Rule;

/// The generator of the schemas of tmws' own formats (`memory-op`, `registry`, `trust`):
/// JSON Schema 2020-12, describing what tmws writes (a field it always writes is
/// required; an option it leaves out when empty is not).
pub fn generator() -> schemars::SchemaGenerator {
    // Inline: a violation's schema path then leads to the schema that explains it.
    schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .with(|s| s.inline_subschemas = true)
        .with_transform(schemars::transform::RecursiveTransform(as_written as fn(&mut schemars::Schema)))
        .into_generator()
}

/// A generated schema as tmws writes its format: a field it leaves out when empty is
/// never null (only a field it always writes can be), descriptions are the doc comments'
/// paragraphs unwrapped, and what describes reading rather than writing (the defaults of
/// missing fields, Rust's number formats such as `double` or `uint64`) is left out.
fn as_written(schema: &mut schemars::Schema) {
    let Some(obj) = schema.as_object_mut() else { return };
    obj.remove("default");
    if let Some(Value::String(d)) = obj.get_mut("description") {
        *d = d
            .split("\n\n")
            .map(|p| p.split('\n').map(str::trim).collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
            .join("\n\n");
    }
    if obj.get("format").and_then(Value::as_str).is_some_and(|f| f == "double" || f == "float" || f.contains("int")) {
        obj.remove("format");
    }
    let required: Vec<String> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    let Some(Value::Object(props)) = obj.get_mut("properties") else { return };
    for (_, prop) in props.iter_mut().filter(|(name, _)| !required.contains(name)) {
        not_null(prop);
    }
}

/// A property's schema without `null`: what a field that is never written as null reads.
pub fn not_null(prop: &mut Value) {
    let Value::Object(p) = prop else { return };
    if let Some(Value::Array(types)) = p.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        let kept = if kept.len() == 1 { kept[0].clone() } else { Value::Array(kept) };
        p.insert("type".into(), kept);
    }
    if let Some(Value::Array(any)) = p.get("anyOf") {
        let kept: Vec<Value> = any.iter().filter(|a| a.get("type") != Some(&Value::from("null"))).cloned().collect();
        if let [Value::Object(one)] = &kept[..] {
            p.remove("anyOf");
            for (k, v) in one {
                p.entry(k.clone()).or_insert_with(|| v.clone());
            }
        } else {
            p.insert("anyOf".into(), Value::Array(kept));
        }
    }
}

/// The built-in schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Builtin {
    Overview,
    TopicOverview,
    Plan,
    Decision,
    Lesson,
    Entry,
    MemoryOp,
    Registry,
    Skills,
}

impl Builtin {
    pub const ALL: [Builtin; 9] = [
        Builtin::Overview,
        Builtin::TopicOverview,
        Builtin::Plan,
        Builtin::Decision,
        Builtin::Lesson,
        Builtin::Entry,
        Builtin::MemoryOp,
        Builtin::Registry,
        Builtin::Skills,
    ];

    /// The schema's file stem under `schemas/`.
    pub fn name(self) -> &'static str {
        match self {
            Builtin::Overview => "overview",
            Builtin::TopicOverview => "topic-overview",
            Builtin::Plan => "plan",
            Builtin::Decision => "decision",
            Builtin::Lesson => "lesson",
            Builtin::Entry => "entry",
            Builtin::MemoryOp => "memory-op",
            Builtin::Registry => "registry",
            Builtin::Skills => "skills",
        }
    }

    /// The schema: the file as shipped, or for tmws' own formats the schema their types
    /// generate (which the file under `schemas/` is held equal to).
    fn make(self) -> Value {
        let text = match self {
            Builtin::Overview => include_str!("../schemas/overview.schema.json"),
            Builtin::TopicOverview => include_str!("../schemas/topic-overview.schema.json"),
            Builtin::Plan => include_str!("../schemas/plan.schema.json"),
            Builtin::Decision => include_str!("../schemas/decision.schema.json"),
            Builtin::Lesson => include_str!("../schemas/lesson.schema.json"),
            Builtin::Entry => include_str!("../schemas/entry.schema.json"),
            Builtin::MemoryOp => return crate::memory::op::schema().to_value(),
            Builtin::Registry => return crate::parse::registry::schema().to_value(),
            Builtin::Skills => include_str!("../schemas/skills.schema.json"),
        };
        serde_json::from_str(text).unwrap_or(Value::Bool(true))
    }

    /// The built-in schema of a topic's entries.
    pub fn for_topic(topic: &str) -> Builtin {
        match topic {
            "plans" => Builtin::Plan,
            "decisions" => Builtin::Decision,
            "lessons" => Builtin::Lesson,
            _ => Builtin::Entry,
        }
    }

    /// The parsed JSON of the schema.
    pub fn json(self) -> &'static Value {
        static CELLS: [OnceLock<Value>; 9] = [const { OnceLock::new() }; 9];
        let i = Builtin::ALL.iter().position(|b| *b == self).unwrap_or(0);
        CELLS[i].get_or_init(|| self.make())
    }

    /// The compiled validator of the schema as shipped.
    pub fn compiled(self) -> &'static Compiled {
        static CELLS: [OnceLock<Compiled>; 9] = [const { OnceLock::new() }; 9];
        let i = Builtin::ALL.iter().position(|b| *b == self).unwrap_or(0);
        CELLS[i].get_or_init(|| {
            Compiled::new(self.json().clone())
                .unwrap_or_else(|e| panic!("built-in schema {} does not compile: {e}", self.name()))
        })
    }
}

/// A compiled schema with its JSON (needed to explain errors).
#[derive(Debug)]
pub struct Compiled {
    json: Value,
    validator: jsonschema::Validator,
}

/// One way an instance fails its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub rule: Rule,
    /// JSON pointer of the value at fault (for a missing field: of the object lacking it).
    pub pointer: String,
    /// The field's top-level key, when there is one (for positions and messages).
    pub field: Option<String>,
    pub message: String,
    pub hint: Option<String>,
}

impl Compiled {
    /// Compiles a schema; formats (`date`, `date-time`) are validated.
    pub fn new(json: Value) -> Result<Compiled, String> {
        let validator = jsonschema::options().should_validate_formats(true).build(&json).map_err(|e| e.to_string())?;
        Ok(Compiled { json, validator })
    }

    pub fn json(&self) -> &Value {
        &self.json
    }

    /// The top-level property names the schema declares.
    pub fn property_names(&self) -> Vec<&str> {
        self.json
            .get("properties")
            .and_then(Value::as_object)
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// All the ways `instance` fails the schema, in a stable order.
    pub fn violations(&self, instance: &Value) -> Vec<Violation> {
        let mut out: Vec<Violation> = self.validator.iter_errors(instance).map(|e| self.explain(&e)).collect();
        out.sort_by(|a, b| a.pointer.cmp(&b.pointer).then(a.message.cmp(&b.message)));
        out.dedup();
        out
    }

    fn explain(&self, e: &jsonschema::ValidationError<'_>) -> Violation {
        use jsonschema::error::ValidationErrorKind as K;
        let pointer = e.instance_path().as_str().to_owned();
        let schema_path = e.schema_path().as_str().to_owned();
        // The schema node the failing keyword belongs to.
        let node = self.json.pointer(schema_path.rsplit_once('/').map_or("", |(p, _)| p)).unwrap_or(&Value::Null);
        let instance = e.instance();
        let shown = show(instance);
        let date_format = node.get("format").and_then(Value::as_str).filter(|f| *f == "date" || *f == "date-time");
        let (rule, field, message, hint) = match e.kind() {
            K::Required { property } => {
                let prop = property.as_str().unwrap_or_default();
                let full = field_name(&format!("{pointer}/{}", escape(prop)));
                let prop_schema = node.get("properties").and_then(|p| p.get(prop));
                let hint = match prop_schema.and_then(|s| s.get("enum")).and_then(Value::as_array) {
                    Some(values) => format!("add `{prop}: …` with one of {}", list(values)),
                    None if prop_schema.and_then(|s| s.get("format")).is_some_and(|f| f == "date") => {
                        format!("add `{prop}: YYYY-MM-DD`")
                    }
                    None => format!("add `{prop}: …` to the front-matter"),
                };
                let field = if pointer.is_empty() { Some(prop.to_owned()) } else { top_field(&pointer) };
                (Rule::MissingField, field, format!("missing required field `{full}`"), Some(hint))
            }
            K::Type { .. } if date_format == Some("date") => (
                Rule::InvalidDate,
                top_field(&pointer),
                format!("`{}` must be a date written YYYY-MM-DD, found {shown}", field_name(&pointer)),
                Some("write the date as YYYY-MM-DD, e.g. 2026-11-22".to_owned()),
            ),
            K::Type { .. } => {
                let expected = match node.get("type") {
                    Some(Value::String(t)) => type_name(t).to_owned(),
                    Some(Value::Array(ts)) => {
                        ts.iter().filter_map(Value::as_str).map(type_name).collect::<Vec<_>>().join(" or ")
                    }
                    _ => "another type".to_owned(),
                };
                let hint = if expected == "a list" && instance.is_string() {
                    Some(format!("write a list: `{}: [{}]`", last_key(&pointer), instance.as_str().unwrap_or_default()))
                } else if expected == "a string" {
                    Some("quote the value to make it a string".to_owned())
                } else {
                    None
                };
                (
                    Rule::InvalidType,
                    top_field(&pointer),
                    format!("`{}` must be {expected}, found {} {shown}", field_name(&pointer), kind_of(instance)),
                    hint,
                )
            }
            K::Enum { options } => {
                let values = options.as_array().map(|v| list(v)).unwrap_or_default();
                (
                    Rule::InvalidEnum,
                    top_field(&pointer),
                    format!("`{}` must be one of {values}; found {shown}", field_name(&pointer)),
                    Some(match last_key(&pointer).as_str() {
                        key @ ("status" | "category") => {
                            format!(
                                "use one of the listed values, or add this one to the topic overview's `{key}_values`"
                            )
                        }
                        _ => "use one of the listed values".to_owned(),
                    }),
                )
            }
            K::Constant { expected_value } => (
                Rule::SchemaViolation,
                top_field(&pointer),
                format!("`{}` must be {expected_value}; found {shown}", field_name(&pointer)),
                None,
            ),
            K::Format { format } if format == "date" => (
                Rule::InvalidDate,
                top_field(&pointer),
                format!("`{}` must be a real date written YYYY-MM-DD; found {shown}", field_name(&pointer)),
                Some("write the date as YYYY-MM-DD, e.g. 2026-11-22".to_owned()),
            ),
            K::Format { format } if format == "date-time" => (
                Rule::InvalidDate,
                top_field(&pointer),
                format!(
                    "`{}` must be an RFC 3339 time such as 2026-11-22T10:00:00Z; found {shown}",
                    field_name(&pointer)
                ),
                None,
            ),
            K::MinLength { limit: 1 } => (
                Rule::MissingField,
                top_field(&pointer),
                format!("`{}` is empty", field_name(&pointer)),
                Some("give it a value".to_owned()),
            ),
            K::AdditionalProperties { unexpected } => (
                Rule::SchemaViolation,
                top_field(&pointer),
                format!(
                    "unexpected key(s) {}",
                    unexpected.iter().map(|u| format!("`{u}`")).collect::<Vec<_>>().join(", ")
                ),
                None,
            ),
            _ => (Rule::SchemaViolation, top_field(&pointer), format!("`{}`: {e}", field_name(&pointer)), None),
        };
        Violation { rule, pointer, field, message, hint }
    }
}

/// `/tags/1` → `tags[1]`; `` → `(root)`.
pub fn field_name(pointer: &str) -> String {
    let mut out = String::new();
    for raw in pointer.split('/').skip(1) {
        let seg = raw.replace("~1", "/").replace("~0", "~");
        if seg.parse::<usize>().is_ok() {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    if out.is_empty() { "(root)".to_owned() } else { out }
}

fn top_field(pointer: &str) -> Option<String> {
    pointer.split('/').nth(1).map(|s| s.replace("~1", "/").replace("~0", "~"))
}

fn last_key(pointer: &str) -> String {
    pointer.rsplit('/').next().unwrap_or_default().to_owned()
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn type_name(t: &str) -> &'static str {
    match t {
        "string" => "a string",
        "array" => "a list",
        "object" => "a mapping",
        "integer" => "an integer",
        "number" => "a number",
        "boolean" => "true or false",
        "null" => "empty",
        _ => "another type",
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// A short rendering of a value for messages.
fn show(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        Value::Null => return "nothing".to_owned(),
        other => other.to_string(),
    };
    let cut: String = s.chars().take(60).collect();
    if cut.len() < s.len() { format!("`{cut}…`") } else { format!("`{cut}`") }
}

fn list(values: &[Value]) -> String {
    values.iter().map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned)).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(b: Builtin, instance: Value) -> Vec<(Rule, String, String)> {
        b.compiled().violations(&instance).into_iter().map(|v| (v.rule, v.pointer, v.message)).collect()
    }

    #[test]
    fn every_builtin_compiles() {
        for b in Builtin::ALL {
            let _ = b.compiled();
            assert!(b.json().get("$schema").is_some(), "{}", b.name());
        }
    }

    #[test]
    fn plan_violations_are_explained() {
        let got = check(Builtin::Plan, json!({"name": "P", "status": "doing", "created": "2026-02-30", "tags": "x"}));
        assert_eq!(
            got,
            vec![
                (Rule::MissingField, String::new(), "missing required field `description`".into()),
                (
                    Rule::InvalidDate,
                    "/created".into(),
                    "`created` must be a real date written YYYY-MM-DD; found `2026-02-30`".into()
                ),
                (
                    Rule::InvalidEnum,
                    "/status".into(),
                    "`status` must be one of new, in_progress, partial, done, abandoned; found `doing`".into()
                ),
                (Rule::InvalidType, "/tags".into(), "`tags` must be a list, found a string `x`".into()),
            ]
        );
        let got =
            check(Builtin::Decision, json!({"name": "D", "description": "d", "created": 20261122, "tags": ["a", 3]}));
        assert_eq!(
            got,
            vec![
                (
                    Rule::InvalidDate,
                    "/created".into(),
                    "`created` must be a date written YYYY-MM-DD, found `20261122`".into()
                ),
                (Rule::InvalidType, "/tags/1".into(), "`tags[1]` must be a string, found a number `3`".into()),
            ]
        );
        assert!(
            check(
                Builtin::Lesson,
                json!({"name": "L", "description": "d", "created": "2026-11-22", "extra": {"kept": true}})
            )
            .is_empty()
        );
    }

    #[test]
    fn memory_ops_need_their_fields() {
        let got = check(Builtin::MemoryOp, json!({"op": "link", "id": "m_3fa9c1d2e4b5", "at": "2026-11-22T10:00:00Z"}));
        assert_eq!(got, vec![(Rule::MissingField, String::new(), "missing required field `commit`".into())]);
        let got = check(Builtin::MemoryOp, json!({"op": "drop", "id": "x", "at": "yesterday"}));
        assert_eq!(got.len(), 3, "{got:?}");
    }

    /// The schemas of `schemas/` generated from the types of tmws' own formats, by file name.
    fn generated() -> [(&'static str, schemars::Schema); 3] {
        [
            ("memory-op.schema.json", crate::memory::op::schema()),
            ("registry.schema.json", crate::parse::registry::schema()),
            ("trust.schema.json", generator().into_root_schema_for::<crate::parse::trust::Event>()),
        ]
    }

    #[test]
    fn the_schemas_of_tmws_formats_are_those_their_types_generate() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
        let bless = std::env::var_os("TMWS_BLESS").is_some();
        for (name, schema) in generated() {
            let mut text = serde_json::to_string_pretty(&schema).unwrap();
            text.push('\n');
            if bless {
                std::fs::write(dir.join(name), &text).unwrap();
                continue;
            }
            let committed = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            assert!(
                committed == text,
                "schemas/{name} is not what its type generates: run `TMWS_BLESS=1 cargo test --lib schema::` to write \
it again, and commit it\n--- generated\n{text}"
            );
        }
    }

    #[test]
    fn field_names() {
        assert_eq!(field_name("/tags/1"), "tags[1]");
        assert_eq!(field_name("/0/skill_path"), "[0].skill_path");
        assert_eq!(field_name("/servers/a~1b/tools"), "servers.a/b.tools");
        assert_eq!(field_name(""), "(root)");
    }
}
