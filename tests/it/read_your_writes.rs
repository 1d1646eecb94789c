//! Read-your-writes under load: a memory whose add was answered is found by the search
//! issued right after it, fresh (not `stale`), however busy the machine, whether the add
//! came through the same MCP session or from a `tmws memory add` in another process.
//! Each test keeps every core busy several times over while it runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use super::clients::Mcp;
use super::util::TestRoot;

/// Busy threads, four for each core, until dropped (also when a test fails and unwinds).
struct Hog {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Hog {
    fn start() -> Hog {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..4 * cores)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                    }
                })
            })
            .collect();
        Hog { stop, threads }
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A word no other memory has: `marker` followed by `i` spelled in letters (digits would
/// be split off by the analyzer).
fn word(marker: &str, i: usize) -> String {
    let letters: String = i.to_string().bytes().map(|d| char::from(b'a' + (d - b'0'))).collect();
    format!("{marker}{letters}")
}

/// Searches for `word` in the session and says what went wrong, if anything: the memory
/// `id` missing, or the answer marked stale.
fn search_misses(mcp: &Mcp, word: &str, id: &str) -> Option<String> {
    let v: Value =
        serde_json::from_str(mcp.call("memory_search", json!({"query": word, "format": "json"})).text()).unwrap();
    let found = v["results"].as_array().is_some_and(|r| r.iter().any(|m| m["id"] == id));
    (!found || v.get("stale").is_some()).then(|| format!("{word} ({id}): {v}"))
}

/// The machine's load, for the failure message.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim().to_owned()
}

/// A server whose first sync is done.
fn started(root: &TestRoot) -> Mcp {
    let mcp = Mcp::start(root.path());
    mcp.call_fresh("memory_search", json!({"query": "anything"}));
    mcp
}

#[test]
fn a_search_right_after_an_add_in_the_same_session_finds_it_under_load() {
    let root = TestRoot::new();
    let mcp = started(&root);
    let hog = Hog::start();
    let misses: Vec<String> = (0..40)
        .filter_map(|i| {
            let word = word("marsupial", i);
            let added =
                mcp.call("memory_add", json!({"content": format!("The deploy note about {word}."), "format": "json"}));
            let added: Value = serde_json::from_str(added.text()).unwrap();
            search_misses(&mcp, &word, added["id"].as_str().unwrap())
        })
        .collect();
    drop(hog);
    assert!(misses.is_empty(), "{} of 40 missed (load {}):\n{}", misses.len(), load(), misses.join("\n"));
    mcp.stop();
}

#[test]
fn a_server_search_right_after_a_cli_add_finds_it_under_load() {
    let root = TestRoot::new();
    let mcp = started(&root);
    let hog = Hog::start();
    let misses: Vec<String> = (0..40)
        .filter_map(|i| {
            let word = word("wallaby", i);
            let out = root.run(&["--json", "memory", "add", &format!("The release note about {word}.")]);
            assert_eq!(out.code, 0, "{}", out.stderr);
            let added: Value = serde_json::from_str(&out.stdout).unwrap();
            search_misses(&mcp, &word, added["id"].as_str().unwrap())
        })
        .collect();
    drop(hog);
    assert!(misses.is_empty(), "{} of 40 missed (load {}):\n{}", misses.len(), load(), misses.join("\n"));
    mcp.stop();
}
