//! What the two servers (`tmws mcp`, `tmws serve`) share: the background sync and watcher,
//! freshness, the query calls with their `stale` flag, and the counters `/metrics` shows.
//!
//! The index is opened (not synced) up front, so a server answers at once; a background
//! thread runs the sync and then the watcher, exactly as `tmws watch` does. Queries read
//! the latest commit; while a sync is under way they wait for it at most 200 ms
//! (DESIGN §4) and otherwise answer with `stale: true`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::index::watch::WatchUpdate;
use crate::index::{Index, SearchRequest};
use crate::pool::{self, Pool};
use crate::query::Workspace;
use crate::query::context::{self, ContextRequest};
use crate::query::memory;
use crate::query::tools::{self, Registry, ToolResults, ToolSearch};

use crate::query::STALE_WAIT;

/// What the background sync is doing, for queries to judge freshness.
#[derive(Debug)]
pub struct SyncState {
    /// The first sync finished (or another process keeps the index).
    ready: AtomicBool,
    /// A sync is under way.
    busy: AtomicBool,
    /// When the index last started to fall behind the files (ms since `epoch`).
    behind_since: AtomicU64,
    epoch: Instant,
}

impl Default for SyncState {
    fn default() -> SyncState {
        SyncState {
            ready: AtomicBool::new(false),
            busy: AtomicBool::new(false),
            behind_since: AtomicU64::new(0),
            epoch: Instant::now(),
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
        if !self.busy.swap(true, Ordering::AcqRel) {
            self.behind_since.store(self.now_ms(), Ordering::Release);
        }
    }

    fn set_done(&self) {
        self.ready.store(true, Ordering::Release);
        self.busy.store(false, Ordering::Release);
    }

    /// How long the index has been behind the files (zero when it is fresh).
    pub fn lag(&self) -> Duration {
        if self.fresh() {
            return Duration::ZERO;
        }
        Duration::from_millis(self.now_ms().saturating_sub(self.behind_since.load(Ordering::Acquire)))
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}

/// The background half of a server: the watcher thread and its stop flag.
#[derive(Debug)]
pub struct Background {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    /// Opens the root's index for writing (when free) and starts the sync and the watcher
    /// in a thread. Returns at once.
    pub fn start(root: &Path, state: Arc<SyncState>) -> Result<Background> {
        let mut ws = Workspace::open(root)?;
        if let Some(why) = ws.rebuilt_on_open() {
            tracing::warn!("rebuilt the index from the files: {why}");
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        state.set_busy();
        let thread = std::thread::Builder::new()
            .name("tmws-watch".into())
            .spawn(move || {
                let result = ws.watch(&flag, |update| match update {
                    WatchUpdate::Syncing => state.set_busy(),
                    WatchUpdate::Synced(r) => {
                        state.set_done();
                        tracing::info!("synced {} files in {} ms", r.files, r.millis);
                        // A whole sync's scratch memory is freed now: give it back, so an
                        // idle server holds only what it uses (DESIGN §11).
                        crate::sys::release_free_memory();
                    }
                    WatchUpdate::Applied(r) => {
                        for (path, what) in &r.changes {
                            tracing::info!("{what} {path} (synced in {} ms)", r.millis);
                        }
                        state.set_done();
                    }
                    WatchUpdate::Following | WatchUpdate::TookOver => state.set_done(),
                    WatchUpdate::ClientConfigs => {
                        tracing::info!("a client config changed: introspecting changed servers in the background");
                    }
                    WatchUpdate::Failed(e) => {
                        tracing::warn!("index sync failed: {e} (the whole root is synced again shortly)");
                        state.busy.store(false, Ordering::Release);
                    }
                });
                if let Err(e) = result {
                    tracing::error!("the index watcher stopped: {e}");
                }
                state.set_done();
            })
            .map_err(|e| Error::Environment(format!("cannot start the watcher thread: {e}")))?;
        Ok(Background { stop, thread: Some(thread) })
    }

    /// Stops the watcher (it commits what it applied) and waits for it.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Upper bounds (seconds) of the latency histograms' buckets.
const BUCKETS: [f64; 11] = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0];

/// A Prometheus histogram of latencies.
#[derive(Debug, Default)]
struct Histogram {
    /// Per bucket (not cumulative), the last one for over a second.
    counts: [AtomicU64; BUCKETS.len() + 1],
    sum_micros: AtomicU64,
}

impl Histogram {
    fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let i = BUCKETS.iter().position(|&b| secs <= b).unwrap_or(BUCKETS.len());
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add(u64::try_from(d.as_micros()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut total = 0;
        for (i, bound) in BUCKETS.iter().enumerate() {
            total += self.counts[i].load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {total}");
        }
        total += self.counts[BUCKETS.len()].load(Ordering::Relaxed);
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {total}\n{name}_sum {sum}\n{name}_count {total}");
    }
}

/// Counters of one server process.
#[derive(Debug, Default)]
pub struct Metrics {
    search: Histogram,
    context: Histogram,
    /// Starting a downstream server for a call (lazy connect).
    connect: Histogram,
    tool_calls_ok: AtomicU64,
    tool_calls_failed: AtomicU64,
    stale_answers: AtomicU64,
    defaults_redundant: AtomicU64,
    /// HTTP requests by (route, status).
    requests: Mutex<BTreeMap<(String, u16), u64>>,
}

impl Metrics {
    pub fn count_request(&self, route: &str, status: u16) {
        let mut requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        *requests.entry((route.to_owned(), status)).or_default() += 1;
    }
}

/// One root served: the index reader, the sync state, the counters.
#[derive(Debug, Clone)]
pub struct Service {
    root: PathBuf,
    config: Arc<Config>,
    index: Arc<Index>,
    state: Arc<SyncState>,
    metrics: Arc<Metrics>,
    registry: Arc<Registry>,
    pool: Pool,
}

impl Service {
    /// Starts the background sync and watcher of `root` and opens a reader beside it.
    pub fn start(root: &Path) -> Result<(Service, Background)> {
        let state = Arc::new(SyncState::default());
        let background = Background::start(root, state.clone())?;
        let index = Index::open_reader(root)?;
        let config = Config::load(root)?;
        let service = Service {
            root: root.to_path_buf(),
            pool: Pool::new(pool::Settings::from_config(&config.pool)),
            config: Arc::new(config),
            index: Arc::new(index),
            state,
            metrics: Arc::new(Metrics::default()),
            registry: Arc::new(Registry::new(root)),
        };
        Ok((service, background))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn state(&self) -> &SyncState {
        &self.state
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The downstream connections of this process.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Waits (at most `STALE_WAIT`) for a running sync, then makes the latest commit
    /// visible. Returns whether the index may be behind the files.
    async fn settle(&self) -> Result<bool> {
        // Fresh: our own watcher is idle and no writer (ours or another process's) is
        // applying changes.
        let fresh = || self.state.fresh() && !self.index.sync_pending();
        let deadline = Instant::now() + STALE_WAIT;
        while !fresh() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.index.reload()?;
        let stale = !fresh();
        if stale {
            self.metrics.stale_answers.fetch_add(1, Ordering::Relaxed);
        }
        Ok(stale)
    }

    /// `workspace_get_context` on the latest commit.
    pub async fn context(&self, req: &ContextRequest) -> Result<Value> {
        let stale = self.settle().await?;
        let started = Instant::now();
        let answer = context::get_context(&self.root, &self.index, req, stale);
        self.metrics.context.observe(started.elapsed());
        answer
    }

    /// `workspace_search` on the latest commit; `stale: true` is added when it applies.
    pub async fn search(&self, req: &SearchRequest) -> Result<Value> {
        let stale = self.settle().await?;
        let started = Instant::now();
        let results = self.index.search(req);
        self.metrics.search.observe(started.elapsed());
        let mut results = results?;
        results.stale = stale;
        serde_json::to_value(results).map_err(|e| Error::Usage(e.to_string()))
    }

    /// `memory_add`: appended under the log's lock; the watcher indexes it, and queries
    /// wait for that (read-your-writes).
    pub fn memory_add(&self, req: &memory::AddRequest) -> Result<Value> {
        let answer = memory::add(&self.root, &self.config, req, chrono::Utc::now())?;
        serde_json::to_value(answer).map_err(|e| Error::Usage(e.to_string()))
    }

    /// `memory_search` on the latest commit.
    pub async fn memory_search(&self, req: &memory::MemorySearch) -> Result<Value> {
        let stale = self.settle().await?;
        let started = Instant::now();
        let v = memory::search(&self.root, &self.config, &self.index, req);
        self.metrics.search.observe(started.elapsed());
        let mut v = v?;
        if stale {
            v["stale"] = Value::Bool(true);
        }
        Ok(v)
    }

    /// `memory_get`.
    pub async fn memory_get(&self, id: &str, include_content: bool) -> Result<Value> {
        self.settle().await?;
        memory::get(&self.root, &self.index, id, include_content)
    }

    /// `memory_delete`.
    pub async fn memory_delete(&self, id: &str) -> Result<Value> {
        self.settle().await?;
        memory::delete(&self.root, &self.config, &self.index, id)
    }

    /// `memory_stats`, with the count of redundant context defaults of this process.
    pub async fn memory_stats(&self) -> Result<Value> {
        memory::stats(&self.root, &self.config, Some(self.defaults_redundant()))
    }

    /// `memory_cleanup`: every log compacted, expired entries out.
    pub fn memory_cleanup(&self) -> Result<Value> {
        memory::maint::cleanup(&self.root, &self.config)
    }

    /// `memory_clear`: refuses without `confirm`.
    pub fn memory_clear(&self, namespace: Option<&str>, all: bool, confirm: bool) -> Result<Value> {
        memory::maint::clear(&self.root, &self.config, namespace, all, confirm)
    }

    /// `session_record`: one long-term session entry for the window.
    pub fn session_record(&self, since: Option<&str>, agent: Option<&str>) -> Result<Value> {
        crate::query::session::record(&self.root, &self.config, since, agent, chrono::Utc::now())
    }

    /// `tool_search` on the latest commit: no downstream server is contacted.
    pub async fn tool_search(&self, req: &ToolSearch) -> Result<Value> {
        let stale = self.settle().await?;
        let started = Instant::now();
        let answer = tools::search(&self.index, &self.registry, req);
        self.metrics.search.observe(started.elapsed());
        let mut answer: ToolResults = answer?;
        answer.stale = stale;
        serde_json::to_value(answer).map_err(|e| Error::Usage(e.to_string()))
    }

    /// `tool_describe`, from the registry file: no downstream server is contacted.
    pub fn tool_describe(&self, server: &str, tool: &str) -> Result<Value> {
        tools::describe(&self.registry, server, tool)
    }

    /// `tool_call` through the pool: the downstream result, verbatim.
    pub async fn tool_call(
        &self,
        server: &str,
        tool: &str,
        arguments: serde_json::Map<String, Value>,
    ) -> Result<rmcp::model::CallToolResult> {
        let answer = tools::call(&self.root, &self.config, &self.registry, &self.pool, server, tool, arguments).await;
        let m = &self.metrics;
        match &answer {
            Ok(called) => {
                if let Some(d) = called.started {
                    m.connect.observe(d);
                }
                if called.result.is_error == Some(true) { &m.tool_calls_failed } else { &m.tool_calls_ok }
                    .fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                m.tool_calls_failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        answer.map(|c| c.result)
    }

    /// Notes that a session asked again for the context defaults it was already sent.
    pub fn count_redundant_defaults(&self) {
        self.metrics.defaults_redundant.fetch_add(1, Ordering::Relaxed);
    }

    /// How often sessions of this process asked again for defaults they had been sent.
    pub fn defaults_redundant(&self) -> u64 {
        self.metrics.defaults_redundant.load(Ordering::Relaxed)
    }

    /// The counters in Prometheus' text format.
    pub fn metrics_text(&self) -> String {
        let mut out = String::new();
        let m = &self.metrics;
        let gauge = |out: &mut String, name: &str, help: &str, value: String| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}");
        };
        gauge(
            &mut out,
            "tmws_index_ready",
            "1 once the first sync has finished.",
            u8::from(self.state.is_ready()).to_string(),
        );
        gauge(
            &mut out,
            "tmws_index_lag_seconds",
            "How long the index has been behind the files (0 when fresh).",
            self.state.lag().as_secs_f64().to_string(),
        );
        let _ = self.index.reload();
        match self.index.counts() {
            Ok(counts) => {
                out.push_str("# HELP tmws_index_items Items in the index by kind.\n# TYPE tmws_index_items gauge\n");
                for (kind, n) in &counts.kinds {
                    let _ = writeln!(out, "tmws_index_items{{kind=\"{}\"}} {n}", label(kind));
                }
                out.push_str(
                    "# HELP tmws_memory_entries Live memory entries by namespace.\n# TYPE tmws_memory_entries gauge\n",
                );
                for (ns, n) in &counts.namespaces {
                    let _ = writeln!(out, "tmws_memory_entries{{namespace=\"{}\"}} {n}", label(ns));
                }
            }
            Err(e) => tracing::warn!("metrics: cannot count the index: {e}"),
        }
        m.search.render(&mut out, "tmws_search_latency_seconds", "workspace_search time in the index.");
        m.context.render(&mut out, "tmws_context_latency_seconds", "workspace_get_context time in the index.");
        gauge(
            &mut out,
            "tmws_pool_size",
            "Downstream MCP server processes alive (connected, starting or closing).",
            self.pool.size().to_string(),
        );
        m.connect.render(
            &mut out,
            "tmws_pool_connect_latency_seconds",
            "Lazy connects: from a tool_call to the downstream server's initialize answer.",
        );
        let counter = |out: &mut String, name: &str, help: &str, value: u64| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}");
        };
        counter(
            &mut out,
            "tmws_stale_answers_total",
            "Answers given while the index was behind the files.",
            m.stale_answers.load(Ordering::Relaxed),
        );
        counter(
            &mut out,
            "tmws_defaults_redundant_total",
            "Context defaults asked for again within a session.",
            m.defaults_redundant.load(Ordering::Relaxed),
        );
        let _ = writeln!(
            out,
            "# HELP tmws_tool_calls_total tool_call calls by outcome.\n# TYPE tmws_tool_calls_total counter\n\
tmws_tool_calls_total{{ok=\"true\"}} {}\ntmws_tool_calls_total{{ok=\"false\"}} {}",
            m.tool_calls_ok.load(Ordering::Relaxed),
            m.tool_calls_failed.load(Ordering::Relaxed)
        );
        let requests = m.requests.lock().unwrap_or_else(|e| e.into_inner());
        if !requests.is_empty() {
            out.push_str("# HELP tmws_http_requests_total HTTP requests by route and status.\n");
            out.push_str("# TYPE tmws_http_requests_total counter\n");
            for ((route, status), n) in requests.iter() {
                let _ = writeln!(out, "tmws_http_requests_total{{route=\"{}\",status=\"{status}\"}} {n}", label(route));
            }
        }
        out
    }
}

/// A Prometheus label value, escaped.
fn label(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}
