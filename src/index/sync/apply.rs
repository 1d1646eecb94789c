//! Applying what was read to the index writer: the items of a changed file replace its old
//! ones, a vanished file's items go, a memory log's new ops are added or deleted one by
//! one. What was applied is counted in the report and noted for the manifest.

use std::collections::{BTreeMap, BTreeSet};

use tantivy::query::TermSetQuery;
use tantivy::{IndexWriter, TantivyDocument, Term};

use super::super::manifest::{FileState, Manifest};
use super::super::markup;
use super::super::memlog::{Change, LogMark};
use super::super::schema::ref_rank;
use super::super::{Fields, tantivy_err};
use super::SyncReport;
use super::read::Read;
use crate::error::Result;
use crate::model::IndexDoc;

/// A sync's changes to the writer, as they are made.
pub(super) struct Apply<'w, 'a> {
    pub writer: &'w mut IndexWriter,
    pub fields: &'a Fields,
    /// Everything was cleared first: nothing is there to replace.
    pub full: bool,
    pub report: &'a mut SyncReport,
    /// Each memory log's checkpoint in the next commit.
    pub logs: &'a mut BTreeMap<String, LogMark>,
    /// The entries held back for review, kept in the commit's payload.
    pub proposals: &'a mut std::collections::BTreeSet<String>,
    /// Something changed that the next commit must hold.
    pub dirty: bool,
    /// Files read: (path, new state); their manifest entries change.
    pub applied: Vec<(String, FileState)>,
    /// Documents read and not yet given to the writer, the refIds they replace, and theirs.
    pub pending: Pending,
}

/// Documents held back so that one delete replaces the items of many files: tantivy keeps
/// each delete operation (about a kilobyte) until every indexing thread has moved past
/// it, and one per file held tens of megabytes after a large re-read.
#[derive(Default)]
pub(super) struct Pending {
    deletes: Vec<Term>,
    docs: Vec<TantivyDocument>,
    /// The refIds deleted or added by what is held: a file that touches one of them again
    /// is applied after them, as it would have been one by one.
    refs: std::collections::HashSet<String>,
    bytes: usize,
}

/// At most this many documents, or bytes of body, are held back.
const PENDING_DOCS: usize = 2048;
const PENDING_BYTES: usize = 16 << 20;

impl Apply<'_, '_> {
    /// Takes the items of a file that went away out of the index and the manifest.
    pub fn vanished(&mut self, rel: &str, manifest: &mut Manifest) -> bool {
        self.logs.remove(rel);
        self.dirty |= self.proposals.remove(rel);
        let Some(old) = manifest.files.remove(rel) else { return false };
        for r in old.refs_of(rel) {
            self.writer.delete_term(Term::from_field_text(self.fields.ref_id, r));
        }
        self.report.removed += 1;
        self.report.changes.push((rel.to_owned(), "removed"));
        self.dirty = true;
        true
    }

    /// Applies one file as a worker read it; `old` is its manifest entry.
    pub fn read(&mut self, mut read: Read, old: Option<&FileState>) -> Result<()> {
        let is_new = old.is_none();
        if let Some(log) = read.log.take() {
            self.flush()?;
            let changed = log.whole || !log.changes.is_empty();
            let old_refs: Vec<String> = old.map(|o| o.refs.clone()).unwrap_or_default();
            read.state.refs = self.log_changes(old_refs, log.whole, log.changes)?;
            if self.logs.get(&read.rel) != Some(&log.mark) {
                self.logs.insert(read.rel.clone(), log.mark);
                self.dirty = true;
            }
            if changed {
                self.count(&read.rel, is_new);
            }
            self.report.problems.extend(log.problems.into_iter().map(|mut p| {
                p.path.clone_from(&read.rel);
                p
            }));
            self.applied.push((read.rel, read.state));
            return Ok(());
        }
        if read.docs.is_some() {
            let was = self.proposals.contains(&read.rel);
            if read.proposed && !was {
                self.proposals.insert(read.rel.clone());
            } else if !read.proposed && was {
                self.proposals.remove(&read.rel);
            }
            self.dirty |= read.proposed != was;
        }
        let Some(docs) = read.docs.take() else {
            // Only the mtime moved: the items stay.
            read.state.refs = old.map(|o| o.refs.clone()).unwrap_or_default();
            self.applied.push((read.rel, read.state));
            return Ok(());
        };
        // Delete first so an item whose refId another file made before is replaced, never
        // doubled. After a clear, or for the item keyed on a new file's own path, nothing
        // can be there: a rebuild skips 100k deletes.
        let mut gone: Vec<&str> = old.map(|o| o.refs_of(&read.rel)).unwrap_or_default();
        gone.extend(
            docs.iter().filter(|d| !(self.full || (is_new && d.ref_id == read.rel))).map(|d| d.ref_id.as_str()),
        );
        let touches_held =
            gone.iter().copied().chain(docs.iter().map(|d| d.ref_id.as_str())).any(|r| self.pending.refs.contains(r));
        if touches_held {
            self.flush()?;
        }
        let p = &mut self.pending;
        for r in gone {
            p.refs.insert(r.to_owned());
            p.deletes.push(Term::from_field_text(self.fields.ref_id, r));
        }
        let mut refs: Vec<String> = Vec::with_capacity(docs.len());
        for d in docs {
            // After a clear nothing is deleted, so the order of what is held cannot matter.
            if !self.full {
                p.refs.insert(d.ref_id.clone());
            }
            p.bytes += d.bytes;
            p.docs.push(d.doc);
            refs.push(d.ref_id);
        }
        if p.docs.len() >= PENDING_DOCS || p.bytes >= PENDING_BYTES {
            self.flush()?;
        }
        let rel = read.rel.clone();
        read.state.set_refs(&rel, refs);
        self.count(&read.rel, is_new);
        self.report.problems.append(&mut read.problems);
        self.applied.push((read.rel, read.state));
        Ok(())
    }

    fn count(&mut self, rel: &str, is_new: bool) {
        if is_new {
            self.report.new += 1;
        } else {
            self.report.changed += 1;
        }
        self.report.changes.push((rel.to_owned(), if is_new { "new" } else { "changed" }));
        self.dirty = true;
    }

    /// Gives the writer what is held back: one delete of the refIds it replaces, then its
    /// documents. Before a log's ops, and at the end of the reads.
    pub fn flush(&mut self) -> Result<()> {
        let p = std::mem::take(&mut self.pending);
        if !p.deletes.is_empty() {
            self.writer.delete_query(Box::new(TermSetQuery::new(p.deletes))).map_err(tantivy_err)?;
        }
        for d in p.docs {
            self.writer.add_document(d).map_err(tantivy_err)?;
        }
        Ok(())
    }

    /// Applies what a log gave; returns the refIds the log now holds.
    ///
    /// A log read whole replaces everything it made by one delete (of its old refIds and
    /// those it adds, which another file may hold) before its adds: tantivy keeps each
    /// delete operation, about a kilobyte, until every indexing thread has moved past it,
    /// and one per entry held 100 MB after a 100k-entry log was read again.
    fn log_changes(&mut self, old: Vec<String>, whole: bool, changes: Vec<Change>) -> Result<Vec<String>> {
        if whole {
            let f = self.fields.ref_id;
            let mut gone: Vec<Term> = old.iter().map(|r| Term::from_field_text(f, r)).collect();
            gone.extend(changes.iter().filter_map(|c| match c {
                Change::Add(d) => Some(Term::from_field_text(f, &d.ref_id)),
                Change::Delete(_) => None,
            }));
            if !gone.is_empty() && !self.full {
                self.writer.delete_query(Box::new(TermSetQuery::new(gone))).map_err(tantivy_err)?;
            }
            let mut refs = BTreeSet::new();
            for c in changes {
                match c {
                    Change::Add(d) => {
                        self.writer.add_document(to_document(self.fields, &d)).map_err(tantivy_err)?;
                        refs.insert(d.ref_id);
                    }
                    // A whole read gives the live entries only.
                    Change::Delete(id) => {
                        refs.remove(&id);
                    }
                }
            }
            return Ok(refs.into_iter().collect());
        }
        let mut refs: BTreeSet<String> = old.into_iter().collect();
        for c in changes {
            match c {
                Change::Add(d) => {
                    self.writer.delete_term(Term::from_field_text(self.fields.ref_id, &d.ref_id));
                    self.writer.add_document(to_document(self.fields, &d)).map_err(tantivy_err)?;
                    refs.insert(d.ref_id);
                }
                Change::Delete(id) => {
                    self.writer.delete_term(Term::from_field_text(self.fields.ref_id, &id));
                    refs.remove(&id);
                }
            }
        }
        Ok(refs.into_iter().collect())
    }
}

/// The tantivy document of an item.
pub(super) fn to_document(f: &Fields, d: &IndexDoc) -> TantivyDocument {
    let mut doc = TantivyDocument::new();
    doc.add_text(f.ref_id, &d.ref_id);
    doc.add_u64(f.ref_rank, ref_rank(&d.ref_id));
    if let Some(k) = d.kind {
        doc.add_text(f.kind, k.as_str());
    }
    if let Some(scope) = &d.scope {
        doc.add_text(f.scope, scope);
        let mut prefix = String::new();
        for part in scope.split('/') {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            doc.add_text(f.scope_path, &prefix);
        }
    }
    let opt = |doc: &mut TantivyDocument, field, v: &Option<String>| {
        if let Some(v) = v {
            doc.add_text(field, v);
        }
    };
    opt(&mut doc, f.topic, &d.topic);
    opt(&mut doc, f.status, &d.status);
    opt(&mut doc, f.category, &d.category);
    opt(&mut doc, f.created, &d.created);
    opt(&mut doc, f.updated, &d.updated);
    if d.summary_unsearched {
        doc.add_text(f.summary_stored, &d.description);
    } else {
        doc.add_text(f.name, &d.name);
        doc.add_text(f.description, &d.description);
    }
    for t in &d.tags {
        doc.add_text(f.tags, t);
        doc.add_text(f.tag, t);
    }
    doc.add_text(f.path, &d.path);
    let body = markup::searchable(&d.body);
    if let Some(model) = f.model
        && let Some(vector) =
            model.embed(&super::super::meaning::item_text(&d.name, &d.description, &body), d.memory.is_some())
    {
        doc.add_bytes(f.vector, &vector.quantize().to_bytes());
    }
    doc.add_text(f.body, body);
    if d.store_body {
        doc.add_text(f.body_stored, &d.body);
    }
    for flag in &d.flags {
        doc.add_text(f.flags, flag);
    }
    opt(&mut doc, f.namespace, &d.namespace);
    opt(&mut doc, f.meta, &d.meta);
    for cite in &d.cites {
        doc.add_text(f.cites, cite);
    }
    for issue in &d.issues {
        doc.add_text(f.issue, issue);
    }
    if let Some(m) = &d.memory {
        opt(&mut doc, f.expires, &m.expires_at);
        opt(&mut doc, f.agent, &m.agent);
        opt(&mut doc, f.branch, &m.branch);
        opt(&mut doc, f.commit, &m.commit);
        opt(&mut doc, f.key, &m.key);
        if let Some(i) = m.importance {
            doc.add_f64(f.importance, i);
        }
        if let Some(at) = d.created.as_deref().and_then(|c| chrono::DateTime::parse_from_rfc3339(c.trim()).ok()) {
            doc.add_i64(f.added, at.timestamp());
        }
    }
    doc
}
