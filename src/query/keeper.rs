//! Who keeps the index in step with the files, and how fresh an answer is
//! (docs/search-index.md#freshness).
//!
//! A one-shot process (the CLI) keeps it on demand: each query syncs first when this
//! process holds the writer role, and otherwise waits for the writer. A server (`tmws mcp`,
//! `tmws serve`) keeps it in the background: a thread runs the first sync and then the
//! watcher, and queries read the latest commit through a reader of their own. Either way
//! one rule decides freshness: a query waits at most `STALE_WAIT` for a sync under way
//! (this process's or another's) and otherwise answers `stale: true`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::registry::Rebuilder;
use crate::config::Config;
use crate::error::{Chain, Error, Result};
use crate::index::watch::WatchUpdate;
use crate::index::{Index, SyncOptions};

/// How long a query waits for a pending sync before it answers `stale: true`
/// (docs/search-index.md#freshness).
pub const STALE_WAIT: Duration = Duration::from_millis(200);
/// How long a query on a root that was never indexed waits for its first sync to finish rather than
/// answering empty (docs/search-index.md#freshness); the first sync of a large root takes seconds.
pub const FIRST_SYNC_WAIT: Duration = Duration::from_secs(30);

/// What `Keeper::freshen` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Freshened {
    /// The index may still be behind the files.
    pub stale: bool,
    /// The files this process stat'ed itself, as the writer with no other tmws process
    /// keeping the index (0 when another one keeps it, or for a server).
    pub scanned_alone: usize,
}

/// What the background sync is doing, for queries to judge freshness.
#[derive(Debug)]
pub(crate) struct SyncState {
    /// The first sync finished (or another process keeps the index).
    ready: AtomicBool,
    /// A sync is under way.
    busy: AtomicBool,
    /// Syncs started, and the number of the last that ended.
    started: AtomicU64,
    ended: AtomicU64,
    /// When the index last started to fall behind the files (ms since `epoch`).
    behind_since: AtomicU64,
    epoch: Instant,
    /// How many syncs ended (applied, committed or failed), signalled to whoever waits for
    /// the next one.
    ends: Mutex<u64>,
    ended_signal: Condvar,
}

impl Default for SyncState {
    fn default() -> SyncState {
        SyncState {
            ready: AtomicBool::new(false),
            busy: AtomicBool::new(false),
            started: AtomicU64::new(0),
            ended: AtomicU64::new(0),
            behind_since: AtomicU64::new(0),
            epoch: Instant::now(),
            ends: Mutex::new(0),
            ended_signal: Condvar::new(),
        }
    }
}

impl SyncState {
    fn fresh(&self) -> bool {
        self.ready.load(Ordering::Acquire) && !self.busy.load(Ordering::Acquire)
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn set_busy(&self) {
        self.started.fetch_add(1, Ordering::AcqRel);
        if !self.busy.swap(true, Ordering::AcqRel) {
            self.behind_since.store(self.now_ms(), Ordering::Release);
        }
    }

    fn set_done(&self) {
        self.ended.store(self.started.load(Ordering::Acquire), Ordering::Release);
        self.ready.store(true, Ordering::Release);
        self.busy.store(false, Ordering::Release);
        self.signal_end();
    }

    fn set_failed(&self) {
        self.ended.store(self.started.load(Ordering::Acquire), Ordering::Release);
        self.busy.store(false, Ordering::Release);
        self.signal_end();
    }

    fn signal_end(&self) {
        *lock(&self.ends) += 1;
        self.ended_signal.notify_all();
    }

    /// How many syncs have ended so far.
    pub(crate) fn ends(&self) -> u64 {
        *lock(&self.ends)
    }

    /// Waits until more than `seen` syncs have ended, or until `deadline`; returns how many
    /// have ended then.
    pub(crate) fn wait_end_after(&self, seen: u64, deadline: Instant) -> u64 {
        let mut ends = lock(&self.ends);
        while *ends <= seen {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            ends = self.ended_signal.wait_timeout(ends, left).unwrap_or_else(PoisonError::into_inner).0;
        }
        *ends
    }

    /// The sync under way now, if one is.
    fn ticket(&self) -> Option<u64> {
        self.busy.load(Ordering::Acquire).then(|| self.started.load(Ordering::Acquire))
    }

    /// Whether the index is ready and the sync under way at `ticket` (if any) has ended.
    fn done_with(&self, ticket: Option<u64>) -> bool {
        self.ready.load(Ordering::Acquire) && ticket.is_none_or(|t| self.ended.load(Ordering::Acquire) >= t)
    }

    /// How long the index has been behind the files (zero when it is fresh).
    pub(crate) fn lag(&self) -> Duration {
        if self.fresh() {
            return Duration::ZERO;
        }
        Duration::from_millis(self.now_ms().saturating_sub(self.behind_since.load(Ordering::Acquire)))
    }

    pub(crate) fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}

/// The index of an engine, kept fresh one way or the other.
pub(crate) enum Keeper {
    /// Synced before each query by whoever asks (the CLI).
    OnDemand(Mutex<Index>),
    /// Kept by a background thread; queries read through their own reader.
    Background(Background),
}

impl std::fmt::Debug for Keeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Keeper::OnDemand(_) => f.write_str("Keeper::OnDemand"),
            Keeper::Background(b) => f.debug_tuple("Keeper::Background").field(&b.state).finish(),
        }
    }
}

/// A server's background sync and watcher, and the reader its queries use.
pub(crate) struct Background {
    reader: Index,
    pub(crate) state: Arc<SyncState>,
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// The index as a query reads it: this process's only one, or a server's reader.
pub(crate) enum IndexRef<'a> {
    Locked(MutexGuard<'a, Index>),
    Shared(&'a Index),
}

impl std::ops::Deref for IndexRef<'_> {
    type Target = Index;
    fn deref(&self) -> &Index {
        match self {
            IndexRef::Locked(g) => g,
            IndexRef::Shared(i) => i,
        }
    }
}

thread_local! {
    /// Set while a query runs whose wait for the index was done before it (`settle_async`):
    /// whether the index may still be behind.
    static SETTLED: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` on this thread with the wait for the index done already (`settle_async`'s
/// answer): the queries in it take `stale` as theirs instead of waiting again.
pub(crate) fn settled_as<T>(stale: bool, f: impl FnOnce() -> T) -> T {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            SETTLED.set(None);
        }
    }
    SETTLED.set(Some(stale));
    let _reset = Reset;
    f()
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Keeper {
    /// Opens the index of `root` to be synced on demand (taking the writer role when free).
    pub(crate) fn on_demand(root: &Path) -> Result<Keeper> {
        Ok(Keeper::OnDemand(Mutex::new(Index::open(root)?)))
    }

    /// Opens the index of `root` (for writing, when free), starts the first sync and the
    /// watcher in a thread, and opens a reader for queries. Returns at once.
    pub(crate) fn background(root: &Path, config: &Config) -> Result<Keeper> {
        let mut index = Index::open(root)?;
        if index.is_read_only() {
            // Nothing below the root can change through this process: no watcher.
            return Ok(Keeper::OnDemand(Mutex::new(index)));
        }
        if let Some(why) = &index.rebuilt {
            tracing::warn!("rebuilt the index from the files: {why}");
        }
        let state = Arc::new(SyncState::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, watched, config) = (stop.clone(), state.clone(), config.clone());
        let root_owned = root.to_path_buf();
        state.set_busy();
        let thread = std::thread::Builder::new()
            .name("tmws-watch".into())
            .spawn(move || {
                let result = watch(&mut index, &root_owned, &config, &flag, |update| match update {
                    WatchUpdate::Syncing => watched.set_busy(),
                    WatchUpdate::Synced(r) => {
                        watched.set_done();
                        tracing::info!("synced {} files in {} ms", r.files, r.millis);
                        // A whole sync's scratch memory is freed now: give it back, so an
                        // idle server holds only what it uses (docs/performance.md).
                        crate::sys::release_free_memory();
                    }
                    WatchUpdate::Applied(r) => {
                        for (path, what) in &r.changes {
                            tracing::info!("{what} {path} (synced in {} ms)", r.millis);
                        }
                        watched.set_done();
                    }
                    WatchUpdate::Following | WatchUpdate::TookOver => watched.set_done(),
                    WatchUpdate::ClientConfigs => {
                        tracing::info!("a client config changed: introspecting changed servers in the background");
                    }
                    WatchUpdate::Failed(e) => {
                        tracing::warn!("index sync failed: {} (the whole root is synced again shortly)", Chain(e));
                        watched.set_failed();
                    }
                });
                if let Err(e) = result {
                    tracing::error!("the index watcher stopped: {}", Chain(&e));
                }
                watched.set_done();
            })
            .map_err(|e| Error::environment("cannot start the watcher thread", e))?;
        let reader = Index::open_reader(root)?;
        Ok(Keeper::Background(Background { reader, state, stop, thread: Mutex::new(Some(thread)) }))
    }

    /// Brings the index up to date as far as this process can (a sync, or a wait of at most
    /// `STALE_WAIT` for the writer's), and says whether it may still be behind the files.
    pub(crate) fn freshen(&self, config: &Config) -> Result<Freshened> {
        let stale = |stale| Freshened { stale, scanned_alone: 0 };
        match self {
            Keeper::OnDemand(m) => {
                let mut index = lock(m);
                if index.is_read_only() {
                    index.reload()?;
                    return Ok(stale(true));
                }
                if !index.is_writer() {
                    index.try_take_writer()?;
                }
                let report = match index.sync(config, &SyncOptions::default()) {
                    Ok(r) => r,
                    // A full disk: answer from the index as it is (docs/trust-boundary.md).
                    Err(e) if e.cannot_write() => {
                        tracing::warn!("{}: answering from the index as it is", Chain(&e));
                        index.reload()?;
                        return Ok(stale(true));
                    }
                    Err(e) => return Err(e),
                };
                if report.reader_only {
                    // Another process keeps the index: a `tmws watch --idle-exit` among
                    // them stays while it is asked.
                    super::autowatch::mark_queried(index.root());
                    settle(&index, || true, || false).map(stale)
                } else {
                    Ok(Freshened { stale: false, scanned_alone: report.files })
                }
            }
            Keeper::Background(b) => {
                if let Some(was_stale) = SETTLED.get() {
                    // The caller waited already, without holding a thread.
                    b.reader.reload()?;
                    return Ok(stale(was_stale));
                }
                // Our watcher's sync under way now may have found its changes before this
                // request: the wait is for it to finish, not for the watcher to go idle.
                let ticket = b.state.ticket();
                settle(&b.reader, || b.state.done_with(ticket), || b.state.busy.load(Ordering::Acquire)).map(stale)
            }
        }
    }

    /// The wait of `freshen` for a serving engine, done as a future so that a request
    /// waiting for a commit holds no thread: Some(whether the index may still be behind),
    /// or None when `freshen` must wait itself (an on-demand index, a first sync under way).
    /// Run the query then inside [`settled_as`].
    pub(crate) async fn settle_async(&self) -> Option<bool> {
        let Keeper::Background(b) = self else { return None };
        if !b.state.is_ready() {
            return None;
        }
        let ticket = b.state.ticket();
        let then = b.reader.freshness_now();
        let fresh = || b.state.done_with(ticket) && b.reader.has_caught_up(&then);
        let started = Instant::now();
        while !fresh() {
            if started.elapsed() >= STALE_WAIT {
                return Some(true);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Some(false)
    }

    /// The index to read.
    pub(crate) fn index(&self) -> IndexRef<'_> {
        match self {
            Keeper::OnDemand(m) => IndexRef::Locked(lock(m)),
            Keeper::Background(b) => IndexRef::Shared(&b.reader),
        }
    }

    /// The background sync's state (None for an on-demand index).
    pub(crate) fn state(&self) -> Option<&SyncState> {
        match self {
            Keeper::OnDemand(_) => None,
            Keeper::Background(b) => Some(&b.state),
        }
    }

    /// Syncs an on-demand index now (`tmws index`), then merges away the documents that sync and
    /// earlier ones deleted, so that scores are a clean rebuild's
    /// (docs/search-index.md#consistency).
    pub(crate) fn sync(&self, config: &Config, opts: &SyncOptions) -> Result<crate::index::SyncReport> {
        match self {
            Keeper::OnDemand(m) => {
                let mut index = lock(m);
                if index.is_read_only() {
                    return Err(Error::Environment(
                        "nothing can be written below the root (read-only or full): the index cannot be updated".into(),
                    ));
                }
                if !index.is_writer() {
                    index.try_take_writer()?;
                }
                let report = index.sync(config, opts)?;
                if !report.reader_only {
                    let merged = index.merge_deletes()?;
                    tracing::debug!(merged, "sync: segments with deleted documents merged");
                }
                Ok(report)
            }
            Keeper::Background(_) => {
                Err(Error::Usage("the index of a serving engine is kept by its watcher: sync on demand only".into()))
            }
        }
    }

    /// Keeps an on-demand index in step until `stop` is set (`tmws watch`).
    pub(crate) fn watch(
        &self,
        root: &Path,
        config: &Config,
        stop: &AtomicBool,
        on: impl FnMut(WatchUpdate<'_>),
    ) -> Result<()> {
        match self {
            Keeper::OnDemand(m) => watch(&mut lock(m), root, config, stop, on),
            Keeper::Background(_) => Err(Error::Usage("a serving engine watches already".into())),
        }
    }

    /// Stops the background thread (it commits what it applied) and waits for it.
    pub(crate) fn stop(&self) {
        if let Keeper::Background(b) = self {
            b.stop.store(true, Ordering::Relaxed);
            if let Some(t) = lock(&b.thread).take() {
                let _ = t.join();
            }
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = lock(&self.thread).take() {
            let _ = t.join();
        }
    }
}

/// The watch loop, with the registry rebuilt in the background when a client config
/// changes (docs/registry.md): the new registry is then indexed like any changed file.
fn watch(
    index: &mut Index,
    root: &Path,
    config: &Config,
    stop: &AtomicBool,
    mut on: impl FnMut(WatchUpdate<'_>),
) -> Result<()> {
    let rebuilder = Rebuilder::new(root, config);
    crate::index::watch::run(index, config, stop, |update| {
        if matches!(update, WatchUpdate::ClientConfigs) {
            rebuilder.poke();
        }
        on(update);
    })
}

/// Waits at most `STALE_WAIT` until `ours_fresh` holds and no writer has a sync pending,
/// then reads the latest commit. Returns whether the index may still be behind the files.
/// While the first sync of the root is under way (here or in the writer) and nothing was
/// committed yet, it waits up to `FIRST_SYNC_WAIT` instead: an empty answer then would
/// be wrong, not merely late.
fn settle(index: &Index, ours_fresh: impl Fn() -> bool, ours_busy: impl Fn() -> bool) -> Result<bool> {
    let first_sync = || (ours_busy() || index.sync_pending()) && index.payload().is_ok_and(|p| p.epoch == 0);
    // What was on disk when the request came is what it waits for: a memory another
    // process added before it is found; one added while it waits need not be.
    let then = index.freshness_now();
    let fresh = || ours_fresh() && index.has_caught_up(&then);
    let started = Instant::now();
    // The ordinary wait starts once the first sync (if one was under way) has committed.
    let mut since = started;
    while started.elapsed() < FIRST_SYNC_WAIT {
        if first_sync() {
            since = Instant::now();
        } else if fresh() || since.elapsed() >= STALE_WAIT {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    index.reload()?;
    Ok(!fresh())
}
