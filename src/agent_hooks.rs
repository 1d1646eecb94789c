//! `tmws hooks install|uninstall CLIENT…` and `--check` (docs/hooks.md): the hooks that make
//! agent clients run `tmws brief` at their moments, put into (or taken out of) each
//! client's project settings.
//!
//! The edits themselves are `parse::agent_hooks`' (pure); this reads each file through the
//! store, writes it atomically, and says what happened. A file that does not parse is
//! never written: the error names it with its line, and nothing is lost.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
pub use crate::parse::agent_hooks::HookClient;
use crate::parse::agent_hooks::{self, Invalid, Left};
use crate::store;

/// What `tmws hooks` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HooksAction {
    Install,
    Uninstall,
    Check,
}

/// Where one client's hooks stand after the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HookState {
    /// Install wrote a new file.
    Created,
    /// Install or uninstall edited the file.
    Updated,
    /// Nothing to do: install found them current, uninstall found none.
    Unchanged,
    /// Uninstall took out the last of the file: the file is gone.
    Removed,
    /// Check: as install would write them.
    Current,
    /// Check: some are missing (none differ).
    Missing,
    /// Check: some differ from what install would write.
    Differs,
}

/// One client's file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HookFile {
    pub client: HookClient,
    /// The settings file, relative to the root.
    pub path: String,
    pub state: HookState,
    /// What is missing or differs (check), or what was done.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HooksReport {
    pub root: PathBuf,
    pub files: Vec<HookFile>,
}

impl HooksReport {
    /// Whether a check found hooks missing or different.
    pub fn stale(&self) -> bool {
        self.files.iter().any(|f| matches!(f.state, HookState::Missing | HookState::Differs))
    }
}

/// Runs `action` for each client (once each) in the root; `program` is what the hooks run
/// (`tmws` from PATH, else this binary's path: `init::command_for_clients`).
pub fn run(root: &Path, clients: &[HookClient], action: HooksAction, program: &str) -> Result<HooksReport> {
    let mut files = Vec::new();
    let mut seen = Vec::new();
    for &client in clients {
        if !seen.contains(&client) {
            seen.push(client);
            files.push(one(root, client, action, program)?);
        }
    }
    Ok(HooksReport { root: root.to_path_buf(), files })
}

fn one(root: &Path, client: HookClient, action: HooksAction, program: &str) -> Result<HookFile> {
    let rel = client.settings_path();
    let path = root.join(rel);
    let existing = store::read_text_opt(root, &path, store::cap::CONFIG)?;
    let invalid = |e: Invalid| Error::WithLine {
        path: PathBuf::from(rel),
        line: e.line,
        column: e.column,
        message: format!("{}; the file was left as it is", e.message),
        hint: Some(format!("fix the file, then run `tmws hooks {}` again", verb(action, client))),
        cause: None,
    };
    let file = |state, details| HookFile { client, path: rel.to_owned(), state, details };
    match action {
        HooksAction::Check => {
            let status = agent_hooks::status(client, existing.as_deref(), program).map_err(invalid)?;
            let state = if !status.differs.is_empty() {
                HookState::Differs
            } else if !status.current() {
                HookState::Missing
            } else {
                HookState::Current
            };
            let details =
                status.differs.into_iter().chain(status.missing.iter().map(|m| format!("missing {m}"))).collect();
            Ok(file(state, details))
        }
        HooksAction::Install => match agent_hooks::install(client, existing.as_deref(), program).map_err(invalid)? {
            None => Ok(file(HookState::Unchanged, Vec::new())),
            Some(text) => {
                store::write_atomic(root, &path, text.as_bytes())?;
                let state = if existing.is_some() { HookState::Updated } else { HookState::Created };
                let mut events: Vec<&str> = client.placements().iter().map(|p| p.event).collect();
                events.dedup();
                Ok(file(state, vec![format!("tmws brief runs on {}", events.join(", "))]))
            }
        },
        HooksAction::Uninstall => match agent_hooks::uninstall(client, existing.as_deref()).map_err(invalid)? {
            Left::Unchanged => Ok(file(HookState::Unchanged, Vec::new())),
            Left::Text(text) => {
                store::write_atomic(root, &path, text.as_bytes())?;
                Ok(file(HookState::Updated, vec!["took out tmws' hooks".into()]))
            }
            Left::Nothing => {
                store::remove_file(&path)?;
                Ok(file(HookState::Removed, vec!["it held only tmws' hooks".into()]))
            }
        },
    }
}

/// The command to run again, for a hint.
fn verb(action: HooksAction, client: HookClient) -> String {
    match action {
        HooksAction::Install => format!("install {}", client.name()),
        HooksAction::Uninstall => format!("uninstall {}", client.name()),
        HooksAction::Check => format!("install --check {}", client.name()),
    }
}
