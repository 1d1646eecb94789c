//! `tmws serve` driven by real clients on a loopback port: REST routes with reqwest (token,
//! 401, 413, bad scopes, formats, metrics), MCP streamable HTTP at `/mcp` with rmcp's
//! client, the token file, the refusal of a non-loopback address without a token, and a
//! graceful stop on SIGTERM.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use super::util::TestRoot;

/// A running `tmws serve` on 127.0.0.1 and a free port; killed when dropped.
struct Server {
    child: Child,
    url: String,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Server {
    fn start(root: &TestRoot, token: Option<&str>) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tmws"));
        cmd.arg("--root")
            .arg(root.path())
            .args(["serve", "--addr", "127.0.0.1:0"])
            .env_remove("TMWS_LOG")
            .env_remove("TMWS_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(t) = token {
            cmd.env("TMWS_TOKEN", t);
        }
        let mut child = cmd.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let url =
            line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("first line: {line:?}")).to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        // Answers before the first sync is done say `stale: true`; the tests compare exact
        // answers, so they start once /health says the index is ready.
        let deadline = Instant::now() + Duration::from_secs(20);
        while !health(&url).contains("\"ready\":true") {
            assert!(Instant::now() < deadline, "the first sync never finished");
            std::thread::sleep(Duration::from_millis(20));
        }
        Server { child, url, stderr: Some(stderr) }
    }

    /// Sends SIGTERM and waits (at most 10 s) for the exit; returns the code and stderr.
    #[cfg(unix)]
    fn terminate(mut self) -> (Option<i32>, String) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < deadline, "tmws serve did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        };
        let stderr = self.stderr.take().unwrap().join().unwrap();
        (status.code(), stderr)
    }
}

/// `GET /health` over a plain socket.
fn health(url: &str) -> String {
    let addr = url.strip_prefix("http://").unwrap();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// A client that never goes through a proxy the environment may name.
fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

fn text(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("")
}

fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn rest_routes_answer_with_the_token_and_refuse_without() {
    let root = TestRoot::sample();
    // What the CLI answers (before the server holds the index).
    let cli_yaml = root.run(&["context", "-w", "devtools", "-d", "common", "--topics", "lessons,spikes"]).stdout;
    let cli_json = root
        .run(&["context", "-w", "devtools", "-d", "common", "--topics", "lessons,spikes", "--format", "json"])
        .stdout;
    let server = Server::start(&root, None);
    let token = root.read(".tmws/cache/token").trim().to_owned();
    assert_eq!(token.len(), 64, "32 random bytes in hex: {token}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(root.path().join(".tmws/cache/token")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let url = server.url.clone();
    runtime().block_on(async {
        let http = client();
        let get = |path: &str| http.get(format!("{url}{path}"));

        // /health needs no token.
        let r = get("/health").send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let v: Value = r.json().await.unwrap();
        assert_eq!((v["status"].as_str(), v["version"].as_str()), (Some("ok"), Some(env!("CARGO_PKG_VERSION"))));

        // Every other route does.
        let context = "/workspace/context?workspace=devtools&domain=common&topics=lessons,spikes";
        for request in [get(context), get(context).bearer_auth("wrong"), get("/metrics"), http.post(format!("{url}/mcp"))] {
            let r = request.send().await.unwrap();
            assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
            assert_eq!(r.headers()[WWW_AUTHENTICATE], "Bearer");
            let v: Value = r.json().await.unwrap();
            assert_eq!(v["error"], "missing or wrong bearer token");
        }

        // The answer is the CLI's, byte for byte: YAML by default, JSON on request.
        let r = get(context).bearer_auth(&token).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[CONTENT_TYPE], "application/yaml; charset=utf-8");
        assert_eq!(r.text().await.unwrap(), cli_yaml);
        let r = get(&format!("{context}&format=json")).bearer_auth(&token).send().await.unwrap();
        assert_eq!(r.headers()[CONTENT_TYPE], "application/json");
        assert_eq!(r.text().await.unwrap(), cli_json);
        let r = get(context).bearer_auth(&token).header(ACCEPT, "application/json").send().await.unwrap();
        assert_eq!(r.text().await.unwrap(), cli_json);

        // Bad input: a clear JSON error with the right status.
        let cases = [
            ("/workspace/context?workspace=nope", StatusCode::NOT_FOUND, "unknown workspace `nope`; known: devtools, nihongo"),
            (
                "/workspace/context?workspace=devtools&domain=nope",
                StatusCode::NOT_FOUND,
                "unknown domain `nope` in `devtools`; known: common",
            ),
            (
                "/workspace/context?workspace=..%2Fetc",
                StatusCode::BAD_REQUEST,
                "`../etc` is not a valid scope name: use only letters, digits, `.`, `_` and `-`",
            ),
            ("/workspace/context", StatusCode::BAD_REQUEST, "missing parameter `workspace`"),
            ("/workspace/context?workspace=devtools&format=xml", StatusCode::BAD_REQUEST, "format: `xml` is not one of yaml, json"),
            (
                "/workspace/context?workspace=devtools&include_defaults=maybe",
                StatusCode::BAD_REQUEST,
                "include_defaults: `maybe` is not true or false",
            ),
            ("/workspace/search?query=%20", StatusCode::BAD_REQUEST, "empty query: give some words to search for"),
            (
                "/workspace/search?query=x&kinds=entry,widget",
                StatusCode::BAD_REQUEST,
                "unknown kind `widget`; known kinds: overview, topic_overview, entry, rule, skill, doc, memory, server, tool",
            ),
            ("/nowhere", StatusCode::NOT_FOUND, "no route GET /nowhere"),
        ];
        for (path, status, message) in cases {
            let r = get(path).bearer_auth(&token).send().await.unwrap();
            assert_eq!(r.status(), status, "{path}");
            assert_eq!(r.headers()[CONTENT_TYPE], "application/json", "{path}");
            let v: Value = r.json().await.unwrap();
            assert_eq!(v["error"], message, "{path}");
        }
        let r = get("/workspace/context?workspace=devtools&bogus=1").bearer_auth(&token).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        let v: Value = r.json().await.unwrap();
        assert!(v["error"].as_str().unwrap().contains("unknown parameter `bogus`"), "{v}");

        // Search: filters as comma-separated lists.
        let r = get("/workspace/search?query=%E6%8E%A5%E7%B6%9A&kinds=entry,overview&format=json")
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["query"], "接続");
        assert_eq!(v["results"][0]["refId"], "resources/workspaces/nihongo/mobile/_lessons/260915-connection-pool.md");

        // Over 1 MiB: 413, announced or not.
        let big = vec![b' '; (1 << 20) + 1];
        let r = http.post(format!("{url}/mcp")).bearer_auth(&token).body(big.clone()).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"], "request body over 1048576 bytes");
        assert_eq!(chunked_post_status(&url, &token, &big), 413);
        // Just under the limit gets through to the MCP service (which then rejects the
        // non-JSON body itself).
        let r = http
            .post(format!("{url}/mcp"))
            .bearer_auth(&token)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(vec![b' '; 1 << 20])
            .send()
            .await
            .unwrap();
        assert_ne!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);

        // /metrics counts what happened.
        let r = get("/metrics").bearer_auth(&token).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[CONTENT_TYPE], "text/plain; version=0.0.4; charset=utf-8");
        let metrics = r.text().await.unwrap();
        for line in [
            "tmws_index_ready 1",
            "tmws_index_items{kind=\"entry\"} 20",
            "tmws_index_items{kind=\"overview\"} 6",
            "tmws_memory_entries{namespace=\"long-term\"} 3",
            "tmws_memory_entries{namespace=\"short-term\"} 1",
            "tmws_http_requests_total{route=\"/workspace/context\",status=\"401\"} 2",
            "tmws_http_requests_total{route=\"/workspace/context\",status=\"200\"} 3",
            "tmws_http_requests_total{route=\"/workspace/context\",status=\"404\"} 2",
            "tmws_http_requests_total{route=\"/workspace/context\",status=\"400\"} 5",
            "tmws_http_requests_total{route=\"/workspace/search\",status=\"200\"} 1",
            "tmws_http_requests_total{route=\"/mcp\",status=\"413\"} 2",
            "tmws_search_latency_seconds_count 2",
            "tmws_context_latency_seconds_count 6",
            "tmws_pool_size 0",
            "tmws_pool_connect_latency_seconds_count 0",
            "tmws_tool_calls_total{ok=\"true\"} 0",
        ] {
            assert!(metrics.lines().any(|l| l == line), "no `{line}` in\n{metrics}");
        }
        // (/health was also asked while waiting for the first sync.)
        assert!(metrics.lines().any(|l| l.starts_with("tmws_http_requests_total{route=\"/health\",status=\"200\"} ")));
    });
}

/// POSTs `body` to `/mcp` with chunked transfer encoding (no Content-Length) over a plain
/// socket and returns the status code.
fn chunked_post_status(url: &str, token: &str, body: &[u8]) -> u16 {
    let addr = url.strip_prefix("http://").unwrap();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    for chunk in body.chunks(64 * 1024) {
        // The server may answer and close before the whole body is sent.
        if write!(s, "{:x}\r\n", chunk.len())
            .and_then(|()| s.write_all(chunk))
            .and_then(|()| s.write_all(b"\r\n"))
            .is_err()
        {
            break;
        }
    }
    let _ = s.write_all(b"0\r\n\r\n");
    let mut status_line = String::new();
    BufReader::new(s).read_line(&mut status_line).unwrap();
    status_line.split(' ').nth(1).unwrap().parse().unwrap()
}

#[test]
fn mcp_over_http_lists_the_tools_and_answers_like_the_cli() {
    let root = TestRoot::sample();
    let cli = root.run(&["context", "-w", "nihongo", "-d", "mobile"]).stdout;
    let server = Server::start(&root, Some("s3cret-token"));
    assert!(!root.path().join(".tmws/cache/token").exists(), "TMWS_TOKEN is used, no file is made");
    runtime().block_on(async {
        let mcp_url = format!("{}/mcp", server.url);
        let transport = |token: &str| {
            StreamableHttpClientTransport::with_client(
                client(),
                StreamableHttpClientTransportConfig::with_uri(mcp_url.as_str()).auth_header(token),
            )
        };
        // Without the right token the client cannot even initialize.
        assert!(().serve(transport("wrong")).await.is_err());

        let session = ().serve(transport("s3cret-token")).await.expect("initialize");
        assert_eq!(session.peer_info().unwrap().server_info.as_ref().unwrap().name, "tmws");
        let tools = session.list_all_tools().await.unwrap();
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        names.sort_unstable();
        assert_eq!(names, super::util::MCP_TOOLS);

        let call = |v: Value| CallToolRequestParams::new("workspace_get_context").with_arguments(args(v));
        let r = session.call_tool(call(json!({"workspace": "nihongo", "domain": "mobile"}))).await.unwrap();
        assert_eq!(r.is_error, Some(false));
        assert_eq!(text(&r), cli);
        let r = session.call_tool(call(json!({"workspace": "nope"}))).await.unwrap();
        assert_eq!((r.is_error, text(&r).as_str()), (Some(true), "unknown workspace `nope`; known: devtools, nihongo"));

        // Defaults sent twice in one session are counted once as redundant; a second
        // session starts afresh.
        session.call_tool(call(json!({"workspace": "nihongo"}))).await.unwrap();
        let other = ().serve(transport("s3cret-token")).await.expect("second session");
        other.call_tool(call(json!({"workspace": "nihongo"}))).await.unwrap();
        other
            .call_tool(call(json!({"workspace": "nihongo", "include_defaults": false, "topics": ["lessons"]})))
            .await
            .unwrap();
        let metrics = client()
            .get(format!("{}/metrics", server.url))
            .bearer_auth("s3cret-token")
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(metrics.lines().any(|l| l == "tmws_defaults_redundant_total 1"), "{metrics}");
        other.cancel().await.unwrap();
        session.cancel().await.unwrap();
    });
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
    let server = Server::start(&root, None);
    let token = root.read(".tmws/cache/token");
    let url = server.url.clone();
    let rt = runtime();
    // An open MCP session (with its event stream) does not hold the server up.
    let session = rt.block_on(async {
        let transport = StreamableHttpClientTransport::with_client(
            client(),
            StreamableHttpClientTransportConfig::with_uri(format!("{url}/mcp")).auth_header(token.trim()),
        );
        ().serve(transport).await.expect("initialize")
    });
    let (code, stderr) = server.terminate();
    assert_eq!(code, Some(0), "{stderr}");
    drop(session);
    // A second start keeps the token it made the first time.
    let again = Server::start(&root, None);
    assert_eq!(root.read(".tmws/cache/token"), token);
    let (code, _) = again.terminate();
    assert_eq!(code, Some(0));
}

#[test]
fn memory_routes_add_search_get_and_delete() {
    let root = TestRoot::sample();
    let server = Server::start(&root, Some("tok"));
    let url = server.url.clone();
    runtime().block_on(async {
        let http = client();
        let r = http.post(format!("{url}/memory")).body("{\"content\":\"x\"}").send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);

        let body = json!({"content": "The REST staging cluster uses api_key=XYZ123 for deploys.", "namespace": "long-term", "tags": ["rest"]});
        let r = http.post(format!("{url}/memory?format=json")).bearer_auth("tok").body(body.to_string()).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let added: Value = r.json().await.unwrap();
        let id = added["id"].as_str().unwrap().to_owned();
        assert_eq!((added["namespace"].as_str(), added["redacted"].as_u64()), (Some("long-term"), Some(1)));
        assert!(!root.read(".tmws/memory/long-term.jsonl").contains("XYZ123"));

        // Found by the next search, or that search says it is stale (never a silent miss).
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let r = http.get(format!("{url}/memory/search?query=REST%20staging%20cluster&format=json")).bearer_auth("tok").send().await.unwrap();
            let v: Value = r.json().await.unwrap();
            if v["results"][0]["id"] == id.as_str() {
                break;
            }
            assert_eq!(v["stale"], true, "a miss must say stale: {v}");
            assert!(Instant::now() < deadline, "never found: {v}");
        }
        let r = http.get(format!("{url}/memory/{id}?include_content=true&format=json")).bearer_auth("tok").send().await.unwrap();
        let got: Value = r.json().await.unwrap();
        assert_eq!(got["content"], "The REST staging cluster uses api_key=[REDACTED] for deploys.");
        assert_eq!(got["tags"], json!(["rest"]));
        let r = http.get(format!("{url}/memory/stats?format=json")).bearer_auth("tok").send().await.unwrap();
        let stats: Value = r.json().await.unwrap();
        assert_eq!(stats["by_namespace"]["long-term"], 4);

        let r = http.delete(format!("{url}/memory/{id}?format=json")).bearer_auth("tok").send().await.unwrap();
        let v: Value = r.json().await.unwrap();
        assert_eq!(v, json!({"id": id, "namespace": "long-term", "deleted": true}));
        // Deleting again (once the watcher has applied the delete) is a 404.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let r = http.delete(format!("{url}/memory/{id}")).bearer_auth("tok").send().await.unwrap();
            if r.status() == StatusCode::NOT_FOUND {
                let v: Value = r.json().await.unwrap();
                assert_eq!(v["error"], format!("no memory `{id}`"));
                break;
            }
            assert!(Instant::now() < deadline, "still there: {}", r.status());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }

        // Bad bodies: a clear 400, and 413 over 1 MiB.
        for (body, message) in [
            ("not json", "body: expected ident at line 1 column 2"),
            ("{\"content\":\"x\",\"colour\":1}", "unknown parameter `colour`, expected one of `content`, `namespace`, `summary`, `tags`, `source`, `kind`, `key`, `importance`, `agent`, `format`"),
            ("{\"content\":\"  \"}", "empty content: give the text to remember"),
        ] {
            let r = http.post(format!("{url}/memory")).bearer_auth("tok").body(body).send().await.unwrap();
            assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{body}");
            let v: Value = r.json().await.unwrap();
            assert_eq!(v["error"], message);
        }
        let big = json!({"content": "x".repeat(1 << 20)}).to_string();
        let r = http.post(format!("{url}/memory")).bearer_auth("tok").body(big).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    });
}
