//! The example MCP server (`examples/mcp_mock.rs`) that the registry and pool tests use as
//! downstream servers, driven by rmcp's client: generated tools, echo, sleep, stderr, a
//! crash in the middle of a call, and a server that fails to start.

use std::path::PathBuf;
use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

/// The example's binary, built beside tmws by `cargo test`.
fn mock() -> PathBuf {
    let tmws = PathBuf::from(env!("CARGO_BIN_EXE_tmws"));
    let mock = tmws.parent().unwrap().join("examples").join(format!("mcp_mock{}", std::env::consts::EXE_SUFFIX));
    assert!(
        mock.exists(),
        "{} is missing: `cargo test` builds the examples (or `cargo build --examples`)",
        mock.display()
    );
    mock
}

fn call(name: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned()).with_arguments(args.as_object().unwrap().clone())
}

fn text(r: &rmcp::model::CallToolResult) -> String {
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect()
}

#[test]
fn the_mock_server_lists_its_tools_answers_and_misbehaves_on_demand() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let mut cmd = tokio::process::Command::new(mock());
        cmd.args(["--name", "serena", "--tools", "3", "--crash-on", "tool_2"]);
        let (transport, stderr) = TokioChildProcess::builder(cmd).stderr(Stdio::piped()).spawn().unwrap();
        let mut stderr = stderr.unwrap();
        let client = ().serve(transport).await.expect("initialize");
        assert_eq!(client.peer_info().unwrap().server_info.as_ref().unwrap().name, "serena");
        let names: Vec<String> = client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
        assert_eq!(names, ["echo", "sleep", "stderr", "crash", "tool_0", "tool_1", "tool_2"]);

        let r = client.call_tool(call("echo", json!({"text": "hello"}))).await.unwrap();
        assert_eq!((r.is_error, text(&r)), (Some(false), "hello".to_owned()));
        let r = client.call_tool(call("tool_1", json!({"query": "find_symbol"}))).await.unwrap();
        assert_eq!(text(&r), r#"serena/tool_1: {"query":"find_symbol"}"#);
        let r = client.call_tool(call("sleep", json!({"ms": 30}))).await.unwrap();
        assert_eq!(text(&r), "slept 30 ms");
        let r = client.call_tool(call("stderr", json!({"text": "a line for the log"}))).await.unwrap();
        assert_eq!(text(&r), "written to stderr");
        let r = client.call_tool(call("nope", json!({}))).await.unwrap();
        assert_eq!((r.is_error, text(&r)), (Some(true), "no tool `nope`".to_owned()));

        // A crash in the middle of a call: the call fails, the process is gone.
        assert!(client.call_tool(call("tool_2", json!({}))).await.is_err());
        let mut err = String::new();
        stderr.read_to_string(&mut err).await.unwrap();
        assert_eq!(err, "a line for the log\nmcp_mock serena: crashing on purpose\n");
    });
}

#[test]
fn a_mock_server_told_to_fail_starts_and_says_why() {
    let out = std::process::Command::new(mock())
        .args(["--name", "broken", "--fail-start", "no licence key"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "mcp_mock broken: no licence key\n");
    assert!(out.stdout.is_empty());
}
