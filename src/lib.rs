//! tmws: a local-first memory and context system for AI coding agents.
//!
//! Files are the truth: Markdown with YAML front-matter under `resources/workspaces/`, hot
//! rules under `agent/rules/`, append-only JSONL memory logs and a sparse tool registry
//! under `.tmws/`. This library reads and validates them; the binary's surfaces are thin
//! layers over it. See ARCHITECTURE.md for the map.
//!
//! Data flows one way: `store` (disk) → `parse` (pure) → `model` (plain data) → `check`
//! and the commands (`init`, `rules`) → `surface` (CLI).

pub mod check;
pub mod config;
pub mod error;
pub mod index;
pub mod init;
pub mod layout;
pub mod model;
pub mod parse;
pub mod pool;
pub mod query;
pub mod rules;
pub mod schema;
pub mod store;
pub mod surface;
pub mod sys;

pub use error::{Error, Result};
