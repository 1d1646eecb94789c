//! The structured fields of a task entry (docs/tasks.md): the `task` field of a `kind: task`
//! memory, which `tmws task start` writes when a task begins on its own branch and
//! worktree and `tmws task done` writes again (under the same key) when it ends.
//!
//! Readers take the record as it is or not at all: a record of another shape leaves the
//! entry without one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::session::CommitRecord;

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TaskState {
    /// Started, not done yet.
    Open,
    /// Done: its outcome is recorded.
    Done,
}

/// A task entry's structured fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskRecord {
    /// The task's name: a slug that is also the last part of its branch and its worktree.
    pub name: String,
    pub state: TaskState,
    /// Its branch, as it was made.
    pub branch: String,
    /// The branch it was started from, which `task done --merge` merges it into.
    pub from: String,
    /// Its linked worktree, an absolute path.
    pub worktree: String,
    /// The issue it is for, as it was given (`#123`, `PROJ-7`, a URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue: Option<String>,
    /// When it was started (RFC 3339).
    pub started: String,
    /// When it was done (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
    /// What came of it, in the words of whoever finished it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// Whether `task done` merged its branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<bool>,
    /// The summaries of the sessions recorded on its branch (the latest 20).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sessions: Vec<String>,
    /// The commits made on its branch (the latest 50).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commits: Vec<CommitRecord>,
}
