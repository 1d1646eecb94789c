//! Tokens kept in the OS keyring, read through the platform's own tool: `secret-tool`
//! (the Secret Service of GNOME Keyring or KWallet, through libsecret) on Linux and the
//! BSDs, `security` (the login keychain) on macOS. Each entry is under the service `tmws`
//! and the account a tracker's `keyring` names. The tool is given no shell and a moment to
//! answer (a locked keyring may ask to be unlocked); what it prints is the token, and
//! nothing of it is logged.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The service every tmws entry is kept under.
pub const SERVICE: &str = "tmws";

/// How long the keyring's tool may take, an unlock prompt included.
const WAIT: Duration = Duration::from_secs(20);

/// The command that prints the token of `account`.
fn lookup(account: &str) -> Command {
    if cfg!(target_os = "macos") {
        let mut c = Command::new("security");
        c.args(["find-generic-password", "-s", SERVICE, "-a", account, "-w"]);
        c
    } else {
        let mut c = Command::new("secret-tool");
        c.args(["lookup", "service", SERVICE, "account", account]);
        c
    }
}

/// How a person stores the token of `account`, for messages.
pub fn how_to_store(account: &str) -> String {
    if cfg!(target_os = "macos") {
        format!("security add-generic-password -s {SERVICE} -a {account} -w")
    } else {
        format!("secret-tool store --label='tmws {account}' service {SERVICE} account {account}")
    }
}

/// The token kept for `account`, or None when there is none, the tool is missing, or it
/// did not answer in time (each said in the debug log, without the token).
pub fn token(account: &str) -> Option<String> {
    let mut cmd = lookup(account);
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut child = match cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn() {
        Ok(child) => child,
        Err(e) => {
            tracing::debug!("the OS keyring cannot be read: {program}: {e}");
            return None;
        }
    };
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < WAIT => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                tracing::debug!("{program} did not answer within {} s", WAIT.as_secs());
                return None;
            }
        }
    };
    let mut out = String::new();
    // The token is a line: a few bytes are plenty.
    let _ = child.stdout.take()?.take(16 << 10).read_to_string(&mut out);
    let token = out.lines().next().unwrap_or_default().trim().to_owned();
    if !status.success() || token.is_empty() {
        tracing::debug!("the OS keyring holds no token for {SERVICE}/{account} ({program}: {status})");
        return None;
    }
    Some(token)
}
