//! tmws: a local-first memory and context system for AI coding agents.
//!
//! Files are the truth: Markdown with YAML front-matter under `resources/workspaces/`, hot
//! rules under `agent/rules/`, append-only JSONL memory logs and a sparse tool registry
//! under `.tmws/`. This library reads and validates them; the binary's surfaces are thin
//! layers over it. See ARCHITECTURE.md for the map.
//!
//! Data flows one way: `store` (disk) → `parse` (pure) → `model` (plain data) → `index`
//! (derived) and `check` → `query` (the engine, the one API) → `surface` (CLI, MCP, HTTP).
//! [`query::Engine`] is what the binary, tests, benches and examples use; the modules it
//! builds on are private to the crate.

pub mod agent_hooks;
pub mod check;
pub mod config;
pub mod error;
pub(crate) mod index;
pub mod init;
pub(crate) mod layout;
pub mod limits;
pub(crate) mod memory;
pub mod model;
pub(crate) mod parse;
pub(crate) mod pool;
pub mod query;
pub mod redact;
pub mod rules;
pub(crate) mod schema;
pub mod semantic;
pub(crate) mod store;
pub mod suggest;
pub mod surface;
pub(crate) mod sys;
pub mod tracker;

pub use error::{Error, Result};
/// Where this version keeps its index, and what is bound to its format, below a root:
/// for tests and tools that look into the cache.
pub use layout::INDEX_HOME;
pub use memory::cite::Cite;
/// For the binary's `main` only: the hidden mode in which tmws supervises a downstream
/// server.
#[doc(hidden)]
pub use pool::supervise_if_asked;

/// Helpers of the unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::{Path, PathBuf};

    /// Real-world Markdown nobody here wrote: the folder `TMWS_CORPORA` names (the full
    /// corpora), else the samples in `testdata/corpora`; and whether it is the full set.
    /// Where `TMWS_REQUIRE_ALL` is set (as `.ci/run` sets it), a run without the full
    /// corpora fails rather than pass on the samples.
    pub fn corpora() -> (PathBuf, bool) {
        match std::env::var_os("TMWS_CORPORA") {
            Some(dir) if !dir.is_empty() => (PathBuf::from(dir), true),
            _ => {
                let required = std::env::var_os("TMWS_REQUIRE_ALL").is_some_and(|v| !v.is_empty() && v != "0");
                assert!(
                    !required,
                    "missing prerequisite: the full corpora, which TMWS_CORPORA names (TMWS_REQUIRE_ALL is set)"
                );
                (PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/corpora"), false)
            }
        }
    }

    /// Markdown files below `dir`, recursively, sorted.
    pub fn markdown_files(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else { continue };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "md") {
                    out.push(p);
                }
            }
        }
        out.sort();
        out
    }
}
