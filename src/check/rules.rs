//! The rules of each kind of file: front-matter presence and schema, entry file names,
//! memory log lines, trust log lines (`parse::trust`: those tmws would never write), the
//! registry, the config, the skills and schema overrides.

use std::path::Path;

use serde_json::Value;

use super::Checker;
use crate::config::Config;
use crate::layout::{self, FileKind};
use crate::memory::{self, Op};
use crate::model::{Diagnostic, Rule};
use crate::parse::markdown::{self, FrontMatterState, MarkdownDoc};
use crate::parse::{self, json, jsonl, yaml};
use crate::schema::{Builtin, Compiled, Violation};

impl Checker {
    pub(super) fn check_bytes(&self, kind: &FileKind, abs: &Path, path: &str, bytes: &[u8]) -> Vec<Diagnostic> {
        let mut diags = self.check_kind(kind, abs, path, bytes);
        diags.extend(super::secrets::in_file(kind, bytes));
        diags
    }

    fn check_kind(&self, kind: &FileKind, abs: &Path, path: &str, bytes: &[u8]) -> Vec<Diagnostic> {
        match kind {
            FileKind::ScopeOverview { .. } => {
                let doc = markdown::parse(bytes);
                let schema = self.schemas.of("overview", Builtin::Overview);
                self.front_matter(doc, schema, "a scope overview")
            }
            FileKind::TopicOverview { .. } => {
                let doc = markdown::parse(bytes);
                let schema = self.schemas.of("topic-overview", Builtin::TopicOverview);
                self.front_matter(doc, schema, "a topic overview")
            }
            FileKind::Entry { scope, topic } => {
                let doc = markdown::parse(bytes);
                let schema = self.schemas.entry_schema(scope, topic);
                let created = doc.mapping().and_then(|m| m.get("created")).and_then(|e| match &e.value.value {
                    yaml::Value::Str(s) => Some(s.clone()),
                    _ => None,
                });
                let mut diags = self.front_matter(doc, &schema, "an entry");
                let name = abs.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                if !entry_name_ok(&name) {
                    diags.push(
                        Diagnostic::warning(
                            Rule::FileName,
                            1,
                            1,
                            format!("entry file name `{name}` does not match YYMMDD-kebab-case.md"),
                        )
                        .with_hint(format!("rename it to `{}`", suggest_name(&name, created.as_deref()))),
                    );
                }
                diags
            }
            FileKind::BadScope { folder, error } => {
                let mut diags = markdown::parse(bytes).diagnostics;
                diags.push(
                    Diagnostic::error(Rule::ScopeName, 1, 1, format!("folder `{folder}`: {error}"))
                        .with_hint("scope folders are workspace/domain/repository, named with [A-Za-z0-9._-]; topic folders start with `_`"),
                );
                diags
            }
            FileKind::Rule => self.rule_file(path, bytes),
            FileKind::Markdown => markdown::parse(bytes).diagnostics,
            FileKind::MemoryLog { namespace } => memory_log(namespace, bytes),
            FileKind::Log if path == layout::TRUST_FILE => parse::trust::read(bytes).problems,
            FileKind::Log => jsonl::parse(bytes).1,
            FileKind::OldUsage => vec![
                Diagnostic::warning(
                    Rule::Moved,
                    1,
                    1,
                    format!("tool-call usage is now kept in {} (this machine's, not shared)", layout::USAGE_FILE),
                )
                .with_hint(format!(
                    "tmws read it once and no longer writes it: delete it (git rm {})",
                    layout::OLD_USAGE_FILE
                )),
            ],
            FileKind::Registry => registry(bytes),
            FileKind::Config => config_file(bytes),
            FileKind::Skills => skills(bytes),
            FileKind::SchemaOverride { .. } => schema_override(bytes),
            FileKind::Other => Vec::new(),
        }
    }

    /// Front-matter rules for tmws' own Markdown: presence, then the schema.
    fn front_matter(&self, doc: MarkdownDoc, schema: &Compiled, what: &str) -> Vec<Diagnostic> {
        let mut diags = doc.diagnostics.clone();
        match doc.state {
            FrontMatterState::Absent => {
                diags.push(
                    Diagnostic::error(
                        Rule::MissingFrontMatter,
                        1,
                        1,
                        format!("{what} needs front-matter, and this file has none"),
                    )
                    .with_hint("start the file on line 1 with `---`, then `name: …` and `description: …`, then `---`"),
                );
                return diags;
            }
            FrontMatterState::LeadingBlank | FrontMatterState::Unclosed | FrontMatterState::Invalid => return diags,
            FrontMatterState::Parsed => {}
        }
        let empty = yaml::Node { value: yaml::Value::Map(Vec::new()), line: 1, column: 1, len: 3 };
        let root = match &doc.front {
            None => &empty,
            Some(n) if matches!(n.value, yaml::Value::Null) => &empty,
            Some(n) if matches!(n.value, yaml::Value::Map(_)) => n,
            // Not a mapping: already reported by the parser.
            Some(_) => return diags,
        };
        let mut instance = root.to_json();
        let props = schema.property_names();
        if let Value::Object(map) = &mut instance
            && !map.contains_key("name")
            && let (Some(title), Some(entry)) = (map.get("title").cloned(), root.get("title"))
            && title.is_string()
            && props.contains(&"name")
        {
            map.insert("name".to_owned(), title);
            diags.push(
                Diagnostic::warning(
                    Rule::TitleAsName,
                    entry.key.line,
                    entry.key.column,
                    "no `name`: `title` is read as the name",
                )
                .with_len(5)
                .with_hint("rename `title` to `name`"),
            );
        }
        let present: Vec<String> = root.entries().iter().map(|e| e.key.key_text().into_owned()).collect();
        // Unknown keys that look like a schema key the front-matter lacks: (key, meant, entry).
        let mut meant = Vec::new();
        for entry in root.entries() {
            let key = entry.key.key_text();
            if props.contains(&key.as_ref()) {
                continue;
            }
            if let Some(p) = props.iter().find(|p| p.eq_ignore_ascii_case(&key)) {
                diags.push(
                    Diagnostic::warning(
                        Rule::KeyCase,
                        entry.key.line,
                        entry.key.column,
                        format!("key `{key}` differs from `{p}` only by case"),
                    )
                    .with_len(key.chars().count())
                    .with_hint(format!("keys are case-sensitive: rename it to `{p}`")),
                );
            } else if let Some(p) = meant_key(&key, &props).filter(|p| !present.iter().any(|k| k == p)) {
                meant.push((key.into_owned(), p, entry));
            }
        }
        for v in schema.violations(&instance) {
            let mut d = violation_at(v, root, doc.fence_line);
            let missing = d.message.strip_prefix("missing required field `").and_then(|m| m.strip_suffix('`'));
            if let Some(i) = meant.iter().position(|(_, p, _)| d.rule == Rule::MissingField && missing == Some(*p)) {
                let (key, p, entry) = meant.remove(i);
                d.hint = Some(format!(
                    "did you mean `{p}`? `{key}` on line {} is not a field tmws reads: rename it to `{p}`",
                    entry.key.line
                ));
            }
            diags.push(d);
        }
        diags.extend(cites(root));
        for (key, p, entry) in meant {
            diags.push(
                Diagnostic::warning(
                    Rule::UnknownKey,
                    entry.key.line,
                    entry.key.column,
                    format!("unknown key `{key}`: did you mean `{p}`?"),
                )
                .with_len(key.chars().count())
                .with_hint(format!("tmws does not read `{key}`: rename it to `{p}`, or keep it as your own field")),
            );
        }
        diags
    }
}

/// The findings of a front-matter's `cites:`: a list of citations as written
/// (`src/pool.rs:120-140`, `src/pool.rs#evict@abc1234`), each at its own line and column.
fn cites(root: &yaml::Node) -> Vec<Diagnostic> {
    let Some(entry) = root.get("cites") else { return Vec::new() };
    let hint = "write each as `path`, `path:L1-L2` or `path#symbol`, optionally `@commit`, root-relative";
    let items: Vec<&yaml::Node> = match &entry.value.value {
        yaml::Value::Seq(items) => items.iter().collect(),
        yaml::Value::Null => Vec::new(),
        _ => {
            return vec![
                Diagnostic::error(
                    Rule::InvalidCite,
                    entry.value.line,
                    entry.value.column,
                    "`cites` must be a list of citations",
                )
                .with_len(entry.value.len)
                .with_hint(hint),
            ];
        }
    };
    items
        .into_iter()
        .filter_map(|item| {
            let why = match &item.value {
                yaml::Value::Str(text) => crate::memory::cite::Cite::parse(text).err()?,
                _ => "a citation is a string".to_owned(),
            };
            Some(
                Diagnostic::error(Rule::InvalidCite, item.line, item.column, format!("invalid citation {why}"))
                    .with_len(item.len)
                    .with_hint(hint),
            )
        })
        .collect()
}

/// Keys people write for a schema key under another name (`date` for `created`): typos
/// are found by edit distance, these are not.
const KEY_ALIASES: [(&str, &str); 17] = [
    ("date", "created"),
    ("created_at", "created"),
    ("created_on", "created"),
    ("creation_date", "created"),
    ("date_created", "created"),
    ("updated_at", "updated"),
    ("updated_on", "updated"),
    ("modified", "updated"),
    ("last_updated", "updated"),
    ("last_modified", "updated"),
    ("desc", "description"),
    ("summary", "description"),
    ("tag", "tags"),
    ("keywords", "tags"),
    ("labels", "tags"),
    ("state", "status"),
    ("categories", "category"),
];

/// The schema key an unknown key most likely means: by a known alias, else the one at
/// most two edits away. `title` is left to its own rule (it is read as the name).
fn meant_key<'a>(key: &str, props: &[&'a str]) -> Option<&'a str> {
    if key.eq_ignore_ascii_case("title") {
        return None;
    }
    let lower = key.to_lowercase();
    KEY_ALIASES
        .iter()
        .find(|(alias, _)| *alias == lower)
        .and_then(|(_, meant)| props.iter().copied().find(|p| p == meant))
        .or_else(|| crate::suggest::closest(key, props.iter().copied()))
}

/// A schema violation placed at the node it concerns, or at the opening fence.
fn violation_at(v: Violation, root: &yaml::Node, fence_line: usize) -> Diagnostic {
    let (line, column, len) = match root.pointer(&v.pointer) {
        Some((node, _)) if !(v.rule == Rule::MissingField && v.pointer.is_empty()) => {
            (node.line, node.column, node.len)
        }
        _ => (fence_line.max(1), 1, 3),
    };
    let mut d = Diagnostic::error(v.rule, line, column, v.message).with_len(len);
    d.hint = v.hint;
    d
}

/// `YYMMDD-kebab-case.md` with a plausible date.
pub fn entry_name_ok(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".md") else { return false };
    let Some((date, rest)) = stem.split_at_checked(6) else { return false };
    if !date.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let month: u32 = date[2..4].parse().unwrap_or(0);
    let day: u32 = date[4..6].parse().unwrap_or(0);
    let Some(words) = rest.strip_prefix('-') else { return false };
    (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && !words.is_empty()
        && words.split('-').all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()))
}

/// A file name in the right form, dated from `created` when it has one.
fn suggest_name(name: &str, created: Option<&str>) -> String {
    let stem = name.strip_suffix(".md").unwrap_or(name);
    let date_prefix = stem.get(..6).filter(|p| p.bytes().all(|b| b.is_ascii_digit()));
    let date = match (created, date_prefix) {
        (Some(c), _) if c.len() == 10 && c.as_bytes()[4] == b'-' => format!("{}{}{}", &c[2..4], &c[5..7], &c[8..10]),
        (_, Some(p)) => p.to_owned(),
        _ => "YYMMDD".to_owned(),
    };
    let body = date_prefix.map_or(stem, |_| &stem[6..]);
    let mut kebab = String::new();
    let mut prev_lower = false;
    for c in body.chars() {
        if c.is_ascii_alphanumeric() {
            if c.is_ascii_uppercase() && prev_lower {
                kebab.push('-');
            }
            kebab.push(c.to_ascii_lowercase());
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        } else {
            if !kebab.ends_with('-') && !kebab.is_empty() {
                kebab.push('-');
            }
            prev_lower = false;
        }
    }
    let kebab = kebab.trim_matches('-');
    format!("{date}-{}.md", if kebab.is_empty() { "name" } else { kebab })
}

/// A memory log's findings. The errors ("line skipped") are the lines every reader skips,
/// read by the type of a line (`memory::Op::read`); a field that tmws always writes and the
/// line lacks is a warning, since readers do without it.
fn memory_log(namespace: &str, bytes: &[u8]) -> Vec<Diagnostic> {
    let done = jsonl::complete(bytes);
    let mut diags = Vec::new();
    let mut problems = jsonl::each_line(
        done,
        |text| Ok(Some((text, Op::read(text)?))),
        |line, _, (text, op)| match op {
            Err(skip) => diags.push(memory::op::skipped(line, text, &skip)),
            Ok(op) => {
                let column_of = |f: &str| text.find(&format!("\"{f}\"")).map_or(1, |i| text[..i].chars().count() + 1);
                if let Some(ns) = op.ns.as_deref()
                    && ns != namespace
                {
                    diags.push(Diagnostic::warning(
                        Rule::JsonlLine,
                        line,
                        column_of("ns"),
                        format!("op says namespace `{ns}` but it is in the `{namespace}` log"),
                    ));
                }
                // Citations of the wrong shape are read as absent (the entry is kept without
                // them): said here, at the field.
                let raw: Option<Value> = serde_json::from_str(text).ok();
                let given = |v: Option<&Value>| v.is_some_and(|c| !c.is_null());
                let bad_cites = (given(raw.as_ref().and_then(|r| r.get("cites"))) && op.cites.is_none())
                    || (given(raw.as_ref().and_then(|r| r.pointer("/set/cites")))
                        && op.set.as_ref().is_none_or(|s| s.cites.is_none()));
                if bad_cites {
                    diags.push(
                        Diagnostic::warning(
                            Rule::JsonlLine,
                            line,
                            column_of("cites"),
                            "`cites` must be a list of citation objects (`path`, `lines`, `symbol`, `commit`, `hash`); read without it",
                        )
                        .with_hint("fix or remove the field: the entry is read without its citations"),
                    );
                }
                let missing = op.missing();
                if !missing.is_empty() {
                    let list = missing.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ");
                    diags.push(
                        Diagnostic::warning(Rule::JsonlLine, line, 1, format!("an op without {list}"))
                            .with_hint("tmws writes every field; the entry is read without them"),
                    );
                }
            }
        },
    );
    diags.append(&mut problems);
    let lines = done.iter().filter(|b| **b == b'\n').count();
    let tail = &bytes[done.len()..];
    if !tail.iter().all(u8::is_ascii_whitespace) {
        let (good, torn) = jsonl::parse(tail);
        diags.extend(torn.into_iter().map(|mut d| {
            d.line += lines;
            d
        }));
        if !good.is_empty() {
            diags.push(
                Diagnostic::warning(
                    Rule::JsonlLine,
                    lines + 1,
                    1,
                    "the last line has no newline: not read until it has one",
                )
                .with_hint("end the file with a newline"),
            );
        }
    }
    diags.sort_by_key(|d| d.line);
    diags
}

fn registry(bytes: &[u8]) -> Vec<Diagnostic> {
    let (text, enc) = parse::decode(bytes);
    let mut diags: Vec<Diagnostic> = enc.into_iter().collect();
    let value = match json::parse(&text, Rule::Registry) {
        Ok(v) => v,
        Err(d) => {
            diags.push(d.with_hint("the registry is JSON; `tmws registry build` rewrites it from the client configs"));
            return diags;
        }
    };
    // Placed together: a minified registry of many servers costs one pass, not one per
    // finding.
    let violations = Builtin::Registry.compiled().violations(&value);
    let mut positions = json::Positions::new(&text);
    let offsets: Vec<usize> = violations.iter().map(|v| positions.offset(&v.pointer)).collect();
    for (v, (line, column)) in violations.into_iter().zip(positions.line_cols(&offsets)) {
        let mut d = Diagnostic::error(Rule::Registry, line, column, v.message);
        d.hint = v.hint.map(|h| h.replace("to the front-matter", "to the entry"));
        diags.push(d);
    }
    diags
}

fn config_file(bytes: &[u8]) -> Vec<Diagnostic> {
    let (text, enc) = parse::decode(bytes);
    let mut diags: Vec<Diagnostic> = enc.into_iter().collect();
    if let Err(d) = Config::parse(&text) {
        diags.push(d);
    }
    diags
}

fn skills(bytes: &[u8]) -> Vec<Diagnostic> {
    let (text, enc) = parse::decode(bytes);
    let mut diags: Vec<Diagnostic> = enc.into_iter().collect();
    let (node, syntax) = yaml::parse(&text, 1);
    diags.extend(syntax);
    let Some(node) = node else { return diags };
    for v in Builtin::Skills.compiled().violations(&node.to_json()) {
        let (line, column, len) = match node.pointer(&v.pointer) {
            Some((n, _)) => (n.line, n.column, n.len),
            None => (1, 1, 1),
        };
        let mut d = Diagnostic::error(Rule::Skills, line, column, v.message).with_len(len);
        d.hint = v.hint.map(|h| h.replace("to the front-matter", "to the skill"));
        diags.push(d);
    }
    diags
}

fn schema_override(bytes: &[u8]) -> Vec<Diagnostic> {
    let (text, enc) = parse::decode(bytes);
    let mut diags: Vec<Diagnostic> = enc.into_iter().collect();
    match json::parse(&text, Rule::Schema) {
        Err(d) => diags.push(d),
        Ok(json) => {
            if let Err(e) = Compiled::new(json) {
                diags.push(
                    Diagnostic::error(Rule::Schema, 1, 1, format!("not a usable JSON Schema: {e}"))
                        .with_hint("the built-in schema is used until this one compiles"),
                );
            }
        }
    }
    diags
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citations_of_the_wrong_shape_in_a_log_are_a_finding_at_the_field() {
        let log = concat!(
            r#"{"op":"add","id":"m_000000000001","ns":"n","at":"2026-01-01T00:00:00Z","content":"c","summary":"c","expires_at":"2027-01-01T00:00:00Z","hash":"h","cites":[{"path":"a.rs"}]}"#,
            "\n",
            r#"{"op":"add","id":"m_000000000002","ns":"n","at":"2026-01-01T00:00:00Z","content":"c","summary":"c","expires_at":"2027-01-01T00:00:00Z","hash":"h","cites":"a.rs"}"#,
            "\n",
            r#"{"op":"update","id":"m_000000000001","at":"2026-01-02T00:00:00Z","set":{"cites":[7]}}"#,
            "\n",
        );
        let found: Vec<(usize, usize)> = memory_log("n", log.as_bytes())
            .iter()
            .filter(|d| d.message.starts_with("`cites`"))
            .map(|d| (d.line, d.column))
            .collect();
        assert_eq!(found, vec![(2, 147), (3, 73)]);
    }

    #[test]
    fn entry_names() {
        for ok in ["261122-token-refresh.md", "240229-a.md", "261122-v2-plan.md"] {
            assert!(entry_name_ok(ok), "{ok}");
        }
        for bad in [
            "token-refresh.md",
            "261322-x.md",
            "261122_x.md",
            "261122-Token.md",
            "261122-.md",
            "2611-x.md",
            "261122-a--b.md",
        ] {
            assert!(!entry_name_ok(bad), "{bad}");
        }
        assert_eq!(suggest_name("TokenRefresh.md", Some("2026-11-22")), "261122-token-refresh.md");
        assert_eq!(suggest_name("261122_Token refresh.md", None), "261122-token-refresh.md");
        assert_eq!(suggest_name("notes.md", None), "YYMMDD-notes.md");
    }
}
