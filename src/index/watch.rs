//! Keeping the index in sync while files change (DESIGN §3 "Watch").
//!
//! Each debounced batch of file events becomes one `sync_paths` over exactly the changed
//! paths (a folder means its subtree), committed at once. An overflow, an error, or a
//! burst of more than `BURST` paths falls back to a sync of everything. A process that
//! cannot get the writer follows the writer's commits and takes the role over when the
//! writer goes away. A bad file never stops the loop: its problems are reported and it is
//! indexed anyway.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::sync::{SyncOptions, SyncReport};
use super::{Index, layout_dirs};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::store::watch::FileWatcher;

/// More changed paths than this in one batch (a `git checkout`, say) sync everything.
const BURST: usize = 2000;
/// How often the loop looks at the stop flag and, as a reader, for the writer's commits.
const TICK: Duration = Duration::from_millis(100);

/// What the watch loop tells its caller.
#[derive(Debug)]
pub enum WatchUpdate<'a> {
    /// The first sync (or a full one after an overflow) finished.
    Synced(&'a SyncReport),
    /// A batch of changes was applied.
    Applied(&'a SyncReport),
    /// Another process holds the writer: this one follows its commits.
    Following,
    /// The writer went away and this process took its role.
    TookOver,
    /// A sync failed; the loop goes on.
    Failed(&'a Error),
}

/// Syncs, then applies file changes until `stop` is set. Returns when stopped.
pub fn run(index: &mut Index, config: &Config, stop: &AtomicBool, mut on: impl FnMut(WatchUpdate<'_>)) -> Result<()> {
    let mut dirs = layout_dirs();
    dirs.extend(config.index.include.iter().filter(|p| !p.contains(['*', '?', '[', '{'])).cloned());
    let mut watcher = FileWatcher::new(index.root(), &dirs, Duration::from_millis(config.watch.debounce_ms))?;
    let opts = SyncOptions::default();
    if index.is_writer() {
        let report = index.sync(config, &opts)?;
        on(WatchUpdate::Synced(&report));
    } else {
        on(WatchUpdate::Following);
    }
    while !stop.load(Ordering::Relaxed) {
        let changes = watcher.next(TICK)?;
        if !index.is_writer() {
            if index.try_take_writer()? {
                on(WatchUpdate::TookOver);
                match index.sync(config, &opts) {
                    Ok(r) => on(WatchUpdate::Synced(&r)),
                    Err(e) => on(WatchUpdate::Failed(&e)),
                }
            } else {
                index.reload()?;
            }
            continue;
        }
        let Some(changes) = changes else { continue };
        if changes.paths.is_empty() && !changes.rescan {
            continue;
        }
        let paths: Vec<String> = changes.paths.into_iter().collect();
        let targets = if changes.rescan || paths.len() > BURST { None } else { Some(paths.as_slice()) };
        match index.sync_paths(config, &opts, targets) {
            Ok(r) if targets.is_none() => on(WatchUpdate::Synced(&r)),
            Ok(r) => on(WatchUpdate::Applied(&r)),
            Err(e) => on(WatchUpdate::Failed(&e)),
        }
    }
    Ok(())
}
