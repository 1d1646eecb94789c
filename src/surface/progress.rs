//! A progress line on stderr for long runs: shown only on a terminal, only after the run
//! has taken a while (a second, or `TMWS_PROGRESS_DELAY_MS`), and cleared when it ends, so
//! short and piped runs stay quiet and nothing of it is left on the screen.
//!
//! A sync names its phase (scan, parse, write, commit) and, while it parses, shows a bar
//! of the files read out of those to read; a check counts the files it has checked.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::query::{SyncPhase, SyncProgress};

/// How long a run goes before its progress line appears, unless `TMWS_PROGRESS_DELAY_MS`
/// says otherwise.
const DELAY: Duration = Duration::from_secs(1);

/// How often the line is redrawn.
const TICK: Duration = Duration::from_millis(100);

/// What the line shows at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Status {
    /// The phase or what is counted (`parse`, `files checked`).
    label: &'static str,
    pos: u64,
    /// The whole, when it is known: then a bar is drawn.
    len: Option<u64>,
}

/// What the line follows.
enum Source {
    /// A count of `what`.
    Counter(Arc<AtomicUsize>, &'static str),
    /// A sync's phases.
    Sync(Arc<SyncProgress>),
}

impl Source {
    fn status(&self) -> Status {
        match self {
            Source::Counter(n, what) => Status { label: what, pos: n.load(Ordering::Relaxed) as u64, len: None },
            Source::Sync(p) => {
                let phase = p.phase();
                let len = (phase == SyncPhase::Parse).then(|| p.total() as u64);
                Status { label: phase.as_str(), pos: p.done() as u64, len }
            }
        }
    }
}

/// A progress line on stderr while it lives.
pub struct Progress {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Shows `{count} {what}` while `counter` moves.
    pub fn start(counter: Arc<AtomicUsize>, what: &'static str) -> Progress {
        Progress::spawn(Source::Counter(counter, what))
    }

    /// Shows a sync's phase, with a bar of the files read while it parses.
    pub fn sync(progress: Arc<SyncProgress>) -> Progress {
        Progress::spawn(Source::Sync(progress))
    }

    /// Starts drawing after the delay; does nothing unless stderr is a terminal.
    fn spawn(source: Source) -> Progress {
        let done = Arc::new(AtomicBool::new(false));
        if !std::io::stderr().is_terminal() {
            return Progress { done, thread: None };
        }
        let delay = std::env::var("TMWS_PROGRESS_DELAY_MS")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .map_or(DELAY, Duration::from_millis);
        let flag = done.clone();
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            let mut bar: Option<(ProgressBar, Status)> = None;
            // The flag is read after a draw, so that with no delay the line is drawn at
            // least once however short the run.
            loop {
                if start.elapsed() >= delay {
                    let now = source.status();
                    let shown = bar.get_or_insert_with(|| (new_bar(&now), now.clone()));
                    if shown.1.label != now.label || shown.1.len.is_some() != now.len.is_some() {
                        shown.0.set_style(style(&now));
                        shown.0.set_message(now.label);
                    }
                    if let Some(len) = now.len {
                        shown.0.set_length(len);
                    }
                    shown.0.set_position(now.pos);
                    shown.0.tick();
                    shown.1 = now;
                }
                if flag.load(Ordering::Relaxed) {
                    break;
                }
                std::thread::sleep(TICK);
            }
            if let Some((b, _)) = bar {
                b.finish_and_clear();
            }
        });
        Progress { done, thread: Some(thread) }
    }

    /// Stops and clears the line.
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn new_bar(status: &Status) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(status.len, ProgressDrawTarget::stderr());
    bar.set_style(style(status));
    bar.set_message(status.label);
    bar
}

/// A bar with the count and the whole when the whole is known, else a spinner with the
/// count of a counter, or only the phase of a sync.
fn style(status: &Status) -> ProgressStyle {
    ProgressStyle::with_template(template(status))
        .map_or_else(|_| ProgressStyle::default_spinner(), |s| s.progress_chars("=> "))
}

fn template(status: &Status) -> &'static str {
    match (status.len, status.label) {
        (Some(_), _) => "{msg:>6} [{bar:30}] {pos}/{len} files ({elapsed})",
        (None, "scan" | "write" | "commit") => "{spinner} {msg:>6} ({elapsed})",
        (None, _) => "{spinner} {human_pos} {msg} ({elapsed})",
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop();
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress").field("running", &self.thread.is_some()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sync_shows_its_phase_and_a_bar_only_while_it_parses() {
        let p = Arc::new(SyncProgress::default());
        let source = Source::Sync(p.clone());
        assert_eq!(source.status(), Status { label: "scan", pos: 0, len: None });
        let counter = Source::Counter(Arc::new(AtomicUsize::new(7)), "files checked");
        assert_eq!(counter.status(), Status { label: "files checked", pos: 7, len: None });
        // A bar where the whole is known, the phase alone where it is not.
        let parse = Status { label: "parse", pos: 3, len: Some(40) };
        assert_eq!(template(&parse), "{msg:>6} [{bar:30}] {pos}/{len} files ({elapsed})");
        assert_eq!(template(&source.status()), "{spinner} {msg:>6} ({elapsed})");
        assert_eq!(template(&counter.status()), "{spinner} {human_pos} {msg} ({elapsed})");
        for status in [parse, source.status(), counter.status()] {
            assert!(ProgressStyle::with_template(template(&status)).is_ok(), "{status:?}");
        }
    }
}
