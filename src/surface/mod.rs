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

/// SIGINT and SIGTERM for `tmws mcp` and `tmws serve`, listened for from the moment this is
/// made, so that a signal is never lost to the default action (which would end the process
/// before its sessions are recorded).
pub(crate) struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    /// Must run inside the runtime.
    pub(crate) fn listen() -> crate::error::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let err = |e: std::io::Error| crate::error::Error::environment("cannot listen for signals", e);
            Ok(Signals {
                interrupt: signal(SignalKind::interrupt()).map_err(err)?,
                terminate: signal(SignalKind::terminate()).map_err(err)?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// The exit code of the first SIGINT (130) or SIGTERM (143), as shells report them.
    pub(crate) async fn recv(mut self) -> u8 {
        #[cfg(unix)]
        tokio::select! {
            _ = self.interrupt.recv() => 130,
            _ = self.terminate.recv() => 143,
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            130
        }
    }
}
