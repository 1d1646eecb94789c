//! Real agent command lines, run offline: Claude Code (npm `@anthropic-ai/claude-code`,
//! pinned in `.ci/run`, which installs it in `target/claude`; `TMWS_CLAUDE` names another)
//! runs its whole agent loop in a project that `tmws init --mcp-client claude` made. Its model
//! is a scripted Messages API on a loopback port ([`Model`]): each turn asks for the next
//! scripted tool call, and once every call has its result the model says it is done. Claude
//! Code starts `tmws mcp` from the project's `.mcp.json` by itself, and stops it with SIGINT
//! when the run ends; the tests check what it offered the model, what tmws answered, who tmws
//! says wrote and verified, and the session tmws recorded.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};
use tempfile::TempDir;

use super::util::{TestRoot, eventually, mcp_tools, missing, repo, user_config};

/// The Claude Code the tests run: `TMWS_CLAUDE`, else the one `.ci/run` installs.
fn claude() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TMWS_CLAUDE").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(p.exists(), "TMWS_CLAUDE names {}, which does not exist", p.display());
        return Some(p);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo().join("target"), PathBuf::from);
    let found = Some(target.join("claude/node_modules/.bin/claude")).filter(|p| p.exists());
    if found.is_none() {
        missing("no Claude Code (set TMWS_CLAUDE, or run .ci/run, which installs it in target/claude)");
    }
    found
}

/// One scripted tool call: the tool's name as the model sees it and its input.
struct Step {
    tool: &'static str,
    input: Value,
}

/// A scripted model behind the Messages API (`POST /v1/messages`, streamed as server-sent
/// events when the request asks for it, as Claude Code does): a request that offers the next
/// step's tool gets that call, one whose results answer every step gets `last` as text, and
/// any other request (a title or a summary a client may ask for) gets `last` too. Every
/// request is kept, for the tests to read what the client sent.
struct Model {
    url: String,
    shared: Arc<Shared>,
    /// The runtime serving the model; dropping it stops the server.
    _rt: tokio::runtime::Runtime,
}

struct Shared {
    steps: Vec<Step>,
    last: &'static str,
    /// Each request as `{"path", "body"}`.
    requests: Mutex<Vec<Value>>,
}

/// The id of the tool call of step `n`: the results name it.
fn call_id(n: usize) -> String {
    format!("toolu_tmws_{n}")
}

impl Model {
    fn start(steps: Vec<Step>, last: &'static str) -> Model {
        let rt = super::clients::runtime();
        let shared = Arc::new(Shared { steps, last, requests: Mutex::new(Vec::new()) });
        let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new().fallback(answer).with_state(shared.clone());
        rt.spawn(async move { axum::serve(listener, app).await });
        Model { url, shared, _rt: rt }
    }

    fn requests(&self) -> Vec<Value> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The requests of the agent loop: those that offered the first step's tool.
    fn turns(&self) -> Vec<Value> {
        let first = self.shared.steps[0].tool;
        self.requests().into_iter().filter(|r| offered(&r["body"]).contains(&first.to_owned())).collect()
    }

    /// What came back for each step, by tool: whether it was an error, and its text.
    fn results(&self) -> BTreeMap<&'static str, (bool, String)> {
        let mut out = BTreeMap::new();
        for turn in self.turns() {
            for block in tool_results(&turn["body"]) {
                let Some(n) = (0..self.shared.steps.len()).find(|n| block["tool_use_id"] == call_id(*n)) else {
                    continue;
                };
                let text = match &block["content"] {
                    Value::String(s) => s.clone(),
                    Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
                    other => other.to_string(),
                };
                out.insert(self.shared.steps[n].tool, (block["is_error"] == true, text));
            }
        }
        out
    }
}

/// The tool names a Messages API request offered.
fn offered(body: &Value) -> Vec<String> {
    let tools = body["tools"].as_array().map_or(&[][..], Vec::as_slice);
    tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()
}

/// The `tool_result` blocks of a request's messages.
fn tool_results(body: &Value) -> Vec<Value> {
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    messages
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .cloned()
        .collect()
}

/// The scripted model's handler, for every path.
async fn answer(State(shared): State<Arc<Shared>>, uri: Uri, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared.requests.lock().unwrap().push(json!({"path": uri.path(), "body": body.clone()}));
    let json_response = |status: StatusCode, v: Value| {
        Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Body::from(v.to_string()))
            .unwrap()
    };
    match uri.path() {
        "/v1/messages" => {}
        "/v1/messages/count_tokens" => return json_response(StatusCode::OK, json!({"input_tokens": 100})),
        other => {
            return json_response(
                StatusCode::NOT_FOUND,
                json!({"type": "error", "error": {"type": "not_found_error", "message": format!("no {other} here")}}),
            );
        }
    }
    // The next step is the first whose result the conversation does not hold yet.
    let answered = tool_results(&body);
    let next = (0..shared.steps.len()).find(|n| !answered.iter().any(|b| b["tool_use_id"] == call_id(*n)));
    let block = match next {
        Some(n) if offered(&body).iter().any(|t| t == shared.steps[n].tool) => {
            json!({"type": "tool_use", "id": call_id(n), "name": shared.steps[n].tool, "input": shared.steps[n].input})
        }
        _ => json!({"type": "text", "text": shared.last}),
    };
    let stop = if block["type"] == "tool_use" { "tool_use" } else { "end_turn" };
    let model = body["model"].as_str().unwrap_or("scripted").to_owned();
    let id = format!("msg_scripted_{}", shared.requests.lock().unwrap().len());
    let usage = json!({"input_tokens": 100, "output_tokens": 10});
    if body["stream"] != true {
        return json_response(
            StatusCode::OK,
            json!({"id": id, "type": "message", "role": "assistant", "model": model, "content": [block],
                "stop_reason": stop, "stop_sequence": null, "usage": usage}),
        );
    }
    // The stream of one content block, as the Messages API sends it.
    let (start, delta) = if block["type"] == "tool_use" {
        (
            json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
            json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
        )
    } else {
        (json!({"type": "text", "text": ""}), json!({"type": "text_delta", "text": block["text"]}))
    };
    let events = [
        json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 100, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": start}),
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 10}}),
        json!({"type": "message_stop"}),
    ];
    let sse: String = events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())).collect();
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from(sse))
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

/// What a run of Claude Code left: its exit code, its final JSON, and its debug log.
struct Run {
    code: Option<i32>,
    result: Value,
    debug: String,
    /// The throwaway home it ran with (its config, caches and logs).
    _home: TempDir,
}

/// Runs `claude -p PROMPT` in `root` against `model`, with a throwaway home, nothing of the
/// user's environment, telemetry, updates and other traffic off, and the folder of the tmws
/// under test first on PATH. `--allowedTools mcp__tmws` lets it call tmws' tools without a
/// prompt, which `-p` could not show; `-p` starts the project's `.mcp.json` servers without
/// the approval an interactive session asks for once. Tool search is off so that the MCP
/// tools are offered with their schemas in every request rather than looked up by name, and
/// MCP connections are made before the first request, so that the first turn sees them.
fn run_claude(claude: &Path, root: &TestRoot, model: &Model, prompt: &str) -> Run {
    let home = tempfile::Builder::new().prefix("tmws-claude-home-").tempdir().unwrap();
    let tmws_dir = Path::new(env!("CARGO_BIN_EXE_tmws")).parent().unwrap().to_path_buf();
    let path = std::env::join_paths(
        std::iter::once(tmws_dir).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let debug = home.path().join("claude-debug.log");
    let (stdout, stderr) = (home.path().join("stdout.json"), home.path().join("stderr.txt"));
    let child = Command::new(claude)
        .args(["-p", prompt, "--output-format", "json", "--allowedTools", "mcp__tmws", "--no-session-persistence"])
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
        .env("ANTHROPIC_BASE_URL", &model.url)
        // The scripted model takes any key; Claude Code wants one to start.
        .env("ANTHROPIC_API_KEY", "scripted-model-takes-any-key")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("ENABLE_TOOL_SEARCH", "false")
        .env("MCP_CONNECTION_NONBLOCKING", "false")
        .env("NO_COLOR", "1")
        .env("TMWS_CONFIG_HOME", user_config())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let mut running = Running(child);
    let status = eventually("Claude Code to finish its run", || running.0.try_wait().unwrap());
    let out = std::fs::read_to_string(&stdout).unwrap();
    let result = serde_json::from_str(&out).unwrap_or_else(|e| {
        panic!("Claude Code's answer is not JSON ({e}): {out}{}", std::fs::read_to_string(&stderr).unwrap())
    });
    Run { code: status.code(), result, debug: std::fs::read_to_string(&debug).unwrap_or_default(), _home: home }
}

/// A project as a user makes it: `tmws init --mcp-client claude`, and a memory of another
/// agent (`writer-bot`) for Claude Code to verify.
fn project() -> TestRoot {
    let root = TestRoot::bare();
    let init = root.run(&["init", "--mcp-client", "claude"]);
    assert_eq!(init.code, 0, "{}{}", init.stdout, init.stderr);
    let added =
        root.run(&["memory", "add", "--agent", "writer-bot", "--namespace", "long-term", "The deploy script retries."]);
    assert_eq!(added.code, 0, "{}{}", added.stdout, added.stderr);
    root
}

/// The scripted session: Claude Code adds a memory, searches for it and verifies another
/// agent's work, each through tmws.
fn session_steps() -> Vec<Step> {
    vec![
        Step {
            tool: "mcp__tmws__memory_add",
            input: json!({"content": "Claude Code reaches tmws through .mcp.json.", "namespace": "long-term", "format": "json"}),
        },
        Step { tool: "mcp__tmws__memory_search", input: json!({"query": "reaches tmws", "format": "json"}) },
        Step {
            tool: "mcp__tmws__trust_verify",
            input: json!({"agent": "writer-bot", "success": true, "evidence": "its retries hold", "format": "json"}),
        },
    ]
}

/// The entries of a memory log of `root` (`long-term`, `short-term`).
fn memory_log(root: &TestRoot, ns: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(root.path().join(format!(".tmws/memory/{ns}.jsonl"))).unwrap_or_default();
    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// Runs the scripted session; the project, the model and the run.
fn claude_session() -> Option<(TestRoot, Model, Run)> {
    let claude = claude()?;
    let root = project();
    let model = Model::start(session_steps(), "Recorded, found and verified.");
    let run = run_claude(&claude, &root, &model, "Remember how Claude Code reaches tmws, then verify writer-bot.");
    assert_eq!(run.code, Some(0), "{}\n{}", run.result, run.debug);
    assert_eq!(
        (&run.result["is_error"], &run.result["result"]),
        (&json!(false), &json!("Recorded, found and verified."))
    );
    Some((root, model, run))
}

/// Claude Code starts `tmws mcp` from the `.mcp.json` that `tmws init --mcp-client claude`
/// wrote, speaks the stateless 2026-07-28 protocol to it, offers the model every tmws tool,
/// and each scripted call comes back answered.
#[test]
fn claude_code_runs_tmws_from_mcp_json_and_calls_its_tools() {
    let Some((root, model, run)) = claude_session() else { return };
    assert!(
        run.debug.contains(r#""serverVersion":{"name":"tmws","version":""#)
            && run.debug.contains(r#""negotiatedProtocolVersion":"2026-07-28""#),
        "Claude Code connected to tmws over the 2026-07-28 protocol:\n{}",
        run.debug
    );
    let turns = model.turns();
    assert_eq!(turns.len(), 4, "one turn per tool call and the last: {:?}", model.requests());
    let mut tmws_tools: Vec<String> = offered(&turns[0]["body"])
        .into_iter()
        .filter_map(|t| t.strip_prefix("mcp__tmws__").map(str::to_owned))
        .collect();
    tmws_tools.sort();
    assert_eq!(tmws_tools, mcp_tools());
    let memory_add =
        turns[0]["body"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "mcp__tmws__memory_add");
    let schema = &memory_add.unwrap()["input_schema"];
    assert_eq!(
        (&schema["type"], &schema["properties"]["content"]["type"]),
        (&json!("object"), &json!("string")),
        "{schema}"
    );

    let results = model.results();
    for (tool, (is_error, text)) in &results {
        assert!(!is_error, "{tool}: {text}");
    }
    let added: Value = serde_json::from_str(&results["mcp__tmws__memory_add"].1).unwrap();
    let found: Value = serde_json::from_str(&results["mcp__tmws__memory_search"].1).unwrap();
    assert_eq!(found["results"][0]["id"], added["id"], "{found}");
    let verified: Value = serde_json::from_str(&results["mcp__tmws__trust_verify"].1).unwrap();
    assert_eq!(
        (&verified["agent"], &verified["successes"], &verified["score"]),
        (&json!("writer-bot"), &json!(1), &json!(0.55)),
        "{verified}"
    );
    let stored: Vec<Value> = memory_log(&root, "long-term").into_iter().filter(|e| e["id"] == added["id"]).collect();
    assert_eq!(stored[0]["content"], "Claude Code reaches tmws through .mcp.json.");
}

/// Who tmws says wrote and verified is Claude Code: the name its client info gives in each
/// request's `_meta` (the 2026-07-28 protocol has no `initialize`), not `mcp`, nor the name
/// of the library tmws is built on.
#[test]
fn claude_code_writes_and_verifies_as_claude_code() {
    let Some((root, model, _run)) = claude_session() else { return };
    let results = model.results();
    let added: Value = serde_json::from_str(&results["mcp__tmws__memory_add"].1).unwrap();
    let stored: Vec<Value> = memory_log(&root, "long-term").into_iter().filter(|e| e["id"] == added["id"]).collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(
        (&stored[0]["agent"], &stored[0]["author"]),
        (&json!("claude-code"), &json!({"surface": "mcp", "client": "claude-code"})),
        "{}",
        stored[0]
    );
    let verified: Value = serde_json::from_str(&results["mcp__tmws__trust_verify"].1).unwrap();
    assert_eq!(verified["verifier"], "claude-code", "{verified}");
    let trust = root.read(".tmws/trust.jsonl");
    let lines: Vec<Value> = trust.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        (lines.len(), &lines[0]["agent"], &lines[0]["verifier"]),
        (1, &json!("writer-bot"), &json!("claude-code")),
        "{trust}"
    );
}

/// Claude Code ends its run by stopping `tmws mcp` with SIGINT; tmws records that client
/// session, once, naming Claude Code and what it did.
#[test]
fn a_claude_code_run_stopped_with_sigint_is_recorded_once() {
    let Some((root, model, run)) = claude_session() else { return };
    assert!(
        run.debug.contains(r#"MCP server "tmws": Sending SIGINT to MCP server process"#),
        "Claude Code stops tmws with SIGINT:\n{}",
        run.debug
    );
    // Claude Code gives a server 100 ms after SIGINT, then sends SIGTERM, and SIGKILL 400 ms
    // later, and exits only after that: once it has exited, so has tmws, and the log holds
    // all it ever will.
    let recorded: Vec<Value> = memory_log(&root, "long-term").into_iter().filter(|e| e["kind"] == "session").collect();
    let stops: Vec<&str> = run.debug.lines().filter(|l| l.contains(r#"MCP server "tmws""#)).collect();
    assert_eq!(
        recorded.len(),
        1,
        "one session entry: {recorded:?}\nhow Claude Code stopped tmws:\n{}",
        stops.join("\n")
    );
    let added: Value = serde_json::from_str(&model.results()["mcp__tmws__memory_add"].1).unwrap();
    let s = &recorded[0]["session"];
    assert_eq!(
        (&recorded[0]["agent"], &s["agents"], &s["automatic"]),
        (&json!("claude-code"), &json!(["claude-code"]), &json!(true)),
        "{s}"
    );
    assert_eq!(s["memories"], json!([added["id"]]), "{s}");
    assert_eq!(s["queries"], json!([{"tool": "memory_search", "query": "reaches tmws"}]), "{s}");
    assert_eq!(s["verifications"], json!([{"agent": "writer-bot", "success": true, "trust": 0.55}]), "{s}");
}
