//! Web view budgets (docs/performance.md): the first byte of each main page of `/ui` on a
//! root of 10k documents and 100k memories (budget: 50 ms), and each page's weight
//! (budget: 200 KB, nothing from another origin).
//!
//! Run with `cargo bench --bench ui`. A real `tmws serve` process answers over loopback,
//! signed in once. Each page's weight and the p50 and p95 of its first byte over 40
//! requests are printed first; divan's samples then time whole requests over a fresh
//! connection each (connect, first byte and the rest: pages are rendered whole before they
//! are sent, so the rest follows at once). The root is generated once under the temp
//! folder: the workspace generator's 10k documents and a long-term log of 100k entries, a
//! tenth of them by another agent.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use divan::Bencher;

mod support;

fn main() {
    divan::main();
    // A static is never dropped: the server is stopped here, or it would outlive the bench.
    if let Some(server) = SERVER.get() {
        let mut child = server.child.lock().unwrap_or_else(|e| e.into_inner());
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The token of the bench's server.
const TOKEN: &str = "bench-token-0123456789abcdef0123456789abcdef";

/// 10k documents and 100k memories, indexed, with proposals waiting for review: ten
/// memories and five entries.
fn ui_root() -> PathBuf {
    support::memory::docs_and_memories_root("tmws-bench-ui", "v3", 100_000, |root| {
        let lessons = root.join("resources/workspaces/w3/_lessons");
        std::fs::create_dir_all(&lessons).unwrap();
        for i in 0..5 {
            let entry = format!(
                "---\nname: Proposed lesson {i}\ndescription: Retries need jitter after the pool drains ({i}).\n\
                 author:\n  surface: mcp\n  client: claude-code\nreview: proposed\n---\nJitter.\n"
            );
            std::fs::write(lessons.join(format!("2026-11-0{}-proposed-{i}.md", i + 1)), entry).unwrap();
        }
        // One memory in ten is another agent's, for the author filter; one in 10k waits
        // for review, with a key.
        Box::new(|i| {
            let agent = if i % 10 == 0 { "review-bot" } else { "claude" };
            let review = if i % 10_000 == 5 {
                format!(
                    ",\"key\":\"k{i}\",\"author\":{{\"surface\":\"mcp\",\"client\":\"claude-code\"}},\"review\":\"proposed\""
                )
            } else {
                String::new()
            };
            format!(",\"agent\":\"{agent}\"{review}")
        })
    })
}

/// A running `tmws serve` on the bench root, and a session cookie of its web view.
struct Server {
    child: std::sync::Mutex<std::process::Child>,
    addr: String,
    cookie: String,
}

/// The bench's server, started by the first bench that needs it.
static SERVER: OnceLock<Server> = OnceLock::new();

/// One request over a new connection: the status, the time to the first byte, the body.
fn exchange(addr: &str, request: &str) -> (u16, Duration, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let started = Instant::now();
    s.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(s);
    reader.fill_buf().unwrap();
    let first = started.elapsed();
    let mut head = String::new();
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap() > 2 {
        head.push_str(&line);
        line.clear();
    }
    let mut body = String::new();
    reader.read_to_string(&mut body).unwrap();
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, first, head, body)
}

fn server() -> &'static Server {
    SERVER.get_or_init(|| {
        let root = ui_root();
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tmws"))
            .arg("--root")
            .arg(&root)
            .args(["serve", "--addr", "127.0.0.1:0"])
            .env("TMWS_TOKEN", TOKEN)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line.trim().strip_prefix("listening on http://").unwrap().to_owned();
        loop {
            let (_, _, _, body) =
                exchange(&addr, &format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"));
            if body.contains("\"ready\":true") {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let form = format!("token={TOKEN}");
        let (status, _, head, _) = exchange(
            &addr,
            &format!(
                "POST /ui/signin HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded\r\n\
Content-Length: {}\r\nConnection: close\r\n\r\n{form}",
                form.len()
            ),
        );
        assert_eq!(status, 303, "{head}");
        let cookie = head
            .lines()
            .find_map(|l| l.strip_prefix("set-cookie: "))
            .and_then(|c| c.split(';').next())
            .unwrap()
            .to_owned();
        let server = Server { child: std::sync::Mutex::new(child), addr, cookie };
        for (name, path) in PAGES {
            let (status, _, _, body) = get(&server, path);
            assert_eq!(status, 200, "{path}: {body}");
            assert!(!body.contains("src=\"http") && !body.contains("href=\"http"), "{path} names another origin");
            if name == "review" {
                assert_eq!(body.matches("badge proposed").count(), 15, "the review page lists every proposal");
            }
            let mut firsts: Vec<Duration> = (0..40).map(|_| get(&server, path).1).collect();
            firsts.sort_unstable();
            eprintln!(
                "{name:<20} {:>7} bytes  first byte p50 {:>6.2} ms  p95 {:>6.2} ms  ({path})",
                body.len(),
                firsts[19].as_secs_f64() * 1e3,
                firsts[37].as_secs_f64() * 1e3
            );
        }
        // The review page after each write to the log: an update of a memory appended
        // before each request, which the server's index takes in too.
        let log = root.join(".tmws/memory/long-term.jsonl");
        let first = std::fs::read_to_string(&log).unwrap().lines().next().map(str::to_owned).unwrap();
        let id = serde_json::from_str::<serde_json::Value>(&first).unwrap()["id"].as_str().unwrap().to_owned();
        let mut firsts: Vec<Duration> = (0..40)
            .map(|i| {
                let update = format!(
                    "{{\"op\":\"update\",\"id\":\"{id}\",\"at\":\"2026-11-02T00:00:{i:02}Z\",\"set\":{{\"importance\":0.{}}}}}\n",
                    i % 9 + 1
                );
                std::io::Write::write_all(&mut std::fs::File::options().append(true).open(&log).unwrap(), update.as_bytes())
                    .unwrap();
                get(&server, "/ui/review").1
            })
            .collect();
        firsts.sort_unstable();
        eprintln!(
            "{:<20} {:>13}  first byte p50 {:>6.2} ms  p95 {:>6.2} ms  (/ui/review after each write)",
            "review_after_write",
            "",
            firsts[19].as_secs_f64() * 1e3,
            firsts[37].as_secs_f64() * 1e3
        );
        server
    })
}

fn get(server: &Server, path: &str) -> (u16, Duration, String, String) {
    exchange(
        &server.addr,
        &format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nConnection: close\r\n\r\n",
            server.addr, server.cookie
        ),
    )
}

/// The main pages, each with a name for the bench's list.
const PAGES: [(&str, &str); 11] = [
    ("overview", "/ui"),
    ("workspaces", "/ui/workspaces"),
    ("workspace_scope", "/ui/workspaces?scope=w3/d4"),
    ("document", "/ui/doc?ref=resources/workspaces/w3/d4/r0/OVERVIEW.md"),
    ("search", "/ui/search?q=memory+cache+index"),
    ("memories", "/ui/memories"),
    ("memories_by_author", "/ui/memories?author=review-bot"),
    ("memories_by_tag", "/ui/memories?tag=cache"),
    ("memories_stale", "/ui/memories?stale=1"),
    ("review", "/ui/review"),
    ("servers", "/ui/servers"),
];

/// The time to the first byte of `path`.
fn first_byte(bencher: Bencher, path: &str) {
    let server = server();
    bencher.bench_local(|| {
        let (status, first, _, _) = get(server, path);
        assert_eq!(status, 200);
        first
    });
}

#[divan::bench(args = PAGES.map(|(name, _)| name), sample_count = 100, sample_size = 1)]
fn first_byte_10k_docs_100k_memories(bencher: Bencher, page: &str) {
    let path = PAGES.iter().find(|(name, _)| *name == page).map(|(_, p)| *p).unwrap();
    first_byte(bencher, path);
}
