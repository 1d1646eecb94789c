//! Issues as their trackers last gave them, under `.tmws/cache/trackers/`: one JSON file
//! per issue, named by a hash of the tracker's address, the project and the reference, so
//! that no name a tracker or a repository chose becomes a path. Never the token.

use std::path::{Path, PathBuf};

use super::{IssueAnswer, Tracker};
use crate::error::Result;
use crate::layout::TRACKERS_DIR;
use crate::parse::issue_ref::IssueRef;
use crate::store;

/// The most bytes of a kept answer read.
const MAX_BYTES: u64 = 16 << 20;
/// An answer younger than this is served to `recall` without asking the tracker again.
const RECENT_SECS: i64 = 300;

/// The file of `r` at `t`.
fn path(root: &Path, t: &Tracker, r: &IssueRef) -> PathBuf {
    let id = blake3::hash(format!("{}\n{}\n{}\n{r}", t.kind.as_str(), t.base, t.project).as_bytes());
    let name = format!("{}-{}.json", t.kind.as_str(), &id.to_hex()[..24]);
    root.join(TRACKERS_DIR).join(name)
}

/// Keeps `answer` (written atomically: a reader sees the old one or the new one).
pub fn store(root: &Path, t: &Tracker, r: &IssueRef, answer: &IssueAnswer) -> Result<()> {
    let kept = IssueAnswer { stale: false, stale_reason: None, ..answer.clone() };
    let bytes = serde_json::to_vec(&kept).map_err(|e| crate::error::Error::Environment(e.to_string()))?;
    store::write_atomic(root, &path(root, t, r), &bytes)
}

/// The answer kept for `r`, if any can be read.
pub fn load(root: &Path, t: &Tracker, r: &IssueRef) -> Option<IssueAnswer> {
    let bytes = store::read_opt(root, &path(root, t, r), MAX_BYTES).ok()??;
    let kept: Kept = serde_json::from_slice(&bytes).ok()?;
    Some(IssueAnswer { tracker: t.kind, issue: kept.issue, stale: false, stale_reason: None, fetched: kept.fetched })
}

/// Whether an answer fetched at `fetched` (RFC 3339) is recent enough to serve as it is.
pub fn is_recent(fetched: &str) -> bool {
    chrono::DateTime::parse_from_rfc3339(fetched)
        .is_ok_and(|t| (chrono::Utc::now() - t.with_timezone(&chrono::Utc)).num_seconds() < RECENT_SECS)
}

/// A kept answer as read back.
#[derive(serde::Deserialize)]
struct Kept {
    #[serde(flatten)]
    issue: super::Issue,
    fetched: String,
}
