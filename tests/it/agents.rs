//! What the tests of real agent command lines share: finding the installed agent, a
//! throwaway home for it, its command line set up to talk to a scripted model on a loopback
//! port and nothing else, a run of it to its end, and the answers a scripted model sends.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use tempfile::TempDir;

use super::util::{TestRoot, eventually, missing, repo, user_config};

/// The agent program `var` names, else the one `.ci/run` installs at `default` under the
/// target folder; a missing one is [`missing`].
pub fn installed(var: &str, default: &str, what: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(p.exists(), "{var} names {}, which does not exist", p.display());
        return Some(p);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo().join("target"), PathBuf::from);
    let found = Some(target.join(default)).filter(|p| p.exists());
    if found.is_none() {
        missing(&format!("no {what} (set {var}, or run .ci/run, which installs it in target/{default})"));
    }
    found
}

/// An answer of JSON.
pub fn json_response(status: StatusCode, v: &Value) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(v.to_string()))
        .unwrap()
}

/// An answer of server-sent events, each named by its `type`.
pub fn sse(events: &[Value]) -> Response {
    let text: String =
        events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())).collect();
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from(text))
        .unwrap()
}

/// A child process killed if the test fails before it exits.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What a run of an agent left: its exit code, its output, its debug log (Claude Code's).
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub debug: String,
    /// The throwaway home it ran with (its config, caches and logs).
    _home: TempDir,
}

/// A throwaway home for an agent, and PATH with the folder of the tmws under test first.
pub fn agent_home(prefix: &str) -> (TempDir, std::ffi::OsString) {
    let home = tempfile::Builder::new().prefix(prefix).tempdir().unwrap();
    let tmws_dir = Path::new(env!("CARGO_BIN_EXE_tmws")).parent().unwrap().to_path_buf();
    let inherited = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(std::iter::once(tmws_dir).chain(std::env::split_paths(&inherited))).unwrap();
    (home, path)
}

/// Runs `cmd` (nothing of the user's environment but what it sets, stdin empty) to its end,
/// its output kept in `home`.
pub fn run_agent(mut cmd: Command, home: TempDir, debug: Option<&Path>) -> Run {
    let (stdout, stderr) = (home.path().join("stdout.txt"), home.path().join("stderr.txt"));
    let child = cmd
        .env("TMWS_CONFIG_HOME", user_config())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let mut running = Running(child);
    let status = eventually("the agent to finish its run", || running.0.try_wait().unwrap());
    Run {
        code: status.code(),
        stdout: std::fs::read_to_string(&stdout).unwrap(),
        stderr: std::fs::read_to_string(&stderr).unwrap(),
        debug: debug.map(|d| std::fs::read_to_string(d).unwrap_or_default()).unwrap_or_default(),
        _home: home,
    }
}

/// `claude -p PROMPT --output-format json` in `root` against the scripted model at `url`,
/// with a throwaway home, nothing of the user's environment, telemetry, updates and other
/// traffic off, and the folder of the tmws under test first on PATH; `allowed` (its
/// `--allowedTools`) runs without a prompt, which `-p` could not show. Tool search is off so
/// that MCP tools are offered with their schemas in every request rather than looked up by
/// name, and MCP connections are made before the first request, so that the first turn sees
/// them. The command, the home, and the debug log it writes.
pub fn claude_command(
    claude: &Path,
    root: &TestRoot,
    url: &str,
    prompt: &str,
    allowed: &str,
) -> (Command, TempDir, PathBuf) {
    let (home, path) = agent_home("tmws-claude-home-");
    let debug = home.path().join("claude-debug.log");
    let mut cmd = Command::new(claude);
    cmd.args(["-p", prompt, "--output-format", "json", "--allowedTools", allowed, "--no-session-persistence"])
        .arg("--debug-file")
        .arg(&debug)
        .current_dir(root.path())
        .env_clear()
        .env("PATH", path)
        .env("HOME", home.path())
        .env("CLAUDE_CONFIG_DIR", home.path().join(".claude"))
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .env("XDG_CACHE_HOME", home.path().join(".cache"))
        .env("XDG_DATA_HOME", home.path().join(".local/share"))
        .env("XDG_STATE_HOME", home.path().join(".local/state"))
        .env("ANTHROPIC_BASE_URL", url)
        // The scripted model takes any key; Claude Code wants one to start.
        .env("ANTHROPIC_API_KEY", "scripted-model-takes-any-key")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("ENABLE_TOOL_SEARCH", "false")
        .env("MCP_CONNECTION_NONBLOCKING", "false");
    (cmd, home, debug)
}

/// `gemini -p PROMPT --output-format json` in `root` against the scripted model at `url`,
/// with a throwaway home whose settings choose an API key (any: the model is scripted), and
/// turn usage statistics, telemetry and updates off. The project is a trusted folder
/// (`~/.gemini/trustedFolders.json`, as trusting it once in an interactive session leaves
/// it): Gemini CLI reads a project's `.gemini/settings.json` (its MCP servers, its hooks)
/// only in a trusted folder (`--skip-trust` lets it run, but without them). Every tool call
/// is approved (`--approval-mode yolo`), which `-p` could not ask; the model is named, so
/// that no routing request precedes the turn. The command and the home.
pub fn gemini_command(gemini: &Path, root: &TestRoot, url: &str, prompt: &str) -> (Command, TempDir) {
    let (home, path) = agent_home("tmws-gemini-home-");
    let settings = json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
    });
    let project = root.path().canonicalize().unwrap().display().to_string();
    std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
    std::fs::write(home.path().join(".gemini/settings.json"), settings.to_string()).unwrap();
    std::fs::write(home.path().join(".gemini/trustedFolders.json"), json!({project: "TRUST_FOLDER"}).to_string())
        .unwrap();
    let mut cmd = Command::new(gemini);
    cmd.args([
        "-m",
        "scripted-model",
        "-p",
        prompt,
        "--output-format",
        "json",
        "--skip-trust",
        "--approval-mode",
        "yolo",
    ])
    .current_dir(root.path())
    .env_clear()
    .env("PATH", path)
    .env("HOME", home.path())
    .env("XDG_CONFIG_HOME", home.path().join(".config"))
    .env("XDG_CACHE_HOME", home.path().join(".cache"))
    .env("GOOGLE_GEMINI_BASE_URL", url)
    .env("GEMINI_API_KEY", "scripted-model-takes-any-key");
    (cmd, home)
}

/// A turn of the Messages API answering `body`: `block` (a `tool_use` or a `text` block) as
/// one message, streamed as server-sent events when the request asks for a stream.
pub fn messages_turn(body: &Value, seq: usize, block: Value) -> Response {
    let tool = block["type"] == "tool_use";
    let stop = if tool { "tool_use" } else { "end_turn" };
    let model = body["model"].as_str().unwrap_or("scripted").to_owned();
    let id = format!("msg_scripted_{seq}");
    if body["stream"] != true {
        return json_response(
            StatusCode::OK,
            &serde_json::json!({"id": id, "type": "message", "role": "assistant", "model": model, "content": [block],
                "stop_reason": stop, "stop_sequence": null, "usage": {"input_tokens": 100, "output_tokens": 10}}),
        );
    }
    let (start, delta) = if tool {
        (
            serde_json::json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
            serde_json::json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
        )
    } else {
        (
            serde_json::json!({"type": "text", "text": ""}),
            serde_json::json!({"type": "text_delta", "text": block["text"]}),
        )
    };
    sse(&[
        serde_json::json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 100, "output_tokens": 1}}}),
        serde_json::json!({"type": "content_block_start", "index": 0, "content_block": start}),
        serde_json::json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        serde_json::json!({"type": "content_block_stop", "index": 0}),
        serde_json::json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 10}}),
        serde_json::json!({"type": "message_stop"}),
    ])
}
