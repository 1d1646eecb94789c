//! The writer of a memory log (docs/memory-log.md): the log's lock, held with the log's fold
//! caught up to its end, and the ops appended under it.
//!
//! A process keeps its fold of each log it wrote and, under the lock, reads only the lines
//! appended since (checked against a hash of the bytes before them), so an add costs the
//! same at ten entries as at ten thousand. The threads of a process take turns per log
//! (a slot holding the fold the last one left) before they take the lock, so that each
//! finds the fold the one before left instead of folding the whole log on its own. Ops a
//! writer appends are applied to its fold as they were written, without reading them back;
//! when the log was not where the fold left it (a torn last line ended first, a checkout
//! that replaced it meanwhile), what was written is read again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use super::fold::Fold;
use super::mark::{LogMark, TAIL_BYTES};
use super::op::Op;
use crate::error::Result;
use crate::layout;
use crate::parse::jsonl::MAX_LINE_BYTES;
use crate::store::{self, log::LockedLog};

/// A fold with the bytes of the log just before where it stopped (at most `TAIL_BYTES`):
/// enough to check, and to move, its mark.
#[derive(Debug, Default)]
struct Folded {
    fold: Fold,
    tail: Vec<u8>,
}

impl Folded {
    /// The fold of `bytes`, read from the start.
    fn of(bytes: &[u8]) -> Folded {
        let fold = Fold::of(bytes, false);
        let end = usize::try_from(fold.offset).unwrap_or(0).min(bytes.len());
        Folded { fold, tail: tail_of(&[], &bytes[..end]) }
    }

    fn mark(&self) -> LogMark {
        LogMark::at(self.fold.offset, &self.tail)
    }
}

/// The last `TAIL_BYTES` of `before` followed by `more`.
fn tail_of(before: &[u8], more: &[u8]) -> Vec<u8> {
    let keep = usize::try_from(TAIL_BYTES).unwrap_or(usize::MAX);
    let mut tail = Vec::with_capacity(keep.min(before.len() + more.len()));
    let from_more = more.len().min(keep);
    let from_before = (keep - from_more).min(before.len());
    tail.extend_from_slice(&before[before.len() - from_before..]);
    tail.extend_from_slice(&more[more.len() - from_more..]);
    tail
}

/// The logs this process writes, by path: whether a writer of this process has it open,
/// and the fold it left.
static FOLDS: Mutex<BTreeMap<PathBuf, Arc<Slot>>> = Mutex::new(BTreeMap::new());

/// One log's place in [`FOLDS`]. The writers of a process take their turns here before
/// they take the log's lock, so each finds the fold the one before left, instead of
/// folding the whole log on its own while another holds the fold (under load, dozens of
/// whole folds at once, each the size of the log).
#[derive(Debug, Default)]
struct Slot {
    state: Mutex<SlotState>,
    turn: Condvar,
}

#[derive(Debug, Default)]
struct SlotState {
    busy: bool,
    cached: Option<Folded>,
}

impl Slot {
    /// Waits for this process's writer of the log to finish, and takes the fold it left.
    fn take(&self) -> Option<Folded> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while state.busy {
            state = self.turn.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        state.busy = true;
        state.cached.take()
    }

    /// Gives the turn to the next writer, with the fold (None: it must fold again).
    fn give_back(&self, cached: Option<Folded>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.busy = false;
        state.cached = cached;
        drop(state);
        self.turn.notify_one();
    }
}

/// The slot of the log at `path`.
fn slot(path: &Path) -> Arc<Slot> {
    let mut folds = FOLDS.lock().unwrap_or_else(PoisonError::into_inner);
    folds.entry(path.to_path_buf()).or_default().clone()
}

/// A namespace's log, locked, with its fold caught up to the end.
#[derive(Debug)]
pub struct Writer {
    pub namespace: String,
    slot: Arc<Slot>,
    log: LockedLog,
    pub fold: Fold,
    /// The bytes of the log just before `fold.offset`.
    tail: Vec<u8>,
}

impl Writer {
    /// Takes the namespace's lock and folds what was appended since this process last
    /// looked (the whole log when it was rewritten meanwhile).
    pub fn open(root: &Path, namespace: &str) -> Result<Writer> {
        let path = root.join(layout::memory_log(namespace));
        // A process that has not folded this log yet folds it before it takes the lock:
        // lines are appended whole, so the complete lines read now are a prefix of the log
        // (or, after a compaction meanwhile, the check of the mark sends it to a whole
        // fold). Under the lock only what was appended since is folded, so writers in
        // other processes wait for an append and its fsync, not for a fold of the log.
        let slot = slot(&path);
        let cached = slot.take().or_else(|| unlocked_fold(root, &path));
        let opened = LockedLog::open(root, &path, &root.join(layout::memory_lock(namespace))).and_then(|mut log| {
            let folded = match cached {
                Some(folded) => catch_up(&mut log, folded)?,
                None => whole(&mut log)?,
            };
            Ok((log, folded))
        });
        match opened {
            Ok((log, Folded { fold, tail })) => Ok(Writer { namespace: namespace.to_owned(), slot, log, fold, tail }),
            Err(e) => {
                slot.give_back(None);
                Err(e)
            }
        }
    }

    /// Appends one line per op and folds them: as they were written when they follow the
    /// end the fold stopped at, else by reading back what was appended.
    pub fn append(&mut self, ops: &[Op], fsync: bool) -> Result<()> {
        let lines: Vec<String> = ops.iter().map(Op::line).collect();
        let appended = self.log.append(&lines, fsync)?;
        // A line a reader would skip (none that tmws builds) is read back, so the fold
        // stays what every reader makes of the log.
        let as_read = lines.iter().all(|l| l.len() <= MAX_LINE_BYTES) && ops.iter().all(|op| op.problem().is_none());
        if appended.at == Some(self.fold.offset) && as_read {
            let mut written = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
            for line in &lines {
                written.extend_from_slice(line.as_bytes());
                written.push(b'\n');
            }
            self.fold.extend(ops, written.len() as u64);
            self.tail = tail_of(&self.tail, &written);
            return Ok(());
        }
        let folded = self.take_folded();
        let folded = catch_up(&mut self.log, folded)?;
        (self.fold, self.tail) = (folded.fold, folded.tail);
        Ok(())
    }

    /// The whole log as it is.
    pub fn bytes(&mut self) -> Result<Vec<u8>> {
        self.log.read_all()
    }

    /// Replaces the log atomically with `bytes` (compaction, clear), whose fold is `fold`.
    pub fn replace(&mut self, bytes: &[u8], fold: Fold) -> Result<()> {
        self.log.replace(bytes)?;
        let end = usize::try_from(fold.offset).unwrap_or(0).min(bytes.len());
        self.tail = tail_of(&[], &bytes[..end]);
        self.fold = fold;
        Ok(())
    }

    fn take_folded(&mut self) -> Folded {
        Folded { fold: std::mem::take(&mut self.fold), tail: std::mem::take(&mut self.tail) }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let folded = self.take_folded();
        self.slot.give_back(Some(folded));
    }
}

/// The fold of the log at `path` as it is now, read without its lock; None when it cannot
/// be read (the locked read then says why).
fn unlocked_fold(root: &Path, path: &Path) -> Option<Folded> {
    let bytes = store::read_opt(root, path, store::cap::LOG).ok()??;
    Some(Folded::of(&bytes))
}

/// Folds a whole log.
fn whole(log: &mut LockedLog) -> Result<Folded> {
    Ok(Folded::of(&log.read_all()?))
}

/// Goes on folding from where `folded` stopped when the bytes before it are still those
/// folded; folds the whole log otherwise.
fn catch_up(log: &mut LockedLog, mut folded: Folded) -> Result<Folded> {
    let mark = folded.mark();
    let from = mark.check_from();
    let bytes = log.read_from(from)?;
    if !mark.holds(&bytes) {
        return whole(log);
    }
    let skip = usize::try_from(mark.offset - from).unwrap_or(0);
    let used = folded.fold.read(&bytes[skip..]);
    folded.tail = tail_of(&folded.tail, &bytes[skip..skip + used]);
    Ok(folded)
}

#[cfg(test)]
mod tests {
    use proptest::collection::vec;
    use proptest::prelude::*;

    use super::*;
    use crate::parse::fuzz::{NOW, check, log_lines, render};

    /// What a fold says, for comparing two.
    fn view(f: &Fold) -> impl PartialEq + std::fmt::Debug {
        let problems: Vec<(usize, String)> = f.problems.iter().map(|d| (d.line, d.message.clone())).collect();
        (
            f.live.clone(),
            f.keys.clone(),
            f.lines,
            f.offset,
            f.max_at.clone(),
            f.dead_lines(NOW),
            f.bad.clone(),
            problems,
        )
    }

    #[test]
    fn the_ops_a_writer_appends_fold_as_the_log_reads_whole() {
        let appends = vec(vec(log_lines(), 1..3), 1..4);
        check("writer-append", 48, (log_lines(), appends, any::<bool>()), |(before, appends, torn)| {
            let root = tempfile::tempdir().unwrap();
            let path = root.path().join(layout::memory_log("long-term"));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let mut log = render(&before);
            if torn {
                // A writer killed mid-line: the next append ends the line first.
                log.extend_from_slice(b"{\"op\":\"add\",\"id\":\"m_0000");
            }
            std::fs::write(&path, &log).unwrap();
            for batch in appends {
                let mut writer = Writer::open(root.path(), "long-term").unwrap();
                for lines in batch {
                    // Ops as the writer builds them: the lines of the log that read as ops.
                    let text = String::from_utf8_lossy(&render(&lines)).into_owned();
                    let ops: Vec<Op> = text.lines().filter_map(|l| Op::read(l).ok()?.ok()).collect();
                    writer.append(&ops, false).unwrap();
                    let bytes = std::fs::read(&path).unwrap();
                    let whole = Folded::of(&bytes);
                    prop_assert_eq!(view(&writer.fold), view(&whole.fold));
                    prop_assert_eq!(LogMark::at(writer.fold.offset, &writer.tail), whole.mark());
                }
            }
            Ok(())
        });
    }

    #[test]
    fn a_tail_keeps_the_last_bytes_before_the_mark() {
        let long = vec![b'a'; 300];
        assert_eq!(tail_of(&[], &long).len(), 256);
        assert_eq!(tail_of(b"xy", b"z"), b"xyz");
        let t = tail_of(&long, b"end\n");
        assert_eq!((t.len(), &t[252..]), (256, &b"end\n"[..]));
    }
}
