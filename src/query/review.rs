//! Review of what agents write (docs/review.md): the proposals waiting for a person, and
//! the two things a person does with one.
//!
//! Under `[review] agents = "propose"`, a long-term memory or a workspace entry an agent
//! writes (through MCP, HTTP or a hook) is stored like any other, so git shows it in a
//! diff, but marked as a proposal (`review: proposed` on the memory's `add`, or in the
//! entry's front-matter) and left out of every answer. [`list`] finds them all, with who
//! wrote them, when, and the live memories they may repeat; [`approve`] makes them live (a
//! `review` op for a memory, which may supersede older memories in the same append; the
//! front-matter key taken out for an entry); [`reject`] deletes them (a `review` op and a
//! `delete` for a memory; the file for an entry, which git can give back).
//!
//! These are the one library API for every surface: the `review_list` tool, `tmws review`
//! and the web view all call them.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use chrono::{SecondsFormat, Utc};
use serde::Serialize;

use super::Engine;
use crate::error::{Error, Result};
use crate::layout::{self, FileKind};
use crate::memory::compact::compact_if_worth_it;
use crate::memory::op::{Author, Decision, Kind, Op, PROPOSED};
use crate::memory::{Fold, Writer};
use crate::parse::text::cut;
use crate::parse::{jsonl, markdown};
use crate::query::memory::{MemoryHit, Provenance};
use crate::store;

/// How much of a proposed memory's content a listing shows.
const CONTENT_CHARS: usize = 1200;

/// What `review_list` answers: every proposal waiting for a person, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Proposals {
    /// The proposals: memories first (by the time they were written), then entries (by path).
    pub proposals: Vec<Proposal>,
}

impl super::Answer for Proposals {}

/// One memory or entry an agent wrote while review is on.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Proposal {
    /// A memory's id (`m_…`), or an entry's refId (its path from the root): what
    /// `tmws review approve|reject` takes.
    pub id: String,
    /// `memory` or `entry`.
    pub what: String,
    /// Always true: it waits for a person's review and no answer shows it before.
    pub proposed: bool,
    /// A memory's namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// When it was written (a memory, RFC 3339) or dated (an entry's `updated` or `created`).
    pub at: String,
    /// Through which surface and client it came, as tmws recorded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<Author>,
    /// The writer's name (a memory's `agent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// A memory's summary, or an entry's name and description.
    pub summary: String,
    /// A memory's content (its first 1,200 characters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// A memory's upsert key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The live memory holding the same key, which approving it supersedes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
    /// Live memories this close in meaning (`review.duplicate_similarity`): the same thing
    /// said again, which approving with `supersede_similar` supersedes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub similar_to: Vec<Similar>,
}

/// A live memory close to a proposal.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Similar {
    pub id: String,
    pub summary: String,
}

/// Who settles proposals: a person, as a surface knows them.
#[derive(Debug, Clone, PartialEq)]
pub struct Reviewer {
    /// The name the `review` op records in `by` (`human` at the command line).
    pub name: String,
    /// The surface it came through (`cli`, `http` for the web view): the op's `author`.
    pub surface: String,
}

impl Reviewer {
    /// The person at a surface: `human`, as the command line names them.
    pub fn person(surface: &str) -> Reviewer {
        Reviewer { name: "human".to_owned(), surface: surface.to_owned() }
    }

    fn author(&self) -> Author {
        Author { surface: self.surface.clone(), client: None, session: None }
    }
}

/// What approving supersedes besides the live memory that holds the proposal's key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Supersede {
    /// These live memories (ids), of the proposal's namespace.
    pub ids: Vec<String>,
    /// Every live memory the listing names in `similar_to`.
    pub similar: bool,
}

/// What settling proposals did, one line per id.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Settled {
    pub settled: Vec<SettledOne>,
}

/// One settled proposal.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SettledOne {
    /// The memory id or the entry's refId.
    pub id: String,
    /// `approve` or `reject`.
    pub decision: String,
    /// The live memories the approval superseded (deleted in the same append).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub superseded: Vec<String>,
}

fn stamp() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Every proposal under the engine's root: the memories of every configured namespace and
/// the workspace entries whose front-matter says `review: proposed`.
pub fn list(engine: &Engine) -> Result<Proposals> {
    let (root, config) = (engine.root(), engine.config());
    let started = std::time::Instant::now();
    let now = stamp();
    let namespaces: Vec<String> = config.namespaces.keys().cloned().collect();
    // What a listing is made of: the logs as they are, and the index (which holds the
    // entries held back and the memories similar ones are found among). While neither
    // changed, and no proposal listed has expired, the last listing is the answer: a page
    // shown again costs nothing.
    let payload = engine.fresh().and_then(|(index, _)| index.payload());
    let made_of = MadeOf {
        logs: namespaces.iter().map(|ns| store::FileStamp::of(&root.join(layout::memory_log(ns)))).collect(),
        epoch: payload.as_ref().ok().map(|p| p.epoch),
    };
    let mut kept = engine.kept_proposals().lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(k) =
        kept.listing.as_ref().filter(|k| k.made_of == made_of && k.until.as_deref().is_none_or(|u| now.as_str() < u))
    {
        tracing::debug!(ms = started.elapsed().as_secs_f64() * 1e3, "review: listed as before");
        return Ok(k.proposals.clone());
    }
    let folds = folds(root, &namespaces, &mut kept.scans)?;
    let folded = started.elapsed();
    let mut proposals = Vec::new();
    // Each memory proposal's whole content, for its meaning (the listing shows the first
    // characters).
    let mut contents: Vec<String> = Vec::new();
    let mut until: Option<String> = None;
    for (ns, fold) in &folds {
        for (id, entry) in fold.live_at(&now).filter(|(_, e)| e.proposed) {
            let Some(add) = entry.record.as_ref().map(|r| &r.add) else { continue };
            if let Some(e) = &entry.expires_at
                && until.as_ref().is_none_or(|u| e < u)
            {
                until = Some(e.clone());
            }
            let content = add.content.as_deref().unwrap_or_default();
            contents.push(content.to_owned());
            proposals.push(Proposal {
                id: id.clone(),
                what: "memory".to_owned(),
                proposed: true,
                namespace: Some(ns.clone()),
                at: entry.at.clone(),
                author: add.author.clone(),
                agent: entry.agent.clone(),
                summary: entry.summary.clone(),
                content: Some(cut(content, CONTENT_CHARS)),
                key: entry.key.clone(),
                supersedes: entry.key.as_deref().and_then(|k| fold.by_key(k, &now)).map(|(id, _)| id.clone()),
                similar_to: Vec::new(),
            });
        }
    }
    // Each proposal's search by meaning is most of a listing's cost: they run on a few
    // threads at once.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    let chunk = proposals.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for (part, contents) in proposals.chunks_mut(chunk).zip(contents.chunks(chunk)) {
            scope.spawn(move || {
                for (p, content) in part.iter_mut().zip(contents) {
                    p.similar_to = similar(engine, &p.id, &p.summary, content)
                        .into_iter()
                        .map(|(id, summary)| Similar { id, summary })
                        .collect();
                }
            });
        }
    });
    proposals.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.id.cmp(&b.id)));
    let memories = started.elapsed();
    proposals.extend(entries(root, payload)?);
    tracing::debug!(
        proposals = proposals.len(),
        folded_ms = folded.as_secs_f64() * 1e3,
        memories_ms = memories.as_secs_f64() * 1e3,
        ms = started.elapsed().as_secs_f64() * 1e3,
        "review: listed"
    );
    let proposals = Proposals { proposals };
    kept.listing = Some(Listing { made_of, until, proposals: proposals.clone() });
    Ok(proposals)
}

/// What an engine keeps between listings: the last one, and what each log was found to
/// hold.
#[derive(Debug, Default)]
pub(crate) struct Kept {
    listing: Option<Listing>,
    scans: BTreeMap<String, Scan>,
}

/// A listing and what it was made of.
#[derive(Debug)]
struct Listing {
    made_of: MadeOf,
    /// When the first proposal listed expires: the listing is made again then.
    until: Option<String>,
    proposals: Proposals,
}

/// What a listing was made of: each namespace's log (none when there is none) and the
/// index's commit (none when it could not be read).
#[derive(Debug, PartialEq)]
struct MadeOf {
    logs: Vec<Option<store::FileStamp>>,
    epoch: Option<u64>,
}

/// The memory `id` when it is a proposal waiting for review, as `memory_get` shows it
/// (`proposed: true`); None when no log holds such a proposal.
pub fn proposed_memory(engine: &Engine, id: &str, content: bool) -> Result<Option<MemoryHit>> {
    let (root, config) = (engine.root(), engine.config());
    let now = stamp();
    let namespaces: Vec<String> = config.namespaces.keys().cloned().collect();
    // What listings found is kept; this reads it and carries it on.
    let mut kept = engine.kept_proposals().lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for (ns, fold) in folds(root, &namespaces, &mut kept.scans)? {
        let Some(entry) = fold.live.get(id).filter(|e| e.proposed && !e.expired(&now)) else { continue };
        let add = entry.record.as_ref().map(|r| &r.add);
        let surface = add.and_then(|a| a.author.as_ref()).map(|a| a.surface.as_str());
        let trust = super::trust::ranking_scores(root);
        return Ok(Some(MemoryHit {
            id: id.to_owned(),
            namespace: Some(ns),
            kind: entry.kind.clone(),
            summary: entry.summary.clone(),
            tags: entry.tags.clone(),
            created_at: Some(entry.at.clone()),
            from: Some(Provenance::of(entry.agent.as_deref(), surface, &trust)),
            content: content.then(|| add.and_then(|a| a.content.clone()).unwrap_or_default()),
            expires_at: entry.expires_at.clone(),
            importance: Some(entry.importance),
            key: entry.key.clone(),
            branch: entry.branch.clone(),
            proposed: true,
            ..MemoryHit::default()
        }));
    }
    Ok(None)
}

/// The folds (with records) of what these namespaces' logs say of their proposals, for the
/// logs that hold one. `scans` are what earlier listings found in each log: a log that only
/// grew since is read from where they stopped.
fn folds(root: &Path, namespaces: &[String], scans: &mut BTreeMap<String, Scan>) -> Result<BTreeMap<String, Fold>> {
    let mut folds = BTreeMap::new();
    for ns in namespaces {
        let path = root.join(layout::memory_log(ns));
        let Some(stamp) = store::FileStamp::of(&path) else {
            scans.remove(ns);
            continue;
        };
        let grown = scans.remove(ns).and_then(|scan| scan.grown(root, &path, &stamp));
        let scan = match grown {
            Some(scan) => scan,
            None => match store::read_opt(root, &path, store::cap::LOG)? {
                Some(bytes) => Scan::of(stamp, &bytes),
                None => continue,
            },
        };
        if !scan.ids.is_empty() {
            folds.insert(ns.clone(), Fold::of(&scan.lines, true));
        }
        scans.insert(ns.clone(), scan);
    }
    Ok(folds)
}

/// How many bytes before where a scan stopped must read the same for the log to have only
/// grown since (a log rewritten by compaction, or by hand, is read whole again).
const CHECKED: u64 = 4096;

/// What a listing found in one log: the lines that say what became of its proposals, in
/// their order (each proposal's `add` and every later line of its id, and the lines of the
/// memories holding a proposal's key: the one approving it supersedes). Folding them gives
/// what folding the whole log gives of the proposals, without folding 100k memories (most
/// of a second, and hundreds of MB with their records, for a listing of a few).
#[derive(Debug)]
pub(crate) struct Scan {
    file: store::FileStamp,
    /// The bytes scanned: the log's complete lines then.
    len: u64,
    /// blake3 of the [`CHECKED`] bytes before `len`.
    check: [u8; 32],
    /// The ids whose lines are kept, as the log writes them.
    ids: HashSet<Vec<u8>>,
    /// The proposals' keys, as the log writes them.
    keys: HashSet<Vec<u8>>,
    lines: Vec<u8>,
}

impl Scan {
    /// A whole log scanned.
    fn of(file: store::FileStamp, bytes: &[u8]) -> Scan {
        // Only complete lines count, as when the log is folded whole.
        let done = &bytes[..memchr::memrchr(b'\n', bytes).map_or(0, |i| i + 1)];
        let mut scan = Scan {
            file,
            len: done.len() as u64,
            check: check_of(done),
            ids: HashSet::new(),
            keys: HashSet::new(),
            lines: Vec::new(),
        };
        let proposed = memchr::memmem::Finder::new(PROPOSED.as_bytes());
        if proposed.find(done).is_none() {
            return scan;
        }
        for at in proposed.find_iter(done) {
            if let Some(op) = op_of(line_at(done, at)).filter(Op::is_proposed) {
                scan.keys.extend(op.key.as_deref().map(json_text));
                scan.ids.insert(json_text(&op.id));
            }
        }
        if scan.ids.is_empty() {
            return scan;
        }
        // One pass over the lines finds each one's id and the ids that hold a proposal's
        // key; then the lines of every id found are kept.
        let mut lines: Vec<(&[u8], Option<&[u8]>)> = Vec::new();
        for line in done.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let id = jsonl::string_values(line, &ID).next();
            if let Some(id) = id
                && !scan.keys.is_empty()
                && jsonl::string_values(line, &KEY).any(|v| scan.keys.contains(v))
            {
                scan.ids.insert(id.to_vec());
            }
            lines.push((line, id));
        }
        for (line, _) in lines.into_iter().filter(|(_, id)| id.is_some_and(|id| scan.ids.contains(id))) {
            scan.lines.extend_from_slice(line);
            scan.lines.push(b'\n');
        }
        scan
    }

    /// This scan carried on over what was appended to the log since (`now` is its stamp);
    /// None when the log is not this one grown, or what was appended needs the whole log
    /// (a new proposal with a key, or a line that gives a proposal's key to a memory
    /// written before: their earlier lines are behind the scan).
    fn grown(mut self, root: &Path, path: &Path, now: &store::FileStamp) -> Option<Scan> {
        if !self.file.same_file(now) || now.len() < self.len {
            return None;
        }
        let from = self.len.saturating_sub(CHECKED);
        let bytes = store::read_from(root, path, from, store::cap::LOG).ok()?;
        let cut = usize::try_from(self.len - from).ok()?;
        if bytes.get(..cut).map(check_of) != Some(self.check) {
            return None;
        }
        let tail = &bytes[cut..];
        let tail = &tail[..memchr::memrchr(b'\n', tail).map_or(0, |i| i + 1)];
        for line in tail.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let id = jsonl::string_values(line, &ID).next();
            if memchr::memmem::find(line, PROPOSED.as_bytes()).is_some()
                && let Some(op) = op_of(line).filter(Op::is_proposed)
            {
                if op.key.as_deref().is_some_and(|k| !self.keys.contains(json_text(k).as_slice())) {
                    return None;
                }
                self.ids.insert(json_text(&op.id));
            }
            let holds_key = !self.keys.is_empty() && jsonl::string_values(line, &KEY).any(|v| self.keys.contains(v));
            match id {
                Some(id) if self.ids.contains(id) => {}
                Some(id) if holds_key => {
                    // A memory that takes a proposal's key now: from its add, it is new
                    // here; from a later line, its add is behind the scan.
                    if !op_of(line).is_some_and(|op| op.op == Kind::Add) {
                        return None;
                    }
                    self.ids.insert(id.to_vec());
                }
                _ => continue,
            }
            self.lines.extend_from_slice(line);
            self.lines.push(b'\n');
        }
        let done = &bytes[..cut + tail.len()];
        self.len += tail.len() as u64;
        self.check = check_of(&done[done.len().saturating_sub(CHECKED as usize)..]);
        self.file = now.clone();
        Some(self)
    }
}

/// The finders of the fields a scan reads.
static ID: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"id\""));
static KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"key\""));

/// blake3 of the last [`CHECKED`] bytes of `done`.
fn check_of(done: &[u8]) -> [u8; 32] {
    *blake3::hash(&done[done.len().saturating_sub(CHECKED as usize)..]).as_bytes()
}

/// `text` as a log writes it inside a JSON string's quotes.
fn json_text(text: &str) -> Vec<u8> {
    let quoted = serde_json::to_string(text).unwrap_or_default().into_bytes();
    quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or_default().to_vec()
}

/// The line of `bytes` that holds the byte at `at`, without its end.
fn line_at(bytes: &[u8], at: usize) -> &[u8] {
    let start = memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |i| i + 1);
    let end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i);
    &bytes[start..end]
}

/// One line of a log read as an op, or None.
fn op_of(line: &[u8]) -> Option<Op> {
    Op::read(std::str::from_utf8(line).ok()?).ok()?.ok()
}

/// The live memories close in meaning to a proposal, as the index holds them (which never
/// holds a proposal). A failure to read the index gives none: the listing goes on.
fn similar(engine: &Engine, id: &str, summary: &str, content: &str) -> Vec<(String, String)> {
    use crate::index::meaning;
    let Some(makers) = meaning::makers_for(engine.root(), engine.config()) else { return Vec::new() };
    let started = std::time::Instant::now();
    let Some(q) = meaning::text_meaning(makers, &meaning::item_text(summary, "", content)) else { return Vec::new() };
    tracing::debug!(id, ms = started.elapsed().as_secs_f64() * 1e3, "review: meaning of a proposal");
    let similarity = engine.config().review.duplicate_similarity as f32;
    engine.as_indexed(|index| index.near_duplicates(&q, similarity, &[id])).unwrap_or_else(|e| {
        tracing::debug!("cannot look for memories like {id}: {}", e.chain());
        Vec::new()
    })
}

/// The workspace entries and overviews whose front-matter says `review: proposed`. The
/// index keeps their paths (`payload`), so only those files are read; when it cannot be
/// read, every file under the workspaces is.
fn entries(root: &Path, payload: Result<crate::index::Payload>) -> Result<Vec<Proposal>> {
    let files: Vec<String> = match payload {
        Ok(payload) => payload.proposals.into_iter().collect(),
        Err(e) => {
            tracing::debug!("the index cannot say which entries are proposals: {}", e.chain());
            store::list(root, &[root.join(layout::WORKSPACES_DIR)], |rel| rel.ends_with(".md")).0
        }
    };
    let mut found = Vec::new();
    for rel in files {
        if !matches!(layout::classify(&rel), FileKind::Entry { .. } | FileKind::ScopeOverview { .. }) {
            continue;
        }
        let Ok(bytes) = store::read(root, &root.join(&rel), store::cap::MARKDOWN) else { continue };
        // Parsed only when the word is there: nearly every file holds no proposal.
        if memchr::memmem::find(&bytes, PROPOSED.as_bytes()).is_none() {
            continue;
        }
        let fm = markdown::parse(&bytes).front_matter();
        if !crate::memory::op::proposes(fm.extra.get("review")) {
            continue;
        }
        let author = fm.extra.get("author").and_then(|a| serde_json::from_value::<Author>(a.clone()).ok());
        let name = fm.name.unwrap_or_default();
        let summary = match fm.description.filter(|d| !d.trim().is_empty()) {
            Some(d) => format!("{name} — {d}"),
            None => name,
        };
        found.push(Proposal {
            id: rel,
            what: "entry".to_owned(),
            proposed: true,
            namespace: None,
            at: fm.updated.or(fm.created).unwrap_or_default(),
            agent: author.as_ref().and_then(|a| a.client.clone()),
            author,
            summary,
            content: None,
            key: None,
            supersedes: None,
            similar_to: Vec::new(),
        });
    }
    Ok(found)
}

/// Approves proposals: each memory by a `review` op (with a `delete` of each live memory it
/// supersedes: the one holding its key, those `supersede` names), each entry by taking
/// `review: proposed` out of its front-matter. An id that is not a proposal fails the
/// call before anything is written.
pub fn approve(engine: &Engine, ids: &[String], supersede: &Supersede, by: &Reviewer) -> Result<Settled> {
    settle(engine, ids, Decision::Approve, supersede, by)
}

/// Rejects proposals: each memory is deleted (a `review` op and a `delete`), each entry's
/// file removed (git holds what it was).
pub fn reject(engine: &Engine, ids: &[String], by: &Reviewer) -> Result<Settled> {
    settle(engine, ids, Decision::Reject, &Supersede::default(), by)
}

fn settle(
    engine: &Engine,
    ids: &[String],
    decision: Decision,
    supersede: &Supersede,
    by: &Reviewer,
) -> Result<Settled> {
    if ids.is_empty() {
        return Err(Error::Usage("name at least one proposal (an id from `tmws review`)".into()));
    }
    let listed = list(engine)?;
    // What is settled here is no proposal, whether or not the index has seen it yet: the
    // next listing is made again.
    engine.kept_proposals().lock().unwrap_or_else(std::sync::PoisonError::into_inner).listing = None;
    let mut todo = Vec::new();
    for id in ids {
        let id = id.trim().trim_start_matches("./");
        let Some(p) = listed.proposals.iter().find(|p| p.id == id) else {
            return Err(Error::NotFound(format!("no proposal `{}`", super::api::preview(id)))
                .with_hint("`tmws review` lists the proposals waiting for review"));
        };
        todo.push(p);
    }
    let mut settled = Vec::new();
    for p in todo {
        let superseded = match (&p.namespace, decision) {
            (Some(ns), _) => settle_memory(engine, ns, p, decision, supersede, by)?,
            (None, Decision::Approve) => {
                approve_entry(engine.root(), &p.id)?;
                Vec::new()
            }
            (None, Decision::Reject) => {
                reject_entry(engine.root(), &p.id)?;
                Vec::new()
            }
        };
        settled.push(SettledOne { id: p.id.clone(), decision: decision.as_str().to_owned(), superseded });
    }

    Ok(Settled { settled })
}

/// Appends the `review` op of one proposed memory, and the `delete`s that go with it.
fn settle_memory(
    engine: &Engine,
    ns: &str,
    p: &Proposal,
    decision: Decision,
    supersede: &Supersede,
    by: &Reviewer,
) -> Result<Vec<String>> {
    let config = engine.config();
    let mut writer = Writer::open(engine.root(), ns)?;
    let fold = &writer.fold;
    let at = stamp().max(fold.max_at.clone());
    let Some(entry) = fold.live.get(&p.id).filter(|e| e.proposed && !e.expired(&at)) else {
        return Err(Error::NotFound(format!("no proposal `{}` in {ns}", p.id)));
    };
    let mut review = Op::new(Kind::Review, p.id.clone());
    review.at = Some(at.as_str().max(entry.at.as_str()).to_owned());
    review.decision = Some(decision);
    review.by = Some(by.name.clone());
    review.author = Some(by.author());
    let mut ops = Vec::new();
    let mut superseded = Vec::new();
    match decision {
        Decision::Approve => {
            let mut old: Vec<String> =
                entry.key.as_deref().and_then(|k| fold.by_key(k, &at)).map(|(id, _)| id.clone()).into_iter().collect();
            old.extend(supersede.ids.iter().map(|s| s.trim().to_owned()));
            if supersede.similar {
                old.extend(p.similar_to.iter().map(|s| s.id.clone()));
            }
            for id in old {
                if id == p.id || superseded.contains(&id) {
                    continue;
                }
                if fold.live.get(&id).is_none_or(|e| e.expired(&at) || e.proposed) {
                    return Err(Error::NotFound(format!(
                        "no live memory `{}` in {ns} to supersede",
                        super::api::preview(&id)
                    )));
                }
                superseded.push(id);
            }
            review.supersedes = (!superseded.is_empty()).then(|| superseded.clone());
            ops.push(review);
            for id in &superseded {
                let mut tomb = fold.tombstone(id, &at);
                tomb.author = Some(by.author());
                ops.push(tomb);
            }
        }
        Decision::Reject => {
            let mut tomb = fold.tombstone(&p.id, &at);
            tomb.author = Some(by.author());
            ops.push(review);
            ops.push(tomb);
        }
    }
    writer.append(&ops, config.memory.fsync)?;
    compact_if_worth_it(&mut writer, config.memory.compact_garbage_ratio, &at)?;
    Ok(superseded)
}

/// Takes `review: proposed` out of an entry's front-matter, and nothing else: the file is
/// otherwise the bytes it was.
fn approve_entry(root: &Path, rel: &str) -> Result<()> {
    let _lock = store::FileLock::exclusive(root, &root.join(super::write::LOCK))?;
    let path = root.join(rel);
    let bytes = store::read(root, &path, store::cap::MARKDOWN)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut out = String::with_capacity(text.len());
    let mut fences = 0;
    let mut taken = false;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']).trim_end();
        if bare.trim_start_matches('\u{feff}') == "---" {
            fences += 1;
        }
        if fences == 1
            && !taken
            && bare.strip_prefix("review:").is_some_and(|v| v.trim().trim_matches(['"', '\'']) == PROPOSED)
        {
            taken = true;
            continue;
        }
        out.push_str(line);
    }
    if !taken {
        return Err(Error::NotFound(format!("`{rel}` is not a proposal: its front-matter has no `review: proposed`")));
    }
    store::write_atomic(root, &path, out.as_bytes())
}

/// Removes a proposed entry's file (a plain file of the workspaces; never a link).
fn reject_entry(root: &Path, rel: &str) -> Result<()> {
    let _lock = store::FileLock::exclusive(root, &root.join(super::write::LOCK))?;
    let path = root.join(rel);
    if store::entry(&path)? != store::Entry::File {
        return Err(Error::NotFound(format!("no file `{rel}` to reject")));
    }
    store::remove_file(&path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// What a fold says of the live proposals at `now`: each one's id, summary, and the
    /// live memory holding its key.
    fn proposals_of(fold: &Fold, now: &str) -> Vec<(String, String, Option<String>)> {
        fold.live_at(now)
            .filter(|(_, e)| e.proposed)
            .map(|(id, e)| {
                let holder = e.key.as_deref().and_then(|k| fold.by_key(k, now)).map(|(h, _)| h.clone());
                (id.clone(), e.summary.clone(), holder)
            })
            .collect()
    }

    #[test]
    fn the_lines_of_the_proposals_fold_as_the_whole_log_does() {
        let add = |id: &str, key: &str, review: bool, at: &str| {
            let review = if review { r#","review":"proposed""# } else { "" };
            format!(
                r#"{{"op":"add","id":"{id}","ns":"n","at":"{at}","expires_at":"2036-01-01T00:00:00Z","content":"c {id} says \"m_000000000003\"","summary":"s {id}","key":"{key}"{review}}}"#
            )
        };
        let log = [
            add("m_000000000001", "pool", false, "2026-01-01T00:00:00Z"),
            add("m_000000000002", "other", false, "2026-01-01T00:00:01Z"),
            add("m_000000000003", "pool", true, "2026-01-02T00:00:00Z"),
            add("m_000000000004", "jitter", true, "2026-01-02T00:00:01Z"),
            add("m_000000000005", "gone", true, "2026-01-02T00:00:02Z"),
            r#"{"op":"update","id":"m_000000000003","at":"2026-01-03T00:00:00Z","set":{"summary":"s3 again"}}"#.into(),
            r#"{"op":"review","id":"m_000000000004","at":"2026-01-03T00:00:01Z","decision":"approve","by":"human"}"#
                .into(),
            r#"{"op":"review","id":"m_000000000005","at":"2026-01-03T00:00:02Z","decision":"reject","by":"human"}"#
                .into(),
            // Written by hand, spaced.
            r#"{"op": "delete", "id" : "m_000000000005", "at": "2026-01-03T00:00:02Z"}"#.into(),
            r#"{"op":"update","id":"m_000000000002","at":"2026-01-03T00:00:03Z","set":{"key":"pool"}}"#.into(),
            add("m_000000000006", "unrelated", false, "2026-01-04T00:00:00Z"),
        ]
        .join("\n");
        let now = "2026-02-01T00:00:00Z";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.jsonl");
        let scan = |bytes: &str| {
            std::fs::write(&path, bytes).unwrap();
            Scan::of(store::FileStamp::of(&path).unwrap(), bytes.as_bytes())
        };
        // A torn last line is no line, folded whole or not.
        for tail in ["\n", "\n{\"op\":\"add\",\"id\":\"m_000000000006\",\"review\":\"proposed\""] {
            let bytes = format!("{log}{tail}");
            let whole = proposals_of(&Fold::of(bytes.as_bytes(), true), now);
            assert_eq!(
                whole,
                [("m_000000000003".to_owned(), "s3 again".to_owned(), Some("m_000000000002".to_owned()))]
            );
            let lines = scan(&bytes).lines;
            assert_eq!(proposals_of(&Fold::of(&lines, true), now), whole);
            // The lines of a memory that holds no key of a proposal are left out.
            assert!(!String::from_utf8_lossy(&lines).contains("m_000000000006"));
        }
        let settled = log.replace(r#""review":"proposed""#, r#""review":"none""#);
        assert!(scan(&format!("{settled}\n")).ids.is_empty());

        // Lines appended: the scan carries on from where it stopped and folds as the
        // whole log does.
        let root = dir.path();
        let first = scan(&format!("{log}\n"));
        let more = [
            add("m_000000000007", "pool", false, "2026-01-05T00:00:00Z"),
            add("m_000000000008", "", true, "2026-01-05T00:00:01Z").replace(r#","key":"""#, ""),
            r#"{"op":"review","id":"m_000000000003","at":"2026-01-05T00:00:02Z","decision":"approve","by":"human"}"#
                .into(),
        ]
        .join("\n");
        let grown_log = format!("{log}\n{more}\n");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(format!("{more}\n").as_bytes())
            .unwrap();
        let grown = first.grown(root, &path, &store::FileStamp::of(&path).unwrap()).expect("only appended to");
        let whole = proposals_of(&Fold::of(grown_log.as_bytes(), true), now);
        assert_eq!(whole, [("m_000000000008".to_owned(), "s m_000000000008".to_owned(), None)]);
        assert_eq!(proposals_of(&Fold::of(&grown.lines, true), now), whole);
        assert_eq!(grown.len, grown_log.len() as u64);
        // What needs lines behind the scan reads the log whole: a new proposal with a key,
        // a key given to a memory written before; so does a log rewritten.
        for (appended, why) in [
            (add("m_000000000009", "fresh", true, "2026-01-06T00:00:00Z"), "a new key"),
            (
                r#"{"op":"update","id":"m_000000000006","at":"2026-01-06T00:00:00Z","set":{"key":"pool"}}"#.into(),
                "an old memory",
            ),
        ] {
            let before = scan(&format!("{log}\n"));
            std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap()
                .write_all(format!("{appended}\n").as_bytes())
                .unwrap();
            assert!(before.grown(root, &path, &store::FileStamp::of(&path).unwrap()).is_none(), "{why}");
        }
        let before = scan(&format!("{log}\n"));
        std::fs::write(&path, format!("{}\n{log}\n", add("m_00000000000a", "x", false, "2026-01-06T00:00:00Z")))
            .unwrap();
        assert!(before.grown(root, &path, &store::FileStamp::of(&path).unwrap()).is_none(), "rewritten");
    }
}
