//! File events: what changed on disk, as root-relative paths, debounced.
//!
//! The watcher is a hint and the scan is the truth: events only say *where* to look. A
//! folder event names the folder, so the caller rescans its subtree (inotify reports only
//! the top folder after `mkdir -p a/b && write a/b/f.md`); an overflow or an error asks
//! for a full rescan. Only the canonical folders are watched recursively, so `target/` or
//! `node_modules/` never eat inotify watches.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use notify::{EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};

use crate::error::{Error, Result};

/// One batch of changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Root-relative files or folders that changed (or vanished).
    pub paths: BTreeSet<String>,
    /// Events were lost: everything must be rescanned.
    pub rescan: bool,
}

/// A source of change batches: the file watcher, or a scripted one in tests.
pub trait Events {
    /// The next batch, or None when nothing happened within `timeout`.
    fn next(&mut self, timeout: Duration) -> Result<Option<Changes>>;
}

impl Events for FileWatcher {
    fn next(&mut self, timeout: Duration) -> Result<Option<Changes>> {
        FileWatcher::next(self, timeout)
    }
}

/// Watches some folders of a root.
pub struct FileWatcher {
    root: PathBuf,
    debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
    rx: Receiver<DebounceEventResult>,
    /// Root-relative folders to watch recursively once they exist.
    wanted: Vec<String>,
    watching: BTreeSet<String>,
}

impl std::fmt::Debug for FileWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileWatcher").field("root", &self.root).field("watching", &self.watching).finish()
    }
}

fn notify_err(root: &Path, e: &notify::Error) -> Error {
    Error::Usage(format!("cannot watch {}: {e}", root.display()))
}

impl FileWatcher {
    /// Watches `dirs` (root-relative) recursively, and the root and `.tmws/` shallowly so
    /// that folders created later are noticed.
    pub fn new(root: &Path, dirs: &[String], debounce: Duration) -> Result<FileWatcher> {
        let (tx, rx) = channel();
        let mut debouncer = new_debouncer(debounce, None, tx).map_err(|e| notify_err(root, &e))?;
        debouncer.watch(root, RecursiveMode::NonRecursive).map_err(|e| notify_err(root, &e))?;
        let tmws = root.join(super::TMWS_DIR);
        if tmws.is_dir() {
            debouncer.watch(&tmws, RecursiveMode::NonRecursive).map_err(|e| notify_err(root, &e))?;
        }
        let mut w =
            FileWatcher { root: root.to_path_buf(), debouncer, rx, wanted: dirs.to_vec(), watching: BTreeSet::new() };
        w.watch_new_folders()?;
        Ok(w)
    }

    /// Adds recursive watches for wanted folders that exist now. Returns those added.
    fn watch_new_folders(&mut self) -> Result<Vec<String>> {
        let mut added = Vec::new();
        for dir in self.wanted.clone() {
            if self.watching.contains(&dir) {
                continue;
            }
            let abs = self.root.join(&dir);
            if abs.is_dir() {
                self.debouncer.watch(&abs, RecursiveMode::Recursive).map_err(|e| notify_err(&abs, &e))?;
                self.watching.insert(dir.clone());
                added.push(dir);
            } else {
                // Watch the nearest existing ancestor shallowly, so its creation is seen.
                let mut parent = abs.parent();
                while let Some(p) = parent {
                    if p.is_dir() {
                        let _ = self.debouncer.watch(p, RecursiveMode::NonRecursive);
                        break;
                    }
                    parent = p.parent();
                }
            }
        }
        Ok(added)
    }

    /// The next batch of changes, or None when nothing happened within `timeout`.
    /// Fails only when the watcher itself is gone.
    pub fn next(&mut self, timeout: Duration) -> Result<Option<Changes>> {
        let first = match self.rx.recv_timeout(timeout) {
            Ok(r) => r,
            Err(RecvTimeoutError::Timeout) => return Ok(None),
            Err(RecvTimeoutError::Disconnected) => return Err(Error::Usage("the file watcher stopped".into())),
        };
        let mut changes = Changes::default();
        self.add(first, &mut changes);
        while let Ok(more) = self.rx.try_recv() {
            self.add(more, &mut changes);
        }
        // Folders that appeared get their own recursive watch, and a rescan of their
        // subtree (files written before the watch existed are found by the scan).
        for dir in self.watch_new_folders()? {
            changes.paths.insert(dir);
        }
        if changes.paths.is_empty() && !changes.rescan {
            return Ok(Some(Changes::default()));
        }
        Ok(Some(changes))
    }

    fn add(&self, result: DebounceEventResult, changes: &mut Changes) {
        add_events(&self.root, result, changes);
    }
}

/// Folds one debouncer result into `changes`: an error or an event flagged for rescan (an
/// inotify queue overflow) asks for a full rescan.
fn add_events(root: &Path, result: DebounceEventResult, changes: &mut Changes) {
    {
        let events = match result {
            Ok(events) => events,
            Err(errors) => {
                for e in errors {
                    tracing::warn!("file watcher: {e}");
                }
                changes.rescan = true;
                return;
            }
        };
        for event in events {
            if event.need_rescan() {
                changes.rescan = true;
            }
            if matches!(event.kind, EventKind::Access(_)) {
                continue;
            }
            for path in &event.paths {
                let Ok(rel) = path.strip_prefix(root) else { continue };
                let rel = rel.to_string_lossy().replace('\\', "/");
                if rel.is_empty() || rel == ".git" || rel.starts_with(".git/") || rel.starts_with(super::CACHE_DIR) {
                    continue;
                }
                changes.paths.insert(rel);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use notify::event::{CreateKind, Flag};
    use notify_debouncer_full::DebouncedEvent;

    use super::*;

    fn event(kind: EventKind, paths: &[&str]) -> DebouncedEvent {
        let mut e = notify::Event::new(kind);
        for p in paths {
            e = e.add_path(PathBuf::from(p));
        }
        DebouncedEvent::new(e, Instant::now())
    }

    #[test]
    fn paths_become_root_relative_and_noise_is_dropped() {
        let mut changes = Changes::default();
        let events = vec![
            event(EventKind::Create(CreateKind::File), &["/r/a/x.md", "/r/.git/index", "/elsewhere/y.md"]),
            event(EventKind::Access(notify::event::AccessKind::Any), &["/r/a/read.md"]),
            event(EventKind::Any, &["/r/.tmws/cache/index/meta.json", "/r/.tmws/skills.yaml"]),
        ];
        add_events(Path::new("/r"), Ok(events), &mut changes);
        assert_eq!(changes.paths.into_iter().collect::<Vec<_>>(), [".tmws/skills.yaml", "a/x.md"]);
        assert!(!changes.rescan);
    }

    #[test]
    fn an_overflow_or_an_error_asks_for_a_rescan() {
        let mut changes = Changes::default();
        let overflow = DebouncedEvent::new(notify::Event::new(EventKind::Other).set_flag(Flag::Rescan), Instant::now());
        add_events(Path::new("/r"), Ok(vec![overflow]), &mut changes);
        assert!(changes.rescan);
        let mut changes = Changes::default();
        add_events(Path::new("/r"), Err(vec![notify::Error::generic("queue overflow")]), &mut changes);
        assert!(changes.rescan);
    }
}
