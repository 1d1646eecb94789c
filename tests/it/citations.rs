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

/// As a new user meets it: a problem added with `--file`, the file deleted and the deletion
/// committed, then `recall`: the problem still comes back (it may still be worth knowing)
/// but says the file it is about is gone, and `verify` fails on it.
#[test]
fn a_problem_about_a_deleted_file_is_recalled_as_stale() {
    let root = repo();
    root.write("src/a.rs", "pub fn retry() {}\n");
    git(root.path(), &["add", "-A"]);
    git(root.path(), &["commit", "-qm", "a"]);
    let head = git(root.path(), &["rev-parse", "HEAD"]).trim().to_owned();
    let out = root.run(&[
        "memory",
        "add",
        "--problem",
        "the retry loop hangs on a timeout",
        "--solution",
        "cap retries at three",
        "--file",
        "src/a.rs",
        "--file",
        "src/not-yet.rs",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    // The file that is there is cited whole; the one that is not yet stays a file only.
    let op = last_op(&root, "long-term");
    assert_eq!(op["files"], json!(["src/a.rs", "src/not-yet.rs"]));
    assert_eq!(op["cites"], json!([{"path": "src/a.rs", "commit": head, "hash": blake3_hex("pub fn retry() {}\n")}]));
    let recall = || {
        let out = root.run(&["--json", "recall", "retry loop hangs", "--format", "json"]);
        assert_eq!(out.code, 0, "{out:?}");
        serde_json::from_str::<Value>(&out.stdout).unwrap()["results"][0].clone()
    };
    assert_eq!(recall().get("stale_cites"), None);
    git(root.path(), &["rm", "-q", "src/a.rs"]);
    git(root.path(), &["commit", "-qm", "a goes"]);
    let first = recall();
    assert_eq!((first["kind"].clone(), first["stale_cites"].clone()), (json!("problem"), json!(["src/a.rs"])));
    let human = root.run(&["recall", "retry loop hangs"]);
    assert!(human.stdout.contains("stale: src/a.rs"), "{human:?}");
    let verify = root.run(&["verify"]);
    assert_eq!(verify.code, 1, "{verify:?}");
    assert!(verify.stdout.contains(&format!("src/a.rs@{head}  missing")), "{verify:?}");
}

/// A log written before a problem's files were citations: each file counts as cited whole at
/// the commit the problem was written at, read from git when it is checked.
#[test]
fn a_problem_written_without_citations_is_checked_by_its_files_at_its_commit() {
    let root = repo();
    root.write("src/a.rs", "pub fn retry() {}\n");
    root.write("src/b.rs", "pub fn other() {}\n");
    git(root.path(), &["add", "-A"]);
    git(root.path(), &["commit", "-qm", "a"]);
    let head = git(root.path(), &["rev-parse", "--short=12", "HEAD"]).trim().to_owned();
    let old = json!({"op": "add", "id": "m_000000000001", "ns": "long-term", "at": "2026-01-01T00:00:00Z",
        "expires_at": "2036-01-01T00:00:00Z", "kind": "problem", "content": "Problem: the retry loop hangs",
        "summary": "Problem: the retry loop hangs", "problem": "the retry loop hangs", "outcome": "open",
        "files": ["src/a.rs", "src/b.rs", "../outside.rs"], "git": {"branch": "main", "commit": head}, "hash": "h"});
    root.write(".tmws/memory/long-term.jsonl", format!("{old}\n"));
    root.write("src/a.rs", "pub fn retry() { loop {} }\n");
    let out = root.run(&["--json", "recall", "retry loop hangs", "--format", "json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let first = serde_json::from_str::<Value>(&out.stdout).unwrap()["results"][0].clone();
    assert_eq!((first["refId"].clone(), first["stale_cites"].clone()), (json!("m_000000000001"), json!(["src/a.rs"])));
    let verify = root.run(&["--json", "verify", "--format", "json"]);
    assert_eq!(verify.code, 1, "{verify:?}");
    let v: Value = serde_json::from_str(&verify.stdout).unwrap();
    let states: Vec<(String, String)> = v["findings"][0]["cites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["cite"].as_str().unwrap().to_owned(), c["state"].as_str().unwrap().to_owned()))
        .collect();
    // Two files checked (the one outside the root is no citation), one stale.
    assert_eq!((v["checked"].clone(), v["stale"].clone()), (json!(2), json!(1)), "{v}");
    assert_eq!(states, [(format!("src/a.rs@{head}"), "changed".to_owned())], "{v}");
}

#[test]
fn a_problem_file_outside_the_root_fails_the_add_and_writes_nothing() {
    let root = TestRoot::new().file("src/a.rs", "x\n");
    for file in ["../x.rs", "/etc/passwd"] {
        let out = root.run(&["memory", "add", "--problem", "p", "--file", file]);
        assert_eq!(out.code, 2, "{file}: {out:?}");
        assert!(out.stderr.lines().next().unwrap_or_default().contains(&format!("file `{file}`")), "{out:?}");
        assert!(!root.path().join(".tmws/memory/long-term.jsonl").exists(), "{file}");
    }
    // Written absolute inside the root, it is the file under the root.
    let inside = root.path().join("src/a.rs");
    let out = root.run(&["memory", "add", "--problem", "p", "--file", inside.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(last_op(&root, "long-term")["cites"][0]["path"], json!("src/a.rs"));
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

/// An entry written by hand cites code without a commit: `verify --stamp` writes HEAD's after
/// it, and once the code goes, `workspace_search`, `workspace_get_context` and `recall` each
/// say which file is stale.
#[test]
fn an_entry_stamped_with_head_goes_stale_in_search_context_and_recall_when_its_code_goes() {
    let root = repo();
    root.write("src/pool.rs", POOL);
    root.write("resources/workspaces/acme/OVERVIEW.md", "---\nname: acme\ndescription: Acme.\n---\n");
    root.write(ENTRY, entry("  - src/pool.rs#evict\n  - \"src/pool.rs:7\"\n"));
    git(root.path(), &["add", "-A"]);
    git(root.path(), &["commit", "-qm", "pool"]);
    let head = git(root.path(), &["rev-parse", "HEAD"]).trim().to_owned();
    let out = root.run(&["verify"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains(&format!("{ENTRY}:5  {ENTRY}  src/pool.rs#evict  unknown (no commit)\n")), "{out:?}");

    let out = root.run(&["verify", "--stamp"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "2 citations checked, 0 stale, 2 stamped with HEAD\n"), "{out:?}");
    let short = &head[..12];
    assert_eq!(root.read(ENTRY), entry(&format!("  - src/pool.rs#evict@{short}\n  - \"src/pool.rs:7@{short}\"\n")));
    let again = root.run(&["verify", "--stamp"]);
    assert_eq!(again.stdout, "2 citations checked, 0 stale, 0 stamped with HEAD\n", "{again:?}");
    git(root.path(), &["commit", "-qam", "stamped"]);

    let json = |args: &[&str]| {
        let out = root.run(args);
        assert_eq!(out.code, 0, "{out:?}");
        serde_json::from_str::<Value>(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
    };
    let stale_of = |results: &Value, key: &str| -> Value {
        let found = results.as_array().unwrap().iter().find(|r| r[key] == ENTRY);
        found.unwrap_or_else(|| panic!("{ENTRY} not in {results}")).get("stale_cites").cloned().unwrap_or(Value::Null)
    };
    let found = json(&["--json", "search", "pool evicts the oldest first", "--format", "json"]);
    assert_eq!(stale_of(&found["results"], "refId"), Value::Null, "{found}");

    root.write("src/pool.rs", "use std::x;\n\nfn other() {}\n");
    git(root.path(), &["commit", "-qam", "evict goes"]);
    let found = json(&["--json", "search", "pool evicts the oldest first", "--format", "json"]);
    assert_eq!(stale_of(&found["results"], "refId"), json!(["src/pool.rs"]), "{found}");
    let context = json(&["--json", "context", "--workspace", "acme", "--format", "json"]);
    let lessons = &context["defaults"]["lessons_t0"];
    assert_eq!(lessons[0]["_meta"]["document_path"], json!(ENTRY), "{context}");
    assert_eq!(lessons[0]["stale_cites"], json!(["src/pool.rs"]), "{context}");
    let recalled = json(&["--json", "recall", "how does the pool evict the oldest", "--format", "json"]);
    assert_eq!(stale_of(&recalled["results"], "refId"), json!(["src/pool.rs"]), "{recalled}");
    let out = root.run(&["verify", "--format", "github"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stdout.contains(&format!("src/pool.rs#evict@{short} missing")), "{out:?}");
}

/// `--stamp` gives a memory's citation without a commit HEAD's and the hash of its text, by an
/// update op; outside git it says it cannot, and changes nothing.
#[test]
fn stamp_gives_a_memory_s_bare_citation_head_and_its_hash() {
    let root = repo();
    root.write("src/pool.rs", POOL);
    git(root.path(), &["add", "-A"]);
    git(root.path(), &["commit", "-qm", "pool"]);
    let head = git(root.path(), &["rev-parse", "HEAD"]).trim().to_owned();
    let log = ".tmws/memory/long-term.jsonl";
    let add = json!({"op": "add", "id": "m_000000000001", "ns": "long-term", "at": "2026-11-01T00:00:00Z",
        "content": "evict drops the oldest", "cites": [{"path": "src/pool.rs", "lines": [3, 5]}]});
    root.write(log, format!("{add}\n"));
    let out = root.run(&["verify", "--stamp"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "1 citations checked, 0 stale, 1 stamped with HEAD\n"), "{out:?}");
    let last: Value = serde_json::from_str(root.read(log).lines().last().unwrap()).unwrap();
    assert_eq!((&last["op"], &last["id"]), (&json!("update"), &json!("m_000000000001")));
    let span = "pub fn evict(pool: &mut Pool) {\n    pool.drop_oldest();\n}\n";
    assert_eq!(
        last["set"]["cites"],
        json!([{"path": "src/pool.rs", "lines": [3, 5], "commit": head, "hash": blake3_hex(span)}])
    );
    root.write("src/pool.rs", POOL.replace("drop_oldest", "drop_newest"));
    assert_eq!(root.run(&["verify"]).code, 1);

    let outside = TestRoot::new().file("src/pool.rs", POOL);
    outside.write(log, format!("{add}\n"));
    let out = outside.run(&["verify", "--stamp"]);
    assert_eq!((out.code, out.stderr.trim()), (2, "tmws: --stamp needs a git repository with a commit"), "{out:?}");
    assert_eq!(outside.read(log), format!("{add}\n"));
}

/// A shallow clone lacks the commit a memory cites: the citation is `unknown`, said plainly,
/// the memory is not marked stale, and nothing fails.
#[test]
fn a_shallow_clone_without_the_cited_commit_says_unknown_and_fails_nothing() {
    let origin = repo();
    origin.write("src/pool.rs", POOL);
    git(origin.path(), &["add", "-A"]);
    git(origin.path(), &["commit", "-qm", "pool"]);
    let cited = git(origin.path(), &["rev-parse", "HEAD"]).trim().to_owned();
    let out = origin.run(&[
        "memory",
        "add",
        "evict drops the oldest",
        "--namespace",
        "long-term",
        "--cite",
        "src/pool.rs#evict",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    git(origin.path(), &["add", "-A"]);
    git(origin.path(), &["commit", "-qm", "memory"]);
    let clone = TestRoot::bare();
    let url = format!("file://{}", origin.path().display());
    git(clone.path(), &["clone", "-q", "--depth", "1", &url, "."]);
    let out = clone.run(&["verify"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains(&format!("src/pool.rs#evict@{cited}  unknown (commit {cited} is not in this repository)\n")),
        "{out:?}"
    );
    let out = clone.run(&["--json", "memory", "search", "evict drops the oldest", "--format", "json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let found: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(found["results"][0]["summary"], json!("evict drops the oldest"), "{found}");
    assert!(found["results"][0].get("stale_cites").is_none(), "{found}");
}

/// Deleted, edited and moved code seen through each surface: the official Python SDK in
/// both of its connection modes, rmcp's client, and HTTP, each answer naming the stale file
/// of the memory about deleted code, and `memory_verify` each citation's state.
#[test]
fn a_memory_about_deleted_code_is_stale_through_the_python_sdk_rmcp_and_http() {
    let Some(python) = super::real_clients::python() else { return };
    let root = repo();
    root.write("src/pool.rs", POOL);
    root.write("src/edit.rs", "fn a() {}\nfn b() {}\n");
    root.write("src/keep.rs", "fn c() {}\nfn d() {}\n");
    git(root.path(), &["add", "-A"]);
    git(root.path(), &["commit", "-qm", "pool"]);
    let add = |content: &str, cite: &str| {
        let out = root.run(&["--json", "memory", "add", content, "--namespace", "long-term", "--cite", cite]);
        assert_eq!(out.code, 0, "{out:?}");
        serde_json::from_str::<Value>(&out.stdout).unwrap()["id"].as_str().unwrap().to_owned()
    };
    let id = add("evict drops the oldest idle connection", "src/pool.rs#evict");
    let edited = add("a and b are a pair", "src/edit.rs:1-2");
    let moved = add("c and d are a pair", "src/keep.rs:1-2");
    git(root.path(), &["rm", "-q", "src/pool.rs"]);
    root.write("src/edit.rs", "fn a() {}\nfn B() {}\n");
    root.write("src/keep.rs", "// moved down\nfn c() {}\nfn d() {}\n");
    git(root.path(), &["commit", "-qam", "the pool goes, edit changes, keep moves"]);
    let mut want_states =
        vec![(id.clone(), "missing".to_owned()), (edited, "changed".to_owned()), (moved, "moved".to_owned())];
    want_states.sort();
    assert_eq!(root.run(&["index"]).code, 0);
    let query = "evict drops the oldest idle connection";
    let calls = json!([
        ["memory_search", {"query": query}],
        ["memory_get", {"id": id}],
        ["recall", {"task": query}],
        ["workspace_search", {"query": query}],
        ["memory_verify", {}],
    ]);
    let stale = json!(["src/pool.rs"]);
    let check = |answers: &[Value], how: &str| {
        assert_eq!(answers[0]["results"][0]["stale_cites"], stale, "{how}: {}", answers[0]);
        assert_eq!(answers[1]["stale_cites"], stale, "{how}: {}", answers[1]);
        assert_eq!(answers[2]["results"][0]["stale_cites"], stale, "{how}: {}", answers[2]);
        assert_eq!(answers[3]["results"][0]["stale_cites"], stale, "{how}: {}", answers[3]);
        // memory_verify is a tool of agents and the command line, not a route.
        if let Some(verified) = answers.get(4) {
            let mut states: Vec<(String, String)> = verified["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| (f["id"].as_str().unwrap().to_owned(), f["cites"][0]["state"].as_str().unwrap().to_owned()))
                .collect();
            states.sort();
            assert_eq!(states, want_states, "{how}: {verified}");
            assert_eq!((&verified["checked"], &verified["stale"]), (&json!(3), &json!(2)), "{how}: {verified}");
        }
    };
    for mode in ["auto", "legacy"] {
        let out = Command::new(&python)
            .arg(super::util::repo().join("tests/py/sdk_calls.py"))
            .args([mode, env!("CARGO_BIN_EXE_tmws"), root.path().to_str().unwrap(), &calls.to_string()])
            .env("TMWS_CONFIG_HOME", super::util::user_config())
            .env_remove("TMWS_LOG")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let report: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        assert!(report.iter().all(|r| r["is_error"] == false), "{report:?}");
        let answers: Vec<Value> = report.into_iter().map(|r| r["answer"].clone()).collect();
        check(&answers, mode);
    }
    let mcp = Mcp::start(root.path());
    let answers: Vec<Value> = calls
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let mut args = c[1].clone();
            args["format"] = json!("json");
            serde_json::from_str(mcp.call(c[0].as_str().unwrap(), args).text()).unwrap()
        })
        .collect();
    mcp.stop();
    check(&answers, "rmcp");
    let serve = super::clients::Serve::start(root.path(), None);
    let q = super::clients::encode(query);
    let answers: Vec<Value> = [
        format!("/memory/search?query={q}&format=json"),
        format!("/memory/{id}?format=json"),
        format!("/recall?task={q}&format=json"),
        format!("/workspace/search?query={q}&format=json"),
    ]
    .iter()
    .map(|path| {
        let r = serve.get(path);
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        r.json()
    })
    .collect();
    serve.terminate();
    check(&answers, "http");
}
