//! Memories (DESIGN §2.3, §4.3): add, get, delete, search and stats over the append-only
//! logs `.tmws/memory/{namespace}.jsonl`.
//!
//! Writes go to the log under its lock: the live entries are folded from the log itself
//! (so deduplication, key upserts and eviction see every process's writes), secrets are
//! redacted and content is cut before anything is written, and each op is one line.
//! Reads go through the index, which the sync and the watcher keep in step with the logs.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::redact::redact;
use crate::config::{Config, NamespaceConfig};
use crate::error::{Error, Result};
use crate::index::extract::{cut, first_sentences};
use crate::index::{Index, ItemQuery, SearchRequest};
use crate::model::{DocKind, validate_component};
use crate::parse::jsonl;
use crate::store::{self, layout, log::LockedLog};

/// The namespace of an add that names none.
pub const DEFAULT_NAMESPACE: &str = "short-term";
/// An extracted summary is at most this long (DESIGN §2.3).
const EXTRACTED_SUMMARY_CHARS: usize = 280;
/// `include_content` previews are this long (DESIGN §4.3).
pub const PREVIEW_CHARS: usize = 1200;

/// The log of a namespace, relative to the root.
pub fn log_path(namespace: &str) -> String {
    format!("{}/{namespace}.jsonl", layout::MEMORY_DIR)
}

/// The lock file of a namespace's log, in the derived cache.
fn lock_path(namespace: &str) -> String {
    format!(".tmws/cache/locks/memory-{namespace}.lock")
}

/// `memory_add`'s parameters.
#[derive(Debug, Clone, Default)]
pub struct AddRequest {
    pub content: String,
    pub namespace: Option<String>,
    pub summary: Option<String>,
    pub tags: Vec<String>,
    pub source: Option<String>,
    pub kind: Option<String>,
    pub key: Option<String>,
    pub importance: Option<f64>,
    pub agent: Option<String>,
}

/// `memory_add`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AddAnswer {
    pub id: String,
    pub namespace: String,
    pub summary: String,
    pub content_length: usize,
    pub expires_at: String,
    pub deduplicated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded: Option<String>,
    pub truncated: bool,
    pub redacted: usize,
    /// Entries evicted to stay within the namespace's `max_entries`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evicted: Vec<String>,
}

/// A live entry as the writer sees it when folding a log.
#[derive(Debug, Clone)]
struct Live {
    /// Order of its add line.
    line: usize,
    at: String,
    key: Option<String>,
    summary: String,
    expires_at: String,
}

fn text(v: &Map<String, Value>, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_owned)
}

/// The live (not deleted, not expired at `now`) entries of a log, by id.
fn fold(bytes: &[u8], now: &str) -> BTreeMap<String, Live> {
    let (lines, _) = jsonl::parse(bytes);
    let mut live: BTreeMap<String, Live> = BTreeMap::new();
    for (n, line) in lines.into_iter().enumerate() {
        let Value::Object(map) = line.value else { continue };
        let Some(id) = text(&map, "id") else { continue };
        match map.get("op").and_then(Value::as_str) {
            Some("add") => {
                let entry = Live {
                    line: n,
                    at: text(&map, "at").unwrap_or_default(),
                    key: text(&map, "key"),
                    summary: text(&map, "summary").unwrap_or_default(),
                    expires_at: text(&map, "expires_at").unwrap_or_default(),
                };
                live.insert(id, entry);
            }
            Some("delete") => {
                live.remove(&id);
            }
            _ => {}
        }
    }
    live.retain(|_, e| e.expires_at.is_empty() || normalise(&e.expires_at).as_str() > now);
    live
}

/// An RFC 3339 time as UTC seconds with `Z` (text order is time order), or as given.
fn normalise(t: &str) -> String {
    DateTime::parse_from_rfc3339(t.trim())
        .map(|at| at.with_timezone(&Utc).to_rfc3339_opts(SecondsFormat::Secs, true))
        .unwrap_or_else(|_| t.to_owned())
}

fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A namespace's settings; an unknown or malformed name is an error listing the known ones.
pub fn namespace<'c>(config: &'c Config, name: &str) -> Result<&'c NamespaceConfig> {
    validate_component(name).map_err(|e| Error::Usage(format!("namespace: {e}")))?;
    config.namespaces.get(name).ok_or_else(|| {
        let known: Vec<&str> = config.namespaces.keys().map(String::as_str).collect();
        Error::Usage(format!(
            "unknown namespace `{name}`; known: {} (add [namespaces.{name}] to .tmws/config.toml)",
            known.join(", ")
        ))
    })
}

/// The id of `content` in `namespace`: `m_` and 12 hex digits of blake3(namespace + content).
pub fn memory_id(namespace: &str, content: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(namespace.as_bytes());
    h.update(content.as_bytes());
    format!("m_{}", &h.finalize().to_hex()[..12])
}

/// Adds a memory (DESIGN §2.3): redacted, cut, deduplicated, upserted by key, with the
/// namespace kept within `max_entries`; returns what was stored.
pub fn add(root: &Path, config: &Config, req: &AddRequest, now: DateTime<Utc>) -> Result<AddAnswer> {
    let ns_name = req.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
    let ns = namespace(config, ns_name)?;
    if req.content.trim().is_empty() {
        return Err(Error::Usage("empty content: give the text to remember".into()));
    }
    if let Some(i) = req.importance
        && !(0.0..=1.0).contains(&i)
    {
        return Err(Error::Usage(format!("importance {i} is outside 0..1")));
    }
    let (content, mut redacted) = redact(&req.content);
    let truncated = content.chars().count() > ns.max_content_chars;
    let content: String = if truncated { content.chars().take(ns.max_content_chars).collect() } else { content };
    let summary = match req.summary.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        Some(s) => {
            let (s, n) = redact(s);
            redacted += n;
            cut(&s, ns.max_summary_chars)
        }
        None => cut(&first_sentences(&content), EXTRACTED_SUMMARY_CHARS),
    };
    let id = memory_id(ns_name, &content);
    let at = stamp(now);
    let expires_at = stamp(now + chrono::Duration::days(i64::try_from(ns.ttl_days).unwrap_or(i64::MAX / 86_400_000)));

    let mut log = LockedLog::open(&root.join(log_path(ns_name)), &root.join(lock_path(ns_name)))?;
    let live = fold(&log.read_all()?, &at);
    if let Some(existing) = live.get(&id) {
        return Ok(AddAnswer {
            id,
            namespace: ns_name.to_owned(),
            summary: existing.summary.clone(),
            content_length: content.chars().count(),
            expires_at: normalise(&existing.expires_at),
            deduplicated: true,
            superseded: None,
            truncated,
            redacted,
            evicted: Vec::new(),
        });
    }
    let mut lines = Vec::new();
    let delete = |id: &str| json!({"op": "delete", "id": id, "at": at}).to_string();
    let superseded =
        req.key.as_ref().and_then(|k| live.iter().find(|(_, e)| e.key.as_ref() == Some(k)).map(|(id, _)| id.clone()));
    if let Some(old) = &superseded {
        lines.push(delete(old));
    }
    // Over max_entries: the oldest live entries go.
    let mut oldest: Vec<(&String, &Live)> = live.iter().filter(|(i, _)| Some(*i) != superseded.as_ref()).collect();
    oldest.sort_by(|a, b| a.1.at.cmp(&b.1.at).then(a.1.line.cmp(&b.1.line)));
    let over = (oldest.len() + 1).saturating_sub(ns.max_entries.max(1));
    let evicted: Vec<String> = oldest.iter().take(over).map(|(i, _)| (*i).clone()).collect();
    for old in &evicted {
        lines.push(delete(old));
    }
    let mut entry = Map::new();
    entry.insert("op".into(), json!("add"));
    entry.insert("id".into(), json!(id));
    entry.insert("ns".into(), json!(ns_name));
    entry.insert("at".into(), json!(at));
    entry.insert("expires_at".into(), json!(expires_at));
    entry.insert("kind".into(), json!(req.kind.as_deref().unwrap_or("note")));
    if let Some(k) = &req.key {
        entry.insert("key".into(), json!(k));
    }
    entry.insert("content".into(), json!(content));
    entry.insert("summary".into(), json!(summary));
    entry.insert("tags".into(), json!(req.tags));
    entry.insert("source".into(), json!(req.source.as_deref().unwrap_or("user")));
    if let Some(a) = &req.agent {
        entry.insert("agent".into(), json!(a));
    }
    entry.insert("importance".into(), json!(req.importance.unwrap_or(0.5)));
    if let Some(head) = store::git_head(root) {
        let mut git = Map::new();
        if let Some(b) = head.branch {
            git.insert("branch".into(), json!(b));
        }
        if let Some(c) = head.commit {
            git.insert("commit".into(), json!(c.chars().take(12).collect::<String>()));
        }
        entry.insert("git".into(), Value::Object(git));
    }
    entry.insert("hash".into(), json!(blake3::hash(content.as_bytes()).to_hex().to_string()));
    lines.push(Value::Object(entry).to_string());
    log.append(&lines, config.memory.fsync)?;
    Ok(AddAnswer {
        id,
        namespace: ns_name.to_owned(),
        summary,
        content_length: content.chars().count(),
        expires_at,
        deduplicated: false,
        superseded,
        truncated,
        redacted,
        evicted,
    })
}

/// Whether `text` is shaped like a memory id.
pub fn is_memory_id(text: &str) -> bool {
    let t = text.trim();
    t.len() == 14 && t.starts_with("m_") && t[2..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// One memory as `memory_get` and `memory_search` answer it.
fn entry_value(item: &crate::index::Item, score: Option<u32>, content: bool, preview: bool) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), json!(item.ref_id));
    if let Some(ns) = item.path.strip_prefix(&format!("{}/", layout::MEMORY_DIR)).and_then(|p| p.strip_suffix(".jsonl"))
    {
        m.insert("namespace".into(), json!(ns));
    }
    if let Some(k) = &item.category {
        m.insert("kind".into(), json!(k));
    }
    m.insert("summary".into(), json!(item.description));
    if !item.tags.is_empty() {
        m.insert("tags".into(), json!(item.tags));
    }
    if let Some(s) = score {
        m.insert("score".into(), json!(s));
    }
    if let Some(c) = &item.created {
        m.insert("created_at".into(), json!(c));
    }
    let body = item.body.clone().unwrap_or_default();
    if content {
        m.insert("content".into(), json!(body));
    } else if preview {
        let cut: String = body.chars().take(PREVIEW_CHARS).collect();
        m.insert("content_preview".into(), json!(cut));
    }
    Value::Object(m)
}

/// The live memory with this id (expired ones are gone), if any.
fn find(index: &Index, id: &str) -> Result<Option<crate::index::Item>> {
    let query = ItemQuery { kinds: vec![DocKind::Memory], ref_ids: vec![id.to_owned()], ..ItemQuery::default() };
    let Some(item) = index.items(&query)?.into_iter().next() else { return Ok(None) };
    let now = stamp(Utc::now());
    Ok(item.expires.as_deref().is_none_or(|e| e > now.as_str()).then_some(item))
}

/// `memory_get`: the entry, with its content when asked; an unknown id is `NotFound`-like.
pub fn get(index: &Index, id: &str, include_content: bool) -> Result<Value> {
    match find(index, id.trim())? {
        Some(item) => Ok(entry_value(&item, None, include_content, false)),
        None => Err(Error::NoSuchId(format!("no memory `{}`", id.trim()))),
    }
}

/// `memory_delete`: appends a delete op to the entry's log.
pub fn delete(root: &Path, config: &Config, index: &Index, id: &str) -> Result<Value> {
    let id = id.trim();
    let Some(item) = find(index, id)? else { return Err(Error::NoSuchId(format!("no memory `{id}`"))) };
    let ns = item
        .path
        .strip_prefix(&format!("{}/", layout::MEMORY_DIR))
        .and_then(|p| p.strip_suffix(".jsonl"))
        .ok_or_else(|| Error::Index(format!("memory `{id}` has no log path")))?
        .to_owned();
    let mut log = LockedLog::open(&root.join(log_path(&ns)), &root.join(lock_path(&ns)))?;
    let at = stamp(Utc::now());
    if !fold(&log.read_all()?, &at).contains_key(id) {
        return Err(Error::NoSuchId(format!("no memory `{id}`")));
    }
    log.append(&[json!({"op": "delete", "id": id, "at": at}).to_string()], config.memory.fsync)?;
    Ok(json!({"id": id, "namespace": ns, "deleted": true}))
}

/// `memory_search`'s parameters.
#[derive(Debug, Clone, Default)]
pub struct MemorySearch {
    pub query: String,
    pub namespace: Option<String>,
    pub tags: Vec<String>,
    pub kind: Option<String>,
    pub branch: Option<String>,
    pub limit: Option<usize>,
    pub min_score: Option<f64>,
    pub include_content: bool,
}

/// `memory_search`: BM25 over summary, content and tags; an id finds that entry.
pub fn search(config: &Config, index: &Index, req: &MemorySearch) -> Result<Value> {
    if let Some(ns) = &req.namespace {
        namespace(config, ns)?;
    }
    let limit = req.limit.unwrap_or(config.retrieval.top_k).clamp(1, 100);
    let min_score = req.min_score.unwrap_or(config.retrieval.min_score).clamp(0.0, 1.0);
    if is_memory_id(&req.query) {
        let found = find(index, req.query.trim())?;
        let results: Vec<Value> = found.iter().map(|i| entry_value(i, Some(100), false, req.include_content)).collect();
        return Ok(json!({"found": results.len(), "total": results.len(), "query": req.query, "results": results}));
    }
    let sreq = SearchRequest {
        query: req.query.clone(),
        kinds: vec![DocKind::Memory],
        tags: req.tags.clone(),
        limit,
        namespaces: req.namespace.iter().cloned().collect(),
        categories: req.kind.iter().cloned().collect(),
        branch: req.branch.clone().filter(|b| b != "*"),
        ..SearchRequest::default()
    };
    let found = index.search(&sreq)?;
    let total = found.results.len();
    let results: Vec<Value> = found
        .results
        .iter()
        .filter(|h| f64::from(h.score) / 100.0 >= min_score)
        .map(|h| {
            let item = crate::index::Item {
                ref_id: h.ref_id.clone(),
                kind: h.kind.clone(),
                description: h.summary.clone(),
                tags: h.tags.clone(),
                category: h.category.clone(),
                created: h.created.clone(),
                path: h.namespace.as_deref().map(log_path).unwrap_or_default(),
                body: h.body.clone(),
                ..crate::index::Item::default()
            };
            entry_value(&item, Some(h.score), false, req.include_content)
        })
        .collect();
    Ok(json!({"found": results.len(), "total": total, "query": req.query, "results": results}))
}

/// `memory_stats`: live entries by namespace, and the logs' size and dead lines.
pub fn stats(root: &Path, config: &Config, index: &Index, defaults_redundant: Option<u64>) -> Result<Value> {
    let counts = index.counts()?;
    let now = stamp(Utc::now());
    let mut by_namespace = Map::new();
    let (mut total, mut expired_pending, mut log_bytes, mut dead_lines) = (0u64, 0u64, 0u64, 0u64);
    let mut names: Vec<String> = config.namespaces.keys().cloned().collect();
    for n in counts.namespaces.keys() {
        if !names.contains(n) {
            names.push(n.clone());
        }
    }
    for ns in names {
        let bytes = store::read_opt(&root.join(log_path(&ns)))?.unwrap_or_default();
        let (lines, _) = jsonl::parse(&bytes);
        let live_all = fold(&bytes, "");
        let live = fold(&bytes, &now);
        let n = live.len() as u64;
        expired_pending += (live_all.len() - live.len()) as u64;
        dead_lines += lines.len() as u64 - n;
        log_bytes += bytes.len() as u64;
        total += n;
        by_namespace.insert(ns, json!(n));
    }
    let mut v = json!({
        "total": total,
        "by_namespace": by_namespace,
        "expired_pending": expired_pending,
        "log_bytes": log_bytes,
        "dead_lines": dead_lines,
    });
    if let Some(r) = defaults_redundant {
        v["defaults_redundant"] = json!(r);
    }
    Ok(v)
}
