//! The commit that introduced each memory (docs/memory-log.md#commit-links), derived from git
//! history.
//!
//! An entry was introduced by the first commit whose version of its log holds its `add`
//! line: `git log -p` over the memory logs, oldest first, says which. Nothing is written
//! to a tracked file (old logs' `link` ops are still read by the fold, none are written):
//! what git says is cached in `.tmws/cache/commit-links.json` with the HEAD it was read
//! at, and read on from there while HEAD moves forward (a rewritten history is read
//! again). A process keeps the cache in memory too, so a search after nothing changed
//! reads HEAD and nothing else.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::error::{Chain, Result};
use crate::layout;
use crate::memory::{Kind, Op};
use crate::store;

/// At most this many changed files of a commit are kept (and shown).
pub const MAX_FILES: usize = 50;
/// Commits asked about in one `git log --no-walk`.
const BATCH: usize = 100;

/// A commit as answers show it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IntroducedIn {
    /// The commit's hash, 12 hex digits.
    pub commit: String,
    pub subject: String,
    /// The files it changed (at most 50).
    pub files: Vec<String>,
    /// How many more files it changed.
    #[serde(default, skip_serializing_if = "crate::query::answer::is_zero")]
    pub more_files: usize,
}

/// What git history says, as of `head`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Links {
    /// The HEAD the history was read up to.
    pub head: String,
    /// Entry id → the full hash of the commit that introduced it.
    pub entries: BTreeMap<String, String>,
    /// Full hash → the commit.
    pub commits: BTreeMap<String, IntroducedIn>,
}

impl Links {
    /// The commit that introduced entry `id`, when history knows it.
    pub fn of(&self, id: &str) -> Option<&IntroducedIn> {
        self.entries.get(id).and_then(|c| self.commits.get(c))
    }
}

/// The links this process read last, by root.
static CACHE: Mutex<BTreeMap<std::path::PathBuf, Links>> = Mutex::new(BTreeMap::new());

/// The links as of the current HEAD (empty outside git, or when git cannot be run).
pub(crate) fn current(root: &Path) -> Links {
    let Some(head) = store::git_head(root).and_then(|h| h.commit) else { return Links::default() };
    if let Ok(cache) = CACHE.lock()
        && let Some(links) = cache.get(root)
        && links.head == head
    {
        return links.clone();
    }
    let links = match update(root, &head) {
        Ok(l) => l,
        Err(e) => {
            tracing::debug!("commit links: {}", Chain(&e));
            return Links::default();
        }
    };
    if let Ok(mut cache) = CACHE.lock() {
        cache.insert(root.to_path_buf(), links.clone());
    }
    links
}

/// Reads history on from the saved links up to `head`, and saves them.
fn update(root: &Path, head: &str) -> Result<Links> {
    // The links are read from git's history, which every worktree of a repository shares,
    // so they are kept once, in the main worktree's cache.
    let shared = store::git::project_root(root);
    let path = shared.join(layout::COMMIT_LINKS_FILE);
    let saved: Links = store::read_opt(&shared, &path, store::cap::LOG)
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    if saved.head == head {
        return Ok(saved);
    }
    let forward = !saved.head.is_empty() && store::git::is_ancestor_of_head(root, &saved.head).unwrap_or(false);
    let mut links = if forward { saved } else { Links::default() };
    let range = if forward { format!("{}..{head}", links.head) } else { head.to_owned() };
    let out = store::git::run(
        root,
        &[
            "log",
            "--topo-order",
            "--reverse",
            "--no-color",
            "--no-ext-diff",
            "--no-renames",
            "-p",
            "--unified=0",
            "--format=%x01%H",
            &range,
            "--",
            layout::MEMORY_DIR,
        ],
    )?;
    let mut new_commits = Vec::new();
    let mut commit = "";
    for line in out.lines() {
        if let Some(hash) = line.strip_prefix('\u{1}') {
            commit = hash.trim();
            continue;
        }
        let Some(added) = line.strip_prefix('+') else { continue };
        if !added.starts_with('{') || commit.is_empty() {
            continue;
        }
        if let Ok(Ok(op)) = Op::read(added)
            && op.op == Kind::Add
            && !links.entries.contains_key(&op.id)
        {
            links.entries.insert(op.id, commit.to_owned());
            if !links.commits.contains_key(commit) && !new_commits.iter().any(|c| c == commit) {
                new_commits.push(commit.to_owned());
            }
        }
    }
    for batch in new_commits.chunks(BATCH) {
        let mut args = vec!["log", "--no-walk=unsorted", "--no-renames", "--format=%x01%H%x02%s", "--name-only"];
        args.extend(batch.iter().map(String::as_str));
        for block in store::git::run(root, &args)?.split('\u{1}').filter(|b| !b.trim().is_empty()) {
            let mut lines = block.lines();
            let Some((hash, subject)) = lines.next().and_then(|l| l.split_once('\u{2}')) else { continue };
            let files: Vec<String> = lines.map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect();
            let more_files = files.len().saturating_sub(MAX_FILES);
            links.commits.insert(
                hash.to_owned(),
                IntroducedIn {
                    commit: hash.chars().take(12).collect(),
                    subject: crate::redact::redact(subject).text,
                    files: files.into_iter().take(MAX_FILES).collect(),
                    more_files,
                },
            );
        }
    }
    links.head = head.to_owned();
    // A derived cache: one that cannot be written is read from git again next time.
    if let Ok(bytes) = serde_json::to_vec(&links)
        && let Err(e) = store::write_atomic(&shared, &path, &bytes)
    {
        tracing::debug!("{}: not saved: {}", layout::COMMIT_LINKS_FILE, Chain(&e));
    }
    Ok(links)
}
