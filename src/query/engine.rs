//! The engine: the one library API behind every surface (DESIGN §10).
//!
//! An `Engine` is an open root: its config, its index and whoever keeps it fresh, the pool
//! of downstream servers, the registry file and the counters `/metrics` shows. The CLI opens
//! one per command (`Engine::open`: the index is opened when a request first needs it, and
//! synced before each query); `tmws mcp` and `tmws serve` open one for their lifetime
//! (`Engine::serve`: a background thread syncs and watches). Every tool is a method taking
//! its request type from `api` and giving a typed answer, and `call` reaches each one by
//! name with arguments from any surface.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value};

use super::answer::Reply;
use super::api::{
    self, ContextRequest, EntryWriteRequest, FormatOnly, MemoryAddRequest, MemoryClearRequest, MemoryDeleteRequest,
    MemoryGetRequest, MemoryListRequest, MemorySearchRequest, Params, RecallRequest, SearchRequest,
    SessionRecordRequest, ToolCallRequest, ToolDescribeRequest, ToolSearchRequest, TrustVerifyRequest,
    WorkspaceListRequest, WorkspaceReadRequest,
};
use super::catalog::{self, Output};
use super::context::{self, ContextAnswer};
use super::keeper::{IndexRef, Keeper};
use super::memory::maint::{Cleaned, Cleared, GcBranches, Linked, Pruned};
use super::memory::{self, AddAnswer, Deleted, MemoryHit, MemorySearchAnswer, Stats};
use super::metrics::{Gauges, Metrics};
use super::registry::{self, Built, Listed};
use super::session::SessionAnswer;
use super::tools::{self, Registry, ToolCallAnswer, ToolDescription, ToolResults};
use super::trust::{self, Trust};
use super::{SearchAnswer, SyncOptions, SyncReport, WatchUpdate, read, write};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::index::{Index, TextQuery};
use crate::model::DocKind;
use crate::parse::trust::{HUMAN, normalize};
use crate::pool::{self, Pool};

/// An open root: the one entry point of the library.
#[derive(Debug, Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

/// What a line for a person is given to (the CLI: stderr).
type Tell = fn(&str);

#[derive(Debug)]
struct Inner {
    root: PathBuf,
    config: Config,
    /// Whether a background thread keeps the index (`tmws mcp`, `tmws serve`).
    serving: bool,
    keeper: OnceLock<Keeper>,
    /// Held while the keeper is made, so that two threads never open the index twice.
    opening: std::sync::Mutex<()>,
    metrics: Metrics,
    registry: Registry,
    pool: OnceLock<Pool>,
    /// When this engine was made, and the last call after it (ms): the upkeep waits for
    /// a quiet moment.
    born: Instant,
    last_call_ms: AtomicU64,
    /// The client sessions that record themselves (DESIGN §6), for the idle sweep.
    sessions: Mutex<Vec<Weak<SessionLog>>>,
    /// The background thread of sessions' idle sweep and the upkeep, while it runs.
    background: Mutex<Option<Background>>,
    /// The binary a query may start `tmws watch` with (`[watch] auto`; the CLI sets it)
    /// and who is told when it does (else the log), and whether it did.
    launcher: OnceLock<(PathBuf, Option<Tell>)>,
    launched: AtomicBool,
    /// The name a server speaks for its clients as (`tmws mcp --agent`, `tmws serve
    /// --agent`), normalised: the writer of what they add and the verifier of what they
    /// verify, in place of each client's own name.
    agent: OnceLock<String>,
    /// Places for calls running at once on the blocking threads; the others wait as
    /// futures. Two cores gain nothing from two hundred searches at once, and each thread
    /// that ran one keeps memory of its own (a soak of 80 HTTP clients held 500 MB).
    /// Read-only tools take `calls`, the others `writes`: a write mostly waits for a log's
    /// lock, and must not queue behind a crowd of searches.
    calls: tokio::sync::Semaphore,
    writes: tokio::sync::Semaphore,
}

/// How many calls run at once (the rest queue): the cores and some, for calls that wait
/// on a lock or a commit rather than compute.
fn concurrent_calls() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()) * 2 + 2
}

impl Inner {
    fn touch(&self) {
        let ms = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_call_ms.store(ms, Ordering::Relaxed);
    }

    fn quiet_for(&self) -> Duration {
        let now = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(now.saturating_sub(self.last_call_ms.load(Ordering::Relaxed)))
    }
}

/// The background thread: its stop flag and handle.
#[derive(Debug)]
struct Background {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

/// What one session remembers (DESIGN §4.1, §7.2): whether it was sent the context
/// defaults already, who it speaks for, and, for a client session of a server, the
/// client's name from `initialize`. The CLI and each REST request have a session of their
/// own.
///
/// Who a session speaks for is an identity the model cannot choose (DESIGN §6): the person
/// at the command line (`human`), or for a server's session the server's `--agent`, else
/// the client's name, else the surface's name. It is the `agent` of every memory the
/// session adds and the verifier of every verification it records; a tool argument never
/// names it.
#[derive(Debug, Clone, Default)]
pub struct Session {
    defaults_sent: Arc<AtomicBool>,
    client: Arc<OnceLock<String>>,
    who: Who,
    /// What the session did, for the entry recorded when it ends (client sessions of a
    /// server only).
    log: Option<Arc<SessionLog>>,
}

/// The `author` of an op written through `surface` by `client` (DESIGN §2.3).
fn author(surface: &str, client: Option<&str>) -> Value {
    let mut author = Map::new();
    author.insert("surface".into(), Value::from(surface));
    if let Some(client) = client {
        author.insert("client".into(), Value::from(client));
    }
    Value::Object(author)
}

/// Who a session speaks for.
#[derive(Debug, Clone, Default)]
enum Who {
    /// The person at the command line.
    #[default]
    Person,
    /// Clients of a server, on `surface` (`mcp`, `http`), as the server's `--agent` when
    /// it has one.
    Client { surface: &'static str, agent: Option<Arc<str>> },
}

/// A client session's activity, recorded as a session entry when the session ends (the
/// last handle dropped: stdin closed, HTTP session deleted) or goes idle (DESIGN §6).
#[derive(Debug)]
struct SessionLog {
    engine: Weak<Inner>,
    client: Arc<OnceLock<String>>,
    /// Who the session speaks for, when not its client's name (the server's `--agent`).
    who: Who,
    activity: Mutex<super::session::Activity>,
    last_call: Mutex<Instant>,
}

impl SessionLog {
    /// Records what happened since the last record, if anything did.
    fn flush(&self) {
        let activity = std::mem::take(&mut *self.activity.lock().unwrap_or_else(PoisonError::into_inner));
        if activity.is_empty() {
            return;
        }
        let Some(inner) = self.engine.upgrade() else { return };
        // The record is the session's: written as the session's identity, by its surface.
        let session = Session { client: self.client.clone(), who: self.who.clone(), ..Session::default() };
        let (writer, author) = (session.writer(), session.author());
        let by = (Some(writer.as_str()), Some(&author));
        match super::session::record_activity(&inner.root, &inner.config, by, &activity, chrono::Utc::now()) {
            Ok(a) => tracing::info!("session recorded: {}", a.summary.unwrap_or_default()),
            Err(e) => tracing::warn!("cannot record the session: {e}"),
        }
    }
}

impl Drop for SessionLog {
    fn drop(&mut self) {
        self.flush();
    }
}

impl Session {
    /// Names the session's client, once (`initialize` says it once).
    pub fn set_client(&self, name: &str) {
        let name = name.trim();
        if !name.is_empty() {
            let _ = self.client.set(name.to_owned());
        }
    }

    /// The client's name, when it gave one.
    pub fn client(&self) -> Option<&str> {
        self.client.get().map(String::as_str)
    }

    /// Who this session speaks for, normalised (`parse::trust::normalize`): `human` at the
    /// command line; the server's `--agent`, else the client's name, for a client of a
    /// server (None when it has neither). A client that calls itself `human` is not the
    /// person: it has no name here.
    pub fn identity(&self) -> Option<String> {
        match &self.who {
            Who::Person => Some(HUMAN.to_owned()),
            Who::Client { agent: Some(agent), .. } => Some(agent.to_string()),
            Who::Client { agent: None, .. } => {
                self.client().map(normalize).filter(|name| !name.is_empty() && name != HUMAN)
            }
        }
    }

    /// The writer of what this session adds: its [`identity`](Self::identity), else the
    /// surface's name (`mcp`, `http`) for a client that gave none.
    pub fn writer(&self) -> String {
        match &self.who {
            Who::Client { surface, .. } => self.identity().unwrap_or_else(|| (*surface).to_owned()),
            Who::Person => HUMAN.to_owned(),
        }
    }

    /// The surface this session came through: `cli`, `mcp` or `http`.
    pub fn surface(&self) -> &'static str {
        match &self.who {
            Who::Person => "cli",
            Who::Client { surface, .. } => surface,
        }
    }

    /// The `author` of what this session writes (DESIGN §2.3, filled by tmws, never by
    /// the caller): the surface it came through, and the client's name when it gave one.
    pub fn author(&self) -> Value {
        author(self.surface(), self.client())
    }

    /// Whether the person at the command line speaks here (who may name another agent as
    /// a memory's writer).
    fn is_person(&self) -> bool {
        matches!(self.who, Who::Person)
    }

    /// Notes something the session did.
    fn note(&self, root: &Path, what: impl FnOnce(&mut super::session::Activity)) {
        if let Some(log) = &self.log {
            let mut a = log.activity.lock().unwrap_or_else(PoisonError::into_inner);
            a.begin(root);
            what(&mut a);
            *log.last_call.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
        }
    }

    /// A call made: the session is not idle, and its record starts here if this is the
    /// first call since the last record.
    fn touch(&self, root: &Path) {
        if let Some(log) = &self.log {
            log.activity.lock().unwrap_or_else(PoisonError::into_inner).begin(root);
            *log.last_call.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
        }
    }

    /// `session_record` was called: what happened so far is in that record.
    fn recorded(&self) {
        if let Some(log) = &self.log {
            *log.activity.lock().unwrap_or_else(PoisonError::into_inner) = super::session::Activity::default();
        }
    }

    /// Ends the session: records what it did, if anything (also done when the last handle
    /// of a client session is dropped).
    pub fn end(&self) {
        if let Some(log) = &self.log {
            log.flush();
        }
    }
}

/// Whether the index is ready and how far behind it is (`/health`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Health {
    pub ready: bool,
    pub lag_ms: u64,
}

impl Engine {
    /// Opens a root for one-shot use: its config is read now (an invalid one is an error),
    /// its index when a request first needs it, and synced before each query.
    pub fn open(root: &Path) -> Result<Engine> {
        Engine::new(root, false)
    }

    /// Opens a root to serve it: the first sync and the watcher start in the background at
    /// once, and queries wait for them at most briefly (DESIGN §7.2).
    pub fn serve(root: &Path) -> Result<Engine> {
        let engine = Engine::new(root, true)?;
        engine.keeper()?;
        engine.start_background();
        Ok(engine)
    }

    /// `tmws init`: makes `dir` a root (and registers `tmws mcp` with `clients`, running
    /// `tmws` from PATH, else `this_binary`).
    pub fn init(
        dir: &Path,
        clients: &[crate::init::McpClient],
        this_binary: Option<&Path>,
    ) -> Result<crate::init::InitReport> {
        crate::init::init(dir, clients, &crate::init::command_for_clients(this_binary))
    }

    /// `tmws check`: the findings in the given paths (of any number of roots).
    pub fn check(opts: &crate::check::CheckOptions) -> Result<crate::check::Report> {
        crate::check::run(opts)
    }

    fn new(root: &Path, serving: bool) -> Result<Engine> {
        let config = Config::load(root)?;
        // Before anything of the cache is used: one a repository brought is set aside.
        crate::store::cache::vet(root)?;
        Ok(Engine {
            inner: Arc::new(Inner {
                root: root.to_path_buf(),
                registry: Registry::new(root),
                config,
                serving,
                keeper: OnceLock::new(),
                opening: std::sync::Mutex::new(()),
                metrics: Metrics::default(),
                pool: OnceLock::new(),
                born: Instant::now(),
                last_call_ms: AtomicU64::new(0),
                sessions: Mutex::new(Vec::new()),
                background: Mutex::new(None),
                launcher: OnceLock::new(),
                launched: AtomicBool::new(false),
                agent: OnceLock::new(),
                calls: tokio::sync::Semaphore::new(concurrent_calls()),
                writes: tokio::sync::Semaphore::new(concurrent_calls()),
            }),
        })
    }

    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// A new session of the person at the command line (who is `human`): it records
    /// nothing.
    pub fn session(&self) -> Session {
        Session::default()
    }

    /// A new session of one REST request of `tmws serve`: it records nothing, and speaks
    /// as the server's `--agent` (else as `http`).
    pub fn request_session(&self) -> Session {
        Session { who: self.client_who("http"), ..Session::default() }
    }

    /// Who the clients of this server are on `surface`.
    fn client_who(&self, surface: &'static str) -> Who {
        Who::Client { surface, agent: self.inner.agent.get().map(|a| Arc::from(a.as_str())) }
    }

    /// Makes this server speak for its clients as `name` (`--agent`): the writer of what
    /// they add and the verifier of what they verify, whatever names the clients give.
    /// Set once, before the first session; `human` is the person at the command line and
    /// cannot be a server's name.
    pub fn set_agent(&self, name: &str) -> Result<()> {
        api::within("--agent", name, api::MAX_NAME_CHARS)?;
        let agent = normalize(&crate::redact::redact(name).text);
        if agent.is_empty() {
            return Err(Error::Usage("--agent: give the name the server's clients write and verify as".into()));
        }
        if agent == HUMAN {
            return Err(Error::Usage(format!(
                "--agent {HUMAN}: `{HUMAN}` is the person at the command line; name the agent this server serves"
            )));
        }
        let _ = self.inner.agent.set(agent);
        Ok(())
    }

    /// A new client session of an MCP server: unless `sessions.auto` is off, what it does
    /// is recorded as a session entry when it ends or goes idle (DESIGN §6).
    pub fn client_session(&self) -> Session {
        let who = self.client_who("mcp");
        if !self.inner.config.sessions.auto {
            return Session { who, ..Session::default() };
        }
        let client = Arc::new(OnceLock::new());
        let log = Arc::new(SessionLog {
            engine: Arc::downgrade(&self.inner),
            client: client.clone(),
            who: who.clone(),
            activity: Mutex::new(super::session::Activity::default()),
            last_call: Mutex::new(Instant::now()),
        });
        let mut sessions = self.inner.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.retain(|s| s.strong_count() > 0);
        sessions.push(Arc::downgrade(&log));
        Session { defaults_sent: Arc::default(), client, who, log: Some(log) }
    }

    /// Starts the background thread of a long-running process (`mcp`, `serve`, `watch`):
    /// it records sessions gone idle, runs the memory upkeep when it is due and the
    /// process is quiet (DESIGN §6), and warns once when the binary was replaced.
    pub fn start_background(&self) {
        const TICK: Duration = Duration::from_millis(500);
        let mut slot = self.inner.background.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_some() {
            return;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (weak, stopped) = (Arc::downgrade(&self.inner), stop.clone());
        let spawned = std::thread::Builder::new().name("tmws-upkeep".into()).spawn(move || {
            let mut next_check = Instant::now();
            // Said once: a process of an old binary goes on working (its index is its
            // version's own), but whoever reads its log should know to restart it.
            let mut exe = super::autowatch::ExeStamp::of_current_exe();
            while !stopped.load(Ordering::Relaxed) {
                std::thread::sleep(TICK);
                if exe.as_ref().is_some_and(super::autowatch::ExeStamp::replaced) {
                    tracing::warn!(
                        "the tmws binary was replaced (an upgrade): this process goes on with the old one until it is restarted"
                    );
                    exe = None;
                }
                let Some(inner) = weak.upgrade() else { return };
                let idle = Duration::from_secs_f64(inner.config.sessions.idle_minutes * 60.0);
                let live: Vec<Arc<SessionLog>> = inner
                    .sessions
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .iter()
                    .filter_map(Weak::upgrade)
                    .collect();
                for log in live {
                    if log.last_call.lock().unwrap_or_else(PoisonError::into_inner).elapsed() >= idle {
                        log.flush();
                    }
                }
                let upkeep = &inner.config.upkeep;
                if upkeep.every_secs == 0
                    || Instant::now() < next_check
                    || inner.quiet_for() < Duration::from_secs(upkeep.idle_secs)
                {
                    continue;
                }
                let now = chrono::Utc::now();
                if super::upkeep::due(&inner.root, &inner.config, now) {
                    match super::upkeep::run(&inner.root, &inner.config, now) {
                        Ok(r) => tracing::info!(
                            "upkeep: {} expired removed, {} pruned, {} of gone branches removed",
                            r.removed_expired,
                            r.pruned,
                            r.gc_removed
                        ),
                        Err(e) => tracing::warn!("upkeep: {e}"),
                    }
                }
                // Checked again when the next run could be due (at most a minute later:
                // another process may have run it).
                next_check = Instant::now() + Duration::from_secs(upkeep.every_secs.clamp(1, 60));
            }
        });
        match spawned {
            Ok(thread) => *slot = Some(Background { stop, thread }),
            Err(e) => tracing::warn!("cannot start the upkeep thread: {e}"),
        }
    }

    /// Stops the background thread, if it runs.
    fn stop_background(&self) {
        let taken = self.inner.background.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(b) = taken {
            b.stop.store(true, Ordering::Relaxed);
            let _ = b.thread.join();
        }
    }

    fn keeper(&self) -> Result<&Keeper> {
        if let Some(k) = self.inner.keeper.get() {
            return Ok(k);
        }
        let _opening = self.inner.opening.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(k) = self.inner.keeper.get() {
            return Ok(k);
        }
        let keeper = if self.inner.serving {
            Keeper::background(&self.inner.root, &self.inner.config)?
        } else {
            Keeper::on_demand(&self.inner.root)?
        };
        Ok(self.inner.keeper.get_or_init(|| keeper))
    }

    /// Opens the index now; returns why it had to be rebuilt from the files, if it did.
    pub fn open_index(&self) -> Result<Option<String>> {
        Ok(self.keeper()?.index().rebuilt.clone())
    }

    /// The index made as fresh as it gets (DESIGN §4), and whether it may still be behind.
    fn fresh(&self) -> Result<(IndexRef<'_>, bool)> {
        let keeper = self.keeper()?;
        let freshened = keeper.freshen(&self.inner.config)?;
        if freshened.stale {
            self.inner.metrics.stale_answers.fetch_add(1, Ordering::Relaxed);
        }
        self.launch_watcher(freshened.scanned_alone);
        Ok((keeper.index(), freshened.stale))
    }

    /// Lets this engine's queries start `exe watch --idle-exit` in the background when they
    /// had to stat a large root themselves (`[watch] auto`, see [`super::autowatch`]);
    /// `tell` is given a line that says so (for a person at a terminal); without it, the
    /// line goes to the log.
    pub fn launch_watchers_with(&self, exe: PathBuf, tell: Option<fn(&str)>) {
        let _ = self.inner.launcher.set((exe, tell));
    }

    /// Starts the watcher of `launch_watchers_with`, once, after a scan of `scanned` files.
    fn launch_watcher(&self, scanned: usize) {
        let watch = &self.inner.config.watch;
        let Some((exe, tell)) = self.inner.launcher.get() else { return };
        if !watch.auto
            || scanned == 0
            || scanned < watch.auto_min_files
            || self.inner.launched.swap(true, Ordering::Relaxed)
        {
            return;
        }
        match super::autowatch::spawn(exe, self.root(), watch.auto_idle_secs) {
            Ok(pid) => {
                let note = format!(
                    "started `tmws watch` in the background (pid {pid}) so that the next queries skip the \
                     stat of {scanned} files; it stops after {} s without one ([watch] auto = false: never)",
                    watch.auto_idle_secs
                );
                match tell {
                    Some(tell) => tell(&note),
                    None => tracing::info!("{note}"),
                }
            }
            Err(e) => tracing::debug!("cannot start `tmws watch`: {e}"),
        }
    }

    /// A search on the index made fresh, timed into `/metrics`; the answer and whether the
    /// index may still be behind.
    fn searched<A>(
        &self,
        timed: impl FnOnce(&Metrics) -> &super::metrics::Histogram,
        search: impl FnOnce(&Index) -> Result<A>,
    ) -> Result<(A, bool)> {
        let (index, stale) = self.fresh()?;
        let started = Instant::now();
        let found = search(&index);
        timed(&self.inner.metrics).observe(started.elapsed());
        Ok((found?, stale))
    }

    fn pool(&self) -> &Pool {
        self.inner.pool.get_or_init(|| Pool::new(pool::Settings::from_config(&self.inner.config.pool)))
    }

    /// `workspace_get_context` (DESIGN §4.1).
    pub fn context(&self, req: &ContextRequest) -> Result<Reply<ContextAnswer>> {
        self.context_in(&Session::default(), req)
    }

    /// `workspace_get_context` within a session, which counts defaults asked for again.
    pub fn context_in(&self, session: &Session, req: &ContextRequest) -> Result<Reply<ContextAnswer>> {
        let max = req.validate(self.config())?;
        let (index, stale) = self.fresh()?;
        let started = Instant::now();
        let answer = context::get_context(self.root(), &index, req, max, stale);
        self.inner.metrics.context.observe(started.elapsed());
        let answer = answer?;
        if req.include_defaults && session.defaults_sent.swap(true, Ordering::Relaxed) {
            self.inner.metrics.defaults_redundant.fetch_add(1, Ordering::Relaxed);
            tracing::info!("workspace_get_context: defaults asked for again in this session");
        }
        Ok(Reply { answer, format: req.format, max_chars: max })
    }

    /// Every workspace, domain and repository with its overview's name and description:
    /// what `tmws context` without a workspace shows.
    pub fn scopes(&self) -> Result<Vec<context::ScopeSummary>> {
        let (index, _) = self.fresh()?;
        context::list_scopes(self.root(), &index)
    }

    /// What an MCP client is told at `initialize`: how to use tmws, and the workspaces
    /// (read from the folders, not the index, which may not be built yet).
    pub fn instructions(&self) -> String {
        let dir = self.root().join(crate::layout::WORKSPACES_DIR);
        let mut names: Vec<String> = crate::store::list_subdirs(self.root(), &dir)
            .unwrap_or_default()
            .into_iter()
            .filter(|n| !n.starts_with('_') && crate::model::validate_component(n).is_ok())
            .collect();
        names.sort();
        catalog::instructions(&names)
    }

    /// `workspace_list` (DESIGN §4.5): every scope, with its overview's name and description.
    pub fn workspace_list(&self, req: &WorkspaceListRequest) -> Result<Reply<read::WorkspaceList>> {
        let max = req.validate(self.config())?;
        let (index, _) = self.fresh()?;
        Ok(Reply { answer: read::list(self.root(), &index)?, format: req.format, max_chars: max })
    }

    /// `workspace_read` (DESIGN §4.5): one document, memory or commit, whole.
    pub fn workspace_read(&self, req: &WorkspaceReadRequest) -> Result<Reply<read::ReadAnswer>> {
        let max = req.validate(self.config())?;
        let (index, _) = self.fresh()?;
        Ok(Reply { answer: read::read(self.root(), &index, &req.ref_id)?, format: req.format, max_chars: max })
    }

    /// `entry_write` (DESIGN §4.5): a new entry or overview, or a change to one, checked
    /// before it is written.
    pub fn entry_write(&self, req: &EntryWriteRequest) -> Result<Reply<write::EntryWritten>> {
        let max = req.validate(self.config())?;
        let epoch = self.keeper().ok().and_then(|k| k.index().payload().ok()).map_or(0, |p| p.epoch);
        let answer = write::write(self.root(), req, chrono::Utc::now().date_naive())?;
        self.await_indexed(&answer.ref_id, epoch);
        Ok(Reply { answer, format: req.format, max_chars: max })
    }

    /// A server's index follows the files through its watcher: the answer of a write waits
    /// (briefly) until the index holds what it wrote, so that the next search on any
    /// surface finds it. An index synced on demand (the CLI) is synced by the next query.
    fn await_indexed(&self, ref_id: &str, epoch_before: u64) {
        const WAIT: std::time::Duration = std::time::Duration::from_secs(2);
        let Ok(keeper) = self.keeper() else { return };
        if keeper.state().is_none() {
            return;
        }
        let query = crate::index::ItemQuery { ref_ids: vec![ref_id.to_owned()], ..Default::default() };
        let started = Instant::now();
        while started.elapsed() < WAIT {
            let index = keeper.index();
            if index.reload().is_err() {
                return;
            }
            // In the index, by a commit made after the write.
            let committed = index.payload().is_ok_and(|p| p.epoch > epoch_before);
            if committed && index.items(&query).is_ok_and(|items| !items.is_empty()) {
                return;
            }
            drop(index);
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        tracing::debug!("{ref_id} is not indexed yet");
    }

    /// `workspace_search` (DESIGN §4.2).
    pub fn search(&self, req: &SearchRequest) -> Result<Reply<SearchAnswer>> {
        let max = req.validate(self.config())?;
        let query = TextQuery {
            query: req.query.clone(),
            scope: req.scope.clone(),
            topics: req.topics.clone(),
            kinds: DocKind::parse_all(&req.kinds)?,
            status: req.filter_status.clone(),
            tags: req.filter_tags.clone(),
            limit: req.limit as usize,
            ..TextQuery::default()
        };
        let (mut answer, stale) = self.searched(|m| &m.search, |index| index.search(&query))?;
        answer.stale = stale;
        // Memories found say whose text they are (DESIGN §12).
        if answer.results.iter().any(|h| h.kind == DocKind::Memory.as_str()) {
            let trust = trust::ranking_scores(self.root());
            for h in answer.results.iter_mut().filter(|h| h.kind == DocKind::Memory.as_str()) {
                let from = memory::Provenance::of_hit(h, &trust);
                (h.author, h.trust, h.source) = (Some(from.author), Some(from.trust), Some(from.source));
            }
        }
        Ok(Reply { answer, format: req.format, max_chars: max })
    }

    /// `recall` (DESIGN §4.5): what to know before a task, ranked together.
    pub fn recall(&self, req: &RecallRequest) -> Result<Reply<super::recall::RecallAnswer>> {
        let max = req.validate(self.config())?;
        let (index, stale) = self.fresh()?;
        let started = Instant::now();
        let answer = super::recall::recall(self.root(), self.config(), &index, req);
        self.inner.metrics.recall.observe(started.elapsed());
        let mut answer = answer?;
        answer.stale = stale;
        Ok(Reply { answer, format: req.format, max_chars: max })
    }

    /// `memory_add` (DESIGN §4.3): appended under the log's lock; the index catches up
    /// before the next query answers (read-your-writes).
    pub fn memory_add(&self, req: &MemoryAddRequest) -> Result<Reply<AddAnswer>> {
        let max = req.validate(self.config())?;
        let answer =
            memory::add(self.root(), self.config(), &memory::Add { req, extra: Map::new() }, chrono::Utc::now())?;
        Ok(Reply { answer, format: req.format, max_chars: max })
    }

    /// `memory_add` as `session` asks it: the memory's `agent` is the session's writer (a
    /// client's identity, whatever `agent` it passed; at the command line the `agent` the
    /// person names, else `human`), and its `author` says through which surface and client
    /// it came (DESIGN §2.3), for answers to show where recalled text came from.
    pub fn memory_add_by(&self, session: &Session, mut req: MemoryAddRequest) -> Result<Reply<AddAnswer>> {
        let max = req.validate(self.config())?;
        if !session.is_person() || req.agent.is_none() {
            req.agent = Some(session.writer());
        }
        let mut extra = Map::new();
        extra.insert("author".into(), session.author());
        let answer = memory::add(self.root(), self.config(), &memory::Add { req: &req, extra }, chrono::Utc::now())?;
        Ok(Reply { answer, format: req.format, max_chars: max })
    }

    /// `memory_list`: what was remembered lately, newest first.
    pub fn memory_list(&self, req: &MemoryListRequest) -> Result<Reply<memory::MemoryListAnswer>> {
        let max = req.validate(self.config())?;
        let (mut answer, stale) =
            self.searched(|m| &m.memory_search, |index| memory::list(self.root(), self.config(), index, req))?;
        answer.stale = stale;
        Ok(Reply { answer, format: req.format, max_chars: max })
    }

    /// `memory_search` (DESIGN §4.3).
    pub fn memory_search(&self, req: &MemorySearchRequest) -> Result<Reply<MemorySearchAnswer>> {
        let max = req.validate(self.config())?;
        let (mut answer, stale) =
            self.searched(|m| &m.memory_search, |index| memory::search(self.root(), self.config(), index, req))?;
        answer.stale = stale;
        Ok(Reply { answer, format: req.format, max_chars: max })
    }

    /// `memory_get`.
    pub fn memory_get(&self, req: &MemoryGetRequest) -> Result<Reply<MemoryHit>> {
        let max = req.validate(self.config())?;
        let (index, _) = self.fresh()?;
        let answer = memory::get(self.root(), &index, &req.id, req.include_content)?;
        Ok(Reply { answer, format: req.format, max_chars: max })
    }

    /// `memory_delete`.
    pub fn memory_delete(&self, req: &MemoryDeleteRequest) -> Result<Reply<Deleted>> {
        let max = req.validate(self.config())?;
        let (index, _) = self.fresh()?;
        let answer = memory::delete(self.root(), self.config(), &index, &req.id)?;
        Ok(Reply { answer, format: req.format, max_chars: max })
    }

    /// `memory_stats`, with the redundant defaults of this server's sessions when serving.
    pub fn memory_stats(&self, req: &FormatOnly) -> Result<Reply<Stats>> {
        let mut answer = memory::stats(self.root(), self.config())?;
        answer.upkeep = super::upkeep::last(self.root());
        if self.inner.serving {
            answer.defaults_redundant = Some(self.inner.metrics.defaults_redundant.load(Ordering::Relaxed));
        }
        Ok(Reply { answer, format: req.format, max_chars: api::MAX_MAX_CHARS })
    }

    /// `memory_cleanup`: every log compacted, expired entries out.
    pub fn memory_cleanup(&self, req: &FormatOnly) -> Result<Reply<Cleaned>> {
        let answer = memory::maint::cleanup(
            self.root(),
            self.config(),
            &Default::default(),
            memory::maint::Clock::Asked(chrono::Utc::now()),
        )?;
        Ok(Reply { answer, format: req.format, max_chars: api::MAX_MAX_CHARS })
    }

    /// `memory_clear`: refused without `confirm`.
    pub fn memory_clear(&self, req: &MemoryClearRequest) -> Result<Reply<Cleared>> {
        let answer = memory::maint::clear(self.root(), self.config(), req.namespace.as_deref(), req.all, req.confirm)?;
        Ok(Reply { answer, format: req.format, max_chars: api::MAX_MAX_CHARS })
    }

    /// `memory prune --below F` (DESIGN §6).
    pub fn memory_prune(&self, below: f64) -> Result<Pruned> {
        memory::maint::prune(self.root(), self.config(), below, chrono::Utc::now(), &Default::default())
    }

    /// `memory gc-branches`.
    pub fn memory_gc_branches(&self) -> Result<GcBranches> {
        memory::maint::gc_branches(self.root(), self.config(), &Default::default())
    }

    /// `memory link-commit`.
    pub fn memory_link_commit(&self) -> Result<Linked> {
        memory::maint::link_commit(self.root())
    }

    /// `session_record` (DESIGN §6).
    pub fn session_record(&self, req: &SessionRecordRequest) -> Result<Reply<SessionAnswer>> {
        self.session_record_as(req, None)
    }

    /// `session_record` with the `author` of the entry (how the session came).
    fn session_record_as(&self, req: &SessionRecordRequest, author: Option<&Value>) -> Result<Reply<SessionAnswer>> {
        let max = req.validate(self.config())?;
        let answer = super::session::record(
            self.root(),
            self.config(),
            req.since.as_deref(),
            (req.agent.as_deref(), author),
            chrono::Utc::now(),
        )?;
        Ok(Reply { answer, format: req.format, max_chars: max })
    }

    /// `tool_search` (DESIGN §4.4): from the index; no downstream server is contacted.
    pub fn tool_search(&self, req: &ToolSearchRequest) -> Result<Reply<ToolResults>> {
        let max = req.validate(self.config())?;
        let (mut answer, stale) =
            self.searched(|m| &m.tool_search, |index| tools::search(index, &self.inner.registry, req))?;
        answer.stale = stale;
        Ok(Reply { answer, format: req.format, max_chars: max })
    }

    /// `tool_describe`, from the registry file: no downstream server is contacted.
    pub fn tool_describe(&self, req: &ToolDescribeRequest) -> Result<Reply<ToolDescription>> {
        let max = req.validate(self.config())?;
        let answer = tools::describe(&self.inner.registry, &req.server, &req.tool)?;
        Ok(Reply { answer, format: req.format, max_chars: max })
    }

    /// `tool_call` through the pool: the downstream result, verbatim.
    pub async fn tool_call(&self, req: &ToolCallRequest) -> Result<ToolCallAnswer> {
        req.validate(self.config())?;
        let answer = tools::call(
            self.root(),
            self.config(),
            &self.inner.registry,
            self.pool(),
            &req.server,
            &req.tool,
            req.arguments.clone(),
        )
        .await;
        let m = &self.inner.metrics;
        match &answer {
            Ok(called) => {
                if let Some(d) = called.started {
                    m.connect.observe(d);
                }
                if called.is_error { &m.tool_calls_failed } else { &m.tool_calls_ok }.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                m.tool_calls_failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        answer
    }

    /// Calls the tool `name` with `args` as any surface got them (values as text are read
    /// as the tool's schema says) and answers with its text: the one way every surface runs
    /// a tool.
    pub async fn call(&self, session: &Session, name: &str, args: Map<String, Value>) -> Result<Output> {
        self.inner.touch();
        session.touch(self.root());
        if name == "tool_call" {
            let req = ToolCallRequest::from_args(args)?;
            let called = self.tool_call(&req).await;
            let failed = !matches!(&called, Ok(c) if !c.is_error);
            session.note(self.root(), |a| {
                let c = a.tool_calls.entry(format!("{}/{}", req.server, req.tool)).or_default();
                c.0 += 1;
                c.1 += u64::from(failed);
            });
            return Ok(Output::Downstream(called?));
        }
        // A query waits for the index here, as a future, before it takes a place: under a
        // steady stream of writes most of a query's time is that wait.
        let read_only = catalog::find(name).is_some_and(|tool| tool.read_only);
        let settled = match self.inner.keeper.get() {
            Some(keeper) if read_only => keeper.settle_async().await,
            _ => None,
        };
        let places = if read_only { &self.inner.calls } else { &self.inner.writes };
        let _place =
            places.acquire().await.map_err(|e| Error::Environment(format!("the request did not start: {e}")))?;
        let (engine, session, name) = (self.clone(), session.clone(), name.to_owned());
        tokio::task::spawn_blocking(move || match settled {
            Some(stale) => super::keeper::settled_as(stale, || engine.call_blocking(&session, &name, args)),
            None => engine.call_blocking(&session, &name, args),
        })
        .await
        .map_err(|e| Error::Environment(format!("the request did not finish: {e}")))?
    }

    /// `call` for every tool but `tool_call`, on the caller's thread.
    pub fn call_blocking(&self, session: &Session, name: &str, args: Map<String, Value>) -> Result<Output> {
        fn text<T: super::answer::Answer>(reply: Reply<T>) -> Output {
            Output::Text { text: reply.text(), format: reply.format }
        }
        self.inner.touch();
        session.touch(self.root());
        let asked = |tool: &str, query: &str| {
            let query = crate::redact::redact(query).text;
            // The same question asked again at once (a client retrying an answer that was
            // stale) is one question of the session.
            session.note(self.root(), |a| {
                if a.queries.last().is_none_or(|(t, q)| t != tool || *q != query) {
                    a.queries.push((tool.to_owned(), query));
                }
            });
        };
        Ok(match name {
            "workspace_get_context" => text(self.context_in(session, &ContextRequest::from_args(args)?)?),
            "workspace_search" => {
                let req = SearchRequest::from_args(args)?;
                let reply = self.search(&req)?;
                asked(name, &req.query);
                text(reply)
            }
            "recall" => {
                let req = RecallRequest::from_args(args)?;
                let reply = self.recall(&req)?;
                asked(name, &req.task);
                text(reply)
            }
            "workspace_list" => text(self.workspace_list(&WorkspaceListRequest::from_args(args)?)?),
            "workspace_read" => text(self.workspace_read(&WorkspaceReadRequest::from_args(args)?)?),
            "entry_write" => {
                let reply = self.entry_write(&EntryWriteRequest::from_args(args)?)?;
                let written = reply.answer.ref_id.clone();
                session.note(self.root(), |a| a.entries.push(written));
                text(reply)
            }
            "memory_add" => {
                let req = MemoryAddRequest::from_args(args)?;
                let reply = self.memory_add_by(session, req.clone())?;
                let kind = if req.problem.is_some() { "problem" } else { req.kind.as_deref().unwrap_or("note") };
                let kind = crate::redact::redact(kind).text;
                let added = (reply.answer.id.clone(), kind, reply.answer.summary.clone());
                session.note(self.root(), |a| a.memories.push(added));
                text(reply)
            }
            "memory_search" => {
                let req = MemorySearchRequest::from_args(args)?;
                let reply = self.memory_search(&req)?;
                asked(name, &req.query);
                text(reply)
            }
            "memory_list" => text(self.memory_list(&MemoryListRequest::from_args(args)?)?),
            "memory_get" => text(self.memory_get(&MemoryGetRequest::from_args(args)?)?),
            "memory_delete" => text(self.memory_delete(&MemoryDeleteRequest::from_args(args)?)?),
            "memory_stats" => text(self.memory_stats(&FormatOnly::from_args(args)?)?),
            "memory_cleanup" => text(self.memory_cleanup(&FormatOnly::from_args(args)?)?),
            "memory_clear" => text(self.memory_clear(&MemoryClearRequest::from_args(args)?)?),
            "session_record" => {
                let req = SessionRecordRequest::from_args(args)?;
                req.validate(self.config())?;
                // What this session did so far is in the window of this record; a client's
                // record is written as the session's identity, never a name it passes.
                let agent = if session.is_person() { req.agent.clone() } else { Some(session.writer()) };
                let reply = self.session_record_as(&SessionRecordRequest { agent, ..req }, Some(&session.author()))?;
                session.recorded();
                text(reply)
            }
            "tool_search" => {
                let req = ToolSearchRequest::from_args(args)?;
                let reply = self.tool_search(&req)?;
                asked(name, &req.query);
                text(reply)
            }
            "tool_describe" => text(self.tool_describe(&ToolDescribeRequest::from_args(args)?)?),
            "trust_verify" => {
                let req = TrustVerifyRequest::from_args(args)?;
                let reply = self.trust_verify_by(session, &req)?;
                let t = &reply.answer.trust;
                let verified = (t.agent.clone(), req.success, t.score);
                session.note(self.root(), |a| a.verifications.push(verified));
                text(reply)
            }
            "trust_show" => text(self.trust_list(&FormatOnly::from_args(args)?)?),
            "tool_call" => {
                return Err(Error::Usage("tool_call runs on the async runtime: use Engine::call".into()));
            }
            other => {
                let known: Vec<&str> = catalog::TOOLS.iter().map(|t| t.name).collect();
                return Err(Error::NotFound(format!("no tool `{other}`; tools: {}", known.join(", "))));
            }
        })
    }

    /// `tmws registry build`: writes the registry and says what happened to each server.
    /// Only servers approved as they are now are started; the caller asks for the others'
    /// approval first (`registry_review`, `registry_grant`).
    pub fn registry_build(&self, force: bool, timeout: std::time::Duration) -> Result<Built> {
        registry::build(self.root(), self.config(), force, timeout)
    }

    /// The servers named (every one when `names` is empty) that await the user's approval,
    /// as the user is shown them before approving.
    pub fn registry_review(&self, names: &[String]) -> Result<registry::Review> {
        registry::review(self.root(), self.config(), names)
    }

    /// Approves exactly what the user was shown (`registry_review`); `registry_build` then
    /// starts them.
    pub fn registry_grant(&self, pending: &[registry::Pending]) -> Result<()> {
        registry::grant(self.root(), pending)
    }

    /// The servers the client configs name, with the hash their registry entries must carry.
    pub fn configured_servers(&self) -> Result<Vec<registry::ConfiguredServer>> {
        registry::configured_servers(self.root(), self.config())
    }

    /// `tmws registry list`.
    pub fn registry_list(&self) -> Result<Vec<Listed>> {
        registry::list(self.root(), self.config())
    }

    /// `tmws trust verify`: records that the person at the command line (`human`) checked
    /// `agent`'s work.
    pub fn trust_verify(&self, agent: &str, success: bool, evidence: &str) -> Result<Trust> {
        trust::verify(self.root(), agent, HUMAN, success, evidence, chrono::Utc::now())
    }

    /// `trust_verify` (DESIGN §6): the session verifies `req.agent`, as its identity (the
    /// server's `--agent`, else the client's name). A client that gave no name in
    /// `initialize` to a server without `--agent` cannot verify anyone.
    pub fn trust_verify_by(&self, session: &Session, req: &TrustVerifyRequest) -> Result<Reply<trust::Verified>> {
        let max = req.validate(self.config())?;
        let Some(verifier) = session.identity() else {
            return Err(Error::Usage(
                "trust_verify needs the verifier's name: this client gave none in initialize (clientInfo.name)".into(),
            ));
        };
        let trust = trust::verify(self.root(), &req.agent, &verifier, req.success, &req.evidence, chrono::Utc::now())?;
        Ok(Reply { answer: trust::Verified { verifier, trust }, format: req.format, max_chars: max })
    }

    /// `trust_show`: every agent's trust, highest first.
    pub fn trust_list(&self, req: &FormatOnly) -> Result<Reply<trust::TrustList>> {
        let max = req.validate(self.config())?;
        Ok(Reply { answer: trust::TrustList { agents: self.trust_show() }, format: req.format, max_chars: max })
    }

    /// `tmws trust show`: every agent's trust, highest first.
    pub fn trust_show(&self) -> Vec<Trust> {
        trust::show(self.root())
    }

    /// `tmws hook install`; `tmws` is the binary the hook runs.
    pub fn hook_install(&self, tmws: &Path) -> Result<super::hook::HookAnswer> {
        super::hook::install(self.root(), tmws)
    }

    /// `tmws build-rules [--check] [--force]`.
    pub fn build_rules(&self, check: bool, force: bool) -> Result<crate::rules::RulesReport> {
        crate::rules::build_rules(self.root(), &self.config().rules.targets, check, force)
    }

    /// Converges the index to the files now (`tmws index`).
    pub fn sync(&self, opts: &SyncOptions) -> Result<SyncReport> {
        self.keeper()?.sync(self.config(), opts)
    }

    /// `tmws index`: syncs here, or, while another process keeps the index (the `tmws mcp`
    /// of an editor, say), asks that one to sync (or rebuild) and waits for its report.
    /// A request nobody takes (the other was a one-shot command that has finished) is taken
    /// back, and the sync made here once the writer role is free.
    pub fn sync_or_ask(&self, opts: &SyncOptions) -> Result<SyncReport> {
        const TAKE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
        const DONE_WAIT: std::time::Duration = std::time::Duration::from_secs(600);
        const RETRY_HERE: std::time::Duration = std::time::Duration::from_millis(250);
        let report = self.sync(opts)?;
        if !report.reader_only {
            return Ok(report);
        }
        let root = self.root();
        let request = crate::index::watch::SyncRequest::send(root, opts.rebuild)?;
        let started = Instant::now();
        let mut tried_here = Instant::now();
        loop {
            if let Some(answer) = request.answer(root) {
                return answer;
            }
            let taken = request.taken(root);
            if taken && started.elapsed() > DONE_WAIT {
                return Err(Error::Index(format!(
                    "the tmws process that keeps the index took the request to sync but did not answer within {} s",
                    DONE_WAIT.as_secs()
                )));
            }
            if !taken && started.elapsed() > TAKE_WAIT {
                request.withdraw(root);
                return Err(Error::Environment(format!(
                    "another tmws process holds the index but did not take the request to sync within {} s",
                    TAKE_WAIT.as_secs()
                ))
                .with_hint("a tmws older than this one keeps it: stop it (its editor's MCP server), or wait"));
            }
            // The keeper may exit (a one-shot command, or one that died after taking the
            // request): then the role is free and the sync is made here.
            if tried_here.elapsed() > RETRY_HERE {
                tried_here = Instant::now();
                let report = self.sync(opts)?;
                if !report.reader_only {
                    request.withdraw(root);
                    return Ok(report);
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Keeps the index in sync with file changes until `stop` is set (`tmws watch`), and
    /// introspects in the background the servers whose client config changed.
    pub fn watch(&self, stop: &AtomicBool, on: impl FnMut(WatchUpdate<'_>)) -> Result<()> {
        self.start_background();
        let watched = self.keeper().and_then(|k| k.watch(self.root(), self.config(), stop, on));
        self.stop_background();
        watched
    }

    /// Whether the first sync is done and how far the index is behind.
    pub fn health(&self) -> Health {
        match self.inner.keeper.get().and_then(Keeper::state) {
            Some(state) => {
                Health { ready: state.is_ready(), lag_ms: u64::try_from(state.lag().as_millis()).unwrap_or(u64::MAX) }
            }
            None => Health { ready: self.inner.keeper.get().is_some(), lag_ms: 0 },
        }
    }

    /// Counts an HTTP request for `/metrics`.
    pub fn count_request(&self, route: &str, status: u16) {
        self.inner.metrics.count_request(route, status);
    }

    /// The counters in Prometheus' text format.
    pub fn metrics_text(&self) -> String {
        let health = self.health();
        let counts = self.keeper().ok().and_then(|k| {
            let index = k.index();
            let _ = index.reload();
            match index.counts() {
                Ok(c) => Some((c.kinds, c.namespaces)),
                Err(e) => {
                    tracing::warn!("metrics: cannot count the index: {e}");
                    None
                }
            }
        });
        let importance = self
            .keeper()
            .ok()
            .and_then(|k| k.index().importance_by_namespace(&memory::ranking(self.root(), self.config())).ok())
            .unwrap_or_default();
        let gauges = Gauges {
            ready: health.ready,
            lag: std::time::Duration::from_millis(health.lag_ms),
            counts,
            pool_size: self.inner.pool.get().map_or(0, Pool::size),
            trust: self.trust_show().into_iter().map(|t| (t.agent, t.score)).collect(),
            importance,
            upkeep_at: super::upkeep::last_run(self.root()).map(|at| at.timestamp()),
        };
        self.inner.metrics.text(&gauges)
    }

    /// Closes every downstream server and stops the background sync (it commits first).
    pub async fn shutdown(&self) {
        let engine = self.clone();
        let _ = tokio::task::spawn_blocking(move || engine.stop_background()).await;
        if let Some(pool) = self.inner.pool.get() {
            pool.shutdown().await;
        }
        if let Some(keeper) = self.inner.keeper.get() {
            keeper.stop();
        }
    }

    /// The answer of an error as every surface gives it.
    pub fn error_answer(&self, e: &Error) -> crate::error::ErrorAnswer {
        crate::error::ErrorAnswer::new(e, Some(self.root()))
    }
}
