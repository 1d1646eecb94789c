//! What a briefing keeps of a client session between its hooks, under
//! `.tmws/cache/briefings/` (derived, disposable): when it started and at which commit,
//! what it was briefed with and since which compaction, how many prompts it had and its
//! transcript; and the log that says why a briefing printed nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{Briefed, Client, Event};
use crate::config::Config;
use crate::layout::CACHE_DIR;
use crate::parse::payload::Payload;
use crate::store;

/// The folder of the sessions' states and the log.
const DIR: &str = "briefings";
/// The log of briefings, started again when over this size.
const LOG_CAP: u64 = 256 << 10;
/// A session's state untouched this long is removed at the next session start.
const KEEP: Duration = Duration::from_secs(7 * 86_400);
/// Why a briefing said nothing, when that is the common case: words of tmws' own.
pub const QUIET: [&str; 2] = ["nothing above the gate", "everything was briefed already"];
/// How often the states of old sessions are looked for.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// The most items a session's state remembers (the oldest go first).
const MAX_BRIEFED: usize = 2_000;

/// One client session as its briefings know it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Session {
    /// Where it is kept: none when the payload named no session, which is then briefed
    /// as if each hook were its first.
    #[serde(skip)]
    file: Option<PathBuf>,
    /// When its first hook ran, and the commit checked out then.
    pub started: Option<DateTime<Utc>>,
    pub head: Option<String>,
    /// How many times the client compacted its context.
    pub compactions: u32,
    /// The items briefed, each with the compaction count it was briefed after.
    pub briefed: Vec<(String, u32)>,
    pub prompts: u64,
    pub transcript: Option<String>,
    /// The client's session id.
    pub id: Option<String>,
}

fn dir(root: &Path) -> PathBuf {
    root.join(CACHE_DIR).join(DIR)
}

/// The file name a session id is kept under.
fn key(id: &str) -> String {
    blake3::hash(id.as_bytes()).to_hex()[..24].to_owned()
}

/// Holds the session `id`'s turn until dropped (None: no session, or no lock to be had,
/// when briefings run side by side and an item may be briefed twice).
pub fn lock(root: &Path, id: Option<&str>) -> Option<store::FileLock> {
    let id = id?;
    store::create_dir_in(root, &dir(root)).ok()?;
    store::FileLock::exclusive(root, &dir(root).join(format!("{}.lock", key(id)))).ok()
}

impl Session {
    /// The state of the client session `id` (empty when there is none yet, or it cannot be
    /// read: a lost state only means an item may be briefed again). Keyed by the session id
    /// alone: a client that runs another client's hooks too gives both the same id.
    pub fn load(root: &Path, id: Option<&str>) -> Session {
        let Some(id) = id else { return Session::default() };
        let file = dir(root).join(format!("{}.json", key(id)));
        let mut session: Session = store::read_opt(root, &file, store::cap::LOG)
            .ok()
            .flatten()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        session.id = Some(id.to_owned());
        session.file = Some(file);
        session
    }

    /// Notes a hook of `event`: the start (once), a compaction, the transcript.
    pub fn begin(&mut self, root: &Path, event: Event, payload: &Payload) {
        if self.started.is_none() {
            self.started = Some(Utc::now());
            self.head = store::git_head(root).and_then(|h| h.commit);
            if event == Event::SessionStart {
                prune(root);
            }
        }
        if event == Event::PostCompact {
            self.compactions += 1;
        }
        if let Some(t) = &payload.transcript {
            self.transcript = Some(t.clone());
        }
    }

    /// Whether `ref_id` was briefed since the last compaction.
    pub fn has_seen(&self, ref_id: &str) -> bool {
        self.briefed.iter().any(|(r, c)| r == ref_id && *c == self.compactions)
    }

    /// The items briefed before the last compaction and not since, newest first.
    pub fn before_compaction(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (r, _) in self.briefed.iter().rev() {
            if !self.has_seen(r) && !out.contains(r) {
                out.push(r.clone());
            }
        }
        out
    }

    pub fn briefed(&mut self, ref_id: &str) {
        if !self.has_seen(ref_id) {
            self.briefed.push((ref_id.to_owned(), self.compactions));
        }
        if self.briefed.len() > MAX_BRIEFED {
            self.briefed.drain(..self.briefed.len() - MAX_BRIEFED);
        }
    }

    pub fn prompted(&mut self, _prompt: &str) {
        self.prompts += 1;
    }

    /// Writes the state (a failure only means an item may be briefed again).
    pub fn save(&self, root: &Path) {
        let Some(file) = &self.file else { return };
        let Ok(bytes) = serde_json::to_vec(self) else { return };
        // Not synced: a state lost in a crash only means an item may be briefed again, and a
        // hook runs on every tool call.
        let written = store::create_dir_in(root, &dir(root)).and_then(|()| store::write_marker(root, file, &bytes));
        if let Err(e) = written {
            tracing::debug!("cannot keep the briefing state: {e}");
        }
    }

    /// Removes the state of a session that ended.
    pub fn forget(&self, root: &Path) {
        let Some(file) = &self.file else { return };
        for file in [file.clone(), file.with_extension("lock")] {
            if store::is_file(&file) && store::guard::confine(root, &file).is_ok() {
                let _ = store::remove_file(&file);
            }
        }
    }
}

/// Removes the states of sessions untouched for a week (a client that crashed never ran
/// its session-end hook), at most once an hour: the folder may hold thousands, and a
/// session start must stay quick.
fn prune(root: &Path) {
    let dir = dir(root);
    let marker = dir.join("pruned");
    let recent = store::stamp(&marker).is_some_and(|(_, at)| at.elapsed().is_ok_and(|age| age < PRUNE_EVERY));
    if recent || store::create_dir_in(root, &dir).and_then(|()| store::write_marker(root, &marker, b"\n")).is_err() {
        return;
    }
    for name in store::list_dir(root, &dir).unwrap_or_default() {
        let path = dir.join(&name);
        let old = store::stamp(&path).is_some_and(|(_, at)| at.elapsed().is_ok_and(|age| age > KEEP));
        if (name.ends_with(".json") || name.ends_with(".lock")) && old {
            let _ = store::remove_file(&path);
        }
    }
}

/// Records the session at its end: its commits, its prompts' count, what it was briefed
/// with and the client's transcript, so that a commit leads to the conversation that made
/// it. Says what it did.
pub fn end(root: &Path, config: &Config, client: Client, payload: &Payload, session: &Session) -> String {
    let Some(id) = session.id.clone() else { return "the payload names no session: nothing to record".into() };
    let activity = crate::query::session::Activity {
        started: session.started,
        head: session.head.clone(),
        prompts: session.prompts,
        briefed: session.briefed.iter().map(|(r, _)| r.clone()).collect(),
        transcript: payload.transcript.clone().or_else(|| session.transcript.clone()),
        client_session: Some(id.clone()),
        ..Default::default()
    };
    let author = serde_json::json!({"surface": "hook", "client": client.agent(), "session": id});
    match crate::query::session::record_activity(
        root,
        config,
        (Some(client.agent()), Some(&author)),
        &activity,
        true,
        Utc::now(),
    ) {
        Ok(answer) => match (answer.id, answer.why) {
            (Some(id), _) => format!("session recorded as {id}"),
            (None, Some(why)) => why,
            (None, None) => "nothing to record".into(),
        },
        Err(e) => format!("the session record: {e}"),
    }
}

/// Adds a line to the briefing log: the event, the client, what was briefed or why
/// nothing was, and how long it took.
pub fn log(root: &Path, event: Event, client: Client, briefed: &Briefed, took: Duration) {
    let what = match &briefed.silent {
        Some(why) if QUIET.contains(&why.as_str()) => format!("nothing: {why}"),
        // Why else nothing was briefed may quote the input or an error: redacted as every
        // log is.
        Some(why) => format!("nothing: {}", crate::redact::redact(why).text),
        None => {
            let ids: Vec<&str> = briefed.items.iter().map(|i| i.ref_id.as_str()).collect();
            format!("{} chars: {}", briefed.stdout.chars().count(), ids.join(" "))
        }
    };
    let line = format!(
        "{} {} {} {} ms {}\n",
        Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        client.as_str(),
        event.as_str(),
        took.as_millis(),
        what.replace(['\n', '\r'], " ")
    );
    let file = dir(root).join("log");
    let len = store::file_len(&file).unwrap_or(0);
    let written = store::create_dir_in(root, &dir(root)).and_then(|()| {
        if len > LOG_CAP {
            store::write_marker(root, &file, line.as_bytes())
        } else {
            store::append_unsynced(root, &file, line.as_bytes())
        }
    });
    if let Err(e) = written {
        tracing::debug!("cannot write the briefing log: {e}");
    }
}
