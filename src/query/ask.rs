//! `tmws index` while another process keeps the index: ask that one to sync.
//!
//! The request is a file below the cache (`index::watch::SyncRequest`) that the keeping
//! process takes and answers; the asking process polls for the answer, since the two share
//! nothing but the files.

use std::path::Path;
use std::time::{Duration, Instant};

use super::keeper::Keeper;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::index::{SyncOptions, SyncReport};

/// Syncs here, or, while another process keeps the index (the `tmws mcp` of an editor,
/// say), asks that one to sync (or rebuild) and waits for its report. A request nobody
/// takes (the other was a one-shot command that has finished) is taken back, and the sync
/// made here once the writer role is free.
pub(crate) fn sync_or_ask(keeper: &Keeper, root: &Path, config: &Config, opts: &SyncOptions) -> Result<SyncReport> {
    const TAKE_WAIT: Duration = Duration::from_secs(10);
    const DONE_WAIT: Duration = Duration::from_secs(600);
    const RETRY_HERE: Duration = Duration::from_millis(250);
    const POLL: Duration = Duration::from_millis(20);
    let report = keeper.sync(config, opts)?;
    if !report.reader_only {
        return Ok(report);
    }
    let request = crate::index::watch::SyncRequest::send(root, opts.rebuild)?;
    let started = Instant::now();
    let mut tried_here = Instant::now();
    loop {
        if let Some(answer) = request.answer(root) {
            return answer;
        }
        let taken = request.taken(root);
        if taken && started.elapsed() > DONE_WAIT {
            return Err(Error::Index(format!(
                "the tmws process that keeps the index took the request to sync but did not answer within {} s",
                DONE_WAIT.as_secs()
            )));
        }
        if !taken && started.elapsed() > TAKE_WAIT {
            request.withdraw(root);
            return Err(Error::Environment(format!(
                "another tmws process holds the index but did not take the request to sync within {} s",
                TAKE_WAIT.as_secs()
            ))
            .with_hint("a tmws older than this one keeps it: stop it (its editor's MCP server), or wait"));
        }
        // The keeper may exit (a one-shot command, or one that died after taking the
        // request): then the role is free and the sync is made here.
        if tried_here.elapsed() > RETRY_HERE {
            tried_here = Instant::now();
            let report = keeper.sync(config, opts)?;
            if !report.reader_only {
                request.withdraw(root);
                return Ok(report);
            }
        }
        std::thread::sleep(POLL);
    }
}
