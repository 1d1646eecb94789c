//! `tmws check`: every canonical file against the rules of the contract (DESIGN §2.2, §7.1).
//!
//! A check walks the given paths in parallel, classifies each file by its place in the
//! layout, parses it (parsing never fails) and validates what parsed against the schemas.
//! Every finding is a `Diagnostic` with a file, line and column; a bad file never stops the
//! others. Markdown outside `resources/workspaces/` and `agent/rules/` gets the syntax
//! checks only: there a file without front-matter is fine.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::layout::{self, CONFIG_FILE, FileKind};
use crate::model::{Diagnostic, Rule, Scope, Severity};
use crate::parse::markdown::{self, FrontMatterState, MarkdownDoc};
use crate::parse::{self, json, jsonl, rules as rule_files, yaml};
use crate::schema::{Builtin, Compiled, Violation};
use crate::store;

/// What to check.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// The root to use instead of finding one from each path.
    pub root: Option<PathBuf>,
    /// Files or folders; empty means the whole root.
    pub paths: Vec<PathBuf>,
    /// The folder that relative paths and root-finding start from.
    pub cwd: PathBuf,
    /// Counts files as they are checked, for a progress display.
    pub progress: Option<Arc<AtomicUsize>>,
}

/// What a check found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Sorted by path, line, column.
    pub diagnostics: Vec<Diagnostic>,
    /// How many files were checked.
    pub files: usize,
}

impl Report {
    pub fn errors(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.severity == Severity::Error).count()
    }

    pub fn warnings(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.severity == Severity::Warning).count()
    }

    /// Whether the check fails: errors, or warnings too when `strict`.
    pub fn failed(&self, strict: bool) -> bool {
        self.errors() > 0 || (strict && self.warnings() > 0)
    }
}

/// One path to check, with the root it belongs to.
struct Target {
    /// As the user wrote it (for display when there is no root).
    given: PathBuf,
    abs: PathBuf,
}

/// Runs a check. Fails only for usage or environment errors (a path that does not exist,
/// no root when no path is given); everything about the files is in the report.
pub fn run(opts: &CheckOptions) -> Result<Report> {
    let forced_root = match &opts.root {
        Some(r) => Some(store::canonicalize(&opts.cwd.join(r))?),
        None => None,
    };
    let mut groups: Vec<(Option<PathBuf>, Vec<Target>)> = Vec::new();
    let mut add = |root: Option<PathBuf>, t: Target| match groups.iter_mut().find(|(r, _)| *r == root) {
        Some((_, ts)) => ts.push(t),
        None => groups.push((root, vec![t])),
    };
    if opts.paths.is_empty() {
        let root = match forced_root.clone() {
            Some(r) => r,
            None => store::find_root(&opts.cwd).ok_or_else(|| Error::NoRoot(opts.cwd.clone()))?,
        };
        add(Some(root.clone()), Target { given: root.clone(), abs: root });
    }
    for p in &opts.paths {
        let joined = opts.cwd.join(p);
        if !store::exists(&joined) {
            return Err(Error::NoSuchPath(p.clone()));
        }
        let abs = store::canonicalize(&joined)?;
        let root = match &forced_root {
            Some(r) if abs.starts_with(r) => Some(r.clone()),
            _ => store::find_root(&abs),
        };
        add(root, Target { given: p.clone(), abs });
    }
    let mut report = Report::default();
    for (root, targets) in groups {
        let mut checker = Checker::new(root);
        checker.progress.clone_from(&opts.progress);
        for t in &targets {
            checker.walk(t);
        }
        checker.rule_totals(&targets);
        report.files += checker.files.load(Ordering::Relaxed);
        report.diagnostics.extend(checker.diags.into_inner().unwrap_or_else(PoisonError::into_inner));
    }
    report.diagnostics.sort_by(|a, b| {
        (a.path.as_str(), a.line, a.column, a.rule, a.message.as_str()).cmp(&(
            b.path.as_str(),
            b.line,
            b.column,
            b.rule,
            b.message.as_str(),
        ))
    });
    report.diagnostics.dedup();
    Ok(report)
}

/// The enums a topic overview imposes on its entries.
#[derive(Debug, Default)]
struct TopicEnums {
    status: Option<Vec<String>>,
    category: Option<Vec<String>>,
}

struct Checker {
    root: Option<PathBuf>,
    config: Config,
    /// Compiled schema overrides from `.tmws/schemas/`, by name.
    overrides: HashMap<String, Arc<Compiled>>,
    /// Schemas with a topic overview's enums applied, by topic and enums.
    effective: Mutex<HashMap<String, Arc<Compiled>>>,
    /// Parsed topic overviews (None: no such file), by absolute path.
    overviews: Mutex<HashMap<PathBuf, Option<Arc<TopicEnums>>>>,
    /// Line counts of the rule files seen, for the total budget.
    rule_lines: Mutex<Vec<(String, usize)>>,
    diags: Mutex<Vec<Diagnostic>>,
    files: AtomicUsize,
    progress: Option<Arc<AtomicUsize>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Checker {
    fn new(root: Option<PathBuf>) -> Checker {
        let mut config = Config::default();
        let mut overrides = HashMap::new();
        if let Some(root) = &root {
            // An invalid config is reported when the config file itself is checked; the
            // check goes on with the defaults.
            if let Ok(Some(text)) = store::read_text_opt(&root.join(CONFIG_FILE))
                && let Ok(c) = Config::parse(&text)
            {
                config = c;
            }
            let dir = root.join(layout::SCHEMAS_DIR);
            for name in store::list_dir(&dir).unwrap_or_default() {
                let Some(stem) = name.strip_suffix(".schema.json") else { continue };
                let Ok(bytes) = store::read(&dir.join(&name)) else { continue };
                let Ok(json) = serde_json::from_slice::<Value>(&bytes) else { continue };
                if let Ok(c) = Compiled::new(json) {
                    overrides.insert(stem.to_owned(), Arc::new(c));
                }
            }
        }
        Checker {
            root,
            config,
            overrides,
            effective: Mutex::new(HashMap::new()),
            overviews: Mutex::new(HashMap::new()),
            rule_lines: Mutex::new(Vec::new()),
            diags: Mutex::new(Vec::new()),
            files: AtomicUsize::new(0),
            progress: None,
        }
    }

    fn walk(&self, target: &Target) {
        store::walk_files(
            &target.abs,
            |path| self.check_file(target, path),
            |path, message| {
                let d = Diagnostic::error(Rule::Io, 1, 1, message).with_path(self.display(target, path));
                lock(&self.diags).push(d);
            },
        );
    }

    /// The path as shown to the user: relative to the root, or as given.
    fn display(&self, target: &Target, abs: &Path) -> String {
        let shown = match &self.root {
            Some(root) if abs.starts_with(root) => abs.strip_prefix(root).unwrap_or(abs).to_path_buf(),
            _ => target.given.join(abs.strip_prefix(&target.abs).unwrap_or(Path::new(""))),
        };
        let s = shown.to_string_lossy().replace('\\', "/");
        s.trim_end_matches('/').to_owned()
    }

    fn check_file(&self, target: &Target, abs: &Path) {
        let kind = match &self.root {
            Some(root) => match abs.strip_prefix(root) {
                Ok(rel) => layout::classify(&rel.to_string_lossy()),
                Err(_) if layout::is_markdown(&abs.to_string_lossy()) => FileKind::Markdown,
                Err(_) => FileKind::Other,
            },
            None if layout::is_markdown(&abs.to_string_lossy()) => FileKind::Markdown,
            None => FileKind::Other,
        };
        if !kind.is_checked() {
            return;
        }
        self.files.fetch_add(1, Ordering::Relaxed);
        if let Some(p) = &self.progress {
            p.fetch_add(1, Ordering::Relaxed);
        }
        let path = self.display(target, abs);
        let bytes = match store::read(abs) {
            Ok(b) => b,
            Err(e) => {
                lock(&self.diags).push(Diagnostic::error(Rule::Io, 1, 1, format!("cannot read: {e}")).with_path(path));
                return;
            }
        };
        let mut diags = self.check_bytes(&kind, abs, &path, &bytes);
        if diags.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().collect();
        for d in &mut diags {
            d.path.clone_from(&path);
            d.source =
                lines.get(d.line - 1).map(|l| l.trim_start_matches('\u{feff}').trim_end_matches('\r').to_owned());
        }
        lock(&self.diags).extend(diags);
    }

    fn check_bytes(&self, kind: &FileKind, abs: &Path, path: &str, bytes: &[u8]) -> Vec<Diagnostic> {
        match kind {
            FileKind::ScopeOverview { .. } => {
                let doc = markdown::parse(bytes);
                let schema = self.overrides.get("overview").map_or(Builtin::Overview.compiled(), |c| c.as_ref());
                self.front_matter(doc, schema, "a scope overview")
            }
            FileKind::TopicOverview { .. } => {
                let doc = markdown::parse(bytes);
                let schema =
                    self.overrides.get("topic-overview").map_or(Builtin::TopicOverview.compiled(), |c| c.as_ref());
                self.front_matter(doc, schema, "a topic overview")
            }
            FileKind::Entry { scope, topic } => {
                let doc = markdown::parse(bytes);
                let schema = self.entry_schema(scope, topic);
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
            FileKind::Log => jsonl::parse(bytes).1,
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
            }
        }
        for v in schema.violations(&instance) {
            diags.push(violation_at(v, root, doc.fence_line));
        }
        diags
    }

    /// The schema of a topic's entries, with the nearest topic overview's enums applied.
    fn entry_schema(&self, scope: &Scope, topic: &str) -> Arc<Compiled> {
        let base: Option<&Arc<Compiled>> = self.overrides.get(topic);
        let (status, category) = self.topic_enums(scope, topic);
        let key = format!("{topic}\u{0}{status:?}\u{0}{category:?}");
        if let Some(c) = lock(&self.effective).get(&key) {
            return c.clone();
        }
        let mut json = base.map_or_else(|| Builtin::for_topic(topic).json().clone(), |c| c.json().clone());
        for (field, values) in [("status", &status), ("category", &category)] {
            if let (Some(values), Some(props)) = (values, json.get_mut("properties").and_then(Value::as_object_mut)) {
                let mut prop = props.get(field).cloned().unwrap_or_else(|| serde_json::json!({"type": "string"}));
                prop["enum"] = Value::from(values.clone());
                props.insert(field.to_owned(), prop);
            }
        }
        let compiled = Compiled::new(json).map(Arc::new).unwrap_or_else(|_| {
            Arc::new(Compiled::new(Builtin::for_topic(topic).json().clone()).unwrap_or_else(|_| unreachable_schema()))
        });
        lock(&self.effective).insert(key, compiled.clone());
        compiled
    }

    /// The nearest non-empty `status_values` and `category_values` up the scope ladder.
    fn topic_enums(&self, scope: &Scope, topic: &str) -> (Option<Vec<String>>, Option<Vec<String>>) {
        let Some(root) = &self.root else { return (None, None) };
        let (mut status, mut category) = (None, None);
        for s in layout::scope_ladder(scope) {
            let path = root.join(layout::topic_dir(&s, topic)).join(layout::OVERVIEW);
            let cached = lock(&self.overviews).get(&path).cloned();
            let enums = match cached {
                Some(e) => e,
                None => {
                    let parsed = store::read(&path).ok().map(|bytes| {
                        let doc = markdown::parse(&bytes);
                        let list = |key: &str| -> Option<Vec<String>> {
                            let items = match &doc.mapping()?.get(key)?.value.value {
                                yaml::Value::Seq(items) => items,
                                _ => return None,
                            };
                            let v: Vec<String> = items.iter().map(|n| n.key_text().into_owned()).collect();
                            (!v.is_empty()).then_some(v)
                        };
                        Arc::new(TopicEnums { status: list("status_values"), category: list("category_values") })
                    });
                    lock(&self.overviews).insert(path, parsed.clone());
                    parsed
                }
            };
            if let Some(e) = enums {
                status = status.or_else(|| e.status.clone());
                category = category.or_else(|| e.category.clone());
            }
        }
        (status, category)
    }

    fn rule_file(&self, path: &str, bytes: &[u8]) -> Vec<Diagnostic> {
        let doc = markdown::parse(bytes);
        let mut diags = doc.diagnostics;
        let (text, _) = parse::decode(bytes);
        let lines = rule_files::line_count(&text);
        lock(&self.rule_lines).push((path.to_owned(), lines));
        match rule_files::budget(&text) {
            None => diags.push(
                Diagnostic::error(Rule::MissingBudget, 1, 1, "rule file declares no budget")
                    .with_hint("add `<!-- budget: N lines -->` on its first line"),
            ),
            Some(b) if lines > b.lines => diags.push(
                Diagnostic::error(
                    Rule::RuleBudget,
                    b.line,
                    b.column,
                    format!("rule file has {lines} lines, over its budget of {}", b.lines),
                )
                .with_len(4)
                .with_hint("shorten it (hot memory is read on every turn), or raise its budget"),
            ),
            Some(_) => {}
        }
        diags
    }

    /// The total budget over all rule files, when the check covered their folder.
    fn rule_totals(&self, targets: &[Target]) {
        let Some(root) = &self.root else { return };
        let rules_dir = root.join(layout::RULES_DIR);
        if !targets.iter().any(|t| rules_dir.starts_with(&t.abs)) {
            return;
        }
        let mut files = lock(&self.rule_lines).clone();
        files.sort();
        let budget = self.config.rules.total_budget_lines;
        let total: usize = files.iter().map(|(_, n)| n).sum();
        let mut sum = 0;
        for (path, n) in &files {
            sum += n;
            if sum > budget {
                let d = Diagnostic::error(
                    Rule::RuleBudget,
                    1,
                    1,
                    format!("rule files total {total} lines, over the total budget of {budget} (this file crosses it)"),
                )
                .with_path(path.clone())
                .with_hint("shorten the rules, or raise `rules.total_budget_lines` in .tmws/config.toml");
                lock(&self.diags).push(d);
                break;
            }
        }
    }
}

fn unreachable_schema() -> Compiled {
    Compiled::new(Value::Bool(true)).unwrap_or_else(|e| panic!("the empty schema compiles: {e}"))
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

fn memory_log(namespace: &str, bytes: &[u8]) -> Vec<Diagnostic> {
    let (lines, mut diags) = jsonl::parse(bytes);
    let schema = Builtin::MemoryOp.compiled();
    for line in lines {
        let raw_end = bytes[line.offset..].iter().position(|b| *b == b'\n').map_or(bytes.len(), |i| line.offset + i);
        let raw = String::from_utf8_lossy(&bytes[line.offset..raw_end]);
        for v in schema.violations(&line.value) {
            let column = v
                .field
                .as_deref()
                .and_then(|f| raw.find(&format!("\"{f}\"")))
                .map_or(1, |i| raw[..i].chars().count() + 1);
            let mut d = Diagnostic::error(Rule::JsonlLine, line.line, column, format!("{}; line skipped", v.message));
            d.hint = v.hint.map(|h| h.replace("to the front-matter", "to the op"));
            diags.push(d);
        }
        if let Some(ns) = line.value.get("ns").and_then(Value::as_str)
            && ns != namespace
        {
            let column = raw.find("\"ns\"").map_or(1, |i| raw[..i].chars().count() + 1);
            diags.push(Diagnostic::error(
                Rule::JsonlLine,
                line.line,
                column,
                format!("op says namespace `{ns}` but it is in the `{namespace}` log"),
            ));
        }
    }
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
    for v in Builtin::Registry.compiled().violations(&value) {
        let (line, column) = json::pointer_position(&text, &v.pointer);
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
