//! Keeping the memory logs small and true (docs/memory-log.md and docs/trust.md), as the tools ask for it:
//! `memory cleanup` (every log compacted by `crate::memory::compact`), `memory clear`,
//! `memory prune --below`, `memory gc-branches`, `memory link-commit`, and the access
//! counts that decay is computed with.

use std::collections::{BTreeMap, BTreeSet};

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{namespace, namespaces, stamp};
use crate::config::Config;
use crate::error::{Chain, Error, Result};
use crate::index::current_importance;
use crate::layout;
use crate::memory::compact::{compact, compact_if_worth_it};
use crate::memory::op::Author;
use crate::memory::{Fold, Op, Writer};
use crate::store;

/// `memory_cleanup`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Cleaned {
    /// Expired entries removed.
    pub removed_expired: usize,
    /// How many bytes the logs shrank by.
    pub compacted_bytes: u64,
    /// Per namespace: expired entries removed and the log's size after.
    pub by_namespace: BTreeMap<String, CleanedLog>,
}

/// One log's cleanup.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct CleanedLog {
    pub removed_expired: usize,
    pub bytes: u64,
}

/// `memory_clear`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Cleared {
    /// Live entries forgotten.
    pub cleared: usize,
    /// The namespaces whose memories were forgotten.
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

/// `op` with `author`: who wrote it.
fn by(mut op: Op, author: &Author) -> Op {
    op.author = Some(author.clone());
    op
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
        writer.replace(&[], Fold::new(false))?;
    }
    Ok(Cleared { cleared, namespaces: targets })
}

/// The access counts (memory id → reads).
pub fn accesses(root: &Path) -> BTreeMap<String, u64> {
    // One count per project: the worktrees of a repository share the main one's.
    let root = &store::git::project_root(root);
    let bytes =
        store::read_opt(root, &root.join(layout::ACCESS_FILE), store::cap::CONFIG).ok().flatten().unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or_default()
}

/// Counts one read of a memory. A derived cache: a lost count (two processes at once, a
/// full disk) only makes a memory decay a little sooner, so failures are logged, not raised.
pub(crate) fn count_access(root: &Path, id: &str) {
    let mut counts = accesses(root);
    *counts.entry(id.to_owned()).or_default() += 1;
    let root = &store::git::project_root(root);
    let text = serde_json::to_vec(&counts).unwrap_or_default();
    if let Err(e) = store::write_atomic(root, &root.join(layout::ACCESS_FILE), &text) {
        tracing::debug!("access count of {id} not saved: {}", Chain(&e));
    }
}

/// `memory prune --below F`: delete ops for the live entries whose current importance
/// (docs/ranking.md) is under `below`, except in the logs of the namespaces in `leave`;
/// `author` is who prunes (a person at the command line, or the upkeep).
pub(crate) fn prune(
    root: &Path,
    config: &Config,
    below: f64,
    now: DateTime<Utc>,
    leave: &BTreeSet<String>,
    author: &Author,
) -> Result<Pruned> {
    // The same limit as `memory.prune_below`, which the upkeep passes here.
    crate::limits::IMPORTANCE.check("--below", below).map_err(Error::Usage)?;
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
                let age = (now - added).num_seconds() as f64 / 86_400.0;
                let age_days = if crate::index::search::fades(e.kind.as_deref()) { age } else { 0.0 };
                let reads = reads.get(*id).copied().unwrap_or(0);
                current_importance(e.importance, age_days, half_life, reads) < below
            })
            .map(|(id, _)| id.clone())
            .collect();
        if gone.is_empty() {
            continue;
        }
        let ops: Vec<Op> = gone.iter().map(|id| by(writer.fold.tombstone(id, &at), author)).collect();
        writer.append(&ops, config.memory.fsync)?;
        compact_if_worth_it(&mut writer, config.memory.compact_garbage_ratio, &at)?;
        pruned.extend(gone);
    }
    Ok(Pruned { pruned: pruned.len(), ids: pruned })
}

/// `memory gc-branches`: deletes the short-term entries of branches that no longer exist
/// and were never merged (those of a branch whose last tip seen — or, for one never seen,
/// the entry's recorded commit — is in HEAD's history stay: they are visible from here).
pub(crate) fn gc_branches(
    root: &Path,
    config: &Config,
    leave: &BTreeSet<String>,
    author: &Author,
) -> Result<GcBranches> {
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
            let ops: Vec<Op> = removed.iter().map(|id| by(writer.fold.tombstone(id, &at), author)).collect();
            writer.append(&ops, config.memory.fsync)?;
            compact_if_worth_it(&mut writer, config.memory.compact_garbage_ratio, &at)?;
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
