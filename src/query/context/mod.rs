//! `workspace_get_context` (docs/tools.md): one answer that orients an agent in a scope.
//!
//! Everything comes from the index (so it is as fresh as the watcher), except the
//! directory-only tree of the scope (`tree`), which is read from the disk only as deep as
//! fits in a quarter of the cap. The answer is a typed struct in a fixed key order; when it
//! is over its cap it is cut in a fixed order (entry bodies first, then entries from the
//! end of the longest lists, then the default lists), and default items that cannot fit
//! whatever else is cut are never read from the index.

mod scope;
mod tree;

use std::collections::BTreeSet;
use std::path::Path;

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::{Map, Value};

pub use self::scope::ScopeSummary;
pub(crate) use self::scope::list as list_scopes;
pub(crate) use self::scope::resolve as resolve_scope;
use super::answer::{Answer, Plan, pointer, strings};
use super::api::{ContextRequest, MAX_MAX_CHARS};
use crate::error::{Error, Result};
use crate::index::{Index, Item, ItemList, ItemQuery};
use crate::layout;
use crate::model::{DocKind, validate_component};
use crate::query::cites::Marks;

/// The folder tree may take at most this fraction (1/N) of the answer cap, so that a large
/// scope's tree leaves room for the overviews, decisions and lessons.
const TREE_SHARE: usize = 4;

/// Plan statuses a filter may name when the topic overview lists none
/// (docs/workspace-documents.md).
const PLAN_STATUSES: [&str; 5] = ["new", "in_progress", "partial", "done", "abandoned"];

/// The default lists, in the order they are cut.
const DEFAULT_LISTS: [&str; 3] = ["decisions_t0", "lessons_t0", "overviews"];

/// The answer of `workspace_get_context`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ContextAnswer {
    /// The scope answered (`workspace[/domain[/repository]]`).
    pub scope: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defaults: Option<Defaults>,
    /// The topics asked for, in that order, each under its own name.
    #[serde(flatten)]
    pub topics: Topics,
    /// What the answer could not give, such as a scope without an OVERVIEW.md.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The index may be behind the files.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
    /// Default items never read because they could not have fit the cap.
    #[serde(skip)]
    pub unread: usize,
}

/// The orientation defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Defaults {
    /// The body of the scope's `OVERVIEW.md`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope_overview_t1: Option<String>,
    /// The scope's folders as a tree.
    pub folder_structure: String,
    /// T0 of every overview within the scope.
    pub overviews: Vec<OverviewT0>,
    /// T0 of the decisions on the scope ladder.
    pub decisions_t0: Vec<EntryT0>,
    /// T0 of the lessons on the scope ladder.
    pub lessons_t0: Vec<EntryT0>,
    pub loaded_skills: Vec<Skill>,
}

/// The topics of an answer, in the order they were asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Topics(pub Vec<(String, TopicAnswer)>);

impl Serialize for Topics {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, topic) in &self.0 {
            map.serialize_entry(name, topic)?;
        }
        map.end()
    }
}

impl schemars::JsonSchema for Topics {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Topics".into()
    }

    /// Each topic asked for is a field named after it.
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let topic = generator.subschema_for::<TopicAnswer>();
        schemars::json_schema!({"type": "object", "additionalProperties": topic})
    }
}

/// One topic: its nearest overview's body and its entries (the `overview` topic has only
/// the scope overview's body).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TopicAnswer {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overview_t1: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entries: Option<Vec<EntryT0>>,
}

/// Where a document lives, for reading it whole.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Meta {
    pub document_path: String,
}

/// An overview's T0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct OverviewT0 {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// A topic overview's own fields (`folder_structure`, `status_values`, …).
    #[serde(flatten)]
    pub fields: Map<String, Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    #[serde(rename = "_meta")]
    pub meta: Meta,
}

/// An entry's T0, with its T1 body for decisions and lessons.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct EntryT0 {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated: Option<String>,
    /// In the default lists: the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_t1: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    /// The files whose cited text changed or is gone since the entry cited them
    /// (docs/citations.md).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stale_cites: Vec<String>,
    #[serde(rename = "_meta")]
    pub meta: Meta,
}

/// A loaded skill.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Skill {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub skill_path: String,
}

/// Builds the answer. `max` is the answer's cap: default items that could not fit it are
/// not read. `stale` says the index may be behind the files.
pub(crate) fn get_context(
    root: &Path,
    index: &Index,
    req: &ContextRequest,
    max: usize,
    stale: bool,
) -> Result<ContextAnswer> {
    let scope = resolve_scope(root, &req.workspace, req.domain.as_deref(), req.repository.as_deref())?;
    let scope_text = scope.to_string();
    let ladder: Vec<String> = layout::scope_ladder(&scope).iter().map(ToString::to_string).collect();
    let mut answer = ContextAnswer { scope: scope_text.clone(), stale, ..ContextAnswer::default() };
    let mut marks = Marks::new(root);

    let scope_overview = index
        .items(&ItemQuery { kinds: vec![DocKind::Overview], scopes: vec![scope_text.clone()], ..ItemQuery::default() })?
        .into_iter()
        .next();

    if req.include_defaults {
        let mut d = Defaults::default();
        match &scope_overview {
            Some(o) => d.scope_overview_t1 = Some(o.body.clone().unwrap_or_default()),
            None => answer.notes.push(format!("`{scope_text}` has no OVERVIEW.md")),
        }
        d.folder_structure = tree::folder_tree(root, &scope, max / TREE_SHARE)?;
        let overviews = index.item_list(&ItemQuery {
            kinds: vec![DocKind::Overview, DocKind::TopicOverview],
            under: Some(scope_text.clone()),
            ..ItemQuery::default()
        })?;
        let (overviews, left) = read_until_over(&overviews, max, overview_t0)?;
        answer.unread += left;
        d.overviews = overviews;
        for (list, topic) in [(&mut d.decisions_t0, "decisions"), (&mut d.lessons_t0, "lessons")] {
            let mut entries = index.items(&ItemQuery {
                kinds: vec![DocKind::Entry],
                scopes: ladder.clone(),
                topics: vec![topic.to_owned()],
                ..ItemQuery::default()
            })?;
            sort_entries(&mut entries);
            *list = entries.iter().map(|e| entry_t0(e, false, true, &mut marks)).collect();
        }
        d.loaded_skills = index
            .items(&ItemQuery { kinds: vec![DocKind::Skill], ..ItemQuery::default() })?
            .into_iter()
            .map(|s| Skill { name: s.name, description: s.description, skill_path: s.body.unwrap_or_default() })
            .collect();
        answer.defaults = Some(d);
    }

    for topic in requested_topics(index, req, &scope_text)? {
        if topic == "overview" {
            let body = scope_overview.as_ref().and_then(|o| o.body.clone()).unwrap_or_default();
            answer.topics.0.push(("overview".into(), TopicAnswer { overview_t1: Some(body), entries: None }));
            continue;
        }
        let overviews = index.items(&ItemQuery {
            kinds: vec![DocKind::TopicOverview],
            scopes: ladder.clone(),
            topics: vec![topic.clone()],
            ..ItemQuery::default()
        })?;
        // The nearest: the deepest scope of the ladder that has one.
        let nearest = overviews.iter().max_by_key(|o| o.scope.as_deref().map_or(0, |s| s.split('/').count()));
        let mut entries = index.items(&ItemQuery {
            kinds: vec![DocKind::Entry],
            under: Some(scope_text.clone()),
            topics: vec![topic.clone()],
            ..ItemQuery::default()
        })?;
        let exists = nearest.is_some() || !entries.is_empty() || scope::topic_folder_exists(root, &scope, &topic);
        if !exists {
            answer.notes.push(format!("topic `{topic}` has no `_{topic}/` folder in `{scope_text}` or above"));
        }
        for status in req.filter_status.iter().filter(|_| exists) {
            let known = known_statuses(nearest, &entries, &topic);
            if !known.contains(status) {
                answer.notes.push(format!(
                    "status `{status}` is not one of `{topic}`'s statuses ({}); no entry has it",
                    known.join(", ")
                ));
            }
        }
        entries.retain(|e| {
            (req.filter_status.is_empty() || e.status.as_ref().is_some_and(|s| req.filter_status.contains(s)))
                && req.filter_tags.iter().all(|t| e.tags.contains(t))
                && req.filter_category.as_ref().is_none_or(|c| e.category.as_ref() == Some(c))
        });
        sort_entries(&mut entries);
        let with_body = matches!(topic.as_str(), "decisions" | "lessons");
        let t = TopicAnswer {
            overview_t1: nearest.map(|o| o.body.clone().unwrap_or_default()),
            entries: Some(entries.iter().map(|e| entry_t0(e, with_body, false, &mut marks)).collect()),
        };
        answer.topics.0.push((topic, t));
    }
    Ok(answer)
}

/// The T0s of a list's items in order, read until one of them no longer fits in `max`
/// chars with those before it (by `lower_bound`), that one included; the rest are never
/// read (the cut would drop them). Returns them and how many were not read.
fn read_until_over<T: Serialize>(list: &ItemList, max: usize, t0: impl Fn(&Item) -> T) -> Result<(Vec<T>, usize)> {
    let mut out = Vec::new();
    let mut sum = 0;
    for i in 0..list.len() {
        let v = t0(&list.get(i)?);
        sum += lower_bound(&serde_json::to_value(&v).unwrap_or(Value::Null));
        out.push(v);
        if sum > max {
            return Ok((out, list.len() - i - 1));
        }
    }
    Ok((out, 0))
}

/// The topics asked for, in order, without repeats; `*` is every topic in the scope.
fn requested_topics(index: &Index, req: &ContextRequest, scope: &str) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for t in &req.topics {
        let t = crate::layout::topic_name(t);
        let t = t.as_str();
        if t == "*" {
            let found: BTreeSet<String> = index
                .items(&ItemQuery {
                    kinds: vec![DocKind::Entry, DocKind::TopicOverview],
                    under: Some(scope.to_owned()),
                    ..ItemQuery::default()
                })?
                .into_iter()
                .filter_map(|i| i.topic)
                .collect();
            for f in found {
                if !out.contains(&f) {
                    out.push(f);
                }
            }
            continue;
        }
        if t.is_empty() {
            continue;
        }
        validate_component(t).map_err(|e| Error::Usage(format!("topic: {e}")))?;
        if !out.iter().any(|o| o == t) {
            out.push(t.to_owned());
        }
    }
    Ok(out)
}

/// The statuses a filter may name for a topic: the overview's `status_values`, else the
/// plan statuses, plus any status an entry actually has.
fn known_statuses(overview: Option<&Item>, entries: &[Item], topic: &str) -> Vec<String> {
    let mut known: Vec<String> = overview
        .and_then(|o| o.meta.as_ref())
        .and_then(|m| m.get("status_values"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if known.is_empty() && topic == "plans" {
        known.extend(PLAN_STATUSES.iter().map(|s| (*s).to_owned()));
    }
    for s in entries.iter().filter_map(|e| e.status.as_ref()) {
        if !known.contains(s) {
            known.push(s.clone());
        }
    }
    known
}

/// `created` descending (undated last), then path.
fn sort_entries(entries: &mut [Item]) {
    entries.sort_by(|a, b| match (&a.created, &b.created) {
        (Some(x), Some(y)) => y.cmp(x).then_with(|| a.path.cmp(&b.path)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.path.cmp(&b.path),
    });
}

/// A text that is not empty.
fn some_text(v: Option<&String>) -> Option<String> {
    v.filter(|v| !v.is_empty()).cloned()
}

fn overview_t0(o: &Item) -> OverviewT0 {
    OverviewT0 {
        scope: some_text(o.scope.as_ref()),
        topic: some_text(o.topic.as_ref()),
        name: o.name.clone(),
        description: o.description.clone(),
        tags: o.tags.clone(),
        fields: o.meta.clone().unwrap_or_default(),
        flags: o.flags.clone(),
        meta: Meta { document_path: o.path.clone() },
    }
}

fn entry_t0(e: &Item, with_body: bool, with_path: bool, marks: &mut Marks<'_>) -> EntryT0 {
    EntryT0 {
        stale_cites: marks.of(&crate::query::cites::of_meta(e.meta.as_ref())),
        name: e.name.clone(),
        description: e.description.clone(),
        status: some_text(e.status.as_ref()),
        category: some_text(e.category.as_ref()),
        tags: e.tags.clone(),
        created: some_text(e.created.as_ref()),
        updated: some_text(e.updated.as_ref()),
        path: with_path.then(|| e.path.clone()),
        body_t1: with_body.then(|| e.body.clone().unwrap_or_default()),
        flags: e.flags.clone(),
        meta: Meta { document_path: e.path.clone() },
    }
}

/// The fewest chars an item's text can take in YAML or JSON: each key and each text
/// appears in it at least once, whatever the quoting and indentation.
fn lower_bound(v: &Value) -> usize {
    match v {
        Value::String(s) => s.chars().count(),
        Value::Array(a) => a.iter().map(lower_bound).sum(),
        Value::Object(m) => m.iter().map(|(k, v)| k.chars().count() + lower_bound(v)).sum(),
        Value::Number(n) => n.to_string().len(),
        Value::Bool(_) | Value::Null => 1,
    }
}

impl Answer for ContextAnswer {
    /// Default items that cannot fit whatever else is cut go first, with everything the cuts
    /// would have dropped before them; with those never read (`unread`).
    fn prepare(&self, value: &mut Value, max: usize) -> Vec<(&'static str, usize)> {
        let (bodies, entries, defaults) = drop_what_cannot_fit(value, max);
        vec![("body_t1", bodies), ("entries", entries), ("default items", defaults + self.unread)]
    }

    /// Bodies of topic entries from the last entry up, every topic; then entries from the
    /// end, always of the list with the most left; then the default lists from their ends;
    /// then the long T1 texts.
    fn plan(&self, value: &Value) -> Plan {
        let mut steps: Vec<(String, &'static str)> = Vec::new();
        let topics: Vec<(String, usize)> = value
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.get("entries").and_then(Value::as_array).map(|e| (k.clone(), e.len())))
                    .collect()
            })
            .unwrap_or_default();
        for (topic, n) in &topics {
            for i in (0..*n).rev() {
                let entry = pointer(&[topic, "entries", &i.to_string()]);
                if value.pointer(&format!("{entry}/body_t1")).is_some() {
                    steps.push((format!("{entry}/body_t1"), "body_t1"));
                }
            }
        }
        let mut left: Vec<usize> = topics.iter().map(|(_, n)| *n).collect();
        while let Some((t, _)) =
            left.iter().enumerate().filter(|(_, n)| **n > 0).max_by_key(|(i, n)| (**n, usize::MAX - i))
        {
            left[t] -= 1;
            steps.push((pointer(&[&topics[t].0, "entries", &left[t].to_string()]), "entries"));
        }
        for key in DEFAULT_LISTS {
            let n = value.pointer(&pointer(&["defaults", key])).and_then(Value::as_array).map_or(0, Vec::len);
            steps.extend((0..n).rev().map(|i| (pointer(&["defaults", key, &i.to_string()]), "default items")));
        }
        let mut texts = Vec::new();
        strings(value, &mut String::new(), &mut texts, &|k| k.ends_with("_t1") || k == "folder_structure");
        Plan {
            steps,
            texts,
            order: vec!["body_t1", "entries", "default items"],
            pre: Vec::new(),
            advice: format!(
                "ask for fewer topics, a deeper scope or filters, raise max_chars (up to {MAX_MAX_CHARS}), or read \
files by _meta.document_path"
            ),
        }
    }
}

/// The default lists are cut last, from their ends: when an item of one cannot fit even
/// with nothing before it but the items ahead of it in its list, the cuts would reach it,
/// and then every cut that comes before it in the order (all bodies and entries, the
/// earlier default lists) is made too. This makes those cuts at once, without rendering
/// anything, so a scope with thousands of overviews is cut in a few milliseconds; the
/// answer is the one the cuts give without it. Returns the bodies, entries and default
/// items it dropped.
fn drop_what_cannot_fit(answer: &mut Value, max: usize) -> (usize, usize, usize) {
    let (mut bodies, mut entries, mut defaults) = (0, 0, 0);
    let Some(lists) = answer.get_mut("defaults").and_then(Value::as_object_mut) else { return (0, 0, 0) };
    // The last list in cut order that overflows, and where.
    let mut overflow = None;
    for (g, key) in DEFAULT_LISTS.iter().enumerate() {
        let Some(items) = lists.get(*key).and_then(Value::as_array) else { continue };
        let mut sum = 0;
        if let Some(j) = items.iter().position(|item| {
            sum += lower_bound(item);
            sum > max
        }) {
            overflow = Some((g, j));
        }
    }
    let Some((g, j)) = overflow else { return (0, 0, 0) };
    for (h, key) in DEFAULT_LISTS.iter().enumerate().take(g + 1) {
        if let Some(items) = lists.get_mut(*key).and_then(Value::as_array_mut) {
            let keep = if h == g { j } else { 0 };
            defaults += items.len().saturating_sub(keep);
            items.truncate(keep);
        }
    }
    if let Some(m) = answer.as_object_mut() {
        for (_, topic) in m.iter_mut() {
            if let Some(list) = topic.get_mut("entries").and_then(Value::as_array_mut) {
                bodies += list.iter().filter(|e| e.get("body_t1").is_some()).count();
                entries += list.len();
                list.clear();
            }
        }
    }
    (bodies, entries, defaults)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::query::answer::fit;
    use crate::query::api::Format;

    /// A large answer: many overviews, some decisions and lessons, a topic with bodies.
    fn large_answer(overviews: usize) -> Value {
        let item = |i: usize, what: &str| {
            json!({"scope": format!("w/d{}/r{i}", i % 7), "name": format!("{what} {i}"),
                   "description": "x".repeat(40 + i % 50), "_meta": {"document_path": format!("p/{what}/{i}.md")}})
        };
        let entries: Vec<Value> = (0..30)
            .map(|i| {
                let mut e = item(i, "plan");
                e["body_t1"] = json!("line\n".repeat(i % 9 + 1));
                e
            })
            .collect();
        json!({
            "scope": "w",
            "defaults": {
                "folder_structure": "w/\n",
                "overviews": (0..overviews).map(|i| item(i, "overview")).collect::<Vec<_>>(),
                "decisions_t0": (0..40).map(|i| item(i, "decision")).collect::<Vec<_>>(),
                "lessons_t0": (0..40).map(|i| item(i, "lesson")).collect::<Vec<_>>(),
                "loaded_skills": [],
            },
            "plans": {"overview_t1": "Plans.", "entries": entries},
        })
    }

    /// The cut without the shortcut: every step planned on the whole answer.
    fn slow(answer: &Value, max: usize) -> Value {
        let plan = ContextAnswer::default().plan(answer);
        fit(answer.clone(), Format::Yaml, max, &plan)
    }

    fn fast(answer: &Value, max: usize) -> Value {
        let mut v = answer.clone();
        let pre = ContextAnswer::default().prepare(&mut v, max);
        let plan = Plan { pre, ..ContextAnswer::default().plan(&v) };
        fit(v, Format::Yaml, max, &plan)
    }

    #[test]
    fn dropping_what_cannot_fit_gives_the_answer_the_cuts_give() {
        for (overviews, max) in [(2000, 24_000), (300, 24_000), (120, 24_000), (2000, 3_000), (60, 100_000)] {
            let answer = large_answer(overviews);
            let fast = fast(&answer, max);
            let slow = slow(&answer, max);
            let kept = |v: &Value, k: &str| v["defaults"][k].as_array().map_or(0, Vec::len);
            assert_eq!(
                (kept(&fast, "overviews"), kept(&fast, "decisions_t0"), fast["hint"].clone()),
                (kept(&slow, "overviews"), kept(&slow, "decisions_t0"), slow["hint"].clone()),
                "{overviews} overviews, max {max}"
            );
            assert_eq!(fast, slow, "{overviews} overviews, max {max}");
            assert!(super::super::yaml::to_yaml(&fast).chars().count() <= max);
        }
        // The big one was cut to a prefix of the overviews and says what it left out.
        let v = fast(&large_answer(2000), 24_000);
        let kept = v["defaults"]["overviews"].as_array().unwrap().len();
        assert!(kept > 50 && kept < 2000, "{kept}");
        assert_eq!(v["defaults"]["decisions_t0"], json!([]));
        assert_eq!(v["plans"]["entries"], json!([]));
        assert_eq!(
            v["hint"].as_str().unwrap().split(';').next().unwrap(),
            format!("answer cut to fit max_chars: 30 body_t1, 30 entries, {} default items left out", 2080 - kept)
        );
    }
}
