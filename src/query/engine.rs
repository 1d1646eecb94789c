//! The engine: the one library API behind every surface.
//!
//! An `Engine` is an open root: its config, its index and whoever keeps it fresh, the pool
//! of downstream servers, the registry file and the counters `/metrics` shows. The CLI opens
//! one per command (`Engine::open`: the index is opened when a request first needs it, and
//! synced before each query); `tmws mcp` and `tmws serve` open one for their lifetime
//! (`Engine::serve`: a background thread syncs and watches). The tools themselves live in
//! [`catalog`](super::catalog): `call` reaches each one by name with arguments from any
//! surface, `ask` runs one with its typed request. Sessions (`live`), the background
//! thread (`background`) and the request to another process to sync (`ask`) have modules
//! of their own.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value};

use super::answer::Reply;
use super::background::{Background, Quiet, Work};
use super::catalog::{self, Answered, Cx, Output, Tool, Typed};
use super::context;
use super::keeper::{IndexRef, Keeper};
use super::live::{Handle, Home, Sessions, Who};
use super::memory::maint::{GcBranches, Linked, Pruned};
use super::metrics::{Gauges, Metrics};
use super::registry::{self, Built, Listed};
use super::tools::Registry;
use super::trust::{self, Trust};
use super::{SyncOptions, SyncReport, WatchUpdate, memory};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::index::Index;
use crate::parse::trust::{HUMAN, normalize};
use crate::pool::{self, Pool};

pub use super::live::Session;

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
    config: Arc<Config>,
    /// Whether a background thread keeps the index (`tmws mcp`, `tmws serve`).
    serving: bool,
    keeper: OnceLock<Keeper>,
    /// Held while the keeper is made, so that two threads never open the index twice.
    opening: std::sync::Mutex<()>,
    metrics: Metrics,
    registry: Registry,
    pool: OnceLock<Pool>,
    /// The name a server speaks for its clients as (`tmws mcp --agent`, `tmws serve
    /// --agent`), normalised: the writer of what they add and the verifier of what they
    /// verify, in place of each client's own name.
    agent: OnceLock<String>,
    sessions: Arc<Sessions>,
    quiet: Arc<Quiet>,
    background: Background,
    launcher: Launcher,
    places: Places,
    /// The last listing of proposals for review, with what it was made of.
    proposals: std::sync::Mutex<super::review::Kept>,
}

/// The binary a query may start `tmws watch` with (`[watch] auto`; the CLI sets it), who
/// is told when it does (else the log), and whether it did.
#[derive(Debug, Default)]
struct Launcher {
    with: OnceLock<(PathBuf, Option<Tell>)>,
    launched: AtomicBool,
}

/// Places for calls running at once on the blocking threads; the others wait as futures.
/// Two cores gain nothing from two hundred searches at once, and each thread that ran one
/// keeps memory of its own (a soak of 80 HTTP clients held 500 MB). Read-only tools take
/// `reads`, the others `writes`: a write mostly waits for a log's lock, and must not queue
/// behind a crowd of searches.
#[derive(Debug)]
struct Places {
    reads: tokio::sync::Semaphore,
    writes: tokio::sync::Semaphore,
}

impl Default for Places {
    /// The cores and some, for calls that wait on a lock or a commit rather than compute.
    fn default() -> Places {
        let n = std::thread::available_parallelism().map_or(2, |n| n.get()) * 2 + 2;
        Places { reads: tokio::sync::Semaphore::new(n), writes: tokio::sync::Semaphore::new(n) }
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
    /// once, and queries wait for them at most briefly.
    pub fn serve(root: &Path) -> Result<Engine> {
        let engine = Engine::new(root, true)?;
        engine.keeper()?;
        engine.start_background();
        Ok(engine)
    }

    /// `tmws init`: makes `dir` a root (and registers `tmws mcp` with `clients`, running
    /// `tmws` from PATH, else `this_binary`; installs the agent hooks of `hooks`).
    pub fn init(
        dir: &Path,
        clients: &[crate::init::McpClient],
        hooks: &[crate::agent_hooks::HookClient],
        this_binary: Option<&Path>,
    ) -> Result<crate::init::InitReport> {
        crate::init::init(dir, clients, hooks, &crate::init::command_for_clients(this_binary), this_binary)
    }

    /// `tmws hooks install|uninstall [--check] CLIENT…` in the root `root`: the hooks run
    /// `tmws` from PATH, else `this_binary`, as `init`'s client entries do.
    pub fn hooks(
        root: &Path,
        clients: &[crate::agent_hooks::HookClient],
        action: crate::agent_hooks::HooksAction,
        this_binary: Option<&Path>,
    ) -> Result<crate::agent_hooks::HooksReport> {
        crate::agent_hooks::run(root, clients, action, &crate::init::command_for_clients(this_binary))
    }

    /// `tmws check`: the findings in the given paths (of any number of roots).
    pub fn check(opts: &crate::check::CheckOptions) -> Result<crate::check::Report> {
        crate::check::run(opts)
    }

    fn new(root: &Path, serving: bool) -> Result<Engine> {
        let config = Config::load(root)?;
        // Before anything of the cache is used: one a repository brought is set aside.
        crate::store::cache::vet(root)?;
        // The sessions of servers killed before they could record them.
        super::live::recover(root, &config);
        Ok(Engine {
            inner: Arc::new(Inner {
                root: root.to_path_buf(),
                registry: Registry::new(root),
                config: Arc::new(config),
                serving,
                keeper: OnceLock::new(),
                opening: std::sync::Mutex::new(()),
                metrics: Metrics::default(),
                pool: OnceLock::new(),
                agent: OnceLock::new(),
                sessions: Arc::default(),
                quiet: Arc::default(),
                background: Background::default(),
                launcher: Launcher::default(),
                places: Places::default(),
                proposals: std::sync::Mutex::default(),
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
    /// as the server's `--agent`, else as the agent its token is bound to (else as `http`).
    pub fn request_session(&self, token_agent: Option<&str>) -> Session {
        Session::of(self.client_who("http", token_agent))
    }

    /// Who the clients of this server are on `surface`: the server's `--agent`, else the
    /// agent the client's token is bound to.
    fn client_who(&self, surface: &'static str, token_agent: Option<&str>) -> Who {
        let agent = self.inner.agent.get().map(String::as_str).or(token_agent);
        Who::Client { surface, agent: agent.map(Arc::from) }
    }

    /// The client session of an MCP server that `handle` finds (`live::Handle`), opened
    /// when it has none; `token_agent` is the agent the request's token is bound to.
    pub fn client_session_of(&self, handle: Handle, token_agent: Option<&str>) -> Session {
        self.inner.sessions.of(handle, || self.client_session(token_agent))
    }

    /// Ends the client session of `handle`, which records it.
    pub fn end_session(&self, handle: &Handle) {
        self.inner.sessions.end(handle);
    }

    /// Ends every client session (the server stops), which records each.
    pub fn end_sessions(&self) {
        self.inner.sessions.end_all();
    }

    /// Makes this server speak for its clients as `name` (`--agent`): the writer of what
    /// they add and the verifier of what they verify, whatever names the clients give.
    /// Set once, before the first session; `human` is the person at the command line and
    /// cannot be a server's name.
    pub fn set_agent(&self, name: &str) -> Result<()> {
        super::api::within("--agent", name, super::api::MAX_NAME_CHARS)?;
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
    /// is recorded as a session entry when it ends or goes idle.
    pub fn client_session(&self, token_agent: Option<&str>) -> Session {
        let who = self.client_who("mcp", token_agent);
        if !self.inner.config.sessions.auto {
            return Session::of(who);
        }
        let home = Home { root: self.inner.root.clone(), config: self.inner.config.clone() };
        self.inner.sessions.open(who, home)
    }

    /// Starts the background thread of a long-running process (`mcp`, `serve`, `watch`):
    /// see [`super::background`].
    pub fn start_background(&self) {
        let inner = &self.inner;
        inner.background.start(Work {
            root: inner.root.clone(),
            config: inner.config.clone(),
            sessions: inner.sessions.clone(),
            quiet: inner.quiet.clone(),
        });
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

    /// The index made as fresh as it gets, and whether it may still be behind.
    pub(super) fn fresh(&self) -> Result<(IndexRef<'_>, bool)> {
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
        let _ = self.inner.launcher.with.set((exe, tell));
    }

    /// Starts the watcher of `launch_watchers_with`, once, after a scan of `scanned` files.
    fn launch_watcher(&self, scanned: usize) {
        let watch = &self.inner.config.watch;
        let launcher = &self.inner.launcher;
        let Some((exe, tell)) = launcher.with.get() else { return };
        if !watch.auto
            || scanned == 0
            || scanned < watch.auto_min_files
            || launcher.launched.swap(true, Ordering::Relaxed)
        {
            return;
        }
        match super::autowatch::spawn(exe, self.root(), watch.auto_idle_secs) {
            Ok(None) => tracing::debug!("another query started `tmws watch` in the background"),
            Ok(Some(pid)) => {
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

    /// `f` on the index as a write consults it: a server's as its watcher keeps it (not
    /// waiting for the write itself to be indexed); a command's synced first, since no
    /// process may keep it.
    pub(super) fn as_indexed<A>(&self, f: impl FnOnce(&Index) -> Result<A>) -> Result<A> {
        if !self.serving() {
            return f(&self.fresh()?.0);
        }
        let keeper = self.keeper()?;
        f(&keeper.index())
    }

    /// A search on the index made fresh, timed into `/metrics`; the answer and whether the
    /// index may still be behind.
    pub(super) fn searched<A>(
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

    pub(super) fn pool(&self) -> &Pool {
        self.inner.pool.get_or_init(|| Pool::new(pool::Settings::from_config(&self.inner.config.pool)))
    }

    pub(super) fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    pub(super) fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// Whether this engine serves (`tmws mcp`, `tmws serve`) rather than answers one command.
    pub(super) fn serving(&self) -> bool {
        self.inner.serving
    }

    /// How many syncs of a server's watcher have ended: what a write waits to see grow.
    pub(super) fn commits(&self) -> u64 {
        self.inner.keeper.get().and_then(Keeper::state).map_or(0, |s| s.ends())
    }

    /// A server's index follows the files through its watcher: the answer of a write waits
    /// (briefly) until the index holds what it wrote, so that the next search on any
    /// surface finds it. It wakes at each sync the watcher ends after `commits_before`
    /// (see [`commits`](Self::commits)). An index synced on demand (the CLI) is synced by
    /// the next query.
    pub(super) fn await_indexed(&self, ref_id: &str, commits_before: u64) {
        const WAIT: Duration = Duration::from_secs(2);
        let Ok(keeper) = self.keeper() else { return };
        let Some(state) = keeper.state() else { return };
        let query = crate::index::ItemQuery { ref_ids: vec![ref_id.to_owned()], ..Default::default() };
        let deadline = Instant::now() + WAIT;
        let mut seen = commits_before;
        loop {
            let ends = state.wait_end_after(seen, deadline);
            if ends == seen {
                tracing::debug!("{ref_id} is not indexed yet");
                return;
            }
            seen = ends;
            let index = keeper.index();
            if index.reload().is_err() {
                return;
            }
            if index.items(&query).is_ok_and(|items| !items.is_empty()) {
                return;
            }
        }
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

    /// Runs `tool` with its typed request as the person at the command line: the library's
    /// way to ask one question (`engine.ask(&catalog::Search, &request)`).
    pub fn ask<T: Typed>(&self, tool: &T, req: &T::Request) -> Result<Reply<T::Answer>> {
        let session = self.session();
        tool.run(&Cx { engine: self, session: &session }, req)
    }

    /// Calls the tool `name` with `args` as any surface got them (values as text are read
    /// as the tool's schema says) and answers with its text: the one way every surface runs
    /// a tool.
    pub async fn call(&self, session: &Session, name: &str, args: Map<String, Value>) -> Result<Output> {
        self.call_tool(session, find(name)?, args).await
    }

    /// `call` of a tool in hand.
    pub async fn call_tool(
        &self,
        session: &Session,
        tool: &'static dyn Tool,
        args: Map<String, Value>,
    ) -> Result<Output> {
        self.inner.quiet.touch();
        session.touch(self.root());
        let args = match tool.downstream(Cx { engine: self, session }, args) {
            Ok(called) => return called.await.map(Output::Downstream),
            Err(args) => args,
        };
        // A query waits for the index here, as a future, before it takes a place: under a
        // steady stream of writes most of a query's time is that wait.
        let read_only = tool.spec().hints.read_only;
        let settled = match self.inner.keeper.get() {
            Some(keeper) if read_only => keeper.settle_async().await,
            _ => None,
        };
        let places = if read_only { &self.inner.places.reads } else { &self.inner.places.writes };
        let _place = places.acquire().await.map_err(|e| Error::environment("the request did not start", e))?;
        let (engine, session) = (self.clone(), session.clone());
        tokio::task::spawn_blocking(move || {
            let run = || engine.answer(&session, tool, args).map(|a| a.output());
            match settled {
                Some(stale) => super::keeper::settled_as(stale, run),
                None => run(),
            }
        })
        .await
        .map_err(|e| Error::environment("the request did not finish", e))?
    }

    /// `call` for every tool but those another server answers, on the caller's thread.
    pub fn call_blocking(&self, session: &Session, name: &str, args: Map<String, Value>) -> Result<Output> {
        self.answer(session, find(name)?, args).map(|a| a.output())
    }

    /// Runs `tool` on the caller's thread and gives its answer, typed for a surface that
    /// shows it its own way.
    pub fn answer(&self, session: &Session, tool: &dyn Tool, args: Map<String, Value>) -> Result<Answered> {
        self.inner.quiet.touch();
        session.touch(self.root());
        tool.answer(&Cx { engine: self, session }, args)
    }

    /// What the command line asks a person before it runs a command with `args` (see
    /// [`catalog::Asks`]).
    pub fn question(&self, ask: catalog::Ask, args: &Map<String, Value>) -> Result<String> {
        match ask {
            catalog::Ask::PostTaskSummary => {
                let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
                super::task::post_question(self.root(), self.config(), name)
            }
        }
    }

    /// The last listing of proposals, kept for [`super::review::list`].
    pub(super) fn kept_proposals(&self) -> &std::sync::Mutex<super::review::Kept> {
        &self.inner.proposals
    }

    /// `memory prune --below F`.
    pub fn memory_prune(&self, below: f64) -> Result<Pruned> {
        memory::maint::prune(
            self.root(),
            self.config(),
            below,
            chrono::Utc::now(),
            &Default::default(),
            &crate::memory::op::Author::cli(),
        )
    }

    /// `memory gc-branches`.
    pub fn memory_gc_branches(&self) -> Result<GcBranches> {
        memory::maint::gc_branches(self.root(), self.config(), &Default::default(), &crate::memory::op::Author::cli())
    }

    /// `memory link-commit`.
    pub fn memory_link_commit(&self) -> Result<Linked> {
        memory::maint::link_commit(self.root())
    }

    /// `tmws registry build`: writes the registry and says what happened to each server.
    /// Only servers approved as they are now are started; the caller asks for the others'
    /// approval first (`registry_review`, `registry_grant`).
    /// The index is then brought up to the new registry, here or by the process that keeps
    /// it (see [`super::ask`]), so that a `registry search` right after finds its tools.
    pub fn registry_build(&self, force: bool, timeout: Duration) -> Result<Built> {
        let built = registry::build(self.root(), self.config(), force, timeout)?;
        if !self.serving()
            && let Err(e) = self.sync_or_ask(&SyncOptions::default())
        {
            tracing::warn!("the registry is written, but the index is not up to it yet: {}", crate::error::Chain(&e));
        }
        Ok(built)
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
        trust::verify(self.root(), agent, (HUMAN, false), success, evidence, chrono::Utc::now())
    }

    /// Every agent's trust, highest first.
    pub fn trust_show(&self) -> Vec<Trust> {
        trust::show(self.root())
    }

    /// `tmws model`: the embedding model and the index's vectors, after a sync.
    pub fn model_status(&self) -> Result<super::model::ModelStatus> {
        let (status, _) =
            self.searched(|m| &m.search, |index| super::model::status(self.root(), self.config(), index))?;
        Ok(status)
    }

    /// `tmws git-hook install`; `tmws` is the binary the hook runs.
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

    /// `tmws index`: syncs here, or asks the process that keeps the index to (see
    /// [`super::ask`]).
    pub fn sync_or_ask(&self, opts: &SyncOptions) -> Result<SyncReport> {
        super::ask::sync_or_ask(self.keeper()?, self.root(), self.config(), opts)
    }

    /// Keeps the index in sync with file changes until `stop` is set (`tmws watch`), and
    /// introspects in the background the servers whose client config changed.
    pub fn watch(&self, stop: &AtomicBool, on: impl FnMut(WatchUpdate<'_>)) -> Result<()> {
        self.start_background();
        let watched = self.keeper().and_then(|k| k.watch(self.root(), self.config(), stop, on));
        self.inner.background.stop();
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
                    tracing::warn!("metrics: cannot count the index: {}", e.chain());
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
            lag: Duration::from_millis(health.lag_ms),
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
        let _ = tokio::task::spawn_blocking(move || engine.inner.background.stop()).await;
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

/// The tool called `name`, or an error that lists them.
fn find(name: &str) -> Result<&'static dyn Tool> {
    catalog::find(name)
        .ok_or_else(|| Error::NotFound(format!("no tool `{name}`; tools: {}", catalog::names().join(", "))))
}
