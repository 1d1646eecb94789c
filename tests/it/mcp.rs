//! `tmws mcp` driven by rmcp's client over a child process: tools listed with their
//! schemas, exact answers for the sample root, errors as tool results, a file written
//! during the session found without a restart, and a clean exit when stdin closes.

use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

use super::util::TestRoot;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn text(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("")
}

fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn an_mcp_client_lists_the_tools_and_gets_exact_context() {
    let root = TestRoot::sample();
    runtime().block_on(async {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tmws"));
        cmd.arg("--root").arg(root.path()).arg("mcp").env_remove("TMWS_LOG");
        let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.expect("initialize");
        let info = client.peer_info().unwrap();
        assert_eq!(info.server_info.as_ref().unwrap().name, "tmws");

        let tools = client.list_all_tools().await.unwrap();
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            super::util::MCP_TOOLS
        );
        let ctx = tools.iter().find(|t| t.name == "workspace_get_context").unwrap();
        let schema = Value::Object((*ctx.input_schema).clone());
        assert_eq!(schema["required"], json!(["workspace"]));
        for p in ["workspace", "domain", "repository", "topics", "include_defaults", "filter_status", "filter_tags", "filter_category", "format", "max_chars"] {
            assert!(schema["properties"][p].is_object(), "{p} in {schema}");
        }
        assert!(schema["properties"]["workspace"]["description"].as_str().unwrap().contains("resources/workspaces"));

        // The same answer as the CLI gives, byte for byte, once the first sync is done (until
        // then, after waiting 200 ms, an answer says `stale: true`).
        let call = |v: Value| CallToolRequestParams::new("workspace_get_context").with_arguments(args(v));
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut with_defaults = 0;
        let r = loop {
            with_defaults += 1;
            let r = client
                .call_tool(call(json!({"workspace": "devtools", "domain": "common", "topics": ["lessons", "spikes"]})))
                .await
                .unwrap();
            if !text(&r).contains("\nstale: true\n") {
                break r;
            }
            assert!(Instant::now() < deadline, "the first sync never finished");
        };
        assert_eq!(r.is_error, Some(false));
        let cli = root.run(&["context", "-w", "devtools", "-d", "common", "--topics", "lessons,spikes"]);
        assert_eq!(text(&r), cli.stdout);

        let r = client
            .call_tool(call(json!({"workspace": "nihongo", "include_defaults": false, "topics": ["lessons"], "format": "json"})))
            .await
            .unwrap();
        let v: Value = serde_json::from_str(&text(&r)).unwrap();
        assert_eq!(
            v,
            json!({"scope": "nihongo", "lessons": {"entries": [{
                "name": "データベース接続プールの枯渇",
                "description": "データベース接続プールの設定を変更した後、同時接続数の上限を超えて障害が起きた。",
                "category": "configuration",
                "tags": ["データベース", "障害"],
                "created": "2026-09-15",
                "body_t1": "接続プールの最大数を下げたが、バッチ処理の同時実行数を見直していなかった。\n設定を変える前に、同時に動く処理の数を確認すること。",
                "_meta": {"document_path": "resources/workspaces/nihongo/mobile/_lessons/260915-connection-pool.md"}
            }]}})
        );

        // Errors are tool results, and the server keeps serving.
        let r = client.call_tool(call(json!({"workspace": "../etc"}))).await.unwrap();
        assert_eq!(r.is_error, Some(true));
        assert_eq!(text(&r), "`../etc` is not a valid scope name: use only letters, digits, `.`, `_` and `-`");
        let r = client.call_tool(call(json!({"workspace": "nope"}))).await.unwrap();
        assert_eq!((r.is_error, text(&r).as_str()), (Some(true), "unknown workspace `nope`; known: devtools, nihongo"));
        let r = client
            .call_tool(CallToolRequestParams::new("workspace_search").with_arguments(args(json!({"query": "  "}))))
            .await
            .unwrap();
        assert_eq!((r.is_error, text(&r).as_str()), (Some(true), "empty query: give some words to search for"));

        let r = client
            .call_tool(
                CallToolRequestParams::new("workspace_search")
                    .with_arguments(args(json!({"query": "接続", "kinds": ["entry"], "format": "json"}))),
            )
            .await
            .unwrap();
        let v: Value = serde_json::from_str(&text(&r)).unwrap();
        assert_eq!(v["results"][0]["refId"], "resources/workspaces/nihongo/mobile/_lessons/260915-connection-pool.md");

        // A lesson written now is in the next answer, through the server's own watcher.
        root.write(
            "resources/workspaces/nihongo/_lessons/261122-fresh.md",
            "---\nname: 新しい教訓\ndescription: 会話の途中で追加した。\ncreated: 2026-11-22\n---\n本文\n",
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let r = client
                .call_tool(call(json!({"workspace": "nihongo", "include_defaults": false, "topics": ["lessons"], "format": "json"})))
                .await
                .unwrap();
            let v: Value = serde_json::from_str(&text(&r)).unwrap();
            if v["lessons"]["entries"][0]["_meta"]["document_path"] == "resources/workspaces/nihongo/_lessons/261122-fresh.md" {
                break;
            }
            assert!(Instant::now() < deadline, "never saw the new lesson: {v}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Memories: an add is found by the next search (the server's watcher indexes it),
        // errors are results, and stats count the defaults asked for again.
        let tool = |name: &str, v: Value| CallToolRequestParams::new(name.to_owned()).with_arguments(args(v));
        let r = client
            .call_tool(tool("memory_add", json!({"content": "The staging database lives on port 5433.", "namespace": "long-term", "tags": ["staging"]})))
            .await
            .unwrap();
        assert_eq!(r.is_error, Some(false), "{}", text(&r));
        let added = super::util::yaml(&text(&r)).unwrap();
        let id = added["id"].as_str().unwrap().to_owned();
        // Found by the next search, or that search says it is stale (never a silent miss).
        let deadline = Instant::now() + Duration::from_secs(10);
        let v = loop {
            let r = client
                .call_tool(tool("memory_search", json!({"query": "staging database port", "format": "json"})))
                .await
                .unwrap();
            let v: Value = serde_json::from_str(&text(&r)).unwrap();
            if v["results"][0]["id"] == id.as_str() {
                break v;
            }
            assert_eq!(v["stale"], true, "a miss must say stale: {v}");
            assert!(Instant::now() < deadline, "never found: {v}");
        };
        assert_eq!(v["results"][0]["tags"], json!(["staging"]));
        let r = client.call_tool(tool("memory_get", json!({"id": "m_ffffffffffff"}))).await.unwrap();
        assert_eq!((r.is_error, text(&r).as_str()), (Some(true), "no memory `m_ffffffffffff`"));
        let r = client.call_tool(tool("memory_add", json!({"content": " "}))).await.unwrap();
        assert_eq!((r.is_error, text(&r).as_str()), (Some(true), "empty content: give the text to remember"));
        client.call_tool(call(json!({"workspace": "nihongo"}))).await.unwrap();
        let r = client.call_tool(tool("memory_stats", json!({}))).await.unwrap();
        let stats = super::util::yaml(&text(&r)).unwrap();
        // Every call with defaults after the first one of the session (the waiting ones too).
        assert_eq!(stats["defaults_redundant"].as_i64(), Some(with_defaults), "{}", text(&r));
        assert_eq!(stats["by_namespace"]["long-term"].as_i64(), Some(4));
        let r = client.call_tool(tool("memory_delete", json!({"id": id}))).await.unwrap();
        assert_eq!(r.is_error, Some(false), "{}", text(&r));
        // Maintenance: cleanup compacts (the add and its delete go), clear needs confirm.
        let r = client.call_tool(tool("memory_cleanup", json!({}))).await.unwrap();
        let done = super::util::yaml(&text(&r)).unwrap();
        assert_eq!(done["removed_expired"].as_i64(), Some(0), "{}", text(&r));
        assert!(done["compacted_bytes"].as_i64().unwrap() > 0, "{}", text(&r));
        // The sample's three long-term memories were written in October.
        let r = client.call_tool(tool("session_record", json!({"since": "2026-10-01", "agent": "claude"}))).await.unwrap();
        let rec = super::util::yaml(&text(&r)).unwrap();
        assert_eq!((rec["recorded"].as_bool(), rec["memories"].as_i64()), (Some(true), Some(3)), "{}", text(&r));
        let r = client.call_tool(tool("memory_clear", json!({"namespace": "long-term"}))).await.unwrap();
        assert_eq!(
            (r.is_error, text(&r).as_str()),
            (Some(true), "refusing to clear long-term without confirmation: pass --yes (CLI) or confirm: true (MCP)")
        );
        let r = client.call_tool(tool("memory_clear", json!({"namespace": "long-term", "confirm": true}))).await.unwrap();
        let cleared = super::util::yaml(&text(&r)).unwrap();
        assert_eq!(cleared["cleared"].as_i64(), Some(4), "{}", text(&r));
        client.cancel().await.unwrap();
    });
}

#[test]
fn the_server_exits_cleanly_when_stdin_closes() {
    let root = TestRoot::sample();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tmws"))
        .arg("--root")
        .arg(root.path())
        .arg("mcp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "tmws mcp did not exit after stdin closed");
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty(), "nothing but protocol on stdout");
}
