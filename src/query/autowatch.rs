//! The watcher a command-line query starts (`[watch] auto`): without a tmws process that
//! keeps the index, every query from the command line stats every file before it answers
//! (docs/search-index.md#sync), which on a root of tens of thousands of files costs more than the
//! search. A query that paid for such a scan starts `tmws watch --idle-exit SECS` in the
//! background; the next queries find a process that keeps the index and only wait for its
//! pending changes (at most `STALE_WAIT`, then `stale: true`), so no answer is stale
//! silently. Each of them writes the time to `QUERIED_MARKER`; the watcher stops once that
//! time is older than `SECS`, or when another process keeps the index.
//!
//! However many queries finish such a scan at once, one watcher starts: a query takes
//! `AUTOWATCH_LOCK` before it starts one, and hands it to the watcher as its standard
//! input, so that the watcher holds it for as long as it runs; a query that finds it held
//! starts none, and leaves the writer role to that watcher.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};
use crate::layout::{AUTOWATCH_LOCK, QUERIED_MARKER};
use crate::store::FileStamp;

/// Writes the time now (ms since the epoch) to the marker a `tmws watch --idle-exit` reads.
/// A root that cannot take it loses nothing but that watcher's stay.
pub(crate) fn mark_queried(root: &Path) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    let _ = crate::store::write_marker(root, &root.join(QUERIED_MARKER), now.to_string().as_bytes());
}

/// When a command-line query last asked a process that keeps the index of `root`.
pub fn last_queried(root: &Path) -> Option<SystemTime> {
    let text = crate::store::read_text_opt(root, &root.join(QUERIED_MARKER), 64).ok()??;
    let ms: u64 = text.trim().parse().ok()?;
    Some(UNIX_EPOCH + Duration::from_millis(ms))
}

/// Whether a watcher a query started runs for `root` (or is being started): then the
/// index is its to keep, and a query reads rather than takes the writer role from it
/// between two of its ticks (under a stream of queries the watcher would otherwise only
/// ever follow them, and stop).
pub(crate) fn started_one_runs(root: &Path) -> bool {
    crate::store::FileLock::is_held(root, &root.join(AUTOWATCH_LOCK)).unwrap_or(false)
}

/// Starts `exe --root ROOT watch --idle-exit SECS` on its own, with no terminal: its own
/// process group (a Ctrl-C at the prompt is not for it), output closed, and
/// `AUTOWATCH_LOCK` as its input, held for as long as it runs. Returns its pid, or None
/// when another query started one that still runs (or is starting one now). Nobody waits
/// for it: when this process ends, the system adopts it.
pub(crate) fn spawn(exe: &Path, root: &Path, idle_secs: u64) -> Result<Option<u32>> {
    let Some(lock) = crate::store::FileLock::try_exclusive(root, &root.join(AUTOWATCH_LOCK))? else {
        return Ok(None);
    };
    let mut cmd = Command::new(exe);
    cmd.arg("--root")
        .arg(root)
        .args(["watch", "--idle-exit", &idle_secs.to_string()])
        .current_dir(root)
        .stdin(lock.into_stdio())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd.spawn().map(|child| Some(child.id())).map_err(|e| Error::environment("cannot start `tmws watch`", e))
}

/// What the running executable's file was when a watcher started: once another file is
/// there (an upgrade: `cargo install`, a package manager), the started watcher stops, so
/// that the next query starts the new binary instead of following the old one for as long
/// as queries keep it alive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExeStamp {
    path: std::path::PathBuf,
    file: Option<FileStamp>,
}

impl ExeStamp {
    /// The running executable's file now; None where the system does not say which it is.
    pub fn of_current_exe() -> Option<ExeStamp> {
        std::env::current_exe().ok().map(|path| ExeStamp::of(&path))
    }

    /// The file at `path` now.
    pub fn of(path: &Path) -> ExeStamp {
        ExeStamp { path: path.to_path_buf(), file: FileStamp::of(path) }
    }

    /// Whether the file at the same path is another one now (replaced, rewritten or gone).
    pub fn replaced(&self) -> bool {
        ExeStamp::of(&self.path) != *self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_executable_rewritten_renamed_over_or_removed_counts_as_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("tmws");
        std::fs::write(&exe, b"old binary").unwrap();
        let stamp = ExeStamp::of(&exe);
        assert!(!stamp.replaced(), "the same file");
        std::fs::write(dir.path().join("new"), b"new binary, longer").unwrap();
        std::fs::rename(dir.path().join("new"), &exe).unwrap();
        assert!(stamp.replaced(), "renamed over");
        let stamp = ExeStamp::of(&exe);
        std::fs::write(&exe, b"new binary, other").unwrap();
        assert!(stamp.replaced(), "rewritten in place");
        std::fs::remove_file(&exe).unwrap();
        assert!(stamp.replaced(), "removed");
    }
}
