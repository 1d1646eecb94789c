//! `tmws registry build` and `registry list` against real downstream servers (the example
//! `mcp_mock`): introspection, secrets stored as references, tmws skipped, a server that
//! fails to start kept with its error, hand edits surviving rebuilds, and only changed
//! servers introspected again.

use serde_json::{Value, json};

use super::util::TestRoot;

fn mock() -> String {
    let tmws = std::path::PathBuf::from(env!("CARGO_BIN_EXE_tmws"));
    let mock = tmws.parent().unwrap().join("examples").join(format!("mcp_mock{}", std::env::consts::EXE_SUFFIX));
    assert!(mock.exists(), "{} is missing: `cargo test` builds the examples", mock.display());
    mock.display().to_string()
}

fn mcp_json(serena_tools: &str) -> String {
    json!({"mcpServers": {
        "serena": {"command": mock(), "args": ["--name", "serena", "--tools", serena_tools], "env": {"GITHUB_TOKEN": "ghp_do_not_store"}},
        "broken": {"command": mock(), "args": ["--name", "broken", "--fail-start", "no licence key"]},
        "tmws": {"command": "tmws", "args": ["mcp"]}
    }})
    .to_string()
}

fn registry(root: &TestRoot) -> Value {
    serde_json::from_str(&root.read(".tmws/registry/index.json")).unwrap()
}

#[test]
fn build_introspects_keeps_hand_edits_and_redoes_only_changed_servers() {
    let root = TestRoot::new().file(".mcp.json", mcp_json("2"));
    let out = root.run(&["registry", "build", "--yes", "--timeout-ms", "60000"]);
    assert_eq!(out.code, 1, "a server failed: {}{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    assert!(
        lines[0].starts_with("broken: failed: ") && lines[0].ends_with("stderr: mcp_mock broken: no licence key"),
        "{}",
        lines[0]
    );
    assert!(lines[1].starts_with("serena: 6 tools, cold start "), "{}", lines[1]);

    let text = root.read(".tmws/registry/index.json");
    assert!(!text.contains("ghp_do_not_store"), "secrets are stored as references");
    let reg = registry(&root);
    assert_eq!(reg["servers"].as_object().unwrap().keys().collect::<Vec<_>>(), ["broken", "serena"]);
    let serena = &reg["servers"]["serena"];
    assert_eq!(serena["connection"]["env"], json!({"GITHUB_TOKEN": "${GITHUB_TOKEN}"}));
    assert_eq!(
        serena["tools"].as_object().unwrap().keys().collect::<Vec<_>>(),
        ["crash", "echo", "sleep", "stderr", "tool_0", "tool_1"]
    );
    assert_eq!(serena["tools"]["echo"]["description"], "Answers with the text it is given.");
    assert_eq!(
        serena["tools"]["echo"]["input_schema"],
        json!({"type": "object", "properties": {"text": {"type": "string"}}})
    );
    assert!(reg["servers"]["broken"]["metadata"]["error"].as_str().unwrap().ends_with("no licence key"));
    let check = root.run(&["check", ".tmws/registry/index.json"]);
    assert_eq!(check.code, 0, "the registry is valid: {}", check.stdout);

    // People edit it; an unchanged config is not introspected again and keeps the edits.
    let mut edited = reg.clone();
    edited["servers"]["serena"]["description"] = json!("Code navigation");
    edited["servers"]["serena"]["ttl_secs"] = json!(60);
    edited["servers"]["serena"]["tools"]["echo"]["category"] = json!("util");
    root.write(".tmws/registry/index.json", serde_json::to_string_pretty(&edited).unwrap());
    let out = root.run(&["registry", "build"]);
    assert!(out.stdout.contains("serena: unchanged (6 tools)\n"), "{}", out.stdout);
    assert_eq!(registry(&root)["servers"]["serena"]["description"], "Code navigation");

    // A changed config is introspected again, and the edits survive.
    root.write(".mcp.json", mcp_json("3"));
    let out = root.run(&["registry", "build", "--yes"]);
    assert!(out.stdout.contains("serena: 7 tools, cold start "), "{}", out.stdout);
    let serena = &registry(&root)["servers"]["serena"];
    assert_eq!((&serena["description"], &serena["ttl_secs"]), (&json!("Code navigation"), &json!(60)));
    assert_eq!(serena["tools"]["echo"]["category"], "util");
    assert_eq!(serena["tools"].as_object().unwrap().len(), 7);

    // The registry is in the index: tools are found by their words, with no server started,
    // by the same search as MCP's tool_search (several words need no quotes).
    let found = root.run(&["--json", "registry", "search", "generated", "tool", "number", "2"]);
    let v: Value = serde_json::from_str(&found.stdout).unwrap();
    assert_eq!((&v["results"][0]["server"], &v["results"][0]["tool"]), (&json!("serena"), &json!("tool_2")));
    assert_eq!(v["query"], "generated tool number 2");
    let found = root.run(&["--json", "registry", "search", "stderr text"]);
    let v: Value = serde_json::from_str(&found.stdout).unwrap();
    assert_eq!(v["results"][0]["tool"], "stderr", "{}", found.stdout);
    let found = root.run(&["registry", "search", "stderr text", "--format", "table"]);
    assert!(found.stdout.starts_with(" 100%  serena/stderr  -  "), "{}", found.stdout);

    let list = root.run(&["registry", "list"]);
    let rows: Vec<&str> = list.stdout.lines().collect();
    assert_eq!(rows[0], "server  tools  cold start  popularity  approval           last error");
    assert!(
        rows[1].starts_with("broken      0           -        0.00  approved           initialize failed"),
        "{}",
        list.stdout
    );
    assert!(
        rows[2].starts_with("serena      7  ") && rows[2].ends_with(" ms        0.00  approved           -"),
        "{}",
        list.stdout
    );
}

/// Regression: `check` kept a copy of a minified registry's one line for each finding: a
/// registry of 60,000 servers (13.5 MB) grew it to 24 GB. Each finding keeps the start of
/// the line only, and all are placed in one pass.
#[test]
fn check_of_a_minified_registry_takes_memory_independent_of_its_line() {
    let servers: serde_json::Map<String, Value> = (0..20_000)
        .map(|i| {
            let server = json!({"description": "A server with a long description of what it does", "config_hash": "0".repeat(64),
                "connection": {"type": "stdio", "command": "x"}, "persistent": "no", "tools": {}});
            (format!("s{i:05}"), server)
        })
        .collect();
    let text = json!({"version": "1", "servers": servers}).to_string();
    assert!(text.len() > 4 << 20 && !text.contains('\n'));
    let root = TestRoot::new().file(".tmws/registry/index.json", &text);
    let out = std::fs::File::create(root.path().join("findings.json")).unwrap();
    // GNU time measures the child's own peak (not that of the other tests' processes).
    let timed = std::process::Command::new("/usr/bin/time")
        .args(["-f", "%M", env!("CARGO_BIN_EXE_tmws"), "check", ".tmws/registry/index.json", "--format", "json"])
        .current_dir(root.path())
        .stdout(out)
        .output()
        .expect("GNU time (/usr/bin/time) runs");
    assert_eq!(timed.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&timed.stderr);
    let peak_mb = stderr.trim().lines().last().unwrap().parse::<u64>().unwrap() / 1024;
    assert!(peak_mb < 600, "check peaked at {peak_mb} MB");
    let findings: Value = serde_json::from_str(&root.read("findings.json")).unwrap();
    assert_eq!(findings.as_array().unwrap().len(), 20_000);
    let last = &findings[19_999];
    let server = text.find("\"s19999\"").unwrap();
    let column = server + text[server..].find("\"persistent\"").unwrap() + 1;
    assert_eq!((&last["line"], &last["column"]), (&json!(1), &json!(column)));
    assert_eq!(last["message"], "`servers.s19999.persistent` must be true or false, found a string `no`");
}

/// Regression: an entry that starts tmws under another name (`/opt/bin/tmws-dev mcp`, a
/// renamed copy, a link, `cargo run -- mcp` in tmws's own repository) was catalogued as a
/// downstream server: tmws calling itself. tmws knows itself by name (a `tmws…` program
/// given `mcp`, a `cargo run` of a `tmws…` binary or package), and by file: a command
/// that is this binary, or a copy with its bytes, whatever it is called.
#[test]
fn tmws_is_never_catalogued_whatever_its_binary_is_called() {
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_tmws"));
    let root = TestRoot::new().file("Cargo.toml", "[package]\nname = \"tmws\"\nversion = \"0.1.0\"\n");
    std::fs::create_dir_all(root.path().join("bin")).unwrap();
    std::fs::copy(exe, root.path().join("bin/memsrv")).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let link = elsewhere.path().join("memory-server");
    std::os::unix::fs::symlink(exe, &link).unwrap();
    let mcp = json!({"mcpServers": {
        "dev": {"command": "/opt/bin/tmws-dev", "args": ["mcp", "--agent", "claude"]},
        "copy": {"command": "./bin/memsrv", "args": ["mcp"]},
        "link": {"command": link.display().to_string(), "args": ["mcp"]},
        "itself": {"command": exe.display().to_string(), "args": ["--root", ".", "mcp"]},
        "cargo": {"command": "cargo", "args": ["run", "-q", "--", "mcp"]},
        "cargo-bin": {"command": "cargo", "args": ["run", "--bin", "tmws", "--", "mcp"]},
        "cargo-other": {"command": "cargo", "args": ["run", "--bin", "docs-server", "--", "mcp"]},
        "docs": {"command": mock(), "args": ["--name", "docs"]}
    }});
    root.write(".mcp.json", mcp.to_string());
    let list = root.run(&["--json", "registry", "list"]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    let rows: Value = serde_json::from_str(&list.stdout).unwrap();
    let names: Vec<&str> = rows.as_array().unwrap().iter().map(|r| r["server"].as_str().unwrap()).collect();
    assert_eq!(names, ["cargo-other", "docs"], "{}", list.stdout);
    // `cargo run -- mcp` in another package is that package's server.
    root.write("Cargo.toml", "[package]\nname = \"docs-server\"\n");
    let list = root.run(&["--json", "registry", "list"]);
    let rows: Value = serde_json::from_str(&list.stdout).unwrap();
    let names: Vec<&str> = rows.as_array().unwrap().iter().map(|r| r["server"].as_str().unwrap()).collect();
    assert_eq!(names, ["cargo", "cargo-other", "docs"], "{}", list.stdout);
}

/// Regression: `registry build && registry search` answered nothing while another process
/// (a `tmws mcp` or `watch`) kept the index, and did not say `stale`. Now the build asks
/// that process to index the new registry and waits for it, so the search right after finds
/// the tools; and a search while the registry is newer than what the index holds says
/// `stale: true`.
#[test]
fn a_search_right_after_a_build_finds_the_tools_while_another_process_keeps_the_index() {
    let root = TestRoot::new().file(".mcp.json", mcp_json("2"));
    let keeper = super::util::Keeper::start(&root);
    let search = |words: &str| -> Value {
        let out = root.run(&["--json", "registry", "search", words]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        serde_json::from_str(&out.stdout).unwrap()
    };
    let tools = |v: &Value| -> Vec<String> {
        v["results"].as_array().unwrap().iter().map(|r| r["tool"].as_str().unwrap().to_owned()).collect()
    };

    let out = root.run(&["registry", "build", "--yes", "--timeout-ms", "60000"]);
    assert!(out.stdout.contains("serena: 6 tools"), "{}{}", out.stdout, out.stderr);
    let found = search("stderr text");
    assert_eq!(tools(&found).first().map(String::as_str), Some("stderr"), "{found}");
    assert_eq!(found.get("stale"), None, "{found}");

    // The keeper stopped (it holds the index but applies nothing): a registry edited since
    // is not what the index holds, and the answer says so.
    keeper.signal("-STOP");
    let mut edited = registry(&root);
    edited["servers"]["serena"]["tools"]["echo"]["description"] = json!("Repeats a zanzibar back.");
    root.write(".tmws/registry/index.json", serde_json::to_string_pretty(&edited).unwrap());
    let behind = search("zanzibar");
    assert_eq!(behind["stale"], true, "{behind}");
    assert!(tools(&behind).is_empty(), "{behind}");
    keeper.signal("-CONT");
    let caught_up = super::util::eventually("the keeper indexes the edit", || {
        let v = search("zanzibar");
        (v.get("stale").is_none() && !tools(&v).is_empty()).then_some(v)
    });
    assert_eq!(tools(&caught_up), ["echo"]);
}
