//! Where a reader of a memory log stands in it: a checkpoint of the bytes read
//! (docs/memory-log.md, docs/search-index.md). A log is appended to, so a reader that keeps its fold goes on from its mark
//! and reads only the lines added since; a hash of the bytes just before the mark tells it
//! when the log was rewritten meanwhile (a compaction, a hand edit, a checkout), and then
//! it reads the log whole. The index keeps one mark per log in its commit payload; a
//! writer keeps one with its fold.

use serde::{Deserialize, Serialize};

/// How many bytes before a checkpoint its hash covers.
pub const TAIL_BYTES: u64 = 256;

/// Where a reader stands in one log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogMark {
    /// Bytes read: the end of the last complete line read.
    pub offset: u64,
    /// blake3 (hex) of the `TAIL_BYTES` before `offset` (fewer at the start of a file).
    pub tail: String,
    /// The latest time of an op before `offset` (the index's marks only): a line after it
    /// with an earlier time came from a merge and may be a dead `add`, so the log is read
    /// whole.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub last_at: String,
}

impl LogMark {
    /// The mark after reading a file up to `end`, given its bytes `before` ending there.
    pub fn at(end: u64, before: &[u8]) -> LogMark {
        let n = usize::try_from(TAIL_BYTES.min(end)).unwrap_or(0).min(before.len());
        LogMark {
            offset: end,
            tail: blake3::hash(&before[before.len() - n..]).to_hex().to_string(),
            last_at: String::new(),
        }
    }

    /// Where to start reading to check this mark: `TAIL_BYTES` before it.
    pub fn check_from(&self) -> u64 {
        self.offset - TAIL_BYTES.min(self.offset)
    }

    /// Whether `bytes`, read from `check_from()`, still hold what was read.
    pub fn holds(&self, bytes: &[u8]) -> bool {
        let n = usize::try_from(self.offset - self.check_from()).unwrap_or(usize::MAX);
        bytes.len() >= n && blake3::hash(&bytes[..n]).to_hex().as_str() == self.tail
    }
}
