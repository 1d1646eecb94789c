//! The background thread of a long-running process (`mcp`, `serve`, `watch`): it records
//! client sessions gone idle, runs the memory upkeep when it is due and the process is
//! quiet, and warns once when the binary was replaced.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::live::Sessions;
use crate::config::Config;

/// When the process was last asked something: the upkeep waits for a quiet moment.
#[derive(Debug)]
pub(crate) struct Quiet {
    born: Instant,
    last_call_ms: AtomicU64,
}

impl Default for Quiet {
    fn default() -> Quiet {
        Quiet { born: Instant::now(), last_call_ms: AtomicU64::new(0) }
    }
}

impl Quiet {
    /// A call came now.
    pub(crate) fn touch(&self) {
        let ms = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_call_ms.store(ms, Ordering::Relaxed);
    }

    fn quiet_for(&self) -> Duration {
        let now = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(now.saturating_sub(self.last_call_ms.load(Ordering::Relaxed)))
    }
}

/// What the thread works on.
#[derive(Debug, Clone)]
pub(crate) struct Work {
    pub root: PathBuf,
    pub config: Arc<Config>,
    pub sessions: Arc<Sessions>,
    pub quiet: Arc<Quiet>,
}

/// The thread, while it runs: started at most once, stopped on demand or when dropped.
#[derive(Debug, Default)]
pub(crate) struct Background {
    running: Mutex<Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>>,
}

impl Background {
    /// Starts the thread unless it runs.
    pub(crate) fn start(&self, work: Work) {
        const TICK: Duration = Duration::from_millis(500);
        let mut slot = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_some() {
            return;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let spawned = std::thread::Builder::new().name("tmws-upkeep".into()).spawn(move || {
            let mut next_check = Instant::now();
            // Said once: a process of an old binary goes on working (its index is its
            // version's own), but whoever reads its log should know to restart it.
            let mut exe = super::autowatch::ExeStamp::of_current_exe();
            while !stopped.load(Ordering::Relaxed) {
                std::thread::park_timeout(TICK);
                if stopped.load(Ordering::Relaxed) {
                    return;
                }
                if exe.as_ref().is_some_and(super::autowatch::ExeStamp::replaced) {
                    tracing::warn!(
                        "the tmws binary was replaced (an upgrade): this process goes on with the old one until it is restarted"
                    );
                    exe = None;
                }
                let Work { root, config, sessions, quiet } = &work;
                sessions.sweep(Duration::from_secs_f64(config.sessions.idle_minutes * 60.0));
                let upkeep = &config.upkeep;
                if upkeep.every_secs == 0
                    || Instant::now() < next_check
                    || quiet.quiet_for() < Duration::from_secs(upkeep.idle_secs)
                {
                    continue;
                }
                let now = chrono::Utc::now();
                if super::upkeep::due(root, config, now) {
                    match super::upkeep::run(root, config, now) {
                        Ok(r) => tracing::info!(
                            "upkeep: {} expired removed, {} pruned, {} of gone branches removed",
                            r.removed_expired,
                            r.pruned,
                            r.gc_removed
                        ),
                        Err(e) => tracing::warn!("upkeep: {}", e.chain()),
                    }
                }
                // Checked again when the next run could be due (at most a minute later:
                // another process may have run it).
                next_check = Instant::now() + Duration::from_secs(upkeep.every_secs.clamp(1, 60));
            }
        });
        match spawned {
            Ok(thread) => *slot = Some((stop, thread)),
            Err(e) => tracing::warn!("cannot start the upkeep thread: {e}"),
        }
    }

    /// Stops the thread, if it runs, and waits for it.
    pub(crate) fn stop(&self) {
        let taken = self.running.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some((stop, thread)) = taken {
            stop.store(true, Ordering::Relaxed);
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop();
    }
}
