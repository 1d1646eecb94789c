//! Memories (docs/memory-log.md): add, get, delete, search and stats over the append-only
//! logs `.tmws/memory/{namespace}.jsonl`, as the tools answer them.
//!
//! Writes go to the log through `crate::memory::Writer`, under its lock, with the live
//! entries folded from the log itself (so deduplication, key upserts and eviction see
//! every process's writes); secrets are redacted and content is cut before anything is
//! written, and each op is one line. Reads go through the index, which the sync and the
//! watcher keep in step with the logs.

pub(crate) mod cites;
pub mod links;
pub mod maint;
pub(crate) mod visible;
pub(crate) use visible::tracked_namespaces;

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::api::{MemoryAddRequest, MemoryListRequest, MemorySearchRequest};
use crate::config::{Config, NamespaceConfig};
use crate::error::{Error, Result};
use crate::index::{Index, ItemQuery, Ranking, TextQuery, analyzer};
use crate::layout;
use crate::memory::compact::compact_if_worth_it;
use crate::memory::op::{Author, Git, Kind, Op, Set};
use crate::memory::session::SessionRecord;
use crate::memory::task::TaskRecord;
use crate::memory::{Fold, Writer};
use crate::model::{DocKind, validate_component};
use crate::parse::text::{cut, first_sentences};
use crate::redact::redact;
use crate::store;

/// The namespace of an add that names none.
pub const DEFAULT_NAMESPACE: &str = "short-term";
/// An extracted summary is at most this long (docs/memory-log.md).
const EXTRACTED_SUMMARY_CHARS: usize = 280;
/// `include_content` previews are this long (docs/tools.md).
pub const PREVIEW_CHARS: usize = 1200;

/// An add: what `memory_add` asks for, and the fields of the op that only tmws writes:
/// `author` (how the add came, `{surface, client}`); other keys are not fields of an op
/// and are left out.
#[derive(Debug, Clone)]
pub(crate) struct Add<'a> {
    pub req: &'a MemoryAddRequest,
    pub extra: Map<String, Value>,
}

/// `memory_add`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct AddAnswer {
    /// The memory's id (`m_` and 12 hex digits): what memory_get, memory_delete and workspace_read
    /// take.
    pub id: String,
    /// The namespace it was written to.
    pub namespace: String,
    /// Its one-line summary.
    pub summary: String,
    /// The stored content's length in characters.
    pub content_length: usize,
    /// When it expires (RFC 3339); empty for a namespace that keeps entries for ever.
    pub expires_at: String,
    /// Whether the same content was there already: that memory is kept, and `updated` names what
    /// this add changed in it.
    pub deduplicated: bool,
    /// The fields of the existing entry a deduplicated add changed (`tags`, `kind`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub updated: Vec<String>,
    /// The memory with the same `key` that this one replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded: Option<String>,
    /// Whether the content was cut to the namespace's limit.
    pub truncated: bool,
    /// How many secrets were replaced by marks before writing.
    pub redacted: usize,
    /// Entries evicted to stay within the namespace's `max_entries`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evicted: Vec<String>,
    /// Live memories this close in meaning to the new one (`review.duplicate_similarity`):
    /// perhaps the same thing said again, to update or delete instead.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub similar_to: Vec<String>,
    /// Whether it was stored as a proposal (`[review] agents = "propose"`, docs/review.md): no
    /// answer shows it until a person approves it with `tmws review approve`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub proposed: bool,
    /// The new memory's vector of meaning, to find `similar_to` with.
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) meaning: Option<std::sync::Arc<crate::index::meaning::QueryMeaning>>,
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

/// Adds a memory (docs/memory-log.md): redacted, cut, deduplicated, upserted by key, with the
/// namespace kept within `max_entries`; returns what was stored.
pub(crate) fn add(root: &Path, config: &Config, add: &Add<'_>, now: DateTime<Utc>) -> Result<AddAnswer> {
    let author = add.extra.get("author").and_then(|a| Author::deserialize(a).ok());
    add_entry(root, config, add.req, (author, None, None), now)
}

/// [`add`] with the fields only tmws writes as they are: how the add came, and a session
/// or a task entry's record.
pub(crate) fn add_entry(
    root: &Path,
    config: &Config,
    req: &MemoryAddRequest,
    (author, session, task): (Option<Author>, Option<SessionRecord>, Option<TaskRecord>),
    now: DateTime<Utc>,
) -> Result<AddAnswer> {
    // Problems and their solutions are kept for the next agent that meets them.
    let ns_name =
        req.namespace.as_deref().unwrap_or(if req.problem.is_some() { "long-term" } else { DEFAULT_NAMESPACE });
    let ns = namespace(config, ns_name)?;
    // Citations are made whole before anything is written: one that names no file, or one
    // outside the root, fails the add. The files a problem names are cited whole.
    let mut cites = cites::resolve(root, &req.cites)?;
    if req.problem.as_deref().is_some_and(|p| !p.trim().is_empty()) {
        cites = cites::with_files(root, &req.files, cites)?;
    }
    // Every string of the entry is redacted before anything else looks at it: the key
    // that an upsert matches is the key as it is stored.
    let mut redacted = 0;
    let mut clean = |text: &str| {
        let r = redact(text);
        redacted += r.count;
        r.text
    };
    let problem = problem_fields(req, &mut clean);
    let content = match &problem {
        Some(p) if req.content.trim().is_empty() => p.as_content(),
        _ => clean(&req.content),
    };
    let summary = req.summary.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(&mut clean);
    let key = req.key.as_deref().map(&mut clean);
    let kind = if problem.is_some() { PROBLEM_KIND.to_owned() } else { clean(req.kind.as_deref().unwrap_or("note")) };
    let source = clean(req.source.as_deref().unwrap_or("user"));
    let agent = req.agent.as_deref().map(&mut clean);
    let tags: Vec<String> = req.tags.iter().map(|t| clean(t)).collect();
    let truncated = content.chars().count() > ns.max_content_chars;
    let mut content: String = if truncated { content.chars().take(ns.max_content_chars).collect() } else { content };
    let summary = match summary {
        Some(s) => cut(&s, ns.max_summary_chars),
        None => cut(&first_sentences(&content), EXTRACTED_SUMMARY_CHARS),
    };
    // The summary is derived text: extracting it unescapes and joins what the content
    // holds (`postgres:\/\/…` becomes `postgres://…`, emphasis and line breaks go), which
    // can make a secret whole that the content's redaction did not see. It is redacted as
    // it will be stored, and a copy of what it gave away that the content still holds as
    // it is goes too.
    let summary = {
        let r = redact(&summary);
        if r.count > 0 {
            for f in crate::redact::find(&summary) {
                let secret = &summary[f.start..f.end];
                if content.contains(secret) {
                    content = content.replace(secret, &crate::redact::mark(f.rule));
                }
            }
        }
        redacted += r.count;
        r.text
    };
    let id = memory_id(ns_name, &content);
    // The config caps ttl_days at 100 years; a TTL past what a time can hold still never
    // panics: it expires at the latest time there is.
    let ttl = chrono::TimeDelta::try_days(i64::try_from(ns.ttl_days).unwrap_or(i64::MAX));
    let expires_at = stamp(ttl.and_then(|t| now.checked_add_signed(t)).unwrap_or(DateTime::<Utc>::MAX_UTC));

    let mut writer = Writer::open(root, ns_name)?;
    let fold = &writer.fold;
    // Never earlier than the log's last op: a writer that waited for the lock behind
    // others (in this process or another) must not write a time that goes back, which
    // readers take for a line a merge brought and answer by reading the whole log again.
    let at = stamp(now).max(fold.max_at.clone());
    if let Some(existing) = fold.live.get(&id).filter(|e| !e.expired(&at)) {
        // The same content again: stored once, with the tags and the kind this add brings
        // merged into the entry by one `update` op.
        let mut set = Set::default();
        let mut updated = Vec::new();
        let mut merged = existing.tags.clone();
        for t in &tags {
            if !merged.contains(t) {
                merged.push(t.clone());
            }
        }
        if merged != existing.tags {
            set.tags = Some(merged);
            updated.push("tags".to_owned());
        }
        if (req.kind.is_some() || problem.is_some()) && existing.kind.as_deref() != Some(kind.as_str()) {
            set.kind = Some(kind);
            updated.push("kind".to_owned());
        }
        // Citations given again are taken as they are now, when they differ from those it
        // holds: a new commit or hash says the content was checked against the code again.
        if !cites.is_empty() && existing.cites.as_ref() != Some(&cites) {
            set.cites = Some(cites);
            updated.push("cites".to_owned());
        }
        let answer = AddAnswer {
            id: id.clone(),
            namespace: ns_name.to_owned(),
            summary: existing.summary.clone(),
            content_length: content.chars().count(),
            expires_at: existing.expires_at.clone().unwrap_or_default(),
            deduplicated: true,
            updated,
            superseded: None,
            truncated,
            redacted,
            evicted: Vec::new(),
            similar_to: Vec::new(),
            proposed: existing.proposed,
            meaning: None,
        };
        if !answer.updated.is_empty() {
            let mut update = Op::new(Kind::Update, id);
            update.at = Some(existing.at.as_str().max(at.as_str()).to_owned());
            update.author = author;
            update.set = Some(Box::new(set));
            writer.append(&[update], config.memory.fsync)?;
        }
        return Ok(answer);
    }
    let mut ops = Vec::new();
    // An agent's proposal supersedes nothing until it is approved: the approval does.
    // A session's record is tmws' own account of what the session did, not an agent's
    // claim: it is never held back.
    let proposed =
        session.is_none() && config.review.proposes(author.as_ref().map(|a| a.surface.as_str()), Some(ns_name));
    let superseded =
        if proposed { None } else { key.as_deref().and_then(|k| fold.by_key(k, &at)).map(|(id, _)| id.clone()) };
    // What an add deletes (the memory it supersedes, those evicted to make room) is
    // deleted by whoever wrote it.
    let deleted = |old: &String| {
        let mut tomb = fold.tombstone(old, &at);
        tomb.author.clone_from(&author);
        tomb
    };
    if let Some(old) = &superseded {
        ops.push(deleted(old));
    }
    // Over max_entries: the oldest live entries go. (Expired entries count in `live.len()`,
    // so when it is within the limit there is nothing to look at.)
    let limit = ns.max_entries.max(1);
    let mut evicted: Vec<String> = Vec::new();
    if fold.live.len() + 1 > limit {
        let mut oldest: Vec<(&String, &crate::memory::Entry)> =
            fold.live_at(&at).filter(|(i, _)| Some(*i) != superseded.as_ref()).collect();
        oldest.sort_by(|a, b| a.1.at.cmp(&b.1.at).then(a.1.line.cmp(&b.1.line)));
        let over = (oldest.len() + 1).saturating_sub(limit);
        evicted = oldest.iter().take(over).map(|(i, _)| (*i).clone()).collect();
    }
    ops.extend(evicted.iter().map(deleted));
    let mut entry = Op::new(Kind::Add, id.clone());
    entry.ns = Some(ns_name.to_owned());
    entry.at = Some(at.clone());
    entry.expires_at = Some(expires_at);
    entry.kind = Some(kind);
    entry.key = key;
    entry.summary = Some(summary);
    entry.tags = Some(tags);
    entry.source = Some(source);
    entry.agent = agent;
    entry.importance = Some(req.importance.unwrap_or(0.5));
    entry.git = store::git_head(root)
        .map(|head| Git { branch: head.branch, commit: head.commit.map(|c| c.chars().take(12).collect()) });
    entry.session = session;
    entry.task = task;
    entry.author = author;
    entry.review = proposed.then(|| crate::memory::op::PROPOSED.to_owned());
    entry.cites = (!cites.is_empty()).then_some(cites);
    if let Some(p) = problem {
        entry.problem = Some(p.problem);
        entry.solution = p.solution;
        entry.outcome = Some(p.outcome);
        entry.files = (!p.files.is_empty()).then_some(p.files);
    }
    // Every field but the content (redacted above, and hashed as it is) is redacted once
    // more as it is written, the ones derived here (the summary, the branch) and those
    // tmws fills in (the author, a session's record) included: what the log holds is what
    // was redacted, and the answer is made from it.
    let (mut entry, count) = redacted_but_content(&entry)?;
    redacted += count;
    entry.hash = Some(blake3::hash(content.as_bytes()).to_hex().to_string());
    let content_length = content.chars().count();
    entry.content = Some(content);
    // What a new memory may repeat is looked for by `memory_add`; a session's record
    // (written as a server stops, within the moments a client gives it) needs none. The
    // text is the one the index embeds, so that an encoder's work is done once.
    let meaning = if entry.session.is_some() {
        None
    } else {
        crate::index::meaning::makers_for(root, config).and_then(|m| {
            let text = crate::index::memlog::meaning_text(&entry).unwrap_or_else(|| {
                let summary = entry.summary.as_deref().unwrap_or("");
                crate::index::meaning::item_text(summary, "", entry.content.as_deref().unwrap_or(""))
            });
            crate::index::meaning::text_meaning(m, &text)
        })
    };
    let (summary, expires_at) =
        (entry.summary.clone().unwrap_or_default(), entry.expires_at.clone().unwrap_or_default());
    ops.push(entry);
    writer.append(&ops, config.memory.fsync)?;
    compact_if_worth_it(&mut writer, config.memory.compact_garbage_ratio, &at)?;
    Ok(AddAnswer {
        id,
        namespace: ns_name.to_owned(),
        summary,
        content_length,
        expires_at,
        deduplicated: false,
        updated: Vec::new(),
        superseded,
        truncated,
        redacted,
        evicted,
        similar_to: Vec::new(),
        proposed,
        meaning,
    })
}

/// `op` with every string of every field but the content redacted, and how many secrets
/// that took out. An op that cannot be read back once redacted is never written.
fn redacted_but_content(op: &Op) -> Result<(Op, usize)> {
    let failed = |e| Error::environment("a memory could not be redacted, so it was not written", e);
    let Value::Object(mut fields) = serde_json::to_value(op).map_err(failed)? else {
        return Err(Error::Environment("a memory could not be redacted, so it was not written".into()));
    };
    let mut count = 0;
    for (k, v) in &mut fields {
        if k != "content" {
            count += crate::redact::redact_value(v);
        }
    }
    Ok((serde_json::from_value(Value::Object(fields)).map_err(failed)?, count))
}

/// The kind of a problem entry (docs/memory-log.md#problems).
pub const PROBLEM_KIND: &str = "problem";

/// A problem and its solution (docs/memory-log.md#problems): the structured fields of a `kind:
/// problem` entry, as the log holds them (`problem`, `solution`, `outcome`, `files`) and answers
/// show them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Problem {
    /// The problem met.
    pub problem: String,
    /// How it was solved or worked around.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub solution: Option<String>,
    /// `solved`, `workaround` or `open` (`open` when the add said none).
    pub outcome: String,
    /// The files it concerns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}

impl Problem {
    /// The content of a problem added without one.
    fn as_content(&self) -> String {
        let mut text = format!("Problem: {}", self.problem.trim());
        if let Some(s) = &self.solution {
            text.push_str("\n\nSolution: ");
            text.push_str(s.trim());
        }
        text
    }

    /// The problem of a log record or an index item's stored fields, if it holds one.
    pub fn of(fields: &Map<String, Value>) -> Option<Problem> {
        let text = |k: &str| fields.get(k).and_then(Value::as_str).map(str::to_owned);
        let problem = text("problem").filter(|p| !p.trim().is_empty())?;
        Some(Problem {
            problem,
            solution: text("solution").filter(|s| !s.trim().is_empty()),
            outcome: text("outcome").unwrap_or_else(|| "open".into()),
            files: fields
                .get("files")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default(),
        })
    }
}

/// The problem an add names, redacted by `clean`.
fn problem_fields(req: &MemoryAddRequest, clean: &mut impl FnMut(&str) -> String) -> Option<Problem> {
    let problem = req.problem.as_deref().map(str::trim).filter(|p| !p.is_empty())?;
    let solution = req.solution.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(&mut *clean);
    let outcome = req.outcome.as_deref().unwrap_or(if solution.is_some() { "solved" } else { "open" });
    Some(Problem {
        problem: clean(problem),
        solution,
        outcome: outcome.to_owned(),
        files: req.files.iter().map(|f| clean(f.trim())).filter(|f| !f.is_empty()).collect(),
    })
}

/// Whether `text` is shaped like a memory id.
pub fn is_memory_id(text: &str) -> bool {
    let t = text.trim();
    t.len() == 14 && t.starts_with("m_") && t[2..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// One memory as `memory_get` and `memory_search` answer it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MemoryHit {
    /// The memory's id.
    pub id: String,
    /// Its namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its kind as added (`note`, `session`, `problem`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Its one-line summary.
    pub summary: String,
    /// Its tags.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// 0–100, relative to the best result (search answers only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<u32>,
    /// The query's words it holds (search answers only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub matched: Vec<String>,
    /// `meaning` when it holds none of the query's words and was found by its meaning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// When it was written (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// Who wrote it, how far its writer is trusted and how it was written.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub from: Option<Provenance>,
    /// The whole content (`memory_get` with `include_content`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The first 1,200 characters (`memory_search` with `include_content`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_preview: Option<String>,
    /// When it expires (`memory_get`; none for a namespace that keeps entries for ever).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// Its importance as written, 0 to 1 (`memory_get`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub importance: Option<f64>,
    /// Its upsert key (`memory_get`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The git branch it was written on (`memory_get`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The code it cites, as written: `src/pool.rs:120-140@abc1234` (`memory_get`;
    /// docs/memory-log.md#citations).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cites: Vec<String>,
    /// The files whose cited code changed or is gone since it was written: it may no
    /// longer be true (docs/citations.md). (`stale` says the index may be behind.)
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stale_cites: Vec<String>,
    /// The commit that introduced the entry, once it is committed
    /// (docs/memory-log.md#commit-links).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub introduced_in: Option<links::IntroducedIn>,
    /// A problem's `problem`, `solution`, `outcome` and `files`.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub problem: Option<Problem>,
    /// The index may be behind the files (`memory_get`), as the other memory tools say.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
    /// A proposal waiting for a person's review (`memory_get` of its id): no other answer
    /// shows it until it is approved (docs/review.md).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub proposed: bool,
}

/// Where a memory's text came from (docs/trust-boundary.md): recalled text is data, never
/// instructions, so every answer that carries it says whose it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Provenance {
    /// Its writer: the agent it names (`human`: the person at the command line), or
    /// `unknown` when it names none.
    pub author: String,
    /// The writer's trust, 0 to 1 (0.5 for a writer nobody verified; 1 for `human`).
    pub trust: f64,
    /// How it was written: through tmws' `cli`, `mcp` or `http`; `file` when written into
    /// the log some other way (by hand, or by a tmws older than this record).
    pub source: String,
}

/// The author of a memory that names no agent.
pub const UNKNOWN_AUTHOR: &str = "unknown";

impl Provenance {
    /// The provenance of a memory written by `agent` through `surface`, with the writers'
    /// trust of [`super::trust::ranking_scores`].
    pub fn of(agent: Option<&str>, surface: Option<&str>, trust: &BTreeMap<String, f64>) -> Provenance {
        let agent = agent.map(str::trim).filter(|a| !a.is_empty());
        Provenance {
            author: agent.unwrap_or(UNKNOWN_AUTHOR).to_owned(),
            trust: super::trust::of(trust, agent),
            source: surface.unwrap_or("file").to_owned(),
        }
    }

    /// The provenance of an index item (a memory).
    pub fn of_item(item: &crate::index::Item, trust: &BTreeMap<String, f64>) -> Provenance {
        let surface = item.meta.as_ref().and_then(|m| m.get("surface")).and_then(Value::as_str);
        Provenance::of(item.agent.as_deref(), surface, trust)
    }

    /// The provenance of a search hit (a memory).
    pub fn of_hit(hit: &crate::index::SearchHit, trust: &BTreeMap<String, f64>) -> Provenance {
        Provenance::of(hit.agent.as_deref(), hit.surface.as_deref(), trust)
    }
}

impl MemoryHit {
    fn of_item(item: &crate::index::Item, content: bool, preview: bool, trust: &BTreeMap<String, f64>) -> MemoryHit {
        MemoryHit {
            from: Some(Provenance::of_item(item, trust)),
            id: item.ref_id.clone(),
            namespace: layout::memory_namespace(&item.path).map(str::to_owned),
            kind: item.category.clone(),
            summary: item.description.clone(),
            tags: item.tags.clone(),
            score: None,
            created_at: item.created.clone(),
            content: content.then(|| item.body.clone().unwrap_or_default()),
            content_preview: preview
                .then(|| item.body.as_deref().unwrap_or_default().chars().take(PREVIEW_CHARS).collect()),
            problem: item.meta.as_ref().and_then(Problem::of),
            ..MemoryHit::default()
        }
    }

    fn of_hit(hit: &crate::index::SearchHit, preview: bool, trust: &BTreeMap<String, f64>) -> MemoryHit {
        MemoryHit {
            from: Some(Provenance::of_hit(hit, trust)),
            id: hit.ref_id.clone(),
            namespace: hit.namespace.clone(),
            kind: hit.category.clone(),
            summary: hit.summary.clone(),
            tags: hit.tags.clone(),
            score: Some(hit.score),
            matched: hit.matched.clone(),
            why: hit.why.clone(),
            created_at: hit.created.clone(),
            content: None,
            content_preview: preview
                .then(|| hit.body.as_deref().unwrap_or_default().chars().take(PREVIEW_CHARS).collect()),
            ..MemoryHit::default()
        }
    }
}

/// `memory_search`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MemorySearchAnswer {
    /// Results shown (those over `min_score`).
    pub found: usize,
    /// Results before `min_score` was applied.
    pub total: usize,
    /// The words asked.
    pub query: String,
    /// The memories found, best first.
    pub results: Vec<MemoryHit>,
    /// The index may be behind the logs.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
}

/// `memory_delete`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Deleted {
    /// The memory's id.
    pub id: String,
    /// Its namespace.
    pub namespace: String,
    /// Whether it was forgotten.
    pub deleted: bool,
    /// The index may be behind the files: the memory was looked up in it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
}

/// `memory_stats`' answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Stats {
    /// Live entries.
    pub total: u64,
    /// Live entries per namespace.
    pub by_namespace: std::collections::BTreeMap<String, u64>,
    /// Expired entries the next cleanup removes.
    pub expired_pending: u64,
    /// The logs' size in bytes.
    pub log_bytes: u64,
    /// Log lines that no longer count (replaced, deleted or expired), which a cleanup compacts
    /// away.
    pub dead_lines: u64,
    /// How often sessions of this server asked again for context defaults they had.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defaults_redundant: Option<u64>,
    /// The last memory upkeep (docs/memory-log.md#upkeep): when it ran and what it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upkeep: Option<super::upkeep::UpkeepRun>,
}

/// The live memory with this id (expired ones are gone), if any.
pub(crate) fn find(index: &Index, id: &str) -> Result<Option<crate::index::Item>> {
    let query = ItemQuery { kinds: vec![DocKind::Memory], ref_ids: vec![id.to_owned()], ..ItemQuery::default() };
    let Some(item) = index.items(&query)?.into_iter().next() else { return Ok(None) };
    let now = stamp(Utc::now());
    Ok(item.expires.as_deref().is_none_or(|e| e > now.as_str()).then_some(item))
}

/// `memory_get`: the entry, with its content when asked; an unknown id is not found.
/// Each read counts towards the entry's current importance (docs/ranking.md).
pub(crate) fn get(root: &Path, index: &Index, id: &str, include_content: bool) -> Result<MemoryHit> {
    match find(index, id.trim())? {
        Some(item) => {
            maint::count_access(root, &item.ref_id);
            let introduced_in = links::current(root).of(&item.ref_id).cloned();
            Ok(MemoryHit {
                introduced_in,
                expires_at: item.expires.clone(),
                importance: item.importance,
                key: item.key.clone(),
                branch: item.branch.clone(),
                cites: cites_of(item.meta.as_ref()),
                stale_cites: crate::query::cites::stale_paths(
                    &mut crate::query::cites::Checker::new(root),
                    &crate::query::cites::of_meta(item.meta.as_ref()),
                ),
                ..MemoryHit::of_item(&item, include_content, false, &super::trust::ranking_scores(root))
            })
        }
        None => Err(Error::NotFound(format!("no memory `{}`", id.trim()))),
    }
}

/// The citations an item's meta keeps, as written.
fn cites_of(meta: Option<&Map<String, Value>>) -> Vec<String> {
    crate::query::cites::of_meta(meta).iter().map(crate::memory::cite::Cite::to_text).collect()
}

/// `memory_delete`: appends a delete op to the entry's log.
/// `author`: who deletes it, as the session's surface says (filled by tmws).
pub(crate) fn delete(root: &Path, config: &Config, index: &Index, id: &str, author: Option<Author>) -> Result<Deleted> {
    let id = id.trim();
    let Some(item) = find(index, id)? else { return Err(Error::NotFound(format!("no memory `{id}`"))) };
    let ns =
        layout::memory_namespace(&item.path).ok_or_else(|| Error::Index(format!("memory `{id}` has no log path")))?;
    let mut writer = Writer::open(root, ns)?;
    let at = stamp(Utc::now());
    if writer.fold.live.get(id).is_none_or(|e| e.expired(&at)) {
        return Err(Error::NotFound(format!("no memory `{id}`")));
    }
    let mut tombstone = writer.fold.tombstone(id, &at);
    tombstone.author = author;
    writer.append(&[tombstone], config.memory.fsync)?;
    compact_if_worth_it(&mut writer, config.memory.compact_garbage_ratio, &at)?;
    Ok(Deleted { id: id.to_owned(), namespace: ns.to_owned(), deleted: true, stale: false })
}

/// What ranks memories beyond their text, as of now.
pub(crate) fn ranking(root: &Path, config: &Config) -> Ranking {
    Ranking {
        now: Utc::now().timestamp(),
        half_life_days: config.namespaces.iter().map(|(n, c)| (n.clone(), c.half_life_days)).collect(),
        trust: super::trust::ranking_scores(root),
        access: maint::accesses(root),
    }
}

/// `memory_search`: BM25 over summary, content and tags, times current importance and
/// the writer's trust (docs/ranking.md); an id finds that entry.
pub(crate) fn search(
    root: &Path,
    config: &Config,
    index: &Index,
    req: &MemorySearchRequest,
) -> Result<MemorySearchAnswer> {
    if let Some(ns) = &req.namespace {
        namespace(config, ns)?;
    }
    let limit = req.limit_or(config) as usize;
    let min_score = req.min_score_or(config);
    if req.query.trim().is_empty() {
        return Err(Error::Usage("empty query: give some words to search for".into())
            .with_hint("to see what was remembered lately, use memory_list (`tmws memory list`)"));
    }
    let ranking = ranking(root, config);
    let trust = ranking.trust.clone();
    if is_memory_id(&req.query) {
        let found = find(index, req.query.trim())?;
        let links = links::current(root);
        let results: Vec<MemoryHit> = found
            .iter()
            .map(|i| MemoryHit {
                score: Some(100),
                matched: vec![i.ref_id.clone()],
                introduced_in: links.of(&i.ref_id).cloned(),
                ..MemoryHit::of_item(i, false, req.include_content, &trust)
            })
            .collect();
        return Ok(MemorySearchAnswer {
            found: results.len(),
            total: results.len(),
            query: req.query.clone(),
            results,
            stale: false,
        });
    }
    let visible = visible::visible(root, index, req.branch.as_deref())?;
    let query = TextQuery {
        query: without_filler(&req.query),
        kinds: vec![DocKind::Memory],
        tags: req.tags.clone(),
        limit,
        namespaces: req.namespace.iter().cloned().collect(),
        categories: req.kind.iter().cloned().collect(),
        visible,
        ranking: Some(ranking),
        meaning: crate::index::meaning::query_meaning(root, config, &req.query),
        ..TextQuery::default()
    };
    let found = index.search(&query)?;
    let total = found.results.len();
    let links = links::current(root);
    let results: Vec<MemoryHit> = found
        .results
        .iter()
        .filter(|h| f64::from(h.score) / 100.0 >= min_score)
        .map(|h| MemoryHit {
            introduced_in: links.of(&h.ref_id).cloned(),
            ..MemoryHit::of_hit(h, req.include_content, &trust)
        })
        .collect();
    let results = with_problems_and_staleness(root, config, index, results)?;
    Ok(MemorySearchAnswer { found: results.len(), total, query: req.query.clone(), results, stale: false })
}

/// `query` without its filler words (`what did we decide about the cache` searches
/// `decide cache`), as `recall` leaves them out of a task: they are in nearly every memory,
/// and each would score those that hold it. Kept inside double quotes (a phrase is exact),
/// and the query is kept whole when it is nothing but filler words or one token (an id, a
/// path, an identifier).
fn without_filler(query: &str) -> String {
    if query.split_whitespace().count() < 2 {
        return query.to_owned();
    }
    let quotes = query.matches('"').count();
    let mut kept: Vec<String> = Vec::new();
    for (i, part) in query.split('"').enumerate() {
        // Inside quotes: a phrase, whose words all count (an unmatched quote opens none).
        if i % 2 == 1 && quotes > i {
            kept.push(format!("\"{part}\""));
            continue;
        }
        let words = part.split_whitespace();
        kept.extend(
            words.filter(|w| !analyzer::is_filler(w.trim_matches(|c: char| !c.is_alphanumeric()))).map(str::to_owned),
        );
    }
    if kept.is_empty() { query.to_owned() } else { kept.join(" ") }
}

/// Search hits with the fields of the problems among them (the index keeps them stored,
/// not in the hit).
/// `hits` with their problems' fields, and their stale citations (docs/citations.md): a
/// stale hit's score is multiplied by `retrieval.stale_factor`, and the hits ordered again
/// (stably: equal scores keep their order).
fn with_problems_and_staleness(
    root: &Path,
    config: &Config,
    index: &Index,
    mut hits: Vec<MemoryHit>,
) -> Result<Vec<MemoryHit>> {
    let ids: Vec<String> = hits.iter().map(|h| h.id.clone()).collect();
    let metas = metas_of(index, ids)?;
    let mut checker: Option<crate::query::cites::Checker> = None;
    for h in &mut hits {
        let Some(meta) = metas.get(&h.id) else { continue };
        if h.kind.as_deref() == Some(PROBLEM_KIND) {
            h.problem = Problem::of(meta);
        }
        let cites = crate::query::cites::of_meta(Some(meta));
        if !cites.is_empty() {
            let checker = checker.get_or_insert_with(|| crate::query::cites::Checker::new(root));
            h.stale_cites = crate::query::cites::stale_paths(checker, &cites);
            if !h.stale_cites.is_empty() {
                h.score = h.score.map(|s| (f64::from(s) * config.retrieval.stale_factor).round() as u32);
            }
        }
    }
    hits.sort_by_key(|h| std::cmp::Reverse(h.score));
    Ok(hits)
}

/// The stored meta of these memories, by id (those that have one).
pub(crate) fn metas_of(index: &Index, ids: Vec<String>) -> Result<BTreeMap<String, Map<String, Value>>> {
    metas_of_kinds(index, vec![DocKind::Memory], ids)
}

/// The stored meta of these items of these kinds, by refId (those that have one).
pub(crate) fn metas_of_kinds(
    index: &Index,
    kinds: Vec<DocKind>,
    ids: Vec<String>,
) -> Result<BTreeMap<String, Map<String, Value>>> {
    if ids.is_empty() {
        return Ok(BTreeMap::new());
    }
    let query = ItemQuery { kinds, ref_ids: ids, ..ItemQuery::default() };
    Ok(index.items(&query)?.into_iter().filter_map(|i| Some((i.ref_id.clone(), i.meta?))).collect())
}

/// The problem fields of these memories, by id (those that hold a problem).
pub(crate) fn problems_of(index: &Index, ids: Vec<String>) -> Result<BTreeMap<String, Problem>> {
    if ids.is_empty() {
        return Ok(BTreeMap::new());
    }
    let query = ItemQuery { kinds: vec![DocKind::Memory], ref_ids: ids, ..ItemQuery::default() };
    Ok(index
        .items(&query)?
        .into_iter()
        .filter_map(|i| i.meta.as_ref().and_then(Problem::of).map(|p| (i.ref_id.clone(), p)))
        .collect())
}

/// The memories visible on the checked-out branch (docs/memory-log.md).
pub(crate) fn visible_on_branch(root: &Path, index: &Index) -> Result<Option<crate::index::search::Visible>> {
    visible::visible(root, index, None)
}

/// `memory_list`'s answer: what was remembered lately.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MemoryListAnswer {
    /// How many memories the filters leave (the results are the newest of them).
    pub total: usize,
    /// The newest of them, newest first.
    pub results: Vec<MemoryHit>,
    /// The index may be behind the logs.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
}

/// `memory_list`: the newest memories the filters leave, as memory_search shows them
/// (visible on this branch, never expired).
pub(crate) fn list(root: &Path, config: &Config, index: &Index, req: &MemoryListRequest) -> Result<MemoryListAnswer> {
    if let Some(ns) = &req.namespace {
        namespace(config, ns)?;
    }
    let since = req.since.as_deref().map(|s| since(s, Utc::now())).transpose()?;
    let query = TextQuery {
        tags: req.tags.clone(),
        limit: req.limit as usize,
        namespaces: req.namespace.iter().cloned().collect(),
        categories: req.kind.iter().cloned().collect(),
        visible: visible::visible(root, index, req.branch.as_deref())?,
        ..TextQuery::default()
    };
    let (total, items) = index.latest_memories(&query, since)?;
    let links = links::current(root);
    let trust = super::trust::ranking_scores(root);
    let results = items
        .iter()
        .map(|i| MemoryHit {
            introduced_in: links.of(&i.ref_id).cloned(),
            ..MemoryHit::of_item(i, false, false, &trust)
        })
        .collect();
    Ok(MemoryListAnswer { total, results, stale: false })
}

/// `since` as seconds since the epoch: a date, an RFC 3339 time, or a span back from `now`.
fn since(text: &str, now: DateTime<Utc>) -> Result<i64> {
    let t = text.trim();
    let span = t.strip_suffix(['m', 'h', 'd', 'w']).and_then(|n| n.parse::<i64>().ok()).and_then(|n| {
        let unit = match t.as_bytes().last() {
            Some(b'm') => 60,
            Some(b'h') => 3_600,
            Some(b'd') => 86_400,
            _ => 7 * 86_400,
        };
        n.checked_mul(unit)
    });
    if let Some(secs) = span {
        return Ok(now.timestamp().saturating_sub(secs));
    }
    if let Ok(date) = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return Ok(date.and_time(chrono::NaiveTime::MIN).and_utc().timestamp());
    }
    chrono::DateTime::parse_from_rfc3339(t).map(|d| d.timestamp()).map_err(|_| {
        Error::Usage(format!(
            "since: `{}` is not a date (2026-11-01), a time (2026-11-01T09:00:00Z) or a span back from now (30m, 12h, \
7d, 2w)",
            crate::query::api::preview(t)
        ))
    })
}

/// The namespaces to look at: the configured ones and any with a log on disk.
pub(crate) fn namespaces(root: &Path, config: &Config) -> Result<Vec<String>> {
    let mut names: Vec<String> = config.namespaces.keys().cloned().collect();
    let dir = root.join(layout::MEMORY_DIR);
    if store::is_dir_in(root, &dir) {
        for file in store::list_dir(root, &dir)? {
            if let Some(n) = file.strip_suffix(".jsonl")
                && validate_component(n).is_ok()
                && !names.iter().any(|k| k == n)
            {
                names.push(n.to_owned());
            }
        }
    }
    Ok(names)
}

/// `memory_stats`: live entries by namespace, and the logs' size and dead lines.
pub(crate) fn stats(root: &Path, config: &Config) -> Result<Stats> {
    let now = stamp(Utc::now());
    let mut out = Stats::default();
    for ns in namespaces(root, config)? {
        let bytes = store::read_opt(root, &root.join(layout::memory_log(&ns)), store::cap::LOG)?.unwrap_or_default();
        let fold = Fold::of(&bytes, false);
        let n = fold.live_at(&now).count() as u64;
        out.expired_pending += fold.live.len() as u64 - n;
        out.dead_lines += fold.dead_lines(&now) as u64;
        out.log_bytes += bytes.len() as u64;
        out.total += n;
        out.by_namespace.insert(ns, n);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_search_leaves_out_filler_words_but_in_phrases_and_lone_queries() {
        assert_eq!(without_filler("what did we decide about the cache"), "decide cache");
        assert_eq!(without_filler("What is \"the cache\" for?"), "\"the cache\"");
        assert_eq!(without_filler("what did we"), "what did we");
        assert_eq!(without_filler("the"), "the");
        assert_eq!(without_filler("unbalanced \"the quote"), "unbalanced quote");
    }

    #[test]
    fn threads_of_one_process_adding_at_once_write_every_entry_with_times_that_never_go_back() {
        let root = tempfile::tempdir().unwrap();
        let config = Config::default();
        let (threads, each) = (8, 25);
        // Times handed in out of order, as threads that waited for their turn carry them.
        let base = Utc::now();
        std::thread::scope(|s| {
            for t in 0..threads {
                let (root, config) = (root.path(), &config);
                s.spawn(move || {
                    for i in 0..each {
                        let req = MemoryAddRequest { content: format!("thread {t} note {i}"), ..Default::default() };
                        let now = base - chrono::Duration::seconds(i64::from(t * 60));
                        add(root, config, &Add { req: &req, extra: Map::new() }, now).unwrap();
                    }
                });
            }
        });
        let log = std::fs::read_to_string(root.path().join(layout::memory_log(DEFAULT_NAMESPACE))).unwrap();
        let ops: Vec<Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(ops.len(), (threads * each) as usize);
        let times: Vec<&str> = ops.iter().map(|o| o["at"].as_str().unwrap()).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    }
}
