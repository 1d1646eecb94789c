//! Memories that git left only in a stash.
//!
//! `git stash -u` (and `pull --autostash`) takes a memory log that git does not track, or
//! the lines added to one it does, out of the work tree; when `stash pop` then conflicts on
//! the log, the stash stays and the memories in it are seen by no query. A check compares
//! the `add` lines of every memory log in each stash (its tracked part and its untracked
//! part) with the logs in the work tree, and names the stash and the command that brings
//! them back: appending a log's lines is safe, since an entry's id is its content's and a
//! fold takes each id once.

use std::collections::BTreeSet;
use std::path::Path;

use crate::layout::{self, MEMORY_DIR};
use crate::model::{Diagnostic, Rule};
use crate::store;

/// At most this many stashes are looked at (newest first).
const MAX_STASHES: usize = 50;

/// The ids of the `add` lines of a log's bytes.
fn added_ids(bytes: &[u8]) -> BTreeSet<String> {
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice::<serde_json::Value>(line).ok())
        .filter(|op| op["op"] == "add")
        .filter_map(|op| op["id"].as_str().map(str::to_owned))
        .collect()
}

/// Every id a log of the work tree names (in any op), so that a deleted entry is not
/// reported as missing.
fn known_ids(root: &Path, rel: &str) -> BTreeSet<String> {
    let Ok(Some(bytes)) = store::read_opt(root, &root.join(rel), store::cap::LOG) else { return BTreeSet::new() };
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice::<serde_json::Value>(line).ok())
        .filter_map(|op| op["id"].as_str().map(str::to_owned))
        .collect()
}

/// A finding per memory log and stash holding entries the work tree's log lacks.
pub(super) fn findings(root: &Path) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for stash in store::git::stashes(root, MAX_STASHES) {
        // The tracked part of the stash, then its untracked files (the third parent).
        for rev in [stash.clone(), format!("{stash}^3")] {
            for rel in store::git::files_at(root, &rev, MEMORY_DIR) {
                if layout::memory_namespace(&rel).is_none() {
                    continue;
                }
                let Some(bytes) = store::git::show(root, &rev, &rel) else { continue };
                let known = known_ids(root, &rel);
                let missing: Vec<String> = added_ids(&bytes).into_iter().filter(|id| !known.contains(id)).collect();
                if missing.is_empty() {
                    continue;
                }
                let message = format!(
                    "{} memor{} only in {rev} ({}{}): no query sees {}",
                    missing.len(),
                    if missing.len() == 1 { "y is" } else { "ies are" },
                    missing.iter().take(3).cloned().collect::<Vec<_>>().join(", "),
                    if missing.len() > 3 { ", …" } else { "" },
                    if missing.len() == 1 { "it" } else { "them" },
                );
                let hint =
                    format!("git show '{rev}:{rel}' >> {rel}   (then `git stash drop {stash}` once it is empty)");
                out.push(Diagnostic::warning(Rule::Stashed, 1, 1, message).with_hint(hint).with_path(rel));
            }
        }
    }
    out
}
