//! Downstream MCP servers (docs/registry.md, docs/pool.md): starting one from its registry
//! connection and talking to it with rmcp's client.
//!
//! `start` is the one way a server is started, for `tmws registry build` (`introspect`:
//! start, read `initialize` and `tools/list`, measure the cold start, stop) and for the
//! lazy pool (`Pool`) that `tool_call` goes through. A stdio server's process is
//! `process.rs`'s: the program its command resolves to in the root, run in the root
//! (`Exec`), with `TMWS_DOWNSTREAM` set (a tmws started so serves no `tool_call`); on Linux
//! under a supervisor (`supervisor.rs`) that ends everything the server started when it is
//! closed or tmws dies, elsewhere in its own process group; what it sends is read a message
//! at a time, none over 16 MiB or nested deeper than a JSON reader takes (127 levels), which
//! ends the connection with an error that says so. Its stderr is drained all the
//! time (a chatty server never blocks on a full pipe) and the tail is kept for error
//! messages. `${VAR}` references in the connection are filled from the environment; a
//! missing variable is an error that names it.

mod lazy;
mod process;
#[cfg(target_os = "linux")]
mod supervisor;

pub use lazy::{Called, LiveServer, Pool, Settings, Target};

/// The variable tmws sets in the environment of every downstream server it starts. A tmws
/// that finds it in its own environment was started, directly or through a wrapper, as a
/// server of another tmws, and serves no `tool_call`: a registry entry that runs tmws
/// itself can never make calls that start tmws again and again (docs/trust-boundary.md).
pub const DOWNSTREAM_MARKER: &str = "TMWS_DOWNSTREAM";

/// Whether this process runs as a downstream server of a tmws (or below one).
pub fn is_downstream() -> bool {
    std::env::var_os(DOWNSTREAM_MARKER).is_some_and(|v| !v.is_empty())
}

/// How a stdio server's process is started: the program to execute (its command resolved
/// against the root, as the user approved it) and the folder it runs in (the root), never
/// the folder tmws happens to run in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exec {
    /// What to execute; None: the command as written.
    pub program: Option<std::path::PathBuf>,
    /// The working folder; None: tmws' own.
    pub cwd: Option<std::path::PathBuf>,
}
#[cfg(target_os = "linux")]
pub use supervisor::supervise_if_asked;

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncReadExt;

use crate::parse::clients::Connection;

/// The binary's first call; there is no supervisor on this system.
#[cfg(not(target_os = "linux"))]
pub fn supervise_if_asked() -> Option<std::process::ExitCode> {
    None
}

/// What a server said about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Introspection {
    pub name: String,
    pub instructions: Option<String>,
    /// From spawn to the `initialize` answer.
    pub cold_start: Duration,
    /// (name, description, input schema), in the server's order.
    pub tools: Vec<(String, String, Value)>,
}

/// How many bytes of a failed server's stderr an error shows.
const STDERR_TAIL: usize = 600;
/// How many bytes of a server's stderr are kept.
const STDERR_KEEP: usize = 4096;

/// Fills `${VAR}` references from the environment.
pub fn resolve(value: &str) -> Result<String, String> {
    match value.strip_prefix("${").and_then(|v| v.strip_suffix('}')) {
        Some(var) => std::env::var(var).map_err(|_| format!("environment variable {var} is not set")),
        None => Ok(value.to_owned()),
    }
}

/// The last bytes a server wrote to stderr.
#[derive(Debug, Clone, Default)]
pub struct StderrTail(Arc<Mutex<Vec<u8>>>);

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kept.extend_from_slice(bytes);
        if kept.len() > STDERR_KEEP {
            let cut = kept.len() - STDERR_KEEP;
            kept.drain(..cut);
        }
    }

    /// The last `STDERR_TAIL` bytes, on a char boundary, trimmed.
    pub fn tail(&self) -> String {
        let kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let text = String::from_utf8_lossy(&kept);
        let t = text.trim();
        let mut start = t.len().saturating_sub(STDERR_TAIL);
        while !t.is_char_boundary(start) {
            start += 1;
        }
        t[start..].to_owned()
    }

    /// `why`, with the stderr tail when there is one.
    pub fn explain(&self, why: &str) -> String {
        let t = self.tail();
        if t.is_empty() { why.to_owned() } else { format!("{why}; stderr: {t}") }
    }
}

/// A started server: the client session, its process and its stderr.
#[derive(Debug)]
pub(crate) struct Started {
    pub client: RunningService<RoleClient, ()>,
    pub stderr: StderrTail,
    /// Ends when the server's stderr does (the process is gone).
    pub drained: Option<tokio::task::JoinHandle<()>>,
    /// From spawn to the `initialize` answer.
    pub cold_start: Duration,
    /// Set when the server sent a message over a limit (its connection then ends).
    pub oversized: Arc<AtomicU8>,
}

/// Why a server's messages stopped, when it sent one over a limit (too long, too deep).
pub(crate) fn over_limit(oversized: &AtomicU8) -> Option<String> {
    process::cut_reason(oversized.load(Ordering::Relaxed))
}

/// Starts the server and waits for its `initialize` answer, within `timeout`. On failure the
/// process is gone and the error carries the tail of its stderr.
pub(crate) async fn start(conn: &Connection, exec: &Exec, timeout: Duration) -> Result<Started, String> {
    match conn.kind.as_str() {
        "stdio" => start_stdio(conn, exec, timeout).await,
        "http" | "streamable-http" => connect_http(conn, timeout).await,
        other => Err(format!(
            "`{other}` servers (the old HTTP+SSE transport) are not supported; use the server's streamable HTTP \
endpoint (`type: http`)"
        )),
    }
}

/// Headers that the streamable HTTP transport sets itself.
const TRANSPORT_HEADERS: [&str; 3] = ["accept", "mcp-session-id", "last-event-id"];

/// Connects to a streamable HTTP server and waits for its `initialize` answer.
async fn connect_http(conn: &Connection, timeout: Duration) -> Result<Started, String> {
    use reqwest::header::{HeaderName, HeaderValue};
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let url = resolve(conn.url.as_deref().ok_or("no url")?)?;
    // reqwest's TLS is rustls with the ring provider, which must be in place before any
    // client is made (https or not); installing it again changes nothing.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut headers = std::collections::HashMap::new();
    for (k, v) in &conn.headers {
        if TRANSPORT_HEADERS.contains(&k.to_ascii_lowercase().as_str()) {
            continue;
        }
        let name = HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("header `{k}`: {e}"))?;
        let value = HeaderValue::from_str(&resolve(v)?).map_err(|e| format!("header `{k}`: {e}"))?;
        headers.insert(name, value);
    }
    let client = reqwest::Client::builder()
        .connect_timeout(timeout)
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
    let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(headers);
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let started = Instant::now();
    match tokio::time::timeout(timeout, ().serve(transport)).await {
        Ok(Ok(client)) => {
            let (stderr, oversized) = (StderrTail::default(), Arc::default());
            Ok(Started { client, stderr, drained: None, cold_start: started.elapsed(), oversized })
        }
        Ok(Err(e)) => Err(format!("{url}: initialize failed: {}", plain(&e))),
        Err(_) => Err(format!("{url}: no answer to initialize within {} ms", timeout.as_millis())),
    }
}

/// An rmcp error in plain words: its message without the transport's type names, and the
/// deepest cause (`Connection refused`) when there is one.
fn plain(e: &(dyn std::error::Error + 'static)) -> String {
    let text = e.to_string();
    let mut msg = text.rsplit_once("] error: ").map_or(text.as_str(), |(_, m)| m);
    msg = msg.split(", when send ").next().unwrap_or(msg);
    let (msg, explained) = match msg {
        "Auth required" => ("the server refused the credentials (401); check the headers of its config", true),
        m => (m.strip_prefix("Client error: ").unwrap_or(m), false),
    };
    if explained {
        return msg.to_owned();
    }
    let mut deepest = None;
    // rmcp's initialize error holds the transport's error in a field that is not its
    // `source`: the chain (a refused certificate, a refused connection) starts there.
    let mut source = match e.downcast_ref::<rmcp::service::ClientInitializeError>() {
        Some(rmcp::service::ClientInitializeError::TransportError { error, .. }) => {
            Some(error as &(dyn std::error::Error + 'static))
        }
        _ => e.source(),
    };
    while let Some(s) = source {
        deepest = Some(s);
        // The HTTP client's own error is a variant's field, not a source either.
        source = match s.downcast_ref::<rmcp::transport::streamable_http_client::StreamableHttpError<reqwest::Error>>()
        {
            Some(rmcp::transport::streamable_http_client::StreamableHttpError::Client(inner)) => {
                Some(inner as &(dyn std::error::Error + 'static))
            }
            _ => s.source(),
        };
    }
    match deepest.map(ToString::to_string) {
        Some(cause) if !msg.contains(&cause) && !cause.contains(msg) => format!("{msg}: {cause}"),
        _ => msg.to_owned(),
    }
}

/// Starts a stdio server and waits for its `initialize` answer.
async fn start_stdio(conn: &Connection, exec: &Exec, timeout: Duration) -> Result<Started, String> {
    let started = Instant::now();
    let spawned = process::spawn(conn, exec)?;
    let stderr = StderrTail::default();
    let sink = stderr.clone();
    let stderr_pipe = spawned.stderr;
    let drained = tokio::spawn(async move {
        let Some(mut pipe) = stderr_pipe else { return };
        let mut buf = [0u8; 1024];
        while let Ok(n) = pipe.read(&mut buf).await {
            if n == 0 {
                break;
            }
            sink.push(&buf[..n]);
        }
    });
    let oversized = spawned.oversized;
    let why = match tokio::time::timeout(timeout, ().serve(spawned.transport)).await {
        Ok(Ok(client)) => {
            let cold_start = started.elapsed();
            return Ok(Started { client, stderr, drained: Some(drained), cold_start, oversized });
        }
        Ok(Err(e)) => format!("initialize failed: {}", over_limit(&oversized).unwrap_or_else(|| e.to_string())),
        Err(_) => format!("no answer to initialize within {} ms", timeout.as_millis()),
    };
    // The transport (and with it the process) is gone: stderr ends soon.
    let _ = tokio::time::timeout(Duration::from_secs(2), drained).await;
    if spawned.supervised {
        // The supervisor could not start the command, and said why.
        let tail = stderr.tail();
        if tail.starts_with(process::CANNOT_START_PREFIX) && !tail.contains('\n') {
            return Err(tail);
        }
    }
    Err(stderr.explain(&why))
}

/// Starts the server, reads what it offers, and stops it; within `timeout`.
pub async fn introspect(conn: &Connection, exec: &Exec, timeout: Duration) -> Result<Introspection, String> {
    let deadline = Instant::now() + timeout;
    let s = start(conn, exec, timeout).await?;
    let info = s.client.peer_info();
    let left = deadline.saturating_duration_since(Instant::now());
    let tools = match tokio::time::timeout(left, s.client.list_all_tools()).await {
        Ok(Ok(tools)) => tools,
        Ok(Err(e)) => {
            let _ = s.client.cancel().await;
            let why = over_limit(&s.oversized).map_or_else(|| e.to_string(), |why| format!("the server {why}"));
            return Err(s.stderr.explain(&format!("tools/list failed: {why}")));
        }
        Err(_) => {
            let _ = s.client.cancel().await;
            return Err(s.stderr.explain(&format!("no answer within {} ms", timeout.as_millis())));
        }
    };
    let _ = s.client.cancel().await;
    Ok(Introspection {
        name: info.as_ref().and_then(|i| i.server_info.as_ref()).map(|s| s.name.clone()).unwrap_or_default(),
        instructions: info.and_then(|i| i.instructions.clone()),
        cold_start: s.cold_start,
        tools: tools
            .into_iter()
            .map(|t| {
                let schema = Value::Object((*t.input_schema).clone());
                (t.name.to_string(), t.description.map(|d| d.to_string()).unwrap_or_default(), schema)
            })
            .collect(),
    })
}
