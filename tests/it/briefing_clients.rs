//! Briefings through a real agent's hooks, offline: Claude Code (npm
//! `@anthropic-ai/claude-code`, `TMWS_CLAUDE`) and Gemini CLI (npm `@google/gemini-cli`,
//! `TMWS_GEMINI`) run their whole agent loop in a project whose settings run `tmws brief`
//! from their hooks, against a scripted model on a loopback port
//! ([`Model`]) that asks for two shell commands — `db migrate --env production`, which a
//! memory is about, then `ls`, which nothing is about — and then says it is done. The tests
//! read what the agent sent the model: where each briefing landed, that each came once, and
//! that nothing came with `ls`; and the briefings' log, one line per hook run.

use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};

use super::agents::{Run, claude_command, gemini_command, installed, json_response, messages_turn, run_agent};
use super::util::{TestRoot, eventually};

/// The shell commands the scripted model asks for, in order.
const COMMANDS: [&str; 2] = ["db migrate --env production", "ls"];

/// The scripted model's last words.
const DONE: &str = "Migrated, after a dry run.";

/// What the user asks: a schema change, which a note of the project is about.
const PROMPT: &str = "Add a nullable discount column to the invoices table, then apply the schema change.";

/// The lesson of the project, an entry of its workspace.
const LESSON: &str = "resources/workspaces/acme/_lessons/2026-10-01-migrations.md";

/// The first line of every briefing.
const HEADER: &str = "Recalled project memory (tmws):";

/// A scripted model behind the Messages API (`POST /v1/messages`, Claude Code) and the
/// Gemini API (`POST /v1beta/models/MODEL:streamGenerateContent`): a request that offers the
/// agent's shell tool and hands back fewer results of it than there are [`COMMANDS`] gets the
/// next command; any other request gets [`DONE`]. Every request is kept.
struct Model {
    url: String,
    requests: Arc<Mutex<Vec<Value>>>,
    /// The runtime serving the model; dropping it stops the server.
    _rt: tokio::runtime::Runtime,
}

impl Model {
    fn start() -> Model {
        let rt = super::clients::runtime();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new().fallback(answer).with_state(requests.clone());
        rt.spawn(async move { axum::serve(listener, app).await });
        Model { url, requests, _rt: rt }
    }

    /// The requests of the agent loop, in order: those that offered the shell tool.
    fn turns(&self) -> Vec<Value> {
        let requests = self.requests.lock().unwrap().clone();
        requests.into_iter().filter(|r| offers_shell(&r["body"])).map(|r| r["body"].clone()).collect()
    }

    /// Every request body, as text.
    fn all_text(&self) -> String {
        self.requests.lock().unwrap().iter().map(Value::to_string).collect()
    }
}

/// Whether a request offers the agent's shell tool: `Bash` (Messages API) or
/// `run_shell_command` (Gemini API).
fn offers_shell(body: &Value) -> bool {
    let tools = body["tools"].as_array().map_or(&[][..], Vec::as_slice);
    tools.iter().any(|t| {
        t["name"] == "Bash"
            || t["functionDeclarations"]
                .as_array()
                .is_some_and(|fs| fs.iter().any(|f| f["name"] == "run_shell_command"))
    })
}

/// How many results of the scripted commands a request hands back.
fn shell_results(body: &Value) -> usize {
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    let blocks = messages.iter().filter_map(|m| m["content"].as_array()).flatten();
    let claude = blocks
        .filter(|b| {
            b["type"] == "tool_result" && b["tool_use_id"].as_str().is_some_and(|i| i.starts_with("toolu_brief_"))
        })
        .count();
    let contents = body["contents"].as_array().map_or(&[][..], Vec::as_slice);
    let parts = contents.iter().filter_map(|c| c["parts"].as_array()).flatten();
    let gemini = parts.filter(|p| p["functionResponse"]["name"] == "run_shell_command").count();
    claude + gemini
}

/// The scripted model's handler, for every path.
async fn answer(State(requests): State<Arc<Mutex<Vec<Value>>>>, uri: Uri, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let seq = {
        let mut requests = requests.lock().unwrap();
        requests.push(json!({"path": uri.path(), "body": body.clone()}));
        requests.len()
    };
    let next = Some(shell_results(&body)).filter(|n| *n < COMMANDS.len() && offers_shell(&body));
    match uri.path() {
        "/v1/messages" => messages(&body, next, seq),
        "/v1/messages/count_tokens" => json_response(StatusCode::OK, &json!({"input_tokens": 100})),
        p if p.starts_with("/v1beta/models/") && p.ends_with(":countTokens") => {
            json_response(StatusCode::OK, &json!({"totalTokens": 100}))
        }
        p if p.starts_with("/v1beta/models/") => gemini(next, p.ends_with(":streamGenerateContent")),
        other => json_response(
            StatusCode::NOT_FOUND,
            &json!({"type": "error", "error": {"type": "not_found_error", "message": format!("no {other} here")}}),
        ),
    }
}

/// A turn of the Messages API: command `next` as a `Bash` call, else the last words.
fn messages(body: &Value, next: Option<usize>, seq: usize) -> Response {
    let block = match next {
        Some(n) => json!({"type": "tool_use", "id": format!("toolu_brief_{n}_{seq}"), "name": "Bash",
            "input": {"command": COMMANDS[n], "description": "Run a step of the change"}}),
        None => json!({"type": "text", "text": DONE}),
    };
    messages_turn(body, seq, block)
}

/// A turn of the Gemini API: command `next` as a `run_shell_command` call, else the last
/// words.
fn gemini(next: Option<usize>, stream: bool) -> Response {
    let part = match next {
        Some(n) => json!({"functionCall": {"name": "run_shell_command",
            "args": {"command": COMMANDS[n], "description": "Run a step of the change"}}}),
        None => json!({"text": DONE}),
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

/// A briefing as the agent handed it to the model: what the agent wrote before its first
/// line on that line (the agent's label), and the refIds of its items, in order.
#[derive(Debug, PartialEq)]
struct Briefing {
    label: String,
    refs: Vec<String>,
}

/// The briefings in `text`, in order.
fn briefings_in(text: &str) -> Vec<Briefing> {
    let mut out = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(at) = line.find(HEADER) else { continue };
        let mut refs = Vec::new();
        while let Some(item) = lines.next_if(|l| l.starts_with("- [") || l.starts_with("  > ")) {
            if let Some((_, rest)) = item.strip_prefix("- [").and_then(|l| l.split_once("] ")) {
                refs.push(rest.split(' ').next().unwrap_or_default().to_owned());
            }
        }
        out.push(Briefing { label: line[..at].trim().to_owned(), refs });
    }
    out
}

/// Each message of a Messages API request: its role, and the texts it holds (its text
/// blocks and the text of its tool results).
fn messages_of(body: &Value) -> Vec<(String, Vec<String>)> {
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    messages
        .iter()
        .map(|m| {
            let role = m["role"].as_str().unwrap_or_default().to_owned();
            let texts = match &m["content"] {
                Value::String(s) => vec![s.clone()],
                Value::Array(blocks) => blocks
                    .iter()
                    .flat_map(|b| match &b["content"] {
                        Value::String(s) => vec![s.clone()],
                        Value::Array(inner) => {
                            inner.iter().filter_map(|i| i["text"].as_str().map(str::to_owned)).collect()
                        }
                        _ => b["text"].as_str().map(str::to_owned).into_iter().collect(),
                    })
                    .collect(),
                _ => Vec::new(),
            };
            (role, texts)
        })
        .collect()
}

/// The briefings of a Messages API request, each with the index and the role of the message
/// that holds it.
fn claude_briefings(body: &Value) -> Vec<(usize, String, Briefing)> {
    let mut out = Vec::new();
    for (i, (role, texts)) in messages_of(body).into_iter().enumerate() {
        for text in texts {
            out.extend(briefings_in(&text).into_iter().map(|b| (i, role.clone(), b)));
        }
    }
    out
}

/// The ids of what the project holds besides its lesson.
struct Ids {
    /// An open problem: a session start brings it.
    login: String,
    /// A solved problem about the command the agent runs.
    migrate: String,
    /// A note about the prompt's subject.
    invoices: String,
    /// A note about nothing the session does.
    plants: String,
}

/// A project made with `tmws init`: a lesson about migrations against production (an entry of
/// its workspace), an open problem, a solved problem about `db migrate --env production`, a
/// note about schema changes of the invoices table, a note about nothing, and its index.
fn project() -> (TestRoot, Ids) {
    let root = TestRoot::bare();
    let init = root.run(&["init"]);
    assert_eq!(init.code, 0, "{init:?}");
    root.write(
        LESSON,
        "---\nname: Dry-run migrations against production\ndescription: Run db migrate --dry-run against \
production first; a failed migration locked the orders table for an hour.\ncreated: 2026-10-01\n---\nAlways.\n",
    );
    let add = |args: &[&str]| -> String {
        let mut all = vec!["--json", "memory", "add"];
        all.extend_from_slice(args);
        let out = root.run(&all);
        assert_eq!(out.code, 0, "{out:?}");
        serde_json::from_str::<Value>(&out.stdout).unwrap()["id"].as_str().unwrap().to_owned()
    };
    let ids = Ids {
        login: add(&[
            "--kind",
            "problem",
            "--problem",
            "the login page times out one time in ten",
            "--file",
            "web/login.ts",
            "Login times out now and then.",
        ]),
        migrate: add(&[
            "--kind",
            "problem",
            "--problem",
            "db migrate --env production held a lock on the orders table for an hour",
            "--solution",
            "db migrate --dry-run --env production first, then db migrate off-hours",
            "db migrate on production locked the orders table.",
        ]),
        invoices: add(&[
            "--namespace",
            "long-term",
            "Schema changes to the invoices table go through migrations/pending/ and a review by the on-call DBA.",
        ]),
        plants: add(&["The office plants are watered on Fridays."]),
    };
    let out = root.run(&["index"]);
    assert_eq!(out.code, 0, "{out:?}");
    (root, ids)
}

/// Writes the project's `.claude/settings.json` hooks with `tmws hooks install claude`: a
/// session's start or resumption, a start after a compaction, each prompt, each shell
/// command, edit or write, and the session's end, each running `tmws brief`.
fn install_claude_hooks(root: &TestRoot) {
    install_hooks(root, "claude");
}

/// `tmws hooks install CLIENT` in `root`, with this test's binary named in the hooks (no
/// other tmws on PATH).
fn install_hooks(root: &TestRoot, client: &str) {
    let out = root.run(&["hooks", "install", client]);
    assert_eq!(out.code, 0, "{out:?}");
    let exe = Path::new(env!("CARGO_BIN_EXE_tmws")).display().to_string();
    let settings = match client {
        "claude" => ".claude/settings.json",
        _ => ".gemini/settings.json",
    };
    let written = root.read(settings);
    assert!(
        written.contains(&format!("{exe} brief --event")) || written.contains(&format!("'{exe}' brief --event")),
        "{written}"
    );
}

/// A folder holding `db`, a stand-in for the project's database tool that only says what it
/// was asked, so that the agent's commands change nothing.
fn stand_in_tools(home: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = home.join("tools");
    std::fs::create_dir_all(&bin).unwrap();
    let db = bin.join("db");
    std::fs::write(&db, "#!/bin/sh\necho \"db: $*\"\n").unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// `cmd`'s PATH with `first` before it.
fn path_with(cmd: &std::process::Command, first: &Path) -> std::ffi::OsString {
    let path = cmd.get_envs().find(|(k, _)| *k == "PATH").and_then(|(_, v)| v).unwrap_or_default().to_owned();
    std::env::join_paths(std::iter::once(first.to_path_buf()).chain(std::env::split_paths(&path))).unwrap()
}

/// Waits for the session's end in the briefings' log, then holds it to one line per hook
/// run of `client`: the start (the lesson, the open problem), the prompt (the invoices
/// note), the first command (the migrate problem), `ls` (nothing above the gate), the end.
fn one_log_line_per_hook(root: &TestRoot, ids: &Ids, client: &str) {
    let lines = eventually("the session's end in the briefings' log", || {
        let lines = log_lines(root);
        if lines.iter().any(|(_, event, _)| event == "session-end") { Ok(lines) } else { Err(lines) }
    });
    let got: Vec<(&str, &str, String)> =
        lines.iter().map(|(client, event, what)| (client.as_str(), event.as_str(), briefed(what))).collect();
    let end = got.last().map(|(_, _, what)| what.clone()).unwrap_or_default();
    assert!(end.starts_with("nothing: "), "{end}");
    assert_eq!(
        got,
        [
            (client, "session-start", format!("{LESSON} {}", ids.login)),
            (client, "prompt", ids.invoices.clone()),
            (client, "pre-tool", ids.migrate.clone()),
            (client, "pre-tool", "nothing: nothing above the gate".to_owned()),
            (client, "session-end", end),
        ]
    );
}

/// A line of `.tmws/cache/briefings/log`: the client, the event, and what was briefed
/// (`N chars: REFS`) or why nothing was (`nothing: WHY`).
fn log_lines(root: &TestRoot) -> Vec<(String, String, String)> {
    let log = std::fs::read_to_string(root.path().join(".tmws/cache/briefings/log")).unwrap_or_default();
    log.lines()
        .map(|l| {
            // TIME CLIENT EVENT N ms WHAT
            let mut parts = l.splitn(6, ' ');
            let (_, client, event, _, _, what) =
                (parts.next(), parts.next(), parts.next(), parts.next(), parts.next(), parts.next());
            let (client, event, what) =
                (client.unwrap_or_default(), event.unwrap_or_default(), what.unwrap_or_default());
            (client.to_owned(), event.to_owned(), what.to_owned())
        })
        .collect()
}

/// What a log line says was briefed: its refIds, or `nothing: WHY`.
fn briefed(what: &str) -> String {
    match what.split_once(" chars: ") {
        Some((_, refs)) => refs.to_owned(),
        None => what.to_owned(),
    }
}

/// Runs the scripted session with Claude Code in a project whose settings hold the hooks.
fn claude_session() -> Option<(TestRoot, Ids, Model, Run)> {
    let claude = installed("TMWS_CLAUDE", "claude/node_modules/.bin/claude", "Claude Code")?;
    let (root, ids) = project();
    install_claude_hooks(&root);
    let model = Model::start();
    // `--allowedTools Bash` runs the commands without a prompt, which `-p` could not show.
    let (mut cmd, home, debug) = claude_command(&claude, &root, &model.url, PROMPT, "Bash");
    let tools = stand_in_tools(home.path());
    cmd.env("PATH", path_with(&cmd, &tools));
    let run = run_agent(cmd, home, Some(&debug));
    let result: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("Claude Code's answer is not JSON ({e}): {}{}", run.stdout, run.stderr));
    assert_eq!(run.code, Some(0), "{result}\n{}", run.debug);
    assert_eq!((&result["is_error"], &result["result"]), (&json!(false), &json!(DONE)), "{result}");
    Some((root, ids, model, run))
}

/// Claude Code runs the project's hooks in `-p` mode with no flag to enable them, and puts
/// each hook's context in its next request to the model as a `system` message, labelled with
/// the hook: the session start's and the prompt's in the first request (together, in the
/// message after the prompt), the `Bash` call's after that call's result. Each item comes
/// once — the lesson the session start brought is not brought again by the command it is
/// about — the note about nothing never comes, and nothing comes with `ls`.
#[test]
fn claude_code_hands_the_model_each_briefing_once_where_its_hook_ran() {
    let Some((_root, ids, model, run)) = claude_session() else { return };
    let turns = model.turns();
    assert_eq!(turns.len(), 3, "a turn for each command, then the last words: {turns:#?}");
    let labelled = |body: &Value| -> Vec<(String, String, Vec<String>)> {
        claude_briefings(body).into_iter().map(|(_, role, b)| (role, b.label, b.refs)).collect()
    };
    let start = (
        "system".to_owned(),
        "SessionStart hook additional context:".to_owned(),
        vec![LESSON.to_owned(), ids.login.clone()],
    );
    let prompt =
        ("system".to_owned(), "UserPromptSubmit hook additional context:".to_owned(), vec![ids.invoices.clone()]);
    let command =
        ("system".to_owned(), "PreToolUse:Bash hook additional context:".to_owned(), vec![ids.migrate.clone()]);
    assert_eq!(labelled(&turns[0]), [start.clone(), prompt.clone()], "{}", turns[0]);
    assert_eq!(labelled(&turns[1]), [start.clone(), prompt.clone(), command.clone()], "{}", turns[1]);
    assert_eq!(labelled(&turns[2]), [start, prompt, command], "nothing comes with ls: {}", turns[2]);
    // The command's briefing follows the result of that command.
    let messages = messages_of(&turns[1]);
    let result = messages.iter().position(|(_, texts)| texts.iter().any(|t| t == "db: migrate --env production"));
    let briefing = claude_briefings(&turns[1]).last().map(|(i, _, _)| *i);
    assert!(result.is_some() && briefing > result, "result at {result:?}, briefing at {briefing:?}: {}", turns[1]);
    assert!(!model.all_text().contains(&ids.plants), "the note about nothing was never briefed");
    // Claude Code ran each hook once, and each run left its line (checked below).
    let ran: Vec<&str> =
        run.debug.lines().filter(|l| l.contains("brief --event") && l.contains("with status 0")).collect();
    assert_eq!(ran.len(), 5, "{}", ran.join("\n"));
}

/// Each hook run leaves its line in the briefings' log: what the session start, the prompt and
/// the first command were briefed with, why `ls` was not, and the session's end once Claude
/// Code ended it.
#[test]
fn a_claude_code_session_leaves_a_log_line_for_each_hook_run() {
    let Some((root, ids, _model, _run)) = claude_session() else { return };
    one_log_line_per_hook(&root, &ids, "claude");
}

/// Writes the project's `.gemini/settings.json` hooks with `tmws hooks install gemini`: a
/// session's start or resumption, each prompt (`BeforeAgent`), each shell command, edit or write, and the session's end. Gemini
/// CLI matches a tool's name as a regular expression but a session start's source as a whole
/// string: `startup|resume` would match neither, so each has its entry. Its `BeforeTool`
/// cannot add context (what such a hook adds is dropped), so a tool's briefing runs at
/// `AfterTool`, whose context Gemini CLI appends to the tool's result.
fn install_gemini_hooks(root: &TestRoot) {
    install_hooks(root, "gemini");
}

/// The briefings of a Gemini API request, each with the index of the content and of the part
/// that hold it, and that part's text (a function response's output). Gemini CLI wraps hook
/// context in `<hook_context>…</hook_context>` and escapes `>` in it as `&gt;`.
fn gemini_briefings(body: &Value) -> Vec<(usize, usize, String, Briefing)> {
    let contents = body["contents"].as_array().map_or(&[][..], Vec::as_slice);
    let mut out = Vec::new();
    for (i, c) in contents.iter().enumerate() {
        let parts = c["parts"].as_array().map_or(&[][..], Vec::as_slice);
        for (j, p) in parts.iter().enumerate() {
            let text = p["text"].as_str().or(p["functionResponse"]["response"]["output"].as_str()).unwrap_or_default();
            let plain = text.replace("&gt;", ">").replace("&lt;", "<").replace("&amp;", "&");
            out.extend(briefings_in(&plain).into_iter().map(|b| (i, j, text.to_owned(), b)));
        }
    }
    out
}

/// Runs the scripted session with Gemini CLI in a project whose settings hold the hooks.
fn gemini_session() -> Option<(TestRoot, Ids, Model)> {
    let gemini = installed("TMWS_GEMINI", "gemini/node_modules/.bin/gemini", "Gemini CLI")?;
    let (root, ids) = project();
    install_gemini_hooks(&root);
    let model = Model::start();
    let (mut cmd, home) = gemini_command(&gemini, &root, &model.url, PROMPT);
    let tools = stand_in_tools(home.path());
    cmd.env("PATH", path_with(&cmd, &tools));
    let run = run_agent(cmd, home, None);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    let result: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("Gemini CLI's answer is not JSON ({e}): {}{}", run.stdout, run.stderr));
    assert_eq!(result["response"], DONE, "{result}");
    Some((root, ids, model))
}

/// Gemini CLI runs the project's hooks in `-p` mode in a trusted folder. It puts a session
/// start's context before the prompt, in the prompt's own part, and the prompt hook's context
/// in a part after it, both in `<hook_context>`, in the first request; it gives the prompt
/// hook the prompt with the session start's context before it, which tmws does not take for
/// the user's words. The `db migrate` call's briefing comes appended to that call's result.
/// Each item comes once, the note about nothing never comes, nothing comes with `ls`, and
/// each hook run leaves its line in the briefings' log.
#[test]
fn gemini_cli_hands_the_model_each_briefing_once_where_its_hook_ran() {
    let Some((root, ids, model)) = gemini_session() else { return };
    let turns = model.turns();
    assert_eq!(turns.len(), 3, "a turn for each command, then the last words: {turns:#?}");
    let placed = |body: &Value| -> Vec<(usize, Vec<String>)> {
        gemini_briefings(body).into_iter().map(|(i, _, _, b)| (i, b.refs)).collect()
    };
    let start = (0, vec![LESSON.to_owned(), ids.login.clone()]);
    let prompt = (0, vec![ids.invoices.clone()]);
    // The contents of the second turn: the prompt, the call, and its result (the third).
    let command = (2, vec![ids.migrate.clone()]);
    assert_eq!(placed(&turns[0]), [start.clone(), prompt.clone()], "{}", turns[0]);
    assert_eq!(placed(&turns[1]), [start.clone(), prompt.clone(), command.clone()], "{}", turns[1]);
    assert_eq!(placed(&turns[2]), [start, prompt, command], "nothing comes with ls: {}", turns[2]);
    let first = gemini_briefings(&turns[0]);
    let (start, prompt) = (&first[0], &first[1]);
    assert!(
        start.2.starts_with(&format!("<hook_context>{HEADER}"))
            && start.2.ends_with(&format!("</hook_context>\n\n{PROMPT}")),
        "the session start's context comes before the prompt, in its part: {}",
        start.2
    );
    assert!(prompt.1 == start.1 + 1 && prompt.2.starts_with(&format!("<hook_context>{HEADER}")), "{}", prompt.2);
    let after = gemini_briefings(&turns[1]);
    let result = &after[2].2;
    assert!(
        result.contains("db: migrate --env production")
            && result.trim_end().ends_with("</hook_context>")
            && result.contains(&format!("\n\n<hook_context>{HEADER}")),
        "the call's briefing comes after its output: {result}"
    );
    assert!(!model.all_text().contains(&ids.plants), "the note about nothing was never briefed");
    one_log_line_per_hook(&root, &ids, "gemini");
}
