//! The structured fields of a session entry (docs/trust.md): the `session` field of a
//! `kind: session` memory, recorded by `tmws session record` over a window of work
//! ([`WindowRecord`]) or when a client session of a server ends ([`ActivityRecord`]).
//!
//! Readers take the record as it is or not at all: a record of another shape leaves the
//! entry without one.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A session entry's structured fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SessionRecord {
    /// What a client session of `tmws mcp` or `tmws serve` did.
    Activity(ActivityRecord),
    /// A window of work summed up by `tmws session record`.
    Window(WindowRecord),
}

impl SessionRecord {
    /// The commit checked out when it was recorded: where the next window's commits start.
    pub fn head(&self) -> Option<&str> {
        match self {
            SessionRecord::Activity(a) => a.head.as_deref(),
            SessionRecord::Window(w) => w.head.as_deref(),
        }
    }

    /// The issues the session worked on (`#123`, `PROJ-7`), as recorded.
    pub fn issues(&self) -> &[String] {
        match self {
            SessionRecord::Activity(a) => &a.issues,
            SessionRecord::Window(w) => &w.issues,
        }
    }
}

/// A window of work: the memories added, the commits made and the tool calls logged in it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WindowRecord {
    /// Where the window starts (RFC 3339).
    pub since: String,
    /// Where it ends: when it was recorded.
    pub until: String,
    /// The commit checked out then (null outside git).
    pub head: Option<String>,
    /// The memories added in it (the latest 200).
    pub memories: Vec<String>,
    /// The commits made in it (the latest 50).
    pub commits: Vec<CommitRecord>,
    /// Commits left out of `commits`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_commits: Option<usize>,
    /// Memories left out of `memories`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_memories: Option<usize>,
    /// Tool calls, by `server/tool`.
    pub tool_calls: BTreeMap<String, Calls>,
    /// The agents that wrote in it.
    pub agents: Vec<String>,
    /// The issues it worked on, from the branch's name and the commits' messages
    /// (docs/trackers.md#issue-references).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<String>,
}

/// What one client session did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ActivityRecord {
    /// When its first call came (RFC 3339).
    pub since: String,
    /// When it ended.
    pub until: String,
    pub duration_secs: i64,
    /// The branch checked out at the end (null outside git).
    pub branch: Option<String>,
    /// The commit checked out at the end (null outside git).
    pub head: Option<String>,
    /// The agent it spoke for.
    pub agents: Vec<String>,
    /// Its searches and recalls (the latest 200).
    pub queries: Vec<Query>,
    /// The memories it added (the latest 200).
    pub memories: Vec<String>,
    /// The entries it wrote (refIds, the latest 200).
    pub entries: Vec<String>,
    /// The verifications it recorded.
    pub verifications: Vec<VerificationRecord>,
    /// Its tool calls, by `server/tool`.
    pub tool_calls: BTreeMap<String, Calls>,
    /// The commits made meanwhile (the latest 50).
    pub commits: Vec<CommitRecord>,
    /// True when recorded by itself as the session ended or went idle; false when the
    /// client asked for it (`session_record`).
    pub automatic: bool,
    /// What the client's hooks briefed it with (refIds, the latest 200).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub briefed: Vec<String>,
    /// The client's transcript of the session, as its hooks named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    /// The client's own id of the session, as its hooks named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_session: Option<String>,
    /// The issues it worked on, from the branch's name and the commits' messages
    /// (docs/trackers.md#issue-references).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<String>,
}

/// A commit of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CommitRecord {
    /// Its abbreviated hash.
    pub commit: String,
    pub subject: String,
    /// The files it changed (the first 20).
    pub files: Vec<String>,
    /// Files left out of `files`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_files: Option<usize>,
}

/// The calls of one tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Calls {
    pub calls: u64,
    pub failed: u64,
}

/// A search or recall of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Query {
    /// The tool asked.
    pub tool: String,
    pub query: String,
}

/// A verification a session recorded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VerificationRecord {
    /// The agent verified.
    pub agent: String,
    pub success: bool,
    /// The agent's trust after it.
    pub trust: f64,
}
