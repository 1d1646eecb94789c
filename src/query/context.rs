//! `workspace_get_context` (DESIGN §4.1): one answer that orients an agent in a scope.
//!
//! Everything comes from the index (so it is as fresh as the watcher), except the
//! directory-only tree of the scope, which is read from the disk, level by level, only as
//! deep as fits in a quarter of the cap. The answer is a JSON value in a fixed key order;
//! `render` turns it into YAML or JSON text. An answer over `max_chars` is cut in a fixed
//! order (entry bodies first, then entries from the end of the longest lists, then the
//! default lists) and says `truncated: true` with a hint; default items that cannot fit
//! whatever else is cut are never read from the index.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::index::{Index, Item, ItemList, ItemQuery};
use crate::layout;
use crate::model::{DocKind, Scope, validate_component};
use crate::store;

/// The default answer cap, and the most `max_chars` may ask for (DESIGN §4).
pub const DEFAULT_MAX_CHARS: usize = 24_000;
pub const MAX_MAX_CHARS: usize = 100_000;

/// The folder tree may take at most this fraction (1/N) of the answer cap, so that a large
/// scope's tree leaves room for the overviews, decisions and lessons.
const TREE_SHARE: usize = 4;

/// Plan statuses a filter may name when the topic overview lists none (DESIGN §2.2).
const PLAN_STATUSES: [&str; 5] = ["new", "in_progress", "partial", "done", "abandoned"];

/// The parameters of `workspace_get_context`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextRequest {
    pub workspace: String,
    pub domain: Option<String>,
    pub repository: Option<String>,
    /// Topic names, `overview`, or `*` for every topic found in the scope.
    pub topics: Vec<String>,
    pub include_defaults: bool,
    pub filter_status: Vec<String>,
    /// Entries must carry every one of these tags.
    pub filter_tags: Vec<String>,
    pub filter_category: Option<String>,
    /// The answer cap in characters (default 24,000; at most 100,000).
    pub max_chars: Option<usize>,
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
            max_chars: None,
        }
    }
}

/// How an answer is written out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Format {
    #[default]
    Yaml,
    Json,
}

/// Checks the names of a scope and that it exists; an unknown one is an error that lists
/// what exists at the nearest level that does.
pub fn resolve_scope(root: &Path, req: &ContextRequest) -> Result<Scope> {
    if req.workspace.is_empty() {
        return Err(Error::Usage("`workspace` is required".into()));
    }
    if req.repository.is_some() && req.domain.is_none() {
        return Err(Error::Usage("a `repository` needs its `domain`".into()));
    }
    let parts: Vec<&str> = [Some(req.workspace.as_str()), req.domain.as_deref(), req.repository.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    for part in &parts {
        validate_component(part).map_err(|e| Error::Usage(e.to_string()))?;
    }
    let mut dir = root.join(layout::WORKSPACES_DIR);
    let levels = ["workspace", "domain", "repository"];
    let mut at = String::new();
    for (i, part) in parts.iter().enumerate() {
        let next = dir.join(part);
        if !store::is_dir(&next) {
            let known = scope_children(&dir)?;
            let place = if at.is_empty() { String::new() } else { format!(" in `{at}`") };
            let list = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
            return Err(Error::NotFound(format!("unknown {} `{part}`{place}; known: {list}", levels[i])));
        }
        dir = next;
        if !at.is_empty() {
            at.push('/');
        }
        at.push_str(part);
    }
    Scope::parse(&at).map_err(|e| Error::Usage(e.to_string()))
}

/// The sub-scope folders of a folder: not topics (`_x`), not hidden.
fn scope_children(dir: &Path) -> Result<Vec<String>> {
    Ok(store::list_subdirs(dir)?.into_iter().filter(|n| !n.starts_with('_') && !n.starts_with('.')).collect())
}

/// Builds the answer. `stale` says the index may be behind the files.
pub fn get_context(root: &Path, index: &Index, req: &ContextRequest, stale: bool) -> Result<Value> {
    let scope = resolve_scope(root, req)?;
    let scope_text = scope.to_string();
    let ladder: Vec<String> = layout::scope_ladder(&scope).iter().map(ToString::to_string).collect();
    let mut notes: Vec<String> = Vec::new();
    let max = req.max_chars.unwrap_or(DEFAULT_MAX_CHARS).clamp(1, MAX_MAX_CHARS);
    // Default items never read because they could not be in the answer.
    let mut unread = 0;
    let mut answer = Map::new();
    answer.insert("scope".into(), json!(scope_text));

    let scope_overview = index
        .items(&ItemQuery { kinds: vec![DocKind::Overview], scopes: vec![scope_text.clone()], ..ItemQuery::default() })?
        .into_iter()
        .next();

    if req.include_defaults {
        let mut d = Map::new();
        match &scope_overview {
            Some(o) => {
                d.insert("scope_overview_t1".into(), json!(o.body.clone().unwrap_or_default()));
            }
            None => notes.push(format!("`{scope_text}` has no OVERVIEW.md")),
        }
        d.insert("folder_structure".into(), json!(folder_tree(root, &scope, max / TREE_SHARE)?));
        let overviews = index.item_list(&ItemQuery {
            kinds: vec![DocKind::Overview, DocKind::TopicOverview],
            under: Some(scope_text.clone()),
            ..ItemQuery::default()
        })?;
        let (overviews, left) = read_until_over(&overviews, max, overview_t0)?;
        unread += left;
        d.insert("overviews".into(), Value::Array(overviews));
        for (key, topic) in [("decisions_t0", "decisions"), ("lessons_t0", "lessons")] {
            let mut entries = index.items(&ItemQuery {
                kinds: vec![DocKind::Entry],
                scopes: ladder.clone(),
                topics: vec![topic.to_owned()],
                ..ItemQuery::default()
            })?;
            sort_entries(&mut entries);
            d.insert(key.into(), Value::Array(entries.iter().map(|e| entry_t0(e, false, true)).collect()));
        }
        let skills = index.items(&ItemQuery { kinds: vec![DocKind::Skill], ..ItemQuery::default() })?;
        let skills: Vec<Value> = skills
            .iter()
            .map(|s| {
                let mut m = Map::new();
                m.insert("name".into(), json!(s.name));
                put_text(&mut m, "description", &s.description);
                put_text(&mut m, "skill_path", s.body.as_deref().unwrap_or_default());
                Value::Object(m)
            })
            .collect();
        d.insert("loaded_skills".into(), Value::Array(skills));
        answer.insert("defaults".into(), Value::Object(d));
    }

    let topics = requested_topics(index, req, &scope_text)?;
    for topic in topics {
        if topic == "overview" {
            let body = scope_overview.as_ref().and_then(|o| o.body.clone()).unwrap_or_default();
            answer.insert("overview".into(), json!({ "overview_t1": body }));
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
        let exists = nearest.is_some() || !entries.is_empty() || topic_folder_exists(root, &scope, &topic);
        if !exists {
            notes.push(format!("topic `{topic}` has no `_{topic}/` folder in `{scope_text}` or above"));
        }
        for status in req.filter_status.iter().filter(|_| exists) {
            let known = known_statuses(nearest, &entries, &topic);
            if !known.contains(status) {
                let list: Vec<&str> = known.iter().map(String::as_str).collect();
                notes.push(format!(
                    "status `{status}` is not one of `{topic}`'s statuses ({}); no entry has it",
                    list.join(", ")
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
        let mut t = Map::new();
        if let Some(o) = nearest {
            t.insert("overview_t1".into(), json!(o.body.clone().unwrap_or_default()));
        }
        t.insert("entries".into(), Value::Array(entries.iter().map(|e| entry_t0(e, with_body, false)).collect()));
        answer.insert(topic, Value::Object(t));
    }
    if !notes.is_empty() {
        answer.insert("notes".into(), json!(notes));
    }
    if stale {
        answer.insert("stale".into(), json!(true));
    }
    Ok(fit(Value::Object(answer), max, unread))
}

/// The T0s of a list's items in order, read until one of them no longer fits in `max`
/// chars with those before it (by `lower_bound`), that one included; the rest are never
/// read (`drop_what_cannot_fit` would drop them). Returns them and how many were not read.
fn read_until_over(list: &ItemList, max: usize, t0: impl Fn(&Item) -> Value) -> Result<(Vec<Value>, usize)> {
    let mut out = Vec::new();
    let mut sum = 0;
    for i in 0..list.len() {
        let v = t0(&list.get(i)?);
        sum += lower_bound(&v);
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
        let t = t.trim().trim_start_matches('_');
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

fn topic_folder_exists(root: &Path, scope: &Scope, topic: &str) -> bool {
    layout::scope_ladder(scope).iter().any(|s| store::is_dir(&root.join(layout::topic_dir(s, topic))))
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

fn put_text(m: &mut Map<String, Value>, key: &str, v: &str) {
    if !v.is_empty() {
        m.insert(key.into(), json!(v));
    }
}

fn put_opt(m: &mut Map<String, Value>, key: &str, v: Option<&String>) {
    if let Some(v) = v.filter(|v| !v.is_empty()) {
        m.insert(key.into(), json!(v));
    }
}

fn meta(path: &str) -> Value {
    json!({ "document_path": path })
}

/// An overview's T0: scope, topic, name, description, tags, its topic fields.
fn overview_t0(o: &Item) -> Value {
    let mut m = Map::new();
    put_opt(&mut m, "scope", o.scope.as_ref());
    put_opt(&mut m, "topic", o.topic.as_ref());
    m.insert("name".into(), json!(o.name));
    put_text(&mut m, "description", &o.description);
    if !o.tags.is_empty() {
        m.insert("tags".into(), json!(o.tags));
    }
    if let Some(extra) = &o.meta {
        for (k, v) in extra {
            m.insert(k.clone(), v.clone());
        }
    }
    put_flags(&mut m, o);
    m.insert("_meta".into(), meta(&o.path));
    Value::Object(m)
}

/// An entry's T0 (and T1 body for decisions and lessons).
fn entry_t0(e: &Item, with_body: bool, with_path: bool) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(e.name));
    put_text(&mut m, "description", &e.description);
    put_opt(&mut m, "status", e.status.as_ref());
    put_opt(&mut m, "category", e.category.as_ref());
    if !e.tags.is_empty() {
        m.insert("tags".into(), json!(e.tags));
    }
    put_opt(&mut m, "created", e.created.as_ref());
    put_opt(&mut m, "updated", e.updated.as_ref());
    if with_path {
        m.insert("path".into(), json!(e.path));
    }
    if with_body {
        m.insert("body_t1".into(), json!(e.body.clone().unwrap_or_default()));
    }
    put_flags(&mut m, e);
    m.insert("_meta".into(), meta(&e.path));
    Value::Object(m)
}

fn put_flags(m: &mut Map<String, Value>, i: &Item) {
    if !i.flags.is_empty() {
        m.insert("flags".into(), json!(i.flags));
    }
}

/// The scope's folders as a tree, without files or hidden folders.
fn folder_tree(root: &Path, scope: &Scope, budget: usize) -> Result<String> {
    let rel = format!("{}/{scope}", layout::WORKSPACES_DIR);
    let tree = Tree::read(&root.join(&rel), budget)?;
    Ok(tree.render(format!("{rel}/\n")))
}

/// A directory-only tree read level by level, no deeper than fits in its budget: every
/// folder down to the deepest level that fits whole, and a last line saying what was left
/// out. Reading stops as soon as a level overflows, so a huge scope costs a few hundred
/// folder reads, not one per folder.
#[derive(Debug)]
struct Tree {
    /// (parent index, name) in breadth-first order; node 0 is the scope's folder.
    nodes: Vec<(usize, String)>,
    left_out: LeftOut,
}

#[derive(Debug, PartialEq, Eq)]
enum LeftOut {
    Nothing,
    /// Folders deeper than this many levels.
    Deeper(usize),
    /// Not even the first level fits: this many of its folders are not shown.
    More(usize),
}

impl Tree {
    const MAX_DEPTH: usize = 16;

    fn read(dir: &Path, budget: usize) -> Result<Tree> {
        let subdirs = |p: &Path| -> Result<Vec<String>> {
            Ok(store::list_subdirs(p)?.into_iter().filter(|n| !n.starts_with('.')).collect())
        };
        let mut nodes: Vec<(usize, String)> = vec![(0, String::new())];
        let mut paths = vec![dir.to_path_buf()];
        let mut level: Vec<usize> = vec![0];
        let mut chars = 0usize;
        for depth in 1..=Tree::MAX_DEPTH {
            let level_start = nodes.len();
            let mut next = Vec::new();
            for &parent in &level {
                let names = subdirs(&paths[parent])?;
                for (i, name) in names.iter().enumerate() {
                    // Four columns per depth (`│   `, `├── `), the name, `/` and the newline.
                    chars += 4 * depth + name.chars().count() + 2;
                    if chars > budget {
                        if depth == 1 {
                            nodes.truncate(level_start + i);
                            return Ok(Tree { nodes, left_out: LeftOut::More(names.len() - i) });
                        }
                        nodes.truncate(level_start);
                        return Ok(Tree { nodes, left_out: LeftOut::Deeper(depth - 1) });
                    }
                    paths.push(paths[parent].join(name));
                    nodes.push((parent, name.clone()));
                    next.push(nodes.len() - 1);
                }
            }
            if next.is_empty() {
                break;
            }
            level = next;
        }
        Ok(Tree { nodes, left_out: LeftOut::Nothing })
    }

    fn render(&self, mut out: String) -> String {
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); self.nodes.len()];
        for (i, (parent, _)) in self.nodes.iter().enumerate().skip(1) {
            children[*parent].push(i);
        }
        let mut stack: Vec<(usize, String)> = Vec::new();
        // Depth-first from the root, children in name order.
        let push_kids = |stack: &mut Vec<(usize, String)>, at: usize, prefix: &str| {
            for &k in children[at].iter().rev() {
                stack.push((k, prefix.to_owned()));
            }
        };
        push_kids(&mut stack, 0, "");
        while let Some((k, prefix)) = stack.pop() {
            let parent = self.nodes[k].0;
            let last = children[parent].last() == Some(&k);
            out.push_str(&prefix);
            out.push_str(if last { "└── " } else { "├── " });
            out.push_str(&self.nodes[k].1);
            out.push_str("/\n");
            push_kids(&mut stack, k, &format!("{prefix}{}", if last { "    " } else { "│   " }));
        }
        match self.left_out {
            LeftOut::Nothing => {}
            LeftOut::Deeper(levels) => out.push_str(&format!(
                "… folders deeper than {levels} level{} left out (ask for a narrower scope)\n",
                if levels == 1 { "" } else { "s" }
            )),
            LeftOut::More(n) => out.push_str(&format!(
                "… {n} more folder{} left out (ask for a narrower scope)\n",
                if n == 1 { "" } else { "s" }
            )),
        }
        out
    }
}

/// Writes an answer as text.
pub fn render(value: &Value, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(value).unwrap_or_default(),
        Format::Yaml => super::yaml::to_yaml(value),
    }
}

/// One way to make an answer smaller, in the order they are tried.
#[derive(Debug, Clone, Copy)]
enum Cut {
    /// Drop `body_t1` of entry `i` of a topic.
    Body(usize, usize),
    /// Drop entry `i` of a topic.
    Entry(usize, usize),
    /// Drop item `i` of a default list (`overviews`, `decisions_t0`, `lessons_t0`).
    Default(&'static str, usize),
}

/// Cuts `answer` until its YAML text fits in `max` chars, in a fixed order, and says so.
///
/// Each cut's saving is estimated from its own YAML (plus its indentation in the whole);
/// the cuts whose savings cover the excess are applied and the result measured again, so
/// a large answer is rendered a few times, not once per cut.
fn fit(answer: Value, max: usize, unread: usize) -> Value {
    let (answer, mut pre) = drop_what_cannot_fit(answer, max);
    pre.defaults += unread;
    cut(answer, max, pre)
}

/// `fit` after `drop_what_cannot_fit` left out `pre`.
fn cut(answer: Value, max: usize, pre: Dropped) -> Value {
    let size = |v: &Value| super::yaml::to_yaml(v).chars().count();
    let full = size(&answer);
    if full <= max {
        return if pre == Dropped::default() { answer } else { mark_cut(answer, &[], pre) };
    }
    let Value::Object(map) = &answer else { return answer };
    let topic_keys: Vec<&String> =
        map.iter().filter(|(_, v)| v.get("entries").is_some_and(Value::is_array)).map(|(k, _)| k).collect();
    let entries_of = |t: usize| map[topic_keys[t]]["entries"].as_array().map_or(&[][..], Vec::as_slice);
    // The YAML size of a value written `indent` columns in.
    let cost = |v: &Value, indent: usize| {
        let text = super::yaml::to_yaml(v);
        text.chars().count() + indent * text.lines().count()
    };
    let mut cuts: Vec<(Cut, usize)> = Vec::new();
    // Bodies from the last entry up, every topic.
    for t in 0..topic_keys.len() {
        for (i, e) in entries_of(t).iter().enumerate().rev() {
            if let Some(body) = e.get("body_t1") {
                cuts.push((Cut::Body(t, i), cost(&json!({ "body_t1": body }), 6)));
            }
        }
    }
    // Entries from the end, always from the list that has the most left.
    let mut left: Vec<usize> = (0..topic_keys.len()).map(|t| entries_of(t).len()).collect();
    while let Some((t, _)) = left.iter().enumerate().filter(|(_, n)| **n > 0).max_by_key(|(i, n)| (**n, usize::MAX - i))
    {
        left[t] -= 1;
        let mut e = entries_of(t)[left[t]].clone();
        if let Some(m) = e.as_object_mut() {
            m.remove("body_t1");
        }
        cuts.push((Cut::Entry(t, left[t]), cost(&e, 6)));
    }
    for key in ["decisions_t0", "lessons_t0", "overviews"] {
        let items =
            map.get("defaults").and_then(|d| d.get(key)).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        cuts.extend(items.iter().enumerate().rev().map(|(i, item)| (Cut::Default(key, i), cost(item, 6))));
    }
    let apply = |k: usize| -> Value {
        let mut v = answer.clone();
        for (cut, _) in &cuts[..k] {
            match *cut {
                Cut::Body(t, i) => {
                    if let Some(e) = v[topic_keys[t].as_str()]["entries"][i].as_object_mut() {
                        e.remove("body_t1");
                    }
                }
                Cut::Entry(t, i) => v[topic_keys[t].as_str()]["entries"][i] = Value::Null,
                Cut::Default(key, i) => v["defaults"][key][i] = Value::Null,
            }
        }
        for t in &topic_keys {
            if let Some(a) = v[t.as_str()]["entries"].as_array_mut() {
                a.retain(|e| !e.is_null());
            }
        }
        if let Some(d) = v.get_mut("defaults").and_then(Value::as_object_mut) {
            for key in ["decisions_t0", "lessons_t0", "overviews"] {
                if let Some(a) = d.get_mut(key).and_then(Value::as_array_mut) {
                    a.retain(|e| !e.is_null());
                }
            }
        }
        let done: Vec<Cut> = cuts[..k].iter().map(|(c, _)| *c).collect();
        mark_cut(v, &done, pre)
    };
    // Room for the hint that says what was cut.
    let target = max.saturating_sub(400);
    let (mut k, mut estimate) = (0, full);
    loop {
        while k < cuts.len() && estimate > target {
            estimate = estimate.saturating_sub(cuts[k].1);
            k += 1;
        }
        let mut v = apply(k);
        let real = size(&v);
        if real <= max {
            return v;
        }
        if k == cuts.len() {
            // Nothing left to drop: the T1 texts themselves are cut.
            shorten_texts(&mut v, real - max);
            return v;
        }
        estimate = real;
    }
}

/// What `drop_what_cannot_fit` left out before the cuts were tried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Dropped {
    bodies: usize,
    entries: usize,
    defaults: usize,
}

/// The fewest chars an item's YAML can take: each key and each text appears in it at least
/// once, whatever the quoting and indentation.
fn lower_bound(v: &Value) -> usize {
    match v {
        Value::String(s) => s.chars().count(),
        Value::Array(a) => a.iter().map(lower_bound).sum(),
        Value::Object(m) => m.iter().map(|(k, v)| k.chars().count() + lower_bound(v)).sum(),
        Value::Number(n) => n.to_string().len(),
        Value::Bool(_) | Value::Null => 1,
    }
}

/// The default lists are cut last, from their ends: when an item of one cannot fit even
/// with nothing before it but the items ahead of it in its list, the cuts in `fit` would
/// reach it, and then every cut that comes before it in the order (all bodies and entries,
/// the earlier default lists) is made too. This makes those cuts at once, without
/// rendering anything, so a scope with thousands of overviews is cut in a few
/// milliseconds; the answer is the one `fit` gives without it.
fn drop_what_cannot_fit(mut answer: Value, max: usize) -> (Value, Dropped) {
    const LISTS: [&str; 3] = ["decisions_t0", "lessons_t0", "overviews"];
    let mut dropped = Dropped::default();
    let Some(defaults) = answer.get_mut("defaults").and_then(Value::as_object_mut) else { return (answer, dropped) };
    // The last list in cut order that overflows, and where.
    let mut overflow = None;
    for (g, key) in LISTS.iter().enumerate() {
        let Some(items) = defaults.get(*key).and_then(Value::as_array) else { continue };
        let mut sum = 0;
        if let Some(j) = items.iter().position(|item| {
            sum += lower_bound(item);
            sum > max
        }) {
            overflow = Some((g, j));
        }
    }
    let Some((g, j)) = overflow else { return (answer, dropped) };
    for (h, key) in LISTS.iter().enumerate().take(g + 1) {
        if let Some(items) = defaults.get_mut(*key).and_then(Value::as_array_mut) {
            let keep = if h == g { j } else { 0 };
            dropped.defaults += items.len().saturating_sub(keep);
            items.truncate(keep);
        }
    }
    if let Some(m) = answer.as_object_mut() {
        for (_, topic) in m.iter_mut() {
            if let Some(entries) = topic.get_mut("entries").and_then(Value::as_array_mut) {
                dropped.bodies += entries.iter().filter(|e| e.get("body_t1").is_some()).count();
                dropped.entries += entries.len();
                entries.clear();
            }
        }
    }
    (answer, dropped)
}

/// Adds `truncated` and a `hint` naming what was left out.
fn mark_cut(mut v: Value, cuts: &[Cut], pre: Dropped) -> Value {
    let bodies = pre.bodies + cuts.iter().filter(|c| matches!(c, Cut::Body(..))).count();
    let entries = pre.entries + cuts.iter().filter(|c| matches!(c, Cut::Entry(..))).count();
    let defaults = pre.defaults + cuts.iter().filter(|c| matches!(c, Cut::Default(..))).count();
    let mut parts = Vec::new();
    if bodies > 0 {
        parts.push(format!("{bodies} body_t1"));
    }
    if entries > 0 {
        parts.push(format!("{entries} entries"));
    }
    if defaults > 0 {
        parts.push(format!("{defaults} default items"));
    }
    let left_out =
        if parts.is_empty() { "long texts were cut".to_owned() } else { format!("{} left out", parts.join(", ")) };
    if let Some(m) = v.as_object_mut() {
        m.insert("truncated".into(), json!(true));
        m.insert(
            "hint".into(),
            json!(format!(
                "answer cut to fit max_chars: {left_out}; ask for fewer topics, a deeper scope or filters, \
                 raise max_chars (up to {MAX_MAX_CHARS}), or read files by _meta.document_path"
            )),
        );
    }
    v
}

/// Cuts the longest T1 texts until `over` chars are gone.
fn shorten_texts(v: &mut Value, mut over: usize) {
    let mut texts: Vec<&mut String> = Vec::new();
    collect_texts(v, &mut texts);
    texts.sort_by_key(|t| std::cmp::Reverse(t.chars().count()));
    for t in texts {
        if over == 0 {
            break;
        }
        let n = t.chars().count();
        let keep = n.saturating_sub(over + 2);
        *t = format!("{}…", t.chars().take(keep).collect::<String>());
        over = over.saturating_sub(n - keep);
    }
}

fn collect_texts<'a>(v: &'a mut Value, out: &mut Vec<&'a mut String>) {
    match v {
        Value::Object(m) => {
            for (k, val) in m.iter_mut() {
                let long_text = k.ends_with("_t1") || k == "folder_structure";
                match val {
                    Value::String(s) => {
                        if long_text {
                            out.push(s);
                        }
                    }
                    other => collect_texts(other, out),
                }
            }
        }
        Value::Array(a) => {
            for val in a {
                collect_texts(val, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree_of(dirs: &[&str], budget: usize) -> String {
        let tmp = tempfile::tempdir().unwrap();
        for d in dirs {
            std::fs::create_dir_all(tmp.path().join(d)).unwrap();
        }
        std::fs::write(tmp.path().join("a/OVERVIEW.md"), "files are not shown").unwrap();
        Tree::read(tmp.path(), budget).unwrap().render("w/\n".into())
    }

    #[test]
    fn the_folder_tree_shows_the_levels_that_fit_and_says_what_it_left_out() {
        let dirs = ["a/_plans", "a/x/_lessons", "b", ".hidden"];
        let whole = "w/\n├── a/\n│   ├── _plans/\n│   └── x/\n│       └── _lessons/\n└── b/\n";
        assert_eq!(tree_of(&dirs, 1000), whole);
        // Exactly the size of all lines: still whole.
        assert_eq!(tree_of(&dirs, 7 + 7 + 16 + 11 + 22), whole);
        assert_eq!(
            tree_of(&dirs, 7 + 7 + 16 + 11 + 21),
            "w/\n├── a/\n│   ├── _plans/\n│   └── x/\n└── b/\n… folders deeper than 2 levels left out (ask for a narrower scope)\n"
        );
        assert_eq!(
            tree_of(&dirs, 20),
            "w/\n├── a/\n└── b/\n… folders deeper than 1 level left out (ask for a narrower scope)\n"
        );
        assert_eq!(tree_of(&dirs, 7), "w/\n└── a/\n… 1 more folder left out (ask for a narrower scope)\n");
    }

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

    #[test]
    fn dropping_what_cannot_fit_gives_the_answer_the_cuts_give() {
        for (overviews, max) in [(2000, 24_000), (300, 24_000), (120, 24_000), (2000, 3_000), (60, 100_000)] {
            let answer = large_answer(overviews);
            let slow = cut(answer.clone(), max, Dropped::default());
            let fast = fit(answer, max, 0);
            assert_eq!(fast, slow, "{overviews} overviews, max {max}");
            assert!(super::super::yaml::to_yaml(&fast).chars().count() <= max);
        }
        // The big one was cut to a prefix of the overviews and says what it left out.
        let v = fit(large_answer(2000), 24_000, 0);
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
