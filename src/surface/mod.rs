//! Surfaces: thin translation layers between the outside world and the library.
//!
//! Each surface turns requests into library calls and library results into answers. No
//! logic lives only in a surface.

pub mod cli;
pub mod http;
pub mod mcp;
pub mod progress;
pub mod service;
