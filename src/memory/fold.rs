//! The fold of a memory log (docs/memory-log.md): its ops, in order, into the live entries.
//!
//! One fold serves every reader: the writer (deduplication, key upserts, eviction,
//! compaction, pruning, links), the index (the entries it makes searchable) and the
//! statistics. It can go on from where it stopped, so a process that keeps a fold only
//! reads the lines appended since. Only complete lines (ending in `\n`) are folded: a torn
//! final line is left for later and, once a writer has ended it, reported and skipped.
//!
//! An entry's lines are its `add` and the `update` and `link` ops after it; compaction
//! keeps exactly those lines of the live entries, every bad line byte for byte (a hand
//! edit with a typo is a person's, not tmws', to delete), and tombstones.
//!
//! Git merges logs line by line (`merge=union`), so the fold must not depend on the order
//! lines end up in: a `delete` with a time is a tombstone that kills every `add` of its id
//! made before it, wherever that line stands, so that a branch that still holds the `add`
//! cannot bring the entry back; compaction keeps the latest tombstone of each id until the
//! entry it deleted would have expired anyway. An `add` made after the tombstone (the same
//! content added again) starts a new incarnation, and of two `add`s of one id the later
//! one holds it (the earlier lines are dead).
//!
//! A line is bad — reported with its number, skipped by every reader, kept by compaction
//! — when it is not a JSON object, or when a field the fold reads has the wrong type or
//! value (`Op::read`): `check` reports exactly the lines the fold skips.

use std::collections::BTreeMap;

use super::op::{Decision, Git, Kind, Op, Set};
use crate::model::Diagnostic;
use crate::parse::jsonl::{self, complete};
use crate::parse::time::normalise_time;

/// A live entry of a log.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Entry {
    /// The line number (from 1) of its `add`; also its order of addition.
    pub line: usize,
    /// When it was added, RFC 3339 UTC seconds with `Z` (text order is time order).
    pub at: String,
    pub expires_at: Option<String>,
    pub key: Option<String>,
    /// The line number of the op that gave it its key (its `add` or an `update`).
    pub key_line: usize,
    pub kind: Option<String>,
    pub summary: String,
    pub importance: f64,
    pub agent: Option<String>,
    pub tags: Vec<String>,
    pub branch: Option<String>,
    /// The commit HEAD was at when it was added.
    pub commit: Option<String>,
    /// Commits it was linked to (`link` ops).
    pub links: Vec<String>,
    /// The line numbers of its `update` and `link` ops.
    pub later: Vec<usize>,
    /// Its `add` with its updates applied, when the fold keeps records.
    pub record: Option<Record>,
    /// The code it cites, as its latest op gave it.
    pub cites: Option<Vec<super::cite::Cite>>,
    /// A proposal no `review` op has approved yet (docs/review.md).
    pub proposed: bool,
}

impl Entry {
    /// Takes the approval at line `line`: it is live like any other entry from now on.
    fn approve(&mut self, line: usize) {
        self.proposed = false;
        self.later.push(line);
        self.later.sort_unstable();
        if let Some(rec) = &mut self.record {
            rec.add.review = None;
        }
    }

    /// Whether it has expired at `now` (RFC 3339 UTC with `Z`).
    pub fn expired(&self, now: &str) -> bool {
        self.expires_at.as_deref().is_some_and(|e| e <= now)
    }

    /// How many lines of the log it holds.
    pub fn lines(&self) -> usize {
        1 + self.later.len()
    }
}

/// The live entries of a log, as far as it has been read.
#[derive(Debug, Clone, Default)]
pub struct Fold {
    pub live: BTreeMap<String, Entry>,
    /// Lines read (good, bad and blank), i.e. the number of the last one.
    pub lines: usize,
    /// Bytes read: the end of the last complete line.
    pub offset: u64,
    /// Lines that were skipped, with their line numbers.
    pub problems: Vec<Diagnostic>,
    /// The numbers of the complete lines that were skipped: kept as they are by compaction.
    pub bad: Vec<usize>,
    /// The id of the live entry that took each upsert key last (expired or not).
    pub keys: BTreeMap<String, String>,
    /// Every live entry holding each key, by the line that gave it the key: a union merge
    /// can leave two, and when the last one goes the one before holds the key again.
    holders: BTreeMap<String, BTreeMap<usize, String>>,
    /// The latest time of an op read (RFC 3339 UTC with `Z`).
    pub max_at: String,
    /// The latest tombstone of each id (a `delete` with a time).
    tombstones: BTreeMap<String, Tombstone>,
    /// No tombstone stops being needed before this.
    first_tomb_expiry: Option<String>,
    /// Lines held by live entries (expired or not).
    live_lines: usize,
    /// No live entry expires before this (an entry that left may have set it earlier).
    first_expiry: Option<String>,
    /// Keep each entry's whole record (the index needs it; the writer does not).
    keep_records: bool,
    /// The latest approval of each id (its time and line), for an `add` a merge put after it.
    approvals: BTreeMap<String, (String, usize)>,
}

/// A `delete` that kills every `add` of its id made before it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tombstone {
    /// When the entry was deleted (RFC 3339 UTC with `Z`).
    pub at: String,
    /// Its line number.
    pub line: usize,
    /// When the deleted entry would have expired: past it, the tombstone is no longer
    /// needed (an `add` it killed would be expired). None: kept for good.
    pub until: Option<String>,
}

impl Tombstone {
    fn needed(&self, now: &str) -> bool {
        self.until.as_deref().is_none_or(|u| u > now)
    }
}

/// An entry as its lines give it: its `add` with the `set` of each `update` after it
/// applied, which is what the index makes searchable.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub add: Op,
    /// The time of its last update, as that op gives it.
    pub updated_at: Option<String>,
}

impl Record {
    /// Applies an update's `set` (made at `at`).
    fn update(&mut self, set: &Set, at: Option<&str>) {
        let a = &mut self.add;
        let Set {
            tags,
            kind,
            key,
            summary,
            content,
            importance,
            agent,
            expires_at,
            source,
            git,
            author,
            problem,
            solution,
            outcome,
            files,
            cites,
            hash,
        } = set.clone();
        replace(&mut a.tags, tags);
        replace(&mut a.kind, kind);
        replace(&mut a.key, key);
        replace(&mut a.summary, summary);
        replace(&mut a.content, content);
        replace(&mut a.importance, importance);
        replace(&mut a.agent, agent);
        replace(&mut a.expires_at, expires_at);
        replace(&mut a.source, source);
        replace(&mut a.git, git);
        replace(&mut a.author, author);
        replace(&mut a.problem, problem);
        replace(&mut a.solution, solution);
        replace(&mut a.outcome, outcome);
        replace(&mut a.files, files);
        replace(&mut a.cites, cites);
        replace(&mut a.hash, hash);
        if let Some(at) = at {
            self.updated_at = Some(at.to_owned());
        }
    }
}

/// Takes `new` when it is given.
fn replace<T>(old: &mut Option<T>, new: Option<T>) {
    if new.is_some() {
        *old = new;
    }
}

impl Fold {
    /// An empty fold; `keep_records` keeps each entry's whole `add` object.
    pub fn new(keep_records: bool) -> Fold {
        Fold { keep_records, ..Fold::default() }
    }

    /// Folds a whole log.
    pub fn of(bytes: &[u8], keep_records: bool) -> Fold {
        let mut fold = Fold::new(keep_records);
        fold.read(bytes);
        fold
    }

    /// Folds the complete lines of `bytes`, which continue the log at `self.offset`.
    /// Returns how many bytes were consumed.
    pub fn read(&mut self, bytes: &[u8]) -> usize {
        let done = complete(bytes);
        // Each line is applied as it is read: a large log's ops are never all held at once.
        let base = self.lines;
        let mut skipped = Vec::new();
        let mut problems = jsonl::each_line(
            done,
            |text| Op::read(text).map(Some),
            |line, _, op| match op {
                Ok(op) => self.apply(base + line, &op),
                Err(skip) => {
                    let text = nth_line(done, line);
                    skipped.push(super::op::skipped(line, &text, &skip));
                }
            },
        );
        problems.append(&mut skipped);
        problems.sort_by_key(|d| d.line);
        for mut d in problems {
            d.line += base;
            self.bad.push(d.line);
            self.problems.push(d);
        }
        self.lines += done.iter().filter(|b| **b == b'\n').count();
        self.offset += done.len() as u64;
        done.len()
    }

    /// Applies ops that continue the log: the lines a writer just appended (`bytes` of
    /// them, ending in `\n`), read back as they were written.
    pub fn extend(&mut self, ops: &[Op], bytes: u64) {
        for op in ops {
            self.lines += 1;
            self.apply(self.lines, op);
        }
        self.offset += bytes;
    }

    fn note_expiry(&mut self, e: Option<&String>) {
        if let Some(e) = e
            && self.first_expiry.as_ref().is_none_or(|f| e < f)
        {
            self.first_expiry = Some(e.clone());
        }
    }

    /// Applies one op, read at line number `line`.
    fn apply(&mut self, line: usize, op: &Op) {
        let id = op.id.clone();
        let op_at = text(&op.at).map(|t| normalise_time(&t));
        if let Some(at) = &op_at
            && *at > self.max_at
        {
            self.max_at.clone_from(at);
        }
        match op.op {
            Kind::Add => {
                let at = op_at.unwrap_or_default();
                // Deleted after it was made, or held by a later add: a line a merge brought
                // back, dead wherever it stands.
                if self.tombstones.get(&id).is_some_and(|t| t.at > at) || self.live.get(&id).is_some_and(|e| e.at > at)
                {
                    return;
                }
                let mut entry = Entry { line, at, importance: DEFAULT_IMPORTANCE, ..Entry::default() };
                entry.take(Fields::of_add(op));
                if let Some(Git { branch, commit }) = &op.git {
                    entry.commit = text(commit);
                    entry.branch = text(branch);
                }
                if self.keep_records {
                    entry.record = Some(Record { add: op.clone(), updated_at: None });
                }
                // An approval made after the proposal holds wherever a merge put its line.
                entry.proposed = op.is_proposed();
                if entry.proposed
                    && let Some((_, approved)) = self.approvals.get(&id).filter(|(a, _)| *a >= entry.at)
                {
                    entry.approve(*approved);
                    self.live_lines += 1;
                }
                entry.key_line = line;
                self.note_expiry(entry.expires_at.as_ref());
                self.live_lines += 1;
                self.remove(&id);
                if let Some(k) = &entry.key {
                    self.give_key(k, line, &id);
                }
                self.live.insert(id, entry);
            }
            Kind::Delete => {
                let Some(at) = op_at else {
                    // A delete without a time (written by hand) deletes what is live here.
                    self.remove(&id);
                    return;
                };
                let mut until = text(&op.expires_at).map(|t| normalise_time(&t));
                if self.live.get(&id).is_some_and(|e| e.at <= at)
                    && let Some(old) = self.remove(&id)
                {
                    until = until.or(old.expires_at);
                }
                if self.tombstones.get(&id).is_none_or(|t| t.at <= at) {
                    if let Some(u) = &until
                        && self.first_tomb_expiry.as_ref().is_none_or(|f| u < f)
                    {
                        self.first_tomb_expiry = Some(u.clone());
                    }
                    self.tombstones.insert(id, Tombstone { at, line, until });
                }
            }
            Kind::Update => {
                let Some(entry) = self.live.get_mut(&id) else { return };
                entry.later.push(line);
                self.live_lines += 1;
                let Some(set) = op.set.as_deref() else { return };
                if let Some(k) = text(&set.key) {
                    let old = entry.key.take().map(|old| (old, entry.key_line));
                    entry.key_line = line;
                    if let Some((old, at)) = old {
                        self.take_key(&old, at);
                    }
                    self.give_key(&k, line, &id);
                }
                let Some(entry) = self.live.get_mut(&id) else { return };
                entry.take(Fields::of_set(set));
                if let Some(rec) = &mut entry.record {
                    rec.update(set, op.at.as_deref());
                }
                let expiry = entry.expires_at.clone();
                self.note_expiry(expiry.as_ref());
            }
            Kind::Review => {
                let at = op_at.unwrap_or_default();
                if op.decision == Some(Decision::Approve) && self.approvals.get(&id).is_none_or(|(a, _)| *a <= at) {
                    self.approvals.insert(id.clone(), (at.clone(), line));
                }
                let Some(entry) = self.live.get_mut(&id).filter(|e| e.at <= at) else { return };
                match op.decision {
                    Some(Decision::Approve) if entry.proposed => entry.approve(line),
                    // A rejection is followed by the `delete` that kills the entry; until
                    // then its line is the entry's, as an update's would be.
                    _ => entry.later.push(line),
                }
                self.live_lines += 1;
            }
            Kind::Link => {
                let Some(entry) = self.live.get_mut(&id) else { return };
                entry.later.push(line);
                self.live_lines += 1;
                if let Some(c) = text(&op.commit) {
                    entry.links.push(c);
                }
            }
        }
    }

    /// Takes a live entry out (deleted, or replaced by a new `add` of its id).
    fn remove(&mut self, id: &str) -> Option<Entry> {
        let old = self.live.remove(id)?;
        self.live_lines -= old.lines();
        if let Some(k) = &old.key {
            self.take_key(k, old.key_line);
        }
        Some(old)
    }

    /// The tombstones compaction keeps at `now`.
    pub fn kept_tombstones(&self, now: &str) -> usize {
        if self.first_tomb_expiry.as_deref().is_none_or(|f| f > now) {
            return self.tombstones.len();
        }
        self.tombstones.values().filter(|t| t.needed(now)).count()
    }

    /// Notes that entry `id` took `key` at line `line`.
    fn give_key(&mut self, key: &str, line: usize, id: &str) {
        let holders = self.holders.entry(key.to_owned()).or_default();
        holders.insert(line, id.to_owned());
        if let Some((_, last)) = holders.last_key_value() {
            self.keys.insert(key.to_owned(), last.clone());
        }
    }

    /// Notes that the entry that took `key` at line `line` holds it no more.
    fn take_key(&mut self, key: &str, line: usize) {
        let Some(holders) = self.holders.get_mut(key) else { return };
        holders.remove(&line);
        match holders.last_key_value() {
            Some((_, last)) => {
                self.keys.insert(key.to_owned(), last.clone());
            }
            None => {
                self.holders.remove(key);
                self.keys.remove(key);
            }
        }
    }

    /// The live entry with this key at `now`: of those holding it, not expired and not
    /// waiting for review, the one that took it last (a proposal supersedes it only once
    /// approved).
    pub fn by_key(&self, key: &str, now: &str) -> Option<(&String, &Entry)> {
        self.holders
            .get(key)?
            .values()
            .rev()
            .filter_map(|id| self.live.get_key_value(id))
            .find(|(_, e)| !e.expired(now) && !e.proposed)
    }

    /// Lines that hold nothing live at `now` and that compaction removes: deleted,
    /// superseded or expired entries, delete ops, blank lines. (Bad lines are kept.)
    pub fn dead_lines(&self, now: &str) -> usize {
        let kept = self.bad.len() + self.kept_tombstones(now);
        if self.first_expiry.as_deref().is_none_or(|f| f > now) {
            // Nothing has expired yet: no need to look at every entry.
            return self.lines.saturating_sub(self.live_lines + kept);
        }
        let live: usize = self.live.values().filter(|e| !e.expired(now)).map(Entry::lines).sum();
        self.lines.saturating_sub(live + kept)
    }

    /// Plans a compaction at `now`: the line numbers to keep (every line of every entry
    /// live at `now`, every tombstone still needed and every bad line, ascending), and the
    /// fold of the log made of just those lines.
    pub fn compacted(self, now: &str) -> (Vec<usize>, Fold) {
        let tombs: Vec<(String, Tombstone)> = self.tombstones.into_iter().filter(|(_, t)| t.needed(now)).collect();
        let mut keep: Vec<usize> = self
            .live
            .values()
            .filter(|e| !e.expired(now))
            .flat_map(|e| std::iter::once(e.line).chain(e.later.iter().copied()))
            .chain(self.bad.iter().copied())
            .chain(tombs.iter().map(|(_, t)| t.line))
            .collect();
        keep.sort_unstable();
        keep.dedup();
        // Line `keep[i]` becomes line `i + 1`.
        let renumber = |n: usize| keep.binary_search(&n).map_or(0, |i| i + 1);
        let mut fold = Fold {
            keep_records: self.keep_records,
            lines: keep.len(),
            live_lines: keep.len() - self.bad.len() - tombs.len(),
            bad: self.bad.iter().map(|&n| renumber(n)).collect(),
            problems: self
                .problems
                .into_iter()
                .map(|mut d| {
                    d.line = renumber(d.line);
                    d
                })
                .collect(),
            ..Fold::default()
        };
        for (id, mut e) in self.live.into_iter().filter(|(_, e)| !e.expired(now)) {
            e.line = renumber(e.line);
            e.key_line = renumber(e.key_line);
            for l in &mut e.later {
                *l = renumber(*l);
            }
            if let Some(k) = &e.key {
                fold.give_key(k, e.key_line, &id);
            }
            if let Some(x) = &e.expires_at
                && fold.first_expiry.as_ref().is_none_or(|f| x < f)
            {
                fold.first_expiry = Some(x.clone());
            }
            fold.live.insert(id, e);
        }
        for (id, mut t) in tombs {
            t.line = renumber(t.line);
            if let Some(u) = &t.until
                && fold.first_tomb_expiry.as_ref().is_none_or(|f| u < f)
            {
                fold.first_tomb_expiry = Some(u.clone());
            }
            fold.tombstones.insert(id, t);
        }
        (keep, fold)
    }

    /// A `delete` op for live entry `id` at `now`: a tombstone (docs/memory-log.md) with the time
    /// it was deleted (never before the entry was added, whatever the clocks of the
    /// machines that wrote the log) and when the entry would have expired, after which
    /// compaction drops it.
    pub fn tombstone(&self, id: &str, now: &str) -> Op {
        let entry = self.live.get(id);
        let mut op = Op::new(Kind::Delete, id);
        op.at = Some(entry.map_or(now, |e| e.at.as_str().max(now)).to_owned());
        op.expires_at = entry.and_then(|e| e.expires_at.clone());
        op
    }

    /// The live entries at `now`, oldest first.
    pub fn live_at<'a>(&'a self, now: &'a str) -> impl Iterator<Item = (&'a String, &'a Entry)> + 'a {
        let mut v: Vec<(&String, &Entry)> = self.live.iter().filter(|(_, e)| !e.expired(now)).collect();
        v.sort_by_key(|(_, e)| e.line);
        v.into_iter()
    }
}

/// The fields of an entry that an `add` or an update's `set` give the fold.
struct Fields<'a> {
    expires_at: &'a Option<String>,
    key: &'a Option<String>,
    kind: &'a Option<String>,
    summary: &'a Option<String>,
    importance: Option<f64>,
    agent: &'a Option<String>,
    tags: &'a Option<Vec<String>>,
    cites: &'a Option<Vec<super::cite::Cite>>,
}

impl<'a> Fields<'a> {
    fn of_add(op: &'a Op) -> Fields<'a> {
        Fields {
            expires_at: &op.expires_at,
            key: &op.key,
            kind: &op.kind,
            summary: &op.summary,
            importance: op.importance,
            agent: &op.agent,
            tags: &op.tags,
            cites: &op.cites,
        }
    }

    fn of_set(set: &'a Set) -> Fields<'a> {
        Fields {
            expires_at: &set.expires_at,
            key: &set.key,
            kind: &set.kind,
            summary: &set.summary,
            importance: set.importance,
            agent: &set.agent,
            tags: &set.tags,
            cites: &set.cites,
        }
    }
}

impl Entry {
    /// Takes the fields an `add` or an update's `set` gives.
    fn take(&mut self, f: Fields<'_>) {
        if let Some(e) = text(f.expires_at) {
            self.expires_at = Some(normalise_time(&e));
        }
        if let Some(k) = text(f.key) {
            self.key = Some(k);
        }
        if let Some(k) = text(f.kind) {
            self.kind = Some(k);
        }
        if let Some(s) = text(f.summary) {
            self.summary = s;
        }
        if let Some(i) = f.importance {
            self.importance = i.clamp(0.0, 1.0);
        }
        if let Some(a) = text(f.agent) {
            self.agent = Some(a);
        }
        if let Some(tags) = f.tags {
            self.tags.clone_from(tags);
        }
        if let Some(cites) = f.cites {
            self.cites = Some(cites.clone());
        }
    }
}

impl Fold {
    /// The live entries' records (the `add` with its updates applied), in the order they
    /// were added, read again from `bytes` (the log this fold was made of, from its start)
    /// one at a time: a fold that kept every record held a 100k-entry log's records all at
    /// once. Gives what `Fold::of(bytes, true)` keeps in `record`.
    pub fn records<'b>(&self, bytes: &'b [u8]) -> impl Iterator<Item = Record> + 'b {
        let done = complete(bytes);
        let mut starts = vec![0usize];
        starts.extend(memchr::memchr_iter(b'\n', done).map(|i| i + 1));
        let op = move |n: usize| -> Option<Op> {
            let (a, b) = (*starts.get(n.checked_sub(1)?)?, *starts.get(n)?);
            let text = std::str::from_utf8(&done[a..b]).ok()?;
            Op::read(text.trim_end_matches(['\n', '\r'])).ok()?.ok()
        };
        let mut entries: Vec<(usize, Vec<usize>)> = self.live.values().map(|e| (e.line, e.later.clone())).collect();
        entries.sort_unstable();
        entries.into_iter().filter_map(move |(at, later)| {
            let mut rec = Record { add: op(at)?, updated_at: None };
            for update in later.into_iter().filter_map(&op) {
                match (update.op, update.set.as_deref()) {
                    (Kind::Update, Some(set)) => rec.update(set, update.at.as_deref()),
                    (Kind::Review, _) if update.decision == Some(Decision::Approve) => rec.add.review = None,
                    _ => {}
                }
            }
            Some(rec)
        })
    }
}

/// The text of line `n` (from 1) of `bytes`.
fn nth_line(bytes: &[u8], n: usize) -> std::borrow::Cow<'_, str> {
    let line = bytes.split(|b| *b == b'\n').nth(n.saturating_sub(1)).unwrap_or_default();
    String::from_utf8_lossy(line)
}

/// A string field's text, when it is not blank.
fn text(field: &Option<String>) -> Option<String> {
    field.as_deref().filter(|t| !t.trim().is_empty()).map(str::to_owned)
}

/// The importance of an entry that gives none.
pub const DEFAULT_IMPORTANCE: f64 = 0.5;

#[cfg(test)]
mod tests {
    use super::*;

    fn add(id: &str, at: &str) -> String {
        format!("{{\"op\":\"add\",\"id\":\"{id}\",\"at\":\"{at}\",\"content\":\"c\",\"summary\":\"s {id}\"}}\n")
    }

    fn proposal(id: &str, at: &str, key: &str) -> String {
        format!(
            "{{\"op\":\"add\",\"id\":\"{id}\",\"at\":\"{at}\",\"key\":\"{key}\",\"content\":\"c\",\"summary\":\"s\",\"review\":\"proposed\"}}\n"
        )
    }

    fn review(id: &str, at: &str, decision: &str) -> String {
        format!("{{\"op\":\"review\",\"id\":\"{id}\",\"at\":\"{at}\",\"decision\":\"{decision}\",\"by\":\"human\"}}\n")
    }

    #[test]
    fn a_proposal_is_live_but_proposed_until_an_approval_in_any_line_order() {
        let (t1, t2, now) = ("2026-11-22T10:00:00Z", "2026-11-22T11:00:00Z", "2026-11-22T12:00:00Z");
        let held = add("m_old", "2026-11-22T09:00:00Z").replace("\"summary\"", "\"key\":\"k\",\"summary\"");
        let log = [held.clone(), proposal("m_new", t1, "k")].concat();
        let fold = Fold::of(log.as_bytes(), true);
        assert!(fold.live["m_new"].proposed);
        assert!(fold.live["m_new"].record.as_ref().unwrap().add.is_proposed());
        // A proposal holds its key only once approved: the live holder stays the one found.
        assert_eq!(fold.by_key("k", now).map(|(id, _)| id.as_str()), Some("m_old"));

        // Approved, in either order of the lines (a union merge may put the approval first).
        for log in [
            [held.clone(), proposal("m_new", t1, "k"), review("m_new", t2, "approve")].concat(),
            [held.clone(), review("m_new", t2, "approve"), proposal("m_new", t1, "k")].concat(),
        ] {
            let fold = Fold::of(log.as_bytes(), true);
            let e = &fold.live["m_new"];
            assert!(!e.proposed, "{log}");
            assert!(!e.record.as_ref().unwrap().add.is_proposed());
            assert_eq!(e.lines(), 2, "the approval is one of its lines, kept by compaction");
            assert_eq!(fold.by_key("k", now).map(|(id, _)| id.as_str()), Some("m_new"));
            let records: Vec<Record> = fold.records(log.as_bytes()).collect();
            assert!(records.iter().all(|r| !r.add.is_proposed()), "{records:?}");
            let (keep, compacted) = fold.clone().compacted(now);
            assert_eq!(keep.len(), 3);
            assert!(!compacted.live["m_new"].proposed);
        }
        // An approval older than the proposal (a new incarnation of its id) does not hold.
        let log = [review("m_new", t1, "approve"), proposal("m_new", t2, "k")].concat();
        assert!(Fold::of(log.as_bytes(), false).live["m_new"].proposed);

        // Rejected: the `review` line and the `delete` written with it leave nothing live.
        let log = [
            proposal("m_new", t1, "k"),
            review("m_new", t2, "reject"),
            format!("{{\"op\":\"delete\",\"id\":\"m_new\",\"at\":\"{t2}\"}}\n"),
        ]
        .concat();
        let fold = Fold::of(log.as_bytes(), false);
        assert!(fold.live.is_empty());
        assert_eq!(fold.dead_lines(now), 2, "the tombstone is kept");
    }

    #[test]
    fn a_review_op_reads_and_writes_back_byte_for_byte() {
        let line = r#"{"op":"review","id":"m_3fa9c1d2e4b5","at":"2026-11-22T10:00:00Z","author":{"surface":"cli"},"decision":"approve","by":"human","supersedes":["m_000000000001"]}"#;
        let op = Op::read(line).unwrap().unwrap();
        assert_eq!((op.op, op.decision, op.by.as_deref()), (Kind::Review, Some(Decision::Approve), Some("human")));
        assert!(op.missing().is_empty());
        assert_eq!(op.line(), line);
        let skipped = Op::read(r#"{"op":"review","id":"m_1","at":"2026-11-22T10:00:00Z","decision":"maybe"}"#);
        assert_eq!(skipped.unwrap().unwrap_err().field.as_deref(), Some("decision"));
    }

    #[test]
    fn ops_fold_in_order_and_reads_go_on_from_where_they_stopped() {
        let log = [
            add("m_1", "2026-11-22T10:00:00+01:00"),
            add("m_2", "2026-11-22T10:00:00Z"),
            "{\"op\":\"delete\",\"id\":\"m_1\"}\n".into(),
            "{\"op\":\"update\",\"id\":\"m_2\",\"set\":{\"importance\":0.9,\"id\":\"x\"}}\n".into(),
            "bad\n".into(),
            "{\"op\":\"link\",\"id\":\"m_2\",\"commit\":\"abc\"}\n".into(),
            add("m_1", "2026-11-22T11:00:00Z"),
            "{\"op\":\"add\",\"id\":\"m_3\"".into(),
        ]
        .concat();
        let whole = Fold::of(log.as_bytes(), false);
        assert_eq!(whole.live.keys().collect::<Vec<_>>(), ["m_1", "m_2"]);
        let m2 = &whole.live["m_2"];
        assert_eq!((m2.importance, m2.links.clone(), m2.later.clone()), (0.9, vec!["abc".to_owned()], vec![4, 6]));
        assert_eq!((whole.live["m_1"].line, whole.live["m_1"].importance), (7, DEFAULT_IMPORTANCE));
        assert_eq!(whole.lines, 7, "the torn final line is not read");
        assert_eq!(whole.problems.iter().map(|p| p.line).collect::<Vec<_>>(), [5]);
        assert_eq!(whole.bad, [5]);
        // Lines 1 (superseded add) and 3 (delete) are dead; 5 (bad) is kept.
        assert_eq!(whole.dead_lines("2026-11-22T12:00:00Z"), 2);

        // Read in two parts, the fold is the same.
        let cut = log.find("bad").unwrap() + 2;
        let mut parts = Fold::new(false);
        let used = parts.read(&log.as_bytes()[..cut]);
        parts.read(&log.as_bytes()[used..]);
        assert_eq!(parts.live, whole.live);
        assert_eq!((parts.lines, parts.offset), (whole.lines, whole.offset));
        assert_eq!(parts.problems.iter().map(|p| p.line).collect::<Vec<_>>(), [5]);
        assert_eq!(whole.live["m_2"].at, "2026-11-22T10:00:00Z");
        assert_eq!(parts.live["m_1"].at, "2026-11-22T11:00:00Z");
    }

    #[test]
    fn a_compaction_plan_gives_the_fold_of_the_kept_lines() {
        let log = [
            add("m_1", "2026-11-22T10:00:00Z"),
            "{\"op\":\"delete\",\"id\":\"m_1\"}\n".into(),
            "{\"op\":\"add\",\"id\":\"m_2\",\"at\":\"2026-11-22T10:00:00Z\",\"key\":\"k\",\"expires_at\":\"2027-01-01T00:00:00Z\"}\n".into(),
            "junk\n".into(),
            "{\"op\":\"link\",\"id\":\"m_2\",\"commit\":\"abc\"}\n".into(),
            "{\"op\":\"add\",\"id\":\"m_3\",\"at\":\"2026-11-22T10:00:00Z\",\"expires_at\":\"2026-11-23T00:00:00Z\"}\n".into(),
        ]
        .concat();
        let now = "2026-12-01T00:00:00Z";
        let (keep, planned) = Fold::of(log.as_bytes(), false).compacted(now);
        assert_eq!(keep, [3, 4, 5], "the live entry's lines and the bad line");
        let kept: String =
            log.split_inclusive('\n').enumerate().filter(|(n, _)| keep.contains(&(n + 1))).map(|(_, l)| l).collect();
        let mut planned = planned;
        planned.offset = kept.len() as u64;
        let read = Fold::of(kept.as_bytes(), false);
        assert_eq!(planned.live, read.live);
        assert_eq!((planned.lines, planned.offset, &planned.keys), (read.lines, read.offset, &read.keys));
        assert_eq!((&planned.bad, &read.bad), (&vec![2], &vec![2]));
        assert_eq!(planned.problems.iter().map(|p| p.line).collect::<Vec<_>>(), [2]);
        assert_eq!(planned.dead_lines(now), 0);
        assert_eq!(planned.by_key("k", now).map(|(id, _)| id.as_str()), Some("m_2"));
    }

    #[test]
    fn a_key_two_live_entries_hold_leads_to_the_one_that_took_it_last() {
        // Found by parse::fuzz. A union merge of two branches that each upserted key `k`
        // leaves two live entries holding it. A compaction plan gave the key to the larger
        // id, not the later entry; deleting the later one left the key to nobody; and an
        // expired later one hid the earlier one.
        let keyed = |id: &str, expires: &str| {
            format!("{{\"op\":\"add\",\"id\":\"{id}\",\"at\":\"2026-11-22T10:00:00Z\",\"key\":\"k\"{expires}}}\n")
        };
        let now = "2026-12-01T00:00:00Z";
        let holder = |log: &str| Fold::of(log.as_bytes(), false).by_key("k", now).map(|(id, _)| id.clone());
        let merged = [keyed("m_3", ""), keyed("m_0", "")].concat();
        assert_eq!(holder(&merged).as_deref(), Some("m_0"));
        let (_, planned) = Fold::of(merged.as_bytes(), false).compacted(now);
        assert_eq!(planned.by_key("k", now).map(|(id, _)| id.as_str()), Some("m_0"));
        assert_eq!(holder(&format!("{merged}{{\"op\":\"delete\",\"id\":\"m_0\"}}\n")).as_deref(), Some("m_3"));
        let expired = [keyed("m_3", ""), keyed("m_0", ",\"expires_at\":\"2026-11-30T00:00:00Z\"")].concat();
        assert_eq!(holder(&expired).as_deref(), Some("m_3"));
        // An update that moves the key to another entry takes it from the first.
        let moved = format!("{merged}{{\"op\":\"update\",\"id\":\"m_0\",\"set\":{{\"key\":\"j\"}}}}\n");
        assert_eq!(holder(&moved).as_deref(), Some("m_3"));
    }

    #[test]
    fn a_tombstone_kills_the_adds_made_before_it_wherever_they_stand() {
        let add_at = |at: &str| format!("{{\"op\":\"add\",\"id\":\"m_1\",\"at\":\"{at}\",\"content\":\"c\"}}\n");
        let delete_at = |at: &str, until: &str| {
            format!("{{\"op\":\"delete\",\"id\":\"m_1\",\"at\":\"{at}\",\"expires_at\":\"{until}\"}}\n")
        };
        let live = |log: &str| Fold::of(log.as_bytes(), false).live.keys().cloned().collect::<Vec<_>>();
        let add = add_at("2026-11-22T10:00:00Z");
        let tomb = delete_at("2026-11-22T11:00:00Z", "2026-12-06T10:00:00Z");
        // A merge put the add after its delete: still deleted.
        assert!(live(&format!("{tomb}{add}")).is_empty());
        assert!(live(&format!("{add}{tomb}{add}")).is_empty());
        // Added again later, or in the same second as the delete: a new incarnation.
        assert_eq!(live(&format!("{add}{tomb}{}", add_at("2026-11-22T12:00:00Z"))), ["m_1"]);
        assert_eq!(live(&format!("{tomb}{}", add_at("2026-11-22T12:00:00Z"))), ["m_1"]);
        assert_eq!(
            live(&format!("{}{}", delete_at("2026-11-22T12:00:00Z", "x"), add_at("2026-11-22T12:00:00Z"))),
            ["m_1"]
        );
        // An old delete merged in after a newer add of the same content leaves it.
        assert_eq!(live(&format!("{}{tomb}", add_at("2026-11-22T12:00:00Z"))), ["m_1"]);
        // A delete written by hand, without a time, deletes what is live where it stands.
        assert!(live(&format!("{add}{{\"op\":\"delete\",\"id\":\"m_1\"}}\n")).is_empty());

        // Compaction keeps the tombstone, and drops it once the entry would have expired.
        let log = format!("{add}{tomb}");
        let (keep, planned) = Fold::of(log.as_bytes(), false).compacted("2026-11-30T00:00:00Z");
        assert_eq!(keep, [2]);
        assert_eq!(planned.dead_lines("2026-11-30T00:00:00Z"), 0);
        assert_eq!(Fold::of(log.as_bytes(), false).dead_lines("2026-11-30T00:00:00Z"), 1);
        let (keep, _) = Fold::of(log.as_bytes(), false).compacted("2026-12-07T00:00:00Z");
        assert!(keep.is_empty());
        assert_eq!(Fold::of(log.as_bytes(), false).dead_lines("2026-12-07T00:00:00Z"), 2);
        // The tombstone learns the expiry from the add it deleted when the op has none.
        let bare = format!(
            "{}{{\"op\":\"delete\",\"id\":\"m_1\",\"at\":\"2026-11-22T11:00:00Z\"}}\n",
            add.replace("\"content\"", "\"expires_at\":\"2026-12-01T00:00:00Z\",\"content\"")
        );
        assert_eq!(Fold::of(bare.as_bytes(), false).compacted("2026-11-30T00:00:00Z").0, [2]);
        assert!(Fold::of(bare.as_bytes(), false).compacted("2026-12-02T00:00:00Z").0.is_empty());
    }

    #[test]
    fn expired_entries_are_dead() {
        let log = "{\"op\":\"add\",\"id\":\"m_1\",\"at\":\"2026-01-01T00:00:00Z\",\"expires_at\":\"2026-02-01T00:00:00+00:00\"}\n";
        let fold = Fold::of(log.as_bytes(), true);
        assert_eq!(fold.live["m_1"].expires_at.as_deref(), Some("2026-02-01T00:00:00Z"));
        assert_eq!(fold.dead_lines("2026-01-15T00:00:00Z"), 0);
        assert_eq!(fold.dead_lines("2026-02-01T00:00:00Z"), 1);
        assert_eq!(fold.live_at("2026-02-02T00:00:00Z").count(), 0);
        assert!(fold.live["m_1"].record.is_some());
    }

    #[test]
    fn records_read_again_are_the_records_a_fold_keeps() {
        let log = [
            r#"{"op":"add","id":"m_1","at":"2026-11-22T10:00:00Z","content":"one","tags":["a"],"importance":0.5}"#,
            r#"{"op":"add","id":"m_2","at":"2026-11-22T10:00:01Z","content":"two"}"#,
            r#"{"op":"update","id":"m_1","at":"2026-11-22T11:00:00Z","set":{"tags":["b"],"importance":0.9,"id":"x"}}"#,
            r#"{"op":"link","id":"m_1","at":"2026-11-22T11:00:01Z","commit":"abc"}"#,
            r#"{"op":"delete","id":"m_2","at":"2026-11-22T12:00:00Z"}"#,
            r#"{"op":"add","id":"m_3","at":"2026-11-22T12:00:01Z","content":"three"}"#,
            r#"not json"#,
            r#"{"op":"update","id":"m_3","at":"2026-11-22T13:00:00Z","set":{"summary":"3"}}"#,
            r#"{"op":"add","id":"m_2","at":"2026-11-22T14:00:00Z","content":"two again"}"#,
            r#"{"op":"update","id":"m_1","at":"2026-11-22T15:00:00Z","set":"not an object"}"#,
            r#"{"op":"add","id":"m_4","at":"2026-11-22T16:00:00Z""#,
        ]
        .join("\n");
        let kept = Fold::of(log.as_bytes(), true);
        let mut entries: Vec<&Entry> = kept.live.values().collect();
        entries.sort_by_key(|e| e.line);
        let want: Vec<Record> = entries.iter().filter_map(|e| e.record.clone()).collect();
        let got: Vec<Record> = Fold::of(log.as_bytes(), false).records(log.as_bytes()).collect();
        assert_eq!(got, want);
        let ids: Vec<&str> = got.iter().map(|r| r.add.id.as_str()).collect();
        assert_eq!(ids, ["m_1", "m_3", "m_2"]);
        assert_eq!(
            (got[0].add.tags.clone(), got[0].add.importance, got[0].updated_at.as_deref()),
            (Some(vec!["b".to_owned()]), Some(0.9), Some("2026-11-22T11:00:00Z"))
        );
        assert_eq!(got[1].add.summary.as_deref(), Some("3"));
    }
}
