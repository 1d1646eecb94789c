//! Secrets never reach disk, an answer, an error or a log (docs/trust-boundary.md#secrets): planted
//! in every field of every write path, through the CLI, MCP and HTTP, then looked for in the files
//! and the answers; and `tmws check` finds the ones written by hand, at their line and column,
//! without printing them.

use serde_json::{Value, json};

use super::clients::{Mcp, Serve};
use super::memory_git::{git, repo};
use super::util::{Output, TestRoot, diagnostics};

/// Realistic fakes, one per field of a memory: (field, secret, rule that names it).
fn planted() -> Vec<(&'static str, String, &'static str)> {
    vec![
        ("content", format!("ghp_{}", "Zq3Xv9Lm2Np8Rt5Wy7Bc4Df6Gh1Jk0Ab2Cd4"), "github-pat"),
        ("summary", format!("sk_live_{}", "51HxQ2kLmN8pQr4sT6vW8yZ0a"), "stripe-access-token"),
        ("key", format!("AKIA{}", "Q3EGRT5LMNO7XY2W"), "aws-access-token"),
        ("kind", format!("glpat-{}", "Xy7bQ2mN9pL4kR8sT1vW"), "gitlab-token"),
        ("source", format!("xoxb-{}", "2048-4096-Qm3nR7sT1vW9yZ2a"), "slack-token"),
        ("agent", format!("sk-ant-api03-{}", "Zx9Qm2Lp7Rt4Wv8Yb3Nc6Df1Gh5Jk0"), "anthropic-api-key"),
        ("tags", format!("npm_{}", "Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5"), "npm-access-token"),
    ]
}

/// The secrets of `secrets` that `text` holds.
fn leaked<'s>(text: &str, secrets: &'s [String]) -> Vec<&'s str> {
    secrets.iter().filter(|s| text.contains(s.as_str())).map(String::as_str).collect()
}

/// Every file under the root as one text.
fn all_files(root: &TestRoot) -> String {
    root.snapshot()
        .into_iter()
        .filter(|(rel, _)| !rel.starts_with(".tmws/cache/index") && !rel.starts_with(".git/"))
        .map(|(rel, bytes)| format!("== {rel}\n{}\n", String::from_utf8_lossy(&bytes)))
        .collect()
}

/// `memory_add` arguments with a planted secret in every field, the content told apart by
/// `surface`.
fn add_args(surface: &str) -> Value {
    let p = planted();
    let get = |field: &str| p.iter().find(|(f, ..)| *f == field).map(|(_, s, _)| s.clone()).unwrap();
    json!({
        "content": format!("{surface}: deploys read {} from the vault", get("content")),
        "namespace": "long-term",
        "summary": format!("{surface} deploy key {}", get("summary")),
        "key": format!("deploy/{}", get("key")),
        "kind": get("kind"),
        "source": get("source"),
        "agent": get("agent"),
        "tags": [get("tags"), "ops"],
        "format": "json",
    })
}

fn json_of(out: &Output) -> Value {
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// The one entry added through `surface`, as the log holds it.
fn entry_of(root: &TestRoot, surface: &str) -> Value {
    root.read(".tmws/memory/long-term.jsonl")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["content"].as_str().is_some_and(|c| c.starts_with(&format!("{surface}:"))))
        .unwrap_or_else(|| panic!("no entry from {surface}"))
}

/// Each field holds its mark where the secret was. Over MCP and HTTP the `agent` given is
/// not used: the entry is written as the session's identity (`who`).
fn assert_marked(entry: &Value, surface: &str, who: Option<&str>) {
    let mut marks: Vec<(&str, String)> =
        planted().iter().map(|(f, _, rule)| (*f, format!("[REDACTED:{rule}]"))).collect();
    if let Some(who) = who {
        assert_eq!(entry["agent"], who, "{surface}");
        marks.retain(|(f, _)| *f != "agent");
    }
    let field = |f: &str| match f {
        "tags" => entry["tags"][0].as_str().unwrap_or_default().to_owned(),
        other => entry[other].as_str().unwrap_or_default().to_owned(),
    };
    for (f, mark) in marks {
        assert!(field(f).contains(&mark), "{surface}: {f} = {:?}, want {mark}", field(f));
    }
}

#[test]
fn every_field_of_a_memory_is_redacted_through_every_surface() {
    let root = TestRoot::new();
    let secrets: Vec<String> = planted().into_iter().map(|(_, s, _)| s).collect();

    // CLI: every field as a flag.
    let args = add_args("cli");
    let s = |k: &str| args[k].as_str().unwrap().to_owned();
    let cli = json_of(&root.run(&[
        "--json",
        "memory",
        "add",
        &s("content"),
        "-n",
        "long-term",
        "--summary",
        &s("summary"),
        "--key",
        &s("key"),
        "--kind",
        &s("kind"),
        "--source",
        &s("source"),
        "--agent",
        &s("agent"),
        "--tag",
        args["tags"][0].as_str().unwrap(),
        "--tag",
        "ops",
    ]));
    assert_eq!(cli["redacted"], 7, "{cli}");
    assert!(leaked(&cli.to_string(), &secrets).is_empty());
    assert_marked(&entry_of(&root, "cli"), "cli", None);

    // MCP: rmcp's client over `tmws mcp`.
    let mcp = Mcp::start(root.path());
    let answer = mcp.call("memory_add", add_args("mcp"));
    let text = answer.text().to_owned();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["redacted"], 6, "{text}");
    assert!(leaked(&text, &secrets).is_empty());
    assert_marked(&entry_of(&root, "mcp"), "mcp", Some(super::clients::CLIENT));
    let found = mcp.call_fresh("memory_search", json!({"query": "deploys vault", "include_content": true}));
    assert!(found.text().contains("[REDACTED:github-pat]"), "{}", found.text());
    assert!(leaked(found.text(), &secrets).is_empty());
    mcp.stop();

    // HTTP: POST /memory against `tmws serve`.
    let serve = Serve::start(root.path(), None);
    let r = serve.post("/memory?format=json", &add_args("http").to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["redacted"], 6, "{}", r.body);
    assert!(leaked(&r.body, &secrets).is_empty());
    assert_marked(&entry_of(&root, "http"), "http", Some("http"));
    drop(serve);

    assert_eq!(leaked(&all_files(&root), &secrets), Vec::<&str>::new(), "a secret reached a file");
}

#[test]
fn a_secret_written_by_hand_is_redacted_in_every_answer() {
    let token = format!("glpat-{}", "Hn4Rq8Tv2Xz6Bd0Fj3Lp");
    let password = "Tr0ub4dor&3-prod";
    let doc = format!(
        "---\nname: Staging access\ndescription: CI pushes to staging with {token} as its runbook says.\n---\n\nThe \
         database URL postgres://ci:{password}@db.staging:5432/app is in the runbook.\n"
    );
    let root = TestRoot::new().file("resources/workspaces/acme/OVERVIEW.md", doc).file(
        ".tmws/memory/long-term.jsonl",
        format!(
            "{}\n",
            json!({"op": "add", "id": "m_0123456789ab", "ns": "long-term", "at": "2026-11-01T00:00:00Z",
                   "content": format!("old note: use {token} for the staging pushes"), "summary": "old staging note"})
        ),
    );
    let secrets = vec![token.clone(), password.to_owned()];
    let cli = root.run(&["context", "-w", "acme"]);
    let cli_search = root.run(&["search", "staging runbook", "--format", "json"]);
    let cli_get = root.run(&["memory", "get", "m_0123456789ab", "--include-content"]);
    for out in [&cli, &cli_search, &cli_get] {
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(leaked(&out.stdout, &secrets).is_empty(), "{}", out.stdout);
    }
    assert!(cli_get.stdout.contains("use [REDACTED:gitlab-token] for"), "{}", cli_get.stdout);
    assert!(cli.stdout.contains("staging with [REDACTED:gitlab-token] as"), "{}", cli.stdout);

    let mcp = Mcp::start(root.path());
    for (tool, args) in [
        ("workspace_get_context", json!({"workspace": "acme"})),
        ("workspace_search", json!({"query": "staging runbook"})),
        ("memory_get", json!({"id": "m_0123456789ab", "include_content": true})),
    ] {
        let a = mcp.call_fresh(tool, args);
        assert!(leaked(a.text(), &secrets).is_empty(), "{tool}: {}", a.text());
        assert!(a.text().contains("[REDACTED:gitlab-token]"), "{tool}: {}", a.text());
    }
    mcp.stop();
    let serve = Serve::start(root.path(), None);
    let r = serve.get("/memory/m_0123456789ab?include_content=true");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(leaked(&r.body, &secrets).is_empty() && r.body.contains("[REDACTED:gitlab-token]"), "{}", r.body);
}

#[test]
fn errors_trust_and_sessions_store_and_show_no_secret() {
    let root = repo();
    let aws = format!("AKIA{}", "Z7Q2M4N6P8R0T3V5");
    let slack =
        format!("https://hooks.slack.com/services/T0{}/B0{}/{}", "4QX7ZP2", "6LM3KD9", "Qm3nR7sT1vW9yZ2aBc4De6Fg");
    let pg = "postgres://deploy:Xk29dLq0Pz7W@db.internal/app";
    let secrets = vec![aws.clone(), "Qm3nR7sT1vW9yZ2aBc4De6Fg".to_owned(), "Xk29dLq0Pz7W".to_owned()];

    // An error that would echo its input.
    let bad = root.run(&["memory", "get", &aws]);
    assert_ne!(bad.code, 0);
    assert!(leaked(&bad.stderr, &secrets).is_empty(), "{}", bad.stderr);
    let bad_json = root.run(&["--json", "search", "x", "--kind", &aws]);
    assert_ne!(bad_json.code, 0);
    assert!(leaked(&format!("{}{}", bad_json.stdout, bad_json.stderr), &secrets).is_empty(), "{}", bad_json.stderr);

    // Trust: evidence and names.
    let t = root.run(&[
        "--json",
        "trust",
        "verify",
        "--agent",
        "codex",
        "--success",
        "--evidence",
        &format!("deployed with {pg}"),
    ]);
    assert_eq!(t.code, 0, "{}", t.stderr);
    let trust = root.read(".tmws/trust.jsonl");
    assert!(trust.contains("postgres://deploy:[REDACTED:url-credentials]@db.internal/app"), "{trust}");

    // A session gathers commit subjects and files; one subject holds a webhook URL.
    let since = git(root.path(), &["log", "-1", "--format=%H"]);
    root.write("ops/notify.sh", "curl -X POST \"$SLACK_WEBHOOK\"\n");
    git(root.path(), &["add", "ops/notify.sh"]);
    git(root.path(), &["commit", "-qm", &format!("notify {slack} on deploy")]);
    let rec = root.run(&["--json", "session", "record", "--since", since.trim(), "--agent", "claude"]);
    assert_eq!(rec.code, 0, "{}", rec.stderr);
    assert!(leaked(&rec.stdout, &secrets).is_empty(), "{}", rec.stdout);
    let log = root.read(".tmws/memory/long-term.jsonl");
    assert!(log.contains("[REDACTED:slack-webhook-url]"), "{log}");

    assert_eq!(leaked(&all_files(&root), &secrets), Vec::<&str>::new(), "a secret reached a file");
}

fn mock() -> String {
    let tmws = std::path::PathBuf::from(env!("CARGO_BIN_EXE_tmws"));
    tmws.parent()
        .unwrap()
        .join("examples")
        .join(format!("mcp_mock{}", std::env::consts::EXE_SUFFIX))
        .display()
        .to_string()
}

#[test]
fn the_registry_stores_no_secret_of_a_client_config() {
    let gh = format!("ghp_{}", "Lm2Np8Rt5Wy7Bc4Df6Gh1Jk0Ab2Cd4Zq3Xv9");
    let pw = "Pw9x2kQ7mZ";
    let api = "9f8e7d6c5b4a3f2e1d0c";
    let fail = format!("cannot reach postgres://svc:{pw}@db/x");
    let config = json!({"mcpServers": {
        // Introspected: secrets in env values (named and shaped) and in its arguments.
        "docs": {"command": mock(), "args": [], "env": {
            "MCP_MOCK_NAME": "docs", "MCP_MOCK_TOOLS": "2", "GITHUB_TOKEN": gh,
            "DATABASE_URL": format!("postgres://u:{pw}@db/x"), "LOG": "info"}},
        // Fails: its error text holds a password.
        "broken": {"command": mock(), "env": {"MCP_MOCK_FAIL_START": fail}},
        // Never starts: a secret in a flag and after one.
        "missing": {"command": "/nonexistent/mcp-server", "args": [format!("--token={gh}"), "--api-key", api]},
        // HTTP: user info and a query parameter (nothing listens on port 9).
        "remote": {"url": format!("http://bob:{pw}@127.0.0.1:9/mcp?api_key={api}&mode=fast")}
    }});
    let root = TestRoot::new().file(".mcp.json", config.to_string());
    let secrets = vec![gh.clone(), pw.to_owned(), api.to_owned()];
    let out = root.run(&["--json", "registry", "build", "--yes", "--timeout-ms", "60000"]);
    assert_eq!(out.code, 1, "two servers fail: {}{}", out.stdout, out.stderr);
    assert!(leaked(&format!("{}{}", out.stdout, out.stderr), &secrets).is_empty(), "{}{}", out.stdout, out.stderr);
    let index = root.read(".tmws/registry/index.json");
    assert_eq!(leaked(&index, &secrets), Vec::<&str>::new(), "{index}");
    let reg: Value = serde_json::from_str(&index).unwrap();
    let servers = &reg["servers"];
    assert_eq!(servers["docs"]["connection"]["env"]["GITHUB_TOKEN"], "${GITHUB_TOKEN}");
    assert_eq!(servers["docs"]["connection"]["env"]["DATABASE_URL"], "postgres://u:[REDACTED:url-credentials]@db/x");
    // The mock's built-in tools and the two asked for.
    assert!(servers["docs"]["metadata"]["error"].is_null(), "{}", servers["docs"]);
    assert!(servers["docs"]["tools"]["tool_1"].is_object(), "{}", servers["docs"]);
    assert_eq!(
        servers["missing"]["connection"]["args"],
        json!(["--token=[REDACTED:github-pat]", "--api-key", "[REDACTED:secret-flag]"])
    );
    assert_eq!(
        servers["remote"]["connection"]["url"],
        "http://bob:[REDACTED:url-credentials]@127.0.0.1:9/mcp?api_key=[REDACTED:url-secret-parameter]&mode=fast"
    );
    let error = servers["broken"]["metadata"]["error"].as_str().unwrap();
    // A URL in an error keeps its scheme, host and path only: the user name goes too.
    assert!(error.contains("postgres://[REDACTED:url-credentials]@db/x"), "{error}");
    let list = root.run(&["registry", "list"]);
    assert!(leaked(&list.stdout, &secrets).is_empty(), "{}", list.stdout);
    // The stored form is stable: a second build finds nothing changed but the failures.
    let again = json_of(&{
        let mut o = root.run(&["--json", "registry", "build", "--yes", "--timeout-ms", "60000"]);
        o.code = 0;
        o
    });
    let docs = again.as_array().unwrap().iter().find(|r| r["server"] == "docs").unwrap();
    assert_eq!(docs["status"], "unchanged", "{again}");
}

#[test]
fn check_finds_planted_secrets_in_every_file_it_owns_without_printing_them() {
    let gh = format!("ghp_{}", "Wy7Bc4Df6Gh1Jk0Ab2Cd4Zq3Xv9Lm2Np8Rt5");
    let sg = format!("SG.{}.{}", "Qm3nR7sT1vW9yZ2aBc4De6", "Fg8Hi0Jk2Lm4No6Pq8Rs0Tu2Vw4Xy6Za8Bc0De2Fg4Hi");
    let pem_body = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0";
    let hook = format!("https://hooks.slack.com/services/{}", "T04QX7ZP2/B06LM3KD9/Qm3nR7sT1vW9yZ2aBc4De6Fg");
    let root = TestRoot::new()
        .file(
            "resources/workspaces/acme/OVERVIEW.md",
            format!("---\nname: Acme\ndescription: Deploys use {gh}\n---\n\n# Acme\n"),
        )
        .file(
            "resources/workspaces/acme/_decisions/261101-mail.md",
            format!("---\nname: Mail provider\ndescription: We send mail through SendGrid.\nstatus: accepted\ncreated: 2026-11-01\n---\n\nThe key is {sg} for now.\n"),
        )
        .file(
            "agent/rules/common/deploy.md",
            format!("<!-- budget: 20 lines -->\n# Deploy\n\n```\n-----BEGIN RSA PRIVATE KEY-----\n{pem_body}\n-----END RSA PRIVATE KEY-----\n```\n"),
        )
        .file(
            ".tmws/memory/long-term.jsonl",
            format!(
                "{}\n{}\n",
                json!({"op": "add", "id": "m_000000000001", "ns": "long-term", "at": "2026-11-01T00:00:00Z", "content": "nothing here"}),
                json!({"op": "add", "id": "m_000000000002", "ns": "long-term", "at": "2026-11-01T00:00:00Z", "content": "alerts go to a webhook", "tags": [hook]}),
            ),
        )
        .file(
            ".tmws/trust.jsonl",
            format!("{}\n", json!({"agent": "codex", "verifier": "claude", "success": true, "evidence": format!("\"password\": \"{}\"", "Zr8!kP2#vL5q"), "at": "2026-11-01T00:00:00Z"})),
        )
        .file(
            ".tmws/registry/index.json",
            serde_json::to_string_pretty(&json!({"version": "1", "servers": {"gh": {
                "description": "GitHub", "connection": {"type": "stdio", "command": "gh-mcp", "args": [format!("--token={gh}")]},
                "tools": {}}}}))
            .unwrap(),
        )
        .file(".tmws/config.toml", format!("# deploy token: {gh}\n[memory]\nfsync = true\n"))
        .file("README.md", format!("Not owned by tmws: {gh}\n"));
    let secrets = vec![
        gh.clone(),
        sg.clone(),
        pem_body.to_owned(),
        "Qm3nR7sT1vW9yZ2aBc4De6Fg".to_owned(),
        "Zr8!kP2#vL5q".to_owned(),
    ];
    let json_out = root.run(&["check", "--format", "json"]);
    assert_eq!(json_out.code, 1, "{}{}", json_out.stdout, json_out.stderr);
    let found: Vec<(String, u64, u64, String)> = diagnostics(&json_out)
        .into_iter()
        .filter(|d| d.4 == "secret")
        .map(|(path, line, column, _, rule, message)| (path, line, column, format!("{rule}: {message}")))
        .collect();
    let registry_line =
        root.read(".tmws/registry/index.json").lines().position(|l| l.contains("--token=")).unwrap() as u64 + 1;
    let registry_column =
        root.read(".tmws/registry/index.json").lines().nth(registry_line as usize - 1).unwrap().find("ghp_").unwrap()
            as u64
            + 1;
    let trust_column = root.read(".tmws/trust.jsonl").find("Zr8!").unwrap() as u64 + 1;
    let log_line2 = root.read(".tmws/memory/long-term.jsonl").lines().nth(1).unwrap().to_owned();
    let hook_column = log_line2.find("T04QX7ZP2").unwrap() as u64 + 1;
    assert_eq!(
        found,
        vec![
            (
                ".tmws/config.toml".into(),
                1,
                17,
                "secret: a GitHub personal access token (github-pat) is written here".into()
            ),
            (
                ".tmws/memory/long-term.jsonl".into(),
                2,
                hook_column,
                "secret: a Slack webhook URL (slack-webhook-url) is written here".into()
            ),
            (
                ".tmws/registry/index.json".into(),
                registry_line,
                registry_column,
                "secret: a GitHub personal access token (github-pat) is written here".into()
            ),
            (
                ".tmws/trust.jsonl".into(),
                1,
                trust_column,
                "secret: a value assigned to a secret-looking name (secret-assignment) is written here".into()
            ),
            (
                "agent/rules/common/deploy.md".into(),
                5,
                1,
                "secret: a private key block (private-key) is written here".into()
            ),
            (
                "resources/workspaces/acme/OVERVIEW.md".into(),
                3,
                26,
                "secret: a GitHub personal access token (github-pat) is written here".into()
            ),
            (
                "resources/workspaces/acme/_decisions/261101-mail.md".into(),
                8,
                12,
                "secret: a SendGrid API key (sendgrid-api-token) is written here".into()
            ),
        ]
    );
    for format in ["human", "json", "github"] {
        let out = root.run(&["check", "--format", format]);
        assert!(leaked(&format!("{}{}", out.stdout, out.stderr), &secrets).is_empty(), "{format}: {}", out.stdout);
    }
    let human = root.run(&["check"]);
    assert!(
        human.stdout.contains("description: Deploys use [REDACTED:github-pat]"),
        "the line is shown redacted: {}",
        human.stdout
    );
}

/// Every 8-character piece of `secret` that `text` holds: a secret partly redacted still
/// leaks.
fn pieces_in(text: &str, secret: &str) -> Vec<String> {
    let chars: Vec<char> = secret.chars().collect();
    chars
        .windows(8.min(chars.len()))
        .map(|w| w.iter().collect::<String>())
        .filter(|p| text.contains(p.as_str()))
        .collect()
}

/// Adds `content` through the CLI, then reads the log: no piece of `secret` in any byte of
/// it, the answer's `redacted` count is `redacted`, and the answer's summary is the one the
/// log holds (the answer is made from what was stored).
fn add_and_read_log(content: &str, secret: &str, redacted: u64) -> (Value, Value) {
    let root = TestRoot::new();
    let answer = json_of(&root.run(&["--json", "memory", "add", content]));
    let log = root.read(".tmws/memory/short-term.jsonl");
    assert_eq!(pieces_in(&log, secret), Vec::<String>::new(), "the log holds the secret: {log}");
    assert_eq!(pieces_in(&answer.to_string(), secret), Vec::<String>::new(), "{answer}");
    assert_eq!(answer["redacted"], redacted, "{answer}");
    let entry: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(answer["summary"], entry["summary"], "the answer shows what was stored");
    (answer, entry)
}

#[test]
fn a_password_in_a_json_escaped_url_is_redacted_before_it_is_stored() {
    let password = "Xk29dLq0Pz7W";
    let content = format!(r#"{{"db":"postgres:\/\/app:{password}@db.internal:5432\/orders"}}"#);
    let (_, entry) = add_and_read_log(&content, password, 1);
    assert_eq!(
        entry["content"], r#"{"db":"postgres:\/\/app:[REDACTED:url-credentials]@db.internal:5432\/orders"}"#,
        "the escaped form keeps its escapes around the mark"
    );
    assert_eq!(entry["summary"], r#"{"db":"postgres://app:[REDACTED:url-credentials]@db.internal:5432/orders"}"#);
}

#[test]
fn a_password_in_json_inside_json_is_redacted_before_it_is_stored() {
    let password = "Br4sil@2024xQ";
    let content = format!(r#"{{"body":"{{\"user\":\"app\",\"password\":\"{password}\"}}"}}"#);
    let (_, entry) = add_and_read_log(&content, password, 1);
    assert!(entry["content"].as_str().unwrap().contains(r#"\"password\":\"[REDACTED:secret-assignment]\""#), "{entry}");
}

#[test]
fn a_token_split_by_a_line_continuation_is_redacted_before_it_is_stored() {
    let token = format!("glpat-{}", "Hn4Rq8Tv2Xz6Bd0Fj3Lp");
    let content = format!("docker build \\\n  --build-arg GL_TOKEN={}\\\n{} .", &token[..12], &token[12..]);
    let (_, entry) = add_and_read_log(&content, &token, 1);
    assert_eq!(pieces_in(&entry.to_string(), &token[12..]), Vec::<String>::new(), "{entry}");
    assert!(entry["content"].as_str().unwrap().contains("GL_TOKEN=[REDACTED:gitlab-token] ."), "{entry}");
}

#[test]
fn a_key_given_on_the_command_line_is_not_echoed_by_a_usage_error() {
    let body = "MIIEpAIBAAKCAQEA0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78L";
    let key = format!(
        "-----BEGIN RSA PRIVATE KEY-----\n{body}\nhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc/BJECPebWKRXjBZCiFV4n3oknj\n-----END RSA PRIVATE KEY-----"
    );
    let root = TestRoot::new();
    // Clap quotes the key when it takes it for a flag (it starts with dashes) or rejects it
    // as a flag's value; the error and its tip show the mark instead.
    for args in [
        vec!["memory", "add", &key],
        vec!["memory", "add", "note", "--importance", &key],
        vec!["--json", "memory", "add", &key],
        vec!["--json", "memory", "add", "note", "--importance", &key],
    ] {
        let out = root.run(&args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        let shown = format!("{}{}", out.stdout, out.stderr);
        assert_eq!(pieces_in(&shown, body), Vec::<String>::new(), "{args:?}: {shown}");
        assert!(shown.contains("[REDACTED:private-key]"), "{args:?}: {shown}");
    }
    let out = root.run(&["memory", "add", "note", "--bogus", &key]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(pieces_in(&out.stderr, body), Vec::<String>::new(), "{}", out.stderr);
    // A usage error without a secret is clap's, as it was.
    let plain = root.run(&["memory", "add", "note", "--bogus"]);
    assert_eq!(plain.code, 2);
    assert!(plain.stderr.starts_with("error: unexpected argument '--bogus' found"), "{}", plain.stderr);
}

/// Regression: a key or a token given as a flag's value that the tool refuses
/// (`--limit=-----BEGIN …`) was cut to its first 60 characters for the error before it was
/// redacted, and a cut key is no longer one the redactor knows: its start was printed.
/// Every message of the command line, clap's and the tools' alike, is redacted whole.
#[test]
fn a_key_or_token_cut_short_by_a_usage_error_is_redacted_before_it_is_cut() {
    let body = "MIIEpAIBAAKCAQEA0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78L";
    let key = format!(
        "-----BEGIN RSA PRIVATE KEY-----\n{body}\nhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc/BJECPebWKRXjBZCiFV4n3oknj\n-----END RSA PRIVATE KEY-----"
    );
    let token = format!("sk-ant-api03-{}-{}AA", "Zq3Xv9Lm2Np8Rt5Wy7Bc4Df6Gh1Jk0Ab2Cd4".repeat(2), "Qw7Er5Ty3Ui1Op9As");
    let root = TestRoot::new();
    for secret in [key.as_str(), token.as_str()] {
        let limit = format!("--limit={secret}");
        let dashed = format!("-{secret}");
        for args in [
            vec!["search", "x", limit.as_str()],
            vec!["--json", "search", "x", limit.as_str()],
            vec!["memory", "search", "x", "--min-score", secret],
            vec!["search", "x", dashed.as_str()],
            vec!["context", "-w", secret],
        ] {
            let out = root.run(&args);
            assert_ne!(out.code, 0, "{args:?}: {}", out.stderr);
            let shown = format!("{}{}", out.stdout, out.stderr);
            let secret_part = if secret == key { body } else { &token[14..] };
            assert_eq!(pieces_in(&shown, secret_part), Vec::<String>::new(), "{args:?}: {shown}");
        }
        let out = root.run(&["search", "x", &limit]);
        assert!(out.stderr.starts_with("tmws: --limit: `[REDACTED:"), "{}", out.stderr);
    }
}
