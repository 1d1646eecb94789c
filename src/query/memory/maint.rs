//! Keeping the memory logs small and true (docs/memory-log.md): compaction (by hand with
//! `memory cleanup`, and automatically once dead lines pass `compact_garbage_ratio`),
//! `memory clear`, `memory prune --below`, `memory gc-branches`, `memory link-commit`,
//! and the access counts that decay is computed with.
//!
//! Every rewrite happens under the log's lock and replaces the log atomically (temporary
//! file, fsync, rename): a process killed at any point leaves the old log or the new one.
//! Compaction keeps the exact bytes of every line of every live entry (its `add` and the
//! `update` and `link` ops after it), of every bad line (a person's hand edit, reported
//! by `check`, is theirs to fix) and of every tombstone still needed (the latest delete of
//! an id, until the entry it deleted would have expired: a merge with a branch that still
//! holds the `add` must not bring it back) in their order, and drops the rest: deleted,
//! superseded and expired entries, older deletes, blank lines and a torn final line.

use std::collections::{BTreeMap, BTreeSet};

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{Writer, delete_op, namespace, namespaces, stamp};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::index::current_importance;
use crate::layout;
use crate::store;

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
pub(crate) fn compact(writer: &mut Writer, now: &str) -> Result<Compacted> {
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

/// Compacts when dead lines pass `compact_garbage_ratio` of a log of some size. The ratio
/// is of the lines entries hold, dead or alive: tombstones, which compaction keeps, are
/// left out, or a log whose garbage all came from deletes would never reach it.
pub(crate) fn compact_if_worth_it(writer: &mut Writer, config: &Config, now: &str) -> Result<()> {
    let lines = writer.fold.lines;
    if lines < MIN_AUTO_COMPACT_LINES {
        return Ok(());
    }
    let dead = writer.fold.dead_lines(now);
    let held = lines.saturating_sub(writer.fold.kept_tombstones(now)).max(1);
    if dead as f64 / held as f64 > config.memory.compact_garbage_ratio {
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

/// `memory_cleanup`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Cleaned {
    pub removed_expired: usize,
    pub compacted_bytes: u64,
    /// Per namespace: expired entries removed and the log's size after.
    pub by_namespace: BTreeMap<String, CleanedLog>,
}

/// One log's cleanup.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CleanedLog {
    pub removed_expired: usize,
    pub bytes: u64,
}

/// `memory_clear`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Cleared {
    /// Live entries forgotten.
    pub cleared: usize,
    pub namespaces: Vec<String>,
}

/// `memory prune`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Pruned {
    pub pruned: usize,
    pub ids: Vec<String>,
}

/// `memory gc-branches`' answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GcBranches {
    pub removed: usize,
    /// The branches that no longer exist.
    pub branches: BTreeSet<String>,
    pub ids: Vec<String>,
}

/// `memory link-commit`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Linked {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    pub linked: usize,
    pub ids: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files_changed: Vec<String>,
    /// Why nothing could be linked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// `memory cleanup`: every namespace's log compacted, expired entries out.
/// The logs of the namespaces in `leave` are left as they are (the upkeep's: git tracks them).
pub(crate) fn cleanup(root: &Path, config: &Config, leave: &BTreeSet<String>, clock: Clock) -> Result<Cleaned> {
    let mut out = Cleaned::default();
    for ns in namespaces(root, config)? {
        if leave.contains(&ns) || !store::exists(&root.join(layout::memory_log(&ns))) {
            continue;
        }
        let mut writer = Writer::open(root, &ns)?;
        let now = clock.now_for(&writer.fold.max_at);
        let done = compact(&mut writer, &now)?;
        out.removed_expired += done.removed_expired;
        out.compacted_bytes += done.bytes_before - done.bytes_after;
        out.by_namespace.insert(ns, CleanedLog { removed_expired: done.removed_expired, bytes: done.bytes_after });
    }
    Ok(out)
}

/// What "now" is for a compaction that drops expired entries for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Clock {
    /// The time given: a person asked for the cleanup.
    Asked(DateTime<Utc>),
    /// The time given, but never more than a day past the newest op of the log: an
    /// unattended cleanup under a clock set a year ahead would otherwise drop live entries
    /// for good, which only hidden would reappear once the clock is right.
    Unattended(DateTime<Utc>),
}

impl Clock {
    fn now_for(self, max_at: &str) -> String {
        let bounded = match self {
            Clock::Asked(now) => now,
            Clock::Unattended(now) => DateTime::parse_from_rfc3339(max_at)
                .map(|t| now.min(t.with_timezone(&Utc) + chrono::Duration::days(1)))
                .unwrap_or(now),
        };
        stamp(bounded)
    }
}

/// `memory clear`: empties one namespace's log, or every log with `all`; refuses without
/// `confirm`.
pub(crate) fn clear(root: &Path, config: &Config, ns: Option<&str>, all: bool, confirm: bool) -> Result<Cleared> {
    let targets = match (ns, all) {
        (Some(_), true) => return Err(Error::Usage("give a namespace or `all`, not both".into())),
        (None, false) => return Err(Error::Usage("say what to clear: a namespace, or `all`".into())),
        (Some(n), false) => {
            namespace(config, n)?;
            vec![n.to_owned()]
        }
        (None, true) => namespaces(root, config)?,
    };
    if !confirm {
        return Err(Error::Usage(format!(
            "refusing to clear {} without confirmation: pass --yes (CLI) or confirm: true (MCP)",
            targets.join(", ")
        )));
    }
    let now = stamp(Utc::now());
    let mut cleared = 0;
    for ns in &targets {
        if !store::exists(&root.join(layout::memory_log(ns))) {
            continue;
        }
        let mut writer = Writer::open(root, ns)?;
        cleared += writer.fold.live_at(&now).count();
        writer.replace(&[], crate::parse::memlog::Fold::new(false))?;
    }
    Ok(Cleared { cleared, namespaces: targets })
}

/// The access counts (memory id → reads).
pub fn accesses(root: &Path) -> BTreeMap<String, u64> {
    let bytes =
        store::read_opt(root, &root.join(layout::ACCESS_FILE), store::cap::CONFIG).ok().flatten().unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or_default()
}

/// Counts one read of a memory. A derived cache: a lost count (two processes at once, a
/// full disk) only makes a memory decay a little sooner, so failures are logged, not raised.
pub(crate) fn count_access(root: &Path, id: &str) {
    let mut counts = accesses(root);
    *counts.entry(id.to_owned()).or_default() += 1;
    let text = serde_json::to_vec(&counts).unwrap_or_default();
    if let Err(e) = store::write_atomic(root, &root.join(layout::ACCESS_FILE), &text) {
        tracing::debug!("access count of {id} not saved: {e}");
    }
}

/// `memory prune --below F`: delete ops for the live entries whose current importance
/// (docs/ranking.md) is under `below`, except in the logs of the namespaces in `leave`.
pub(crate) fn prune(
    root: &Path,
    config: &Config,
    below: f64,
    now: DateTime<Utc>,
    leave: &BTreeSet<String>,
) -> Result<Pruned> {
    if !(0.0..=1.0).contains(&below) {
        return Err(Error::Usage(format!("--below {below} is outside 0..1")));
    }
    let at = stamp(now);
    let reads = accesses(root);
    let mut pruned = Vec::new();
    for ns in namespaces(root, config)? {
        if leave.contains(&ns) || !store::exists(&root.join(layout::memory_log(&ns))) {
            continue;
        }
        let half_life = config.namespaces.get(&ns).map_or(30.0, |c| c.half_life_days);
        let mut writer = Writer::open(root, &ns)?;
        let gone: Vec<String> = writer
            .fold
            .live_at(&at)
            .filter(|(id, e)| {
                let added = DateTime::parse_from_rfc3339(&e.at).map_or(now, |t| t.with_timezone(&Utc));
                let age_days = (now - added).num_seconds() as f64 / 86_400.0;
                let reads = reads.get(*id).copied().unwrap_or(0);
                current_importance(e.importance, age_days, half_life, reads) < below
            })
            .map(|(id, _)| id.clone())
            .collect();
        if gone.is_empty() {
            continue;
        }
        let lines: Vec<String> = gone.iter().map(|id| delete_op(&writer.fold, id, &at)).collect();
        writer.append(&lines, config.memory.fsync)?;
        compact_if_worth_it(&mut writer, config, &at)?;
        pruned.extend(gone);
    }
    Ok(Pruned { pruned: pruned.len(), ids: pruned })
}

/// `memory gc-branches`: deletes the short-term entries of branches that no longer exist
/// and were never merged (those of a branch whose last tip seen — or, for one never seen,
/// the entry's recorded commit — is in HEAD's history stay: they are visible from here).
pub(crate) fn gc_branches(root: &Path, config: &Config, leave: &BTreeSet<String>) -> Result<GcBranches> {
    let Some(existing) = store::git::branches(root) else {
        return Err(Error::Environment(format!("{} is not in a git work tree", root.display())));
    };
    let ns = "short-term";
    let at = stamp(Utc::now());
    let mut gone_branches = BTreeSet::new();
    let mut removed = Vec::new();
    if !leave.contains(ns) && store::exists(&root.join(layout::memory_log(ns))) {
        let mut writer = Writer::open(root, ns)?;
        let mut merged: BTreeMap<String, bool> = BTreeMap::new();
        let last_tips = super::visible::last_tips(root);
        for (id, e) in writer.fold.live_at(&at) {
            if let Some(b) = &e.branch
                && !existing.contains(b)
            {
                // The branch's last tip seen, else the commit the entry records.
                let witness = last_tips.get(b).or(e.commit.as_ref());
                let in_head = witness.is_some_and(|c| {
                    *merged
                        .entry(c.clone())
                        .or_insert_with(|| store::git::is_ancestor_of_head(root, c).unwrap_or(false))
                });
                if !in_head {
                    gone_branches.insert(b.clone());
                    removed.push(id.clone());
                }
            }
        }
        if !removed.is_empty() {
            let lines: Vec<String> = removed.iter().map(|id| delete_op(&writer.fold, id, &at)).collect();
            writer.append(&lines, config.memory.fsync)?;
            compact_if_worth_it(&mut writer, config, &at)?;
        }
    }
    Ok(GcBranches { removed: removed.len(), branches: gone_branches, ids: removed })
}

/// `memory link-commit` (run by the post-commit hook, which is optional): reads git history up to
/// HEAD into the commit-link cache (docs/memory-log.md#commit-links) and says which entries HEAD
/// introduced. Nothing is written to a tracked file.
pub(crate) fn link_commit(root: &Path) -> Result<Linked> {
    let head = store::git_head(root)
        .ok_or_else(|| Error::Environment(format!("{} is not in a git work tree", root.display())))?;
    let Some(commit) = head.commit else {
        return Ok(Linked { why: Some("HEAD has no commit yet".into()), ..Linked::default() });
    };
    let links = super::links::current(root);
    let ids: Vec<String> = links.entries.iter().filter(|(_, c)| **c == commit).map(|(id, _)| id.clone()).collect();
    let files = links.commits.get(&commit).map(|c| c.files.clone()).unwrap_or_default();
    Ok(Linked {
        commit: Some(commit.chars().take(12).collect()),
        linked: ids.len(),
        ids,
        files_changed: files,
        why: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A root whose short-term log holds one entry added at `at`, expiring 14 days later.
    fn root_with_entry_at(at: DateTime<Utc>) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let log = root.path().join(layout::memory_log("short-term"));
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        let line = serde_json::json!({
            "op": "add", "id": "m_0123456789ab", "ns": "short-term", "at": stamp(at),
            "expires_at": stamp(at + chrono::Duration::days(14)), "content": "x", "summary": "x",
        });
        std::fs::write(&log, format!("{line}\n")).unwrap();
        root
    }

    #[test]
    fn an_unattended_cleanup_under_a_clock_a_year_ahead_drops_no_live_entry() {
        let written = Utc::now();
        let ahead = written + chrono::Duration::days(365);
        let root = root_with_entry_at(written);
        let config = Config::default();
        let none = BTreeSet::new();
        let done = cleanup(root.path(), &config, &none, Clock::Unattended(ahead)).unwrap();
        assert_eq!(done.removed_expired, 0);
        let log = std::fs::read_to_string(root.path().join(layout::memory_log("short-term"))).unwrap();
        assert!(log.contains("m_0123456789ab"), "{log}");
        // Asked for by a person, the clock is taken as it is.
        let done = cleanup(root.path(), &config, &none, Clock::Asked(ahead)).unwrap();
        assert_eq!(done.removed_expired, 1);
        // An entry that expired before the log's newest op goes unattended too; a log
        // nobody wrote to since keeps its expired entries (hidden) until someone does.
        let old = root_with_entry_at(written - chrono::Duration::days(30));
        let done = cleanup(old.path(), &config, &none, Clock::Unattended(ahead)).unwrap();
        assert_eq!(done.removed_expired, 0);
        let log = old.path().join(layout::memory_log("short-term"));
        let fresh = serde_json::json!({
            "op": "add", "id": "m_ba9876543210", "ns": "short-term", "at": stamp(written),
            "expires_at": stamp(written + chrono::Duration::days(14)), "content": "y", "summary": "y",
        });
        let text = std::fs::read_to_string(&log).unwrap();
        std::fs::write(&log, format!("{text}{fresh}\n")).unwrap();
        let done = cleanup(old.path(), &config, &none, Clock::Unattended(ahead)).unwrap();
        assert_eq!(done.removed_expired, 1);
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(!text.contains("m_0123456789ab") && text.contains("m_ba9876543210"), "{text}");
    }
}
