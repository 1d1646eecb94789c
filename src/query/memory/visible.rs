//! Which memories a search shows (docs/memory-log.md#visibility-across-branches).
//!
//! A log git tracks is the checked-out branch's history: every live entry in it is
//! visible (a merge brings the other branch's entries, a checkout takes them away). In a
//! log git does not track, an entry is visible when it was written on the checked-out
//! branch, on the default branch or outside git, or on a branch merged into HEAD: the
//! branch's tip, or, once the branch is deleted, its last tip tmws saw (the commit the
//! entry records, for a branch tmws never saw: an entry written before the branch's first
//! commit records where it forked, so the last tip is the better witness) is HEAD or one of
//! its ancestors.
//!
//! Asking git costs a few milliseconds, so what it says is cached under `.tmws/cache/`,
//! keyed on what changes its answers (HEAD, the branch tips, git's index): a search after
//! nothing changed in git reads a few small files and runs no git.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Chain, Result};
use crate::index::Index;
use crate::index::search::Visible;
use crate::layout;
use crate::store;

/// What git said, and when it would say something else.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Cached {
    key: String,
    /// The namespaces whose logs git tracks.
    tracked: BTreeSet<String>,
    /// The local branches merged into HEAD.
    merged: BTreeSet<String>,
    /// Commits asked about: whether each is HEAD or one of its ancestors.
    ancestors: BTreeMap<String, bool>,
    /// The last tip seen of every branch, kept after the branch is deleted: whether a
    /// deleted branch was merged is whether its last tip is in HEAD's history.
    #[serde(default)]
    last_tips: BTreeMap<String, String>,
}

/// The memories a search shows: all (`None`) for `branch: "*"` and outside git; those
/// written on `B` for `branch: B`; by default, the rule above.
pub(crate) fn visible(root: &Path, index: &Index, asked: Option<&str>) -> Result<Option<Visible>> {
    match asked.map(str::trim) {
        Some("*") => return Ok(None),
        Some(b) if !b.is_empty() => return Ok(Some(Visible::Only(vec![b.to_owned()]))),
        _ => {}
    }
    let Some(head) = store::git_head(root) else { return Ok(None) };
    let tips = store::git::branch_tips(root).unwrap_or_default();
    let key = format!(
        "{}|{}|{}",
        head.commit.as_deref().unwrap_or(""),
        blake3::hash(format!("{tips:?}").as_bytes()).to_hex(),
        store::git::index_stamp(root).unwrap_or_default()
    );
    let path = root.join(layout::VISIBILITY_FILE);
    let mut cached: Cached = store::read_opt(root, &path, store::cap::CONFIG)
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let fresh = cached.key != key;
    if fresh {
        // Without git (not installed, or failing) nothing is tracked or merged: the
        // current and the default branch's entries are still shown.
        let mut last_tips = std::mem::take(&mut cached.last_tips);
        last_tips.extend(tips.iter().map(|(b, c)| (b.clone(), c.clone())));
        let merged =
            if head.commit.is_some() { store::git::merged_branches(root).unwrap_or_default() } else { BTreeSet::new() };
        cached = Cached { key, tracked: tracked_namespaces(root), merged, ancestors: BTreeMap::new(), last_tips };
    }
    let mut shown: BTreeSet<String> = cached.merged.clone();
    shown.extend(head.branch.clone());
    shown.extend(store::git::default_branch(root));
    let mut asked_git = false;
    let mut in_head = |commit: &str, cached: &mut Cached| match cached.ancestors.get(commit) {
        Some(m) => *m,
        None => {
            asked_git = true;
            let m = head.commit.is_some() && store::git::is_ancestor_of_head(root, commit).unwrap_or(false);
            cached.ancestors.insert(commit.to_owned(), m);
            m
        }
    };
    // Every other branch of the index is hidden: one git has and did not merge, a deleted
    // one whose last tip seen is not in HEAD's history; a deleted one tmws never saw is
    // judged entry by entry, by the commit each records.
    let all = index.memory_branches()?;
    let never_seen: BTreeSet<String> = all
        .iter()
        .filter(|b| !shown.contains(*b) && !tips.contains_key(*b) && !cached.last_tips.contains_key(*b))
        .cloned()
        .collect();
    let mut hidden = Vec::new();
    for branch in all.iter().filter(|b| !shown.contains(*b) && !never_seen.contains(*b)) {
        let merged = match (tips.contains_key(branch), cached.last_tips.get(branch).cloned()) {
            (true, _) | (false, None) => false,
            (false, Some(tip)) => in_head(&tip, &mut cached),
        };
        if !merged {
            hidden.push(branch.clone());
        }
    }
    let mut partly = Vec::new();
    if !never_seen.is_empty() {
        let known: BTreeSet<String> = all.difference(&never_seen).cloned().collect();
        for (branch, written_at) in index.memory_commits_off(&known)? {
            // Entries that record no commit cannot show they were merged: with none of the
            // branch's commits in HEAD's history, the whole branch is hidden.
            let off: Vec<String> =
                written_at.iter().filter(|c| !c.is_empty() && !in_head(c, &mut cached)).cloned().collect();
            if written_at.contains("") && off.len() + 1 == written_at.len() {
                hidden.push(branch);
            } else if !off.is_empty() {
                partly.push((branch, off));
            }
        }
    }
    if fresh || asked_git {
        // A derived cache: one that cannot be written is asked again next time.
        if let Ok(bytes) = serde_json::to_vec(&cached)
            && let Err(e) = store::write_atomic(root, &path, &bytes)
        {
            tracing::debug!("{}: not saved: {}", layout::VISIBILITY_FILE, Chain(&e));
        }
    }
    Ok(Some(Visible::Except { tracked: cached.tracked.into_iter().collect(), hidden, partly }))
}

/// The last tip tmws has seen of every branch, the current branches' included (and saved
/// for next time): what tells whether a deleted branch was merged.
pub(crate) fn last_tips(root: &Path) -> BTreeMap<String, String> {
    let path = root.join(layout::VISIBILITY_FILE);
    let mut cached: Cached = store::read_opt(root, &path, store::cap::CONFIG)
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let before = cached.last_tips.clone();
    cached.last_tips.extend(store::git::branch_tips(root).unwrap_or_default());
    if cached.last_tips != before
        && let Ok(bytes) = serde_json::to_vec(&cached)
        && let Err(e) = store::write_atomic(root, &path, &bytes)
    {
        tracing::debug!("{}: not saved: {}", layout::VISIBILITY_FILE, Chain(&e));
    }
    cached.last_tips
}

/// The namespaces whose logs git tracks; none outside git, or when git fails.
pub(crate) fn tracked_namespaces(root: &Path) -> BTreeSet<String> {
    store::git::tracked(root, layout::MEMORY_DIR)
        .unwrap_or_default()
        .iter()
        .filter_map(|p| layout::memory_namespace(p).map(str::to_owned))
        .collect()
}
