//! The cache below `.tmws/cache/` is derived and this machine's own, so nothing in it is
//! trusted from a repository.
//!
//! A clone can bring a cache (`git add -f`), and a cache is full of files that libraries
//! act on: tantivy's `.managed.json` names the files its garbage collection deletes, its
//! folder is where it writes, the manifest says which files need no reading, the token
//! opens `tmws serve`. Before a process uses the cache, [`vet`] looks for what tmws never
//! makes there — a symlink, a FIFO, a device or a socket anywhere in it, an index file list
//! naming anything but a file of its own folder, a file that git put there — and when it
//! finds one it sets the whole cache aside (into `set-aside/` inside the new one, so that
//! nothing is lost and nothing of it is read again) and the next steps rebuild it.
//!
//! "A file that git put there" is a file git's index lists below the cache whose inode and
//! modification time are the ones git recorded: git wrote it (a clone, a checkout, a pull)
//! and nothing of tmws' replaced it since. Once the cache was set aside and rebuilt, the
//! files at those paths are tmws' own, with other inodes and times, so a repository that
//! keeps tracking its cache costs one rebuild per change git makes there, not one per run.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::git;
use crate::error::{Chain, Error, Result};
use crate::layout::{CACHE_DIR, INDEX_DIR, TMWS_DIR};

/// Where a cache that was set aside goes, inside the new cache (never read again).
pub const SET_ASIDE_DIR: &str = "set-aside";

/// The most bytes of tantivy's file list that are read.
const MANAGED_LIST_CAP: u64 = 4 << 20;

/// A cache that was set aside: why, and where it went (root-relative).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetAside {
    pub why: String,
    pub to: String,
}

/// Why the cache of `root` must not be used, or None when it may (or there is none).
pub fn distrust(root: &Path) -> Option<String> {
    let cache = root.join(CACHE_DIR);
    let meta = match fs::symlink_metadata(&cache) {
        Ok(m) => m,
        Err(_) => return None,
    };
    if meta.file_type().is_symlink() {
        return Some(format!("{CACHE_DIR} is a symlink"));
    }
    if !meta.is_dir() {
        return Some(format!("{CACHE_DIR} is not a folder"));
    }
    if let Some((path, what)) = foreign_entry(&cache, CACHE_DIR) {
        return Some(format!("{path} is {what}"));
    }
    if let Some(why) = foreign_managed_list(root) {
        return Some(why);
    }
    put_there_by_git(root).map(|path| format!("{path} is a file git checked out (the cache is not trusted from git)"))
}

/// What `tmws check` says of the cache of `root`: each thing that makes it untrusted, as
/// (root-relative path, message, hint). Unlike [`distrust`], any file git tracks there counts,
/// whoever wrote it last: tracking it is the fault to fix.
pub fn findings(root: &Path) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    let remove = format!("remove {CACHE_DIR}: tmws rebuilds it");
    let cache = root.join(CACHE_DIR);
    match fs::symlink_metadata(&cache) {
        Ok(m) if m.file_type().is_symlink() => {
            found.push((CACHE_DIR.to_owned(), "the cache is a symlink".to_owned(), remove))
        }
        Ok(m) if !m.is_dir() => found.push((CACHE_DIR.to_owned(), "the cache is not a folder".to_owned(), remove)),
        Ok(_) => {
            if let Some((path, what)) = foreign_entry(&cache, CACHE_DIR) {
                found.push((
                    path,
                    format!("this file of the cache is {what}, which tmws never makes there"),
                    remove.clone(),
                ));
            }
            if let Some(why) = foreign_managed_list(root) {
                found.push((format!("{INDEX_DIR}/.managed.json"), why, remove));
            }
        }
        Err(_) => {}
    }
    if root.join(".git").exists() {
        let tracked: Vec<String> = match git::index_entries_under(root, &format!("{CACHE_DIR}/")) {
            Some(entries) => entries.into_iter().map(|e| e.path).collect(),
            None => git::tracked(root, CACHE_DIR).map(|t| t.into_iter().collect()).unwrap_or_default(),
        };
        if let Some(first) = tracked.first() {
            let more = match tracked.len() {
                1 => String::new(),
                n => format!(" and {} other files", n - 1),
            };
            found.push((
                first.clone(),
                format!("git tracks this file{more} of the cache, which is derived and this machine's own: tmws sets a cache that git put there aside"),
                format!("git rm -r --cached {CACHE_DIR}, and keep {CACHE_DIR}/ in .gitignore"),
            ));
        }
    }
    found
}

/// The first symlink or special file below `dir` (whose root-relative path is `rel`),
/// set-aside caches excepted (only their folder itself is looked at): its path and what
/// it is.
fn foreign_entry(dir: &Path, rel: &str) -> Option<(String, &'static str)> {
    let mut stack = vec![(dir.to_path_buf(), rel.to_owned())];
    while let Some((dir, rel)) = stack.pop() {
        let Ok(read) = fs::read_dir(&dir) else { continue };
        for entry in read.flatten() {
            let name = entry.file_name();
            let shown = format!("{rel}/{}", name.to_string_lossy());
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_symlink() {
                return Some((shown, "a symlink"));
            }
            if kind.is_dir() {
                if !(rel == CACHE_DIR && name == SET_ASIDE_DIR) {
                    stack.push((entry.path(), shown));
                }
            } else if !kind.is_file() {
                return Some((shown, super::guard::kind_name(kind)));
            }
        }
    }
    None
}

/// Why tantivy's list of the files it manages (which its garbage collection deletes once
/// no segment uses them) is not one this process could have written: a name that is not a
/// plain file name of the index folder.
fn foreign_managed_list(root: &Path) -> Option<String> {
    let rel = format!("{INDEX_DIR}/.managed.json");
    let path = root.join(&rel);
    let bytes = match super::read_opt(root, &path, MANAGED_LIST_CAP) {
        Ok(Some(b)) => b,
        Ok(None) => return None,
        Err(Error::Io { source, .. }) => return Some(format!("{rel} cannot be read ({source})")),
        Err(_) => return Some(format!("{rel} cannot be read")),
    };
    let names: Vec<String> = match serde_json::from_slice(&bytes) {
        Ok(n) => n,
        Err(_) => return Some(format!("{rel} is not a list of file names")),
    };
    names.iter().find(|n| !is_plain_name(n)).map(|_| format!("{rel} names a file outside the index folder"))
}

/// Whether `name` is the name of a file in a folder: one component, not `.` or `..`, no
/// separator and no NUL.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

/// The first file below the cache that git put there and nothing replaced since.
fn put_there_by_git(root: &Path) -> Option<String> {
    if !root.join(".git").exists() {
        return None;
    }
    let prefix = format!("{CACHE_DIR}/");
    let Some(entries) = git::index_entries_under(root, &prefix) else {
        // An index this reader does not know (a split index, a newer format): git answers,
        // without the stat data, so any tracked file present counts.
        let tracked = git::tracked(root, CACHE_DIR).ok()?;
        return tracked.into_iter().find(|p| fs::symlink_metadata(root.join(p)).is_ok());
    };
    entries.into_iter().find(|e| is_gits(&root.join(&e.path), e)).map(|e| e.path)
}

/// Whether the file at `path` is the one git recorded in `entry`.
#[cfg(unix)]
fn is_gits(path: &Path, entry: &git::IndexEntry) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(m) = fs::symlink_metadata(path) else { return false };
    // Git keeps the low 32 bits of each number.
    m.ino() as u32 == entry.ino && m.mtime() as u32 == entry.mtime_secs && m.mtime_nsec() as u32 == entry.mtime_nanos
}

#[cfg(not(unix))]
fn is_gits(path: &Path, _entry: &git::IndexEntry) -> bool {
    fs::symlink_metadata(path).is_ok()
}

/// Checks the cache of `root` and, when it must not be used, sets it aside: the process
/// then builds a new one. Also finishes a setting aside that a killed process left half
/// done. Fails only when an untrusted cache cannot be moved (a read-only root): then it
/// must not be used at all.
pub fn vet(root: &Path) -> Result<Option<SetAside>> {
    finish_interrupted(root);
    let Some(why) = distrust(root) else { return Ok(None) };
    set_aside(root, &why).map(|to| Some(SetAside { why, to }))
}

/// The name a cache has while it is being set aside (beside the cache, never read).
fn moving_name(pid: u32) -> String {
    format!("{TMWS_DIR}/.cache-set-aside-{pid}.tmp")
}

/// Moves the cache of `root` into `set-aside/` of a new, empty cache; returns where it went.
fn set_aside(root: &Path, why: &str) -> Result<String> {
    let cache = root.join(CACHE_DIR);
    let moving = root.join(moving_name(std::process::id()));
    let cannot = |e: io::Error| {
        Error::environment(format!("the cache cannot be used ({why}) and cannot be set aside"), e)
            .with_hint(format!("remove {CACHE_DIR} by hand; tmws rebuilds it"))
    };
    match fs::rename(&cache, &moving) {
        Ok(()) => {}
        // Another process set it aside first.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(String::new()),
        Err(e) => return Err(cannot(e)),
    }
    let to = file_into_new_cache(root, &moving).map_err(cannot)?;
    tracing::warn!("{why}: the cache was set aside to {to} and is rebuilt");
    Ok(to)
}

/// Makes a new cache (another process may have made it already) and moves `moving` into
/// its `set-aside/` folder under a name of its own; returns that name, root-relative.
fn file_into_new_cache(root: &Path, moving: &Path) -> io::Result<String> {
    let cache = root.join(CACHE_DIR);
    let set_aside = cache.join(SET_ASIDE_DIR);
    match fs::create_dir(&cache) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    match fs::create_dir(&set_aside) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    // The new cache is this process's or a racing one's: neither makes links there.
    if fs::symlink_metadata(&set_aside)?.file_type().is_symlink() {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "a symlink appeared in the new cache"));
    }
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.6fZ");
    let name = format!("{stamp}-{}", std::process::id());
    fs::rename(moving, set_aside.join(&name))?;
    Ok(format!("{CACHE_DIR}/{SET_ASIDE_DIR}/{name}"))
}

/// Moves what a process killed while setting a cache aside left beside it into the
/// cache's `set-aside/` folder.
fn finish_interrupted(root: &Path) {
    let Ok(read) = fs::read_dir(root.join(TMWS_DIR)) else { return };
    let left: Vec<PathBuf> = read
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(".cache-set-aside-") && n.ends_with(".tmp")))
        .map(|e| e.path())
        .collect();
    for moving in left {
        let pid = moving
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix(".cache-set-aside-")?.strip_suffix(".tmp")?.parse::<u32>().ok());
        // A process still at it finishes on its own.
        if pid.is_some_and(|p| p != std::process::id() && is_running(p)) {
            continue;
        }
        if let Err(e) = file_into_new_cache(root, &moving) {
            tracing::warn!("cannot file away {}: {}", moving.display(), Chain(&e));
        }
    }
}

#[cfg(unix)]
pub(crate) fn is_running(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else { return false };
    // Signal 0 asks only whether the process exists (EPERM: it does, as another user's).
    if matches!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None), Err(nix::errno::Errno::ESRCH)) {
        return false;
    }
    // A process that exited but that its parent has not reaped yet (a zombie: a server an
    // agent killed, before the agent waits for it) still answers signal 0, yet runs no
    // more and holds nothing: what it left is for others to take.
    !is_zombie(pid)
}

/// Whether `/proc` says process `pid` is a zombie (or dead); false where there is no `/proc`.
#[cfg(unix)]
fn is_zombie(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    // The state follows the command name, which is in parentheses and may hold any byte.
    stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']))
}

#[cfg(not(unix))]
pub(crate) fn is_running(_pid: u32) -> bool {
    false
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A child that exited and is not yet waited for is a zombie: it answers signal 0 but
    /// is not running, so what it left (a session journal, a lock's owner) can be taken.
    #[test]
    fn an_exited_child_not_yet_reaped_is_not_running() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Its state becomes `Z` once it has exited; nothing reaps it before `wait` below.
        while !is_zombie(pid) {
            std::thread::yield_now();
        }
        assert!(!is_running(pid));
        child.wait().unwrap();
        assert!(is_running(std::process::id()));
    }
}
