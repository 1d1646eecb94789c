//! Removing what other versions of tmws left of their index.
//!
//! Each version keeps its index in a folder of its own ([`layout::INDEX_HOME`]), so that a
//! process started before an upgrade (a watcher, an editor's MCP server) and the new
//! binary never delete or rewrite each other's index: up to version 10 they shared one
//! folder, and each rebuilt it for its own version under the other's writer, in turn, on
//! every query. Once no process of another version writes its folder (its open lock and
//! tantivy's writer lock are free), the folder goes; a folder still written is left for a
//! later open to remove.

use std::path::Path;

use crate::error::Result;
use crate::layout::{INDEX_HOME, INDEX_PARENT, LEGACY_INDEX_FILES};
use crate::store::{self, FileLock};

/// The lock tantivy's writer holds in its folder.
const WRITER_LOCK: &str = ".tantivy-writer.lock";
/// What versions up to 10 took while opening the index (the first of the legacy files).
const LEGACY_OPEN_LOCK: &str = LEGACY_INDEX_FILES[0];

/// What was found and removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Retired {
    /// Folders (or, for versions up to 10, sets of files) removed.
    pub removed: Vec<String>,
    /// Those left because a process of that version still writes them.
    pub in_use: Vec<String>,
}

/// Removes the index of every other version that no process writes now. Cheap when there
/// is none: one listing of [`INDEX_PARENT`].
pub fn retire_other_versions(root: &Path) -> Result<Retired> {
    let mut done = Retired::default();
    let parent = root.join(INDEX_PARENT);
    // A cache folder that leads out of the root (a symlink a repository brought) is
    // none of this process's business to empty: the listing refuses it.
    let Ok(entries) = store::list_dir(root, &parent) else { return Ok(done) };
    let ours = Path::new(INDEX_HOME).file_name().and_then(|n| n.to_str()).unwrap_or_default();
    if entries.iter().all(|e| e == ours) {
        return Ok(done);
    }
    let folders = store::list_subdirs(root, &parent)?;
    let is_other_version = |name: &String| name != ours && is_version(name) && folders.contains(name);
    for v in entries.iter().filter(|e| is_other_version(e)) {
        let rel = format!("{INDEX_PARENT}/{v}");
        let dir = root.join(&rel);
        let Some(_open) = FileLock::try_exclusive(root, &dir.join("open.lock"))? else {
            done.in_use.push(rel);
            continue;
        };
        if FileLock::is_held(root, &dir.join("segments").join(WRITER_LOCK))? {
            done.in_use.push(rel);
            continue;
        }
        store::remove_dir_all(&dir)?;
        done.removed.push(rel);
    }
    let legacy: Vec<&String> = entries.iter().filter(|e| *e != ours && !is_other_version(e)).collect();
    if !legacy.is_empty() {
        retire_legacy(root, &legacy, &folders, &mut done)?;
    }
    Ok(done)
}

/// `v` and digits: a version's folder.
fn is_version(name: &str) -> bool {
    name.strip_prefix('v').is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// The index of versions up to 10: tantivy's files straight in [`INDEX_PARENT`] (`names`,
/// of which `folders` are folders) and the manifest, markers and open lock beside it.
fn retire_legacy(root: &Path, names: &[&String], folders: &[String], done: &mut Retired) -> Result<()> {
    let label = format!("{INDEX_PARENT} (version 10 or older)");
    let Some(_open) = FileLock::try_exclusive(root, &root.join(LEGACY_OPEN_LOCK))? else {
        done.in_use.push(label);
        return Ok(());
    };
    let parent = root.join(INDEX_PARENT);
    if FileLock::is_held(root, &parent.join(WRITER_LOCK))? {
        done.in_use.push(label);
        return Ok(());
    }
    for name in names {
        let path = parent.join(name);
        if folders.contains(name) { store::remove_dir_all(&path)? } else { store::remove_file(&path)? }
    }
    for rel in LEGACY_INDEX_FILES {
        let path = root.join(rel);
        if store::exists(&path) {
            store::remove_file(&path)?;
        }
    }
    done.removed.push(label);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository that brings `.tmws/cache` (or a version's folder) as a symlink to a
    /// folder outside the root gets nothing outside removed.
    #[cfg(unix)]
    #[test]
    fn nothing_outside_the_root_is_removed_through_a_symlink() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(outside.path().join("index/v3")).unwrap();
        std::fs::write(outside.path().join("index/meta.json"), "theirs").unwrap();
        std::fs::write(outside.path().join("index/v3/keep"), "theirs").unwrap();

        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join(".tmws")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join(".tmws/cache")).unwrap();
        assert_eq!(retire_other_versions(root.path()).unwrap(), Retired::default());

        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join(INDEX_PARENT)).unwrap();
        std::os::unix::fs::symlink(outside.path().join("index/v3"), root.path().join(INDEX_PARENT).join("v3")).unwrap();
        let done = retire_other_versions(root.path()).unwrap();
        assert_eq!(done.removed, vec![format!("{INDEX_PARENT} (version 10 or older)")]);
        assert!(!root.path().join(INDEX_PARENT).join("v3").exists(), "the link itself goes");

        assert_eq!(std::fs::read_to_string(outside.path().join("index/meta.json")).unwrap(), "theirs");
        assert_eq!(std::fs::read_to_string(outside.path().join("index/v3/keep")).unwrap(), "theirs");
    }
}
