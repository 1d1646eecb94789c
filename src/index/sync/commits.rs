//! Git history in the index (docs/search-index.md#git-history): the commits HEAD can reach, as
//! items of kind `commit` (refId `commit:<sha>`), so that "why did this change" is a search.
//!
//! The commit payload records the HEAD whose history is indexed. A sync that finds HEAD
//! elsewhere indexes the difference: what the new HEAD reaches and the old one did not
//! (`old..new`) is added, what only the old one reached (`new..old`: a rebase, a reset, a
//! checkout of another branch) goes. When git no longer knows the old HEAD, the history
//! is indexed again whole. Where git cannot run, the history stays as it was until HEAD
//! moves again.

use std::path::Path;

use tantivy::{IndexWriter, Term};

use super::super::Fields;
use super::apply::to_document;
use crate::error::{Chain, Result};
use crate::model::{DocKind, IndexDoc};
use crate::parse::issue_ref;
use crate::store::{self, git::CommitInfo};

/// What the history of HEAD needs: commits to delete and to add, and the HEAD it reaches.
struct Delta {
    /// `None`: every commit item goes.
    delete: Option<Vec<String>>,
    add: Vec<CommitInfo>,
    head: Option<String>,
}

/// Brings the commit items from the history of `indexed` to that of the current HEAD;
/// returns the HEAD now indexed and whether anything changed. `cleared`: the index was
/// emptied for a full sync.
pub(super) fn sync(
    root: &Path,
    writer: &mut IndexWriter,
    fields: &Fields,
    indexed: Option<&str>,
    cleared: bool,
) -> (Option<String>, bool) {
    let indexed = if cleared { None } else { indexed };
    let Some(delta) = delta(root, indexed) else { return (indexed.map(str::to_owned), false) };
    let changed = delta.delete.as_ref().is_none_or(|d| !d.is_empty()) || !delta.add.is_empty();
    match &delta.delete {
        None if !cleared => {
            writer.delete_term(Term::from_field_text(fields.kind, DocKind::Commit.as_str()));
        }
        None => {}
        Some(shas) => {
            for sha in shas {
                writer.delete_term(Term::from_field_text(fields.ref_id, &ref_id(sha)));
            }
        }
    }
    for c in &delta.add {
        if delta.delete.is_some() {
            // Replaced, never doubled (a commit reached again after a reset).
            writer.delete_term(Term::from_field_text(fields.ref_id, &ref_id(&c.sha)));
        }
        if let Err(e) = writer.add_document(to_document(fields, &doc(c))) {
            tracing::warn!("commit {}: {}", c.sha, Chain(&e));
        }
    }
    (delta.head, changed)
}

/// The refId of a commit.
pub fn ref_id(sha: &str) -> String {
    format!("commit:{sha}")
}

/// What to change, or None when nothing does (HEAD has not moved).
fn delta(root: &Path, indexed: Option<&str>) -> Option<Delta> {
    let head = store::git_head(root).and_then(|h| h.commit).filter(|c| !c.is_empty());
    if head.as_deref() == indexed {
        return None;
    }
    let Some(head) = head else {
        // No longer in git, or no commit yet: the history goes.
        return Some(Delta { delete: None, add: Vec::new(), head: None });
    };
    let attempt = || -> Result<Delta> {
        if let Some(old) = indexed
            && let Ok(gone) = store::git::rev_list(root, &format!("{head}..{old}"))
        {
            let add = store::git::commits(root, &format!("{old}..{head}"))?;
            return Ok(Delta { delete: Some(gone), add, head: Some(head.clone()) });
        }
        let add = store::git::commits(root, &head)?;
        Ok(Delta { delete: None, add, head: Some(head.clone()) })
    };
    match attempt() {
        Ok(d) => Some(d),
        Err(e) => {
            // Noted as indexed, so that a watcher does not ask git again every tick; the
            // next move of HEAD (or a rebuild) tries again.
            tracing::debug!("commits not indexed: {}", Chain(&e));
            Some(Delta { delete: Some(Vec::new()), add: Vec::new(), head: Some(head) })
        }
    }
}

/// A commit that touches more paths than this (an import, a vendored tree, a mass rename)
/// is found by the folders it touches rather than by each path: with every path in its
/// body, an import of 1,256 files held nearly every word of the tree and matched almost
/// any query of several words in the every-word tier. Commits of ordinary work touch far
/// fewer (in this repository's own history of 358 commits, one touched 352, the next
/// 103, and all others 82 or fewer).
pub(crate) const PATHS_INDEXED: usize = 100;

/// The paths of a commit as its item holds them: each path, or, when it changed more
/// than `PATHS_INDEXED` (`changed`; git's log gives the first `MAX_COMMIT_FILES` of them
/// as `files`), how many and the distinct folders of the first two levels the paths are
/// in (at most `PATHS_INDEXED` of them).
fn paths_text(files: &[String], changed: usize) -> String {
    if files.len() <= PATHS_INDEXED && changed <= PATHS_INDEXED {
        return files.join("\n");
    }
    let mut folders: Vec<&str> = files
        .iter()
        .filter_map(|f| f.rsplit_once('/').map(|(dir, _)| dir))
        .map(|dir| dir.match_indices('/').nth(1).map_or(dir, |(at, _)| &dir[..at]))
        .collect();
    folders.sort_unstable();
    folders.dedup();
    folders.truncate(PATHS_INDEXED);
    let mut text = format!("{} paths", changed.max(files.len()));
    for f in folders {
        text.push('\n');
        text.push_str(f);
    }
    text
}

/// The item of one commit: named by its subject, found by its body, author and paths too
/// (the folders only, for a commit that touches many), and by the issues its message names.
fn doc(c: &CommitInfo) -> IndexDoc {
    let refs = issue_ref::from_message(&format!("{}\n{}", c.subject, c.body));
    let short: String = c.sha.chars().take(12).collect();
    let mut body = c.body.clone();
    for line in [&c.author, &paths_text(&c.files, c.changed)] {
        if !line.is_empty() {
            body.push('\n');
            body.push_str(line);
        }
    }
    let date = crate::parse::time::normalise_time(&c.date);
    IndexDoc {
        ref_id: ref_id(&c.sha),
        kind: Some(DocKind::Commit),
        name: c.subject.clone(),
        description: format!("{short} {} ({}, {})", c.subject, c.author, date.get(..10).unwrap_or(&date)),
        created: Some(date),
        category: Some(c.author.clone()),
        body,
        issues: issue_ref::terms_of(&refs),
        ..IndexDoc::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_of_many_paths_holds_its_folders_not_each_path() {
        let few: Vec<String> = vec!["src/a.rs".into(), "docs/b.md".into()];
        assert_eq!(paths_text(&few, 2), "src/a.rs\ndocs/b.md");
        let many: Vec<String> = (0..1256)
            .map(|i| format!("vendor/lib{}/src/deep/file_{i}_zanzibar.rs", i % 3))
            .chain(["README.md".to_owned()])
            .collect();
        assert_eq!(paths_text(&many, 1257), "1257 paths\nvendor/lib0\nvendor/lib1\nvendor/lib2");
        // Git's log gave the first 200 of 1,257.
        assert_eq!(paths_text(&many[..200], 1257), "1257 paths\nvendor/lib0\nvendor/lib1\nvendor/lib2");
    }
}
