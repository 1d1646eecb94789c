//! Surfaces: thin translation layers between the outside world and the engine.
//!
//! Each surface turns requests into engine calls and answers into text, JSON, HTTP
//! responses or MCP results. No logic lives only in a surface, and no surface reaches past
//! the engine into the index or the pool.

pub mod cli;
pub mod http;
pub mod mcp;
pub mod progress;
mod stdio;

#[cfg(test)]
pub(crate) mod tests;
