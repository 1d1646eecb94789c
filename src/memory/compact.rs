//! Compaction of a memory log (docs/memory-log.md): by hand with `memory cleanup`, and on its own
//! once dead lines pass `compact_garbage_ratio`.
//!
//! Every rewrite happens under the log's lock and replaces the log atomically (temporary
//! file, fsync, rename): a process killed at any point leaves the old log or the new one.
//! Compaction keeps the exact bytes of every line of every live entry (its `add` and the
//! `update` and `link` ops after it), of every bad line (a person's hand edit, reported
//! by `check`, is theirs to fix) and of every tombstone still needed (the latest delete of
//! an id, until the entry it deleted would have expired: a merge with a branch that still
//! holds the `add` must not bring it back) in their order, and drops the rest: deleted,
//! superseded and expired entries, older deletes, blank lines and a torn final line.

use super::writer::Writer;
use crate::error::Result;
use crate::layout;

/// Logs shorter than this are never compacted automatically.
const MIN_AUTO_COMPACT_LINES: usize = 64;

/// What one compaction did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Compacted {
    pub removed_expired: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

/// Rewrites the writer's log with only the lines of its entries live at `now`.
pub fn compact(writer: &mut Writer, now: &str) -> Result<Compacted> {
    let bytes = writer.bytes()?;
    let removed_expired = writer.fold.live.values().filter(|e| e.expired(now)).count();
    let (keep, mut fold) = std::mem::take(&mut writer.fold).compacted(now);
    let mut out = Vec::with_capacity(bytes.len());
    let mut wanted = keep.iter().peekable();
    // Line numbers count every line, as the fold does; a torn final line is dropped.
    for (n, line) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
        if wanted.peek() == Some(&&(n + 1)) {
            wanted.next();
            if line.last() == Some(&b'\n') {
                out.extend_from_slice(line);
            }
        }
    }
    fold.offset = out.len() as u64;
    if out == bytes {
        // Nothing to take out: the log stays as it is (a tracked log stays clean in git,
        // and the watcher has nothing to read again).
        writer.fold = fold;
    } else {
        writer.replace(&out, fold)?;
    }
    Ok(Compacted { removed_expired, bytes_before: bytes.len() as u64, bytes_after: out.len() as u64 })
}

/// Compacts when dead lines pass `ratio` (`compact_garbage_ratio`) of a log of some size.
/// The ratio is of the lines entries hold, dead or alive: tombstones, which compaction
/// keeps, are left out, or a log whose garbage all came from deletes would never reach it.
pub fn compact_if_worth_it(writer: &mut Writer, ratio: f64, now: &str) -> Result<()> {
    let lines = writer.fold.lines;
    if lines < MIN_AUTO_COMPACT_LINES {
        return Ok(());
    }
    let dead = writer.fold.dead_lines(now);
    let held = lines.saturating_sub(writer.fold.kept_tombstones(now)).max(1);
    if dead as f64 / held as f64 > ratio {
        let done = compact(writer, now)?;
        tracing::info!(
            "compacted {} ({dead} of {lines} lines dead): {} → {} bytes",
            layout::memory_log(&writer.namespace),
            done.bytes_before,
            done.bytes_after
        );
    }
    Ok(())
}
