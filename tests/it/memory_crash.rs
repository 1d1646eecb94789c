//! Memory logs under stress, with real processes: four MCP servers appending 2,500 entries
//! each at once, writers killed with SIGKILL while they append, and a cleanup killed with
//! SIGKILL at many points of its rewrite.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

use super::util::{Output, TestRoot};

fn json(out: &Output) -> Value {
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// The ids of a log's `add` lines; panics on a line that is not valid JSON.
fn added_ids(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .filter(|v| v["op"] == "add")
        .map(|v| v["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn four_mcp_servers_appending_2500_entries_each_make_exactly_10000() {
    const WORKERS: usize = 4;
    const EACH: usize = 2_500;
    // Without fsync: what is under test is that concurrent appends interleave whole lines
    // and lose none; the writers' fsyncs would only queue behind the index's commits. No
    // session entries either: each line here is one call's.
    let root = TestRoot::new().file(".tmws/config.toml", "[memory]\nfsync = false\n[sessions]\nauto = false\n");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let mut tasks = Vec::new();
        for w in 0..WORKERS {
            let path = root.path().to_path_buf();
            tasks.push(tokio::spawn(async move {
                let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tmws"));
                cmd.env("TMWS_CONFIG_HOME", super::util::user_config());
                cmd.arg("--root").arg(&path).arg("mcp").env_remove("TMWS_LOG");
                let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.expect("initialize");
                for i in 0..EACH {
                    let args = json!({"content": format!("worker {w} wrote entry {i}"), "namespace": "long-term"});
                    let call =
                        CallToolRequestParams::new("memory_add").with_arguments(args.as_object().unwrap().clone());
                    let r = client.call_tool(call).await.unwrap();
                    assert_eq!(r.is_error, Some(false), "{r:?}");
                }
                client.cancel().await.unwrap();
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    let ids = added_ids(&root.read(".tmws/memory/long-term.jsonl"));
    assert_eq!(ids.len(), WORKERS * EACH, "one valid add line per call, nothing else");
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), WORKERS * EACH);
    let stats = json(&root.run(&["--json", "memory", "stats"]));
    assert_eq!((&stats["total"], &stats["dead_lines"]), (&json!(WORKERS * EACH), &json!(0)));
    let found = json(&root.run(&["--json", "memory", "search", "worker 3 wrote entry 2499", "--limit", "1"]));
    assert_eq!(found["found"], 1);
}

/// A small deterministic sequence of delays.
fn delays(n: usize, max_ms: u64) -> impl Iterator<Item = Duration> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n).map(move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        Duration::from_millis(x % max_ms)
    })
}

#[test]
fn writers_killed_while_they_append_lose_no_acknowledged_entry() {
    let root = TestRoot::new();
    let path = root.path().to_path_buf();
    // A steady writer beside, so that kills land while the lock is held or awaited.
    let steady = std::thread::spawn(move || {
        (0..60)
            .map(|i| {
                let out = super::util::tmws(
                    &path,
                    &["--json", "memory", "add", &format!("steady entry {i}"), "-n", "long-term"],
                );
                json(&out)["id"].as_str().unwrap().to_owned()
            })
            .collect::<Vec<_>>()
    });
    let mut acknowledged = Vec::new();
    let mut killed = 0;
    for (i, delay) in delays(60, 25).enumerate() {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tmws"))
            .env("TMWS_CONFIG_HOME", super::util::user_config())
            .args(["--json", "memory", "add", &format!("victim entry {i}"), "-n", "long-term"])
            .current_dir(root.path())
            .env_remove("TMWS_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        if i % 3 != 0 {
            let _ = child.kill();
            killed += 1;
        }
        let out = child.wait_with_output().unwrap();
        if out.status.success() {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            acknowledged.push(v["id"].as_str().unwrap().to_owned());
        }
    }
    acknowledged.extend(steady.join().unwrap());
    assert!(killed >= 40 && acknowledged.len() >= 80, "{killed} killed, {} acknowledged", acknowledged.len());
    // Every line is valid; every acknowledged entry is there; appends go on.
    let ids: BTreeSet<String> = added_ids(&root.read(".tmws/memory/long-term.jsonl")).into_iter().collect();
    for id in &acknowledged {
        assert!(ids.contains(id), "acknowledged {id} was lost");
    }
    json(&root.run(&["--json", "memory", "add", "after the kills", "-n", "long-term"]));
    let stats = json(&root.run(&["--json", "memory", "stats"]));
    assert_eq!(stats["total"], ids.len() + 1);
}

#[test]
fn a_cleanup_killed_at_any_point_leaves_the_old_log_or_the_new_one() {
    const N: usize = 20_000;
    let root = TestRoot::new();
    let mut old = String::new();
    let mut new = String::new();
    for i in 0..N {
        let content = format!("entry number {i} with some words to make the line longer than a few bytes");
        let line = format!(
            "{}\n",
            json!({"op": "add", "id": format!("m_{i:012x}"), "ns": "long-term", "at": "2026-11-01T00:00:00Z",
                   "expires_at": "2036-11-01T00:00:00Z", "kind": "note", "content": content, "summary": content,
                   "hash": "h"})
        );
        old.push_str(&line);
        if i % 2 == 1 {
            // A tombstone: cleanup keeps it, and drops the add it deleted.
            let delete =
                format!("{}\n", json!({"op": "delete", "id": format!("m_{i:012x}"), "at": "2026-11-02T00:00:00Z"}));
            old.push_str(&delete);
            new.push_str(&delete);
        } else {
            new.push_str(&line);
        }
    }
    let log = root.path().join(".tmws/memory/long-term.jsonl");
    let (mut saw_old, mut saw_new) = (0, 0);
    for delay in delays(10, 400) {
        write(&log, &old);
        let mut child = Command::new(env!("CARGO_BIN_EXE_tmws"))
            .env("TMWS_CONFIG_HOME", super::util::user_config())
            .args(["memory", "cleanup"])
            .current_dir(root.path())
            .env_remove("TMWS_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();
        let now = std::fs::read_to_string(&log).unwrap();
        if now == old {
            saw_old += 1;
        } else {
            assert!(now == new, "after a kill at {delay:?} the log is neither the old nor the new one");
            saw_new += 1;
        }
        // The lock died with the process: a writer gets it at once.
        json(&root.run(&["--json", "memory", "add", "an add after the kill", "-n", "short-term"]));
    }
    assert_eq!(saw_old + saw_new, 10);
    // A cleanup that is left alone finishes the job.
    write(&log, &old);
    json(&root.run(&["--json", "memory", "cleanup"]));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), new);
    assert_eq!(json(&root.run(&["--json", "memory", "stats"]))["by_namespace"]["long-term"], N / 2);
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}
