//! Citations written (docs/memory-log.md#citations): `memory add --cite` fills each one's
//! commit and the hash of what it cites, a citation of nothing or of something outside the
//! root fails the add with nothing written, `memory_add` over MCP takes `cites`, an entry's
//! front-matter `cites:` is checked, and an edit of a cited file is briefed with what cites it.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use super::clients::Mcp;
use super::memory_git::{git, repo};
use super::util::{Output, TestRoot, diagnostics, tmws_with_stdin};

const POOL: &str = "use std::x;\n\npub fn evict(pool: &mut Pool) {\n    pool.drop_oldest();\n}\n\nfn other() {}\n";

fn blake3_hex(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

/// The last line of a log, read as JSON.
fn last_op(root: &TestRoot, ns: &str) -> Value {
    let text = root.read(&format!(".tmws/memory/{ns}.jsonl"));
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

#[test]
fn an_add_with_citations_stores_the_head_commit_and_the_hash_of_what_each_cites() {
    let root = repo();
    root.write("src/pool.rs", POOL);
    git(root.path(), &["add", "-A"]);
    git(root.path(), &["commit", "-qm", "pool"]);
    let head = git(root.path(), &["rev-parse", "HEAD"]).trim().to_owned();
    // The working tree changed since: the hash is of the text at the commit.
    root.write("src/pool.rs", format!("{POOL}// changed\n"));
    let out = root.run(&[
        "--json",
        "memory",
        "add",
        "evict drops the oldest connection",
        "--cite",
        "src/pool.rs:3-5",
        "--cite",
        "./src/pool.rs#evict",
        "--cite",
        "src/pool.rs",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let id = serde_json::from_str::<Value>(&out.stdout).unwrap()["id"].as_str().unwrap().to_owned();
    let definition = "pub fn evict(pool: &mut Pool) {\n    pool.drop_oldest();\n}\n";
    assert_eq!(
        last_op(&root, "short-term")["cites"],
        json!([
            {"path": "src/pool.rs", "lines": [3, 5], "commit": head, "hash": blake3_hex(definition)},
            {"path": "src/pool.rs", "symbol": "evict", "commit": head, "hash": blake3_hex(definition)},
            {"path": "src/pool.rs", "commit": head, "hash": blake3_hex(POOL)},
        ])
    );
    let got = root.run(&["--json", "memory", "get", &id]);
    assert_eq!(got.code, 0, "{got:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&got.stdout).unwrap()["cites"],
        json!([format!("src/pool.rs:3-5@{head}"), format!("src/pool.rs#evict@{head}"), format!("src/pool.rs@{head}")])
    );
}

#[test]
fn the_same_memory_added_again_updates_its_citations_only_when_they_differ() {
    let root = TestRoot::new().file("src/pool.rs", POOL);
    let add = |cite: &str| {
        let out = root.run(&["--json", "memory", "add", "evict drops the oldest", "--cite", cite]);
        assert_eq!(out.code, 0, "{out:?}");
        serde_json::from_str::<Value>(&out.stdout).unwrap()
    };
    add("src/pool.rs#evict");
    let lines = || root.read(".tmws/memory/short-term.jsonl").lines().count();
    // The same citations again: nothing to write.
    let again = add("src/pool.rs#evict");
    assert_eq!((again["deduplicated"].clone(), again.get("updated").cloned(), lines()), (json!(true), None, 1));
    // Another citation: one update that holds it.
    let other = add("src/pool.rs#other");
    assert_eq!((other["updated"].clone(), lines()), (json!(["cites"]), 2));
    assert_eq!(
        last_op(&root, "short-term")["set"]["cites"],
        json!([{"path": "src/pool.rs", "symbol": "other", "hash": blake3_hex("fn other() {}\n")}])
    );
}

#[test]
fn a_citation_of_nothing_or_outside_the_root_fails_the_add_and_writes_nothing() {
    let root = TestRoot::new().file("src/pool.rs", POOL);
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("src/out.rs")).unwrap();
    let fifo = Command::new("mkfifo").arg(root.path().join("src/pipe")).status().unwrap();
    assert!(fifo.success());
    // A 1 GiB file (sparse: it takes no room) is over what a citation may name.
    std::fs::File::create(root.path().join("src/big.rs")).unwrap().set_len(1 << 30).unwrap();
    assert_eq!(root.run(&["memory", "add", "first", "--cite", "src/pool.rs"]).code, 0);
    let before = root.read(".tmws/memory/short-term.jsonl");
    for cite in [
        "../x.rs",
        "/etc/passwd",
        "src/out.rs",
        "src/pipe",
        "src/big.rs",
        "src/missing.rs",
        "src/pool.rs:7-9",
        "src/pool.rs#nope",
    ] {
        let out = root.run(&["memory", "add", "second", "--cite", cite]);
        assert_eq!(out.code, 2, "{cite}: {out:?}");
        let first = out.stderr.lines().next().unwrap_or_default();
        assert!(first.contains(&format!("citation `{cite}`")), "{cite}: {}", out.stderr);
        assert_eq!(root.read(".tmws/memory/short-term.jsonl"), before, "{cite}");
    }
}

#[test]
fn memory_add_over_mcp_takes_cites_and_outside_git_hashes_the_working_tree() {
    let root = TestRoot::new().file("src/pool.rs", POOL);
    let mcp = Mcp::start(root.path());
    let a = mcp.call("memory_add", json!({"content": "the pool evicts", "cites": ["src/pool.rs#other"]}));
    assert!(!a.text().is_empty(), "{a:?}");
    mcp.stop();
    assert_eq!(
        last_op(&root, "short-term")["cites"],
        json!([{"path": "src/pool.rs", "symbol": "other", "hash": blake3_hex("fn other() {}\n")}])
    );
}

const ENTRY: &str = "resources/workspaces/acme/_lessons/2026-10-01-pool.md";

fn entry(cites: &str) -> String {
    format!(
        "---\nname: The pool evicts the oldest first\ndescription: Why.\ncreated: 2026-10-01\ncites:\n{cites}---\nBody.\n"
    )
}

#[test]
fn an_entrys_cites_are_checked_item_by_item() {
    let root = TestRoot::new()
        .file("resources/workspaces/acme/OVERVIEW.md", "---\nname: acme\ndescription: Acme.\n---\n")
        .file(ENTRY, entry("  - src/pool.rs#evict\n  - src/pool.rs:3-5@abc1234\n"));
    let out = root.run(&["check", "--json"]);
    assert!(!diagnostics(&out).iter().any(|d| d.4 == "invalid-cite"), "{out:?}");
    root.write(ENTRY, entry("  - src/pool.rs\n  - ../etc/passwd\n  - src/pool.rs:9-3\n"));
    let out = root.run(&["check", "--json"]);
    assert_eq!(out.code, 1, "{out:?}");
    let bad: Vec<(u64, u64)> =
        diagnostics(&out).iter().filter(|d| d.4 == "invalid-cite" && d.0 == ENTRY).map(|d| (d.1, d.2)).collect();
    assert_eq!(bad, vec![(7, 5), (8, 5)]);
}

/// `tmws brief --event EVENT` with a Claude Code payload on stdin.
fn brief(cwd: &Path, event: &str, payload: &Value) -> Output {
    tmws_with_stdin(cwd, &["brief", "--event", event, "--client", "claude"], &serde_json::to_vec(payload).unwrap())
}

#[test]
fn an_edit_of_a_cited_file_is_briefed_with_the_memory_and_the_entry_that_cite_it() {
    let root = TestRoot::new()
        .file("src/pool.rs", POOL)
        .file("resources/workspaces/acme/OVERVIEW.md", "---\nname: acme\ndescription: Acme.\n---\n")
        .file(ENTRY, entry("  - src/pool.rs#evict\n"));
    let out =
        root.run(&["--json", "memory", "add", "evict must keep one idle connection", "--cite", "src/pool.rs:3-5"]);
    assert_eq!(out.code, 0, "{out:?}");
    let id = serde_json::from_str::<Value>(&out.stdout).unwrap()["id"].as_str().unwrap().to_owned();
    assert_eq!(root.run(&["index"]).code, 0);
    let payload = json!({
        "session_id": "s1",
        "cwd": root.path(),
        "transcript_path": "/t/s.jsonl",
        "tool_name": "Edit",
        "tool_input": {"file_path": root.path().join("src/pool.rs"), "old_string": "a", "new_string": "b"},
    });
    let out = brief(root.path(), "pre-tool", &payload);
    assert_eq!(out.code, 0, "{out:?}");
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let text = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(text.contains(&id), "{text}");
    assert!(text.contains(ENTRY), "{text}");
    assert!(text.contains("(cites src/pool.rs)"), "{text}");
}

/// `memory_search`, `memory_get`, `recall` and a briefing after the code a memory cites was
/// deleted: each says which file is stale, and the stale memory ranks below an equal fresh one.
#[test]
fn a_memory_about_deleted_code_says_it_is_stale_and_ranks_below_a_fresh_one() {
    let root = repo();
    root.write("src/pool.rs", POOL);
    git(root.path(), &["add", "-A"]);
    git(root.path(), &["commit", "-qm", "pool"]);
    let add = |content: &str, cite: Option<&str>| {
        let mut args = vec!["--json", "memory", "add", content, "--namespace", "long-term"];
        if let Some(c) = cite {
            // Worth more than the other while its code holds.
            args.extend(["--cite", c, "--importance", "0.9"]);
        }
        let out = root.run(&args);
        assert_eq!(out.code, 0, "{out:?}");
        serde_json::from_str::<Value>(&out.stdout).unwrap()["id"].as_str().unwrap().to_owned()
    };
    let cited = add("The connection pool evicts the oldest idle connection first.", Some("src/pool.rs#evict"));
    let fresh = add("The connection pool evicts the oldest idle connection first!", None);
    let json = |args: &[&str]| {
        let out = root.run(args);
        assert_eq!(out.code, 0, "{out:?}");
        serde_json::from_str::<Value>(&out.stdout).unwrap()
    };
    // Before: the cited one first, and neither says it is stale.
    let found = json(&["--json", "memory", "search", "pool evicts oldest idle connection", "--format", "json"]);
    let order: Vec<&str> = found["results"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(order, [cited.as_str(), fresh.as_str()], "{found}");
    assert!(found["results"].as_array().unwrap().iter().all(|r| r.get("stale_cites").is_none()), "{found}");
    let recalled = json(&["--json", "recall", "how does the pool evict idle connections", "--format", "json"]);
    assert_eq!(recalled["results"][0]["refId"], json!(cited), "{recalled}");
    git(root.path(), &["rm", "-q", "src/pool.rs"]);
    git(root.path(), &["commit", "-qm", "the pool goes"]);
    let found = json(&["--json", "memory", "search", "pool evicts oldest idle connection", "--format", "json"]);
    let order: Vec<&str> = found["results"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(order, [fresh.as_str(), cited.as_str()], "{found}");
    assert_eq!(found["results"][1]["stale_cites"], json!(["src/pool.rs"]));
    let got = json(&["--json", "memory", "get", &cited]);
    assert_eq!(got["stale_cites"], json!(["src/pool.rs"]));
    let recalled = json(&["--json", "recall", "how does the pool evict idle connections", "--format", "json"]);
    let order: Vec<&str> =
        recalled["results"].as_array().unwrap().iter().map(|r| r["refId"].as_str().unwrap()).collect();
    assert_eq!(order[..2], [fresh.as_str(), cited.as_str()], "{recalled}");
    assert_eq!(recalled["results"][1]["stale_cites"], json!(["src/pool.rs"]));
    // A briefing says it too.
    let payload =
        json!({"session_id": "s1", "cwd": root.path(), "prompt": "how does the pool evict idle connections?"});
    let out = brief(root.path(), "prompt", &payload);
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let text = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_owned();
    let line = text.lines().find(|l| l.contains(&cited)).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("stale: src/pool.rs"), "{line}");
}
