//! Real agent command lines, run offline: Claude Code (npm `@anthropic-ai/claude-code`),
//! Codex (npm `@openai/codex`) and Gemini CLI (npm `@google/gemini-cli`), pinned in
//! `.ci/run`, which installs them under `target/` (`TMWS_CLAUDE`, `TMWS_CODEX`, `TMWS_GEMINI`
//! name others). Each runs its whole agent loop in a project that `tmws init --mcp-client
//! CLIENT` made; its model is a scripted one on a loopback port ([`Model`]): each turn asks
//! for the next scripted tool call, and once every call has its result the model says it is
//! done. The agent starts `tmws mcp` from the project's config by itself and stops it when
//! the run ends (Claude Code with SIGINT, Codex and Gemini CLI with SIGTERM); the tests check
//! what it offered the model, what tmws answered, who tmws says wrote and verified, and the
//! session tmws recorded.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};

use super::agents::{
    Run, agent_home, claude_command, gemini_command, installed, json_response, messages_turn, run_agent, sse,
};
use super::util::{TestRoot, eventually, mcp_tools};

/// One scripted tool call: the tmws tool and its input.
struct Step {
    tool: &'static str,
    input: Value,
}

/// A scripted model behind the three APIs the agents speak, streamed as server-sent events
/// when the request asks for it: Anthropic's Messages API (`POST /v1/messages`, Claude Code),
/// OpenAI's Responses API (`POST /v1/responses`, Codex) and the Gemini API (`POST
/// /v1beta/models/MODEL:streamGenerateContent`, Gemini CLI). A request that offers the next
/// step's tmws tool gets that call; one whose results answer every step, or any other request
/// (a title or a summary a client may ask for), gets `last` as text. Every request is kept,
/// for the tests to read what the client sent.
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

/// The id of a tool call of step `n` (made in answer to request `seq`): the results name it.
fn call_id(n: usize, seq: usize) -> String {
    format!("toolu_tmws_{n}_{seq}")
}

/// What a tool call gave, as the client handed it back to the model.
struct ToolResult {
    /// The id of the call, where the client kept the model's.
    call: String,
    /// The tmws tool, where the result names it rather than the call.
    tool: Option<String>,
    is_error: bool,
    text: String,
}

impl ToolResult {
    /// Whether this answers a call of step `n`.
    fn answers(&self, steps: &[Step], n: usize) -> bool {
        self.call.starts_with(&format!("toolu_tmws_{n}_")) || self.tool.as_deref() == Some(steps[n].tool)
    }

    /// Whether the answer says the index may be behind the files (`stale: true`).
    fn stale(&self) -> bool {
        serde_json::from_str::<Value>(&self.text).is_ok_and(|v| v["stale"] == true)
    }
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
        self.requests().into_iter().filter(|r| offered(&r["body"]).iter().any(|t| t == first)).collect()
    }

    /// What came back for each step, by tmws tool: whether it was an error, and its text.
    fn results(&self) -> BTreeMap<&'static str, (bool, String)> {
        let mut out = BTreeMap::new();
        for turn in self.turns() {
            for r in tool_results(&turn["body"]) {
                if let Some(n) = (0..self.shared.steps.len()).find(|n| r.answers(&self.shared.steps, *n)) {
                    out.insert(self.shared.steps[n].tool, (r.is_error, r.text));
                }
            }
        }
        out
    }

    /// The JSON text a step's tool answered (the steps ask for `format: json`).
    fn answer_of(&self, tool: &str) -> Value {
        let results = self.results();
        let (is_error, text) = results.get(tool).unwrap_or_else(|| panic!("no result of {tool}: {results:?}"));
        assert!(!is_error, "{tool}: {text}");
        // Each agent shows the model the answer in its own frame: Claude Code puts the
        // answer's resource links before the text, Codex a "Wall time … Output:" header,
        // Gemini CLI the links after it. The answer is the first JSON object in it.
        let start = text.find('{').unwrap_or_else(|| panic!("{tool} answered no JSON: {text}"));
        let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match values.next() {
            Some(Ok(v)) => v,
            other => panic!("{tool} answered no JSON ({other:?}): {text}"),
        }
    }
}

/// The tmws tools a request offered, by their tmws names: `mcp__tmws__NAME` tools of the
/// Messages API, the tools of the `mcp__tmws` namespace of the Responses API, the
/// `mcp_tmws_NAME` function declarations of the Gemini API.
fn offered(body: &Value) -> Vec<String> {
    let tools = body["tools"].as_array().map_or(&[][..], Vec::as_slice);
    let mut out = Vec::new();
    for t in tools {
        if let Some(name) = t["name"].as_str().and_then(|n| n.strip_prefix("mcp__tmws__")) {
            out.push(name.to_owned());
        }
        if t["type"] == "namespace" && t["name"] == "mcp__tmws" {
            let inner = t["tools"].as_array().map_or(&[][..], Vec::as_slice);
            out.extend(inner.iter().filter_map(|i| i["name"].as_str().map(str::to_owned)));
        }
        let declared = t["functionDeclarations"].as_array().map_or(&[][..], Vec::as_slice);
        out.extend(declared.iter().filter_map(|f| f["name"].as_str()?.strip_prefix("mcp_tmws_").map(str::to_owned)));
    }
    out
}

/// The tool results a request hands back: `tool_result` blocks of the Messages API,
/// `function_call_output` items of the Responses API, `functionResponse` parts of the Gemini
/// API.
fn tool_results(body: &Value) -> Vec<ToolResult> {
    let texts = |v: &Value, skip: &dyn Fn(&str) -> bool| match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).filter(|t| !skip(t)).collect(),
        other => other.to_string(),
    };
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    let blocks = messages.iter().filter_map(|m| m["content"].as_array()).flatten();
    let mut out: Vec<ToolResult> = blocks
        .filter(|b| b["type"] == "tool_result")
        .map(|b| ToolResult {
            call: b["tool_use_id"].as_str().unwrap_or_default().to_owned(),
            tool: None,
            is_error: b["is_error"] == true,
            text: texts(&b["content"], &|_| false),
        })
        .collect();
    // Codex puts how long the call took before what it gave, as a part of its own.
    let input = body["input"].as_array().map_or(&[][..], Vec::as_slice);
    out.extend(input.iter().filter(|i| i["type"] == "function_call_output").map(|i| ToolResult {
        call: i["call_id"].as_str().unwrap_or_default().to_owned(),
        tool: None,
        is_error: false,
        text: texts(&i["output"], &|t| t.starts_with("Wall time:")),
    }));
    // Gemini CLI gives each call an id of its own, names the tool in the result, and wraps
    // what the tool gave in `<untrusted_context>`.
    let contents = body["contents"].as_array().map_or(&[][..], Vec::as_slice);
    let parts = contents.iter().filter_map(|c| c["parts"].as_array()).flatten();
    out.extend(parts.filter_map(|p| p.get("functionResponse")).map(|f| {
        let response = &f["response"];
        let text = response["output"].as_str().or(response["error"].as_str()).unwrap_or_default();
        let text = text.trim().strip_prefix("<untrusted_context>").unwrap_or(text);
        let text = text.trim().strip_suffix("</untrusted_context>").unwrap_or(text);
        ToolResult {
            call: String::new(),
            tool: f["name"].as_str().and_then(|n| n.strip_prefix("mcp_tmws_")).map(str::to_owned),
            is_error: !response["error"].is_null(),
            text: text.trim().to_owned(),
        }
    }));
    out
}

/// The scripted model's handler, for every path.
async fn answer(State(shared): State<Arc<Shared>>, uri: Uri, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let seq = {
        let mut requests = shared.requests.lock().unwrap();
        requests.push(json!({"path": uri.path(), "body": body.clone()}));
        requests.len()
    };
    // The next step is the first whose result the conversation does not hold yet, or whose
    // last result said the index was catching up (`stale`: under load, a search just after a
    // write may answer so), which an agent asks again; if the request offers its tool.
    let answered = tool_results(&body);
    let next = (0..shared.steps.len())
        .find(|n| answered.iter().rfind(|r| r.answers(&shared.steps, *n)).is_none_or(ToolResult::stale))
        .filter(|n| offered(&body).iter().any(|t| t == shared.steps[*n].tool));
    match uri.path() {
        "/v1/messages" => messages(&shared, &body, next, seq),
        "/v1/responses" => responses(&shared, next, seq),
        "/v1/messages/count_tokens" => json_response(StatusCode::OK, &json!({"input_tokens": 100})),
        p if p.starts_with("/v1beta/models/") && p.ends_with(":countTokens") => {
            json_response(StatusCode::OK, &json!({"totalTokens": 100}))
        }
        p if p.starts_with("/v1beta/models/") => gemini(&shared, next, p.ends_with(":streamGenerateContent")),
        other => json_response(
            StatusCode::NOT_FOUND,
            &json!({"type": "error", "error": {"type": "not_found_error", "message": format!("no {other} here")}}),
        ),
    }
}

/// A turn of the Messages API: step `next`'s call, else the last words.
fn messages(shared: &Shared, body: &Value, next: Option<usize>, seq: usize) -> Response {
    let block = match next {
        Some(n) => {
            json!({"type": "tool_use", "id": call_id(n, seq), "name": format!("mcp__tmws__{}", shared.steps[n].tool),
            "input": shared.steps[n].input})
        }
        None => json!({"type": "text", "text": shared.last}),
    };
    messages_turn(body, seq, block)
}

/// A turn of the Responses API (always streamed, as Codex asks): step `next`'s call, as a
/// function of the `mcp__tmws` namespace, else the last words.
fn responses(shared: &Shared, next: Option<usize>, seq: usize) -> Response {
    let item = match next {
        Some(n) => json!({"type": "function_call", "id": format!("fc_scripted_{seq}"), "call_id": call_id(n, seq),
            "namespace": "mcp__tmws", "name": shared.steps[n].tool, "arguments": shared.steps[n].input.to_string(),
            "status": "completed"}),
        None => {
            json!({"type": "message", "id": format!("msg_scripted_{seq}"), "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": shared.last, "annotations": []}]})
        }
    };
    let id = format!("resp_scripted_{seq}");
    sse(&[
        json!({"type": "response.created", "response": {"id": id}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        json!({"type": "response.completed", "response": {"id": id, "usage": {"input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 110}}}),
    ])
}

/// A turn of the Gemini API (`generateContent`, or `streamGenerateContent` as server-sent
/// events): step `next`'s call, else the last words.
fn gemini(shared: &Shared, next: Option<usize>, stream: bool) -> Response {
    let part = match next {
        Some(n) => {
            json!({"functionCall": {"name": format!("mcp_tmws_{}", shared.steps[n].tool), "args": shared.steps[n].input}})
        }
        None => json!({"text": shared.last}),
    };
    let answer = json!({"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}});
    if !stream {
        return json_response(StatusCode::OK, &answer);
    }
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(format!("data: {answer}\n\n")))
        .unwrap()
}

/// Runs `claude -p PROMPT` in `root` against `model` ([`claude_command`]); `--allowedTools
/// mcp__tmws` lets it call tmws' tools without a prompt, which `-p` could not show; `-p`
/// starts the project's `.mcp.json` servers without the approval an interactive session asks
/// for once.
fn run_claude(claude: &Path, root: &TestRoot, model: &Model, prompt: &str) -> Run {
    let (cmd, home, debug) = claude_command(claude, root, &model.url, prompt, "mcp__tmws");
    run_agent(cmd, home, Some(&debug))
}

/// A project as a user makes it: `tmws init --mcp-client CLIENT`, and a memory of another
/// agent (`writer-bot`) for the agent to verify.
fn project(client: &str) -> TestRoot {
    let root = TestRoot::bare();
    let init = root.run(&["init", "--mcp-client", client]);
    assert_eq!(init.code, 0, "{}{}", init.stdout, init.stderr);
    let added =
        root.run(&["memory", "add", "--agent", "writer-bot", "--namespace", "long-term", "The deploy script retries."]);
    assert_eq!(added.code, 0, "{}{}", added.stdout, added.stderr);
    root
}

/// The scripted session: the agent adds a memory, searches for it and verifies another
/// agent's work, each through tmws (a different tool each step: Gemini CLI's results name the
/// tool, not the call).
fn session_steps() -> Vec<Step> {
    vec![
        Step {
            tool: "memory_add",
            input: json!({"content": "Agents reach tmws through their project config.", "namespace": "long-term", "format": "json"}),
        },
        Step { tool: "memory_search", input: json!({"query": "reach tmws", "format": "json"}) },
        Step {
            tool: "trust_verify",
            input: json!({"agent": "writer-bot", "success": true, "evidence": "its retries hold", "format": "json"}),
        },
    ]
}

/// The last words of the scripted model.
const DONE: &str = "Recorded, found and verified.";

/// The entries of a memory log of `root` (`long-term`, `short-term`).
fn memory_log(root: &TestRoot, ns: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(root.path().join(format!(".tmws/memory/{ns}.jsonl"))).unwrap_or_default();
    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// What every scripted session must show, whichever the agent: it offered the model every
/// tmws tool, each call was answered, the search found the memory just added, the memory
/// and the verification carry the agent's name (`agent`, the `--agent` that `tmws init`
/// wrote into the client's config) in the memory log and the trust log, not a name the
/// client reported for itself, and the memory names the client it came through (`client`,
/// the name its MCP client reports).
fn check_session(root: &TestRoot, model: &Model, agent: &str, client: &str) {
    let turns = model.turns();
    let mut tmws_tools = offered(&turns[0]["body"]);
    tmws_tools.sort();
    assert_eq!(tmws_tools, mcp_tools());

    let added = model.answer_of("memory_add");
    let found = model.answer_of("memory_search");
    assert_eq!(found["results"][0]["id"], added["id"], "{found}");
    let stored: Vec<Value> = memory_log(root, "long-term").into_iter().filter(|e| e["id"] == added["id"]).collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(stored[0]["content"], "Agents reach tmws through their project config.");
    let author = &stored[0]["author"];
    assert_eq!(
        (&stored[0]["agent"], &author["surface"], &author["client"]),
        (&json!(agent), &json!("mcp"), &json!(client)),
        "{}",
        stored[0]
    );
    assert!(super::util::is_session_id(&author["session"]), "{author}");

    let verified = model.answer_of("trust_verify");
    assert_eq!(
        (&verified["agent"], &verified["verifier"], &verified["successes"], &verified["score"]),
        (&json!("writer-bot"), &json!(agent), &json!(1), &json!(0.55)),
        "{verified}"
    );
    assert_eq!(verified.get("verifier_self_reported"), None, "{verified}");
    let trust = root.read(".tmws/trust.jsonl");
    let lines: Vec<Value> = trust.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        (lines.len(), &lines[0]["agent"], &lines[0]["verifier"], lines[0].get("self_reported")),
        (1, &json!("writer-bot"), &json!(agent), None),
        "{trust}"
    );
}

/// The session entries of `root` once the agent's `tmws mcp` has gone (exited, or been
/// killed) and the next tmws process has run: from then on the log holds its record.
fn sessions(root: &TestRoot) -> Vec<Value> {
    // The agents start their servers in the project's folder.
    let exe = Path::new(env!("CARGO_BIN_EXE_tmws")).canonicalize().unwrap();
    let dir = root.path().canonicalize().unwrap();
    eventually("the agent's tmws mcp to exit", || {
        let running: Vec<String> = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|p| {
                std::fs::read_link(p.path().join("exe")).is_ok_and(|e| e == exe)
                    && std::fs::read_link(p.path().join("cwd")).is_ok_and(|c| c == dir)
            })
            .map(|p| p.file_name().to_string_lossy().into_owned())
            .collect();
        if running.is_empty() { Ok(()) } else { Err(format!("still running: {running:?}")) }
    });
    // A server the agent killed before it could record (Codex sends SIGKILL 20-40 ms after
    // SIGTERM) left its session in a journal: the next tmws process records it.
    let next = root.run(&["memory", "stats"]);
    assert_eq!(next.code, 0, "{}", next.stderr);
    memory_log(root, "long-term").into_iter().filter(|e| e["kind"] == "session").collect()
}

/// The one session entry a scripted session leaves names the agent and all it did.
fn check_recorded(model: &Model, recorded: &[Value], agent: &str, how: &str) {
    assert_eq!(recorded.len(), 1, "one session entry: {recorded:?}\n{how}");
    let added = model.answer_of("memory_add");
    let s = &recorded[0]["session"];
    assert_eq!(
        (&recorded[0]["agent"], &s["agents"], &s["automatic"]),
        (&json!(agent), &json!([agent]), &json!(true)),
        "{s}"
    );
    assert_eq!(s["memories"], json!([added["id"]]), "{s}");
    // A search asked again because its answer was stale counts each time.
    let mut queries = s["queries"].as_array().cloned().unwrap_or_default();
    queries.dedup();
    assert_eq!(queries, [json!({"tool": "memory_search", "query": "reach tmws"})], "{s}");
    assert_eq!(s["verifications"], json!([{"agent": "writer-bot", "success": true, "trust": 0.55}]), "{s}");
}

/// Runs the scripted session with Claude Code; the project, the model and the run.
fn claude_session() -> Option<(TestRoot, Model, Run)> {
    let claude = installed("TMWS_CLAUDE", "claude/node_modules/.bin/claude", "Claude Code")?;
    let root = project("claude");
    let model = Model::start(session_steps(), DONE);
    let run = run_claude(&claude, &root, &model, "Remember how agents reach tmws, then verify writer-bot.");
    let result: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("Claude Code's answer is not JSON ({e}): {}{}", run.stdout, run.stderr));
    assert_eq!(run.code, Some(0), "{result}\n{}", run.debug);
    assert_eq!((&result["is_error"], &result["result"]), (&json!(false), &json!(DONE)), "{result}");
    Some((root, model, run))
}

/// Claude Code starts `tmws mcp` from the `.mcp.json` that `tmws init --mcp-client claude`
/// wrote and speaks the stateless 2026-07-28 protocol to it (no `initialize`: its name comes
/// in each request's `_meta`); the model is offered every tmws tool, each call is answered,
/// what it writes and verifies carries `claude`, the `--agent` of that config, and the memory
/// names the client `claude-code`, not `mcp`, nor the name of the library tmws is built on.
#[test]
fn claude_code_runs_tmws_from_mcp_json_and_writes_and_verifies_as_claude_code() {
    let Some((root, model, run)) = claude_session() else { return };
    assert!(
        run.debug.contains(r#""serverVersion":{"name":"tmws","version":""#)
            && run.debug.contains(r#""negotiatedProtocolVersion":"2026-07-28""#),
        "Claude Code connected to tmws over the 2026-07-28 protocol:\n{}",
        run.debug
    );
    let turns = model.turns();
    let memory_add =
        turns[0]["body"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "mcp__tmws__memory_add");
    let schema = &memory_add.unwrap()["input_schema"];
    assert_eq!(
        (&schema["type"], &schema["properties"]["content"]["type"]),
        (&json!("object"), &json!("string")),
        "{schema}"
    );
    check_session(&root, &model, "claude", "claude-code");
}

/// Claude Code ends its run by stopping `tmws mcp` with SIGINT (its stdin still open); tmws
/// records that client session, once, naming Claude Code and what it did.
#[test]
fn a_claude_code_run_stopped_with_sigint_is_recorded_once() {
    let Some((root, model, run)) = claude_session() else { return };
    assert!(
        run.debug.contains(r#"MCP server "tmws": Sending SIGINT to MCP server process"#),
        "Claude Code stops tmws with SIGINT:\n{}",
        run.debug
    );
    // Claude Code gives a server 100 ms after SIGINT, then sends SIGTERM, and SIGKILL 400 ms
    // later: the lines of its log about tmws say which it took.
    let stops: Vec<&str> = run.debug.lines().filter(|l| l.contains(r#"MCP server "tmws""#)).collect();
    check_recorded(&model, &sessions(&root), "claude", &stops.join("\n"));
}

/// Runs `codex exec --json PROMPT` in `root` against `model`, with a throwaway `CODEX_HOME`
/// whose config makes the scripted model its provider, turns update checks, analytics,
/// feedback and telemetry export off, and trusts the project: Codex reads a project's
/// `.codex/config.toml` (where `tmws init --mcp-client codex` registers tmws) only once its
/// user trusted the project.
fn run_codex(codex: &Path, root: &TestRoot, model: &Model, prompt: &str) -> Run {
    let (home, path) = agent_home("tmws-codex-home-");
    let codex_home = home.path().join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    let project = root.path().canonicalize().unwrap();
    let config = format!(
        "model = \"scripted\"\nmodel_provider = \"scripted\"\ncheck_for_update_on_startup = false\n\n\
         [analytics]\nenabled = false\n\n[feedback]\nenabled = false\n\n[otel]\nexporter = \"none\"\n\n\
         [model_providers.scripted]\nname = \"scripted model\"\nbase_url = \"{}/v1\"\nwire_api = \"responses\"\n\
         request_max_retries = 0\nstream_max_retries = 0\n\n[projects.{}]\ntrust_level = \"trusted\"\n",
        model.url,
        serde_json::Value::String(project.display().to_string())
    );
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
    let mut cmd = Command::new(codex);
    cmd.args(["exec", "--json", "--strict-config", "--skip-git-repo-check", prompt])
        .current_dir(root.path())
        .env_clear()
        .env("PATH", path)
        .env("HOME", home.path())
        .env("CODEX_HOME", &codex_home)
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .env("XDG_CACHE_HOME", home.path().join(".cache"));
    run_agent(cmd, home, None)
}

/// Runs the scripted session with Codex; the project, the model and the run.
fn codex_session() -> Option<(TestRoot, Model, Run)> {
    let codex = installed("TMWS_CODEX", "codex/node_modules/.bin/codex", "Codex")?;
    let root = project("codex");
    let model = Model::start(session_steps(), DONE);
    let run = run_codex(&codex, &root, &model, "Remember how agents reach tmws, then verify writer-bot.");
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    let events: Vec<Value> = run.stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let said: Vec<&Value> = events.iter().filter(|e| e["item"]["type"] == "agent_message").collect();
    assert_eq!(said.last().map(|e| &e["item"]["text"]), Some(&json!(DONE)), "{}", run.stdout);
    let mut calls: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "mcp_tool_call")
        .map(|e| {
            format!("{}/{}", e["item"]["server"].as_str().unwrap_or("?"), e["item"]["tool"].as_str().unwrap_or("?"))
        })
        .collect();
    calls.dedup();
    assert_eq!(calls, ["tmws/memory_add", "tmws/memory_search", "tmws/trust_verify"], "{}", run.stdout);
    Some((root, model, run))
}

/// Codex starts `tmws mcp` from the `.codex/config.toml` that `tmws init --mcp-client
/// codex` wrote, with the `initialize` handshake (protocol 2025-06-18, client
/// `codex-mcp-client`); the model is offered every tmws tool, in the `mcp__tmws` namespace,
/// each call is answered, what it writes and verifies carries `codex`, the `--agent` of that
/// config, and the memory names the client `codex-mcp-client`.
#[test]
fn codex_runs_tmws_from_its_project_config_and_writes_and_verifies_as_codex() {
    let Some((root, model, _run)) = codex_session() else { return };
    check_session(&root, &model, "codex", "codex-mcp-client");
}

/// Codex ends its run by sending SIGTERM to `tmws mcp`'s process group, and SIGKILL to tmws
/// a few tens of milliseconds later; tmws records that client session, once, naming Codex
/// and what it did.
#[test]
fn a_codex_run_stopped_with_sigterm_is_recorded_once() {
    let Some((root, model, _run)) = codex_session() else { return };
    let recorded = sessions(&root);
    check_recorded(&model, &recorded, "codex", "");
}

/// Runs `gemini -p PROMPT` in `root` against `model` ([`gemini_command`]).
fn run_gemini(gemini: &Path, root: &TestRoot, model: &Model, prompt: &str) -> Run {
    let (cmd, home) = gemini_command(gemini, root, &model.url, prompt);
    run_agent(cmd, home, None)
}

/// Runs the scripted session with Gemini CLI; the project, the model and the run.
fn gemini_session() -> Option<(TestRoot, Model, Run)> {
    let gemini = installed("TMWS_GEMINI", "gemini/node_modules/.bin/gemini", "Gemini CLI")?;
    let root = project("gemini");
    let model = Model::start(session_steps(), DONE);
    let run = run_gemini(&gemini, &root, &model, "Remember how agents reach tmws, then verify writer-bot.");
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    let result: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("Gemini CLI's answer is not JSON ({e}): {}{}", run.stdout, run.stderr));
    assert_eq!(result["response"], DONE, "{result}");
    let tools = &result["stats"]["tools"];
    assert!(tools["totalCalls"].as_u64() >= Some(3) && tools["totalSuccess"] == tools["totalCalls"], "{tools}");
    Some((root, model, run))
}

/// Gemini CLI starts `tmws mcp` from the `.gemini/settings.json` that `tmws init
/// --mcp-client gemini` wrote, with the `initialize` handshake (protocol 2025-06-18, client
/// `gemini-cli-mcp-client`); the model is offered every tmws tool, each call is answered,
/// what it writes and verifies carries `gemini`, the `--agent` of that config, and the memory
/// names the client `gemini-cli-mcp-client`.
#[test]
fn gemini_cli_runs_tmws_from_its_settings_and_writes_and_verifies_as_gemini() {
    let Some((root, model, _run)) = gemini_session() else { return };
    check_session(&root, &model, "gemini", "gemini-cli-mcp-client");
}

/// Gemini CLI ends its run by sending SIGTERM to `tmws mcp`, then closing its stdin; tmws
/// records that client session, once, naming Gemini CLI and what it did.
#[test]
fn a_gemini_cli_run_stopped_with_sigterm_is_recorded_once() {
    let Some((root, model, _run)) = gemini_session() else { return };
    let recorded = sessions(&root);
    check_recorded(&model, &recorded, "gemini", "");
}
