//! Keeping the index in sync while files change (docs/search-index.md#watch).
//!
//! Each debounced batch of file events becomes one `sync_paths` over exactly the changed
//! paths (a folder means its subtree), committed at once. An overflow, an error, or a
//! burst of more than `BURST` paths falls back to a sync of everything, and so does a sync
//! that failed (its batch was not applied), after a wait that doubles while they keep
//! failing. A process that cannot get the writer follows the writer's commits and takes
//! the role over when the writer goes away. A bad file never stops the loop: its problems
//! are reported and it is indexed anyway. Once idle after changes, the writer merges the
//! deleted documents away, so that scores are those of a clean rebuild.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::Index;
use super::sync::{SyncOptions, SyncReport};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::layout::{self, Includes};
use crate::store::watch::{Changes, Events, FileWatcher};

/// More changed paths than this in one batch (a `git checkout`, say) sync everything.
const BURST: usize = 2000;
/// How often the loop looks at the stop flag and, as a reader, for the writer's commits.
const TICK: Duration = Duration::from_millis(100);
/// How long the writer keeps its manifest in memory after a sync: a burst of saves reuses
/// it, and an idle server does not hold it (100k files' worth is ~11 MB).
const KEEP_MANIFEST: Duration = Duration::from_secs(1);
/// How long the writer waits without events after a sync that changed the index before it merges
/// away the documents replaced or removed (docs/search-index.md#consistency): a burst of saves is
/// merged once, after it.
const MERGE_AFTER: Duration = Duration::from_secs(1);
/// After a failed sync, everything is synced again this long after it, then twice as long
/// after each further failure, up to `LAST_RETRY`.
const FIRST_RETRY: Duration = Duration::from_millis(500);
const LAST_RETRY: Duration = Duration::from_secs(30);

/// A sync of everything, due at `at` because the last sync failed.
#[derive(Debug, Clone, Copy)]
struct Retry {
    at: Instant,
    wait: Duration,
}

/// What the watch loop tells its caller.
#[derive(Debug)]
pub enum WatchUpdate<'a> {
    /// A sync is starting: until its `Synced`, `Applied` or `Failed`, the index is behind.
    Syncing,
    /// The first sync (or a full one after an overflow) finished.
    Synced(&'a SyncReport),
    /// A batch of changes was applied.
    Applied(&'a SyncReport),
    /// Another process holds the writer: this one follows its commits.
    Following,
    /// The writer went away and this process took its role.
    TookOver,
    /// A sync failed; the loop goes on, and syncs everything again soon.
    Failed(&'a Error),
    /// An MCP client config of `registry.sources` changed (the registry may be behind).
    ClientConfigs,
}

/// Queries of this process asking the writer's loop to apply the memory logs now, rather
/// than when their file events come: a query that waits for lines a write added
/// (read-your-writes) asks, and learns from `taken` that a sync which read the logs after
/// its ask has ended, so that what it waited for is committed or cannot be.
#[derive(Debug, Default)]
pub struct LogAsks {
    /// The number of the latest ask.
    asked: AtomicU64,
    /// The latest ask a sync that has ended took (it read the logs after that ask).
    taken: AtomicU64,
}

impl LogAsks {
    /// Asks for the memory logs to be applied; returns the ask's number.
    pub fn ask(&self) -> u64 {
        self.asked.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Whether a sync that read the logs after ask `n` has ended.
    pub fn taken(&self, n: u64) -> bool {
        self.taken.load(Ordering::Acquire) >= n
    }

    /// The latest ask not taken yet, if any.
    fn pending(&self) -> Option<u64> {
        let asked = self.asked.load(Ordering::Acquire);
        (asked > self.taken.load(Ordering::Acquire)).then_some(asked)
    }

    /// A sync that started after ask `n` was made has ended.
    fn took(&self, n: u64) {
        self.taken.fetch_max(n, Ordering::AcqRel);
    }
}

/// A sync asked of the process that holds the writer role: `tmws index` beside a running
/// `tmws mcp`, `serve` or `watch` writes one, and the writer's loop takes it on its next
/// tick, syncs (or rebuilds) and answers with its report (docs/search-index.md).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SyncRequest {
    pub id: String,
    pub rebuild: bool,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct SyncAnswer {
    id: String,
    pid: u32,
    report: Option<SyncReport>,
    error: Option<String>,
}

impl SyncRequest {
    /// Writes a request below `root` (replacing any earlier one, which the same sync answers
    /// well enough).
    pub fn send(root: &std::path::Path, rebuild: bool) -> Result<SyncRequest> {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let request = SyncRequest { id: format!("{}-{nanos}", std::process::id()), rebuild };
        let text = serde_json::to_vec(&request).map_err(|e| Error::environment("", e))?;
        crate::store::write_atomic(root, &root.join(layout::SYNC_REQUEST), &text)?;
        Ok(request)
    }

    /// Whether the writer took it (the file is gone or is another's).
    pub fn taken(&self, root: &std::path::Path) -> bool {
        read_json::<SyncRequest>(root, layout::SYNC_REQUEST).is_none_or(|r| r.id != self.id)
    }

    /// Takes back a request nobody took.
    pub fn withdraw(&self, root: &std::path::Path) {
        if !self.taken(root) {
            let _ = crate::store::remove_file(&root.join(layout::SYNC_REQUEST));
        }
    }

    /// The writer's answer to this request, once there is one: its report and its pid, or
    /// the error of its sync.
    pub fn answer(&self, root: &std::path::Path) -> Option<Result<SyncReport>> {
        let answer = read_json::<SyncAnswer>(root, layout::SYNC_ANSWER).filter(|a| a.id == self.id)?;
        let _ = crate::store::remove_file(&root.join(layout::SYNC_ANSWER));
        Some(match (answer.report, answer.error) {
            (Some(report), _) => Ok(SyncReport { by_pid: Some(answer.pid), ..report }),
            (None, error) => Err(Error::Index(format!(
                "the tmws process {} that keeps the index could not sync: {}",
                answer.pid,
                error.unwrap_or_default()
            ))),
        })
    }
}

fn read_json<T: serde::de::DeserializeOwned>(root: &std::path::Path, rel: &str) -> Option<T> {
    let bytes = crate::store::read_opt(root, &root.join(rel), 64 << 10).ok().flatten()?;
    serde_json::from_slice(&bytes).ok()
}

/// The request waiting for this writer, taken (its file removed).
fn take_request(root: &std::path::Path) -> Option<SyncRequest> {
    let request = read_json::<SyncRequest>(root, layout::SYNC_REQUEST)?;
    crate::store::remove_file(&root.join(layout::SYNC_REQUEST)).ok()?;
    Some(request)
}

fn answer_request(root: &std::path::Path, request: &SyncRequest, result: &Result<SyncReport>) {
    let answer = SyncAnswer {
        id: request.id.clone(),
        pid: std::process::id(),
        report: result.as_ref().ok().cloned(),
        error: result.as_ref().err().map(ToString::to_string),
    };
    let written = serde_json::to_vec(&answer)
        .map_err(|e| Error::environment("", e))
        .and_then(|text| crate::store::write_atomic(root, &root.join(layout::SYNC_ANSWER), &text));
    if let Err(e) = written {
        tracing::warn!("cannot answer the request to sync: {}", e.chain());
    }
}

/// Syncs, then applies file changes (and the memory logs when `asks` asks) until `stop` is
/// set. Returns when stopped.
pub fn run(
    index: &mut Index,
    config: &Config,
    stop: &AtomicBool,
    asks: &LogAsks,
    on: impl FnMut(WatchUpdate<'_>),
) -> Result<()> {
    let mut dirs = layout::watched_dirs(&Includes::new(&config.index.include)?);
    // The folders of the client configs (`.cursor`, `.vscode`); the root is watched anyway.
    for source in &config.registry.sources {
        if let Some((dir, _)) = source.rsplit_once('/') {
            dirs.push(dir.to_owned());
        }
    }
    let mut watcher = FileWatcher::new(index.root(), &dirs, Duration::from_millis(config.watch.debounce_ms))?;
    run_with(index, config, stop, asks, &mut watcher, on)
}

/// The loop of `run`, over any source of changes.
pub fn run_with(
    index: &mut Index,
    config: &Config,
    stop: &AtomicBool,
    asks: &LogAsks,
    events: &mut dyn Events,
    mut on: impl FnMut(WatchUpdate<'_>),
) -> Result<()> {
    let opts = SyncOptions::default();
    let index_root = index.root().to_path_buf();
    let index_root = index_root.as_path();
    // Whether a sync changed the index since the last merge of deleted documents.
    let mut merge_due = false;
    let mut indexed_head = None;
    let mut retry: Option<Retry> = None;
    if index.is_writer() {
        on(WatchUpdate::Syncing);
        let asked = asks.asked.load(Ordering::Acquire);
        // A first sync that fails (a full disk) is tried again like any other: the watcher
        // stays, and the index answers as it is meanwhile.
        match index.sync(config, &opts) {
            Ok(report) => {
                merge_due = !report.changes.is_empty();
                indexed_head.clone_from(&report.head);
                asks.took(asked);
                on(WatchUpdate::Synced(&report));
            }
            Err(e) => {
                retry = Some(Retry { at: Instant::now() + FIRST_RETRY, wait: FIRST_RETRY });
                on(WatchUpdate::Failed(&e));
            }
        }
    } else {
        on(WatchUpdate::Following);
    }
    // A commit, a checkout or a reset moves HEAD without touching the watched folders:
    // HEAD is read every tick (two small files), and one that is not the HEAD the last
    // sync indexed is a sync of the history.
    let head = || crate::store::git_head(index_root).and_then(|h| h.commit);
    let mut last_head = indexed_head;
    // A follower tries for the writer role once a tick, however many events arrive.
    let mut last_try = Instant::now();
    let mut last_sync = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let changes = events.next(TICK)?;
        if !index.is_writer() {
            if last_try.elapsed() < TICK {
                continue;
            }
            last_try = Instant::now();
            if index.try_take_writer()? {
                on(WatchUpdate::TookOver);
                on(WatchUpdate::Syncing);
                let asked = asks.asked.load(Ordering::Acquire);
                match index.sync(config, &opts) {
                    Ok(r) => {
                        merge_due = true;
                        last_head.clone_from(&r.head);
                        asks.took(asked);
                        on(WatchUpdate::Synced(&r));
                    }
                    Err(e) => {
                        retry = Some(Retry { at: Instant::now() + FIRST_RETRY, wait: FIRST_RETRY });
                        on(WatchUpdate::Failed(&e));
                    }
                }
                last_sync = Instant::now();
            } else {
                index.reload()?;
            }
            continue;
        }
        if let Some(request) = take_request(index_root) {
            // Asked by `tmws index`: everything (the batch too), or a rebuild.
            on(WatchUpdate::Syncing);
            let asked = asks.asked.load(Ordering::Acquire);
            let result = index.sync(config, &SyncOptions { rebuild: request.rebuild, ..SyncOptions::default() });
            answer_request(index_root, &request, &result);
            match &result {
                Ok(r) => {
                    retry = None;
                    merge_due = true;
                    last_head.clone_from(&r.head);
                    asks.took(asked);
                    on(WatchUpdate::Synced(r));
                }
                Err(e) => on(WatchUpdate::Failed(e)),
            }
            last_sync = Instant::now();
            continue;
        }
        let due = retry.is_some_and(|r| r.at <= Instant::now());
        let moved = head() != last_head;
        // A query waits for lines of the memory logs: they are read now, whether or not
        // their events came yet.
        let asked = asks.pending();
        let Some(mut changes) = changes
            .filter(|c| !c.paths.is_empty() || c.rescan)
            .or((due || moved || asked.is_some()).then(Changes::default))
        else {
            if merge_due && last_sync.elapsed() >= MERGE_AFTER {
                merge_due = false;
                match index.start_merging_deletes() {
                    Ok(n) => tracing::debug!(segments = n, "idle: merging deleted documents away"),
                    Err(e) => tracing::warn!("cannot merge deleted documents away: {}", e.chain()),
                }
            }
            if last_sync.elapsed() >= KEEP_MANIFEST && index.holds_manifest() {
                index.forget_manifest();
                crate::sys::release_free_memory();
            }
            continue;
        };
        if asked.is_some() {
            changes.paths.insert(layout::MEMORY_DIR.to_owned());
        }
        let paths: Vec<String> = changes.paths.into_iter().collect();
        let sources = &config.registry.sources;
        if paths.iter().any(|p| sources.iter().any(|s| s == p || s.starts_with(&format!("{p}/")))) {
            on(WatchUpdate::ClientConfigs);
        }
        if retry.is_some() && !due {
            // The sync of everything that is due soon covers these paths too.
            continue;
        }
        let whole = retry.is_some() || changes.rescan || paths.len() > BURST;
        let targets = if whole { None } else { Some(paths.as_slice()) };
        on(WatchUpdate::Syncing);
        match index.sync_paths(config, &opts, targets) {
            Ok(r) => {
                retry = None;
                merge_due |= !r.changes.is_empty();
                last_head.clone_from(&r.head);
                if let Some(asked) = asked {
                    asks.took(asked);
                }
                on(if whole { WatchUpdate::Synced(&r) } else { WatchUpdate::Applied(&r) });
            }
            Err(e) => {
                // The batch's paths were not applied: everything is synced again later,
                // sooner after a first failure than after a run of them (a full disk).
                let wait = retry.map_or(FIRST_RETRY, |r| (r.wait * 2).min(LAST_RETRY));
                retry = Some(Retry { at: Instant::now() + wait, wait });
                on(WatchUpdate::Failed(&e));
            }
        }
        last_sync = Instant::now();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::path::PathBuf;

    use super::*;
    use crate::index::TextQuery;

    /// Plays a script: each step may change files behind the loop's back, then hands it
    /// a batch. When the script ends the loop is stopped.
    struct Script<'a> {
        steps: VecDeque<(Box<dyn FnOnce() + 'a>, Changes)>,
        stop: &'a AtomicBool,
    }

    impl Events for Script<'_> {
        fn next(&mut self, _timeout: Duration) -> Result<Option<Changes>> {
            match self.steps.pop_front() {
                Some((act, changes)) => {
                    act();
                    Ok(Some(changes))
                }
                None => {
                    self.stop.store(true, Ordering::Relaxed);
                    Ok(None)
                }
            }
        }
    }

    /// No events at all: each call waits its timeout (unless `at_once`), and the loop is
    /// stopped after `ticks`.
    struct Quiet<'a> {
        ticks: usize,
        at_once: bool,
        stop: &'a AtomicBool,
    }

    impl Events for Quiet<'_> {
        fn next(&mut self, timeout: Duration) -> Result<Option<Changes>> {
            if !self.at_once {
                std::thread::sleep(timeout);
            }
            self.ticks = self.ticks.saturating_sub(1);
            if self.ticks == 0 {
                self.stop.store(true, Ordering::Relaxed);
            }
            Ok(None)
        }
    }

    #[test]
    fn the_writer_lets_go_of_its_manifest_once_idle() {
        let (_dir, _, mut index) = one_lesson();
        // A tick right after the sync (not a tick's time, which a busy machine could stretch
        // past KEEP_MANIFEST): the manifest is kept for the next batch.
        let stop = AtomicBool::new(false);
        let mut quiet = Quiet { ticks: 1, at_once: true, stop: &stop };
        run_with(&mut index, &Config::default(), &stop, &LogAsks::default(), &mut quiet, |_| {}).unwrap();
        assert!(index.holds_manifest());
        // Idle past KEEP_MANIFEST: let go, and the next sync reads it from the files.
        let stop = AtomicBool::new(false);
        let ticks = (KEEP_MANIFEST.as_millis() / TICK.as_millis()) as usize + 3;
        run_with(
            &mut index,
            &Config::default(),
            &stop,
            &LogAsks::default(),
            &mut Quiet { ticks, at_once: false, stop: &stop },
            |_| {},
        )
        .unwrap();
        assert!(!index.holds_manifest());
        let report = index.sync(&Config::default(), &SyncOptions::default()).unwrap();
        assert_eq!((report.new, report.changed, report.removed, report.rebuilt), (0, 0, 0, false));
        assert!(index.holds_manifest());
    }

    fn lesson(word: &str) -> String {
        format!("---\nname: {word}\ndescription: about {word}\ncreated: 2026-11-22\n---\n")
    }

    /// A root with one lesson (`alpha`) in `_lessons/`, opened: (its folder, `_lessons/`, index).
    fn one_lesson() -> (tempfile::TempDir, PathBuf, Index) {
        let dir = tempfile::tempdir().unwrap();
        let lessons = dir.path().join("resources/workspaces/w/_lessons");
        std::fs::create_dir_all(&lessons).unwrap();
        std::fs::write(lessons.join("260101-a.md"), lesson("alpha")).unwrap();
        std::fs::create_dir_all(dir.path().join(".tmws")).unwrap();
        let index = Index::open(dir.path()).unwrap();
        (dir, lessons, index)
    }

    fn hits(index: &Index, q: &str) -> Vec<String> {
        let req = TextQuery { query: q.into(), limit: 10, ..TextQuery::default() };
        index.search(&req).unwrap().results.into_iter().map(|h| h.ref_id).collect()
    }

    #[test]
    fn an_overflow_falls_back_to_a_sync_of_everything() {
        let (dir, lessons, mut index) = one_lesson();
        let stop = AtomicBool::new(false);
        let (l1, l2) = (lessons.clone(), lessons.clone());
        let steps: VecDeque<(Box<dyn FnOnce()>, Changes)> = VecDeque::from([
            // Events for these were lost: the queue overflowed.
            (
                Box::new(move || {
                    std::fs::write(l1.join("260102-b.md"), lesson("bravo")).unwrap();
                    std::fs::remove_file(l1.join("260101-a.md")).unwrap();
                }) as Box<dyn FnOnce()>,
                Changes { paths: Default::default(), rescan: true },
            ),
            // A normal batch names exactly one path: only that one is looked at.
            (
                Box::new(move || {
                    std::fs::write(l2.join("260103-c.md"), lesson("charlie")).unwrap();
                    std::fs::write(l2.join("260104-d.md"), lesson("delta")).unwrap();
                }),
                Changes { paths: ["resources/workspaces/w/_lessons/260103-c.md".to_owned()].into(), rescan: false },
            ),
        ]);
        let mut script = Script { steps, stop: &stop };
        let mut seen = Vec::new();
        run_with(&mut index, &Config::default(), &stop, &LogAsks::default(), &mut script, |u| match u {
            WatchUpdate::Synced(r) => seen.push(("synced", r.new, r.removed)),
            WatchUpdate::Applied(r) => seen.push(("applied", r.new, r.removed)),
            WatchUpdate::Syncing => {}
            other => panic!("{other:?}"),
        })
        .unwrap();
        assert_eq!(seen, [("synced", 1, 0), ("synced", 1, 1), ("applied", 1, 0)]);
        assert_eq!(hits(&index, "bravo"), ["resources/workspaces/w/_lessons/260102-b.md"]);
        assert!(hits(&index, "alpha").is_empty());
        assert_eq!(hits(&index, "charlie"), ["resources/workspaces/w/_lessons/260103-c.md"]);
        assert!(hits(&index, "delta").is_empty(), "a path no batch named is left for the next sync");
        assert!(dir.path().join(crate::layout::MANIFEST_FILE).exists());
    }

    #[test]
    fn a_batch_whose_sync_failed_is_applied_by_a_sync_of_everything_soon_after() {
        let (dir, lessons, mut index) = one_lesson();
        let stop = AtomicBool::new(false);
        // A folder where the sync writes its marker makes the sync fail before it reads.
        let blocker = dir.path().join(crate::layout::SYNCING_MARKER);
        let (l1, l2, b1, b2) = (lessons.clone(), lessons.clone(), blocker.clone(), blocker.clone());
        let path = |name: &str| format!("resources/workspaces/w/_lessons/{name}");
        let steps: VecDeque<(Box<dyn FnOnce()>, Changes)> = VecDeque::from([
            (
                Box::new(move || {
                    std::fs::create_dir_all(b1.join("in-the-way")).unwrap();
                    std::fs::write(l1.join("260102-b.md"), lesson("bravo")).unwrap();
                }) as Box<dyn FnOnce()>,
                Changes { paths: [path("260102-b.md")].into(), rescan: false },
            ),
            // Before the retry is due, a batch waits for it.
            (
                Box::new(move || std::fs::write(l2.join("260103-c.md"), lesson("charlie")).unwrap()),
                Changes { paths: [path("260103-c.md")].into(), rescan: false },
            ),
            // Once it is due the root is synced whole, with no event asking for it.
            (
                Box::new(move || {
                    std::fs::remove_dir_all(b2).unwrap();
                    std::thread::sleep(FIRST_RETRY + Duration::from_millis(50));
                }),
                Changes::default(),
            ),
        ]);
        let mut script = Script { steps, stop: &stop };
        let mut seen = Vec::new();
        run_with(&mut index, &Config::default(), &stop, &LogAsks::default(), &mut script, |u| match u {
            WatchUpdate::Synced(r) => seen.push(format!("synced {} new", r.new)),
            WatchUpdate::Applied(r) => seen.push(format!("applied {} new", r.new)),
            WatchUpdate::Failed(_) => seen.push("failed".to_owned()),
            WatchUpdate::Syncing => {}
            other => panic!("{other:?}"),
        })
        .unwrap();
        assert_eq!(seen, ["synced 1 new", "failed", "synced 2 new"]);
        assert_eq!(hits(&index, "bravo"), [path("260102-b.md")]);
        assert_eq!(hits(&index, "charlie"), [path("260103-c.md")]);
    }

    /// A memory line in the log's JSONL form, about `word`.
    fn memory_line(id: &str, word: &str) -> String {
        format!("{{\"op\":\"add\",\"id\":\"{id}\",\"at\":\"2026-11-22T10:00:00Z\",\"content\":\"about {word}\"}}\n")
    }

    #[test]
    fn an_ask_applies_the_memory_logs_before_any_of_their_events_comes() {
        let (dir, _, mut index) = one_lesson();
        let log = dir.path().join(".tmws/memory/short-term.jsonl");
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        std::fs::write(&log, memory_line("m_1", "wombat")).unwrap();
        let stop = AtomicBool::new(false);
        let asks = LogAsks::default();
        let asked = std::cell::Cell::new(0);
        let (log2, asks2, asked2) = (log.clone(), &asks, &asked);
        let steps: VecDeque<(Box<dyn FnOnce() + '_>, Changes)> = VecDeque::from([
            // A line is appended and a query asks; no event for the log ever comes.
            (
                Box::new(move || {
                    let mut f = std::fs::OpenOptions::new().append(true).open(&log2).unwrap();
                    std::io::Write::write_all(&mut f, memory_line("m_2", "quokka").as_bytes()).unwrap();
                    asked2.set(asks2.ask());
                }) as Box<dyn FnOnce() + '_>,
                Changes::default(),
            ),
        ]);
        let mut script = Script { steps, stop: &stop };
        assert!(!asks.taken(1));
        run_with(&mut index, &Config::default(), &stop, &asks, &mut script, |_| {}).unwrap();
        assert_eq!(asked.get(), 1);
        assert!(asks.taken(1), "the sync that read the logs after the ask has ended");
        assert_eq!(hits(&index, "wombat").len(), 1);
        assert_eq!(hits(&index, "quokka").len(), 1, "the line the query asked for is committed");
    }
}
