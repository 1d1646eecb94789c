//! Memory maintenance and ranking against real logs and the real binary: cleanup and
//! automatic compaction, clear, prune by decayed importance, decay and trust in search,
//! the default branch filter, trust verifications, gc-branches, and a Japanese memory.

use chrono::{Duration, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::util::{Output, TestRoot};

fn json(out: &Output) -> Value {
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

fn ids(v: &Value) -> Vec<String> {
    v["results"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect()
}

fn ago(days: i64) -> String {
    (Utc::now() - Duration::days(days)).to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// One `add` line, as a log holds it.
fn add_line(id: &str, at: &str, content: &str, extra: Value) -> String {
    let mut v = json!({
        "op": "add", "id": id, "ns": "long-term", "at": at, "expires_at": ago(-3650), "kind": "note",
        "content": content, "summary": content, "hash": blake3::hash(content.as_bytes()).to_hex().to_string(),
    });
    if let (Some(m), Value::Object(e)) = (v.as_object_mut(), extra) {
        m.extend(e);
    }
    format!("{v}\n")
}

#[test]
fn cleanup_keeps_the_live_lines_byte_for_byte_and_drops_the_rest() {
    let now = ago(0);
    let lines = [
        add_line("m_00000000000a", &now, "alpha stays", json!({})),
        add_line("m_00000000000b", &now, "bravo is deleted", json!({})),
        format!("{}\n", json!({"op": "delete", "id": "m_00000000000b", "at": now})),
        add_line("m_00000000000c", &ago(30), "charlie expired", json!({"expires_at": ago(1)})),
        "this line is not JSON\n".to_owned(),
        format!("{}\n", json!({"op": "update", "id": "m_00000000000a", "at": now, "set": {"tags": ["kept"]}})),
        add_line("m_00000000000d", &now, "delta stays", json!({"git": {"branch": "main"}})),
        format!(
            "{}\n",
            json!({"op": "link", "id": "m_00000000000d", "at": now, "commit": "abc", "files_changed": ["a.rs"]})
        ),
        "{\"op\":\"add\",\"id\":\"m_torn".to_owned(),
    ];
    let log = lines.concat();
    let root = TestRoot::new().file(".tmws/memory/long-term.jsonl", &log);
    let before = json(&root.run(&["--json", "memory", "stats"]));
    assert_eq!(
        (&before["total"], &before["expired_pending"], &before["dead_lines"]),
        (&json!(2), &json!(1), &json!(2)),
        "dead: bravo's add, charlie (bravo's delete is a tombstone and the bad line is kept; the torn one is not a line yet)"
    );

    let done = json(&root.run(&["--json", "memory", "cleanup"]));
    // The bad line stays where it was, byte for byte: a person's hand edit to fix; bravo's
    // delete stays as a tombstone, so that a branch that still holds bravo cannot bring it
    // back.
    let expected =
        [lines[0].clone(), lines[2].clone(), lines[4].clone(), lines[5].clone(), lines[6].clone(), lines[7].clone()]
            .concat();
    assert_eq!(root.read(".tmws/memory/long-term.jsonl"), expected);
    assert_eq!(done["removed_expired"], 1);
    assert_eq!(done["compacted_bytes"], log.len() - expected.len());
    let after = json(&root.run(&["--json", "memory", "stats"]));
    assert_eq!(
        (&after["total"], &after["dead_lines"], &after["log_bytes"]),
        (&json!(2), &json!(0), &json!(expected.len()))
    );
    let mut found = ids(&json(&root.run(&["--json", "memory", "search", "stays", "--branch", "*"])));
    found.sort();
    assert_eq!(found, ["m_00000000000a", "m_00000000000d"]);
    // Nothing left to do: the same bytes.
    let again = json(&root.run(&["--json", "memory", "cleanup"]));
    assert_eq!((&again["removed_expired"], &again["compacted_bytes"]), (&json!(0), &json!(0)));
    assert_eq!(root.read(".tmws/memory/long-term.jsonl"), expected);
}

#[test]
fn a_log_is_compacted_on_its_own_once_most_of_it_is_dead() {
    let root = TestRoot::new().file(".tmws/config.toml", "[memory]\nfsync = false\ncompact_garbage_ratio = 0.5\n");
    // Each add with the same key supersedes the last: one delete and one add line.
    for v in 1..=40 {
        json(&root.run(&["--json", "memory", "add", &format!("the deploy day is now day {v}"), "--key", "deploy/day"]));
    }
    let text = root.read(".tmws/memory/short-term.jsonl");
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // 33 adds make 65 lines: 32 superseded adds (dead), their 32 deletes (tombstones, kept)
    // and the live add: compacted to 33 lines; the 7 adds after it wrote 14 lines.
    assert_eq!(lines.len(), 47, "{text}");
    assert!(lines[..32].iter().all(|l| l["op"] == "delete"), "{text}");
    assert_eq!(lines[32]["content"], "the deploy day is now day 33");
    assert_eq!(lines[46]["content"], "the deploy day is now day 40");
    let stats = json(&root.run(&["--json", "memory", "stats"]));
    assert_eq!((&stats["total"], &stats["dead_lines"]), (&json!(1), &json!(7)));
}

#[test]
fn clear_refuses_without_yes_and_empties_the_namespace_with_it() {
    let root = TestRoot::new();
    json(&root.run(&["--json", "memory", "add", "short one"]));
    json(&root.run(&["--json", "memory", "add", "long one", "-n", "long-term"]));
    let out = root.run(&["memory", "clear", "-n", "short-term"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (2, "tmws: refusing to clear short-term without confirmation: pass --yes (CLI) or confirm: true (MCP)\n")
    );
    assert_eq!(root.read(".tmws/memory/short-term.jsonl").lines().count(), 1);
    let out = root.run(&["memory", "clear", "-n", "nope", "--yes"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.starts_with("tmws: unknown namespace `nope`; known: long-term, short-term"), "{}", out.stderr);

    let done = json(&root.run(&["--json", "memory", "clear", "-n", "short-term", "--yes"]));
    assert_eq!(done, json!({"cleared": 1, "namespaces": ["short-term"]}));
    assert_eq!(root.read(".tmws/memory/short-term.jsonl"), "");
    assert_eq!(ids(&json(&root.run(&["--json", "memory", "search", "one"]))).len(), 1);
    let all = json(&root.run(&["--json", "memory", "clear", "--all", "--yes"]));
    assert_eq!(all, json!({"cleared": 1, "namespaces": ["long-term", "short-term"]}));
    assert_eq!(json(&root.run(&["--json", "memory", "stats"]))["total"], 0);
}

#[test]
fn prune_forgets_what_decayed_below_the_threshold() {
    let log = [
        add_line("m_0000000000f1", &ago(0), "fresh and important", json!({"importance": 0.8})),
        // 60 days at a 30-day half-life: 0.8 × 0.25 = 0.2.
        add_line("m_0000000000f2", &ago(60), "old and once important", json!({"importance": 0.8})),
        add_line("m_0000000000f3", &ago(0), "fresh but minor", json!({"importance": 0.1})),
    ]
    .concat();
    let root = TestRoot::new().file(".tmws/memory/long-term.jsonl", log);
    let out = root.run(&["memory", "prune", "--below", "1.5"]);
    assert_eq!((out.code, out.stderr.as_str()), (2, "tmws: --below 1.5 is outside 0 to 1\n"));
    let first = json(&root.run(&["--json", "memory", "prune", "--below", "0.15"]));
    assert_eq!(first, json!({"pruned": 1, "ids": ["m_0000000000f3"]}));
    let second = json(&root.run(&["--json", "memory", "prune", "--below", "0.3"]));
    assert_eq!(second, json!({"pruned": 1, "ids": ["m_0000000000f2"]}));
    let left = json(&root.run(&["--json", "memory", "search", "important", "--min-score", "0"]));
    assert_eq!(ids(&left), ["m_0000000000f1"]);
    // Each delete says who pruned: the person at the command line.
    let deletes: Vec<(Value, Value)> = root
        .read(".tmws/memory/long-term.jsonl")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|o| o["op"] == "delete")
        .map(|o| (o["id"].clone(), o["author"].clone()))
        .collect();
    assert_eq!(
        deletes,
        [(json!("m_0000000000f3"), json!({"surface": "cli"})), (json!("m_0000000000f2"), json!({"surface": "cli"}))]
    );
}

#[test]
fn search_ranks_by_text_times_decay_and_trust() {
    // The same words, so the same BM25: only age and the writer's trust differ.
    let log = [
        add_line("m_0000000000a1", &ago(10), "cache warmup alpha", json!({"agent": "careful", "importance": 0.5})),
        add_line("m_0000000000b2", &ago(0), "cache warmup bravo", json!({"agent": "sloppy", "importance": 0.5})),
    ]
    .concat();
    let root = TestRoot::new().file(".tmws/memory/long-term.jsonl", log);
    let search = || json(&root.run(&["--json", "memory", "search", "cache warmup", "--min-score", "0"]));
    let scores = |v: &Value| -> Vec<(String, u64)> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["id"].as_str().unwrap().to_owned(), r["score"].as_u64().unwrap()))
            .collect()
    };
    // Both agents unverified (trust 0.5): the newer first; the older decayed by
    // exp(−ln2 × 10/30) = 0.794 → 79 %.
    assert_eq!(scores(&search()), [("m_0000000000b2".to_owned(), 100), ("m_0000000000a1".to_owned(), 79)]);

    // Verifications by several verifiers, three of each counted, each in its own second
    // (tmws records one verification of an agent by a verifier a second).
    let at = |m: usize, s: usize| format!("2026-11-01T10:{m:02}:{s:02}Z");
    let mut trust = String::new();
    for (m, verifier) in ["reviewer", "ci", "qa", "release"].iter().enumerate() {
        for s in 0..4 {
            trust.push_str(&format!(
                "{}\n",
                json!({"agent": "careful", "verifier": verifier, "success": true, "evidence": "tests pass", "at": at(m, s)})
            ));
        }
    }
    for (m, verifier) in ["reviewer", "ci"].iter().enumerate() {
        for s in 0..3 {
            trust.push_str(&format!(
                "{}\n",
                json!({"agent": "sloppy", "verifier": verifier, "success": false, "evidence": "broke the build",
                       "at": at(m + 10, s)})
            ));
        }
    }
    root.write(".tmws/trust.jsonl", &trust);
    let out = root.run(&["trust", "verify", "--agent", "careful", "--success", "--evidence", "x"]);
    assert_eq!(out.stdout, "careful: trust 1.00 (13 successes, 0 failures)\n", "{out:?}");
    let last = root.run(&["trust", "verify", "--agent", "sloppy", "--failure", "--evidence", "token = abc123"]);
    assert_eq!(last.stdout, "sloppy: trust 0.00 (0 successes, 7 failures)\n");
    assert!(!root.read(".tmws/trust.jsonl").contains("abc123"), "evidence is redacted");
    let show = root.run(&["trust", "show"]);
    let lines: Vec<&str> = show.stdout.lines().collect();
    assert_eq!(lines[0], "agent    score  successes  failures  last verified");
    assert!(lines[1].starts_with("careful   1.00         13         0  "), "{}", show.stdout);
    assert!(lines[2].starts_with("sloppy    0.00          0         7  "), "{}", show.stdout);
    // careful: 0.5 × 0.794 × (1 + 0.5 × 1.0) = 0.595; sloppy: 0.5 × (1 + 0.5 × 0) = 0.5 → 84 %.
    assert_eq!(scores(&search()), [("m_0000000000a1".to_owned(), 100), ("m_0000000000b2".to_owned(), 84)]);

    // Reads count, up to what the writer's trust allows: three gets lift a memory by
    // min(1 + 0.05 × 3, 1.5), but never above its writer's cap (its trust, at least the
    // default 0.5). sloppy's is at its cap already: nothing changes.
    for _ in 0..3 {
        json(&root.run(&["--json", "memory", "get", "m_0000000000b2"]));
    }
    assert_eq!(scores(&search()), [("m_0000000000a1".to_owned(), 100), ("m_0000000000b2".to_owned(), 84)]);
    // careful's decayed one comes back up: 0.5 × 0.794 × 1.15 × 1.5 = 0.685 → sloppy 73 %.
    let shown = json(&root.run(&["--json", "memory", "get", "m_0000000000a1"]));
    assert_eq!(shown["id"], "m_0000000000a1");
    for _ in 0..2 {
        json(&root.run(&["--json", "memory", "get", "m_0000000000a1"]));
    }
    assert_eq!(scores(&search()), [("m_0000000000a1".to_owned(), 100), ("m_0000000000b2".to_owned(), 73)]);
}

#[test]
fn search_looks_at_the_current_and_the_default_branch_unless_told_otherwise() {
    let head = "0123456789abcdef0123456789abcdef01234567";
    let log = [
        add_line("m_0000000000c1", &ago(0), "lock ordering on feature", json!({"git": {"branch": "feature/x"}})),
        add_line("m_0000000000c2", &ago(0), "lock ordering on main", json!({"git": {"branch": "main"}})),
        add_line("m_0000000000c3", &ago(0), "lock ordering elsewhere", json!({"git": {"branch": "other"}})),
        add_line("m_0000000000c4", &ago(0), "lock ordering outside git", json!({})),
    ]
    .concat();
    let root = TestRoot::new()
        .file(".git/HEAD", "ref: refs/heads/feature/x\n")
        .file(".git/refs/heads/feature/x", format!("{head}\n"))
        .file(".git/refs/heads/main", format!("{head}\n"))
        .file(".tmws/memory/long-term.jsonl", log);
    let found = |extra: &[&str]| {
        let mut args = vec!["--json", "memory", "search", "lock ordering", "--min-score", "0"];
        args.extend_from_slice(extra);
        let mut got = ids(&json(&root.run(&args)));
        got.sort();
        got
    };
    assert_eq!(found(&[]), ["m_0000000000c1", "m_0000000000c2", "m_0000000000c4"]);
    assert_eq!(found(&["--branch", "*"]), ["m_0000000000c1", "m_0000000000c2", "m_0000000000c3", "m_0000000000c4"]);
    assert_eq!(found(&["--branch", "other"]), ["m_0000000000c3"]);
    // origin/HEAD names the default branch when there is one.
    root.write(".git/refs/remotes/origin/HEAD", "ref: refs/remotes/origin/other\n");
    assert_eq!(found(&[]), ["m_0000000000c1", "m_0000000000c3", "m_0000000000c4"]);
}

#[test]
fn gc_branches_forgets_short_term_memories_of_deleted_branches() {
    let head = "0123456789abcdef0123456789abcdef01234567";
    let short = [
        add_line("m_0000000000d1", &ago(0), "on main", json!({"ns": "short-term", "git": {"branch": "main"}})),
        add_line(
            "m_0000000000d2",
            &ago(0),
            "on a gone branch",
            json!({"ns": "short-term", "git": {"branch": "feature/gone"}}),
        ),
        add_line(
            "m_0000000000d3",
            &ago(0),
            "on a packed branch",
            json!({"ns": "short-term", "git": {"branch": "packed"}}),
        ),
    ]
    .concat();
    let root = TestRoot::new()
        .file(".git/HEAD", "ref: refs/heads/main\n")
        .file(".git/refs/heads/main", format!("{head}\n"))
        .file(".git/packed-refs", format!("{head} refs/heads/packed\n"))
        .file(".tmws/memory/short-term.jsonl", short)
        .file(
            ".tmws/memory/long-term.jsonl",
            add_line("m_0000000000d4", &ago(0), "kept", json!({"git": {"branch": "feature/gone"}})),
        );
    let done = json(&root.run(&["--json", "memory", "gc-branches"]));
    assert_eq!(done, json!({"removed": 1, "branches": ["feature/gone"], "ids": ["m_0000000000d2"]}));
    let stats = json(&root.run(&["--json", "memory", "stats"]));
    assert_eq!(stats["by_namespace"], json!({"long-term": 1, "short-term": 2}));
    let out = TestRoot::new().run(&["memory", "gc-branches"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.ends_with("is not in a git work tree\n"), "{}", out.stderr);
}

#[test]
fn a_japanese_memory_is_found_by_a_japanese_word_inside_it() {
    let root = TestRoot::new();
    let added =
        json(&root.run(&["--json", "memory", "add", "データベース接続プールの設定を変更した", "-n", "long-term"]));
    let found = json(&root.run(&["--json", "memory", "search", "接続"]));
    assert_eq!(ids(&found), [added["id"].as_str().unwrap()]);
    let found = json(&root.run(&["--json", "memory", "search", "設定"]));
    assert_eq!(ids(&found), [added["id"].as_str().unwrap()]);
}

#[test]
fn a_line_with_bytes_that_are_not_utf8_is_reported_and_skipped() {
    let mut log = add_line("m_0000000000e1", &ago(0), "before the bad line", json!({})).into_bytes();
    log.extend_from_slice(b"{\"op\":\"add\",\"id\":\"m_0000000000e2\",\"content\":\"\xff\xfe\"}\n");
    log.extend_from_slice(add_line("m_0000000000e3", &ago(0), "after the bad line", json!({})).as_bytes());
    let root = TestRoot::new().file(".tmws/memory/long-term.jsonl", &log);
    let found = json(&root.run(&["--json", "memory", "search", "bad line"]));
    let mut got = ids(&found);
    got.sort();
    assert_eq!(got, ["m_0000000000e1", "m_0000000000e3"]);
    let check = root.run(&["check", ".tmws/memory/long-term.jsonl", "--format", "json"]);
    assert_eq!(check.code, 1);
    let findings: Value = serde_json::from_str(&check.stdout).unwrap();
    let got: Vec<(u64, &str)> = findings
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["line"].as_u64().unwrap(), f["rule"].as_str().unwrap()))
        .collect();
    assert_eq!(got, [(2, "encoding")], "{}", check.stdout);
    // Appends go on after it.
    json(&root.run(&["--json", "memory", "add", "and one more", "-n", "long-term"]));
    assert_eq!(json(&root.run(&["--json", "memory", "stats"]))["total"], 3);
}

#[test]
fn each_namespace_decays_at_its_own_half_life() {
    let short = add_line("m_0000000000f5", &ago(10), "queue backoff tuned", json!({"ns": "short-term"}));
    let long = add_line("m_0000000000f6", &ago(10), "queue backoff tested", json!({}));
    let root = TestRoot::new()
        .file(".tmws/config.toml", "[namespaces.long-term]\nhalf_life_days = 10\n")
        .file(".tmws/memory/short-term.jsonl", short)
        .file(".tmws/memory/long-term.jsonl", long);
    let found = json(&root.run(&["--json", "memory", "search", "queue backoff", "--min-score", "0"]));
    let got: Vec<(&str, u64)> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r["score"].as_u64().unwrap()))
        .collect();
    // Ten days: 0.5 at a 10-day half-life against 0.794 at 30 days → 63 %.
    assert_eq!(got, [("m_0000000000f5", 100), ("m_0000000000f6", 63)]);
}
