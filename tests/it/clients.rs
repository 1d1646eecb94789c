//! Real clients of the real binary, driven from plain tests: rmcp's MCP client over
//! `tmws mcp` (stdio), and `tmws serve` with reqwest on a loopback port. Every answer comes
//! back as an [`Answer`]: the text, or the error's category and message.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, Tool,
};
use rmcp::service::{ClientLifecycleMode, RunningService, serve_client_with_lifecycle};
use serde_json::Value;

use super::util::{PATIENCE, eventually};

/// What a surface answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The answer's text.
    Ok(String),
    /// The error's category (`not_found`, …) and message.
    Err(String, String),
}

impl Answer {
    /// The text of a good answer (panics on an error, naming it).
    pub fn text(&self) -> &str {
        match self {
            Answer::Ok(t) => t,
            Answer::Err(c, m) => panic!("expected an answer, got a {c} error: {m}"),
        }
    }

    /// Whether the answer says the index may be behind the files.
    pub fn stale(&self) -> bool {
        matches!(self, Answer::Ok(t) if t.contains("stale: true") || t.contains("\"stale\": true"))
    }
}

/// An HTTP client builder: reqwest's TLS is rustls with the ring provider, which must be
/// installed before any client is built, as tmws does.
pub fn http_builder() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// The text of a tool result.
pub fn result_text(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("")
}

/// An MCP tool result as an answer: errors carry their category as structured content.
pub fn answer_of(r: &CallToolResult) -> Answer {
    if r.is_error != Some(true) {
        return Answer::Ok(result_text(r));
    }
    let s = r.structured_content.clone().unwrap_or_default();
    let category = s["category"].as_str().unwrap_or("?").to_owned();
    Answer::Err(category, s["error"].as_str().map_or_else(|| result_text(r), str::to_owned))
}

/// `tmws mcp` on a root, with rmcp's client.
pub struct Mcp {
    pub rt: tokio::runtime::Runtime,
    pub client: RunningService<RoleClient, ClientConfig>,
    /// The server's process, spawned here rather than by rmcp's child-process transport:
    /// that one gives a server 3 s to exit once its stdin closes and then sends SIGTERM,
    /// and a loaded machine can take longer than that to record a session and exit.
    child: tokio::process::Child,
}

impl Mcp {
    /// Starts the server and initializes a session, as the client [`CLIENT`].
    pub fn start(root: &Path) -> Mcp {
        Mcp::start_as(root, &[], Protocol::Legacy, client_named(CLIENT))
    }

    /// Starts the server with `args` after `mcp`, and speaks `protocol` to it as `client`
    /// (rmcp's own name when it is the default).
    pub fn start_as(root: &Path, args: &[&str], protocol: Protocol, client: ClientConfig) -> Mcp {
        let rt = runtime();
        let (client, child) = rt.block_on(async {
            let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tmws"));
            cmd.env("TMWS_CONFIG_HOME", super::util::user_config());
            cmd.arg("--root").arg(root).arg("mcp").args(args).env_remove("TMWS_LOG");
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).kill_on_drop(true);
            let mut child = cmd.spawn().unwrap();
            let io = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
            (serve_client_with_lifecycle(client, io, protocol.lifecycle()).await.expect("initialize"), child)
        });
        Mcp { rt, client, child }
    }

    /// Sends `signal` (`INT`, `TERM`) to the server and waits for its exit code.
    #[cfg(unix)]
    pub fn signal(mut self, signal: &str) -> Option<i32> {
        let pid = self.child.id().unwrap().to_string();
        assert!(Command::new("kill").args([&format!("-{signal}"), &pid]).status().unwrap().success());
        let exited = self.rt.block_on(async { tokio::time::timeout(PATIENCE, self.child.wait()).await });
        exited.unwrap_or_else(|_| panic!("tmws mcp did not exit within {PATIENCE:?} of SIG{signal}")).unwrap().code()
    }

    pub fn tools(&self) -> Vec<Tool> {
        self.rt.block_on(self.client.list_all_tools()).unwrap()
    }

    pub fn result(&self, tool: &str, args: Value) -> CallToolResult {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args.as_object().unwrap().clone());
        self.rt.block_on(self.client.call_tool(params)).unwrap()
    }

    pub fn call(&self, tool: &str, args: Value) -> Answer {
        answer_of(&self.result(tool, args))
    }

    /// Calls until the answer is not stale (the first sync, or a watcher catching up).
    pub fn call_fresh(&self, tool: &str, args: Value) -> Answer {
        eventually(&format!("a fresh answer of {tool}"), || {
            let a = self.call(tool, args.clone());
            if a.stale() { Err(a) } else { Ok(a) }
        })
    }

    /// Ends the session (the server's stdin closes) and waits for the server to exit, so
    /// that whatever it does at the end (recording the session) is done on return.
    pub fn stop(mut self) {
        self.rt.block_on(self.client.cancel()).unwrap();
        let exited = self.rt.block_on(async { tokio::time::timeout(PATIENCE, self.child.wait()).await });
        let status =
            exited.unwrap_or_else(|_| panic!("tmws mcp did not exit within {PATIENCE:?} of its stdin closing"));
        let status = status.unwrap();
        assert!(status.success(), "tmws mcp exited with {status}");
    }
}

/// A generation of the MCP protocol: the `initialize` handshake, or the stateless one
/// (`server/discover`, then requests that carry who the client is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Legacy,
    Stateless,
}

impl Protocol {
    pub const BOTH: [Protocol; 2] = [Protocol::Legacy, Protocol::Stateless];

    fn lifecycle(self) -> ClientLifecycleMode {
        match self {
            Protocol::Legacy => ClientLifecycleMode::Initialize,
            Protocol::Stateless => {
                ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
            }
        }
    }
}

/// The name [`Mcp::start`]'s client gives.
pub const CLIENT: &str = "test-agent";

/// A client that calls itself `name`.
pub fn client_named(name: &str) -> ClientConfig {
    ClientConfig::new(ClientCapabilities::default(), Implementation::new(name, "1.0"))
}

/// rmcp's client over `tmws serve`'s `/mcp` with `token`, speaking `protocol` as `client`.
pub fn mcp_over_http(
    rt: &tokio::runtime::Runtime,
    url: &str,
    token: &str,
    protocol: Protocol,
    client: ClientConfig,
) -> RunningService<RoleClient, ClientConfig> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{url}/mcp")).auth_header(token.to_owned());
    let _entered = rt.enter();
    let transport = StreamableHttpClientTransport::with_client(http_builder().no_proxy().build().unwrap(), config);
    rt.block_on(serve_client_with_lifecycle(client, transport, protocol.lifecycle())).expect("connect")
}

/// A running `tmws serve` on 127.0.0.1 and a free port; killed when dropped.
pub struct Serve {
    pub child: Child,
    pub url: String,
    stderr: Option<std::thread::JoinHandle<String>>,
    pub rt: tokio::runtime::Runtime,
    pub http: reqwest::Client,
    pub token: String,
}

/// A response: status, content type and body.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub content_type: String,
    pub body: String,
}

impl Response {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// As an answer: the body of a 200, or the category and message of an error.
    pub fn answer(&self) -> Answer {
        if self.status == 200 {
            return Answer::Ok(self.body.clone());
        }
        let v = self.json();
        Answer::Err(v["category"].as_str().unwrap_or("?").to_owned(), v["error"].as_str().unwrap_or("?").to_owned())
    }
}

impl Serve {
    /// Starts `tmws serve` (with `TMWS_TOKEN` when given) and waits until the first sync is
    /// done, so that answers are exact.
    pub fn start(root: &Path, token: Option<&str>) -> Serve {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tmws"));
        cmd.env("TMWS_CONFIG_HOME", super::util::user_config());
        cmd.arg("--root")
            .arg(root)
            .args(["serve", "--addr", "127.0.0.1:0"])
            .env_remove("TMWS_LOG")
            .env_remove("TMWS_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(t) = token {
            cmd.env("TMWS_TOKEN", t);
        }
        let mut child = cmd.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let url =
            line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("first line: {line:?}")).to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        eventually("the end of the first sync (health says ready)", || {
            let h = health(&url);
            if h.contains("\"ready\":true") { Ok(()) } else { Err(h) }
        });
        let token = match token {
            Some(t) => t.to_owned(),
            None => std::fs::read_to_string(root.join(".tmws/cache/token")).unwrap().trim().to_owned(),
        };
        let http = http_builder().no_proxy().build().unwrap();
        Serve { child, url, stderr: Some(stderr), rt: runtime(), http, token }
    }

    /// Sends a request with the bearer token.
    pub fn send(&self, request: reqwest::RequestBuilder) -> Response {
        self.rt.block_on(async {
            let r = request.bearer_auth(&self.token).send().await.unwrap();
            let status = r.status().as_u16();
            let content_type = r
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .map(|v| v.to_str().unwrap_or("").to_owned())
                .unwrap_or_default();
            Response { status, content_type, body: r.text().await.unwrap() }
        })
    }

    pub fn get(&self, path: &str) -> Response {
        self.send(self.http.get(format!("{}{path}", self.url)))
    }

    pub fn post(&self, path: &str, body: &str) -> Response {
        self.send(self.http.post(format!("{}{path}", self.url)).body(body.to_owned()))
    }

    pub fn delete(&self, path: &str) -> Response {
        self.send(self.http.delete(format!("{}{path}", self.url)))
    }

    /// Sends SIGTERM and waits for the exit; returns the code and stderr.
    #[cfg(unix)]
    pub fn terminate(mut self) -> (Option<i32>, String) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let status = eventually("the exit of tmws serve on SIGTERM", || self.child.try_wait().unwrap());
        let stderr = self.stderr.take().unwrap().join().unwrap();
        (status.code(), stderr)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET /health` over a plain socket.
pub fn health(url: &str) -> String {
    let addr = url.strip_prefix("http://").unwrap();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer
}

/// Percent-encodes a query string value.
pub fn encode(v: &str) -> String {
    let mut out = String::new();
    for b in v.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b',' | b'*' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}
