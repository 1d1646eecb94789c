//! A progress line on stderr for long runs: shown only on a terminal, only after the run
//! has taken a second, and cleared when it ends, so short and piped runs stay quiet.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Shows `{count} {what}` while a counter moves.
pub struct Progress {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts watching `counter`; does nothing unless stderr is a terminal.
    pub fn start(counter: Arc<AtomicUsize>, what: &'static str) -> Progress {
        let done = Arc::new(AtomicBool::new(false));
        if !std::io::stderr().is_terminal() {
            return Progress { done, thread: None };
        }
        let flag = done.clone();
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            let mut bar: Option<ProgressBar> = None;
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                if bar.is_none() && start.elapsed() >= Duration::from_secs(1) {
                    let b = ProgressBar::new_spinner();
                    let style = ProgressStyle::with_template("{spinner} {human_pos} {msg} ({elapsed})")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner());
                    b.set_style(style);
                    b.set_message(what);
                    bar = Some(b);
                }
                if let Some(b) = &bar {
                    b.set_position(counter.load(Ordering::Relaxed) as u64);
                    b.tick();
                }
            }
            if let Some(b) = bar {
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
