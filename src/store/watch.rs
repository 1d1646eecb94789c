//! File events: what changed on disk, as root-relative paths, debounced.
//!
//! The watcher is a hint and the scan is the truth: events only say *where* to look. A
//! folder event names the folder, so the caller rescans its subtree (inotify reports only
//! the top folder after `mkdir -p a/b && write a/b/f.md`); an overflow or an error asks
//! for a full rescan. Only the canonical folders are watched recursively, so `target/` or
//! `node_modules/` never eat inotify watches.
//!
//! Debouncing is done here rather than by a debouncer crate: a batch is handed over once no
//! event came for the debounce time after the last one (timed when the event arrived), so a
//! save is seen exactly `debounce` after it; events that queued up during a sync are handed
//! over together; nothing ticks while the root is quiet; and no map of every file's id is
//! built at start (which cost ~0.6 s and ~10 MB at 100k files).
//! Reads (inotify's open and close events) are dropped where they arrive: a sync's own
//! reads neither start a batch nor hold one back.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError, channel};
use std::time::{Duration, Instant};

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::error::{Chain, Error, Result};

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

/// What the watcher thread hands over: an event or an error, and when it arrived.
type Arrived = (Instant, notify::Result<notify::Event>);

/// However busy the root, a batch is handed over this many debounce times after its first
/// event (a checkout of thousands of files is applied in parts, not after it ends).
const MAX_BATCH_DEBOUNCES: u32 = 20;

/// Watches some folders of a root.
pub struct FileWatcher {
    root: PathBuf,
    watcher: RecommendedWatcher,
    rx: Receiver<Arrived>,
    debounce: Duration,
    /// Root-relative folders to watch recursively once they exist.
    wanted: Vec<String>,
    /// The folders watched, with the identity of the folder the watch is on: one deleted
    /// and made again (`git stash -u` and `pop`, a branch switch) is a new folder whose
    /// watch must be made again.
    watching: BTreeMap<String, Option<(u64, u64)>>,
}

/// What tells a folder from another made later at the same path.
fn identity(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

impl std::fmt::Debug for FileWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileWatcher").field("root", &self.root).field("watching", &self.watching).finish()
    }
}

fn notify_err(root: &Path, e: notify::Error) -> Error {
    Error::environment(format!("cannot watch {}", root.display()), e)
}

impl FileWatcher {
    /// Watches `dirs` (root-relative) recursively, and the root and `.tmws/` shallowly so
    /// that folders created later are noticed.
    pub fn new(root: &Path, dirs: &[String], debounce: Duration) -> Result<FileWatcher> {
        let (tx, rx) = channel();
        let mut watcher = notify::recommended_watcher(move |e: notify::Result<notify::Event>| {
            if e.as_ref().is_ok_and(|e| matches!(e.kind, EventKind::Access(_))) {
                return;
            }
            // The receiver is gone only when the watcher is being dropped.
            let _ = tx.send((Instant::now(), e));
        })
        .map_err(|e| notify_err(root, e))?;
        watcher.watch(root, RecursiveMode::NonRecursive).map_err(|e| notify_err(root, e))?;
        let tmws = root.join(super::TMWS_DIR);
        if tmws.is_dir() {
            watcher.watch(&tmws, RecursiveMode::NonRecursive).map_err(|e| notify_err(root, e))?;
        }
        let mut w = FileWatcher {
            root: root.to_path_buf(),
            watcher,
            rx,
            debounce,
            wanted: dirs.to_vec(),
            watching: BTreeMap::new(),
        };
        w.watch_new_folders()?;
        Ok(w)
    }

    /// Adds recursive watches for wanted folders that exist now (again, for one deleted and
    /// made again since it was watched). Returns those added.
    fn watch_new_folders(&mut self) -> Result<Vec<String>> {
        let mut added = Vec::new();
        for dir in self.wanted.clone() {
            let abs = self.root.join(&dir);
            let now = if abs.is_dir() { identity(&abs).or(Some((0, 0))) } else { None };
            if let Some(was) = self.watching.get(&dir) {
                if now.is_some() && (*was == now || was.is_none()) {
                    continue;
                }
                // Gone, or another folder now: the old watch went with the old folder.
                let _ = self.watcher.unwatch(&abs);
                self.watching.remove(&dir);
            }
            if now.is_some() {
                self.watcher.watch(&abs, RecursiveMode::Recursive).map_err(|e| notify_err(&abs, e))?;
                self.watching.insert(dir.clone(), identity(&abs));
                added.push(dir);
            } else {
                // Watch the nearest existing ancestor shallowly, so its creation is seen.
                let mut parent = abs.parent();
                while let Some(p) = parent {
                    if p.is_dir() {
                        let _ = self.watcher.watch(p, RecursiveMode::NonRecursive);
                        break;
                    }
                    parent = p.parent();
                }
            }
        }
        Ok(added)
    }

    /// The next batch of changes, or None when nothing happened within `timeout`: the
    /// events until none came for the debounce time. Events that queued up while the
    /// caller was busy (a sync of the previous batch) all join this batch, however long
    /// ago they arrived. Fails only when the watcher itself is gone.
    pub fn next(&mut self, timeout: Duration) -> Result<Option<Changes>> {
        let gone = || Error::Environment("the file watcher stopped".into());
        let (first_at, first) = match self.rx.recv_timeout(timeout) {
            Ok(arrived) => arrived,
            Err(RecvTimeoutError::Timeout) => return Ok(None),
            Err(RecvTimeoutError::Disconnected) => return Err(gone()),
        };
        let mut changes = Changes::default();
        add_event(&self.root, first, &mut changes);
        // The cap counts from now, not from the first event's arrival: a backlog's first
        // event may be older than the cap, and the batch must still take the rest of it.
        let cap = Instant::now() + self.debounce * MAX_BATCH_DEBOUNCES;
        let mut quiet_at = first_at + self.debounce;
        loop {
            let arrived = match self.rx.try_recv() {
                Ok(arrived) => Some(arrived),
                Err(TryRecvError::Disconnected) => return Err(gone()),
                Err(TryRecvError::Empty) => {
                    let until = quiet_at.min(cap);
                    let Some(left) = until.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()) else {
                        break;
                    };
                    match self.rx.recv_timeout(left) {
                        Ok(arrived) => Some(arrived),
                        Err(RecvTimeoutError::Timeout) => None,
                        Err(RecvTimeoutError::Disconnected) => return Err(gone()),
                    }
                }
            };
            let Some((at, e)) = arrived else { break };
            add_event(&self.root, e, &mut changes);
            quiet_at = quiet_at.max(at + self.debounce);
            if Instant::now() >= cap {
                break;
            }
        }
        // Folders that appeared get their own recursive watch, and a rescan of their
        // subtree (files written before the watch existed are found by the scan).
        for dir in self.watch_new_folders()? {
            changes.paths.insert(dir);
        }
        Ok(Some(changes))
    }
}

/// Folds one event into `changes`: an error or an event flagged for rescan (an inotify
/// queue overflow) asks for a full rescan.
fn add_event(root: &Path, event: notify::Result<notify::Event>, changes: &mut Changes) {
    let event = match event {
        Ok(event) => event,
        Err(e) => {
            tracing::warn!("file watcher: {}", Chain(&e));
            changes.rescan = true;
            return;
        }
    };
    if event.need_rescan() {
        changes.rescan = true;
    }
    if matches!(event.kind, EventKind::Access(_)) {
        return;
    }
    for path in &event.paths {
        let Ok(rel) = path.strip_prefix(root) else { continue };
        let rel = rel.to_string_lossy().replace('\\', "/");
        if rel.is_empty() || rel == ".git" || rel.starts_with(".git/") || rel.starts_with(crate::layout::CACHE_DIR) {
            continue;
        }
        changes.paths.insert(rel);
    }
}

#[cfg(test)]
mod tests {
    use notify::event::{CreateKind, Flag};

    use super::*;

    fn event(kind: EventKind, paths: &[&str]) -> notify::Result<notify::Event> {
        let mut e = notify::Event::new(kind);
        for p in paths {
            e = e.add_path(PathBuf::from(p));
        }
        Ok(e)
    }

    #[test]
    fn paths_become_root_relative_and_noise_is_dropped() {
        let mut changes = Changes::default();
        let events = vec![
            event(EventKind::Create(CreateKind::File), &["/r/a/x.md", "/r/.git/index", "/elsewhere/y.md"]),
            event(EventKind::Access(notify::event::AccessKind::Any), &["/r/a/read.md"]),
            event(EventKind::Any, &["/r/.tmws/cache/index/meta.json", "/r/.tmws/skills.yaml"]),
        ];
        for e in events {
            add_event(Path::new("/r"), e, &mut changes);
        }
        assert_eq!(changes.paths.into_iter().collect::<Vec<_>>(), [".tmws/skills.yaml", "a/x.md"]);
        assert!(!changes.rescan);
    }

    #[test]
    fn an_overflow_or_an_error_asks_for_a_rescan() {
        let mut changes = Changes::default();
        add_event(Path::new("/r"), Ok(notify::Event::new(EventKind::Other).set_flag(Flag::Rescan)), &mut changes);
        assert!(changes.rescan);
        let mut changes = Changes::default();
        add_event(Path::new("/r"), Err(notify::Error::generic("queue overflow")), &mut changes);
        assert!(changes.rescan);
    }

    /// A watcher over a new root's `notes/` folder: (the root's folder, its path, watcher).
    fn watching_notes(debounce: Duration) -> (tempfile::TempDir, PathBuf, FileWatcher) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("notes")).unwrap();
        let w = FileWatcher::new(&root, &["notes".to_owned()], debounce).unwrap();
        (dir, root, w)
    }

    #[test]
    fn a_batch_is_handed_over_once_the_root_is_quiet_for_the_debounce_time() {
        // Long against the 100 ms between writes, so that a busy machine that wakes the
        // writer late still writes within it.
        let debounce = Duration::from_secs(2);
        let (_dir, root, mut w) = watching_notes(debounce);
        assert_eq!(w.next(Duration::from_millis(50)).unwrap(), None);

        // Writes 100 ms apart keep the batch open; it closes 2 s after the last one.
        let writer = {
            let root = root.clone();
            std::thread::spawn(move || {
                let mut before_last = Instant::now();
                for n in 0..4 {
                    if n > 0 {
                        std::thread::sleep(Duration::from_millis(100));
                    }
                    before_last = Instant::now();
                    std::fs::write(root.join(format!("notes/{n}.md")), "x").unwrap();
                }
                before_last
            })
        };
        let changes = w.next(Duration::from_secs(60)).unwrap().unwrap();
        let handed = Instant::now();
        let last_write = writer.join().unwrap();
        let want: BTreeSet<String> = (0..4).map(|n| format!("notes/{n}.md")).collect();
        assert_eq!(changes, Changes { paths: want, rescan: false });
        assert!(handed >= last_write + debounce, "handed over before the root was quiet");

        // Reading a file is not a change: the next batch holds only what was written after.
        let _ = std::fs::read(root.join("notes/0.md")).unwrap();
        std::fs::write(root.join("notes/after.md"), "x").unwrap();
        let changes = w.next(Duration::from_secs(60)).unwrap().unwrap();
        assert_eq!(changes, Changes { paths: ["notes/after.md".to_owned()].into(), rescan: false });
    }

    #[test]
    fn events_that_queued_while_the_caller_was_busy_are_one_batch() {
        let debounce = Duration::from_millis(20);
        let (_dir, root, mut w) = watching_notes(debounce);
        // While the caller syncs something else, 50 files are written, each 5 ms after the
        // last: every event is older than the debounce time when the caller comes back. The
        // caller is busy for 2 s, which is also how long the watcher's own thread has to
        // take every event from the system on a busy machine.
        for n in 0..50 {
            std::fs::write(root.join(format!("notes/{n:02}.md")), "x").unwrap();
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_secs(2));
        let changes = w.next(Duration::from_secs(60)).unwrap().unwrap();
        let want: BTreeSet<String> = (0..50).map(|n| format!("notes/{n:02}.md")).collect();
        assert_eq!(changes, Changes { paths: want, rescan: false });
        // Nothing was left for another batch: the next one holds only a later write.
        std::fs::write(root.join("notes/after.md"), "x").unwrap();
        let changes = w.next(Duration::from_secs(60)).unwrap().unwrap();
        assert_eq!(changes, Changes { paths: ["notes/after.md".to_owned()].into(), rescan: false });
    }
}
