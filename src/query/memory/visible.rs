//! Which memories a search shows (DESIGN §2.3, visibility across branches).
//!
//! A log git tracks is the checked-out branch's history: every live entry in it is
//! visible (a merge brings the other branch's entries, a checkout takes them away). In a
//! log git does not track, an entry is visible when it was written on the checked-out
//! branch, on the default branch or outside git, or on a branch merged into HEAD: the
//! branch's tip, or, once the branch is deleted, the commit the entry records, is HEAD or
//! one of its ancestors.
//!
//! Asking git costs a few milliseconds, so what it says is cached under `.tmws/cache/`,
//! keyed on what changes its answers (HEAD, the branch tips, git's index): a search after
//! nothing changed in git reads a few small files and runs no git.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Result;
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
}

/// The memories a search shows: all (`None`) for `branch: "*"` and outside git; those
/// written on `B` for `branch: B`; by default, DESIGN §2.3's rule.
pub(crate) fn visible(root: &Path, index: &Index, asked: Option<&str>) -> Result<Option<Visible>> {
    match asked.map(str::trim) {
        Some("*") => return Ok(None),
        Some(b) if !b.is_empty() => return Ok(Some(Visible { branches: vec![b.to_owned()], ..Visible::default() })),
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
        .filter(|c: &Cached| c.key == key)
        .unwrap_or_default();
    let fresh = cached.key != key;
    if fresh {
        // Without git (not installed, or failing) nothing is tracked or merged: the
        // current and the default branch's entries are still shown.
        cached = Cached {
            key,
            tracked: store::git::tracked(root, layout::MEMORY_DIR)
                .unwrap_or_default()
                .iter()
                .filter_map(|p| layout::memory_namespace(p).map(str::to_owned))
                .collect(),
            merged: if head.commit.is_some() {
                store::git::merged_branches(root).unwrap_or_default()
            } else {
                BTreeSet::new()
            },
            ancestors: BTreeMap::new(),
        };
    }
    let mut branches: BTreeSet<String> = cached.merged.clone();
    branches.extend(head.branch.clone());
    branches.extend(store::git::default_branch(root));
    // Entries of branches git no longer has: visible when their commit is in HEAD's history.
    let mut asked_git = false;
    let mut commits = BTreeSet::new();
    let known: BTreeSet<String> = tips.keys().cloned().chain(branches.iter().cloned()).collect();
    for (_, written_at) in index.memory_commits_off(&known)? {
        for commit in written_at {
            let merged = match cached.ancestors.get(&commit) {
                Some(m) => *m,
                None => {
                    asked_git = true;
                    let m = head.commit.is_some() && store::git::is_ancestor_of_head(root, &commit).unwrap_or(false);
                    cached.ancestors.insert(commit.clone(), m);
                    m
                }
            };
            if merged {
                commits.insert(commit);
            }
        }
    }
    if fresh || asked_git {
        // A derived cache: one that cannot be written is asked again next time.
        if let Ok(bytes) = serde_json::to_vec(&cached)
            && let Err(e) = store::write_atomic(root, &path, &bytes)
        {
            tracing::debug!("{}: not saved: {e}", layout::VISIBILITY_FILE);
        }
    }
    Ok(Some(Visible {
        namespaces: cached.tracked.into_iter().collect(),
        branches: branches.into_iter().collect(),
        commits: commits.into_iter().collect(),
        branchless: true,
    }))
}
