//! `tmws verify`: memories' citations checked against the code in a real git repository,
//! each state (valid, moved, changed, missing, unknown), the exit code and the GitHub
//! annotations.

use std::fs;
use std::process::Command;

use serde_json::json;

use super::memory_git::git;
use super::util::TestRoot;

const CODE: &str = "one\ntwo\nthree\nfour\nfive\n";
const LOG: &str = ".tmws/memory/long-term.jsonl";

/// A root in git with `src/a.rs` committed; its HEAD.
fn repo() -> (TestRoot, String) {
    let root = TestRoot::new().file("src/a.rs", CODE);
    git(root.path(), &["init", "-q"]);
    git(root.path(), &["add", "src"]);
    git(root.path(), &["commit", "-q", "-m", "code"]);
    let head = git(root.path(), &["rev-parse", "HEAD"]).trim().to_owned();
    (root, head)
}

/// Writes memories into the log, each citing the given citation objects.
fn remember(root: &TestRoot, cites: &[serde_json::Value]) {
    let mut log = String::new();
    for (i, cite) in cites.iter().enumerate() {
        let op = json!({
            "op": "add",
            "id": format!("m_{i:012}"),
            "ns": "long-term",
            "at": "2026-11-01T00:00:00Z",
            "content": format!("memory {i}"),
            "cites": [cite],
        });
        log.push_str(&format!("{op}\n"));
    }
    root.write(LOG, log);
}

/// A citation of lines 2–3 of `src/a.rs` at `commit`, with the hash of their text.
fn span_cite(commit: &str) -> serde_json::Value {
    let hash = blake3::hash(b"two\nthree\n").to_hex().to_string();
    json!({"path": "src/a.rs", "lines": [2, 3], "commit": commit, "hash": hash})
}

#[test]
fn an_unchanged_span_is_valid_and_verify_exits_0() {
    let (root, head) = repo();
    remember(&root, &[span_cite(&head)]);
    let out = root.run(&["verify"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "1 citations checked, 0 stale\n"), "{}", out.stderr);
}

#[test]
fn an_edit_inside_the_span_is_changed_and_verify_exits_1() {
    let (root, head) = repo();
    remember(&root, &[span_cite(&head)]);
    root.write("src/a.rs", "one\ntwo\nTHREE\nfour\nfive\n");
    let out = root.run(&["verify"]);
    let want = format!(
        ".tmws/memory/long-term.jsonl:1  m_000000000000  src/a.rs:2-3@{head}  changed\n1 citations checked, 1 stale\n"
    );
    assert_eq!((out.code, out.stdout), (1, want));
}

#[test]
fn lines_inserted_above_move_the_span_and_verify_exits_0() {
    let (root, head) = repo();
    remember(&root, &[span_cite(&head)]);
    root.write("src/a.rs", format!("zero\nhalf\n{CODE}"));
    let out = root.run(&["verify"]);
    let want = format!(
        ".tmws/memory/long-term.jsonl:1  m_000000000000  src/a.rs:2-3@{head}  moved to src/a.rs:4-5\n1 citations checked, 0 stale\n"
    );
    assert_eq!((out.code, out.stdout), (0, want));
}

#[test]
fn a_file_moved_with_git_mv_is_followed_by_rename_detection() {
    let (root, head) = repo();
    remember(&root, &[span_cite(&head)]);
    git(root.path(), &["mv", "src/a.rs", "src/b.rs"]);
    let out = root.run(&["--json", "verify"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let answer: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        answer["findings"][0]["cites"][0],
        json!({"cite": format!("src/a.rs:2-3@{head}"), "state": "moved", "path": "src/b.rs", "lines": [2, 3]})
    );
}

#[test]
fn a_deleted_file_is_missing_and_verify_exits_1() {
    let (root, head) = repo();
    remember(&root, &[span_cite(&head)]);
    fs::remove_file(root.path().join("src/a.rs")).unwrap();
    let out = root.run(&["verify", "--format", "github"]);
    let want =
        format!("::warning file=.tmws/memory/long-term.jsonl,line=1::m_000000000000: src/a.rs:2-3@{head} missing\n");
    assert_eq!((out.code, out.stdout), (1, want));
}

#[test]
fn a_commit_not_in_the_repository_or_no_commit_is_unknown_not_an_error() {
    let (root, _) = repo();
    let gone = "0123456789abcdef0123456789abcdef01234567";
    remember(&root, &[span_cite(gone), json!({"path": "src/a.rs"})]);
    let out = root.run(&["verify", "--format", "github"]);
    let want = format!(
        "::warning file=.tmws/memory/long-term.jsonl,line=1::m_000000000000: src/a.rs:2-3@{gone} unknown (commit {gone} is not in this repository)\n\
         ::warning file=.tmws/memory/long-term.jsonl,line=2::m_000000000001: src/a.rs unknown (no commit)\n"
    );
    assert_eq!((out.code, out.stdout), (0, want), "{}", out.stderr);
}

#[test]
fn a_citation_without_a_hash_is_compared_with_the_text_at_its_commit() {
    let (root, head) = repo();
    remember(&root, &[json!({"path": "src/a.rs", "lines": [4, 5], "commit": head})]);
    assert_eq!(root.run(&["verify"]).code, 0);
    root.write("src/a.rs", "one\ntwo\nthree\nfour\n");
    let out = root.run(&["verify", "--format", "github"]);
    let want =
        format!("::warning file=.tmws/memory/long-term.jsonl,line=1::m_000000000000: src/a.rs:4-5@{head} changed\n");
    assert_eq!((out.code, out.stdout), (1, want));
}

#[test]
fn a_branch_that_changed_the_code_answers_differently_from_one_that_did_not() {
    let (root, head) = repo();
    remember(&root, &[span_cite(&head)]);
    git(root.path(), &["checkout", "-q", "-b", "rewrite"]);
    root.write("src/a.rs", "one\n2\n3\nfour\nfive\n");
    git(root.path(), &["commit", "-q", "-am", "rewrite"]);
    assert_eq!(root.run(&["verify"]).code, 1);
    git(root.path(), &["checkout", "-q", "main"]);
    let out = root.run(&["verify"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "1 citations checked, 0 stale\n"));
    git(root.path(), &["checkout", "-q", "rewrite"]);
    assert_eq!(root.run(&["verify"]).code, 1);
}

#[test]
fn a_deleted_or_updated_memory_answers_for_its_latest_citations() {
    let (root, head) = repo();
    remember(&root, &[span_cite(&head), span_cite(&head)]);
    let moved = json!({"path": "src/a.rs", "lines": [9, 9], "commit": head, "hash": "00"});
    let mut log = root.read(LOG);
    log.push_str(&format!("{}\n", json!({"op": "delete", "id": "m_000000000000", "at": "2026-11-02T00:00:00Z"})));
    log.push_str(&format!("{}\n", json!({"op": "update", "id": "m_000000000001", "set": {"cites": [moved]}})));
    root.write(LOG, log);
    let out = root.run(&["verify", "--format", "github"]);
    let want =
        format!("::warning file=.tmws/memory/long-term.jsonl,line=4::m_000000000001: src/a.rs:9@{head} changed\n");
    assert_eq!((out.code, out.stdout), (1, want));
}

#[test]
fn an_entry_s_cites_are_checked_and_annotated_on_its_cites_line() {
    let (root, head) = repo();
    let entry = "resources/workspaces/acme/pool.md";
    root.write(entry, format!("---\nname: pool\ncites:\n  - src/a.rs:4-5@{head}\n  - src/a.rs\n---\nThe pool.\n"));
    let out = root.run(&["verify"]);
    assert!(out.stdout.ends_with("2 citations checked, 0 stale\n"), "{}", out.stdout);
    root.write("src/a.rs", "one\ntwo\nthree\nFOUR\nfive\n");
    let out = root.run(&["verify", "--format", "github"]);
    let want = format!(
        "::warning file={entry},line=3::{entry}: src/a.rs:4-5@{head} changed\n\
         ::warning file={entry},line=3::{entry}: src/a.rs unknown (no commit)\n"
    );
    assert_eq!((out.code, out.stdout), (1, want));
}

#[test]
fn memory_verify_over_mcp_answers_what_tmws_verify_finds() {
    let (root, head) = repo();
    remember(&root, &[span_cite(&head)]);
    root.write("src/a.rs", "one\ntwo\nTHREE\nfour\nfive\n");
    let mcp = super::clients::Mcp::start(root.path());
    let answer: serde_json::Value =
        serde_json::from_str(mcp.call("memory_verify", json!({"format": "json"})).text()).unwrap();
    mcp.stop();
    assert_eq!(
        answer,
        json!({"checked": 1, "stale": 1, "findings": [{
            "file": LOG, "line": 1, "id": "m_000000000000",
            "cites": [{"cite": format!("src/a.rs:2-3@{head}"), "state": "changed"}],
        }]})
    );
}

#[test]
fn a_hostile_log_s_citations_read_nothing_outside_the_root_and_run_no_git_option() {
    let (root, head) = repo();
    std::os::unix::fs::symlink("/etc/hostname", root.path().join("src/out.rs")).unwrap();
    let fifo = root.path().join("src/fifo.rs");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // A file of 1 GiB that takes no room on disk: read whole, it would take a gigabyte.
    fs::File::create(root.path().join("src/huge.rs")).unwrap().set_len(1 << 30).unwrap();
    remember(
        &root,
        &[
            json!({"path": "/etc/passwd", "commit": head}),
            json!({"path": "../outside.rs", "commit": head}),
            json!({"path": "src/out.rs", "commit": head, "hash": "00"}),
            json!({"path": "src/a.rs", "commit": "--output=pwned"}),
            json!({"path": "src/fifo.rs", "commit": head, "hash": "00"}),
            json!({"path": "src/huge.rs", "commit": head, "hash": "00"}),
        ],
    );
    let out = root.run(&["verify", "--format", "github"]);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{}", out.stdout);
    assert!(lines[0].contains("unknown (the path is not a file inside the root)"), "{}", lines[0]);
    assert!(lines[1].contains("unknown (the path is not a file inside the root)"), "{}", lines[1]);
    assert!(lines[2].contains("src/out.rs@") && lines[2].contains("unknown (cannot read src/out.rs"), "{}", lines[2]);
    assert!(lines[3].ends_with("unknown (the commit is not 4 to 64 hex digits)"), "{}", lines[3]);
    assert!(lines[4].contains("src/fifo.rs@") && lines[4].contains("unknown (cannot read src/fifo.rs"), "{}", lines[4]);
    assert!(lines[5].contains("src/huge.rs@") && lines[5].contains("unknown (cannot read src/huge.rs"), "{}", lines[5]);
    assert!(!root.path().join("pwned").exists());
    assert_eq!(out.code, 0);
}

#[test]
fn fix_rewrites_a_moved_citation_and_the_next_verify_finds_it_valid() {
    let (root, head) = repo();
    remember(&root, &[span_cite(&head)]);
    root.write("src/a.rs", format!("zero\nhalf\n{CODE}"));
    let out = root.run(&["verify", "--fix"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.ends_with("1 citations checked, 0 stale, 1 moved fixed\n"), "{}", out.stdout);
    let last: serde_json::Value = serde_json::from_str(root.read(LOG).lines().last().unwrap()).unwrap();
    assert_eq!((&last["op"], &last["id"]), (&json!("update"), &json!("m_000000000000")));
    assert_eq!((&last["set"]["cites"][0]["lines"], &last["author"]), (&json!([4, 5]), &json!({"surface": "cli"})));
    let out = root.run(&["verify"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "1 citations checked, 0 stale\n"), "{}", out.stderr);
}

#[test]
fn fix_leaves_a_changed_citation_as_it_is() {
    let (root, head) = repo();
    remember(&root, &[span_cite(&head)]);
    root.write("src/a.rs", "one\ntwo\nTHREE\nfour\nfive\n");
    let before = root.read(LOG);
    assert_eq!(root.run(&["verify", "--fix"]).code, 1);
    assert_eq!(root.read(LOG), before);
}

#[test]
fn a_memory_added_with_cite_goes_stale_when_its_code_changes() {
    let (root, head) = repo();
    let added = root.run(&["memory", "add", "two and three are the pair", "--cite", "src/a.rs:2-3"]);
    assert_eq!(added.code, 0, "{}", added.stderr);
    assert_eq!(root.run(&["verify"]).stdout, "1 citations checked, 0 stale\n");
    root.write("src/a.rs", "one\ntwo\nTHREE\nfour\nfive\n");
    let out = root.run(&["verify", "--format", "github"]);
    assert_eq!(out.code, 1);
    assert!(out.stdout.contains(&format!(": src/a.rs:2-3@{head} changed\n")), "{}", out.stdout);
}
