//! The supervisor of one downstream stdio server, on Linux: `tmws` re-executed by the pool
//! as `tmws __supervise FD -- COMMAND ARGS…`, standing between tmws and the server so that
//! closing the server, or tmws dying however it dies, ends everything the server started
//! (docs/pool.md).
//!
//! Why a process of its own. A process group reaches only the children that stay in it; a
//! server's helper in a group of its own, or a `setsid` daemon, escapes it. tmws itself as a
//! child subreaper would collect those orphans only while it lives: when tmws is killed
//! with SIGKILL, its orphans go to init and nothing of tmws runs to end them. And
//! `PR_SET_PDEATHSIG` reaches only direct children, and fires when the *thread* that
//! started them ends. So each server gets a small supervisor that:
//!
//! - is a child subreaper: whatever the server starts, in any group or session, however
//!   often it forks away, stays a descendant of the supervisor;
//! - starts the server with its own stdin, stdout and stderr (the pipes to tmws), in a new
//!   process group, with `PR_SET_PDEATHSIG=SIGKILL` (the supervisor is single-threaded, so
//!   the server dies if the supervisor itself is killed), then lets go of stdin and stdout,
//!   so that tmws sees the server's stdout end when the server and what it started end;
//! - watches a pipe whose only write end tmws holds (close-on-exec, so no other process
//!   inherits it): end of file means tmws closed the server or is gone. A pipe rather than
//!   `PR_SET_PDEATHSIG` on the supervisor, because the pipe ends with the tmws process
//!   whichever of its threads started the server, and also when tmws died before the
//!   supervisor began to watch;
//! - then gives the server `STOP_AFTER` to exit on its own (its stdin is closed: MCP's way
//!   to stop a stdio server), then sends SIGTERM to every descendant, then SIGKILL after
//!   `KILL_AFTER`, walking `/proc` for the processes whose parent is in its tree and
//!   repeating until none is left (an orphan is re-parented to the supervisor and found on
//!   the next round). When the server exits by itself (a crash, or its own stop) the rest
//!   of the tree gets the same SIGTERM, then SIGKILL; SIGTERM, SIGINT or SIGHUP sent to the
//!   supervisor skip the wait;
//! - exits once no descendant is left, with the server's exit code. tmws reaps it, so a
//!   place in the pool is given back only when the whole tree is gone.
//!
//! A server that cannot be started is reported on stderr as "cannot start `COMMAND`: why",
//! with exit code 127, which the pool turns into its error.

use std::ffi::{OsStr, OsString};
use std::io::Write as _;
use std::os::fd::{AsFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, Signal, kill, killpg};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::stat::Mode;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, dup2_stdin, dup2_stdout, getpid};

/// The first argument that makes the binary a supervisor.
pub(crate) const MODE: &str = "__supervise";
/// How long the server has to exit on its own once its stdin is closed.
pub(crate) const STOP_AFTER: Duration = Duration::from_secs(3);
/// How long processes have between SIGTERM and SIGKILL.
pub(crate) const KILL_AFTER: Duration = Duration::from_secs(3);
/// How long to wait after SIGKILL before giving up on a process that does not die (one
/// stuck in the kernel); the supervisor exits anyway.
const GIVE_UP_AFTER: Duration = Duration::from_secs(2);
/// The longest a supervisor takes to end its tree once told to.
pub(crate) const ENDS_WITHIN: Duration =
    Duration::from_secs(STOP_AFTER.as_secs() + KILL_AFTER.as_secs() + GIVE_UP_AFTER.as_secs());
/// The exit code when the server could not be started (as a shell says it).
const CANNOT_START: u8 = 127;

/// Whether this executable is tmws, which can be a supervisor: set by
/// [`supervise_if_asked`], which only the binary calls. A program that uses the library
/// (a bench) starts servers directly, in their own process group.
static AVAILABLE: AtomicBool = AtomicBool::new(false);

pub(crate) fn available() -> bool {
    AVAILABLE.load(Ordering::Relaxed)
}

/// The binary's first call: runs the supervisor when tmws was started as one (and returns
/// its exit code), else notes that this executable can be one and returns `None`.
pub fn supervise_if_asked() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(MODE)) {
        AVAILABLE.store(true, Ordering::Relaxed);
        return None;
    }
    Some(match Supervisor::start(&args.collect::<Vec<_>>()) {
        Ok(Some(mut s)) => s.run(),
        // tmws is gone already: nothing to start.
        Ok(None) => ExitCode::SUCCESS,
        Err(why) => {
            // stderr is the pipe whose tail the pool shows in its error.
            let _ = writeln!(std::io::stderr(), "{why}");
            ExitCode::from(CANNOT_START)
        }
    })
}

/// Why the supervisor stops serving.
#[derive(Debug, Clone, Copy, PartialEq)]
enum End {
    /// The server exited by itself.
    Exited,
    /// tmws closed the server, or is gone.
    Closed,
    /// The supervisor got SIGTERM, SIGINT or SIGHUP.
    Told,
}

#[derive(Debug)]
struct Supervisor {
    server: Pid,
    /// The server's exit code, once it is reaped.
    status: Option<i32>,
    signals: SignalFd,
    watch: OwnedFd,
}

impl Supervisor {
    /// Takes the watched descriptor, becomes a subreaper and starts the server; `None` when
    /// tmws is already gone.
    fn start(args: &[OsString]) -> Result<Option<Supervisor>, String> {
        let usage = || format!("usage: tmws {MODE} FD -- COMMAND [ARGS…]");
        let fd: RawFd = args.first().and_then(|a| a.to_str()).and_then(|a| a.parse().ok()).ok_or_else(usage)?;
        if fd < 3 || args.get(1).map(OsString::as_os_str) != Some(OsStr::new("--")) {
            return Err(usage());
        }
        let Some(command) = args.get(2) else { return Err(usage()) };
        // The descriptor must be open, or `from_raw_fd` would own whatever comes next.
        if !crate::store::exists(Path::new(&format!("/proc/self/fd/{fd}"))) {
            return Err(format!("descriptor {fd} is not open"));
        }
        #[allow(unsafe_code)]
        // SAFETY: the descriptor is open (checked above) and was handed to this process by
        // tmws for this use only; nothing else in this process knows or closes it.
        let watch = unsafe { OwnedFd::from_raw_fd(fd) };
        // The server need not inherit it.
        fcntl(&watch, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(|e| format!("descriptor {fd}: {e}"))?;
        nix::sys::prctl::set_child_subreaper(true).map_err(|e| format!("cannot become a subreaper: {e}"))?;
        let mut mask = SigSet::empty();
        for s in [Signal::SIGCHLD, Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
            mask.add(s);
        }
        mask.thread_block().map_err(|e| format!("cannot block signals: {e}"))?;
        let signals = SignalFd::with_flags(&mask, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
            .map_err(|e| format!("cannot read signals: {e}"))?;
        if closed(&watch) {
            return Ok(None);
        }

        let mut cmd = std::process::Command::new(command);
        cmd.args(&args[3..]).process_group(0);
        super::process::die_with_parent(&mut cmd);
        unblock_signals(&mut cmd);
        let child = cmd
            .spawn()
            .map_err(|e| format!("{}{}`: {e}", super::process::CANNOT_START_PREFIX, command.to_string_lossy()))?;
        let server = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
        // The server's stdio is inherited, so `child` holds no pipe; it is reaped below.
        drop(child);
        // Only the server (and what it starts) holds the MCP pipes now: tmws sees them end
        // when the server does.
        if let Ok(null) = nix::fcntl::open(Path::new("/dev/null"), OFlag::O_RDWR | OFlag::O_CLOEXEC, Mode::empty()) {
            let _ = dup2_stdin(&null);
            let _ = dup2_stdout(&null);
        }
        Ok(Some(Supervisor { server, status: None, signals, watch }))
    }

    /// Serves until the server exits, tmws lets go, or a signal; then ends the tree.
    fn run(&mut self) -> ExitCode {
        let end = self.serve();
        if end == End::Closed {
            self.wait_for_server(Instant::now() + STOP_AFTER);
        }
        self.end_tree();
        ExitCode::from(self.status.map_or(1, |c| u8::try_from(c.clamp(0, 255)).unwrap_or(1)))
    }

    fn serve(&mut self) -> End {
        loop {
            let mut fds = [
                PollFd::new(self.signals.as_fd(), PollFlags::POLLIN),
                PollFd::new(self.watch.as_fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) | Err(Errno::EINTR) => {}
                // Nothing left to watch with: stop the server rather than leave it unwatched.
                Err(_) => return End::Told,
            }
            let watch_ready = fds[1].revents().is_some_and(|r| !r.is_empty());
            if self.read_signals() {
                return End::Told;
            }
            if self.status.is_some() {
                return End::Exited;
            }
            if watch_ready && closed(&self.watch) {
                return End::Closed;
            }
        }
    }

    /// Reads the pending signals, reaping children on SIGCHLD; whether one said stop.
    fn read_signals(&mut self) -> bool {
        let mut told = false;
        while let Ok(Some(info)) = self.signals.read_signal() {
            if info.ssi_signo == Signal::SIGCHLD as u32 {
                self.reap();
            } else {
                told = true;
            }
        }
        told
    }

    /// Reaps every child that has exited, noting the server's exit code.
    fn reap(&mut self) {
        loop {
            let (pid, code) = match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) => (pid, code),
                Ok(WaitStatus::Signaled(pid, signal, _)) => (pid, 128 + signal as i32),
                Ok(WaitStatus::StillAlive) | Err(Errno::ECHILD) => return,
                Err(Errno::EINTR) | Ok(_) => continue,
                Err(_) => return,
            };
            if pid == self.server {
                self.status = Some(code);
            }
        }
    }

    /// Waits until the server has exited or `until`, whichever comes first (a signal that
    /// says stop ends the wait).
    fn wait_for_server(&mut self, until: Instant) {
        while self.status.is_none() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || self.pause(left) {
                return;
            }
        }
    }

    /// Sleeps at most `at_most`, waking on a signal; whether a signal said stop.
    fn pause(&mut self, at_most: Duration) -> bool {
        let timeout = PollTimeout::try_from(at_most).unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(self.signals.as_fd(), PollFlags::POLLIN)];
        let _ = poll(&mut fds, timeout);
        self.read_signals()
    }

    /// SIGTERM to every descendant (and the server's group), SIGKILL to those left after
    /// `KILL_AFTER`, until none is left.
    fn end_tree(&mut self) {
        let me = getpid();
        let term_until = Instant::now() + KILL_AFTER;
        let give_up = term_until + GIVE_UP_AFTER;
        let mut termed: Vec<Pid> = Vec::new();
        let _ = killpg(self.server, Signal::SIGTERM);
        loop {
            self.reap();
            let left = descendants(me);
            let now = Instant::now();
            if left.is_empty() || now >= give_up {
                return;
            }
            if now >= term_until {
                let _ = killpg(self.server, Signal::SIGKILL);
                for &pid in &left {
                    let _ = kill(pid, Signal::SIGKILL);
                }
            } else {
                // Processes born or found since the last round get their SIGTERM too.
                for &pid in &left {
                    if !termed.contains(&pid) {
                        let _ = kill(pid, Signal::SIGTERM);
                        termed.push(pid);
                    }
                }
            }
            // A child's exit wakes this at once; a deeper descendant's is seen next round.
            self.pause(Duration::from_millis(20));
        }
    }
}

/// The server starts with no signal blocked: a child inherits the mask, and std leaves it
/// as it is, so the server would otherwise never see the SIGTERM this supervisor blocks to
/// read it from a signalfd.
fn unblock_signals(cmd: &mut std::process::Command) {
    #[allow(unsafe_code)]
    // SAFETY: the hook runs in the child between fork and exec and makes two calls,
    // sigemptyset (on a local set) and sigprocmask, which are async-signal-safe; its error
    // is an OS error code, so it allocates nothing, and it takes no lock.
    unsafe {
        cmd.pre_exec(|| {
            let mut none = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
            if libc::sigemptyset(none.as_mut_ptr()) != 0
                || libc::sigprocmask(libc::SIG_SETMASK, none.as_ptr(), std::ptr::null_mut()) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Whether tmws's end of the watched pipe is closed (reads end of file; tmws never writes).
fn closed(watch: &OwnedFd) -> bool {
    let mut fds = [PollFd::new(watch.as_fd(), PollFlags::POLLIN)];
    match poll(&mut fds, PollTimeout::ZERO) {
        Ok(0) => false,
        Ok(_) => {
            let mut buf = [0u8; 64];
            !matches!(nix::unistd::read(watch, &mut buf), Ok(n) if n > 0)
        }
        Err(_) => false,
    }
}

/// Every process below `root` in the process tree, from `/proc`, zombies included.
fn descendants(root: Pid) -> Vec<Pid> {
    let proc = Path::new("/proc");
    let Ok(names) = crate::store::list_subdirs(proc, proc) else { return Vec::new() };
    let mut children: std::collections::HashMap<i32, Vec<i32>> = std::collections::HashMap::new();
    for name in names {
        let Ok(pid) = name.parse::<i32>() else { continue };
        let Ok(Some(stat)) = crate::store::read_opt(proc, &proc.join(&name).join("stat"), 4096) else { continue };
        if let Some(ppid) = parent_of(&stat) {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut out = Vec::new();
    let mut todo = vec![root.as_raw()];
    while let Some(p) = todo.pop() {
        for &c in children.get(&p).map_or(&[][..], Vec::as_slice) {
            out.push(Pid::from_raw(c));
            todo.push(c);
        }
    }
    out
}

/// The parent pid in the text of `/proc/PID/stat` ("pid (comm) state ppid …"; the command
/// name may hold spaces and parentheses, so the fields are counted from its last `)`).
fn parent_of(stat: &[u8]) -> Option<i32> {
    let text = std::str::from_utf8(stat.get(stat.iter().rposition(|b| *b == b')')? + 1..)?).ok()?;
    text.split_ascii_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_is_read_after_the_last_parenthesis_of_the_name() {
        assert_eq!(parent_of(b"42 (node) S 7 42 42 0 -1"), Some(7));
        assert_eq!(parent_of(b"42 (a) b (c)) R 9 1 1"), Some(9));
        assert_eq!(parent_of(b"42 (x"), None);
        assert_eq!(parent_of(b""), None);
    }

    #[test]
    fn this_process_has_no_descendants_until_it_starts_one() {
        let me = getpid();
        let before = descendants(me);
        let mut child = std::process::Command::new("sleep").arg("30").spawn().expect("sleep");
        let pid = Pid::from_raw(i32::try_from(child.id()).expect("a pid"));
        let during = descendants(me);
        let _ = child.kill();
        let _ = child.wait();
        assert!(!before.contains(&pid));
        assert!(during.contains(&pid));
    }
}
