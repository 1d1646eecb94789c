//! `tmws serve` driven by real clients on a loopback port: the token (file, mode, 401,
//! the scheme in any case), `Host` and `Origin` of other sites refused, answer formats,
//! bad requests, the body limit, clients that trickle their headers closed, error bodies
//! without absolute paths, metrics, MCP streamable HTTP at `/mcp` with rmcp's client, the
//! refusal of a non-loopback address without a good token, a graceful stop on SIGTERM,
//! and the memory routes. (That HTTP answers what the engine,
//! the CLI and MCP answer is `surfaces.rs`.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use super::clients::{Serve, result_text};
use super::util::{PATIENCE, eventually};
use super::util::{TestRoot, mcp_tools};

const CONTEXT: &str = "/workspace/context?workspace=devtools&domain=common&topics=lessons,spikes";

#[test]
fn the_token_is_made_private_and_every_route_but_health_needs_it() {
    let root = TestRoot::sample();
    let serve = Serve::start(root.path(), None);
    assert_eq!(serve.token.len(), 64, "32 random bytes in hex: {}", serve.token);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(root.path().join(".tmws/cache/token")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let r = serve.rt.block_on(serve.http.get(format!("{}/health", serve.url)).send()).unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let v: Value = serve.rt.block_on(r.json()).unwrap();
    assert_eq!((v["status"].as_str(), v["version"].as_str()), (Some("ok"), Some(env!("CARGO_PKG_VERSION"))));
    let url = |p: &str| format!("{}{p}", serve.url);
    for request in [
        serve.http.get(url(CONTEXT)),
        serve.http.get(url(CONTEXT)).bearer_auth("wrong"),
        serve.http.get(url("/metrics")),
        serve.http.post(url("/mcp")),
        serve.http.post(url("/memory")).body("{\"content\":\"x\"}"),
    ] {
        let r = serve.rt.block_on(request.send()).unwrap();
        assert_eq!(r.status().as_u16(), 401);
        assert_eq!(r.headers()[reqwest::header::WWW_AUTHENTICATE], "Bearer");
        let v: Value = serve.rt.block_on(r.json()).unwrap();
        assert_eq!(v["error"], "missing or wrong bearer token");
    }
}

#[test]
fn answers_are_the_clis_in_yaml_or_json_by_parameter_or_accept() {
    let root = TestRoot::sample();
    let cli_yaml = root.run(&["context", "-w", "devtools", "-d", "common", "--topics", "lessons,spikes"]).stdout;
    let cli_json =
        root.run(&["context", "-w", "devtools", "-d", "common", "--topics", "lessons,spikes", "--json"]).stdout;
    let serve = Serve::start(root.path(), None);
    let r = serve.get(CONTEXT);
    assert_eq!((r.status, r.content_type.as_str()), (200, "application/yaml; charset=utf-8"));
    assert_eq!(r.body, cli_yaml);
    let r = serve.get(&format!("{CONTEXT}&format=json"));
    assert_eq!((r.content_type.as_str(), r.body.as_str()), ("application/json", cli_json.as_str()));
    let r = serve.send(serve.http.get(format!("{}{CONTEXT}", serve.url)).header("accept", "application/json"));
    assert_eq!(r.body, cli_json);
    // Lists are comma-separated or repeated.
    let r = serve.get("/workspace/search?query=%E6%8E%A5%E7%B6%9A&kinds=entry&kinds=overview&format=json");
    let v = r.json();
    assert_eq!(v["query"], "接続");
    assert_eq!(v["results"][0]["refId"], "resources/workspaces/nihongo/mobile/_lessons/260915-connection-pool.md");
}

#[test]
fn bad_requests_get_a_json_error_naming_what_is_wrong() {
    let root = TestRoot::sample();
    let serve = Serve::start(root.path(), None);
    let cases = [
        ("/workspace/context", 400, "missing parameter `workspace`"),
        ("/workspace/context?workspace=devtools&format=xml", 400, "format: `xml` is not one of yaml, json"),
        (
            "/workspace/context?workspace=devtools&include_defaults=maybe",
            400,
            "include_defaults: `maybe` is not true or false",
        ),
        ("/workspace/search?query=%20", 400, "empty query: give some words to search for"),
        (
            "/workspace/search?query=x&kinds=entry,widget",
            400,
            "unknown kind `widget`; known kinds: overview, topic_overview, entry, rule, skill, doc, memory, server, tool, commit",
        ),
        (
            "/workspace/context?workspace=devtools&bogus=1",
            400,
            "unknown parameter `bogus`, expected one of `workspace`, `domain`, `repository`, `topics`, \
`include_defaults`, `filter_status`, `filter_tags`, `filter_category`, `format`, `max_chars`",
        ),
        ("/workspace/context?workspace=devtools&max_chars=5", 400, "max_chars 5 is outside 100 to 100000"),
        ("/nowhere", 404, "no route GET /nowhere"),
    ];
    for (path, status, message) in cases {
        let r = serve.get(path);
        assert_eq!((r.status, r.content_type.as_str()), (status, "application/json"), "{path}");
        assert_eq!(r.json()["error"], message, "{path}");
    }
    // The 404 names every route.
    let hint = serve.get("/nowhere").json()["hint"].as_str().unwrap().to_owned();
    for route in [
        "/workspace/context",
        "/workspace/search",
        "POST /memory",
        "/memory/search",
        "/memory/stats",
        "/memory/{id}",
        "/metrics",
    ] {
        assert!(hint.contains(route), "{route} in {hint}");
    }
    // Regression: a route asked with another method answered 405 with an empty body.
    let r = serve.send(serve.http.put(format!("{}/memory/stats", serve.url)));
    assert_eq!((r.status, r.content_type.as_str()), (405, "application/json"));
    let body = r.json();
    assert_eq!(
        (&body["error"], &body["category"], &body["hint"]),
        (&json!("PUT is not a method of /memory/stats"), &json!("usage"), &json!("/memory/stats takes GET"))
    );
}

/// Regression: ending an MCP session (`DELETE /mcp`) answered 202, which the Python SDK
/// logs as "Session termination failed: 202".
#[test]
fn ending_an_mcp_session_answers_200() {
    let root = TestRoot::new();
    let serve = Serve::start(root.path(), None);
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let (status, session) = serve.rt.block_on(async {
        let r = serve
            .http
            .post(format!("{}/mcp", serve.url))
            .bearer_auth(&serve.token)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .body(init)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.headers().get("mcp-session-id").unwrap().to_str().unwrap().to_owned())
    });
    assert_eq!(status, 200);
    let r = serve.send(serve.http.delete(format!("{}/mcp", serve.url)).header("mcp-session-id", &session));
    assert_eq!(r.status, 200, "{}", r.body);
}

/// POSTs `body` to `path` over a plain socket, with `Content-Length` or chunked, and
/// returns the status code and the answer's body. The server may answer and close before
/// the whole body is sent: the write stops there and the answer is read.
fn post_raw(url: &str, token: &str, path: &str, body: &[u8], chunked: bool) -> (u16, String) {
    let addr = url.strip_prefix("http://").unwrap();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let length =
        if chunked { "Transfer-Encoding: chunked".to_owned() } else { format!("Content-Length: {}", body.len()) };
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
{length}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    for chunk in body.chunks(64 * 1024) {
        let sent = if chunked {
            write!(s, "{:x}\r\n", chunk.len()).and_then(|()| s.write_all(chunk)).and_then(|()| s.write_all(b"\r\n"))
        } else {
            s.write_all(chunk)
        };
        if sent.is_err() {
            break;
        }
    }
    if chunked {
        let _ = s.write_all(b"0\r\n\r\n");
    }
    let mut reader = BufReader::new(s);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let mut rest = String::new();
    let _ = reader.read_to_string(&mut rest);
    let body = rest.split_once("\r\n\r\n").map(|(_, b)| b.trim().to_owned()).unwrap_or_default();
    (status_line.split(' ').nth(1).unwrap().parse().unwrap(), body)
}

#[test]
fn bodies_over_a_mebibyte_get_413_announced_or_streamed() {
    let root = TestRoot::sample();
    let serve = Serve::start(root.path(), None);
    let big = json!({"content": "x".repeat(1 << 20)}).to_string().into_bytes();
    for path in ["/mcp", "/memory"] {
        for chunked in [false, true] {
            let (status, body) = post_raw(&serve.url, &serve.token, path, &big, chunked);
            assert_eq!(status, 413, "{path}, chunked: {chunked}");
            assert_eq!(body, "{\"error\":\"request body over 1048576 bytes\",\"category\":\"usage\"}", "{path}");
        }
    }
    // Just under the limit gets through to the MCP service (which then rejects the non-JSON
    // body itself).
    let r = serve.send(
        serve
            .http
            .post(format!("{}/mcp", serve.url))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(vec![b' '; 1 << 20]),
    );
    assert_ne!(r.status, 413);
}

#[test]
fn metrics_count_what_happened() {
    let root = TestRoot::sample();
    let serve = Serve::start(root.path(), None);
    for path in [CONTEXT, CONTEXT, "/workspace/context?workspace=nope", "/workspace/context?workspace=x&y=1"] {
        serve.get(path);
    }
    serve.get("/workspace/search?query=index");
    let r = serve.get("/metrics");
    assert_eq!((r.status, r.content_type.as_str()), (200, "text/plain; version=0.0.4; charset=utf-8"));
    for line in [
        "tmws_index_ready 1",
        "tmws_index_items{kind=\"entry\"} 20",
        "tmws_index_items{kind=\"overview\"} 6",
        "tmws_memory_entries{namespace=\"long-term\"} 3",
        "tmws_memory_entries{namespace=\"short-term\"} 1",
        "tmws_http_requests_total{route=\"/workspace/context\",status=\"200\"} 2",
        "tmws_http_requests_total{route=\"/workspace/context\",status=\"404\"} 1",
        "tmws_http_requests_total{route=\"/workspace/context\",status=\"400\"} 1",
        "tmws_http_requests_total{route=\"/workspace/search\",status=\"200\"} 1",
        "tmws_search_latency_seconds_count 1",
        "tmws_context_latency_seconds_count 3",
        "tmws_pool_size 0",
        "tmws_pool_connect_latency_seconds_count 0",
        "tmws_tool_calls_total{ok=\"true\"} 0",
    ] {
        assert!(r.body.lines().any(|l| l == line), "no `{line}` in\n{}", r.body);
    }
    assert!(r.body.lines().any(|l| l.starts_with("tmws_http_requests_total{route=\"/health\",status=\"200\"} ")));
}

#[test]
fn mcp_over_http_lists_the_tools_and_counts_redundant_defaults_per_session() {
    let root = TestRoot::sample();
    let cli = root.run(&["context", "-w", "nihongo", "-d", "mobile"]).stdout;
    let serve = Serve::start(root.path(), Some("s3cret-token"));
    assert!(!root.path().join(".tmws/cache/token").exists(), "TMWS_TOKEN is used, no file is made");
    let mcp_url = format!("{}/mcp", serve.url);
    let transport = |token: &str| {
        StreamableHttpClientTransport::with_client(
            super::clients::http_builder().no_proxy().build().unwrap(),
            StreamableHttpClientTransportConfig::with_uri(mcp_url.as_str()).auth_header(token),
        )
    };
    serve.rt.block_on(async {
        // Without the right token the client cannot even initialize.
        assert!(().serve(transport("wrong")).await.is_err());
        let session = ().serve(transport("s3cret-token")).await.expect("initialize");
        let tools = session.list_all_tools().await.unwrap();
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        names.sort_unstable();
        assert_eq!(names, mcp_tools());
        let call = |v: Value| {
            CallToolRequestParams::new("workspace_get_context").with_arguments(v.as_object().unwrap().clone())
        };
        let r = session.call_tool(call(json!({"workspace": "nihongo", "domain": "mobile"}))).await.unwrap();
        assert_eq!((r.is_error, result_text(&r)), (Some(false), cli.clone()));
        // Defaults sent twice in one session are counted once as redundant; a second
        // session starts afresh.
        session.call_tool(call(json!({"workspace": "nihongo"}))).await.unwrap();
        let other = ().serve(transport("s3cret-token")).await.expect("second session");
        other.call_tool(call(json!({"workspace": "nihongo"}))).await.unwrap();
        other.call_tool(call(json!({"workspace": "nihongo", "include_defaults": false}))).await.unwrap();
        other.cancel().await.unwrap();
        session.cancel().await.unwrap();
    });
    let metrics = serve.get("/metrics").body;
    assert!(metrics.lines().any(|l| l == "tmws_defaults_redundant_total 1"), "{metrics}");
}

#[test]
fn a_non_loopback_address_without_a_token_is_refused() {
    let root = TestRoot::sample();
    let out = root.run(&["serve", "--addr", "0.0.0.0:0"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "tmws: refusing to serve on a non-loopback address without a token: set TMWS_TOKEN, or start once on 127.0.0.1 \
to create .tmws/cache/token\n"
    );
    assert!(!root.path().join(".tmws/cache/token").exists());
    let out = root.run(&["serve", "--addr", "nowhere"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (2, "tmws: --addr nowhere: not an address and port such as 127.0.0.1:3456\n")
    );
}

#[cfg(unix)]
#[test]
fn sigterm_stops_the_server_gracefully_and_the_token_is_kept() {
    let root = TestRoot::sample();
    let serve = Serve::start(root.path(), None);
    let token = root.read(".tmws/cache/token");
    // An open MCP session (with its event stream) does not hold the server up.
    let rt = super::clients::runtime();
    let session = rt.block_on(async {
        let transport = StreamableHttpClientTransport::with_client(
            super::clients::http_builder().no_proxy().build().unwrap(),
            StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", serve.url)).auth_header(token.trim()),
        );
        ().serve(transport).await.expect("initialize")
    });
    let (code, stderr) = serve.terminate();
    assert_eq!(code, Some(0), "{stderr}");
    drop(session);
    // A second start keeps the token it made the first time.
    let again = Serve::start(root.path(), None);
    assert_eq!(root.read(".tmws/cache/token"), token);
    let (code, _) = again.terminate();
    assert_eq!(code, Some(0));
}

#[test]
fn memory_routes_add_search_get_and_delete() {
    let root = TestRoot::sample();
    let serve = Serve::start(root.path(), Some("tok"));
    let body = json!({"content": "The REST staging cluster uses api_key=XYZ123 for deploys.", "namespace": "long-term", "tags": ["rest"]});
    let r = serve.post("/memory?format=json", &body.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    let added = r.json();
    let id = added["id"].as_str().unwrap().to_owned();
    assert_eq!((added["namespace"].as_str(), added["redacted"].as_u64()), (Some("long-term"), Some(1)));
    assert!(!root.read(".tmws/memory/long-term.jsonl").contains("XYZ123"));
    // Found by the next search, or that search says it is stale (never a silent miss).
    eventually("the new memory found by a search", || {
        let v = serve.get("/memory/search?query=REST%20staging%20cluster&format=json").json();
        if v["results"][0]["id"] == id.as_str() {
            return Ok(());
        }
        assert_eq!(v["stale"], true, "a miss must say stale: {v}");
        Err(v)
    });
    let got = serve.get(&format!("/memory/{id}?include_content=true&format=json")).json();
    assert_eq!(got["content"], "The REST staging cluster uses api_key=[REDACTED:secret-assignment] for deploys.");
    assert_eq!(got["tags"], json!(["rest"]));
    assert_eq!(serve.get("/memory/stats?format=json").json()["by_namespace"]["long-term"], 4);
    let v = serve.delete(&format!("/memory/{id}?format=json")).json();
    assert_eq!(v, json!({"id": id, "namespace": "long-term", "deleted": true}));
    // Deleting again (once the watcher has applied the delete) is a 404.
    let r = eventually("a 404 for a deleted memory", || {
        let r = serve.delete(&format!("/memory/{id}"));
        if r.status == 404 { Ok(r) } else { Err(r.status) }
    });
    assert_eq!(r.json()["error"], format!("no memory `{id}`"));
    // Bad bodies: a clear 400.
    for (body, message) in [
        ("not json", "body: expected ident at line 1 column 2"),
        ("[1]", "body: not a JSON object"),
        (
            "{\"content\":\"x\",\"colour\":1}",
            "unknown parameter `colour`, expected one of `content`, `namespace`, `summary`, `tags`, `source`, \
`kind`, `key`, `importance`, `agent`, `problem`, `solution`, `outcome`, `files`, `cites`, `format`",
        ),
        ("{\"content\":\"  \"}", "empty content: give the text to remember (or a problem)"),
    ] {
        let r = serve.post("/memory", body);
        assert_eq!((r.status, r.json()["error"].as_str()), (400, Some(message)), "{body}");
    }
}

#[test]
fn entries_are_written_with_post_workspace_entry_and_stale_changes_get_409() {
    let root = TestRoot::sample();
    let serve = Serve::start(root.path(), Some("tok"));
    let body = json!({"topic": "decision", "workspace": "devtools", "domain": "common", "name": "Pin the toolchain",
        "description": "Every build uses the same compiler.", "fields": {"tags": ["build"]}, "body": "Why.\n"});
    let r = serve.post("/workspace/entry?format=json", &body.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    let made = r.json();
    let day = chrono::Utc::now().date_naive().format("%y%m%d").to_string();
    let path = format!("resources/workspaces/devtools/common/_decisions/{day}-pin-the-toolchain.md");
    assert_eq!((made["refId"].as_str(), made["action"].as_str()), (Some(path.as_str()), Some("created")));
    // The answer came once the index held it: the next search finds it.
    let v = serve.get("/workspace/search?query=pin%20toolchain&format=json").json();
    assert_eq!(v["results"][0]["refId"], path.as_str(), "{v}");
    let read = serve.get(&format!("/workspace/read?ref_id={path}&format=json")).json();
    assert_eq!(read["hash"], made["hash"]);
    // A change from a version that is no longer the file's: 409, the file as it was.
    root.write(&path, root.read(&path).replace("Why.", "Why, edited."));
    let change = json!({"topic": "decisions", "workspace": "devtools", "domain": "common", "name": "Pin it",
        "description": "d", "ref_id": path, "expected_hash": made["hash"]});
    let r = serve.post("/workspace/entry", &change.to_string());
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.json()["category"], "conflict");
    assert!(root.read(&path).contains("Why, edited."));
    // An invalid one: 400 with the findings.
    let bad = json!({"topic": "plans", "workspace": "devtools", "name": "P", "description": "d", "fields": {"status": "later"}});
    let r = serve.post("/workspace/entry", &bad.to_string());
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().contains("[invalid-enum] `status` must be one of"), "{}", r.body);
    let r = serve.post("/workspace/entry", "[1]");
    assert_eq!((r.status, r.json()["error"].as_str()), (400, Some("body: not a JSON object")));
}

/// Sends `head` (request line and headers, without the blank line) and `body` over a plain
/// socket and returns the status and, when the answer says its length, its body.
fn exchange(addr: &str, head: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).unwrap();
    let mut reader = BufReader::new(s);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("status line {line:?}"));
    let mut length = None;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).unwrap();
        if header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let mut bytes = vec![0; length.unwrap_or(0)];
    reader.read_exact(&mut bytes).unwrap();
    (status, String::from_utf8(bytes).unwrap())
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#;

#[test]
fn host_and_origin_of_other_sites_are_refused_on_rest_and_mcp() {
    let root = TestRoot::sample();
    let serve = Serve::start(root.path(), None);
    let addr = serve.url.strip_prefix("http://").unwrap();
    let port = addr.rsplit(':').next().unwrap();
    let requests = [
        (format!("GET {CONTEXT} HTTP/1.1"), ""),
        ("GET /metrics HTTP/1.1".to_owned(), ""),
        (
            "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream"
                .to_owned(),
            INITIALIZE,
        ),
    ];
    let own_host = format!("Host: {addr}");
    let localhost = format!("Host: localhost:{port}");
    let evil_host = format!("Host: evil.example:{port}");
    let own_origin = format!("Origin: http://localhost:{port}");
    let evil_origin_same_port = format!("Origin: http://evil.example:{port}");
    let host_refused = (
        403,
        json!({
            "error": format!("Host `evil.example:{port}` is not this server"),
            "category": "usage",
            "hint": "address this server as localhost or 127.0.0.1; other names are refused so that a web page cannot \
        reach it through DNS rebinding",
        }),
    );
    let origin_refused = |origin: &str| {
        (
            403,
            json!({
                "error": format!("Origin `{origin}` is not this server's own"),
                "category": "usage",
                "hint": "requests from web pages of other sites are refused; clients other than browsers send no Origin",
            }),
        )
    };
    for (line, body) in &requests {
        let send = |headers: &[&str]| {
            let head = format!("{line}\r\nAuthorization: Bearer {}\r\n{}", serve.token, headers.join("\r\n"));
            let (status, body) = exchange(addr, &head, body);
            (
                status,
                if status == 200 { Value::Null } else { serde_json::from_str(&body).unwrap_or(Value::String(body)) },
            )
        };
        // Clients other than browsers send no Origin; a page of this server's own would.
        assert_eq!(send(&[&own_host]), (200, Value::Null), "{line}");
        assert_eq!(send(&[&localhost, &own_origin]), (200, Value::Null), "{line}");
        // DNS rebinding: another site's name pointed at 127.0.0.1.
        assert_eq!(send(&[&evil_host]), host_refused, "{line}");
        assert_eq!(send(&[&evil_host, &evil_origin_same_port]), host_refused, "{line}");
        // A page of another site, or of another local port, calling this server.
        for origin in ["http://evil.example", "null"] {
            assert_eq!(send(&[&own_host, &format!("Origin: {origin}")]), origin_refused(origin), "{line} {origin}");
        }
        let other_port = "http://localhost:5173";
        assert_eq!(send(&[&localhost, &format!("Origin: {other_port}")]), origin_refused(other_port), "{line}");
    }
    // /health answers whatever the Host.
    let (status, body) = exchange(addr, "GET /health HTTP/1.1\r\nHost: evil.example", "");
    assert_eq!(status, 200, "{body}");
}

#[test]
fn the_bearer_scheme_is_matched_in_any_case() {
    let root = TestRoot::sample();
    let serve = Serve::start(root.path(), Some("s3cret-token"));
    let addr = serve.url.strip_prefix("http://").unwrap();
    for (authorization, status) in [
        ("Bearer s3cret-token", 200),
        ("bearer s3cret-token", 200),
        ("BEARER s3cret-token", 200),
        ("bEaReR s3cret-token", 200),
        ("bearer s3cret-tokem", 401),
        ("bearer s3cret-toke", 401),
        ("Basic s3cret-token", 401),
        ("s3cret-token", 401),
    ] {
        for (line, body) in [
            ("GET /memory/stats HTTP/1.1", ""),
            (
                "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream",
                INITIALIZE,
            ),
        ] {
            let head = format!("{line}\r\nHost: {addr}\r\nAuthorization: {authorization}");
            let (got, answer) = exchange(addr, &head, body);
            assert_eq!(got, status, "{line} with {authorization}: {answer}");
            if status == 401 {
                assert_eq!(serde_json::from_str::<Value>(&answer).unwrap()["error"], "missing or wrong bearer token");
            }
        }
    }
}

/// Runs `tmws serve --addr ADDR` with `TMWS_TOKEN` (or none) and gives its exit code and
/// stderr; it must stop by itself (a server that starts listening prints where, and fails
/// the test at once).
fn serve_refused(root: &Path, addr: &str, token: Option<&str>) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tmws"));
    cmd.env("TMWS_CONFIG_HOME", super::util::user_config());
    cmd.arg("--root").arg(root).args(["serve", "--addr", addr]).env_remove("TMWS_LOG").env_remove("TMWS_TOKEN");
    if let Some(t) = token {
        cmd.env("TMWS_TOKEN", t);
    }
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, first_line) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let status = eventually(&format!("tmws serve --addr {addr} to refuse and exit"), || {
        if let Some(line) = first_line.try_recv().ok().map(|l| l.trim().to_owned()).filter(|l| !l.is_empty()) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("tmws serve --addr {addr} started instead of refusing: {line}");
        }
        child.try_wait().unwrap()
    });
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    (status.code().unwrap_or(-1), stderr)
}

#[test]
fn a_non_loopback_address_refuses_a_short_or_shared_token() {
    let root = TestRoot::sample();
    let refusing = "tmws: refusing to serve on a non-loopback address";
    for (token, n) in [("x", "1 character"), ("0123456789abcdef0123456789abcde", "31 characters")] {
        assert_eq!(
            serve_refused(root.path(), "0.0.0.0:0", Some(token)),
            (2, format!("{refusing}: the token in TMWS_TOKEN has {n}, it needs at least 32\n"))
        );
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let file = root.path().join(".tmws/cache/token");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let set = |text: &str, mode: u32| {
            std::fs::write(&file, text).unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        let long = format!("{}\n", "ab".repeat(32));
        for mode in [0o644, 0o640, 0o604] {
            set(&long, mode);
            assert_eq!(
                serve_refused(root.path(), "0.0.0.0:0", None),
                (
                    2,
                    format!(
                        "{refusing}: .tmws/cache/token can be read by other users (mode {mode:03o}); run `chmod 600 \
.tmws/cache/token`\n"
                    )
                ),
                "{mode:o}"
            );
        }
        set("0123456789abcdef\n", 0o600);
        assert_eq!(
            serve_refused(root.path(), "0.0.0.0:0", None),
            (2, format!("{refusing}: the token in .tmws/cache/token has 16 characters, it needs at least 32\n"))
        );
        // On a loopback address the same file is served (only its owner could have read it
        // from another machine's side anyway).
        let serve = Serve::start(root.path(), None);
        assert_eq!(serve.token, "0123456789abcdef");
        assert_eq!(serve.get("/memory/stats?format=json").status, 200);
    }
}

#[cfg(unix)]
#[test]
fn a_token_file_others_can_read_is_replaced_on_loopback_and_its_value_refused() {
    use std::os::unix::fs::PermissionsExt;
    // A token whose value everyone knows, as a repository could bring it.
    let known = "known-known-known-known-known-known-0000";
    let root = TestRoot::sample().file(".tmws/cache/token", format!("{known}\n"));
    let file = root.path().join(".tmws/cache/token");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let serve = Serve::start(root.path(), None);
    assert_ne!(serve.token, known);
    assert_eq!(serve.token.len(), 64, "a new token: {}", serve.token);
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let r = serve.rt.block_on(serve.http.get(format!("{}/memory/stats", serve.url)).bearer_auth(known).send()).unwrap();
    assert_eq!(r.status().as_u16(), 401);
    assert_eq!(serve.get("/memory/stats?format=json").status, 200);
}

#[test]
fn clients_that_trickle_their_headers_are_closed_while_others_are_answered() {
    const SLOW: usize = 200;
    let root = TestRoot::sample();
    let serve = Serve::start(root.path(), None);
    let addr = serve.url.strip_prefix("http://").unwrap();
    let head = format!("GET /memory/stats HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\r\n", serve.token);
    let mut slow: Vec<Option<TcpStream>> = (0..SLOW)
        .map(|_| {
            let s = TcpStream::connect(addr).unwrap();
            s.set_nonblocking(true).unwrap();
            Some(s)
        })
        .collect();
    // One header byte every 2 s (never a whole request in the time allowed); a connection
    // counts as closed once a read finds its end or it is reset. The server closes each
    // 10 s after it took it; how long it takes to get there depends on how busy the
    // machine is, so only the tests' patience bounds the wait.
    let deadline = Instant::now() + PATIENCE;
    let mut answered_during = None;
    for byte in head.as_bytes().iter().cycle() {
        for conn in &mut slow {
            if let Some(s) = conn {
                let mut buf = [0u8; 512];
                let closed = match s.read(&mut buf) {
                    Ok(0) => true,
                    Ok(n) => panic!("a slow client got an answer: {:?}", String::from_utf8_lossy(&buf[..n])),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => s.write_all(&[*byte]).is_err(),
                    Err(_) => true,
                };
                if closed {
                    *conn = None;
                }
            }
        }
        let open = slow.iter().flatten().count();
        if answered_during.is_none() {
            // While they all hold their connections, a normal request is answered.
            let r = serve.get("/memory/stats?format=json");
            assert_eq!((r.status, r.json()["by_namespace"]["long-term"].as_u64()), (200, Some(3)), "{}", r.body);
            answered_during = Some(open);
        }
        if open == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{open} of {SLOW} slow clients are still connected");
        std::thread::sleep(Duration::from_secs(2));
    }
    assert_eq!(answered_during, Some(SLOW), "every slow client was connected when the normal request was answered");
    // And the server still answers.
    assert_eq!(serve.get("/memory/stats?format=json").status, 200);
}

#[test]
fn error_bodies_name_paths_relative_to_the_root() {
    let root = TestRoot::sample();
    // A file where the memory folder should be: writing a memory fails with an I/O error
    // that names the path.
    std::fs::rename(root.path().join(".tmws/memory"), root.path().join("memory-moved")).unwrap();
    std::fs::write(root.path().join(".tmws/memory"), "not a folder\n").unwrap();
    let serve = Serve::start(root.path(), None);
    let absolute = root.path().display().to_string();
    let r = serve.post("/memory", r#"{"content": "remember this"}"#);
    assert_eq!(r.status, 500);
    assert!(!r.body.contains(&absolute), "{}", r.body);
    assert_eq!(
        r.json(),
        json!({"error": ".tmws/memory/short-term.jsonl: a symlink or a file where a folder must be", "category": "environment"})
    );
    let r = serve.get("/memory/stats?format=json");
    assert!(!r.body.contains(&absolute), "{}", r.body);
    assert_eq!(
        (r.status, r.json()),
        (
            500,
            json!({"error": ".tmws/memory/long-term.jsonl: Not a directory (os error 20)", "category": "environment"})
        )
    );
    // The same error through /mcp.
    serve.rt.block_on(async {
        let transport = StreamableHttpClientTransport::with_client(
            super::clients::http_builder().no_proxy().build().unwrap(),
            StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", serve.url))
                .auth_header(serve.token.clone()),
        );
        let session = ().serve(transport).await.expect("initialize");
        let args = json!({"content": "remember this"}).as_object().unwrap().clone();
        let r = session.call_tool(CallToolRequestParams::new("memory_add").with_arguments(args)).await.unwrap();
        assert_eq!(r.is_error, Some(true));
        assert_eq!(
            r.structured_content,
            Some(json!({
                "error": ".tmws/memory/short-term.jsonl: a symlink or a file where a folder must be",
                "category": "environment"
            }))
        );
        assert!(!result_text(&r).contains(&absolute), "{}", result_text(&r));
        session.cancel().await.unwrap();
    });
}

#[test]
fn trust_is_shown_at_get_trust() {
    let root = TestRoot::new();
    let verified = root.run(&["trust", "verify", "--agent", "writer-bot", "--success", "--evidence", "ci"]);
    assert_eq!(verified.code, 0, "{}", verified.stderr);
    let serve = Serve::start(root.path(), Some("tok"));
    let r = serve.get("/trust?format=json");
    assert_eq!((r.status, r.content_type.as_str()), (200, "application/json"), "{}", r.body);
    let agents = r.json()["agents"].clone();
    assert_eq!(
        (&agents[0]["agent"], &agents[0]["successes"], agents.as_array().unwrap().len()),
        (&json!("writer-bot"), &json!(1), 1)
    );
}

/// Writes the tokens bound to agents, private unless `mode` says otherwise.
#[cfg(unix)]
fn agent_tokens(root: &TestRoot, text: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    root.write(".tmws/cache/agent-tokens", text);
    let path = root.path().join(".tmws/cache/agent-tokens");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A token bound to an agent names the writer and the verifier, on REST and on `/mcp` with
/// either protocol, whatever the client calls itself; the server's own token leaves the
/// client's self-reported name.
#[cfg(unix)]
#[test]
fn a_token_bound_to_an_agent_is_who_writes_and_verifies() {
    use super::clients::{Protocol, client_named, mcp_over_http};
    let root = TestRoot::sample();
    let ci = "ci-bot-token-0123456789abcdef0123456789";
    agent_tokens(&root, &format!("# agent token\nCI-Bot {ci}\n"), 0o600);
    let serve = Serve::start(root.path(), None);
    let verify = |token: &str, protocol: Protocol, agent: &str| -> Value {
        let client = mcp_over_http(&serve.rt, &serve.url, token, protocol, client_named("claude-code"));
        let args = json!({"agent": agent, "success": true, "evidence": "e", "format": "json"});
        let params = CallToolRequestParams::new("trust_verify").with_arguments(args.as_object().unwrap().clone());
        let r = serve.rt.block_on(client.call_tool(params)).unwrap();
        let _ = serve.rt.block_on(client.cancel());
        serde_json::from_str(&result_text(&r)).unwrap_or_else(|e| panic!("{e}: {}", result_text(&r)))
    };
    for (protocol, agent) in [(Protocol::Legacy, "writer-bot"), (Protocol::Stateless, "other-bot")] {
        let v = verify(ci, protocol, agent);
        assert_eq!((&v["verifier"], v.get("verifier_self_reported")), (&json!("ci-bot"), None), "{protocol:?}: {v}");
    }
    let v = verify(&serve.token, Protocol::Stateless, "third-bot");
    assert_eq!((&v["verifier"], &v["verifier_self_reported"]), (&json!("claude-code"), &json!(true)), "{v}");
    let added = serve.send(
        serve.http.post(format!("{}/memory", serve.url)).bearer_auth(ci).body(r#"{"content": "Written by CI."}"#),
    );
    assert_eq!(added.status, 200, "{}", added.body);
    let log: String = ["short-term", "long-term"]
        .iter()
        .map(|ns| std::fs::read_to_string(root.path().join(format!(".tmws/memory/{ns}.jsonl"))).unwrap_or_default())
        .collect();
    let line = log.lines().find(|l| l.contains("Written by CI.")).unwrap();
    assert_eq!(serde_json::from_str::<Value>(line).unwrap()["agent"], "ci-bot", "{line}");
    drop(serve);
    // The verification of third-bot by a self-reported name is shown as such.
    let shown = root.run(&["--json", "trust", "show"]);
    let shown: Value = serde_json::from_str(&shown.stdout).unwrap_or_else(|e| panic!("{e}: {}", shown.stdout));
    let third = shown["agents"].as_array().unwrap().iter().find(|a| a["agent"] == "third-bot").unwrap();
    assert_eq!(third["self_reported"], 1, "{shown}");
    let ci_verified = shown["agents"].as_array().unwrap().iter().find(|a| a["agent"] == "writer-bot").unwrap();
    assert_eq!(ci_verified.get("self_reported"), None, "{shown}");
}

/// The file of agent tokens stops the server when others may read it, when a token is
/// short or used twice; the message names the line and never the token.
#[cfg(unix)]
#[test]
fn a_bad_agent_token_file_stops_the_server_without_showing_a_token() {
    let root = TestRoot::sample();
    let long = "a-token-of-forty-characters-0123456789ab";
    agent_tokens(&root, &format!("ci-bot {long}\n"), 0o644);
    let (code, stderr) = serve_refused(root.path(), "127.0.0.1:0", None);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains(".tmws/cache/agent-tokens: other users may use this file (mode 644)"), "{stderr}");
    agent_tokens(&root, "ci-bot short-token\n", 0o600);
    let (_, stderr) = serve_refused(root.path(), "127.0.0.1:0", None);
    assert!(
        stderr.contains(".tmws/cache/agent-tokens:1: the token of `ci-bot` has 11 characters, it needs at least 32"),
        "{stderr}"
    );
    agent_tokens(&root, &format!("# two\nci-bot {long}\nother {long}\n"), 0o600);
    let (_, stderr) = serve_refused(root.path(), "127.0.0.1:0", None);
    assert!(stderr.contains(".tmws/cache/agent-tokens:3: the token of `other` is used before"), "{stderr}");
    for s in [long, "short-token"] {
        assert!(!stderr.contains(s), "a token in the message: {stderr}");
    }
}
