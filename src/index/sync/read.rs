//! Reading what changed, on several threads: each file is read, hashed and, when its hash
//! is not the manifest's, parsed into items; a memory log is read on from its checkpoint.
//! A worker also makes each item into the writer's document, so that the thread that
//! applies them only keeps the books. Reads are handed to the caller in chunks, who
//! applies them on its own thread, as they come: one hand-over per read cost a thread
//! wake-up each, several per file in a full build.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use tantivy::TantivyDocument;

use super::super::Fields;
use super::super::extract::extract_with_diagnostics;
use super::super::manifest::FileState;
use super::super::memlog::{self, LogMark, LogRead};
use super::apply::to_document;
use crate::error::Result;
use crate::layout::{self, FileKind, Includes};
use crate::model::Diagnostic;
use crate::store::{self, Scanned};

/// A file as a worker read it: its new state and items (None when only its mtime moved),
/// or what a memory log gave.
pub(super) struct Read {
    pub rel: String,
    pub state: FileState,
    pub docs: Option<Vec<Prepared>>,
    pub log: Option<LogRead>,
    pub problems: Vec<Diagnostic>,
    /// An entry held back for review (which makes no items).
    pub proposed: bool,
}

/// An item as the writer takes it, with what the books need of it.
pub(super) struct Prepared {
    pub ref_id: String,
    /// The length of its body.
    pub bytes: usize,
    pub doc: TantivyDocument,
}

/// Reads a worker hands over at once.
const CHUNK: usize = 32;

/// Reads `to_read` on a few threads and hands each read to `apply` on this thread, in the
/// order they finish. A file that cannot be read is an error handed on like a read.
pub(super) fn read_all(
    root: &Path,
    to_read: &[&Scanned],
    includes: &Includes,
    known: &BTreeMap<String, FileState>,
    marks: &BTreeMap<String, LogMark>,
    fields: &Fields,
    mut apply: impl FnMut(Result<Read>) -> Result<()>,
) -> Result<()> {
    let (tx, rx) = mpsc::sync_channel::<Vec<Result<Read>>>(8);
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8);
    std::thread::scope(|scope| -> Result<()> {
        for _ in 0..workers {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || {
                let mut reader = store::ScannedReader::new(root);
                let mut chunk = Vec::with_capacity(CHUNK);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(s) = to_read.get(i) else { break };
                    chunk.push(match layout::memory_namespace(&s.rel) {
                        Some(namespace) => read_log(root, s, namespace, marks.get(&s.rel)),
                        None => read_file(&mut reader, s, includes, known, fields),
                    });
                    if chunk.len() == CHUNK
                        && tx.send(std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK))).is_err()
                    {
                        return;
                    }
                }
                if !chunk.is_empty() {
                    let _ = tx.send(chunk);
                }
            });
        }
        drop(tx);
        for r in rx.into_iter().flatten() {
            apply(r)?;
        }
        Ok(())
    })
}

/// A Markdown (or skills, registry) file: read, hashed, parsed when its hash changed.
fn read_file(
    reader: &mut store::ScannedReader<'_>,
    s: &Scanned,
    includes: &Includes,
    known: &BTreeMap<String, FileState>,
    fields: &Fields,
) -> Result<Read> {
    let bytes = reader.read(&s.rel, s.size)?;
    let hash = *blake3::hash(&bytes).as_bytes();
    let unchanged = known.get(s.rel.as_str()).is_some_and(|k| k.hash == hash);
    let mut proposed = false;
    let (docs, problems) = if unchanged {
        (None, Vec::new())
    } else {
        let kind = layout::index_kind(&s.rel, includes).unwrap_or(FileKind::Markdown);
        let (docs, mut problems) = extract_with_diagnostics(&kind, &s.rel, &bytes);
        for p in &mut problems {
            p.path.clone_from(&s.rel);
        }
        proposed = docs.is_empty() && super::super::extract::held_for_review(&kind, &bytes);
        let docs = docs
            .into_iter()
            .map(|d| Prepared { doc: to_document(fields, &d), bytes: d.body.len(), ref_id: d.ref_id })
            .collect();
        (Some(docs), problems)
    };
    let state = FileState { size: s.size, mtime: s.mtime, hash, refs: Vec::new() };
    Ok(Read { rel: s.rel.clone(), state, docs, log: None, problems, proposed })
}

/// A memory log: from its checkpoint when the bytes before it are unchanged, else whole.
fn read_log(root: &Path, s: &Scanned, namespace: &str, mark: Option<&LogMark>) -> Result<Read> {
    let path = &root.join(&s.rel);
    let state = FileState { size: s.size, mtime: s.mtime, ..FileState::default() };
    let tail = match mark {
        Some(m) if s.size >= m.offset => {
            let bytes = store::read_from(root, path, m.check_from(), store::cap::LOG)?;
            memlog::read_tail(&s.rel, namespace, m, &bytes)
        }
        _ => None,
    };
    let log = match tail {
        Some(log) => log,
        None => {
            let bytes = store::read(root, path, store::cap::LOG)?;
            match mark.filter(|m| s.size >= m.offset).and_then(|m| memlog::read_on(&s.rel, namespace, m, &bytes)) {
                Some(log) => log,
                None => memlog::read_whole(&s.rel, namespace, &bytes),
            }
        }
    };
    Ok(Read { rel: s.rel.clone(), state, docs: None, log: Some(log), problems: Vec::new(), proposed: false })
}
