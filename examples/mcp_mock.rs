//! A tiny real MCP server over stdio (rmcp), for tests and demos of the registry and the
//! pool: its name, its tools and how it misbehaves are set by flags (or `MCP_MOCK_*`
//! environment variables).
//!
//! ```sh
//! cargo run --example mcp_mock -- --name serena --tools 20
//! cargo run --example mcp_mock -- --fail-start "no licence key"
//! ```
//!
//! Tools: `echo {text}`, `sleep {ms}`, `stderr {text}` (writes the text to stderr),
//! `crash` (exits with status 3 in the middle of the call), with `--big` also `big {mb}`
//! (answers with a text of `mb` MiB), and `--tools N` generated ones (`tool_0` …) that
//! answer with their name and arguments (`--tool-bytes N` pads their descriptions to N
//! bytes; `--schema-depth N` nests `echo`'s input schema N objects deep). `--crash-on TOOL` makes any tool
//! crash; `--fail-start MESSAGE` exits 1 before answering `initialize` (`--fail-if-exists
//! FILE`: only while FILE exists, with its text as the message); `--startup-ms`
//! delays the start (a slow cold start), `--start-once FILE` until FILE exists (tests hold
//! servers in their start and let them go); `--pid-log FILE` appends `NAME PID` to FILE on
//! start; `--call-log FILE` appends `NAME TOOL` to FILE as each call begins (tests know
//! a call is under way); `--linger-ms` keeps the process alive that long after stdin closes;
//! `--spawn-descendants` starts, before serving, a child in a process group of its own and
//! (on Linux) a grandchild in a session of its own whose parent exits at once, both
//! sleeping until killed, and appends `NAME/group PID` and `NAME/session PID` to the pid
//! log: what a server that leaves helpers behind looks like.

use std::borrow::Cow;
use std::io::Write as _;
use std::sync::Arc;

use clap::Parser;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value, json};

#[derive(Debug, Clone, Parser)]
#[command(about = "A tiny MCP server for tests and demos")]
struct Args {
    /// The server's name (in `initialize` and in answers).
    #[arg(long, env = "MCP_MOCK_NAME", default_value = "mock")]
    name: String,
    /// How many generated tools (`tool_0` …) to list besides the built-in ones.
    #[arg(long, env = "MCP_MOCK_TOOLS", default_value_t = 0)]
    tools: usize,
    /// Pad the description of each generated tool to this many bytes (a large registry).
    #[arg(long, default_value_t = 0)]
    tool_bytes: usize,
    /// Nest the input schema of `echo` this many objects deep (a schema no reader takes).
    #[arg(long, default_value_t = 0)]
    schema_depth: usize,
    /// Exit (status 3) when this tool is called.
    #[arg(long, env = "MCP_MOCK_CRASH_ON")]
    crash_on: Option<String>,
    /// Print MESSAGE to stderr and exit 1 before answering anything.
    #[arg(long, env = "MCP_MOCK_FAIL_START", value_name = "MESSAGE")]
    fail_start: Option<String>,
    /// Like --fail-start, but only while FILE exists (a server that broke after the build).
    #[arg(long, env = "MCP_MOCK_FAIL_IF_EXISTS", value_name = "FILE")]
    fail_if_exists: Option<std::path::PathBuf>,
    /// Wait this long before serving (a slow cold start).
    #[arg(long, env = "MCP_MOCK_STARTUP_MS", default_value_t = 0)]
    startup_ms: u64,
    /// Wait before serving until FILE exists (a start held as long as a test wants).
    #[arg(long, value_name = "FILE")]
    start_once: Option<std::path::PathBuf>,
    /// Append `NAME PID` to FILE on start (tests follow the processes by pid).
    #[arg(long, env = "MCP_MOCK_PID_LOG", value_name = "FILE")]
    pid_log: Option<std::path::PathBuf>,
    /// Append `NAME TOOL` to FILE as each call begins (tests know a call is under way).
    #[arg(long, value_name = "FILE")]
    call_log: Option<std::path::PathBuf>,
    /// After stdin closes, stay this long before exiting (a server slow to stop).
    #[arg(long, env = "MCP_MOCK_LINGER_MS", default_value_t = 0)]
    linger_ms: u64,
    /// Also offer `big {mb}`, which answers with a text of `mb` MiB.
    #[arg(long)]
    big: bool,
    /// Start a child in its own process group and a grandchild in its own session, and log
    /// their pids to the pid log.
    #[arg(long)]
    spawn_descendants: bool,
    /// (A descendant) sleep until killed.
    #[arg(long, hide = true)]
    hold: bool,
    /// (A descendant) with --hold: first leave this session for a new one.
    #[arg(long, hide = true)]
    setsid: bool,
    /// (A descendant) start `--hold --setsid`, print its pid and exit.
    #[arg(long, hide = true)]
    detach: bool,
}

#[derive(Debug, Clone)]
struct Mock {
    args: Arc<Args>,
}

fn schema(props: Value) -> Arc<serde_json::Map<String, Value>> {
    let v = json!({"type": "object", "properties": props});
    Arc::new(v.as_object().cloned().unwrap_or_default())
}

impl Mock {
    fn tools(&self) -> Vec<Tool> {
        let mut echo = json!({"text": {"type": "string"}});
        for _ in 0..self.args.schema_depth {
            echo = json!({"nested": {"type": "object", "properties": echo}});
        }
        let mut tools = vec![
            Tool::new("echo", "Answers with the text it is given.", schema(echo)),
            Tool::new("sleep", "Sleeps `ms` milliseconds, then answers.", schema(json!({"ms": {"type": "integer"}}))),
            Tool::new("stderr", "Writes `text` to standard error.", schema(json!({"text": {"type": "string"}}))),
            Tool::new("crash", "Exits in the middle of the call.", schema(json!({}))),
        ];
        if self.args.big {
            tools.push(Tool::new(
                "big",
                "Answers with a text of `mb` MiB.",
                schema(json!({"mb": {"type": "integer"}})),
            ));
        }
        for i in 0..self.args.tools {
            let mut description =
                format!("Generated tool number {i} of {}: answers with its arguments.", self.args.name);
            while description.len() < self.args.tool_bytes {
                description.push_str(" More words.");
            }
            tools.push(Tool::new(
                Cow::Owned(format!("tool_{i}")),
                Cow::Owned(description),
                schema(json!({"query": {"type": "string"}})),
            ));
        }
        tools
    }
}

fn crash(name: &str) -> ! {
    eprintln!("mcp_mock {name}: crashing on purpose");
    let _ = std::io::stderr().flush();
    std::process::exit(3);
}

impl ServerHandler for Mock {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(self.args.name.clone(), "0.1.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let args = request.arguments.clone().unwrap_or_default();
        let text = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        let name = request.name.as_ref();
        if let Some(log) = &self.args.call_log {
            let line = format!("{} {name}\n", self.args.name);
            let appended = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .and_then(|mut f| f.write_all(line.as_bytes()));
            if let Err(e) = appended {
                eprintln!("mcp_mock: cannot write {}: {e}", log.display());
            }
        }
        if self.args.crash_on.as_deref() == Some(name) || name == "crash" {
            crash(&self.args.name);
        }
        let answer = match name {
            "echo" => text("text"),
            "sleep" => {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                format!("slept {ms} ms")
            }
            "stderr" => {
                eprintln!("{}", text("text"));
                "written to stderr".to_owned()
            }
            "big" if self.args.big => {
                let mb = args.get("mb").and_then(Value::as_u64).unwrap_or(0);
                "x".repeat(usize::try_from(mb).unwrap_or(0) << 20)
            }
            other
                if other
                    .strip_prefix("tool_")
                    .and_then(|n| n.parse::<usize>().ok())
                    .is_some_and(|n| n < self.args.tools) =>
            {
                format!("{}/{other}: {}", self.args.name, Value::Object(args.clone()))
            }
            other => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(format!("no tool `{other}`"))]).into());
            }
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(answer)]).into())
    }
}

/// Sleeps until killed (a descendant), first in a session of its own if asked.
fn hold(setsid: bool) -> ! {
    #[cfg(target_os = "linux")]
    if setsid {
        let _ = nix::unistd::setsid();
    }
    #[cfg(not(target_os = "linux"))]
    let _ = setsid;
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

/// Starts the descendants of `--spawn-descendants`; their log lines.
fn spawn_descendants(name: &str) -> std::io::Result<String> {
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe()?;
    let mut group = Command::new(&exe);
    group.arg("--hold").stdin(Stdio::null()).stdout(Stdio::null());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut group, 0);
    let group = group.spawn()?;
    let mut lines = format!("{name}/group {}\n", group.id());
    if cfg!(target_os = "linux") {
        // The middle process exits at once: its child is an orphan in a session of its own.
        let out = Command::new(&exe).arg("--detach").stdin(Stdio::null()).stderr(Stdio::inherit()).output()?;
        lines.push_str(&format!("{name}/session {}", String::from_utf8_lossy(&out.stdout)));
    }
    Ok(lines)
}

fn main() {
    let args = Args::parse();
    if args.hold {
        hold(args.setsid);
    }
    if args.detach {
        let exe = std::env::current_exe().expect("the mock's path");
        // Left to run on its own: this process exits now, so it is re-parented.
        #[allow(clippy::zombie_processes, reason = "the child outlives this process on purpose")]
        let child = std::process::Command::new(exe)
            .args(["--hold", "--setsid"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("a descendant");
        // The parent reads the pid on this process's stdout.
        let _ = writeln!(std::io::stdout(), "{}", child.id());
        return;
    }
    let mut lines = format!("{} {}\n", args.name, std::process::id());
    if args.spawn_descendants {
        match spawn_descendants(&args.name) {
            Ok(more) => lines.push_str(&more),
            Err(e) => eprintln!("mcp_mock: cannot start descendants: {e}"),
        }
    }
    if let Some(log) = &args.pid_log {
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .and_then(|mut f| f.write_all(lines.as_bytes()));
        if let Err(e) = appended {
            eprintln!("mcp_mock: cannot write {}: {e}", log.display());
        }
    }
    let linger = std::time::Duration::from_millis(args.linger_ms);
    if let Some(file) = args.fail_if_exists.as_ref().filter(|f| f.exists()) {
        let message = std::fs::read_to_string(file).unwrap_or_default();
        eprintln!("mcp_mock {}: {}", args.name, message.trim());
        std::process::exit(1);
    }
    if let Some(message) = &args.fail_start {
        eprintln!("mcp_mock {}: {message}", args.name);
        std::process::exit(1);
    }
    if args.startup_ms > 0 {
        std::thread::sleep(std::time::Duration::from_millis(args.startup_ms));
    }
    if let Some(file) = &args.start_once {
        while !file.exists() {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    let served = runtime.block_on(async move {
        let service = Mock { args: Arc::new(args) }.serve(rmcp::transport::stdio()).await?;
        service.waiting().await?;
        Ok::<(), Box<dyn std::error::Error>>(())
    });
    if let Err(e) = served {
        eprintln!("mcp_mock: {e}");
        std::process::exit(2);
    }
    std::thread::sleep(linger);
}
