//! `tmws mcp` driven by rmcp's client over a child process: the tools as an agent sees
//! them, exact answers, errors as tool results, a file written during the session found
//! without a restart, the memory tools of one session, and a clean exit when stdin closes.
//! (That MCP answers what the engine, the CLI and HTTP answer is `surfaces.rs`.)

use serde_json::{Value, json};

use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::RunningService;

use super::clients::{Answer, Mcp, Protocol, Serve, answer_of, client_named, mcp_over_http};
use super::util::eventually;
use super::util::{TestRoot, mcp_tools, yaml};

#[test]
fn tools_are_listed_with_titles_annotations_and_plain_schemas() {
    let root = TestRoot::sample();
    let mcp = Mcp::start(root.path());
    let info = mcp.client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "tmws");
    let instructions = info.instructions.as_deref().unwrap_or("");
    assert!(instructions.contains("workspace_get_context"), "{instructions}");
    // Regression: an agent learnt the workspaces' names only by failing a call.
    assert!(
        instructions.ends_with(" Workspaces: devtools, nihongo (workspace_list gives their domains and repositories)."),
        "{instructions}"
    );
    let tools = mcp.tools();
    mcp.stop();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(names, mcp_tools());
    let tool = |name: &str| tools.iter().find(|t| t.name == name).unwrap();
    let hints = |name: &str| {
        let a = tool(name).annotations.clone().unwrap();
        (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)
    };
    assert_eq!(hints("workspace_search"), (Some(true), Some(false), Some(true), Some(false)));
    assert_eq!(hints("memory_clear"), (Some(false), Some(true), Some(true), Some(false)));
    assert_eq!(hints("memory_add"), (Some(false), Some(false), Some(true), Some(false)));
    assert_eq!(hints("tool_call"), (Some(false), Some(false), Some(false), Some(true)));
    assert_eq!(tool("memory_get").title.as_deref(), Some("Read a memory"));
    let schema = Value::Object((*tool("workspace_get_context").input_schema).clone());
    assert_eq!(schema["required"], json!(["workspace"]));
    assert_eq!(schema["additionalProperties"], json!(false));
    for p in [
        "workspace",
        "domain",
        "repository",
        "topics",
        "include_defaults",
        "filter_status",
        "filter_tags",
        "filter_category",
        "format",
        "max_chars",
    ] {
        let prop = &schema["properties"][p];
        assert!(prop["type"].is_string(), "{p}: one plain type, not {}", prop["type"]);
        assert!(prop["description"].as_str().is_some_and(|d| !d.is_empty()), "{p}");
    }
    assert!(schema["properties"]["workspace"]["description"].as_str().unwrap().contains("resources/workspaces"));
    assert_eq!(schema["properties"]["include_defaults"]["default"], true);
    assert_eq!(schema["properties"]["max_chars"]["default"], 24_000);
    // No parameter an agent could not use: memory_delete has only an id and a format.
    let delete = Value::Object((*tool("memory_delete").input_schema).clone());
    let params: Vec<&String> = delete["properties"].as_object().unwrap().keys().collect();
    assert_eq!(params, ["id", "format"]);
}

#[test]
fn a_japanese_workspace_answers_exactly_in_json() {
    let root = TestRoot::sample();
    let mcp = Mcp::start(root.path());
    let a = mcp.call_fresh(
        "workspace_get_context",
        json!({"workspace": "nihongo", "include_defaults": false, "topics": ["lessons"], "format": "json"}),
    );
    let v: Value = serde_json::from_str(a.text()).unwrap();
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
    let a = mcp.call_fresh("workspace_search", json!({"query": "接続", "kinds": ["entry"], "format": "json"}));
    let v: Value = serde_json::from_str(a.text()).unwrap();
    assert_eq!(v["results"][0]["refId"], "resources/workspaces/nihongo/mobile/_lessons/260915-connection-pool.md");
    mcp.stop();
}

#[test]
fn errors_are_tool_results_with_a_category_and_the_server_keeps_serving() {
    let root = TestRoot::sample();
    let mcp = Mcp::start(root.path());
    let err = |category: &str, message: &str| Answer::Err(category.into(), message.into());
    assert_eq!(
        mcp.call("workspace_get_context", json!({"workspace": "../etc"})),
        err("usage", "`../etc` is not a valid scope name: use only letters, digits, `.`, `_` and `-`")
    );
    assert_eq!(
        mcp.call_fresh("workspace_get_context", json!({"workspace": "nope"})),
        err("not_found", "unknown workspace `nope`; known: devtools, nihongo")
    );
    assert_eq!(
        mcp.call("workspace_search", json!({"query": "  "})),
        err("usage", "empty query: give some words to search for")
    );
    assert_eq!(
        mcp.call("memory_search", json!({"query": "x", "includeContent": true})),
        err(
            "usage",
            "unknown parameter `includeContent`, expected one of `query`, `namespace`, `tags`, `kind`, `branch`, \
`limit`, `min_score`, `include_content`, `format`, `max_chars`"
        )
    );
    // A number sent as text (as some clients do) is read as a number.
    let a = mcp.call_fresh("workspace_search", json!({"query": "index", "limit": "1", "format": "json"}));
    let v: Value = serde_json::from_str(a.text()).unwrap();
    assert_eq!(v["results"].as_array().unwrap().len(), 1);
    // A tool that does not exist is a protocol error, as MCP says.
    let unknown = mcp.rt.block_on(mcp.client.call_tool(rmcp::model::CallToolRequestParams::new("no_such_tool")));
    let e = unknown.unwrap_err().to_string();
    assert!(e.contains("no tool `no_such_tool`"), "{e}");
    // The message and hint are the text too, for clients that show only text.
    let r = mcp.result("memory_get", json!({"id": "m_ffffffffffff"}));
    assert_eq!((r.is_error, super::clients::result_text(&r).as_str()), (Some(true), "no memory `m_ffffffffffff`"));
    mcp.stop();
}

#[test]
fn a_file_written_during_the_session_is_in_the_next_answer() {
    let root = TestRoot::sample();
    let mcp = Mcp::start(root.path());
    let lessons = json!({"workspace": "nihongo", "include_defaults": false, "topics": ["lessons"], "format": "json"});
    mcp.call_fresh("workspace_get_context", lessons.clone());
    root.write(
        "resources/workspaces/nihongo/_lessons/261122-fresh.md",
        "---\nname: 新しい教訓\ndescription: 会話の途中で追加した。\ncreated: 2026-11-22\n---\n本文\n",
    );
    eventually("the new lesson in the context", || {
        let v: Value = serde_json::from_str(mcp.call("workspace_get_context", lessons.clone()).text()).unwrap();
        let first = &v["lessons"]["entries"][0]["_meta"]["document_path"];
        if first == "resources/workspaces/nihongo/_lessons/261122-fresh.md" { Ok(()) } else { Err(v) }
    });
    mcp.stop();
}

#[test]
fn the_first_search_on_a_fresh_root_waits_for_the_first_sync() {
    // Enough files that the first sync takes far longer than the 200 ms a query waits for
    // a sync to catch up (an answer before it ends would be empty), and few enough that a
    // busy machine still syncs them within the 30 s the first query waits for the first
    // sync: 1,500 take about a second in a debug build.
    let root = TestRoot::new();
    let body = "Words that fill the body of a note so that indexing it takes a while. ".repeat(30);
    for i in 0..1500 {
        root.write(
            &format!("resources/workspaces/big/_notes/n{i:04}.md"),
            format!("---\nname: Note {i}\ndescription: Filler note number {i}.\n---\n{body}{i}\n"),
        );
    }
    root.write(
        "resources/workspaces/big/_notes/zz-target.md",
        "---\nname: Quokka migration\ndescription: How the quokka service moved.\n---\nBody.\n",
    );
    let mcp = Mcp::start(root.path());
    let v: Value =
        serde_json::from_str(mcp.call("workspace_search", json!({"query": "quokka", "format": "json"})).text())
            .unwrap();
    assert_eq!(
        (v["results"][0]["refId"].as_str(), v.get("stale")),
        (Some("resources/workspaces/big/_notes/zz-target.md"), None),
        "the first answer must come after the first sync: {v}"
    );
    mcp.stop();
}

/// An agent writes knowledge as a person would with `tmws new`: an overview, a decision, a
/// lesson and a plan, found by the next search; an invalid entry and a change from a
/// stale version are refused and write nothing.
#[test]
fn an_agent_writes_valid_entries_and_is_refused_invalid_or_stale_ones() {
    let root = TestRoot::new();
    let mcp = Mcp::start(root.path());
    let write = |args: Value| -> Value {
        let mut args = args;
        args["format"] = json!("json");
        serde_json::from_str(mcp.call("entry_write", args).text()).unwrap()
    };
    let overview = write(json!({"topic": "overview", "workspace": "shop", "name": "Shop", "description": "The shop."}));
    assert_eq!(
        overview,
        json!({"refId": "resources/workspaces/shop/OVERVIEW.md", "action": "created", "hash": overview["hash"]})
    );
    let date = chrono::Utc::now().date_naive();
    let (day, ymd) = (date.format("%y%m%d").to_string(), date.format("%Y-%m-%d").to_string());
    for (topic, name, fields, path) in [
        (
            "decisions",
            "Card payments via Stripe",
            json!({"tags": ["payments"]}),
            format!("_decisions/{day}-card-payments-via-stripe.md"),
        ),
        ("lessons", "Idempotency keys", json!({"category": "payments"}), format!("_lessons/{day}-idempotency-keys.md")),
        ("plans", "Refunds", json!({"status": "in_progress"}), format!("_plans/{day}-refunds.md")),
    ] {
        let v = write(json!({"topic": topic, "workspace": "shop", "name": name, "description": "Said in one line.",
            "fields": fields, "body": "Why and how.\n"}));
        assert_eq!(v["refId"], format!("resources/workspaces/shop/{path}"), "{v}");
        assert_eq!(v["action"], "created");
    }
    let plan = root.read(&format!("resources/workspaces/shop/_plans/{day}-refunds.md"));
    // The client session that wrote it, by its id.
    let session = plan.lines().find_map(|l| l.strip_prefix("  session: ")).unwrap_or_default().to_owned();
    assert!(super::util::is_session_id(&json!(session)), "{plan}");
    assert_eq!(
        plan,
        format!(
            "---\nname: Refunds\ndescription: Said in one line.\nstatus: in_progress\ncreated: {ymd}\nauthor:\n  \
surface: mcp\n  client: test-agent\n  session: {session}\n---\n\nWhy and how.\n"
        )
    );
    let check = root.run(&["check"]);
    assert_eq!((check.code, check.stdout.as_str()), (0, ""), "{}", check.stderr);
    let found: Value =
        serde_json::from_str(mcp.call_fresh("workspace_search", json!({"query": "stripe", "format": "json"})).text())
            .unwrap();
    assert_eq!(
        found["results"][0]["refId"],
        format!("resources/workspaces/shop/_decisions/{day}-card-payments-via-stripe.md")
    );

    let before = root.snapshot();
    let invalid = mcp.result(
        "entry_write",
        json!({"topic": "plans", "workspace": "shop", "name": "Chargebacks", "description": "d", "fields": {"status": "someday"}}),
    );
    assert_eq!(invalid.is_error, Some(true));
    let text = super::clients::result_text(&invalid);
    assert!(
        text.starts_with("the entry is not valid, nothing was written: [invalid-enum] `status` must be one of"),
        "{text}"
    );

    // A change names the hash workspace_read gave; once the file changed, that hash is stale.
    let lesson = format!("resources/workspaces/shop/_lessons/{day}-idempotency-keys.md");
    let read: Value =
        serde_json::from_str(mcp.call("workspace_read", json!({"ref_id": lesson, "format": "json"})).text()).unwrap();
    let hash = read["hash"].as_str().unwrap().to_owned();
    let change = json!({"topic": "lessons", "workspace": "shop", "name": "Idempotency keys", "description": "Changed.",
        "ref_id": lesson, "expected_hash": hash});
    root.write(&lesson, root.read(&lesson).replace("Why and how.", "Edited by a person."));
    // The server's journal of the session changes with every call; nothing else may.
    let files = || -> Vec<(String, Vec<u8>)> {
        root.snapshot().into_iter().filter(|(path, _)| !path.starts_with(".tmws/cache/sessions/")).collect()
    };
    let before_change = files();
    let stale = mcp.result("entry_write", change.clone());
    assert_eq!(stale.is_error, Some(true));
    assert!(super::clients::result_text(&stale).contains("changed since it was read"));
    assert_eq!(files(), before_change, "a stale change writes nothing");
    assert_ne!(before, before_change);
    let read: Value =
        serde_json::from_str(mcp.call("workspace_read", json!({"ref_id": lesson, "format": "json"})).text()).unwrap();
    let mut change = change;
    change["expected_hash"] = read["hash"].clone();
    let updated = write(change);
    assert_eq!(updated["action"], "updated");
    let text = root.read(&lesson);
    assert!(text.contains("description: Changed.\n") && text.ends_with("\nEdited by a person.\n"), "{text}");
    mcp.stop();
}

/// Regression: `tmws index` (and `--rebuild`) beside a running `tmws mcp` exited 0 having
/// done nothing. Now it asks the server, which keeps the index, and reports its sync.
#[test]
fn tmws_index_beside_a_running_server_has_the_server_sync_and_reports_it() {
    let root = TestRoot::sample();
    let mcp = Mcp::start(root.path());
    mcp.call_fresh("workspace_search", json!({"query": "pool"}));
    let files = root.run(&["--json", "index"]);
    let v: Value = serde_json::from_str(&files.stdout).unwrap();
    assert_eq!((files.code, &v["reader_only"], &v["rebuilt"]), (0, &json!(false), &json!(false)), "{}", files.stderr);
    let pid = v["by_pid"].as_u64().expect("synced by the server");
    assert_ne!(pid, u64::from(std::process::id()));
    let out = root.run(&["index", "--rebuild"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let total = v["files"].as_u64().unwrap();
    let want = format!("indexed {total} new, 0 changed, 0 removed in ");
    assert!(out.stdout.starts_with(&want), "{}", out.stdout);
    assert!(
        out.stdout.ends_with(&format!(" ms (rebuilt) by the tmws process {pid} that keeps the index\n")),
        "{}",
        out.stdout
    );
    // The server answers from the rebuilt index.
    let found: Value = serde_json::from_str(
        mcp.call_fresh("workspace_search", json!({"query": "connection pool", "format": "json"})).text(),
    )
    .unwrap();
    assert_eq!(found["results"][0]["refId"], "resources/workspaces/devtools/common/_features/260601-lazy-pool.md");
    mcp.stop();
}

#[test]
fn one_session_adds_finds_counts_and_clears_memories() {
    let root = TestRoot::sample();
    let mcp = Mcp::start(root.path());
    let added = mcp.call(
        "memory_add",
        json!({"content": "The staging database lives on port 5433.", "namespace": "long-term", "tags": ["staging"]}),
    );
    let added = yaml(added.text()).unwrap();
    let id = added["id"].as_str().unwrap().to_owned();
    // Found by the next search, or that search says it is stale (never a silent miss).
    let v = eventually("the new memory found by a search", || {
        let a = mcp.call("memory_search", json!({"query": "staging database port", "format": "json"}));
        let v: Value = serde_json::from_str(a.text()).unwrap();
        if v["results"][0]["id"] == id.as_str() {
            return Ok(v);
        }
        assert_eq!(v["stale"], true, "a miss must say stale: {v}");
        Err(v)
    });
    assert_eq!(v["results"][0]["tags"], json!(["staging"]));
    assert_eq!(
        mcp.call("memory_add", json!({"content": " "})),
        Answer::Err("usage".into(), "empty content: give the text to remember (or a problem)".into())
    );
    // The defaults asked for again within the session are counted.
    let mut with_defaults = 0;
    for _ in 0..2 {
        // Every call counts, a stale one (retried) too.
        loop {
            with_defaults += 1;
            if !mcp.call("workspace_get_context", json!({"workspace": "nihongo"})).stale() {
                break;
            }
        }
    }
    mcp.call_fresh("workspace_get_context", json!({"workspace": "nihongo", "include_defaults": false}));
    let stats = yaml(mcp.call("memory_stats", json!({})).text()).unwrap();
    assert_eq!(stats["defaults_redundant"].as_i64(), Some(with_defaults - 1));
    assert_eq!(stats["by_namespace"]["long-term"].as_i64(), Some(4));
    assert!(matches!(mcp.call("memory_delete", json!({"id": id})), Answer::Ok(_)));
    // Maintenance: cleanup compacts (the add and its delete go), clear needs confirm.
    let done = yaml(mcp.call("memory_cleanup", json!({})).text()).unwrap();
    assert_eq!(done["removed_expired"].as_i64(), Some(0));
    assert!(done["compacted_bytes"].as_i64().unwrap() > 0);
    // The sample's three long-term memories were written in October.
    let rec = yaml(mcp.call("session_record", json!({"since": "2026-10-01", "agent": "claude"})).text()).unwrap();
    assert_eq!((rec["recorded"].as_bool(), rec["memories"].as_i64()), (Some(true), Some(3)));
    assert_eq!(
        mcp.call("memory_clear", json!({"namespace": "long-term"})),
        Answer::Err(
            "usage".into(),
            "refusing to clear long-term without confirmation: pass --yes (CLI) or confirm: true (MCP)".into()
        )
    );
    let cleared = yaml(mcp.call("memory_clear", json!({"namespace": "long-term", "confirm": true})).text()).unwrap();
    assert_eq!(cleared["cleared"].as_i64(), Some(4));
    mcp.stop();
}

#[test]
fn the_server_exits_cleanly_when_stdin_closes() {
    let root = TestRoot::sample();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tmws"))
        .env("TMWS_CONFIG_HOME", super::util::user_config())
        .arg("--root")
        .arg(root.path())
        .arg("mcp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdin.take());
    let status = eventually("the exit of tmws mcp once its stdin closed", || child.try_wait().unwrap());
    let out = child.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty(), "nothing but protocol on stdout");
}

#[test]
fn an_agent_verifies_another_as_the_client_it_is_and_never_itself() {
    let root = TestRoot::new();
    let mcp = Mcp::start(root.path());
    // The verifier is the name the client gave in `initialize`.
    let me = super::clients::CLIENT;
    let args = json!({"agent": "writer-bot", "success": true, "evidence": "its tests pass", "format": "json"});
    let v: Value = serde_json::from_str(mcp.call("trust_verify", args).text()).unwrap();
    assert_eq!(
        (&v["agent"], &v["verifier"], &v["successes"], &v["failures"]),
        (&json!("writer-bot"), &json!(me), &json!(1), &json!(0))
    );
    assert_eq!((v["score"].as_f64().unwrap() * 100.0).round(), 55.0);
    // Itself: refused. A verifier given as a parameter: refused as unknown.
    let own = json!({"agent": me, "success": true, "evidence": "I checked myself"});
    assert_eq!(
        mcp.call("trust_verify", own),
        Answer::Err(
            "usage".into(),
            format!(
                "`{me}` cannot verify itself: a verifier must be another agent (names compare case-folded, in \
Unicode NFKC, without invisible characters)"
            )
        )
    );
    let forged = json!({"agent": "writer-bot", "success": true, "evidence": "e", "verifier": "someone"});
    assert!(matches!(mcp.call("trust_verify", forged), Answer::Err(c, m) if c == "usage" && m.contains("verifier")));
    let shown: Value = serde_json::from_str(mcp.call("trust_show", json!({"format": "json"})).text()).unwrap();
    let agents: Vec<&str> = shown["agents"].as_array().unwrap().iter().map(|a| a["agent"].as_str().unwrap()).collect();
    assert_eq!(agents, ["writer-bot"]);
    mcp.stop();
    // The log is the one the CLI reads.
    let line: Value = serde_json::from_str(root.read(".tmws/trust.jsonl").lines().next().unwrap()).unwrap();
    assert_eq!((&line["agent"], &line["verifier"], &line["success"]), (&json!("writer-bot"), &json!(me), &json!(true)));
}

/// The session entries of the long-term log.
fn session_records(root: &TestRoot) -> Vec<Value> {
    let log = std::fs::read_to_string(root.path().join(".tmws/memory/long-term.jsonl")).unwrap_or_default();
    log.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|v| v["kind"] == "session").collect()
}

/// The `add` line of memory `id` (in any namespace).
fn added(root: &TestRoot, id: &Value) -> Value {
    let dir = root.path().join(".tmws/memory");
    std::fs::read_dir(dir)
        .unwrap()
        .flat_map(|f| {
            std::fs::read_to_string(f.unwrap().path())
                .unwrap_or_default()
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
        .find(|v| v["op"] == "add" && v["id"] == *id)
        .unwrap_or_else(|| panic!("no memory {id}"))
}

/// An MCP client of either surface, with rmcp's client.
enum Client {
    Stdio(Mcp),
    Http(Serve, RunningService<RoleClient, ClientConfig>),
}

impl Client {
    fn start(root: &TestRoot, surface: &str, protocol: Protocol, client: ClientConfig) -> Client {
        match surface {
            "stdio" => Client::Stdio(Mcp::start_as(root.path(), &[], protocol, client)),
            _ => {
                let serve = Serve::start(root.path(), None);
                let service = mcp_over_http(&serve.rt, &serve.url, &serve.token, protocol, client);
                Client::Http(serve, service)
            }
        }
    }

    fn call(&self, tool: &str, args: Value) -> Answer {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args.as_object().unwrap().clone());
        match self {
            Client::Stdio(mcp) => mcp.call(tool, args),
            Client::Http(serve, service) => answer_of(&serve.rt.block_on(service.call_tool(params)).unwrap()),
        }
    }

    fn call_fresh(&self, tool: &str, args: Value) -> Answer {
        eventually(&format!("a fresh answer of {tool}"), || {
            let a = self.call(tool, args.clone());
            if a.stale() { Err(a) } else { Ok(a) }
        })
    }

    fn json(&self, tool: &str, args: Value) -> Value {
        let a = self.call(tool, args);
        serde_json::from_str(a.text()).unwrap_or_else(|e| panic!("{tool}: {e}: {a:?}"))
    }

    /// The client leaves: stdin closes, or the client goes and the server stops.
    fn stop(self) {
        match self {
            Client::Stdio(mcp) => mcp.stop(),
            Client::Http(serve, service) => {
                let _ = serve.rt.block_on(service.cancel());
                let (code, stderr) = serve.terminate();
                assert_eq!(code, Some(0), "{stderr}");
            }
        }
    }
}

/// Regression: on the stateless protocol, over stdio, trust_verify refused ("this client
/// gave none in initialize"); over `/mcp` the verifier was `rmcp` and each request was a
/// session of its own. Now the client's name, its session (and the context defaults sent
/// in it) and its record are the same on both generations and both surfaces.
#[test]
fn identity_sessions_and_defaults_are_the_same_on_both_protocols_and_surfaces() {
    for protocol in Protocol::BOTH {
        for surface in ["stdio", "http"] {
            let case = format!("{protocol:?} over {surface}");
            let root = TestRoot::sample();
            let client = Client::start(&root, surface, protocol, client_named("claude-code"));
            let context = json!({"workspace": "devtools", "max_chars": 400});
            client.call_fresh("workspace_get_context", context.clone());
            client.call_fresh("workspace_get_context", context);
            let memory = client.json("memory_add", json!({"content": format!("Noted {case}."), "format": "json"}));
            let line = added(&root, &memory["id"]);
            assert_eq!(
                (&line["agent"], &line["author"]["client"]),
                (&json!("claude-code"), &json!("claude-code")),
                "{case}"
            );
            let verified = client.json(
                "trust_verify",
                json!({"agent": "writer-bot", "success": true, "evidence": "tests pass", "format": "json"}),
            );
            assert_eq!(
                (&verified["verifier"], &verified["verifier_self_reported"]),
                (&json!("claude-code"), &json!(true)),
                "{case}"
            );
            let stats = client.json("memory_stats", json!({"format": "json"}));
            assert_eq!(stats["defaults_redundant"], 1, "{case}: the second call of one session had them: {stats}");
            client.stop();
            let records = eventually(&format!("the session's record, {case}"), || {
                Some(session_records(&root)).filter(|r| !r.is_empty())
            });
            assert_eq!(records.len(), 1, "{case}: {records:?}");
            let s = &records[0]["session"];
            assert_eq!(
                (&s["agents"], &s["memories"], &s["verifications"][0]["agent"]),
                (&json!(["claude-code"]), &json!([memory["id"]]), &json!("writer-bot")),
                "{case}: {s}"
            );
        }
    }
}

/// Regression: a request whose client said nothing was taken for a client called `rmcp`,
/// the MCP library's own name, which then verified agents.
#[test]
fn the_mcp_librarys_name_is_no_ones_on_either_protocol() {
    for protocol in Protocol::BOTH {
        for surface in ["stdio", "http"] {
            let root = TestRoot::sample();
            let client = Client::start(&root, surface, protocol, ClientConfig::default());
            let refused = client.call("trust_verify", json!({"agent": "writer-bot", "success": true, "evidence": "e"}));
            assert_eq!(
                refused,
                Answer::Err(
                    "usage".into(),
                    "trust_verify needs the verifier's name: this client gave none (clientInfo.name), and the server \
has no --agent and its token no agent"
                        .into()
                ),
                "{protocol:?} over {surface}"
            );
            let memory = client.json("memory_add", json!({"content": "Nameless.", "format": "json"}));
            let line = added(&root, &memory["id"]);
            assert_eq!((&line["agent"], line["author"].get("client")), (&json!("mcp"), None), "{line}");
            client.stop();
        }
    }
}

/// The server's `--agent` is who its clients are, whatever they call themselves.
#[test]
fn the_servers_agent_outranks_the_clients_name_on_both_protocols() {
    for protocol in Protocol::BOTH {
        let root = TestRoot::sample();
        let mcp = Mcp::start_as(root.path(), &["--agent", "Reviewer"], protocol, client_named("claude-code"));
        let args = json!({"agent": "writer-bot", "success": true, "evidence": "e", "format": "json"});
        let v: Value = serde_json::from_str(mcp.call("trust_verify", args).text()).unwrap();
        assert_eq!((&v["verifier"], v.get("verifier_self_reported")), (&json!("reviewer"), None), "{protocol:?}");
        let shown: Value = serde_json::from_str(mcp.call("trust_show", json!({"format": "json"})).text()).unwrap();
        let writer = shown["agents"].as_array().unwrap().iter().find(|a| a["agent"] == "writer-bot").unwrap();
        assert_eq!((&writer["successes"], writer.get("self_reported")), (&json!(1), None), "{shown}");
        mcp.stop();
        let line: Value = serde_json::from_str(root.read(".tmws/trust.jsonl").lines().last().unwrap()).unwrap();
        assert_eq!((&line["verifier"], line.get("self_reported")), (&json!("reviewer"), None));
    }
}

/// Regression: Claude Code stops its servers with SIGINT, and `tmws mcp` died without
/// recording the session. Each signal now records it once, and the exit code says which.
#[cfg(unix)]
#[test]
fn sigint_and_sigterm_record_the_session_once_and_exit_130_or_143() {
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        for protocol in Protocol::BOTH {
            let root = TestRoot::sample();
            let mcp = Mcp::start_as(root.path(), &[], protocol, client_named("claude-code"));
            mcp.call("memory_add", json!({"content": format!("Before SIG{signal}.")}));
            assert_eq!(mcp.signal(signal), Some(code), "SIG{signal}, {protocol:?}");
            let records = session_records(&root);
            assert_eq!(records.len(), 1, "SIG{signal}, {protocol:?}: {records:?}");
            assert_eq!(records[0]["agent"], "claude-code");
        }
    }
}

/// A handle minted by the server keeps a client that names itself nowhere in one session;
/// a `session` argument that is not one of its handles is refused.
#[test]
fn a_session_argument_must_be_a_handle_the_server_makes() {
    let root = TestRoot::sample();
    let mcp = Mcp::start(root.path());
    let e = mcp.rt.block_on(
        mcp.client.call_tool(
            CallToolRequestParams::new("workspace_list")
                .with_arguments(json!({"session": "mine"}).as_object().unwrap().clone()),
        ),
    );
    assert!(e.unwrap_err().to_string().contains("`session` is a handle this server gave"));
    let handle = format!("s_{}", "0123456789abcdef".repeat(2));
    assert!(matches!(mcp.call("workspace_list", json!({"session": handle})), Answer::Ok(_)));
    mcp.stop();
}

/// Regression: a session record, made of its session's queries, scored 100 above the
/// decision that answers them (73). Here, without the fix, `tantivy index session` put
/// the record at 100 and the decision at 58. Session records are left out of searches
/// unless asked for by their kind.
#[test]
fn session_records_never_outrank_the_decision_that_answers_the_query() {
    let root = TestRoot::sample();
    let mcp = Mcp::start(root.path());
    for q in ["tantivy derived index", "derived index tantivy rebuilt", "tantivy index"] {
        mcp.call_fresh("workspace_search", json!({"query": q}));
        mcp.call_fresh("memory_search", json!({"query": q}));
    }
    mcp.call("memory_add", json!({"content": "Lunch is at noon."}));
    mcp.stop();
    let records = session_records(&root);
    assert_eq!(records.len(), 1, "{records:?}");
    let record = &records[0]["id"];
    let json = |args: &[&str]| -> Value {
        let out = root.run(args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
    };
    let ids = |v: &Value| -> Vec<Value> {
        v["results"].as_array().unwrap().iter().map(|r| r.get("id").unwrap_or(&r["refId"]).clone()).collect()
    };
    for words in [&["tantivy", "index", "session"][..], &["tantivy", "derived", "index"]] {
        let found = json(&[&["--json", "search"][..], words].concat());
        let adr = "resources/workspaces/devtools/common/_decisions/260501-tantivy-index.md";
        assert_eq!(found["results"][0]["refId"], adr, "{found}");
        assert!(!ids(&found).contains(record), "{found}");
    }
    let memories = json(&["--json", "memory", "search", "tantivy", "derived", "index"]);
    assert!(!ids(&memories).contains(record), "{memories}");
    let asked = json(&["--json", "memory", "search", "tantivy", "derived", "index", "--kind", "session"]);
    assert_eq!(ids(&asked), std::slice::from_ref(record), "{asked}");
}
