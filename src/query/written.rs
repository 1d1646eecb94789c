//! What tmws writes, byte for byte (tests only): a fixed scenario of memory adds (notes,
//! upserts, repeated adds, problems, an author, eviction, redaction, cut content), session
//! records of both kinds and trust verifications, run at fixed times in a root whose git
//! HEAD is made by hand, and compared with the logs under `testdata/formats/`.
//!
//! A change to a byte of what is written fails here. When the change is wanted, run the
//! test with `TMWS_BLESS=1` to write the files again, and look at the diff.

#![cfg(test)]

use std::path::Path;

use chrono::{DateTime, TimeZone, Utc};
use serde_json::{Map, Value, json};

use super::api::MemoryAddRequest;
use super::memory::{self, Add};
use super::session::{self, Activity};
use crate::config::Config;
use crate::layout;

/// The folder of the expected files.
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/formats");

fn at(minute: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 22, 10, minute, 0).single().unwrap_or_default()
}

/// A root in a git work tree on branch `feature/x` at a fixed commit (HEAD written by hand:
/// tmws reads it without running git).
fn root() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let git = root.path().join(".git");
    std::fs::create_dir_all(git.join("refs/heads/feature")).unwrap();
    std::fs::write(git.join("HEAD"), "ref: refs/heads/feature/x\n").unwrap();
    std::fs::write(git.join("refs/heads/feature/x"), "0123456789abcdef0123456789abcdef01234567\n").unwrap();
    std::fs::create_dir_all(root.path().join(".tmws")).unwrap();
    root
}

fn add(root: &Path, config: &Config, req: MemoryAddRequest, extra: Map<String, Value>, minute: u32) {
    memory::add(root, config, &Add { req: &req, extra }, at(minute)).unwrap();
}

fn author(surface: &str, client: Option<&str>) -> Value {
    match client {
        Some(c) => json!({"surface": surface, "client": c}),
        None => json!({"surface": surface}),
    }
}

/// Runs the scenario in `root`.
fn scenario(root: &Path) {
    let mut config = Config::default();
    if let Some(ns) = config.namespaces.get_mut("short-term") {
        ns.max_entries = 4;
        ns.max_content_chars = 120;
    }
    let req = |content: &str| MemoryAddRequest::new(content);
    add(root, &config, req("The staging database runs Postgres 16."), Map::new(), 0);
    add(
        root,
        &config,
        MemoryAddRequest {
            key: Some("deploy/day".into()),
            tags: vec!["deploy".into(), "ops".into()],
            kind: Some("decision".into()),
            source: Some("meeting".into()),
            agent: Some("claude".into()),
            importance: Some(0.8),
            summary: Some("Deploys happen on Tuesdays.".into()),
            namespace: Some("long-term".into()),
            ..req("We deploy on Tuesdays, never on Fridays.\nThe window is 10:00 to 12:00 UTC.")
        },
        Map::new(),
        1,
    );
    // The same key again: the old entry is deleted, the new one added.
    add(
        root,
        &config,
        MemoryAddRequest {
            key: Some("deploy/day".into()),
            namespace: Some("long-term".into()),
            ..req("We deploy on Wednesdays now.")
        },
        Map::new(),
        2,
    );
    // The same content again with new tags and another kind: one update op.
    add(
        root,
        &config,
        MemoryAddRequest {
            tags: vec!["db".into()],
            kind: Some("pattern".into()),
            ..req("The staging database runs Postgres 16.")
        },
        Map::new(),
        3,
    );
    // The cited file: the commit holds no objects, so its hash is of this text.
    std::fs::create_dir_all(root.join("src/store")).unwrap();
    std::fs::write(root.join("src/store/watch.rs"), "fn wait(event: &str) {\n    block_on(event);\n}\n").unwrap();
    let mut by_mcp = Map::new();
    by_mcp.insert("author".into(), author("mcp", Some("claude-code")));
    add(
        root,
        &config,
        MemoryAddRequest {
            problem: Some("cargo test hangs on the watcher test".into()),
            solution: Some("wait for the event instead of sleeping".into()),
            files: vec!["src/store/watch.rs".into()],
            cites: vec!["src/store/watch.rs#wait".into()],
            agent: Some("claude-code".into()),
            ..req("")
        },
        by_mcp,
        4,
    );
    let mut by_http = Map::new();
    by_http.insert("author".into(), author("http", None));
    add(
        root,
        &config,
        MemoryAddRequest { problem: Some("flaky login".into()), ..req("Login fails one time in ten.") },
        by_http,
        5,
    );
    // A secret, and content over the namespace's 120 characters.
    add(
        root,
        &config,
        req(
            "The CI token is ghp_0123456789abcdefghijABCDEFGHIJ012345 and must never be stored in a memory, whatever the reason.",
        ),
        Map::new(),
        6,
    );
    add(root, &config, req(&"A note longer than the namespace takes. ".repeat(4)), Map::new(), 6);
    // Over max_entries (4): the oldest entries are evicted.
    for (i, m) in [(1, 7), (2, 8), (3, 9)] {
        add(root, &config, req(&format!("Filler note number {i} to fill the namespace.")), Map::new(), m);
    }
    let person = author("cli", None);
    session::record(root, &config, Some("2026-11-22"), (Some("human"), Some(&person)), at(20)).unwrap();
    let activity = Activity {
        started: Some(at(21)),
        head: Some("0123456789abcdef0123456789abcdef01234567".into()),
        queries: vec![("recall".into(), "deploy day".into()), ("memory_search".into(), "postgres".into())],
        memories: vec![("m_0123456789ab".into(), "note".into(), "A note.".into())],
        entries: vec!["resources/workspaces/w/_plans/261122-x.md".into()],
        verifications: vec![("codex".into(), true, 0.55)],
        tool_calls: [("serena/find_symbol".to_owned(), (3, 1))].into_iter().collect(),
        ..Activity::default()
    };
    let agent = author("mcp", Some("claude-code"));
    session::record_activity(root, &config, (Some("claude-code"), Some(&agent)), &activity, true, at(30)).unwrap();
    // A session its client's hooks recorded: prompts, briefings, the transcript.
    let hooked = Activity {
        started: Some(at(22)),
        prompts: 4,
        briefed: vec!["m_0123456789ab".into()],
        transcript: Some("/home/dev/.claude/projects/w/5f1c.jsonl".into()),
        client_session: Some("5f1c".into()),
        tool_calls: [("hook/prompt".to_owned(), (4, 0))].into_iter().collect(),
        ..Activity::default()
    };
    let hook = serde_json::json!({"surface": "hook", "client": "claude-code", "session": "5f1c"});
    session::record_activity(root, &config, (Some("claude-code"), Some(&hook)), &hooked, true, at(31)).unwrap();
    super::trust::verify(root, "Codex", ("claude-code", false), true, "ran the tests: 120 passed", at(31)).unwrap();
    super::trust::verify(root, "codex", ("human", false), false, "the fix broke the login page", at(32)).unwrap();
}

/// A shorter scenario outside git: no `git` field, and session records without a HEAD.
fn scenario_outside_git(root: &Path) {
    let config = Config::default();
    add(root, &config, MemoryAddRequest::new("Outside git there is no branch."), Map::new(), 0);
    session::record(root, &config, Some("2026-11-22T09:00:00Z"), (None, None), at(10)).unwrap();
    let activity =
        Activity { started: Some(at(11)), queries: vec![("recall".into(), "branch".into())], ..Activity::default() };
    // A session that only looked is recorded when asked (`session_record`), never by itself.
    session::record_activity(root, &config, (None, None), &activity, false, at(12)).unwrap();
}

#[test]
fn what_tmws_writes_is_byte_for_byte_what_it_wrote_before() {
    let (inside, outside) = (root(), tempfile::tempdir().unwrap());
    scenario(inside.path());
    std::fs::create_dir_all(outside.path().join(".tmws")).unwrap();
    scenario_outside_git(outside.path());
    let files = [
        (inside.path(), layout::memory_log("short-term"), "memory/short-term.jsonl"),
        (inside.path(), layout::memory_log("long-term"), "memory/long-term.jsonl"),
        (inside.path(), layout::TRUST_FILE.to_owned(), "trust.jsonl"),
        (outside.path(), layout::memory_log("short-term"), "outside-git/short-term.jsonl"),
        (outside.path(), layout::memory_log("long-term"), "outside-git/long-term.jsonl"),
    ];
    let bless = std::env::var_os("TMWS_BLESS").is_some();
    for (root, written, fixture) in files {
        let got = std::fs::read_to_string(root.join(&written)).unwrap();
        let path = Path::new(FIXTURES).join(fixture);
        if bless {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            got == want,
            "{written} differs from testdata/formats/{fixture} (TMWS_BLESS=1 writes it again):\n--- got\n{got}\n--- want\n{want}"
        );
    }
}
