//! A stdio server's process and rmcp's transport to it (docs/pool.md,
//! docs/trust-boundary.md#servers).
//!
//! On Linux, when this executable is tmws, a server runs under a supervisor of its own
//! (`supervisor.rs`: tmws re-executed), which ends everything the server started when the
//! server is closed or tmws dies, whatever the server's children did to leave its process
//! group. Closing the transport closes the server's stdin, lets go of its stdout and of the
//! pipe the supervisor watches, and waits for the supervisor to exit: it gives the server
//! `STOP_AFTER` to stop, then SIGTERM, then SIGKILL. Elsewhere (other systems, a program
//! that links the library) a server is started directly in its own process group, on Linux
//! with `PR_SET_PDEATHSIG=SIGKILL`, and closing it closes stdin, then signals the group:
//! SIGTERM, then SIGKILL.
//!
//! What a server sends is read through [`Capped`]: a message (one line) longer than
//! [`MAX_MESSAGE`] ends the connection, and the pool says why, rather than rmcp's reader
//! dropping the line and the call waiting for its timeout; tmws holds at most one message's
//! worth of what the server sends.

use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

use super::{Exec, resolve};
use crate::error::Chain;
use crate::parse::clients::Connection;

/// The longest message (one JSON-RPC line, without its newline) a server may send: the line limit
/// of docs/trust-boundary.md, the same as rmcp's own and as its HTTP client's event limit.
pub(crate) const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// How the message of a server that could not be started begins (a supervisor writes it
/// on stderr, which is all the pool learns of it).
pub(crate) const CANNOT_START_PREFIX: &str = "cannot start `";

/// How long a server started directly has to exit once its stdin is closed, and then once
/// it got SIGTERM, before SIGKILL.
const STOP_AFTER: Duration = Duration::from_secs(3);
const KILL_AFTER: Duration = Duration::from_secs(3);

/// SIGTERM, the same number on every Unix.
#[cfg(unix)]
const SIGTERM: i32 = 15;

/// A started server process and the ways to it.
pub(crate) struct Spawned {
    pub transport: ChildTransport,
    pub stderr: Option<ChildStderr>,
    /// Set when the server sent a message over [`MAX_MESSAGE`] or [`MAX_DEPTH`] (the
    /// connection then ends): why, as [`cut_reason`] says it.
    pub oversized: Arc<AtomicU8>,
    /// Whether a supervisor started it (its start errors come on stderr).
    pub supervised: bool,
}

/// Starts the server of a stdio connection, under a supervisor where there can be one.
pub(crate) fn spawn(conn: &Connection, exec: &Exec) -> Result<Spawned, String> {
    let written = conn.command.as_deref().ok_or("no command")?;
    let command = exec.program.as_deref().map_or(OsStr::new(written), Path::as_os_str);
    let mut env = Vec::with_capacity(conn.env.len() + 1);
    for (k, v) in &conn.env {
        env.push((k.as_str(), resolve(v)?));
    }
    env.push((super::DOWNSTREAM_MARKER, "1".to_owned()));
    let cwd = exec.cwd.as_deref();
    #[cfg(target_os = "linux")]
    if super::supervisor::available() {
        match spawn_supervised(command, &conn.args, &env, cwd) {
            Ok(s) => return Ok(s),
            // No /proc/self/exe (a system without /proc): the process group must do.
            Err(e) => tracing::warn!("cannot start a supervisor for `{written}` ({}); starting it directly", Chain(&e)),
        }
    }
    spawn_direct(command, &conn.args, &env, cwd)
        .map_err(|e| format!("{CANNOT_START_PREFIX}{}`: {e}", command.to_string_lossy()))
}

/// The server in its own process group, a child of tmws.
fn spawn_direct(command: &OsStr, args: &[String], env: &[(&str, String)], cwd: Option<&Path>) -> io::Result<Spawned> {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args).kill_on_drop(true);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    die_with_parent(cmd.as_std_mut());
    let mut wrapped = CommandWrap::from(cmd);
    #[cfg(unix)]
    wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
    launch(wrapped, None)
}

/// The server under a supervisor: this executable again, as `tmws __supervise FD -- …`,
/// FD being the read end of the pipe that tells it tmws let go.
#[cfg(target_os = "linux")]
fn spawn_supervised(
    command: &OsStr,
    args: &[String],
    env: &[(&str, String)],
    cwd: Option<&Path>,
) -> io::Result<Spawned> {
    use std::os::fd::AsRawFd;

    let (watched, watch) = io::pipe()?;
    let fd = watched.as_raw_fd();
    // /proc/self/exe is read in the child, which is still this executable: it names tmws
    // even when the file on disk was replaced since.
    let mut cmd = tokio::process::Command::new("/proc/self/exe");
    cmd.arg0("tmws").arg(super::supervisor::MODE).arg(fd.to_string()).arg("--").arg(command).args(args);
    // The supervisor runs in the server's folder, and the server inherits it.
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    // Not killed when dropped: SIGKILL would leave the server's tree to itself. The
    // supervisor ends it when the watched pipe closes, which dropping does.
    cmd.kill_on_drop(false);
    #[allow(unsafe_code)]
    // SAFETY: the hook runs in the child between fork and exec and makes one system call
    // (fcntl), which is async-signal-safe; its error is an OS error code, so it allocates
    // nothing, and it takes no lock. It lets the child keep the pipe's read end (created
    // close-on-exec, so no other child gets it).
    unsafe {
        cmd.pre_exec(move || {
            if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut wrapped = CommandWrap::from(cmd);
    // Its own group, so that a terminal's Ctrl-C reaches tmws and not the supervisors:
    // tmws closes its servers, or, if the signal ends it, their supervisors do.
    wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
    let spawned = launch(wrapped, Some(watch))?;
    drop(watched);
    Ok(spawned)
}

/// Spawns with piped stdio and makes the transport.
fn launch(mut wrapped: CommandWrap, watch: Option<io::PipeWriter>) -> io::Result<Spawned> {
    wrapped.command_mut().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = wrapped.spawn()?;
    let stdin = child.stdin().take().ok_or_else(|| io::Error::other("no stdin"))?;
    let stdout = child.stdout().take().ok_or_else(|| io::Error::other("no stdout"))?;
    let stderr = child.stderr().take();
    let oversized = Arc::new(AtomicU8::new(NOT_CUT));
    let reader = Capped::new(stdout, oversized.clone());
    // One byte more than the limit for the newline: rmcp's own limit never drops a line
    // that `Capped` let through.
    let io = AsyncRwTransport::new(reader, stdin).with_max_line_length(MAX_MESSAGE + 1);
    let supervised = watch.is_some();
    Ok(Spawned {
        transport: ChildTransport { io: Some(io), child: Some(child), watch, supervised },
        stderr,
        oversized,
        supervised,
    })
}

/// On Linux, a child started with this gets SIGKILL when the thread that started it ends:
/// when its parent is killed, even with SIGKILL, the one case where nothing of the parent
/// runs to close it. tmws starts servers from the async runtime's worker threads, which
/// live as long as tmws; a supervisor is single-threaded.
#[cfg(target_os = "linux")]
pub(super) fn die_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;

    let parent = i32::try_from(std::process::id()).unwrap_or(0);
    #[allow(unsafe_code)]
    // SAFETY: the hook runs in the child between fork and exec, and only makes two system
    // calls (prctl, getppid), which are async-signal-safe; its errors are OS error codes
    // (`last_os_error`, `from_raw_os_error`), so it allocates nothing, and it takes no lock.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent died before the prctl took effect: do not start an orphan. (An OS
            // error code, not `Error::other`: that one allocates.)
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
pub(super) fn die_with_parent(_cmd: &mut std::process::Command) {}

/// Why a server's stdout was cut off (the value of [`Spawned::oversized`]): not at all, a
/// message over [`MAX_MESSAGE`], or one nested deeper than [`MAX_DEPTH`].
pub(crate) const NOT_CUT: u8 = 0;
pub(crate) const TOO_LONG: u8 = 1;
pub(crate) const TOO_DEEP: u8 = 2;

/// The deepest nesting of arrays and objects a message may have: as deep as serde_json,
/// which rmcp reads messages with, goes (it refuses a 128th level). A deeper message (a
/// tool's input schema nested 100,000 levels) would be dropped by rmcp's reader, and the
/// request would wait for its timeout; cut here, the connection ends and the error says
/// why.
pub(crate) const MAX_DEPTH: usize = 127;

/// What a cut-off reader says.
pub(crate) fn cut_reason(cut: u8) -> Option<String> {
    match cut {
        TOO_LONG => Some(format!("sent a message over the {} MiB limit", MAX_MESSAGE >> 20)),
        TOO_DEEP => Some(format!(
            "sent a message nested more than {MAX_DEPTH} levels deep (an input schema that deep?), which no JSON \
reader here takes"
        )),
        _ => None,
    }
}

/// The server's stdout, ending with an error (and `over` set) at the first line longer
/// than [`MAX_MESSAGE`] or nested deeper than [`MAX_DEPTH`], before any of that line past
/// the limit is handed on.
struct Capped<R> {
    inner: R,
    /// Bytes of the current line so far.
    run: usize,
    /// Arrays and objects open at this point of the current line.
    depth: usize,
    /// Inside a JSON string, and just after a backslash in one.
    in_string: bool,
    escaped: bool,
    over: Arc<AtomicU8>,
}

impl<R> Capped<R> {
    fn new(inner: R, over: Arc<AtomicU8>) -> Capped<R> {
        Capped { inner, run: 0, depth: 0, in_string: false, escaped: false, over }
    }

    /// Follows `bytes`, the next ones of the stream; why it must stop, if it must.
    fn scan(&mut self, bytes: &[u8]) -> u8 {
        let mut rest = bytes;
        loop {
            let (line, more) = match memchr::memchr(b'\n', rest) {
                Some(i) => (&rest[..i], Some(&rest[i + 1..])),
                None => (rest, None),
            };
            self.run += line.len();
            if self.run > MAX_MESSAGE {
                return TOO_LONG;
            }
            if self.nest(line) {
                return TOO_DEEP;
            }
            match more {
                Some(m) => {
                    (self.run, self.depth, self.in_string, self.escaped) = (0, 0, false, false);
                    rest = m;
                }
                None => return NOT_CUT,
            }
        }
    }

    /// Follows the nesting through a piece of one line; true once it is too deep.
    fn nest(&mut self, mut line: &[u8]) -> bool {
        while !line.is_empty() {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                    line = &line[1..];
                    continue;
                }
                // Strings are most of a message: skip to what can end one.
                match memchr::memchr2(b'"', b'\\', line) {
                    Some(i) => {
                        if line[i] == b'"' {
                            self.in_string = false;
                        } else {
                            self.escaped = true;
                        }
                        line = &line[i + 1..];
                    }
                    None => return false,
                }
                continue;
            }
            match line[0] {
                b'"' => self.in_string = true,
                b'{' | b'[' => {
                    self.depth += 1;
                    if self.depth > MAX_DEPTH {
                        return true;
                    }
                }
                b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
            line = &line[1..];
        }
        false
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Capped<R> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let cut = this.over.load(Ordering::Relaxed);
        if cut != NOT_CUT {
            return Poll::Ready(Err(cut_off(cut)));
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let cut = this.scan(&buf.filled()[before..]);
        if cut != NOT_CUT {
            this.over.store(cut, Ordering::Relaxed);
            buf.set_filled(before);
            return Poll::Ready(Err(cut_off(cut)));
        }
        Poll::Ready(Ok(()))
    }
}

fn cut_off(cut: u8) -> io::Error {
    let why = if cut == TOO_DEEP {
        format!("a message nested more than {MAX_DEPTH} levels deep")
    } else {
        format!("a message over the {} MiB limit", MAX_MESSAGE >> 20)
    };
    io::Error::new(io::ErrorKind::InvalidData, why)
}

/// rmcp's transport over a server's stdin and stdout, which owns the server's process and
/// ends it when closed.
pub(crate) struct ChildTransport {
    io: Option<AsyncRwTransport<RoleClient, Capped<ChildStdout>, ChildStdin>>,
    child: Option<Box<dyn ChildWrapper>>,
    /// The write end of the pipe a supervisor watches.
    watch: Option<io::PipeWriter>,
    supervised: bool,
}

impl ChildTransport {
    /// Closes stdin (and the watched pipe), then waits for the process; SIGTERM and SIGKILL
    /// if it does not exit in time.
    async fn end(&mut self) {
        self.io = None;
        self.watch = None;
        let Some(child) = self.child.as_mut() else { return };
        // A supervisor runs the whole sequence itself; it is only pressed if it lags.
        let (term_after, kill_after) = if self.supervised { supervised_waits() } else { (STOP_AFTER, KILL_AFTER) };
        if !exits_within(child, term_after).await {
            #[cfg(unix)]
            let _ = child.signal(SIGTERM);
            if !exits_within(child, kill_after).await {
                tracing::warn!("a downstream server did not stop after SIGTERM: killing it");
                let _ = Box::into_pin(child.kill()).await;
            }
        }
        self.child = None;
    }
}

/// How long tmws waits for a supervisor before SIGTERM, and then before SIGKILL: longer
/// than the supervisor's own sequence, which these only cut short if it lags.
#[cfg(target_os = "linux")]
fn supervised_waits() -> (Duration, Duration) {
    use super::supervisor::{ENDS_WITHIN, KILL_AFTER};
    let slack = Duration::from_secs(1);
    (ENDS_WITHIN + slack, KILL_AFTER + slack)
}

#[cfg(not(target_os = "linux"))]
fn supervised_waits() -> (Duration, Duration) {
    (STOP_AFTER, KILL_AFTER)
}

async fn exits_within(child: &mut Box<dyn ChildWrapper>, limit: Duration) -> bool {
    tokio::time::timeout(limit, child.wait()).await.is_ok()
}

impl Drop for ChildTransport {
    fn drop(&mut self) {
        // Dropped without `close` (a start given up half-way): a supervisor sees its pipe
        // close with this and ends the server itself; a direct child is killed with its
        // group. Either is reaped by tokio in the background.
        if let Some(child) = self.child.as_mut().filter(|_| !self.supervised) {
            let _ = child.start_kill();
        }
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let sent = self.io.as_mut().map(|io| io.send(item));
        async move {
            match sent {
                Some(sent) => sent.await,
                None => Err(io::Error::new(io::ErrorKind::NotConnected, "the server was closed")),
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        match self.io.as_mut() {
            Some(io) => io.receive().await,
            None => None,
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.end().await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    /// Reads everything through `Capped` in small reads; the bytes read and why it stopped
    /// (`NOT_CUT`: at the end).
    fn read_capped(input: Vec<u8>) -> (usize, u8) {
        let rt = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
        rt.block_on(async {
            let over = Arc::new(AtomicU8::new(NOT_CUT));
            let mut r = Capped::new(&input[..], over.clone());
            let mut got = 0;
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match r.read(&mut buf).await {
                    Ok(0) => return (got, NOT_CUT),
                    Ok(n) => got += n,
                    Err(e) => {
                        let cut = over.load(Ordering::Relaxed);
                        assert_eq!(e.to_string(), cut_off(cut).to_string());
                        return (got, cut);
                    }
                }
            }
        })
    }

    #[test]
    fn lines_up_to_the_limit_pass_and_a_longer_one_stops_the_reader() {
        let mut at_limit = vec![b'x'; MAX_MESSAGE];
        at_limit.push(b'\n');
        at_limit.extend_from_slice(b"{}\n");
        let len = at_limit.len();
        assert_eq!(read_capped(at_limit), (len, NOT_CUT));

        let mut many = Vec::new();
        for _ in 0..3 {
            many.extend(std::iter::repeat_n(b'y', MAX_MESSAGE - 10));
            many.push(b'\n');
        }
        let len = many.len();
        assert_eq!(read_capped(many), (len, NOT_CUT), "the count starts again after each newline");

        let over = vec![b'z'; MAX_MESSAGE + 1];
        let (got, cut) = read_capped(over);
        assert_eq!(cut, TOO_LONG);
        assert!(got <= MAX_MESSAGE, "{got} bytes let through");
        assert_eq!(cut_off(TOO_LONG).to_string(), "a message over the 16 MiB limit");
    }

    /// `depth` nested arrays around a value, as one line.
    fn nested(depth: usize) -> String {
        format!("{}1{}\n", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn a_message_nested_deeper_than_a_json_reader_takes_stops_the_reader() {
        // The limit is serde_json's own: what passes here, rmcp can read.
        assert!(serde_json::from_str::<serde_json::Value>(&nested(MAX_DEPTH)).is_ok());
        assert!(serde_json::from_str::<serde_json::Value>(&nested(MAX_DEPTH + 1)).is_err());
        let ok = nested(MAX_DEPTH).repeat(3);
        assert_eq!(read_capped(ok.clone().into_bytes()), (ok.len(), NOT_CUT));
        // Brackets inside strings, escaped quotes included, are text.
        let text = format!("{{\"a\": \"\\\"{}\", \"b\": {}}}\n", "[".repeat(1000), nested(5).trim());
        assert_eq!(read_capped(text.clone().into_bytes()), (text.len(), NOT_CUT));
        let deep = format!("{}{}", nested(10), "{\"s\":".repeat(100_000));
        let (got, cut) = read_capped(deep.into_bytes());
        assert_eq!(cut, TOO_DEEP);
        assert!(got < 64 * 1024, "{got} bytes let through");
        assert_eq!(
            cut_reason(TOO_DEEP).unwrap(),
            "sent a message nested more than 127 levels deep (an input schema that deep?), which no JSON reader \
here takes"
        );
    }
}
