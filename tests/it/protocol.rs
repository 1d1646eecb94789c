//! The protocols as a hostile or careless client meets them: raw bytes on `tmws mcp`'s
//! stdin, a stderr nobody reads, and HTTP requests `tmws serve` must refuse.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::mpsc;

use serde_json::{Value, json};

use super::clients::Serve;
use super::util::TestRoot;

/// `tmws mcp` on `root` with stdin and stdout piped and stderr piped (and never read).
fn spawn_mcp(root: &Path, log: Option<&str>) -> (Child, ChildStderr) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tmws"));
    cmd.env("TMWS_CONFIG_HOME", super::util::user_config())
        .arg("mcp")
        .current_dir(root)
        .env_remove("TMWS_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(level) = log {
        cmd.env("TMWS_LOG", level);
    }
    let mut child = cmd.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    (child, stderr)
}

/// The `initialize` request and `initialized` notification, as lines.
fn handshake() -> Vec<u8> {
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}});
    format!("{init}\n{}\n", json!({"jsonrpc":"2.0","method":"notifications/initialized"})).into_bytes()
}

/// Writes the handshake and `lines` (raw bytes, each ended by `\n` here) to `tmws mcp`'s
/// stdin, closes it, and returns every line of stdout as JSON, in order.
fn exchange(root: &Path, lines: &[Vec<u8>]) -> Vec<Value> {
    let (mut child, _stderr) = spawn_mcp(root, None);
    let mut stdin = child.stdin.take().unwrap();
    let mut bytes = handshake();
    for l in lines {
        bytes.extend_from_slice(l);
        bytes.push(b'\n');
    }
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&bytes);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn tool_call(id: i64, tool: &str, args: Value) -> Vec<u8> {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}})
        .to_string()
        .into_bytes()
}

#[test]
fn a_line_that_is_not_json_gets_a_parse_error_with_a_null_id_and_the_session_goes_on() {
    let root = TestRoot::new();
    let mut not_utf8 = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"".to_vec();
    not_utf8.extend_from_slice(b"\xff\xfe\"}");
    let deep = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{{\"x\":{}{}}}}}",
        "[".repeat(200),
        "]".repeat(200)
    );
    let truncated = b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"".to_vec();
    let answers = exchange(
        root.path(),
        &[
            not_utf8,
            deep.into_bytes(),
            truncated,
            b"[{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}]".to_vec(),
            b"{\"no\":\"message\"}".to_vec(),
            tool_call(5, "memory_add", json!({"content": "a note after the garbage"})),
        ],
    );
    let errors: Vec<(Value, i64, String)> = answers
        .iter()
        .filter(|a| a.get("error").is_some())
        .map(|a| {
            (a["id"].clone(), a["error"]["code"].as_i64().unwrap(), a["error"]["message"].as_str().unwrap().into())
        })
        .collect();
    assert_eq!(
        errors,
        [
            (Value::Null, -32700, "parse error: the line is not UTF-8 (byte 46)".into()),
            (Value::Null, -32700, "parse error: arrays and objects nested deeper than 128".into()),
            (Value::Null, -32700, "parse error: EOF while parsing an object at line 2 column 0".into()),
            (
                Value::Null,
                -32600,
                "not a JSON-RPC message: a JSON object with `jsonrpc`, `method` and `id` was expected".into()
            ),
            (Value::Null, -32600, "Invalid request".into()),
        ],
        "{answers:#?}"
    );
    let added = answers.iter().find(|a| a["id"] == 5).unwrap_or_else(|| panic!("no answer to 5: {answers:#?}"));
    assert_eq!(added["result"]["isError"], false, "{added}");
    assert!(root.read(".tmws/memory/short-term.jsonl").contains("a note after the garbage"));
}

#[test]
fn two_requests_with_one_id_each_get_an_answer_or_an_error() {
    let root = TestRoot::new();
    let answers = exchange(
        root.path(),
        &[
            tool_call(7, "memory_add", json!({"content": "the first of two with id 7"})),
            tool_call(7, "memory_add", json!({"content": "the second of two with id 7"})),
            tool_call(8, "memory_stats", json!({"format": "json"})),
        ],
    );
    let sevens: Vec<&Value> = answers.iter().filter(|a| a["id"] == 7).collect();
    assert_eq!(sevens.len(), 2, "one answer each: {answers:#?}");
    assert!(sevens.iter().any(|a| a["result"]["isError"] == false), "{answers:#?}");
    // The second is answered (when the first was done before it came) or refused by
    // name (when it came while the first ran): never silence.
    let log = root.read(".tmws/memory/short-term.jsonl");
    assert!(log.contains("the first of two with id 7"), "{log}");
    match sevens.iter().find(|a| a.get("error").is_some()) {
        Some(refused) => {
            assert_eq!(
                refused["error"],
                json!({"code": -32600, "message": "request id 7 is in use by a request not yet answered: give each \
request its own id"})
            );
            assert!(!log.contains("the second of two with id 7"), "a refused request does nothing: {log}");
        }
        None => assert!(log.contains("the second of two with id 7"), "{log}"),
    }
    assert!(answers.iter().any(|a| a["id"] == 8 && a["result"]["isError"] == false), "{answers:#?}");
}

#[test]
fn tmws_mcp_keeps_answering_when_nobody_reads_its_stderr() {
    const REQUESTS: usize = 3_000;
    let root = TestRoot::new();
    // Debug logs of 3,000 requests are far more than a pipe holds (~0.9 MB against 64 KiB).
    let (mut child, stderr) = spawn_mcp(root.path(), Some("debug"));
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (answered, answers) = mpsc::channel::<Value>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if answered.send(serde_json::from_str(&line).unwrap()).is_err() {
                break;
            }
        }
    });
    let writer = std::thread::spawn(move || {
        let mut bytes = handshake();
        for id in 1..=REQUESTS {
            let request = if id % 10 == 0 {
                tool_call(id as i64, "memory_stats", json!({}))
            } else {
                json!({"jsonrpc":"2.0","id":id,"method":"ping"}).to_string().into_bytes()
            };
            bytes.extend_from_slice(&request);
            bytes.push(b'\n');
        }
        stdin.write_all(&bytes).unwrap();
        stdin
    });
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < REQUESTS + 1 {
        // A stuck server answers nothing more: fail instead of waiting for ever.
        let answer = answers
            .recv_timeout(super::util::PATIENCE)
            .unwrap_or_else(|_| panic!("tmws mcp stopped answering after {} answers", seen.len()));
        assert!(answer.get("error").is_none(), "{answer}");
        seen.insert(answer["id"].as_u64().unwrap());
    }
    assert_eq!(seen.len(), REQUESTS + 1, "every request and initialize answered once");
    // Once someone reads stderr, the log says how many lines it could not write.
    let stdin = writer.join().unwrap();
    let mut told = None;
    for line in BufReader::new(stderr).lines() {
        let line = line.unwrap();
        if line.contains("log lines dropped") {
            told = Some(line);
            break;
        }
    }
    let told = told.expect("the dropped lines are reported");
    assert!(told.starts_with("tmws: ") && told.ends_with(" log lines dropped: stderr was not read"), "{told}");
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    reader.join().unwrap();
}

/// Sends `request` as it is to `tmws serve` over a raw socket; returns the status code.
fn raw_status(serve: &Serve, request: &str) -> u16 {
    let addr = serve.url.strip_prefix("http://").unwrap();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(request.replace("{addr}", addr).replace("{token}", &serve.token).as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or_else(|| panic!("{answer}"))
}

#[test]
fn serve_answers_400_to_two_host_or_two_origin_headers() {
    let root = TestRoot::new();
    let serve = Serve::start(root.path(), None);
    let get = |headers: &str| {
        raw_status(
            &serve,
            &format!(
                "GET /memory/stats HTTP/1.1\r\n{headers}Authorization: Bearer {{token}}\r\nConnection: close\r\n\r\n"
            ),
        )
    };
    assert_eq!(get("Host: {addr}\r\n"), 200);
    assert_eq!(get("Host: {addr}\r\nOrigin: http://{addr}\r\n"), 200);
    assert_eq!(get("Host: {addr}\r\nHost: {addr}\r\n"), 400);
    assert_eq!(get("Host: {addr}\r\nHost: evil.example\r\n"), 400);
    assert_eq!(get("Host: {addr}\r\nOrigin: http://{addr}\r\nOrigin: http://evil.example\r\n"), 400);
    assert_eq!(get("Host: {addr}\r\nOrigin: http://{addr}\r\nOrigin: http://{addr}\r\n"), 400);
    let mcp = "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 2\r\n\
Connection: close\r\n\r\n{}";
    assert_eq!(raw_status(&serve, mcp), 400);
}
