//! Sync: converge the index to the files (DESIGN §3).
//!
//! A scan stats the canonical folders (and the configured extra folders) without reading
//! anything; only files whose size or mtime differ from the manifest are read, and only
//! those whose blake3 differs are parsed again. Vanished files lose their items. All of it
//! goes into one commit, after which the manifest is written with the commit's epoch:
//! whole after a full sync, else as a journal record of the files this sync changed.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Instant;

use serde::Serialize;
use tantivy::{TantivyDocument, Term};

use super::extract::extract_with_diagnostics;
use super::manifest::{self, Cached, Change, FileState, Manifest, under};
use super::memlog::{self, LogRead, Op};
use super::{Index, Payload, SCHEMA_VERSION, tantivy_err};
use crate::config::Config;
use crate::error::Result;
use crate::layout::{self, FileKind, Includes, JOURNAL_FILE, MANIFEST_FILE};
use crate::model::{Diagnostic, IndexDoc};
use crate::store::{self, Scanned};

/// How to sync.
#[derive(Debug, Clone, Default)]
pub struct SyncOptions {
    /// Drop everything and index all files again.
    pub rebuild: bool,
    /// Extra folders or globs for this run, besides `index.include`.
    pub include: Vec<String>,
    /// Counts files as they are processed, for a progress display.
    pub progress: Option<Arc<AtomicUsize>>,
}

/// What a sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SyncReport {
    /// Files indexed for the first time.
    pub new: usize,
    /// Files whose content changed.
    pub changed: usize,
    /// Files that vanished.
    pub removed: usize,
    /// Files seen in all.
    pub files: usize,
    /// Items in the index after the sync.
    pub items: u64,
    pub millis: u64,
    /// Whether everything was indexed again (asked for, or the index did not match the
    /// manifest).
    pub rebuilt: bool,
    /// Whether another process holds the writer role, so nothing was written here.
    pub reader_only: bool,
    /// Each file applied: (path, `new` | `changed` | `removed`).
    #[serde(skip)]
    pub changes: Vec<(String, &'static str)>,
    /// Syntax problems of the files read (they are indexed anyway).
    #[serde(skip)]
    pub problems: Vec<Diagnostic>,
}

/// The tantivy document of an item.
pub fn to_document(f: &super::Fields, d: &IndexDoc) -> TantivyDocument {
    let mut doc = TantivyDocument::new();
    doc.add_text(f.ref_id, &d.ref_id);
    doc.add_u64(f.ref_rank, super::schema::ref_rank(&d.ref_id));
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
    doc.add_text(f.name, &d.name);
    doc.add_text(f.description, &d.description);
    for t in &d.tags {
        doc.add_text(f.tags, t);
        doc.add_text(f.tag, t);
    }
    doc.add_text(f.path, &d.path);
    doc.add_text(f.body, &d.body);
    if d.store_body {
        doc.add_text(f.body_stored, &d.body);
    }
    for flag in &d.flags {
        doc.add_text(f.flags, flag);
    }
    opt(&mut doc, f.namespace, &d.namespace);
    opt(&mut doc, f.meta, &d.meta);
    if let Some(m) = &d.memory {
        opt(&mut doc, f.expires, &m.expires_at);
        opt(&mut doc, f.agent, &m.agent);
        opt(&mut doc, f.branch, &m.branch);
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

/// A file read by a worker: its new state and items, or None when only its mtime moved.
struct Read {
    rel: String,
    state: FileState,
    docs: Option<Vec<IndexDoc>>,
    /// What a JSONL log gave instead of `docs`.
    log: Option<LogRead>,
    problems: Vec<Diagnostic>,
}

impl Index {
    /// Converges the index to the files. A reader (another process writes) does nothing.
    pub fn sync(&mut self, config: &Config, opts: &SyncOptions) -> Result<SyncReport> {
        self.sync_paths(config, opts, None)
    }

    /// Converges the index for `targets` only (root-relative files or folders, which may
    /// have vanished): what the watcher calls with the paths of a batch of events. `None`
    /// means the whole root. A manifest that does not match the index widens it to all.
    pub fn sync_paths(
        &mut self,
        config: &Config,
        opts: &SyncOptions,
        targets: Option<&[String]>,
    ) -> Result<SyncReport> {
        let started = Instant::now();
        let mut report = SyncReport::default();
        let Some(writer) = self.writer.as_mut() else {
            report.reader_only = true;
            self.reader.reload().map_err(tantivy_err)?;
            report.items = self.reader.searcher().num_docs();
            return Ok(report);
        };
        let mut patterns = config.index.include.clone();
        patterns.extend(opts.include.iter().cloned());
        let includes = Includes::new(&patterns)?;

        // The writer keeps its manifest between syncs (no other process writes it while
        // this one holds the writer lock); a sync that fails leaves none, so the next one
        // reads the files again. A batch of a few paths reads only their entries.
        let mut cached = self.manifest.take().unwrap_or_else(|| read_manifest(&self.root, targets));
        let mut manifest = std::mem::take(&mut cached.manifest);
        let payload = read_payload_of(&self.index)?;
        let mut logs = payload.logs.clone();
        let first_build = manifest == Manifest::default() && payload == Payload::default();
        let full = opts.rebuild || manifest.epoch != payload.epoch || manifest.version != SCHEMA_VERSION;
        let targets = if full { None } else { targets };
        if full {
            cached.partial = false;
            writer.delete_all_documents().map_err(tantivy_err)?;
            manifest.files.clear();
            logs.clear();
            report.rebuilt = !first_build;
        }

        let root = self.root.clone();
        let starts: Vec<PathBuf> = match targets {
            Some(ts) => ts.iter().map(|t| root.join(t)).collect(),
            None => layout::index_starts(&includes).iter().map(|s| root.join(s)).collect(),
        };
        let under_targets = |k: &str| targets.is_none_or(|ts| under(k, ts));
        let scanned = store::scan(&root, &starts, |rel| layout::is_indexed(rel, &includes));
        report.files = scanned.len();
        tracing::debug!(files = scanned.len(), ms = started.elapsed().as_millis(), "sync: scanned");

        // Both lists are sorted by path: one merge finds what vanished and what changed.
        let mut vanished: Vec<String> = Vec::new();
        let mut to_read: Vec<&Scanned> = Vec::new();
        {
            let mut known = manifest.files.iter().peekable();
            for s in &scanned {
                while let Some((k, _)) = known.next_if(|(k, _)| k.as_str() < s.rel.as_str()) {
                    if under_targets(k) {
                        vanished.push(k.clone());
                    }
                }
                match known.next_if(|(k, _)| k.as_str() == s.rel.as_str()) {
                    Some((_, m)) if m.size == s.size && m.mtime == s.mtime => {}
                    _ => to_read.push(s),
                }
            }
            vanished.extend(known.filter(|(k, _)| under_targets(k)).map(|(k, _)| k.clone()));
        }
        let marker = root.join(layout::SYNCING_MARKER);
        let working = full || !vanished.is_empty() || !to_read.is_empty();
        if working {
            store::write_marker(&marker, std::process::id().to_string().as_bytes())?;
        }
        let mut dirty = false;
        let mut changes: Vec<Change> = Vec::new();
        for rel in &vanished {
            logs.remove(rel);
            if let Some(old) = manifest.files.remove(rel) {
                changes.push((rel.clone(), None));
                for r in old.refs_of(rel) {
                    writer.delete_term(Term::from_field_text(self.fields.ref_id, r));
                }
                report.removed += 1;
                report.changes.push((rel.clone(), "removed"));
                dirty = true;
            }
        }
        if let Some(p) = &opts.progress {
            p.fetch_add(scanned.len() - to_read.len(), Ordering::Relaxed);
        }

        let (tx, rx) = mpsc::sync_channel::<Result<Read>>(256);
        let next = AtomicUsize::new(0);
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8);
        let mut applied: Vec<(String, FileState, bool)> = Vec::new();
        let marks = logs.clone();
        std::thread::scope(|scope| -> Result<()> {
            for _ in 0..workers {
                let tx = tx.clone();
                let (to_read, next, includes, known, root) = (&to_read, &next, &includes, &manifest.files, &root);
                let marks = &marks;
                scope.spawn(move || {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(s) = to_read.get(i) else { break };
                        if let Some(namespace) = layout::memory_namespace(&s.rel) {
                            let r = read_log(&root.join(&s.rel), s, namespace, marks.get(&s.rel));
                            if tx.send(r).is_err() {
                                break;
                            }
                            continue;
                        }
                        let r = store::read_sized(&root.join(&s.rel), s.size).map(|bytes| {
                            let hash = *blake3::hash(&bytes).as_bytes();
                            let unchanged = known.get(s.rel.as_str()).is_some_and(|k| k.hash == hash);
                            let (docs, problems) = if unchanged {
                                (None, Vec::new())
                            } else {
                                let kind = layout::index_kind(&s.rel, includes).unwrap_or(FileKind::Markdown);
                                let (docs, mut problems) = extract_with_diagnostics(&kind, &s.rel, &bytes);
                                for p in &mut problems {
                                    p.path.clone_from(&s.rel);
                                }
                                (Some(docs), problems)
                            };
                            let state = FileState { size: s.size, mtime: s.mtime, hash, refs: Vec::new() };
                            Read { rel: s.rel.clone(), state, docs, log: None, problems }
                        });
                        if tx.send(r).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(tx);
            for r in rx {
                if let Some(p) = &opts.progress {
                    p.fetch_add(1, Ordering::Relaxed);
                }
                let mut read = match r {
                    Ok(read) => read,
                    // A file that vanished between the scan and the read is picked up by
                    // the next sync; one that cannot be read is logged and skipped.
                    Err(e) => {
                        tracing::warn!("{e}");
                        continue;
                    }
                };
                let old = manifest.files.get(&read.rel);
                if let Some(log) = read.log.take() {
                    let is_new = old.is_none();
                    let old_refs: Vec<String> = old.map(|o| o.refs.clone()).unwrap_or_default();
                    let changed = log.whole || !log.ops.is_empty();
                    let refs = apply_log(writer, &self.fields, old_refs, log.whole, log.ops)?;
                    read.state.refs = refs;
                    if logs.get(&read.rel) != Some(&log.mark) {
                        logs.insert(read.rel.clone(), log.mark);
                        dirty = true;
                    }
                    if changed {
                        if is_new {
                            report.new += 1;
                        } else {
                            report.changed += 1;
                        }
                        report.changes.push((read.rel.clone(), if is_new { "new" } else { "changed" }));
                        dirty = true;
                    }
                    report.problems.extend(log.problems.into_iter().map(|mut p| {
                        p.path.clone_from(&read.rel);
                        p
                    }));
                    applied.push((read.rel, read.state, true));
                    continue;
                }
                match read.docs.take() {
                    None => {
                        read.state.refs = old.map(|o| o.refs.clone()).unwrap_or_default();
                        applied.push((read.rel, read.state, false));
                    }
                    Some(docs) => {
                        let is_new = old.is_none();
                        let old_refs: Vec<String> = old
                            .map(|o| o.refs_of(&read.rel).into_iter().map(str::to_owned).collect())
                            .unwrap_or_default();
                        for r in &old_refs {
                            writer.delete_term(Term::from_field_text(self.fields.ref_id, r));
                        }
                        for d in &docs {
                            // Delete first so an item whose refId another file made before
                            // is replaced, never doubled. After a clear, or for the item
                            // keyed on a new file's own path, nothing can be there: a
                            // rebuild skips 100k deletes.
                            let nothing_there = full || (is_new && d.ref_id == read.rel);
                            if !nothing_there {
                                writer.delete_term(Term::from_field_text(self.fields.ref_id, &d.ref_id));
                            }
                            writer.add_document(to_document(&self.fields, d)).map_err(tantivy_err)?;
                        }
                        let rel = read.rel.clone();
                        read.state.set_refs(&rel, docs.into_iter().map(|d| d.ref_id).collect());
                        if is_new {
                            report.new += 1;
                        } else {
                            report.changed += 1;
                        }
                        report.changes.push((read.rel.clone(), if is_new { "new" } else { "changed" }));
                        report.problems.append(&mut read.problems);
                        dirty = true;
                        applied.push((read.rel, read.state, true));
                    }
                }
            }
            Ok(())
        })?;
        tracing::debug!(read = to_read.len(), ms = started.elapsed().as_millis(), "sync: applied");
        let touched = !applied.is_empty();
        for (rel, state, _) in applied {
            if !full {
                changes.push((rel.clone(), Some(state.clone())));
            }
            manifest.files.insert(rel, state);
        }
        if dirty || full {
            let epoch = payload.epoch + 1;
            let payload = Payload { version: SCHEMA_VERSION, epoch, logs };
            let mut prepared = writer.prepare_commit().map_err(tantivy_err)?;
            tracing::debug!(ms = started.elapsed().as_millis(), "sync: segments written");
            prepared.set_payload(&serde_json::to_string(&payload).unwrap_or_default());
            prepared.commit().map_err(tantivy_err)?;
            tracing::debug!(ms = started.elapsed().as_millis(), "sync: committed");
            manifest.epoch = epoch;
        }
        cached.manifest = manifest;
        if dirty || full || touched {
            cached.manifest.version = SCHEMA_VERSION;
            match cached.record(&changes).filter(|_| !full) {
                Some(record) => {
                    store::append_at(&self.root.join(JOURNAL_FILE), cached.journal_len, &record)?;
                    cached.journal_len += record.len() as u64;
                }
                None => {
                    if cached.partial {
                        // Written whole, it needs every entry: read them, then this sync's.
                        let mut whole = read_manifest(&self.root, None);
                        for (rel, state) in changes {
                            match state {
                                Some(state) => whole.manifest.files.insert(rel, state),
                                None => whole.manifest.files.remove(&rel),
                            };
                        }
                        whole.manifest.version = cached.manifest.version;
                        whole.manifest.epoch = cached.manifest.epoch;
                        cached = whole;
                    }
                    let bytes = cached.manifest.to_bytes();
                    store::write_atomic(&self.root.join(MANIFEST_FILE), &bytes)?;
                    cached.rewritten(&bytes);
                    // Its records extend the manifest just replaced: a replay would skip
                    // them, and the next append would cut them off; drop them now.
                    if let Err(e) = store::remove_file(&self.root.join(JOURNAL_FILE)) {
                        tracing::debug!("{e}");
                    }
                }
            }
        }
        // Also the marker of a writer that died mid-sync: this sync converged.
        if (working || store::exists(&marker))
            && let Err(e) = store::remove_file(&marker)
            && store::exists(&marker)
        {
            return Err(e);
        }
        self.manifest = (!cached.partial).then_some(cached);
        self.reader.reload().map_err(tantivy_err)?;
        report.items = self.reader.searcher().num_docs();
        tracing::debug!(ms = started.elapsed().as_millis(), "sync: reader reloaded");
        report.millis = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ok(report)
    }
}

/// The manifest as the files have it: the manifest file with its journal replayed; only
/// the entries at or below `targets` when there are some (then only the blocks of the
/// manifest that can hold them are read).
fn read_manifest(root: &std::path::Path, targets: Option<&[String]>) -> Cached {
    let journal = store::read_opt(&root.join(JOURNAL_FILE)).ok().flatten().unwrap_or_default();
    let path = root.join(MANIFEST_FILE);
    let file = match targets {
        Some(_) => store::FileAt::open_opt(&path).ok().flatten(),
        None => None,
    };
    match file {
        Some(file) => Cached::read_some(&file, &journal, targets),
        None => {
            let bytes = if targets.is_none() { store::read_opt(&path).ok().flatten() } else { None };
            Cached::read_some(bytes.unwrap_or_default().as_slice(), &journal, targets)
        }
    }
}

impl manifest::Source for store::FileAt {
    fn size(&self) -> usize {
        usize::try_from(self.len()).unwrap_or(usize::MAX)
    }

    fn bytes_at(&self, at: usize, len: usize) -> Option<Cow<'_, [u8]>> {
        self.read_at(at as u64, len).ok().map(Cow::Owned)
    }
}

fn read_log(path: &std::path::Path, s: &Scanned, namespace: &str, mark: Option<&memlog::LogMark>) -> Result<Read> {
    let state = FileState { size: s.size, mtime: s.mtime, ..FileState::default() };
    let tail = match mark {
        Some(m) if s.size >= m.offset => {
            let bytes = store::read_from(path, m.check_from())?;
            memlog::read_tail(&s.rel, namespace, m, &bytes)
        }
        _ => None,
    };
    let log = match tail {
        Some(log) => log,
        None => memlog::read_whole(&s.rel, namespace, &store::read(path)?),
    };
    Ok(Read { rel: s.rel.clone(), state, docs: None, log: Some(log), problems: Vec::new() })
}

/// Applies what a log gave; returns the refIds the log now holds.
fn apply_log(
    writer: &mut tantivy::IndexWriter,
    fields: &super::Fields,
    old: Vec<String>,
    whole: bool,
    ops: Vec<Op>,
) -> Result<Vec<String>> {
    let mut refs: std::collections::BTreeSet<String> = if whole {
        for r in &old {
            writer.delete_term(Term::from_field_text(fields.ref_id, r));
        }
        std::collections::BTreeSet::new()
    } else {
        old.into_iter().collect()
    };
    for op in ops {
        match op {
            Op::Add(d) => {
                writer.delete_term(Term::from_field_text(fields.ref_id, &d.ref_id));
                writer.add_document(to_document(fields, &d)).map_err(tantivy_err)?;
                refs.insert(d.ref_id);
            }
            Op::Delete(id) => {
                writer.delete_term(Term::from_field_text(fields.ref_id, &id));
                refs.remove(&id);
            }
        }
    }
    Ok(refs.into_iter().collect())
}

fn read_payload_of(index: &tantivy::Index) -> Result<Payload> {
    super::read_payload(index).map_err(tantivy_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_reads_only_its_entries_and_still_writes_the_manifest_whole_when_due() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let plans = root.join("resources/workspaces/w/_plans");
        std::fs::create_dir_all(&plans).unwrap();
        for n in 1..=5 {
            std::fs::write(plans.join(format!("26010{n}-p.md")), format!("---\nname: plan {n}\n---\nword{n}\n"))
                .unwrap();
        }
        let config = Config::default();
        let mut index = Index::open(root).unwrap();
        assert_eq!(index.sync(&config, &SyncOptions::default()).unwrap().new, 5);
        index.forget_manifest();
        let rel = |n: u32| format!("resources/workspaces/w/_plans/26010{n}-p.md");

        // A batch of one path: the journal gets one record, and no manifest is kept.
        std::fs::write(plans.join("260101-p.md"), "---\nname: plan one\n---\nchanged\n").unwrap();
        let r = index.sync_paths(&config, &SyncOptions::default(), Some(&[rel(1)])).unwrap();
        assert_eq!((r.new, r.changed, r.removed), (0, 1, 0));
        assert!(!index.holds_manifest());
        let whole = read_manifest(root, None);
        assert_eq!(whole.manifest.files.len(), 5);
        assert!(whole.journal_len > 0);

        // Fill the journal past its limit with records that leave the manifest as it is.
        let base = whole.base.unwrap();
        let mut filler = Vec::new();
        let (v, e) = (whole.manifest.version, whole.manifest.epoch);
        while filler.len() < 300 << 10 {
            let keep = (rel(2), whole.manifest.files.get(&rel(2)).cloned());
            filler.extend(Manifest::journal_bytes(&base, v, e, &[keep]));
        }
        store::append_at(&root.join(JOURNAL_FILE), whole.journal_len, &filler).unwrap();

        // The next batch is due to write the manifest whole: from every entry, not just
        // the one it read.
        std::fs::remove_file(plans.join("260103-p.md")).unwrap();
        let r = index.sync_paths(&config, &SyncOptions::default(), Some(&[rel(3)])).unwrap();
        assert_eq!((r.new, r.changed, r.removed), (0, 0, 1));
        assert!(!store::exists(&root.join(JOURNAL_FILE)));
        let after = read_manifest(root, None);
        assert_eq!(after.journal_len, 0);
        let paths: Vec<&String> = after.manifest.files.keys().collect();
        assert_eq!(paths, [&rel(1), &rel(2), &rel(4), &rel(5)]);
        assert_eq!(after.manifest.files[&rel(1)], whole.manifest.files[&rel(1)]);
        // And a new process agrees: nothing to do.
        drop(index);
        let mut index = Index::open(root).unwrap();
        let r = index.sync(&config, &SyncOptions::default()).unwrap();
        assert_eq!((r.new, r.changed, r.removed, r.rebuilt), (0, 0, 0, false));
    }

    #[test]
    fn a_log_is_read_on_from_the_checkpoint_in_the_commit_payload() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join(".tmws/memory/long-term.jsonl");
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        let line = |id: &str, word: &str| {
            format!("{{\"op\":\"add\",\"id\":\"{id}\",\"content\":\"{word} {}\"}}\n", "pad ".repeat(80))
        };
        let first = format!("{}{}", line("m_1", "alpha"), line("m_2", "bravo"));
        std::fs::write(&log, format!("{first}{{\"op\":\"add\"")).unwrap();
        let config = Config::default();
        let mut index = Index::open(dir.path()).unwrap();
        index.sync(&config, &SyncOptions::default()).unwrap();
        let mark = index.payload().unwrap().logs[".tmws/memory/long-term.jsonl"].clone();
        assert_eq!(mark.offset, first.len() as u64, "the torn line is not consumed");

        // Rewrite the first line in place, well before the checked window, and append: only
        // the new line is read, which shows the read started at the checkpoint.
        let edited = first.replacen("alpha", "ALPHX", 1);
        std::fs::write(&log, format!("{edited}\n{}", line("m_3", "charlie"))).unwrap();
        let report = index.sync(&config, &SyncOptions::default()).unwrap();
        assert_eq!((report.changed, report.items), (1, 3));
        let find = |index: &Index, q: &str| {
            let req = super::super::TextQuery { query: q.into(), limit: 5, ..Default::default() };
            index.search(&req).unwrap().results.into_iter().map(|h| h.ref_id).collect::<Vec<_>>()
        };
        assert_eq!(find(&index, "charlie"), ["m_3"]);
        assert_eq!(find(&index, "alpha"), ["m_1"]);
        // A rebuild reads everything again.
        index.sync(&config, &SyncOptions { rebuild: true, ..SyncOptions::default() }).unwrap();
        assert!(find(&index, "alpha").is_empty());
        assert_eq!(find(&index, "alphx"), ["m_1"]);
    }
}
