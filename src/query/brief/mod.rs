//! `tmws brief` (docs/hooks.md): memory brought to an agent at the moment of action, by
//! the command its client's hooks run — at a session's start, after a compaction, on each
//! prompt, before a shell command or an edit, and at the session's end.
//!
//! A briefing reads the client's payload on stdin, finds the root from the payload's
//! working folder, and answers from the index as it is: it never syncs (a sync stats the
//! whole tree, more than a hook may take), so what it says may be behind the files by as
//! much as no watcher ran. What each event brings is in [`select`]; an item briefed once in
//! a client session is not briefed again in it, except after a compaction ([`state`]); the
//! text is quoted data under a one-line header, in the form the client takes as added
//! context ([`render`]). A briefing never stands in the agent's way: on any error it
//! prints nothing, exits 0, and notes why in `.tmws/cache/briefings/log`.

mod render;
mod select;
mod state;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::config::Config;
use crate::index::Index;
use crate::layout;
use crate::parse::payload;
use crate::store;

pub use select::Candidate;

/// When a client's hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Event {
    /// A session starts or resumes.
    SessionStart,
    /// The client compacted its context.
    PostCompact,
    /// The user sent a prompt.
    Prompt,
    /// A shell command, an edit or a write is about to run.
    PreTool,
    /// The session ends: it is recorded, nothing is printed.
    SessionEnd,
}

impl Event {
    pub const ALL: [Event; 5] =
        [Event::SessionStart, Event::PostCompact, Event::Prompt, Event::PreTool, Event::SessionEnd];

    /// The event's name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Event::SessionStart => "session-start",
            Event::PostCompact => "post-compact",
            Event::Prompt => "prompt",
            Event::PreTool => "pre-tool",
            Event::SessionEnd => "session-end",
        }
    }

    pub fn parse(name: &str) -> Option<Event> {
        Event::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

/// The agent client whose hook runs: it decides the payload's field names and the form of
/// what is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Client {
    Claude,
    Codex,
    Gemini,
    Copilot,
}

impl Client {
    pub const ALL: [Client; 4] = [Client::Claude, Client::Codex, Client::Gemini, Client::Copilot];

    /// The client's name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Client::Claude => "claude",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
            Client::Copilot => "copilot",
        }
    }

    pub fn parse(name: &str) -> Option<Client> {
        Client::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// The agent a session record names: the client's name as its MCP client gives it.
    fn agent(self) -> &'static str {
        match self {
            Client::Claude => "claude-code",
            Client::Codex => "codex",
            Client::Gemini => "gemini-cli",
            Client::Copilot => "copilot-cli",
        }
    }
}

/// What a briefing did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Briefed {
    /// Exactly what `tmws brief` prints (empty: nothing).
    pub stdout: String,
    /// The items the briefing holds, in order.
    pub items: Vec<BriefedItem>,
    /// Why nothing was printed, when nothing was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub silent: Option<String>,
}

/// One item of a briefing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BriefedItem {
    #[serde(rename = "refId")]
    pub ref_id: String,
    pub kind: String,
    /// The characters it takes in the briefing.
    pub chars: usize,
}

/// Briefs `client`'s agent at `event`, from the payload `stdin`. Never fails: what went
/// wrong is in `silent`, and in the root's briefing log when a root was found.
pub fn brief(event: Event, client: Client, stdin: &[u8]) -> Briefed {
    let started = Instant::now();
    let mut root: Option<PathBuf> = None;
    let outcome = run(event, client, stdin, &mut root);
    let briefed = match outcome {
        Ok(b) => b,
        Err(why) => Briefed { silent: Some(why), ..Briefed::default() },
    };
    if let Some(root) = &root {
        state::log(root, event, client, &briefed, started.elapsed());
    }
    briefed
}

/// The briefing, or why there is none.
fn run(event: Event, client: Client, stdin: &[u8], found: &mut Option<PathBuf>) -> Result<Briefed, String> {
    let payload = match payload::read(stdin) {
        Ok(p) => p,
        Err(e) => {
            // Noted in the log of the root the hook runs in, if it runs in one.
            *found = std::env::current_dir().ok().and_then(|d| store::find_root(&d));
            return Err(format!("bad input: {e}"));
        }
    };
    let cwd = match &payload.cwd {
        Some(cwd) => PathBuf::from(cwd),
        None => std::env::current_dir().map_err(|e| format!("no working folder: {e}"))?,
    };
    let root = store::find_root(&cwd).ok_or_else(|| format!("no tmws root at or above {}", cwd.display()))?;
    *found = Some(root.clone());
    let config = Config::load(&root).map_err(|e| format!("the config: {e}"))?;
    // A cache a repository brought is set aside before its state is read.
    store::cache::vet(&root).map_err(|e| format!("the cache: {e}"))?;
    // A session start that says it follows a compaction is one.
    let event = match (event, payload.source.as_deref()) {
        (Event::SessionStart, Some("compact")) => Event::PostCompact,
        (e, _) => e,
    };
    // One briefing of a session at a time: a client may run two hooks at once (Copilot CLI
    // runs Claude Code's as well as its own), and neither may brief what the other did.
    let _turn = state::lock(&root, payload.session.as_deref());
    let mut session = state::Session::load(&root, payload.session.as_deref());
    if event == Event::SessionEnd {
        let why = state::end(&root, &config, client, &payload, &session);
        session.forget(&root);
        return Ok(Briefed { silent: Some(why), ..Briefed::default() });
    }
    session.begin(&root, event, &payload);
    let index = open_index(&root, &config, event)?;
    let mut candidates = select::candidates(&root, &config, &index, event, &payload, &session)
        .and_then(|mut c| select::mark_stale(&root, &config, &index, &mut c).map(|()| c))
        .map_err(|e| format!("the index: {e}"))?;
    if matches!(event, Event::Prompt | Event::PreTool) {
        candidates.sort_by(|a, b| b.relevance.total_cmp(&a.relevance));
    }
    let budget = budget(&config, event);
    let behind = index.sync_pending();
    let (text, items) = render::briefing(&candidates, &session, budget, behind);
    for item in &items {
        session.briefed(&item.ref_id);
    }
    if let Some(p) = &payload.prompt {
        session.prompted(p);
    }
    session.save(&root);
    if items.is_empty() {
        let why = if candidates.is_empty() { state::QUIET[0] } else { state::QUIET[1] };
        return Ok(Briefed { silent: Some(why.into()), ..Briefed::default() });
    }
    Ok(Briefed { stdout: render::for_client(client, event, payload.event.as_deref(), &text), items, silent: None })
}

/// The index as it is. A root never indexed is indexed at a session's start (once); the
/// other events say nothing rather than wait for it.
fn open_index(root: &Path, config: &Config, event: Event) -> Result<Index, String> {
    match Index::open_reader(root) {
        Ok(index) => Ok(index),
        Err(_) if matches!(event, Event::SessionStart | Event::PostCompact) => {
            let mut index = Index::open(root).map_err(|e| format!("the index: {e}"))?;
            index.sync(config, &crate::index::SyncOptions::default()).map_err(|e| format!("the index: {e}"))?;
            Ok(index)
        }
        Err(_) => Err(format!("no index yet under {} (the next session start makes it)", layout::INDEX_PARENT)),
    }
}

/// The characters `event`'s briefing may take.
fn budget(config: &Config, event: Event) -> usize {
    let h = &config.hooks;
    let chars = match event {
        Event::SessionStart => h.session_start_chars,
        Event::PostCompact => h.post_compact_chars,
        Event::Prompt => h.prompt_chars,
        Event::PreTool => h.pre_tool_chars,
        Event::SessionEnd => 0,
    };
    usize::try_from(chars).unwrap_or(usize::MAX)
}

/// The payload's paths as the index knows them: relative to the root, `/`-separated; a
/// path outside the root is left out.
fn root_relative(root: &Path, cwd: Option<&str>, paths: &[String]) -> Vec<String> {
    let base = cwd.map_or_else(|| root.to_path_buf(), PathBuf::from);
    paths
        .iter()
        .filter_map(|p| {
            let p = Path::new(p);
            let full = if p.is_absolute() { p.to_path_buf() } else { base.join(p) };
            let rel = full.strip_prefix(root).ok()?;
            crate::index::cited_path(&rel.to_string_lossy())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_and_clients_are_named_as_the_command_line_names_them() {
        for e in Event::ALL {
            assert_eq!(Event::parse(e.as_str()), Some(e));
        }
        for c in Client::ALL {
            assert_eq!(Client::parse(c.as_str()), Some(c));
        }
        assert_eq!(Event::parse("PreToolUse"), None);
    }

    #[test]
    fn paths_are_made_root_relative_and_those_outside_are_left_out() {
        let root = Path::new("/w/p");
        let paths = ["/w/p/src/a.rs".to_owned(), "lib/b.rs".to_owned(), "/etc/passwd".to_owned(), "../x".to_owned()];
        assert_eq!(root_relative(root, Some("/w/p/api"), &paths), ["src/a.rs", "api/lib/b.rs"]);
    }
}
