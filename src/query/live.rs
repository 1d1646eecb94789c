//! Sessions while they run: who each speaks for, what it did, and the record it leaves.
//!
//! The CLI and each REST request have a session of their own that records nothing; a
//! client session of an MCP server notes what it does and, when it ends or goes idle,
//! records it as a session entry (`session::record_activity`). [`Sessions`] holds the
//! client sessions alive for the idle sweep of the background thread; a session holds
//! the root and the config it records into, never the engine.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::session::Activity;
use crate::config::Config;
use crate::parse::trust::{HUMAN, normalize};

/// What one session remembers: whether it was sent the context defaults already, who it
/// speaks for, and, for a client session of a server, the client's name from `initialize`.
///
/// Who a session speaks for is an identity the model cannot choose: the person at the
/// command line (`human`), or for a server's session the server's `--agent`, else the
/// client's name, else the surface's name. It is the `agent` of every memory the session
/// adds and the verifier of every verification it records; a tool argument never names it.
#[derive(Debug, Clone, Default)]
pub struct Session {
    defaults_sent: Arc<AtomicBool>,
    client: Arc<OnceLock<String>>,
    who: Who,
    /// What the session did, for the entry recorded when it ends (client sessions of a
    /// server only).
    log: Option<Arc<SessionLog>>,
}

/// Who a session speaks for.
#[derive(Debug, Clone, Default)]
pub(crate) enum Who {
    /// The person at the command line.
    #[default]
    Person,
    /// Clients of a server, on `surface` (`mcp`, `http`), as the server's `--agent` when
    /// it has one.
    Client { surface: &'static str, agent: Option<Arc<str>> },
}

/// The `author` of an op written through `surface` by `client`.
fn author(surface: &str, client: Option<&str>) -> Value {
    let mut author = Map::new();
    author.insert("surface".into(), Value::from(surface));
    if let Some(client) = client {
        author.insert("client".into(), Value::from(client));
    }
    Value::Object(author)
}

/// Where a client session's record goes.
#[derive(Debug, Clone)]
pub(crate) struct Home {
    pub root: PathBuf,
    pub config: Arc<Config>,
}

/// A client session's activity, recorded as a session entry when the session ends (the
/// last handle dropped: stdin closed, HTTP session deleted) or goes idle.
#[derive(Debug)]
struct SessionLog {
    home: Home,
    client: Arc<OnceLock<String>>,
    /// Who the session speaks for, when not its client's name (the server's `--agent`).
    who: Who,
    activity: Mutex<Activity>,
    last_call: Mutex<Instant>,
}

impl SessionLog {
    /// Records what happened since the last record, if anything did.
    fn flush(&self) {
        let activity = std::mem::take(&mut *self.activity.lock().unwrap_or_else(PoisonError::into_inner));
        if activity.is_empty() {
            return;
        }
        // The record is the session's: written as the session's identity, by its surface.
        let session = Session { client: self.client.clone(), who: self.who.clone(), ..Session::default() };
        let (writer, author) = (session.writer(), session.author());
        let by = (Some(writer.as_str()), Some(&author));
        let Home { root, config } = &self.home;
        match super::session::record_activity(root, config, by, &activity, chrono::Utc::now()) {
            Ok(a) => tracing::info!("session recorded: {}", a.summary.unwrap_or_default()),
            Err(e) => tracing::warn!("cannot record the session: {}", e.chain()),
        }
    }

    fn idle_for(&self) -> Duration {
        self.last_call.lock().unwrap_or_else(PoisonError::into_inner).elapsed()
    }
}

impl Drop for SessionLog {
    fn drop(&mut self) {
        self.flush();
    }
}

impl Session {
    /// A session that speaks as `who` and records nothing.
    pub(crate) fn of(who: Who) -> Session {
        Session { who, ..Session::default() }
    }

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

    /// The `author` of what this session writes (filled by tmws, never by the caller): the
    /// surface it came through, and the client's name when it gave one.
    pub fn author(&self) -> Value {
        author(self.surface(), self.client())
    }

    /// Whether the person at the command line speaks here (who may name another agent as
    /// a memory's writer).
    pub(crate) fn is_person(&self) -> bool {
        matches!(self.who, Who::Person)
    }

    /// Whether the context defaults were sent in this session before; from now on they were.
    pub(crate) fn defaults_sent(&self) -> bool {
        self.defaults_sent.swap(true, Ordering::Relaxed)
    }

    /// Notes something the session did.
    pub(crate) fn note(&self, root: &Path, what: impl FnOnce(&mut Activity)) {
        if let Some(log) = &self.log {
            let mut a = log.activity.lock().unwrap_or_else(PoisonError::into_inner);
            a.begin(root);
            what(&mut a);
            *log.last_call.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
        }
    }

    /// A call made: the session is not idle, and its record starts here if this is the
    /// first call since the last record.
    pub(crate) fn touch(&self, root: &Path) {
        self.note(root, |_| {});
    }

    /// `session_record` was called: what happened so far is in that record.
    pub(crate) fn recorded(&self) {
        if let Some(log) = &self.log {
            *log.activity.lock().unwrap_or_else(PoisonError::into_inner) = Activity::default();
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

/// The client sessions alive that record themselves, for the idle sweep.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    live: Mutex<Vec<Weak<SessionLog>>>,
}

impl Sessions {
    /// A new client session that records what it does into `home` when it ends or goes idle.
    pub(crate) fn open(&self, who: Who, home: Home) -> Session {
        let client = Arc::new(OnceLock::new());
        let log = Arc::new(SessionLog {
            home,
            client: client.clone(),
            who: who.clone(),
            activity: Mutex::new(Activity::default()),
            last_call: Mutex::new(Instant::now()),
        });
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.retain(|s| s.strong_count() > 0);
        live.push(Arc::downgrade(&log));
        Session { defaults_sent: Arc::default(), client, who, log: Some(log) }
    }

    /// Records every session that made no call for `idle`.
    pub(crate) fn sweep(&self, idle: Duration) {
        let live: Vec<Arc<SessionLog>> =
            self.live.lock().unwrap_or_else(PoisonError::into_inner).iter().filter_map(Weak::upgrade).collect();
        for log in live {
            if log.idle_for() >= idle {
                log.flush();
            }
        }
    }
}
