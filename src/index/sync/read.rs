//! Reading what changed, on several threads: each file is read, hashed and, when its hash
//! is not the manifest's, parsed into items; a memory log is read on from its checkpoint.
//! Reads are handed to the caller, who applies them on its own thread, as they come.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use super::super::extract::extract_with_diagnostics;
use super::super::manifest::FileState;
use super::super::memlog::{self, LogMark, LogRead};
use crate::error::Result;
use crate::layout::{self, FileKind, Includes};
use crate::model::{Diagnostic, IndexDoc};
use crate::store::{self, Scanned};

/// A file as a worker read it: its new state and items (None when only its mtime moved),
/// or what a memory log gave.
pub(super) struct Read {
    pub rel: String,
    pub state: FileState,
    pub docs: Option<Vec<IndexDoc>>,
    pub log: Option<LogRead>,
    pub problems: Vec<Diagnostic>,
}

/// Reads `to_read` on a few threads and hands each read to `apply` on this thread, in the
/// order they finish. A file that cannot be read is an error handed on like a read.
pub(super) fn read_all(
    root: &Path,
    to_read: &[&Scanned],
    includes: &Includes,
    known: &BTreeMap<String, FileState>,
    marks: &BTreeMap<String, LogMark>,
    mut apply: impl FnMut(Result<Read>) -> Result<()>,
) -> Result<()> {
    let (tx, rx) = mpsc::sync_channel::<Result<Read>>(256);
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8);
    std::thread::scope(|scope| -> Result<()> {
        for _ in 0..workers {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(s) = to_read.get(i) else { break };
                    let r = match layout::memory_namespace(&s.rel) {
                        Some(namespace) => read_log(root, s, namespace, marks.get(&s.rel)),
                        None => read_file(root, s, includes, known),
                    };
                    if tx.send(r).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for r in rx {
            apply(r)?;
        }
        Ok(())
    })
}

/// A Markdown (or skills, registry) file: read, hashed, parsed when its hash changed.
fn read_file(root: &Path, s: &Scanned, includes: &Includes, known: &BTreeMap<String, FileState>) -> Result<Read> {
    let bytes = store::read_scanned(&root.join(&s.rel), s.size)?;
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
    Ok(Read { rel: s.rel.clone(), state, docs, log: None, problems })
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
        None => memlog::read_whole(&s.rel, namespace, &store::read(root, path, store::cap::LOG)?),
    };
    Ok(Read { rel: s.rel.clone(), state, docs: None, log: Some(log), problems: Vec::new() })
}
