//! Typed answers over MCP (docs/surfaces.md#typed-answers): every tool publishes an
//! `outputSchema`, and every answer's `structuredContent` keeps to it, checked here with
//! rmcp's client and a JSON Schema validator, with the official Python SDK's `Client` (which
//! validates structured content against the output schema itself) in its default and legacy
//! modes over stdio and `/mcp`, and with the MCP Inspector's `--strict` lint. Documents an
//! answer names are resource links, read with `resources/read`; URIs that name nothing or
//! could leave the root are refused.

use std::collections::BTreeSet;
use std::process::Command;

use rmcp::model::{ReadResourceRequestParams, Resource, ResourceContents, Tool};
use serde_json::{Value, json};

use super::clients::{Mcp, Serve, result_text};
use super::real_clients::python;
use super::util::{TestRoot, eventually, mcp_tools, repo, user_config};

/// The calls that, with the cross-surface table, call every tool with good arguments.
fn more_calls() -> Vec<(&'static str, Value)> {
    vec![
        ("memory_stats", json!({"format": "json"})),
        ("memory_verify", json!({"format": "json"})),
        ("memory_cleanup", json!({})),
        ("session_record", json!({})),
        ("trust_verify", json!({"agent": "writer-bot", "success": true, "evidence": "its tests pass"})),
        ("trust_show", json!({})),
        ("review_list", json!({"format": "json"})),
        ("workspace_get_context", json!({"workspace": "devtools", "topics": ["*"], "max_chars": 300})),
        ("workspace_search", json!({"query": "connection pool", "max_chars": 100})),
        ("memory_clear", json!({"namespace": "short-term", "confirm": true})),
        ("tool_describe", json!({"server": "mock", "tool": "echo"})),
        ("tool_call", json!({"server": "mock", "tool": "echo", "arguments": {"text": "hello"}})),
        ("task_start", json!({"name": "typed", "issue": "#1"})),
        ("task_list", json!({"all": true})),
        ("task_done", json!({"name": "typed", "outcome": "answered", "merge": true})),
        ("issue_show", json!({"reference": "#123", "format": "json"})),
    ]
}

/// A sample root whose registry names the mock server (for `tool_call`).
fn root_with_mock() -> TestRoot {
    let root = TestRoot::sample();
    root.write(
        ".mcp.json",
        json!({"mcpServers": {"mock": {"command": super::util::mock(), "args": ["--name", "mock"]}}}).to_string(),
    );
    let built = root.run(&["registry", "build", "--yes", "--timeout-ms", "60000"]);
    assert_eq!(built.code, 0, "{}{}", built.stdout, built.stderr);
    root
}

/// Why `answer` does not keep to the output schema `tools/list` gave `tool`, if it does not.
/// A fake GitHub for `issue_show` (asked with no token: a public repository), named in
/// the root's config; it answers while the value lives.
pub(super) fn with_fake_github(root: &TestRoot) -> super::trackers::Fake {
    let github = super::trackers::fake_github();
    let config = root.read(".tmws/config.toml");
    root.write(
        ".tmws/config.toml",
        format!(
            "{config}\n[trackers.github]\nrepo = \"o/r\"\napi_url = \"{}\"\ntoken_env = \"TMWS_TEST_NO_TOKEN\"\n",
            github.base
        ),
    );
    github
}

fn violations(tools: &[Tool], tool: &str, answer: &Value) -> Vec<String> {
    let listed = tools.iter().find(|t| t.name == tool).unwrap();
    let schema = Value::Object((*listed.output_schema.clone().expect("an output schema")).clone());
    let validator = jsonschema::validator_for(&schema).unwrap();
    validator.iter_errors(answer).map(|e| format!("{tool}: {e} at {}", e.instance_path())).collect()
}

#[test]
fn every_tool_answers_structured_content_that_its_output_schema_allows() {
    let root = root_with_mock();
    let worktrees = tempfile::tempdir().unwrap();
    super::tasks::in_git(&root, worktrees.path());
    let _github = with_fake_github(&root);
    let mcp = Mcp::start(root.path());
    let tools = mcp.tools();
    for t in &tools {
        let schema = t.output_schema.as_ref().unwrap_or_else(|| panic!("{} has no outputSchema", t.name));
        assert_eq!(schema["type"], "object", "{}", t.name);
    }
    let mut calls: Vec<(String, &'static str, Value, bool)> =
        super::surfaces::cases().into_iter().map(|c| (c.what.to_owned(), c.tool, c.args, c.writes)).collect();
    calls.extend(more_calls().into_iter().map(|(tool, args)| (tool.to_owned(), tool, args, true)));
    let mut answered = BTreeSet::new();
    for (what, tool, args, writes) in calls {
        let result = eventually(&format!("a fresh answer of {what}"), || {
            let r = mcp.result(tool, args.clone());
            let stale = r.structured_content.as_ref().is_some_and(|s| s["stale"] == true);
            if stale { Err(result_text(&r)) } else { Ok(r) }
        });
        if writes {
            // As the cross-surface table does: the index catches up with a write before the
            // next call.
            mcp.call_fresh("memory_search", json!({"query": "caught up"}));
        }
        let structured = result.structured_content.clone().unwrap_or_else(|| panic!("{what}: no structuredContent"));
        // An error keeps its own structured content, which the output schema admits too.
        assert_eq!(violations(&tools, tool, &structured), Vec::<String>::new(), "{what}: {structured}");
        if result.is_error == Some(true) {
            assert!(structured["category"].is_string() && structured["error"].is_string(), "{what}: {structured}");
            continue;
        }
        // The structured content is the text's answer: the same JSON when JSON was asked for.
        let text = result_text(&result);
        if args["format"] == "json" {
            assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), structured, "{what}");
        }
        answered.insert(tool);
    }
    mcp.stop();
    assert_eq!(answered.into_iter().collect::<Vec<_>>(), mcp_tools(), "every tool answered once at least");
}

#[test]
fn an_answer_cut_to_its_cap_is_marked_and_keeps_to_its_output_schema() {
    let root = TestRoot::sample();
    let mcp = Mcp::start(root.path());
    let tools = mcp.tools();
    for (tool, args) in [
        ("workspace_search", json!({"query": "connection pool", "max_chars": 120, "format": "json"})),
        ("workspace_get_context", json!({"workspace": "devtools", "max_chars": 100, "format": "json"})),
        ("workspace_read", json!({"ref_id": "resources/workspaces/devtools/OVERVIEW.md", "max_chars": 100})),
    ] {
        let r = mcp.result(tool, args.clone());
        let structured = r.structured_content.clone().unwrap();
        assert_eq!(structured["truncated"], true, "{tool}: {structured}");
        assert!(structured["hint"].as_str().unwrap().starts_with("answer cut to fit max_chars"), "{structured}");
        assert_eq!(violations(&tools, tool, &structured), Vec::<String>::new(), "{structured}");
        if args["format"] == "json" {
            assert_eq!(serde_json::from_str::<Value>(&result_text(&r)).unwrap(), structured, "{tool}");
        }
    }
    mcp.stop();
}

/// The resource links of a tool result.
fn links(r: &rmcp::model::CallToolResult) -> Vec<Resource> {
    r.content.iter().filter_map(|c| c.as_resource_link()).cloned().collect()
}

#[test]
fn documents_found_are_resource_links_that_resources_read_gives_whole() {
    let root = TestRoot::sample();
    let mcp = Mcp::start(root.path());
    let caps = mcp.client.peer_info().unwrap().capabilities.clone();
    assert!(caps.resources.is_some(), "resources are a capability: {caps:?}");
    let found = eventually("a fresh search", || {
        let r = mcp.result("workspace_search", json!({"query": "connection pool", "limit": 2}));
        if r.structured_content.as_ref().unwrap()["stale"] == true { Err(result_text(&r)) } else { Ok(r) }
    });
    let hits = found.structured_content.clone().unwrap()["results"].clone();
    let linked = links(&found);
    assert_eq!(linked.len(), hits.as_array().unwrap().len(), "{linked:?}");
    let first = &hits[0];
    let ref_id = first["refId"].as_str().unwrap();
    assert_eq!(ref_id, "resources/workspaces/devtools/common/_features/260601-lazy-pool.md");
    assert_eq!(
        linked[0],
        Resource::new(format!("tmws://ref/{ref_id}"), ref_id)
            .with_title(first["name"].as_str().unwrap())
            .with_description(first["summary"].as_str().unwrap())
            .with_mime_type("application/yaml")
    );
    // The text an agent reads at the link is what workspace_read gives for the refId.
    let read = mcp.rt.block_on(mcp.client.read_resource(ReadResourceRequestParams::new(&linked[0].uri))).unwrap();
    let whole = result_text(&mcp.result("workspace_read", json!({"ref_id": ref_id})));
    match &read.contents[..] {
        [ResourceContents::TextResourceContents { uri, mime_type, text, .. }] => {
            assert_eq!((uri, mime_type.as_deref()), (&linked[0].uri, Some("application/yaml")));
            assert_eq!(text, &whole);
        }
        other => panic!("{other:?}"),
    }
    // A memory found is a link too, and reads as its whole content.
    let added = mcp.result("memory_add", json!({"content": "Links lead to whole memories.", "format": "json"}));
    let id = added.structured_content.unwrap()["id"].as_str().unwrap().to_owned();
    let searched = eventually("the memory found", || {
        let r = mcp.result("memory_search", json!({"query": "links whole memories"}));
        if links(&r).is_empty() { Err(result_text(&r)) } else { Ok(r) }
    });
    assert_eq!(links(&searched)[0].uri, format!("tmws://ref/{id}"));
    let read = mcp.rt.block_on(mcp.client.read_resource(ReadResourceRequestParams::new(format!("tmws://ref/{id}"))));
    let ResourceContents::TextResourceContents { text, .. } = &read.unwrap().contents[0] else { panic!() };
    assert!(text.contains("body: Links lead to whole memories."), "{text}");
    // None is listed: search finds them; the template says how one is named.
    let listed = mcp.rt.block_on(mcp.client.list_resources(None)).unwrap();
    assert!(listed.resources.is_empty(), "{listed:?}");
    let templates = mcp.rt.block_on(mcp.client.list_resource_templates(None)).unwrap();
    let uris: Vec<&str> = templates.resource_templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert_eq!(uris, ["tmws://ref/{+refId}"]);
    mcp.stop();
}

/// Regression guard for `resources/read`: a URI of another scheme, one whose path is
/// absolute or climbs out with `..` (written plainly or %-escaped), or names a file tmws
/// does not index, is an error that says so, and no file outside what the index holds is
/// ever read.
#[test]
fn hostile_resource_uris_are_refused_and_read_nothing_outside_the_index() {
    let root = TestRoot::sample();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "OUTSIDE-THE-ROOT").unwrap();
    root.write(".tmws/private.md", "---\nname: private\n---\nNOT-INDEXED\n");
    let abs = secret.to_str().unwrap().trim_start_matches('/');
    let mcp = Mcp::start(root.path());
    let cases = [
        (format!("file://{}", secret.display()), -32602, "not a tmws document URI"),
        (format!("TMWS://ref/{abs}"), -32602, "not a tmws document URI"),
        ("tmws://other/x".to_owned(), -32602, "not a tmws document URI"),
        (format!("tmws://ref//{abs}"), -32602, "is not a refId"),
        (format!("tmws://ref/%2F{}", abs.replace('/', "%2F")), -32602, "is not a refId"),
        ("tmws://ref/../../../../../../etc/passwd".to_owned(), -32602, "`..` segment"),
        ("tmws://ref/resources/%2E%2E/%2E%2E/%2E%2E/etc/passwd".to_owned(), -32602, "`..` segment"),
        ("tmws://ref/resources/..%2F..%2F..%2Fetc%2Fpasswd".to_owned(), -32602, "`..` segment"),
        ("tmws://ref/resources\\..\\..\\secret.txt".to_owned(), -32602, "is not a refId"),
        ("tmws://ref/a%00b".to_owned(), -32602, "is not a refId"),
        ("tmws://ref/a%ZZ".to_owned(), -32602, "bad %-escape"),
        ("tmws://ref/%FF%FE".to_owned(), -32602, "not UTF-8"),
        ("tmws://ref/".to_owned(), -32602, "names no refId"),
        ("tmws://ref/x.md?raw=1".to_owned(), -32602, "no query or fragment"),
        ("tmws://ref/.tmws/private.md".to_owned(), -32002, "nothing indexed has the refId `.tmws/private.md`"),
        ("tmws://ref/.tmws/config.toml".to_owned(), -32002, "nothing indexed has the refId"),
        ("tmws://ref/m_000000000000".to_owned(), -32002, "nothing indexed has the refId"),
    ];
    for (uri, code, says) in cases {
        let read = mcp.rt.block_on(mcp.client.read_resource(ReadResourceRequestParams::new(&uri)));
        match read {
            Err(rmcp::ServiceError::McpError(e)) => {
                assert_eq!(e.code.0, code, "{uri}: {e:?}");
                assert!(e.message.contains(says), "{uri}: {}", e.message);
                assert!(!e.message.contains("OUTSIDE-THE-ROOT") && !e.message.contains("NOT-INDEXED"), "{uri}");
            }
            other => panic!("{uri}: {other:?}"),
        }
    }
    // The server is still serving.
    assert!(!result_text(&mcp.result("workspace_list", json!({}))).is_empty());
    mcp.stop();
}

/// The official Python SDK's `Client`, in its default mode (`server/discover`, else
/// `initialize`) and its legacy mode (`initialize`), over stdio and `/mcp`: it validates
/// every answer's structured content against the tool's output schema and fails the call
/// when it does not keep to it; the script validates again itself and follows a link.
#[test]
fn the_python_sdk_validates_every_answer_against_its_output_schema() {
    let Some(python) = python() else { return };
    let root = root_with_mock();
    let worktrees = tempfile::tempdir().unwrap();
    super::tasks::in_git(&root, worktrees.path());
    let _github = with_fake_github(&root);
    let run = |args: &[&str]| -> Value {
        let out = Command::new(&python)
            .arg(repo().join("tests/py/sdk_typed.py"))
            .args(args)
            .env("TMWS_CONFIG_HOME", user_config())
            .env_remove("TMWS_LOG")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
    };
    let check = |r: &Value, how: &str| {
        let mut validated: Vec<&str> = r["validated"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        // Every call answers, trust_verify too: a client of the stateless protocol names
        // itself in each request's `_meta`.
        assert_eq!(r["errors"], json!({}), "{how}");
        validated.sort_unstable();
        validated.dedup();
        assert_eq!(validated, mcp_tools(), "{how}: every tool's answer was validated");
        assert_eq!(r["invalid"], json!([]), "{how}");
        assert_eq!(r["without_schema"], json!([]), "{how}");
        assert_eq!(r["read"]["same_as_workspace_read"], true, "{how}: {}", r["read"]);
        assert_eq!(r["read"]["mime_type"], "application/yaml", "{how}");
        assert_eq!(r["read"]["link"]["name"], "resources/workspaces/devtools/common/_features/260601-lazy-pool.md");
        assert_eq!(r["tool_call"], json!({"content": [{"type": "text", "text": "hello"}]}), "{how}");
        assert_eq!(r["resources"], json!([]), "{how}");
        let hostile = r["hostile"].as_object().unwrap();
        assert_eq!(hostile["tmws://ref/../../etc/passwd"]["code"], -32602, "{how}: {hostile:?}");
        assert_eq!(hostile["file:///etc/passwd"]["code"], -32602, "{how}");
        // Not found is -32002 before the stateless protocol and -32602 in it (rmcp maps it).
        let not_found = if r["protocol"] == "2026-07-28" { -32602 } else { -32002 };
        let unknown = &hostile["tmws://ref/.tmws/config.toml"];
        assert_eq!(unknown["code"], not_found, "{how}: {unknown}");
        assert_eq!(unknown["message"], "nothing indexed has the refId `.tmws/config.toml`", "{how}");
    };
    let tmws = env!("CARGO_BIN_EXE_tmws");
    let at = root.path().to_str().unwrap();
    for mode in ["auto", "legacy"] {
        check(&run(&[mode, "stdio", tmws, at]), &format!("{mode}, stdio"));
    }
    let serve = Serve::start(root.path(), None);
    let url = format!("{}/mcp", serve.url);
    for mode in ["auto", "legacy"] {
        check(&run(&[mode, "http", &url, &serve.token]), &format!("{mode}, /mcp"));
    }
}

/// The MCP Inspector's command line: `--strict` finds nothing unportable in any input or
/// output schema, and it validates the structured content of the tools it calls (a call
/// whose structured content does not keep to the schema fails).
#[test]
fn the_inspector_finds_every_schema_portable_and_every_answer_valid() {
    let root = TestRoot::sample();
    let Some(run) = super::real_clients::inspector(&root) else { return };
    let inspect = |args: &[&str]| {
        let (code, stdout, stderr) = run(args);
        assert_eq!(code, Some(0), "{args:?}: {stdout}{stderr}");
        serde_json::from_str::<Value>(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
    };
    let listed = inspect(&["--method", "tools/list", "--strict", "--format", "json"]);
    assert_eq!(listed.get("schemaFindings"), None, "{listed}");
    let tools = listed["result"]["tools"].as_array().unwrap();
    assert!(tools.iter().all(|t| t["outputSchema"]["type"] == "object"), "{listed}");
    for args in [
        &["--tool-name", "workspace_search", "--tool-arg", "query=connection pool"][..],
        &["--tool-name", "recall", "--tool-arg", "task=the watcher misses new folders"],
        &["--tool-name", "workspace_get_context", "--tool-arg", "workspace=devtools"],
        &["--tool-name", "memory_stats"],
        &["--tool-name", "workspace_list"],
    ] {
        let called = inspect(&[&["--method", "tools/call", "--format", "json"][..], args].concat());
        let result = &called["result"];
        assert_eq!(result["isError"], false, "{args:?}: {called}");
        assert!(result["structuredContent"].is_object(), "{args:?}: {called}");
    }
    // Regression: the Inspector validates an error result's structured content too, and
    // showed a schema violation in place of the error.
    let (_, stdout, _) = run(&[
        "--method",
        "tools/call",
        "--tool-name",
        "workspace_read",
        "--tool-arg",
        "ref_id=nope.md",
        "--format",
        "json",
    ]);
    let called: Value =
        serde_json::from_str(stdout.lines().next().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(called["result"]["isError"], true, "{stdout}");
    assert_eq!(called["result"]["structuredContent"]["error"], "nothing indexed has the refId `nope.md`", "{stdout}");
    let read = inspect(&[
        "--method",
        "resources/read",
        "--uri",
        "tmws://ref/resources/workspaces/devtools/OVERVIEW.md",
        "--format",
        "json",
    ]);
    let text = read["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("refId: resources/workspaces/devtools/OVERVIEW.md\n"), "{text}");
}
