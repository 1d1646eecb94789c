//! Clients nobody here wrote: the official Python MCP SDK (PyPI `mcp`, pinned in `.ci/run`)
//! over stdio and streamable HTTP, and the MCP Inspector's command line (npm
//! `@modelcontextprotocol/inspector`, pinned in `.ci/run`). `.ci/run` installs them under
//! `target/` (`TMWS_PYTHON`, `TMWS_INSPECTOR` name them); a test that finds neither says so
//! and checks nothing: the tests never reach the network themselves.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use super::clients::Serve;
use super::util::eventually;
use super::util::{TestRoot, mcp_tools, repo, user_config};

/// The program `var` names, else the one `.ci/run` installs at `default` (below the repo).
pub(super) fn installed(var: &str, default: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(p.exists(), "{var} names {}, which does not exist", p.display());
        return Some(p);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo().join("target"), PathBuf::from);
    Some(target.join(default)).filter(|p| p.exists())
}

pub(super) fn python() -> Option<PathBuf> {
    let found = installed("TMWS_PYTHON", "py-venv/bin/python");
    if found.is_none() {
        super::util::missing(
            "no Python with the MCP SDK (set TMWS_PYTHON, or run .ci/run, which makes target/py-venv)",
        );
    }
    found
}

/// Runs the SDK client script; its report.
fn sdk(python: &PathBuf, args: &[&str]) -> Value {
    let out = Command::new(python)
        .arg(repo().join("tests/py/sdk_client.py"))
        .args(args)
        .env("TMWS_CONFIG_HOME", user_config())
        .env_remove("TMWS_LOG")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// What every run of the SDK client must have seen.
fn check_report(r: &Value) {
    assert_eq!(r["server"], "tmws");
    assert!(r["instructions"].as_str().unwrap().contains("Workspaces: devtools, nihongo"), "{}", r["instructions"]);
    let mut names: Vec<&str> = r["tools"].as_object().unwrap().keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, mcp_tools());
    for (name, tool) in r["tools"].as_object().unwrap() {
        assert!(tool["title"].is_string(), "{name} has a title");
        // Plain types the SDK and the Inspector can fill: no ["integer", "null"].
        for (param, ty) in tool["types"].as_object().unwrap() {
            assert!(ty.is_string(), "{name}.{param} is typed {ty}");
        }
    }
    assert_eq!(
        r["tools"]["memory_clear"]["annotations"],
        json!({"title": "Forget a namespace", "readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false})
    );
    assert_eq!(r["tools"]["workspace_search"]["defaults"], json!({"limit": 10, "format": "yaml", "max_chars": 24000}));
    assert_eq!(r["tools"]["workspace_read"]["required"], json!(["ref_id"]));
    for (name, call) in r["calls"].as_object().unwrap() {
        assert_eq!(call["is_error"], false, "{name}: {}", call["text"]);
    }
    let found: Value = serde_json::from_str(r["calls"]["memory_search"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(found["results"][0]["summary"], "The Python SDK can add memories.", "{found}");
    let calls = &r["calls"];
    assert!(calls["workspace_get_context"]["text"].as_str().unwrap().chars().count() <= 300);
    assert!(calls["workspace_read"]["text"].as_str().unwrap().chars().count() <= 200);
    assert!(calls["workspace_list"]["text"].as_str().unwrap().contains("scope: devtools\n"));
    assert!(calls["memory_get"]["text"].as_str().unwrap().contains("The Python SDK can add memories."));
    let described: Value = serde_json::from_str(calls["tool_describe"]["text"].as_str().unwrap()).unwrap();
    assert_eq!((&described["server"], &described["tool"]), (&json!("code"), &json!("find_symbol")));
    assert_eq!(described["input_schema"]["type"], "object", "{described}");
    // Every tool was called with good arguments but tool_call, whose good call needs a
    // downstream server (tests/it/pool.rs) and which is called here with a bad one.
    let mut called: Vec<&str> = calls.as_object().unwrap().keys().map(String::as_str).collect();
    called.push("tool_call");
    called.sort_unstable();
    assert_eq!(called, mcp_tools());
    // The client's own name, on either protocol, and said to be only what it reported.
    let verified: Value = serde_json::from_str(calls["trust_verify"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        (&verified["agent"], &verified["verifier"], &verified["verifier_self_reported"]),
        (&json!("writer-bot"), &json!("sdk-agent"), &json!(true))
    );
    let shown: Value = serde_json::from_str(calls["trust_show"]["text"].as_str().unwrap()).unwrap();
    let writer: Vec<&Value> =
        shown["agents"].as_array().unwrap().iter().filter(|a| a["agent"] == "writer-bot").collect();
    assert_eq!(
        (writer.len(), &writer[0]["successes"], &writer[0]["self_reported"]),
        (1, &json!(1), &json!(1)),
        "{shown}"
    );

    let recalled: Value = serde_json::from_str(calls["recall"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        (&recalled["results"][0]["refId"], &recalled["results"][0]["kind"]),
        (&json!("resources/workspaces/devtools/_lessons/260415-notify-mkdir-p.md"), &json!("lesson")),
        "{recalled}"
    );
    let listed: Value = serde_json::from_str(calls["memory_list"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(listed["results"][0]["summary"], "The Python SDK can add memories.");
    let written: Value = serde_json::from_str(calls["entry_write"]["text"].as_str().unwrap()).unwrap();
    let day = chrono::Utc::now().date_naive().format("%y%m%d").to_string();
    assert_eq!(
        (written["refId"].as_str(), written["action"].as_str()),
        (
            Some(format!("resources/workspaces/devtools/_lessons/{day}-the-python-sdk-writes-entries.md").as_str()),
            Some("created")
        )
    );
    assert_eq!(
        r["bad"]["invalid entry"]["structured"]["error"],
        "the entry is not valid, nothing was written: [invalid-date] `created` must be a real date written \
YYYY-MM-DD; found `soon` (write the date as YYYY-MM-DD, e.g. 2026-11-22)"
    );
    let categories = [
        ("unknown parameter", "usage"),
        ("camelCase parameter", "usage"),
        ("wrong type", "usage"),
        ("out of range", "usage"),
        ("missing required", "usage"),
        ("unknown scope", "not_found"),
        ("unknown memory", "not_found"),
        ("clear without confirm", "usage"),
        ("unknown refId", "not_found"),
        ("unknown server", "not_found"),
        ("invalid entry", "usage"),
        ("stale entry", "conflict"),
        ("self verification", "usage"),
        ("verifier parameter", "usage"),
    ];
    for (what, category) in categories {
        let bad = &r["bad"][what];
        assert_eq!(bad["is_error"], true, "{what}: {bad}");
        assert_eq!(bad["structured"]["category"], category, "{what}: {bad}");
        assert_eq!(bad["structured"]["error"], bad["text"].as_str().unwrap().lines().next().unwrap(), "{what}");
    }
    assert_eq!(
        r["bad"]["camelCase parameter"]["structured"]["error"],
        "unknown parameter `minScore`, expected one of `query`, `namespace`, `tags`, `kind`, `branch`, `limit`, \
`min_score`, `include_content`, `format`, `max_chars`"
    );
    assert!(
        r["unknown_tool"].as_str().unwrap().starts_with("MCPError: no tool `no_such_tool`"),
        "{}",
        r["unknown_tool"]
    );
    assert_eq!(r["warnings"], json!([]), "the SDK logged no warning (a session DELETE answered 202, say)");
}

/// The session entries the SDK's client session left: the one its session_record wrote,
/// holding what the session did until then, and the one it left when it ended (stdin
/// closed, its HTTP session deleted, or the server stopped): what it did after.
fn check_session_recorded(root: &TestRoot) {
    let log = std::fs::read_to_string(root.path().join(".tmws/memory/long-term.jsonl")).unwrap_or_default();
    let asked: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["kind"] == "session" && v["session"]["automatic"] == false)
        .collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let s = &asked[0]["session"];
    assert_eq!(s["agents"], json!(["sdk-agent"]), "{s}");
    let tools: Vec<&str> = s["queries"].as_array().unwrap().iter().map(|q| q["tool"].as_str().unwrap()).collect();
    assert_eq!(tools, ["recall", "workspace_search", "memory_search"], "{s}");
    assert_eq!(s["memories"].as_array().unwrap().len(), 1, "{s}");
    assert!(s["duration_secs"].is_i64(), "{s}");
    let automatic = || -> Vec<Value> {
        let log = std::fs::read_to_string(root.path().join(".tmws/memory/long-term.jsonl")).unwrap_or_default();
        log.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["kind"] == "session" && v["session"]["automatic"] == true)
            .collect()
    };
    let recorded = eventually("a session entry once the client left", || Some(automatic()).filter(|r| !r.is_empty()));
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    let s = &recorded[0]["session"];
    assert_eq!((&s["agents"], &s["verifications"][0]["agent"]), (&json!(["sdk-agent"]), &json!("writer-bot")), "{s}");
    assert_eq!(
        s["queries"],
        json!([{"tool": "tool_search", "query": "anything"}]),
        "only what came after session_record"
    );
}

/// The SDK over stdio, in `mode` (`legacy`, `auto`), speaking `protocol`.
fn sdk_over_stdio(mode: &str, protocol: &str) {
    let Some(python) = python() else { return };
    let root = TestRoot::sample();
    let worktrees = tempfile::tempdir().unwrap();
    super::tasks::in_git(&root, worktrees.path());
    let _github = super::typed::with_fake_github(&root);
    let report = sdk(&python, &["stdio", env!("CARGO_BIN_EXE_tmws"), root.path().to_str().unwrap(), mode]);
    assert_eq!(report["protocol"], protocol);
    check_report(&report);
    check_session_recorded(&root);
}

/// The SDK over `/mcp`, in `mode`, speaking `protocol`; the server stops after it, which
/// ends a stateless client's session.
fn sdk_over_http(mode: &str, protocol: &str) {
    let Some(python) = python() else { return };
    let root = TestRoot::sample();
    let worktrees = tempfile::tempdir().unwrap();
    super::tasks::in_git(&root, worktrees.path());
    let _github = super::typed::with_fake_github(&root);
    let serve = Serve::start(root.path(), None);
    let report = sdk(&python, &["http", &format!("{}/mcp", serve.url), &serve.token, mode]);
    assert_eq!(report["protocol"], protocol);
    check_report(&report);
    let (code, stderr) = serve.terminate();
    assert_eq!(code, Some(0), "{stderr}");
    check_session_recorded(&root);
}

#[test]
fn the_python_sdk_uses_every_tool_over_stdio_with_the_initialize_handshake() {
    sdk_over_stdio("legacy", "2025-11-25");
}

#[test]
fn the_python_sdk_uses_every_tool_over_stdio_statelessly_by_default() {
    sdk_over_stdio("auto", "2026-07-28");
}

#[test]
fn the_python_sdk_uses_every_tool_over_streamable_http_with_the_initialize_handshake() {
    sdk_over_http("legacy", "2025-11-25");
}

/// Regression: on the stateless protocol each request was a session of its own, of
/// `rmcp`, and the verifier was `rmcp`.
#[test]
fn the_python_sdk_uses_every_tool_over_streamable_http_statelessly_by_default() {
    sdk_over_http("auto", "2026-07-28");
}

/// A scripted agent session (docs/memory-log.md, sessions) through the official SDK: one client
/// recalls, adds the problem it met with its solution, searches, calls another server's tool and
/// verifies another agent, then disconnects; its session is recorded once, naming each of those; a
/// second client recalling a similar task gets the problem and its solution first.
#[test]
fn a_scripted_sdk_session_is_recorded_and_its_solution_recalled_by_the_next_client() {
    let Some(python) = python() else { return };
    let root = TestRoot::sample();
    root.write(
        ".mcp.json",
        json!({"mcpServers": {"mock": {"command": super::util::mock(), "args": ["--name", "mock"]}}}).to_string(),
    );
    let built = root.run(&["registry", "build", "--yes", "--timeout-ms", "60000"]);
    assert_eq!(built.code, 0, "{}{}", built.stdout, built.stderr);
    let session = |name: &str, mode: &str| -> Vec<Value> {
        let out = Command::new(&python)
            .arg(repo().join("tests/py/sdk_session.py"))
            .args([env!("CARGO_BIN_EXE_tmws"), root.path().to_str().unwrap(), name, mode])
            .env("TMWS_CONFIG_HOME", user_config())
            .env_remove("TMWS_LOG")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let calls: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        for c in &calls {
            assert_eq!(c["is_error"], false, "{c}");
        }
        calls
    };
    let solved = session("agent-a", "solve");
    let added: Value = serde_json::from_str(solved[1]["text"].as_str().unwrap()).unwrap();
    assert_eq!(solved[3]["text"], "hello", "the mock echoes");
    let log = || std::fs::read_to_string(root.path().join(".tmws/memory/long-term.jsonl")).unwrap_or_default();
    let sessions = || -> Vec<Value> {
        log().lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|v| v["kind"] == "session").collect()
    };
    let recorded = eventually("a session entry", || {
        let recorded = sessions();
        if recorded.is_empty() { Err(log()) } else { Ok(recorded) }
    });
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    let s = &recorded[0]["session"];
    assert_eq!(
        s["queries"],
        json!([
            {"tool": "recall", "query": "deploys hang after the token refresh"},
            {"tool": "workspace_search", "query": "connection pool"}
        ])
    );
    assert_eq!(s["memories"], json!([added["id"]]));
    // The memory and the record of the session that wrote it name the same session.
    let memory = log().lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find(|v| v["id"] == added["id"]);
    let session_of = memory.unwrap()["author"]["session"].clone();
    assert!(super::util::is_session_id(&session_of), "{session_of}");
    assert_eq!(recorded[0]["author"]["session"], session_of);
    assert_eq!(s["tool_calls"], json!({"mock/echo": {"calls": 1, "failed": 0}}));
    assert_eq!(s["verifications"], json!([{"agent": "writer-bot", "success": true, "trust": 0.55}]));
    assert_eq!((&s["agents"], &recorded[0]["agent"]), (&json!(["agent-a"]), &json!("agent-a")));
    assert!(s["since"].is_string() && s["until"].is_string() && s["duration_secs"].is_i64(), "{s}");

    let recalled = session("agent-b", "recall");
    let r: Value = serde_json::from_str(recalled[0]["text"].as_str().unwrap()).unwrap();
    let first = &r["results"][0];
    assert_eq!(
        (&first["refId"], &first["kind"], &first["solution"], &first["files"]),
        (
            &added["id"],
            &json!("problem"),
            &json!("reload the token file before each deploy step"),
            &json!(["deploy/run.sh"])
        ),
        "{r}"
    );
}

/// What one run of a program said: its exit code, stdout and stderr.
pub(super) type Said = (Option<i32>, String, String);

/// The MCP Inspector's command line against `tmws mcp` in `root`: each call runs it with
/// the arguments given and answers its exit code, stdout and stderr. None (after saying
/// so) when the Inspector is not installed.
pub(super) fn inspector(root: &TestRoot) -> Option<impl Fn(&[&str]) -> Said + '_> {
    let Some(inspector) = installed("TMWS_INSPECTOR", "inspector/node_modules/.bin/mcp-inspector") else {
        super::util::missing(
            "no MCP Inspector (set TMWS_INSPECTOR, or run .ci/run, which installs it in target/inspector)",
        );
        return None;
    };
    Some(move |args: &[&str]| {
        let out = Command::new(&inspector)
            .args(["--cli", env!("CARGO_BIN_EXE_tmws"), "mcp", "--root", root.path().to_str().unwrap(), "--"])
            .args(args)
            .env("TMWS_CONFIG_HOME", user_config())
            .env_remove("TMWS_LOG")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
}

/// Regression: optional parameters were typed `["integer", "null"]`, which the Inspector
/// cannot fill: `--tool-arg limit=1` arrived as "1" and was refused.
#[test]
fn the_inspector_cli_calls_tools_with_typed_arguments() {
    let root = TestRoot::sample();
    let Some(inspect) = inspector(&root) else { return };
    let (code, stdout, stderr) = inspect(&[
        "--method",
        "tools/call",
        "--tool-name",
        "workspace_search",
        "--tool-arg",
        "query=connection pool",
        "--tool-arg",
        "limit=1",
        "--tool-arg",
        "format=json",
    ]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["isError"], false);
    let answer: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(answer["results"].as_array().unwrap().len(), 1);
    assert_eq!(answer["results"][0]["refId"], "resources/workspaces/devtools/common/_features/260601-lazy-pool.md");

    let (code, stdout, _) = inspect(&[
        "--method",
        "tools/call",
        "--tool-name",
        "workspace_get_context",
        "--tool-arg",
        "workspace=devtools",
        "--tool-arg",
        "include_defaults=false",
        "--tool-arg",
        "max_chars=150",
    ]);
    assert_eq!(code, Some(0), "{stdout}");
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert!(result["content"][0]["text"].as_str().unwrap().chars().count() <= 150, "{result}");

    let (code, stdout, stderr) = inspect(&["--method", "tools/list"]);
    assert_eq!(code, Some(0), "{stderr}");
    let list: Value = serde_json::from_str(&stdout).unwrap();
    let read = list["tools"].as_array().unwrap().iter().find(|t| t["name"] == "workspace_read").unwrap();
    assert_eq!(read["annotations"]["readOnlyHint"], true);
}
