//! Sessions while they run: who each speaks for, what it did, and the record it leaves.
//!
//! The CLI and each REST request have a session of their own that records nothing; a
//! client session of an MCP server notes what it does and, when it ends or goes idle,
//! records it as a session entry (`session::record_activity`). [`Sessions`] holds the
//! client sessions alive for the idle sweep of the background thread; a session holds
//! the root and the config it records into, never the engine.
//!
//! A client session is found by a [`Handle`] the client cannot mistake for another's: the
//! session id it sends (`Mcp-Session-Id` on the legacy HTTP handshake), else the client
//! it says it is on each request (`_meta` clientInfo of the stateless protocol, or the
//! handshake's `clientInfo` over stdio) with the agent it is bound to, else a `session`
//! handle the server minted. The connection a request came on never decides it: on the
//! stateless protocol every request may come on a new one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::session::Activity;
use crate::config::Config;
use crate::layout::SESSIONS_DIR;
use crate::parse::trust::{HUMAN, normalize};
use crate::store;

/// What one session remembers: whether it was sent the context defaults already, who it
/// speaks for, and, for a client session of a server, the client's name from `initialize`.
///
/// Who a session speaks for comes first from what the model cannot choose: the person at
/// the command line (`human`), or for a server's session the server's `--agent`, else the
/// agent the HTTP token is bound to; only then the client's self-reported name (labelled
/// so where it is recorded), else the surface's name. It is the `agent` of every memory
/// the session adds and the verifier of every verification it records; a tool argument
/// never names it.
#[derive(Debug, Clone, Default)]
pub struct Session {
    defaults_sent: Arc<AtomicBool>,
    client: Arc<OnceLock<String>>,
    who: Who,
    /// What the session did, for the entry recorded when it ends (client sessions of a
    /// server only).
    log: Option<Arc<SessionLog>>,
    /// The client session's id, unique on this machine (when it started, the process and
    /// its count of sessions): the `session` of the `author` of everything it writes, its
    /// own record included, so that each names the session it came from.
    id: Option<Arc<str>>,
}

/// Who a session speaks for.
#[derive(Debug, Clone, Default)]
pub(crate) enum Who {
    /// The person at the command line.
    #[default]
    Person,
    /// Clients of a server, on `surface` (`mcp`, `http`), as `agent` when the server's
    /// configuration names one: its `--agent`, else the agent its HTTP token is bound to.
    Client { surface: &'static str, agent: Option<Arc<str>> },
}

/// The name of the MCP library tmws is built on, which it gives as the client of a
/// request whose client said nothing: never a client's name.
const LIBRARY: &str = "rmcp";

/// What a client session is found by (see the module's doc).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Handle {
    /// The session id the client sends (`Mcp-Session-Id`).
    Id(String),
    /// The client as it says it is on each request, on a surface, bound to an agent.
    Client { surface: &'static str, agent: Option<String>, name: String, version: String },
    /// A `session` handle the server minted for a client that gave neither.
    Minted(String),
}

impl Handle {
    /// Whether the session ends only by going idle (no client ever says it is done).
    fn ends_idle(&self) -> bool {
        !matches!(self, Handle::Id(_))
    }
}

/// The `author` of an op written through `surface` by `client` in client session `session`.
fn author(surface: &str, client: Option<&str>, session: Option<&str>) -> Value {
    let mut author = Map::new();
    author.insert("surface".into(), Value::from(surface));
    if let Some(client) = client {
        author.insert("client".into(), Value::from(client));
    }
    if let Some(session) = session {
        author.insert("session".into(), Value::from(session));
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
    /// Where what the session did so far is kept until it is recorded (see [`recover`]).
    journal: PathBuf,
    client: Arc<OnceLock<String>>,
    /// Who the session speaks for, when not its client's name (the server's `--agent`).
    who: Who,
    /// The session's id ([`Session::author`]).
    id: Arc<str>,
    activity: Mutex<Activity>,
    last_call: Mutex<Instant>,
}

/// What a client session did so far, as its journal keeps it: the makings of its record,
/// and who writes it.
#[derive(Debug, Serialize, Deserialize)]
struct Journal<A> {
    writer: String,
    author: Value,
    /// When the session last made a call: the end of its record if it is recovered.
    last: DateTime<Utc>,
    activity: A,
}

/// The number of the next journal this process opens.
static JOURNALS: AtomicU64 = AtomicU64::new(0);

impl SessionLog {
    /// The writer and the `author` of the session's record: the session's identity, by its
    /// surface.
    fn by(&self) -> (String, Value) {
        let session = Session {
            client: self.client.clone(),
            who: self.who.clone(),
            id: Some(self.id.clone()),
            ..Session::default()
        };
        (session.writer(), session.author())
    }

    /// Records what happened since the last record, if anything did.
    fn flush(&self) {
        let activity = std::mem::take(&mut *self.activity.lock().unwrap_or_else(PoisonError::into_inner));
        if activity.is_empty() {
            self.forget();
            return;
        }
        let (writer, author) = self.by();
        let by = (Some(writer.as_str()), Some(&author));
        let Home { root, config } = &self.home;
        match super::session::record_activity(root, config, by, &activity, true, Utc::now()) {
            Ok(a) => {
                self.forget();
                match a.recorded {
                    true => tracing::info!("session recorded: {}", a.summary.unwrap_or_default()),
                    false => tracing::info!("session not recorded: {}", a.why.unwrap_or_default()),
                }
            }
            // The journal stays for the next process to record.
            Err(e) => tracing::warn!("cannot record the session: {}", e.chain()),
        }
    }

    /// Keeps `activity`, all the session did so far, in its journal: a server killed before
    /// it can record the session (an agent that sends SIGKILL right after SIGTERM) leaves it
    /// for the next tmws process to record. Not synced: a journal is lost only with the
    /// machine, and it is a cache.
    fn keep(&self, activity: &Activity) {
        let (writer, author) = self.by();
        let journal = Journal { writer, author, last: Utc::now(), activity };
        let root = &self.home.root;
        let kept = serde_json::to_vec(&journal).map_err(|e| crate::error::Error::environment("session journal", e));
        let kept = kept.and_then(|bytes| store::write_marker(root, &self.journal, &bytes));
        if let Err(e) = kept {
            tracing::debug!("cannot keep the session's journal: {}", e.chain());
        }
    }

    /// Removes the journal: what it held is recorded, or nothing is left to record.
    fn forget(&self) {
        if store::exists(&self.journal) {
            let _ = store::remove_file(&self.journal);
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

    /// Names the session's client, once: the name it reports for itself. The MCP
    /// library's own name, which stands in for a client that gave none, names nobody.
    pub fn set_client(&self, name: &str) {
        let name = name.trim();
        if !name.is_empty() && normalize(name) != LIBRARY {
            let _ = self.client.set(name.to_owned());
        }
    }

    /// The client's name, when it gave one.
    pub fn client(&self) -> Option<&str> {
        self.client.get().map(String::as_str)
    }

    /// Who this session speaks for, normalised (`parse::trust::normalize`): `human` at the
    /// command line; the server's `--agent` or the token's agent, else the client's name,
    /// for a client of a server (None when it has neither). A client that calls itself
    /// `human` is not the person: it has no name here.
    pub fn identity(&self) -> Option<String> {
        match &self.who {
            Who::Person => Some(HUMAN.to_owned()),
            Who::Client { agent: Some(agent), .. } => Some(agent.to_string()),
            Who::Client { agent: None, .. } => {
                self.client().map(normalize).filter(|name| !name.is_empty() && name != HUMAN)
            }
        }
    }

    /// Whether [`identity`](Self::identity) is only what the client says it is: no
    /// `--agent` and no token bound to an agent vouch for it.
    pub fn self_reported(&self) -> bool {
        matches!(&self.who, Who::Client { agent: None, .. }) && self.identity().is_some()
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
        author(self.surface(), self.client(), self.id.as_deref())
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
            log.keep(&a);
            *log.last_call.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
        }
    }

    /// A call made: the session is not idle, and its record starts here if this is the
    /// first call since the last record.
    pub(crate) fn touch(&self, root: &Path) {
        self.note(root, |_| {});
    }

    /// What the session did since its last record, taken out: `session_record` writes it,
    /// and the record made when the session ends does not repeat it.
    pub(crate) fn take_activity(&self) -> Option<Activity> {
        let log = self.log.as_ref()?;
        let taken = std::mem::take(&mut *log.activity.lock().unwrap_or_else(PoisonError::into_inner));
        log.forget();
        Some(taken)
    }

    /// Ends the session: records what it did, if anything (also done when the last handle
    /// of a client session is dropped).
    pub fn end(&self) {
        if let Some(log) = &self.log {
            log.flush();
        }
    }
}

/// The client sessions alive that record themselves, for the idle sweep, and the client
/// sessions of a server by their [`Handle`].
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    live: Mutex<Vec<Weak<SessionLog>>>,
    /// Each with when it was last asked for.
    by_handle: Mutex<HashMap<Handle, (Session, Instant)>>,
}

impl Sessions {
    /// The session of `handle`, opened by `open` when there is none (or the last one went
    /// idle and was recorded).
    pub(crate) fn of(&self, handle: Handle, open: impl FnOnce() -> Session) -> Session {
        let mut by = self.by_handle.lock().unwrap_or_else(PoisonError::into_inner);
        let (session, last) = by.entry(handle).or_insert_with(|| (open(), Instant::now()));
        *last = Instant::now();
        session.clone()
    }

    /// Ends the session of `handle` (a legacy HTTP session deleted, its server gone):
    /// records it now.
    pub(crate) fn end(&self, handle: &Handle) {
        let gone = self.by_handle.lock().unwrap_or_else(PoisonError::into_inner).remove(handle);
        if let Some((session, _)) = gone {
            session.end();
        }
    }

    /// Ends every client session (the server stops): each is recorded.
    pub(crate) fn end_all(&self) {
        let all: Vec<Session> =
            self.by_handle.lock().unwrap_or_else(PoisonError::into_inner).drain().map(|(_, (s, _))| s).collect();
        for s in &all {
            s.end();
        }
        let live: Vec<Arc<SessionLog>> =
            self.live.lock().unwrap_or_else(PoisonError::into_inner).iter().filter_map(Weak::upgrade).collect();
        for log in live {
            log.flush();
        }
    }

    /// A new client session that records what it does into `home` when it ends or goes idle.
    pub(crate) fn open(&self, who: Who, home: Home) -> Session {
        let client = Arc::new(OnceLock::new());
        let n = JOURNALS.fetch_add(1, Ordering::Relaxed);
        let journal = home.root.join(SESSIONS_DIR).join(format!("{}-{n}.json", std::process::id()));
        let id: Arc<str> = format!("{}-{}-{n}", Utc::now().format("%Y%m%dT%H%M%SZ"), std::process::id()).into();
        let log = Arc::new(SessionLog {
            id: id.clone(),
            journal,
            home,
            client: client.clone(),
            who: who.clone(),
            activity: Mutex::new(Activity::default()),
            last_call: Mutex::new(Instant::now()),
        });
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.retain(|s| s.strong_count() > 0);
        live.push(Arc::downgrade(&log));
        Session { defaults_sent: Arc::default(), client, who, log: Some(log), id: Some(id) }
    }

    /// Records every session that made no call for `idle`. A session found by its
    /// client's name (the stateless protocol) ends there: the next call starts another.
    pub(crate) fn sweep(&self, idle: Duration) {
        let ended: Vec<Session> = {
            let mut by = self.by_handle.lock().unwrap_or_else(PoisonError::into_inner);
            let idle_handles: Vec<Handle> = by
                .iter()
                .filter(|(h, (_, last))| h.ends_idle() && last.elapsed() >= idle)
                .map(|(h, _)| h.clone())
                .collect();
            idle_handles.iter().filter_map(|h| by.remove(h)).map(|(s, _)| s).collect()
        };
        for s in &ended {
            s.end();
        }
        let live: Vec<Arc<SessionLog>> =
            self.live.lock().unwrap_or_else(PoisonError::into_inner).iter().filter_map(Weak::upgrade).collect();
        for log in live {
            if log.idle_for() >= idle {
                log.flush();
            }
        }
    }
}

/// The process that owns a journal of [`SESSIONS_DIR`]: its writer (`{pid}-{n}.json`), or
/// the process recording it (`{pid}-{n}.json.{taker}.taken`).
fn journal_owner(name: &str) -> Option<u32> {
    if let Some(taken) = name.strip_suffix(".taken") {
        return taken.rsplit_once(".json.")?.1.parse().ok();
    }
    name.strip_suffix(".json")?.split_once('-')?.0.parse().ok()
}

/// Records the sessions that processes which are gone left in their journals (a server
/// killed before it could record: see `SessionLog::keep`), each once: a journal is first
/// renamed to name this process as its recorder, so two processes never both record it.
/// A journal that does not parse is removed. Called when a process opens the root.
pub(crate) fn recover(root: &Path, config: &Config) {
    let dir = root.join(SESSIONS_DIR);
    if !store::is_dir(&dir) {
        return;
    }
    let me = std::process::id();
    for name in store::list_dir(root, &dir).unwrap_or_default() {
        let Some(owner) = journal_owner(&name) else { continue };
        if owner == me || store::cache::is_running(owner) {
            continue;
        }
        let original =
            name.strip_suffix(".taken").and_then(|n| n.rsplit_once(".json.")).map_or(name.as_str(), |(n, _)| n);
        let original = original.strip_suffix(".json").unwrap_or(original);
        let taken = dir.join(format!("{original}.json.{me}.taken"));
        if store::rename(root, &dir.join(&name), &taken).is_err() {
            continue; // Another process took it first.
        }
        let read = store::read(root, &taken, store::cap::CONFIG);
        let journal = read.ok().and_then(|bytes| serde_json::from_slice::<Journal<Activity>>(&bytes).ok());
        match journal {
            Some(j) if j.author.get("session").and_then(Value::as_str).is_some_and(|id| recorded(root, id)) => {
                tracing::info!("session of a stopped server recorded already; its journal removed");
            }
            Some(j) => {
                let by = (Some(j.writer.as_str()), Some(&j.author));
                match super::session::record_activity(root, config, by, &j.activity, true, j.last) {
                    Ok(a) if a.recorded => {
                        tracing::info!("session of a stopped server recorded: {}", a.summary.unwrap_or_default())
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!("cannot record the session of a stopped server: {}", e.chain());
                        continue; // Kept (under this process's name) for the next one.
                    }
                }
            }
            None => tracing::warn!("{SESSIONS_DIR}/{name}: not a session journal; removed"),
        }
        let _ = store::remove_file(&taken);
    }
}

/// Whether the long-term log holds the record of client session `id` already: a server
/// stopped right after it recorded its session, before it removed its journal, leaves both.
/// Only the lines that name the id are parsed.
fn recorded(root: &Path, id: &str) -> bool {
    let path = root.join(crate::layout::memory_log("long-term"));
    let Ok(Some(log)) = store::read_opt(root, &path, store::cap::LOG) else { return false };
    let finder = memchr::memmem::Finder::new(id.as_bytes());
    log.split(|b| *b == b'\n').filter(|line| finder.find(line).is_some()).any(|line| {
        serde_json::from_slice::<Value>(line).is_ok_and(|op| {
            op["kind"] == "session" && op["op"] == "add" && op["author"]["session"].as_str() == Some(id)
        })
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    #[test]
    fn a_session_recorded_already_is_told_by_its_id_and_kind() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let log = root.join(crate::layout::memory_log("long-term"));
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        let id = "20261128T040600Z-42-0";
        std::fs::write(
            &log,
            format!(
                "{{\"op\":\"add\",\"id\":\"m_1\",\"kind\":\"note\",\"author\":{{\"surface\":\"mcp\",\"session\":\"{id}\"}}}}\n"
            ),
        )
        .unwrap();
        // A memory the session wrote names it too, but is no record of it.
        assert!(!recorded(root, id));
        let record = format!(
            "{{\"op\":\"add\",\"id\":\"m_2\",\"kind\":\"session\",\"author\":{{\"surface\":\"mcp\",\"session\":\"{id}\"}}}}\n"
        );
        std::fs::OpenOptions::new().append(true).open(&log).unwrap().write_all(record.as_bytes()).unwrap();
        assert!(recorded(root, id));
        assert!(!recorded(root, "20261128T040600Z-42-1"));
    }

    #[test]
    fn a_journal_names_its_writer_or_its_recorder() {
        assert_eq!(journal_owner("4242-0.json"), Some(4242));
        assert_eq!(journal_owner("4242-17.json.99.taken"), Some(99));
        assert_eq!(journal_owner(".4242-0.json.tmws-5.tmp"), None);
        assert_eq!(journal_owner("notes.txt"), None);
    }

    /// A server killed before it could record (SIGKILL right after SIGTERM) leaves its
    /// journal; the next process records it once, as the session's writer, ending when its
    /// last call came, and removes the journal.
    #[test]
    fn the_journal_of_a_killed_server_is_recorded_once_by_the_next_process() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(SESSIONS_DIR)).unwrap();
        let config = Arc::new(Config::default());
        let sessions = Sessions::default();
        let who = Who::Client { surface: "mcp", agent: Some("codex".into()) };
        let session = sessions.open(who, Home { root: root.clone(), config: config.clone() });
        session.note(&root, |a| a.memories.push(("m_0123456789ab".into(), "note".into(), "A note.".into())));
        let kept = store::list_dir(&root, &root.join(SESSIONS_DIR)).unwrap();
        assert_eq!(kept, [format!("{}-0.json", std::process::id())]);
        // As if the process were gone: the journal renamed to one of a process that has ended.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let journal = root.join(SESSIONS_DIR).join(&kept[0]);
        std::fs::rename(&journal, root.join(SESSIONS_DIR).join(format!("{dead}-0.json"))).unwrap();
        std::mem::forget(session); // Its own record would be a second one.
        recover(&root, &config);
        recover(&root, &config);
        let log = std::fs::read_to_string(root.join(".tmws/memory/long-term.jsonl")).unwrap();
        let records: Vec<Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(records.len(), 1, "{log}");
        assert_eq!((&records[0]["kind"], &records[0]["agent"]), (&Value::from("session"), &Value::from("codex")));
        assert_eq!(records[0]["session"]["memories"], serde_json::json!(["m_0123456789ab"]));
        assert_eq!(store::list_dir(&root, &root.join(SESSIONS_DIR)).unwrap(), Vec::<String>::new());
    }
}
