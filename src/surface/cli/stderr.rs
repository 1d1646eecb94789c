//! Log lines that never block a server: `tmws mcp`, `serve` and `watch` hand each line to
//! a writer thread through a bounded queue instead of writing stderr themselves.
//!
//! A client that starts `tmws mcp` with stderr on a pipe it never reads fills the pipe
//! (64 KiB on Linux) and from then on every `write(2)` to stderr blocks: a log line
//! written from a tokio worker stopped that worker, and with it the answers. Here only the
//! writer thread blocks. While it does, lines that find the queue full are dropped and
//! counted, and once stderr takes lines again the count is written first
//! (`tmws: N log lines dropped: stderr was not read`), so a reader learns what it missed.

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How many lines wait for stderr at most.
const QUEUE: usize = 1024;
/// How often the writer looks for drops to report when no line comes.
const TICK: Duration = Duration::from_millis(500);

/// What the writer thread is handed.
enum Message {
    Line(Vec<u8>),
    /// Answered once every line before it was written.
    Flush(SyncSender<()>),
}

/// The queue to the writer thread, and the count of lines dropped since the last report.
struct Pipe {
    queue: SyncSender<Message>,
    dropped: Arc<AtomicU64>,
}

static PIPE: OnceLock<Pipe> = OnceLock::new();

/// Starts the writer thread (once); from then on [`Queued`] writers hand lines to it.
/// Returns false when the thread cannot be started (lines are then written directly).
pub(super) fn start() -> bool {
    if PIPE.get().is_some() {
        return true;
    }
    let (queue, lines) = mpsc::sync_channel(QUEUE);
    let dropped = Arc::new(AtomicU64::new(0));
    let counted = dropped.clone();
    let spawned = std::thread::Builder::new().name("tmws-stderr".into()).spawn(move || write_lines(&lines, &counted));
    if spawned.is_err() {
        return false;
    }
    PIPE.set(Pipe { queue, dropped }).is_ok()
}

/// Waits at most `wait` for the lines queued so far to be written (before the process
/// exits, so that its last lines are not lost when stderr is read).
pub(super) fn flush(wait: Duration) {
    let Some(pipe) = PIPE.get() else { return };
    let (done, written) = mpsc::sync_channel(1);
    if pipe.queue.try_send(Message::Flush(done)).is_ok() {
        let _ = written.recv_timeout(wait);
    }
}

/// The writer thread: each line to stderr in turn; drops reported before the next line,
/// or on the next tick when none comes.
fn write_lines(lines: &Receiver<Message>, dropped: &AtomicU64) {
    let mut stderr = io::stderr();
    loop {
        let message = lines.recv_timeout(TICK);
        let missed = dropped.swap(0, Ordering::Relaxed);
        if missed > 0 {
            let _ = writeln!(stderr, "tmws: {missed} log lines dropped: stderr was not read");
        }
        match message {
            Ok(Message::Line(line)) => {
                let _ = stderr.write_all(&line);
            }
            Ok(Message::Flush(done)) => {
                let _ = stderr.flush();
                let _ = done.try_send(());
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// A log writer: each write (tracing writes one event at a time) is one line for the
/// writer thread, or one dropped line when the queue is full. Before [`start`], it writes
/// stderr itself.
pub(super) struct Queued;

impl Write for Queued {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match PIPE.get() {
            Some(pipe) => {
                if let Err(TrySendError::Full(_)) = pipe.queue.try_send(Message::Line(buf.to_vec())) {
                    pipe.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
            None => io::stderr().write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Logs go to stderr, redacted, at the level `TMWS_LOG` sets (warnings by default). A
/// server (`serving`) hands its lines to a writer thread that never makes it wait
/// (below): a client that does not read the server's stderr must not stop its
/// answers.
pub(super) fn init_logging(colour: bool, serving: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TMWS_LOG")
        // rmcp's transport worker logs a downstream server's failures as errors; tmws reports
        // them itself, once, in its own words.
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rmcp::transport::worker=off"));
    if serving {
        start();
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| Redacting(Queued))
        .with_ansi(colour)
        .try_init();
}

/// Log lines as they are written: each event comes in one write, redacted whole.
pub(super) struct Redacting<W>(pub(super) W);

impl<W: Write> Write for Redacting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(crate::redact::redact(&text).text.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}
