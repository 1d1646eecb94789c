//! The memory logs (docs/memory-log.md): `.tmws/memory/{namespace}.jsonl`, one op a line,
//! appended, rewritten only by compaction. This module owns the format and everything
//! that reads or writes it below the tools: [`op`] the type of a line (and of a session
//! entry's record, [`session`], and a task entry's, [`task`]), [`fold`] the ops of a log into its live entries, [`mark`]
//! where a reader stands in a log, [`writer`] the locked log with its fold caught up, and
//! [`compact`] the rewrite that drops dead lines. `query::memory` answers the tools with
//! them; the index makes the live entries searchable.

pub mod cite;
pub mod compact;
pub mod fold;
pub mod mark;
pub mod op;
pub mod session;
pub mod task;
pub mod writer;

pub use fold::{Entry, Fold};
pub use mark::LogMark;
pub use op::{Kind, Op};
pub use writer::Writer;
