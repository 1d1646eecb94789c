//! The lazy connection pool (docs/pool.md): a downstream server is started on the first call
//! of one of its tools and kept for the next ones, within limits.
//!
//! - At most `max_size` processes exist at any moment (started, serving, or being closed):
//!   a start first makes room by closing the least recently used connection that is
//!   neither persistent nor busy (the one idle longest, so those idle past `grace_secs`
//!   always go first), so that calls one after another to any number of servers all
//!   succeed. Only when every place is busy or persistent does a start wait for one to come
//!   free, up to `queue_timeout`, and then fail with "pool exhausted". A closed
//!   connection's process (and on Linux everything it started) is reaped before its place
//!   is given to another.
//! - A connection expires `ttl` after its last use (`persistent` ones never); a sweep task
//!   closes expired ones, waking at the earliest expiry and at least every `sweep_every`.
//! - Concurrent calls to a cold server start it once (one start lock per server).
//! - A call has a timeout. A server that cannot start, dies during a call or does not
//!   answer in time gives an error with the tail of its stderr, and is closed; the next
//!   call starts it again. A JSON-RPC error answer is only an error: the server stays.
//! - A server that sends a message over the 16 MiB limit is closed, and the call says so.
//! - `shutdown` closes everything; stdio servers also see their stdin close when tmws
//!   exits however it exits, which is how MCP tells a server to stop, and on Linux their
//!   supervisors end what is left.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{Peer, RunningService, ServiceError};
use serde_json::{Map, Value};
use tokio::sync::Notify;

use super::{StderrTail, over_limit, start};
use crate::config::PoolConfig;
use crate::parse::clients::Connection;

/// The pool's limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub max_size: usize,
    pub default_ttl: Duration,
    pub call_timeout: Duration,
    /// How long a start waits for a place when every one is busy or persistent.
    pub queue_timeout: Duration,
    pub sweep_every: Duration,
}

impl Settings {
    pub fn from_config(c: &PoolConfig) -> Settings {
        Settings {
            max_size: c.max_size.clamp(1, crate::config::POOL_HARD_CAP),
            default_ttl: Duration::from_secs(c.default_ttl_secs),
            call_timeout: Duration::from_secs(c.call_timeout_secs),
            queue_timeout: Duration::from_secs(c.queue_timeout_secs),
            sweep_every: Duration::from_secs(60),
        }
    }
}

/// The server a call goes to.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    pub server: &'a str,
    /// The live connection (with `${VAR}` references still to fill).
    pub connection: &'a Connection,
    pub persistent: bool,
    /// The server's own TTL (else the pool's default).
    pub ttl: Option<Duration>,
    /// Where and how its process starts.
    pub exec: &'a super::Exec,
    /// What the user approved of it (a hash of what it runs): a live connection started
    /// under another approval (its script changed and was approved again) is closed and
    /// started again.
    pub approval: &'a str,
}

/// A call's answer.
#[derive(Debug, Clone)]
pub struct Called {
    /// The downstream result, verbatim.
    pub result: CallToolResult,
    /// How long starting the server took, when this call started it.
    pub started: Option<Duration>,
}

/// A server the pool holds a connection to (`Pool::live`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveServer {
    pub server: String,
    /// Calls under way on it.
    pub in_flight: usize,
    /// How long since its last call ended.
    pub idle: Duration,
    /// Kept open whatever its idle time (`persistent` in its registry entry).
    pub persistent: bool,
}

/// A live connection.
#[derive(Debug)]
struct Live {
    id: u64,
    client: RunningService<RoleClient, ()>,
    peer: Peer<RoleClient>,
    stderr: StderrTail,
    drained: Option<tokio::task::JoinHandle<()>>,
    oversized: Arc<AtomicU8>,
    last_used: Instant,
    in_flight: usize,
    persistent: bool,
    ttl: Duration,
    /// The approval it was started under.
    approval: String,
}

impl Live {
    fn expired(&self, now: Instant) -> bool {
        !self.persistent && self.in_flight == 0 && now.duration_since(self.last_used) >= self.ttl
    }

    fn expiry(&self) -> Option<Instant> {
        (!self.persistent && self.in_flight == 0).then(|| self.last_used + self.ttl)
    }
}

/// A place counted in the pool's processes, given back when dropped unless a live connection
/// keeps it: a call cancelled while its server starts or closes leaks no place.
#[derive(Debug)]
struct Place {
    inner: Arc<Inner>,
    held: bool,
}

impl Place {
    fn keep(mut self) {
        self.held = false;
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if self.held {
            let mut n = lock(&self.inner.processes);
            *n = n.saturating_sub(1);
            drop(n);
            self.inner.freed.notify_waiters();
        }
    }
}

/// A call under way on a connection: marks it busy until dropped (also when the call is
/// cancelled), so that it is neither evicted nor expired meanwhile, and never stays busy.
#[derive(Debug)]
struct Busy {
    slot: Arc<Slot>,
    id: u64,
    inner: Arc<Inner>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(l) = lock(&self.slot.live).as_mut().filter(|l| l.id == self.id) {
            l.in_flight = l.in_flight.saturating_sub(1);
            l.last_used = Instant::now();
        }
        self.inner.wake.notify_one();
        // An idle connection can be closed to make room for a start that waits.
        self.inner.freed.notify_waiters();
    }
}

/// A connection checked out for a call.
#[derive(Debug)]
struct Checkout {
    id: u64,
    peer: Peer<RoleClient>,
    stderr: StderrTail,
    oversized: Arc<AtomicU8>,
    /// How long starting the server took, when this call started it.
    started: Option<Duration>,
}

/// One server's place in the pool.
#[derive(Debug, Default)]
struct Slot {
    /// Held while the server starts: concurrent calls wait for that one start.
    starting: tokio::sync::Mutex<()>,
    live: Mutex<Option<Live>>,
}

#[derive(Debug)]
struct Inner {
    settings: Settings,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    /// Processes that exist: live, being started, or being closed.
    processes: Mutex<usize>,
    /// Held while a start makes room, so that two starts never both take the last place.
    admission: tokio::sync::Mutex<()>,
    next_id: AtomicU64,
    sweeping: AtomicBool,
    /// Wakes the sweep when a connection's expiry moved.
    wake: Arc<Notify>,
    /// Wakes starts that wait for a place: a place was given back or a connection went idle.
    freed: Notify,
}

/// The pool of downstream connections of one tmws process.
#[derive(Debug, Clone)]
pub struct Pool {
    inner: Arc<Inner>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Pool {
    pub fn new(settings: Settings) -> Pool {
        Pool {
            inner: Arc::new(Inner {
                settings,
                slots: Mutex::new(HashMap::new()),
                processes: Mutex::new(0),
                admission: tokio::sync::Mutex::new(()),
                next_id: AtomicU64::new(1),
                sweeping: AtomicBool::new(false),
                wake: Arc::new(Notify::new()),
                freed: Notify::new(),
            }),
        }
    }

    /// How many downstream processes exist now (live, starting or closing).
    pub fn size(&self) -> usize {
        *lock(&self.inner.processes)
    }

    /// The servers with a live connection now, by name: what a status page shows.
    pub fn live(&self) -> Vec<LiveServer> {
        let now = Instant::now();
        let slots: Vec<(String, Arc<Slot>)> =
            lock(&self.inner.slots).iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let mut out: Vec<LiveServer> = slots
            .into_iter()
            .filter_map(|(server, slot)| {
                let live = lock(&slot.live);
                let l = live.as_ref()?;
                Some(LiveServer {
                    server,
                    in_flight: l.in_flight,
                    idle: now.saturating_duration_since(l.last_used),
                    persistent: l.persistent,
                })
            })
            .collect();
        out.sort_by(|a, b| a.server.cmp(&b.server));
        out
    }

    fn slot(&self, server: &str) -> Arc<Slot> {
        lock(&self.inner.slots).entry(server.to_owned()).or_default().clone()
    }

    /// Calls `tool` of the target server with `arguments`, starting the server if needed.
    pub async fn call(&self, target: &Target<'_>, tool: &str, arguments: Map<String, Value>) -> Result<Called, String> {
        let slot = self.slot(target.server);
        let c = self.checkout(&slot, target).await?;
        let busy = Busy { slot: slot.clone(), id: c.id, inner: self.inner.clone() };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let timeout = self.inner.settings.call_timeout;
        let answer = tokio::time::timeout(timeout, c.peer.call_tool(params)).await;
        drop(busy);
        if !matches!(answer, Ok(Ok(_)) | Ok(Err(ServiceError::McpError(_)))) {
            self.close_broken(&slot, c.id).await;
        }
        let (server, stderr, started) = (target.server, c.stderr, c.started);
        match answer {
            Ok(Ok(result)) => Ok(Called { result, started }),
            Ok(Err(ServiceError::McpError(e))) => {
                Err(format!("{server} answered {tool} with error {}: {}", e.code.0, e.message))
            }
            Ok(Err(e)) => Err(match over_limit(&c.oversized) {
                Some(why) => {
                    format!("{server} {why} in its answer to {tool}; it was stopped, the next call starts it again")
                }
                None => stderr.explain(&format!(
                    "{server} stopped during the call of {tool} ({e}); the next call starts it again"
                )),
            }),
            Err(_) => Err(stderr.explain(&format!(
                "{server} did not answer {tool} within {} s; it was stopped, the next call starts it again",
                timeout.as_secs_f64()
            ))),
        }
    }

    /// The live connection of the slot, started if there is none; marked busy.
    async fn checkout(&self, slot: &Arc<Slot>, target: &Target<'_>) -> Result<Checkout, String> {
        if let Some(got) = Self::reuse(slot, target.approval) {
            return Ok(got);
        }
        let _starting = slot.starting.lock().await;
        if let Some(got) = Self::reuse(slot, target.approval) {
            return Ok(got);
        }
        // A connection that died since, or that runs what was approved before: close it
        // (reap the process) first.
        let old = lock(&slot.live).take();
        if let Some(old) = old {
            self.close(old).await;
        }
        let place = self.admit(target.server).await?;
        let began = Instant::now();
        // On failure the place goes back as `place` drops.
        let s = start(target.connection, target.exec, self.inner.settings.call_timeout)
            .await
            .map_err(|why| format!("{} could not be started: {why}", target.server))?;
        let took = began.elapsed();
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let checkout = Checkout {
            id,
            peer: s.client.peer().clone(),
            stderr: s.stderr.clone(),
            oversized: s.oversized.clone(),
            started: Some(took),
        };
        *lock(&slot.live) = Some(Live {
            id,
            peer: checkout.peer.clone(),
            client: s.client,
            stderr: s.stderr,
            drained: s.drained,
            oversized: s.oversized,
            last_used: Instant::now(),
            in_flight: 1,
            persistent: target.persistent,
            ttl: target.ttl.unwrap_or(self.inner.settings.default_ttl),
            approval: target.approval.to_owned(),
        });
        place.keep();
        self.start_sweep();
        Ok(checkout)
    }

    /// The slot's connection, if it is open and runs what is approved now; marked busy.
    fn reuse(slot: &Slot, approval: &str) -> Option<Checkout> {
        let mut live = lock(&slot.live);
        let l = live
            .as_mut()
            .filter(|l| !l.client.is_closed() && !l.peer.is_transport_closed() && l.approval == approval)?;
        l.in_flight += 1;
        l.last_used = Instant::now();
        Some(Checkout {
            id: l.id,
            peer: l.peer.clone(),
            stderr: l.stderr.clone(),
            oversized: l.oversized.clone(),
            started: None,
        })
    }

    /// Closes the connection `id` of the slot after a call showed it broken.
    async fn close_broken(&self, slot: &Slot, id: u64) {
        let broken = {
            let mut live = lock(&slot.live);
            if live.as_ref().is_some_and(|l| l.id == id) { live.take() } else { None }
        };
        if let Some(mut l) = broken {
            // The error shows the stderr tail: read it to its end (the process is gone).
            let drained = l.drained.take();
            self.close(l).await;
            if let Some(d) = drained {
                let _ = tokio::time::timeout(Duration::from_secs(1), d).await;
            }
        }
    }

    /// Takes a place for a new process: a free one, else one made by closing the least
    /// recently used idle connection, else the first to come free within the queue
    /// timeout. Starts queue for places in the order they asked.
    async fn admit(&self, server: &str) -> Result<Place, String> {
        let settings = &self.inner.settings;
        let deadline = tokio::time::Instant::now() + settings.queue_timeout;
        let exhausted = || {
            format!(
                "pool exhausted: all {} places are held by servers that are busy or persistent, and none came free \
within {} s; cannot start {server}",
                settings.max_size,
                settings.queue_timeout.as_secs()
            )
        };
        let Ok(_admission) = tokio::time::timeout_at(deadline, self.inner.admission.lock()).await else {
            return Err(exhausted());
        };
        loop {
            // Listening before looking, so that a place freed in between is not missed.
            let freed = self.inner.freed.notified();
            let mut freed = std::pin::pin!(freed);
            freed.as_mut().enable();
            {
                let mut n = lock(&self.inner.processes);
                if *n < settings.max_size {
                    *n += 1;
                    return Ok(Place { inner: self.inner.clone(), held: true });
                }
            }
            if let Some((name, live)) = self.victim() {
                tracing::info!("pool full: closing {name} (least recently used)");
                self.close(live).await;
                continue;
            }
            if tokio::time::timeout_at(deadline, freed).await.is_err() {
                return Err(exhausted());
            }
        }
    }

    /// Takes out the least recently used connection that may be closed: not persistent, not
    /// busy. (The least recently used is the one idle longest, so any idle past the grace
    /// period goes before one used within it.)
    fn victim(&self) -> Option<(String, Live)> {
        let slots = lock(&self.inner.slots);
        let mut best: Option<(Instant, &String, &Arc<Slot>)> = None;
        for (name, slot) in slots.iter() {
            let live = lock(&slot.live);
            let Some(l) = live.as_ref() else { continue };
            if l.persistent || l.in_flight > 0 {
                continue;
            }
            if best.is_none_or(|(t, _, _)| l.last_used < t) {
                best = Some((l.last_used, name, slot));
            }
        }
        let (_, name, slot) = best?;
        let l = lock(&slot.live).take()?;
        Some((name.clone(), l))
    }

    /// Closes a connection: stdin closed, the process (on Linux its supervisor, once
    /// everything the server started is gone) waited for, then terminated, then killed;
    /// its place given back.
    async fn close(&self, live: Live) {
        // Given back when the process is gone, or if this close is cancelled half-way.
        let _place = Place { inner: self.inner.clone(), held: true };
        let _ = live.client.cancel().await;
    }

    /// Starts the sweep of expired connections, once.
    fn start_sweep(&self) {
        if self.inner.sweeping.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let notify = self.inner.wake.clone();
        tokio::spawn(async move {
            loop {
                let wake = notify.notified();
                let Some(inner) = weak.upgrade() else { return };
                let pool = Pool { inner };
                let wait = pool.sweep().await;
                // The pool may go away while the sweep sleeps.
                drop(pool);
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = wake => {}
                }
            }
        });
    }

    /// Closes the expired connections; returns how long until the next one expires.
    async fn sweep(&self) -> Duration {
        let now = Instant::now();
        let mut expired = Vec::new();
        let mut next = self.inner.settings.sweep_every;
        {
            let slots = lock(&self.inner.slots);
            for (name, slot) in slots.iter() {
                let mut live = lock(&slot.live);
                match live.as_ref() {
                    Some(l) if l.expired(now) => {
                        if let Some(l) = live.take() {
                            expired.push((name.clone(), l));
                        }
                    }
                    Some(l) => {
                        if let Some(at) = l.expiry() {
                            next = next.min(at.saturating_duration_since(now));
                        }
                    }
                    None => {}
                }
            }
        }
        for (name, l) in expired {
            tracing::info!("pool: closing {name} (idle for its TTL of {} s)", l.ttl.as_secs_f64());
            self.close(l).await;
        }
        next.max(Duration::from_millis(5))
    }

    /// Closes every connection (tmws is exiting), all at once.
    pub async fn shutdown(&self) {
        let all: Vec<Live> = {
            let slots = lock(&self.inner.slots);
            slots.values().filter_map(|s| lock(&s.live).take()).collect()
        };
        let closing: Vec<_> = all
            .into_iter()
            .map(|l| {
                let pool = self.clone();
                tokio::spawn(async move { pool.close(l).await })
            })
            .collect();
        for c in closing {
            let _ = c.await;
        }
    }
}
