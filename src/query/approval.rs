//! Which servers of the client configs the user approved on this machine (DESIGN §2.4,
//! §12): nothing a repository names is started — for introspection or a call — until then.
//!
//! An approval is of one server's exact live connection (its command, args, env, URL and
//! headers, variables expanded), keyed by the root: a `git pull` that adds a server or
//! changes one runs nothing. Approvals live outside every repository, in the user's config
//! folder (`$TMWS_CONFIG_HOME`, else `$XDG_CONFIG_HOME/tmws`, else `~/.config/tmws`), in
//! `approvals.json`, as hashes only: the file holds no secret. `tmws registry build` run by
//! the user approves what it builds; `tmws registry approve` approves named servers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::parse::clients::Connection;
use crate::store;

/// The file in the user's config folder, and the lock of its writers.
const FILE: &str = "approvals.json";
const LOCK: &str = "approvals.lock";

/// The user's config folder for tmws.
pub fn config_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("TMWS_CONFIG_HOME")
        .or_else(|| var("XDG_CONFIG_HOME").map(|d| d.join("tmws")))
        .or_else(|| var("HOME").map(|h| h.join(".config/tmws")))
}

/// Approved connections: root → server → the hash of its exact live connection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Approvals {
    roots: BTreeMap<String, BTreeMap<String, String>>,
}

fn key(root: &Path) -> String {
    store::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()).display().to_string()
}

fn load(dir: &Path) -> Approvals {
    store::read_opt(dir, &dir.join(FILE), store::cap::CONFIG)
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// The hash an approval holds: blake3 of the connection's canonical JSON, secrets and all
/// (it never leaves this machine, and a hash says nothing of them).
pub fn exact_hash(live: &Connection) -> String {
    live.exact_hash()
}

/// Whether server `name` of `root`, with this live connection, is approved.
pub fn approved(root: &Path, name: &str, live: &Connection) -> bool {
    let Some(dir) = config_dir() else { return false };
    load(&dir).roots.get(&key(root)).and_then(|s| s.get(name)).is_some_and(|h| *h == exact_hash(live))
}

/// Approves these servers of `root` (name and live connection).
pub fn approve(root: &Path, servers: &[(String, Connection)]) -> Result<()> {
    if servers.is_empty() {
        return Ok(());
    }
    let dir = config_dir().ok_or_else(|| {
        Error::Environment("no folder for approvals: set HOME, XDG_CONFIG_HOME or TMWS_CONFIG_HOME".into())
    })?;
    store::create_dir_all(&dir)?;
    // Two processes approving at once must not lose each other's approvals.
    let _lock = store::FileLock::exclusive(&dir, &dir.join(LOCK))?;
    let mut all = load(&dir);
    let before = all.clone();
    // Roots that are gone (a deleted clone, a temporary folder) are forgotten.
    all.roots.retain(|r, _| store::is_dir(Path::new(r)));
    let mine = all.roots.entry(key(root)).or_default();
    for (name, live) in servers {
        mine.insert(name.clone(), exact_hash(live));
    }
    if all == before {
        return Ok(());
    }
    let bytes = serde_json::to_vec_pretty(&all).map_err(|e| Error::Environment(e.to_string()))?;
    store::write_atomic(&dir, &dir.join(FILE), &bytes)
}

/// The command line a server runs (or the URL it is reached at), as the user is shown it
/// before approving.
pub fn shown(live: &Connection) -> String {
    match &live.command {
        Some(cmd) => {
            std::iter::once(cmd.as_str()).chain(live.args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
        }
        None => live.url.clone().unwrap_or_default(),
    }
}
