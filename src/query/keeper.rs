//! Who keeps the index in step with the files, and how fresh an answer is
//! (docs/search-index.md#freshness).
//!
//! A one-shot process (the CLI) keeps it on demand: each query syncs first when this
//! process holds the writer role, and otherwise waits for the writer. A server (`tmws mcp`,
//! `tmws serve`) keeps it in the background: a thread runs the first sync and then the
//! watcher, and queries read the latest commit through a reader of their own.
//!
//! Either way one rule decides freshness. A query takes the state of the files when it
//! came (`Index::freshness_now`): a sync under way, and the end of the complete lines of
//! each memory log. A memory write is acknowledged only once its line is in the log, so
//! the line's end is the write's number, and the commit payload says up to where each log
//! is indexed. A query whose moment holds lines not indexed yet (a write acknowledged
//! before it, by this process or another) waits until a commit holds them, at most
//! `WRITTEN_WAIT`; any other query waits at most `STALE_WAIT` for the sync under way.
//! Past the bound it answers `stale: true`.
//!
//! When this process's watcher holds the writer role, a waiting query asks it to apply the
//! memory logs at once (`LogAsks`) and sleeps until the watcher signals the end of a sync
//! (a condvar for a thread, a `Notify` for a future). When another process writes, no
//! signal can reach this one: the query looks at the commit again every `POLL`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::registry::Rebuilder;
use crate::config::Config;
use crate::error::{Chain, Error, Result};
use crate::index::watch::{LogAsks, WatchUpdate};
use crate::index::{Freshness, Index, SyncOptions};

/// How long a query waits for a pending sync before it answers `stale: true`
/// (docs/search-index.md#freshness).
pub const STALE_WAIT: Duration = Duration::from_millis(200);
/// How long a query waits for memory lines that were in their log when it came (writes
/// acknowledged before it) to be committed, before it answers `stale: true` all the same:
/// a bound for a writer that is wedged or busy with a long rebuild, not a time the
/// ordinary path waits for (a loaded machine of two cores took up to 3 s).
pub const WRITTEN_WAIT: Duration = Duration::from_secs(30);
/// How often a query looks at the commit again while another process keeps the index.
const POLL: Duration = Duration::from_millis(5);
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
    /// the next one: threads through the condvar, futures through the `Notify`.
    ends: Mutex<u64>,
    ended_signal: Condvar,
    ended_notify: tokio::sync::Notify,
    /// This process's watcher holds the writer role: its commits are the only ones, and
    /// the end of each is signalled.
    writer: AtomicBool,
    /// Queries' asks that the watcher apply the memory logs now.
    pub(crate) asks: LogAsks,
    /// The watcher has stopped: nothing more will be committed or signalled.
    stopped: AtomicBool,
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
            ended_notify: tokio::sync::Notify::new(),
            writer: AtomicBool::new(false),
            asks: LogAsks::default(),
            stopped: AtomicBool::new(false),
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
        self.ended_notify.notify_waiters();
    }

    /// Whether this process's watcher holds the writer role (its sync ends are signalled).
    fn is_writer(&self) -> bool {
        self.writer.load(Ordering::Acquire)
    }

    fn set_writer(&self) {
        self.writer.store(true, Ordering::Release);
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
        // A watcher a query started keeps the index: this process reads (it opens it as
        // usual when there is none to read).
        let index = if super::autowatch::started_one_runs(root) {
            Index::open_reader(root).or_else(|_| Index::open(root))?
        } else {
            Index::open(root)?
        };
        Ok(Keeper::OnDemand(Mutex::new(index)))
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
        if index.is_writer() {
            state.set_writer();
        }
        state.set_busy();
        let thread = std::thread::Builder::new()
            .name("tmws-watch".into())
            .spawn(move || {
                let result = watch(&mut index, &root_owned, &config, &flag, &watched.asks, |update| match update {
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
                    WatchUpdate::Following => watched.set_done(),
                    WatchUpdate::TookOver => {
                        watched.set_writer();
                        watched.set_done();
                    }
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
                watched.stopped.store(true, Ordering::Release);
                watched.set_done();
            })
            .map_err(|e| Error::environment("cannot start the watcher thread", e))?;
        let reader = Index::open_reader(root)?;
        Ok(Keeper::Background(Background { reader, state, stop, thread: Mutex::new(Some(thread)) }))
    }

    /// Brings the index up to date as far as this process can (a sync, or a wait for the
    /// writer's, bounded as the module says), and says whether it may still be behind the
    /// files.
    pub(crate) fn freshen(&self, config: &Config) -> Result<Freshened> {
        let stale = |stale| Freshened { stale, scanned_alone: 0 };
        match self {
            Keeper::OnDemand(m) => {
                let mut index = lock(m);
                if index.is_read_only() {
                    index.reload()?;
                    return Ok(stale(true));
                }
                if !index.is_writer() && !super::autowatch::started_one_runs(index.root()) {
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
                    settle(&index, None).map(stale)
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
                settle(&b.reader, Some(&b.state)).map(stale)
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
        let target = Target::now(&b.reader, Some(&b.state));
        loop {
            // Registered before the look, so that a sync ending between the two wakes it.
            let ended = b.state.ended_notify.notified();
            let mut ended = std::pin::pin!(ended);
            ended.as_mut().enable();
            match target.step() {
                Step::Fresh => return Some(false),
                Step::Stale => return Some(true),
                Step::Wait => {}
            }
            let until = tokio::time::Instant::from_std(target.deadline);
            if b.state.is_writer() {
                let _ = tokio::time::timeout_at(until, ended).await;
            } else {
                // Another process commits: nothing here is told when it does.
                tokio::time::sleep_until(until.min(tokio::time::Instant::now() + POLL)).await;
            }
        }
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
            // `tmws watch`: no query of this process waits on it.
            Keeper::OnDemand(m) => watch(&mut lock(m), root, config, stop, &LogAsks::default(), on),
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
    asks: &LogAsks,
    mut on: impl FnMut(WatchUpdate<'_>),
) -> Result<()> {
    let rebuilder = Rebuilder::new(root, config);
    crate::index::watch::run(index, config, stop, asks, |update| {
        if matches!(update, WatchUpdate::ClientConfigs) {
            rebuilder.poke();
        }
        on(update);
    })
}

/// What a query waits for: the files as they were when it came, and until when.
struct Target<'a> {
    index: &'a Index,
    /// This process's watcher, if it keeps the index, with the sync it had under way when
    /// the query came: that sync may have found its changes before the query, so the
    /// wait is for it to end, not for the watcher to go idle.
    ours: Option<(&'a SyncState, Option<u64>)>,
    then: Freshness,
    /// The ask made of this process's watcher to apply the memory logs.
    ask: Option<u64>,
    deadline: Instant,
}

/// Where a wait stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Fresh,
    Stale,
    Wait,
}

impl<'a> Target<'a> {
    /// The state of the files now, as `index` and this process's watcher (if any) see it.
    fn now(index: &'a Index, ours: Option<&'a SyncState>) -> Target<'a> {
        let ticket = ours.and_then(SyncState::ticket);
        let then = index.freshness_now();
        let written = then.has_unindexed_lines();
        let ask = ours.filter(|s| written && s.is_writer()).map(|s| s.asks.ask());
        let deadline = Instant::now() + if written { WRITTEN_WAIT } else { STALE_WAIT };
        Target { index, ours: ours.map(|s| (s, ticket)), then, ask, deadline }
    }

    fn step(&self) -> Step {
        let ours_done = self.ours.is_none_or(|(s, ticket)| s.done_with(ticket));
        if ours_done && self.index.has_caught_up(&self.then) {
            return Step::Fresh;
        }
        // A watcher that stopped (its error is in the log) commits nothing more.
        if self.ours.is_some_and(|(s, _)| s.stopped.load(Ordering::Acquire)) {
            return Step::Stale;
        }
        if Instant::now() >= self.deadline {
            if self.then.has_unindexed_lines() {
                tracing::warn!(
                    "memory written before a query was not indexed within {} s: answering stale",
                    WRITTEN_WAIT.as_secs()
                );
            }
            return Step::Stale;
        }
        // Our watcher read the logs after our ask and that sync has ended: what is still
        // missing cannot be indexed now (a log it could not read), and waiting longer would
        // not change the answer. (A sync that failed takes no ask: its retry does.)
        if let (Some(ask), Some((state, _))) = (self.ask, self.ours)
            && state.asks.taken(ask)
            && !state.busy.load(Ordering::Acquire)
        {
            return Step::Stale;
        }
        Step::Wait
    }
}

/// Waits until `then` (the files when the query came) is committed, or until its bound
/// (`WRITTEN_WAIT` for memory lines written before the query, `STALE_WAIT` for any other
/// sync under way), then reads the latest commit. Returns whether the index may still be
/// behind the files. `ours` is this process's watcher, when it runs. While the first sync
/// of the root is under way (here or in the writer) and nothing was committed yet, it waits
/// up to `FIRST_SYNC_WAIT` first: an empty answer then would be wrong, not merely late.
fn settle(index: &Index, ours: Option<&SyncState>) -> Result<bool> {
    let ours_busy = || ours.is_some_and(|s| s.busy.load(Ordering::Acquire));
    let first_sync = || (ours_busy() || index.sync_pending()) && index.payload().is_ok_and(|p| p.epoch == 0);
    // The ends of this process's watcher's syncs are signalled when it holds the writer
    // role; otherwise another process commits and the wait looks again every `POLL`.
    let signalled = ours.filter(|s| s.is_writer());
    let pause = |seen: Option<u64>, deadline: Instant| match (signalled, seen) {
        (Some(state), Some(seen)) => {
            state.wait_end_after(seen, deadline);
        }
        _ => std::thread::sleep(POLL.min(deadline.saturating_duration_since(Instant::now()))),
    };
    let first_deadline = Instant::now() + FIRST_SYNC_WAIT;
    loop {
        let seen = signalled.map(SyncState::ends);
        if Instant::now() >= first_deadline || !first_sync() {
            break;
        }
        pause(seen, first_deadline);
    }
    // What was on disk when the request came (after a first sync) is what it waits for: a
    // memory added before it is found; one added while it waits need not be.
    let target = Target::now(index, ours);
    let stale = loop {
        let seen = signalled.map(SyncState::ends);
        match target.step() {
            Step::Fresh => break false,
            Step::Stale => break true,
            Step::Wait => pause(seen, target.deadline),
        }
    };
    index.reload()?;
    Ok(stale)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::TextQuery;

    /// Appends a memory about `word` to the default log, as a writer of another process
    /// would (the watcher learns of it from the file alone).
    fn append(root: &Path, id: &str, word: &str) {
        let line = format!(
            "{{\"op\":\"add\",\"id\":\"{id}\",\"at\":\"2026-11-22T10:00:00Z\",\"content\":\"about {word}\"}}\n"
        );
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(root.join(crate::layout::memory_log("short-term")))
            .unwrap();
        std::io::Write::write_all(&mut f, line.as_bytes()).unwrap();
    }

    fn found(keeper: &Keeper, word: &str) -> usize {
        let req = TextQuery { query: word.into(), limit: 5, ..TextQuery::default() };
        keeper.index().search(&req).unwrap().results.len()
    }

    /// Whatever the machine's load, a query waits for the commit that holds the memory
    /// lines written before it, woken by the watcher's signal, on a thread and as a future.
    #[test]
    fn a_query_after_a_write_waits_for_the_commit_that_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(crate::layout::MEMORY_DIR)).unwrap();
        let config = Config::default();
        let keeper = Keeper::background(root, &config).unwrap();
        assert!(!keeper.freshen(&config).unwrap().stale, "the first sync");
        assert!(keeper.state().unwrap().is_writer());
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        for i in 0..10 {
            let word = format!("thread{}", char::from(b'a' + i));
            append(root, &format!("m_t{i}"), &word);
            assert!(!keeper.freshen(&config).unwrap().stale, "{word}");
            assert_eq!(found(&keeper, &word), 1, "{word}");

            let word = format!("future{}", char::from(b'a' + i));
            append(root, &format!("m_f{i}"), &word);
            assert_eq!(rt.block_on(keeper.settle_async()), Some(false), "{word}");
            assert!(!settled_as(false, || keeper.freshen(&config)).unwrap().stale);
            assert_eq!(found(&keeper, &word), 1, "{word}");
        }
        keeper.stop();
    }
}
