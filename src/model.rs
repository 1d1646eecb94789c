//! Plain data shared by every layer: scopes, diagnostics and their rules.
//!
//! Nothing here knows about disk, YAML crates, tantivy or any surface. Types are small,
//! cheap to clone and serialisable, so that surfaces can render them as they like.

use std::fmt;

use serde::Serialize;

/// How bad a finding is. Warnings fail `tmws check` only with `--strict`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// The short kebab-case id of each kind of finding (docs/check-rules.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// The front-matter is not valid YAML.
    YamlSyntax,
    /// A file that must have front-matter has none, or it does not start on line 1.
    MissingFrontMatter,
    /// An opening `---` fence without a closing one.
    UnclosedFrontMatter,
    /// The front-matter is not a mapping of keys to values.
    NotAMapping,
    /// A required field is absent.
    MissingField,
    /// A field has the wrong type.
    InvalidType,
    /// A date that is not `YYYY-MM-DD`.
    InvalidDate,
    /// A value outside its enum (status, category).
    InvalidEnum,
    /// Any other schema violation.
    SchemaViolation,
    /// A key appears twice in one mapping.
    DuplicateKey,
    /// A key that differs from a schema key only by case.
    KeyCase,
    /// `title` is read as the name because `name` is absent.
    TitleAsName,
    /// A key tmws does not read that looks like one it does (`tag` for `tags`).
    UnknownKey,
    /// Bytes that are not UTF-8.
    Encoding,
    /// An entry file name that is not `YYMMDD-kebab-case.md`.
    FileName,
    /// A scope folder name outside `[A-Za-z0-9._-]`, or a scope deeper than three levels.
    ScopeName,
    /// A rule file over its budget, or all rule files over the total budget.
    RuleBudget,
    /// A rule file without a `<!-- budget: N lines -->` declaration.
    MissingBudget,
    /// A JSONL line that is not a valid record.
    JsonlLine,
    /// The registry file is not valid.
    Registry,
    /// `.tmws/config.toml` is not valid.
    Config,
    /// `.tmws/skills.yaml` is not valid.
    Skills,
    /// A schema override in `.tmws/schemas/` is not a usable JSON Schema.
    Schema,
    /// A file could not be read.
    Io,
    /// A secret in a file tmws owns (docs/trust-boundary.md#secrets): a token, a key, a password.
    Secret,
    /// A file tmws no longer keeps there (the usage log, now in `.tmws/cache/`).
    Moved,
    /// A derived cache that git tracks, or that holds what tmws never makes there.
    Cache,
    /// Memories that git left only in a stash.
    Stashed,
    /// A trust log line whose verifier is the verified agent, names compared normalised.
    TrustSelf,
    /// A trust log line with no verifier, or one not named as tmws writes names.
    TrustVerifier,
    /// Trust log lines written faster than tmws records verifications.
    TrustBurst,
    /// A file tmws owns with more than one name (a hard link): never written.
    HardLink,
    /// A front-matter `cites:` item that is not a citation (docs/workspace-documents.md).
    InvalidCite,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::YamlSyntax => "yaml-syntax",
            Rule::MissingFrontMatter => "missing-front-matter",
            Rule::UnclosedFrontMatter => "unclosed-front-matter",
            Rule::NotAMapping => "not-a-mapping",
            Rule::MissingField => "missing-field",
            Rule::InvalidType => "invalid-type",
            Rule::InvalidDate => "invalid-date",
            Rule::InvalidEnum => "invalid-enum",
            Rule::SchemaViolation => "schema",
            Rule::DuplicateKey => "duplicate-key",
            Rule::KeyCase => "key-case",
            Rule::TitleAsName => "title-as-name",
            Rule::UnknownKey => "unknown-key",
            Rule::Encoding => "encoding",
            Rule::FileName => "file-name",
            Rule::ScopeName => "scope-name",
            Rule::RuleBudget => "rule-budget",
            Rule::MissingBudget => "missing-budget",
            Rule::JsonlLine => "jsonl-line",
            Rule::Registry => "registry",
            Rule::Config => "config",
            Rule::Skills => "skills",
            Rule::Schema => "schema-file",
            Rule::Io => "io",
            Rule::Secret => "secret",
            Rule::Moved => "moved",
            Rule::Cache => "cache",
            Rule::Stashed => "stashed-memory",
            Rule::HardLink => "hard-link",
            Rule::InvalidCite => "invalid-cite",
            Rule::TrustSelf => "trust-self",
            Rule::TrustVerifier => "trust-verifier",
            Rule::TrustBurst => "trust-burst",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One finding about one place in one file.
///
/// Parsers fill `line`, `column` and `len` relative to the whole file they were given and
/// leave `path` empty; the checker sets `path` (relative to the root) and `source`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub path: String,
    /// 1-based line in the whole file.
    pub line: usize,
    /// 1-based column, counted in characters.
    pub column: usize,
    /// How many characters from `column` the finding covers (at least 1 when shown).
    pub len: usize,
    pub severity: Severity,
    pub rule: Rule,
    pub message: String,
    pub hint: Option<String>,
    /// The offending line's text, for human output.
    pub source: Option<String>,
}

impl Diagnostic {
    pub fn new(rule: Rule, severity: Severity, line: usize, column: usize, message: impl Into<String>) -> Self {
        Diagnostic {
            path: String::new(),
            line: line.max(1),
            column: column.max(1),
            len: 1,
            severity,
            rule,
            message: message.into(),
            hint: None,
            source: None,
        }
    }

    pub fn error(rule: Rule, line: usize, column: usize, message: impl Into<String>) -> Self {
        Self::new(rule, Severity::Error, line, column, message)
    }

    pub fn warning(rule: Rule, line: usize, column: usize, message: impl Into<String>) -> Self {
        Self::new(rule, Severity::Warning, line, column, message)
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_len(mut self, len: usize) -> Self {
        self.len = len.max(1);
        self
    }

    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }
}

/// The T0 fields of a document's front-matter, typed. Every other key is kept, in file
/// order, in `extra`, so nothing a person wrote is lost.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FrontMatter {
    /// `name`, or `title` where `name` is absent (docs/workspace-documents.md).
    pub name: Option<String>,
    pub description: Option<String>,
    pub tags: Vec<String>,
    pub status: Option<String>,
    pub category: Option<String>,
    pub created: Option<String>,
    pub updated: Option<String>,
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl FrontMatter {
    /// Reads the typed fields from a front-matter mapping, leniently: scalars become text,
    /// a single tag becomes a one-tag list.
    pub fn from_json(value: &serde_json::Value) -> FrontMatter {
        use serde_json::Value;
        fn text(v: &Value) -> Option<String> {
            match v {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                Value::Bool(b) => Some(b.to_string()),
                _ => None,
            }
        }
        let mut fm = FrontMatter::default();
        let Some(map) = value.as_object() else { return fm };
        for (key, v) in map {
            match key.as_str() {
                "name" => fm.name = text(v),
                "description" => fm.description = text(v),
                "status" => fm.status = text(v),
                "category" => fm.category = text(v),
                "created" => fm.created = text(v),
                "updated" => fm.updated = text(v),
                "tags" => {
                    fm.tags = match v {
                        Value::Array(items) => items.iter().filter_map(text).collect(),
                        other => text(other).into_iter().collect(),
                    }
                }
                _ => {
                    fm.extra.insert(key.clone(), v.clone());
                }
            }
        }
        if fm.name.is_none() {
            fm.name = map.get("title").and_then(text);
        }
        fm
    }
}

/// The kinds of searchable items (docs/search-index.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DocKind {
    Overview,
    TopicOverview,
    Entry,
    Rule,
    Skill,
    Doc,
    Memory,
    Server,
    Tool,
    Commit,
}

impl DocKind {
    pub const ALL: [DocKind; 10] = [
        DocKind::Overview,
        DocKind::TopicOverview,
        DocKind::Entry,
        DocKind::Rule,
        DocKind::Skill,
        DocKind::Doc,
        DocKind::Memory,
        DocKind::Server,
        DocKind::Tool,
        DocKind::Commit,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DocKind::Overview => "overview",
            DocKind::TopicOverview => "topic_overview",
            DocKind::Entry => "entry",
            DocKind::Rule => "rule",
            DocKind::Skill => "skill",
            DocKind::Doc => "doc",
            DocKind::Memory => "memory",
            DocKind::Server => "server",
            DocKind::Tool => "tool",
            DocKind::Commit => "commit",
        }
    }

    pub fn parse(s: &str) -> Option<DocKind> {
        DocKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Parses kind names as a caller gave them; an unknown one is a usage error that lists
    /// the known kinds.
    pub fn parse_all<S: AsRef<str>>(names: &[S]) -> crate::Result<Vec<DocKind>> {
        names
            .iter()
            .map(|name| {
                let name = name.as_ref();
                DocKind::parse(name).ok_or_else(|| {
                    let known: Vec<&str> = DocKind::ALL.iter().map(|k| k.as_str()).collect();
                    crate::Error::Usage(format!("unknown kind `{name}`; known kinds: {}", known.join(", ")))
                })
            })
            .collect()
    }
}

impl fmt::Display for DocKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One searchable item as the index stores it: plain data, no tantivy types.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IndexDoc {
    /// A document's root-relative path; a skill's `.tmws/skills.yaml#name`.
    pub ref_id: String,
    pub kind: Option<DocKind>,
    pub scope: Option<String>,
    pub topic: Option<String>,
    pub name: String,
    /// The T0 summary: `description`, or the first sentences of the body.
    pub description: String,
    pub tags: Vec<String>,
    pub status: Option<String>,
    pub category: Option<String>,
    pub created: Option<String>,
    pub updated: Option<String>,
    /// The file it came from, relative to the root.
    pub path: String,
    pub body: String,
    /// Whether the body is returned in answers (T1 of overviews, decisions and lessons).
    pub store_body: bool,
    /// Problems worth showing with the result, e.g. `invalid-front-matter`.
    pub flags: Vec<String>,
    /// A memory's namespace (the log it lives in).
    pub namespace: Option<String>,
    /// An overview's topic fields (`folder_structure`, `status_values`, `category_values`,
    /// `tag_values`) as a JSON object, when it has any.
    pub meta: Option<String>,
    /// What only memories carry (docs/memory-log.md).
    pub memory: Option<MemoryAttrs>,
    /// Whether `name` and `description` are shown but not searched: the summary of a long
    /// memory extracted from its content's first sentences, whose words the body holds
    /// already (docs/ranking.md).
    pub summary_unsearched: bool,
    /// The files it is about, root-relative (`src/a.rs`, or a folder as `migrations/`): a
    /// problem's `files`. An edit of one of them is briefed with it (docs/hooks.md).
    pub cites: Vec<String>,
    /// The issues it is about, as search terms (`parse::issue_ref::IssueRef::terms`): a
    /// commit's from its message, a memory's from its branch and a session's record.
    pub issues: Vec<String>,
}

/// The fields of a memory entry that its queries filter and rank on.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MemoryAttrs {
    /// RFC 3339 UTC (`…Z`), so text order is time order.
    pub expires_at: Option<String>,
    pub importance: Option<f64>,
    pub agent: Option<String>,
    pub branch: Option<String>,
    /// The commit HEAD was at when it was written.
    pub commit: Option<String>,
    pub key: Option<String>,
}

/// A scope: `workspace[/domain[/repository]]` below `resources/workspaces/`
/// (docs/workspace-documents.md).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Scope {
    pub workspace: String,
    pub domain: Option<String>,
    pub repository: Option<String>,
}

/// Why a scope or a scope component was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    #[error("empty scope name")]
    Empty,
    #[error("`{0}` is not a valid scope name: use only letters, digits, `.`, `_` and `-`")]
    BadName(String),
    #[error("`{0}` is not a valid scope name: `.` and `..` are not allowed")]
    Dots(String),
    #[error("`{0}` is too deep: a scope is workspace[/domain[/repository]]")]
    TooDeep(String),
}

impl Scope {
    /// Parses `W`, `W/D` or `W/D/R`, validating each component.
    pub fn parse(text: &str) -> Result<Scope, ScopeError> {
        let parts: Vec<&str> = text.split('/').collect();
        if parts.len() > 3 {
            return Err(ScopeError::TooDeep(text.to_owned()));
        }
        for part in &parts {
            validate_component(part)?;
        }
        Ok(Scope {
            workspace: parts[0].to_owned(),
            domain: parts.get(1).map(|s| (*s).to_owned()),
            repository: parts.get(2).map(|s| (*s).to_owned()),
        })
    }

    /// The components from the workspace down.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.workspace.as_str()).chain(self.domain.as_deref()).chain(self.repository.as_deref())
    }

    pub fn depth(&self) -> usize {
        self.components().count()
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for c in self.components() {
            if !first {
                f.write_str("/")?;
            }
            f.write_str(c)?;
            first = false;
        }
        Ok(())
    }
}

/// Checks one scope component against `[A-Za-z0-9._-]+`, refusing `.` and `..`.
pub fn validate_component(part: &str) -> Result<(), ScopeError> {
    if part.is_empty() {
        return Err(ScopeError::Empty);
    }
    if part == "." || part == ".." {
        return Err(ScopeError::Dots(part.to_owned()));
    }
    if !part.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
        return Err(ScopeError::BadName(part.to_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_parse_accepts_each_level_and_refuses_bad_names() {
        let s = Scope::parse("devtools/common/tmws-cli").unwrap();
        assert_eq!(s.to_string(), "devtools/common/tmws-cli");
        assert_eq!(s.depth(), 3);
        assert_eq!(Scope::parse("devtools").unwrap().domain, None);
        assert_eq!(Scope::parse("a/../b"), Err(ScopeError::Dots("..".into())));
        assert_eq!(Scope::parse("/etc"), Err(ScopeError::Empty));
        assert_eq!(Scope::parse("a b"), Err(ScopeError::BadName("a b".into())));
        assert_eq!(Scope::parse("a\\b"), Err(ScopeError::BadName("a\\b".into())));
        assert_eq!(Scope::parse("a\0b"), Err(ScopeError::BadName("a\0b".into())));
        assert_eq!(Scope::parse("a/b/c/d"), Err(ScopeError::TooDeep("a/b/c/d".into())));
        assert_eq!(Scope::parse(""), Err(ScopeError::Empty));
    }
}
