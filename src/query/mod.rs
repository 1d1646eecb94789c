//! The query layer: the one library API that every surface calls.
//!
//! A `Workspace` is an open root: its config and its index. Reads sync the index first
//! when this process holds the writer role (so the CLI is always fresh), and otherwise
//! read what the writer (a watcher, a server) has committed.

pub mod context;
pub mod hook;
pub mod memory;
pub mod redact;
pub mod registry;
pub mod session;
pub mod tools;
pub mod trust;
pub mod yaml;

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::error::Result;
use crate::index::{Index, SearchRequest, SearchResults, SyncOptions, SyncReport};

/// How long a query waits for another process's pending sync before it answers
/// `stale: true` (DESIGN §4).
pub const STALE_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// An open root.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    config: Config,
    index: Index,
}

impl Workspace {
    /// Opens a root: reads its config (an invalid one is an error) and opens its index.
    pub fn open(root: &Path) -> Result<Workspace> {
        let config = Config::load(root)?;
        let index = Index::open(root)?;
        Ok(Workspace { root: root.to_path_buf(), config, index })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Why the index had to be rebuilt when it was opened, if it did.
    pub fn rebuilt_on_open(&self) -> Option<&str> {
        self.index.rebuilt.as_deref()
    }

    /// Converges the index to the files (a no-op for a reader).
    pub fn sync(&mut self, opts: &SyncOptions) -> Result<SyncReport> {
        if !self.index.is_writer() {
            self.index.try_take_writer()?;
        }
        self.index.sync(&self.config, opts)
    }

    /// Keeps the index in sync with file changes until `stop` is set (`tmws watch`, and
    /// the servers' background task).
    /// Also introspects, in the background, the servers whose client config changed
    /// (DESIGN §2.4): the new registry is then indexed like any changed file.
    pub fn watch(
        &mut self,
        stop: &std::sync::atomic::AtomicBool,
        mut on: impl FnMut(crate::index::watch::WatchUpdate<'_>),
    ) -> Result<()> {
        let rebuilder = registry::Rebuilder::new(&self.root, &self.config);
        crate::index::watch::run(&mut self.index, &self.config, stop, |update| {
            if matches!(update, crate::index::watch::WatchUpdate::ClientConfigs) {
                rebuilder.poke();
            }
            on(update);
        })
    }

    /// `workspace_get_context`: syncs when this process may write, then answers; beside a
    /// writer that is applying changes, waits for it at most `STALE_WAIT` and otherwise
    /// answers with `stale: true`.
    pub fn context(&mut self, req: &context::ContextRequest) -> Result<serde_json::Value> {
        let stale = self.fresh()?;
        context::get_context(&self.root, &self.index, req, stale)
    }

    /// `workspace_search`, fresh as `context` is.
    pub fn search(&mut self, req: &SearchRequest) -> Result<SearchResults> {
        let stale = self.fresh()?;
        let mut results = self.index.search(req)?;
        results.stale = stale;
        Ok(results)
    }

    /// `memory_add`: appends to the namespace's log (readers see it once it is indexed).
    pub fn memory_add(&mut self, req: &memory::AddRequest) -> Result<memory::AddAnswer> {
        memory::add(&self.root, &self.config, req, chrono::Utc::now())
    }

    /// `memory_search`, fresh as `search` is.
    pub fn memory_search(&mut self, req: &memory::MemorySearch) -> Result<serde_json::Value> {
        let stale = self.fresh()?;
        let mut v = memory::search(&self.root, &self.config, &self.index, req)?;
        if stale {
            v["stale"] = serde_json::Value::Bool(true);
        }
        Ok(v)
    }

    /// `memory_get`.
    pub fn memory_get(&mut self, id: &str, include_content: bool) -> Result<serde_json::Value> {
        self.fresh()?;
        memory::get(&self.root, &self.index, id, include_content)
    }

    /// `memory_delete`.
    pub fn memory_delete(&mut self, id: &str) -> Result<serde_json::Value> {
        self.fresh()?;
        memory::delete(&self.root, &self.config, &self.index, id)
    }

    /// `memory_stats`.
    pub fn memory_stats(&mut self) -> Result<serde_json::Value> {
        memory::stats(&self.root, &self.config, None)
    }

    /// Syncs (a writer) or waits for the writer's pending sync (a reader); returns whether
    /// the index may still be behind the files.
    fn fresh(&mut self) -> Result<bool> {
        let report = self.sync(&SyncOptions::default())?;
        if report.reader_only { self.index.settle(STALE_WAIT) } else { Ok(false) }
    }
}
