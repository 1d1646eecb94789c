//! `tmws memory …` against real logs: redaction before anything touches the disk,
//! deduplication, key upserts, truncation, eviction, expiry, get/delete exit codes, torn
//! lines, concurrent writers in separate processes, and read-your-writes across processes.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::util::{Output, TestRoot, eventually};

fn json(out: &Output) -> Value {
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

fn log_lines(root: &TestRoot, ns: &str) -> Vec<Value> {
    root.read(&format!(".tmws/memory/{ns}.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn ids(v: &Value) -> Vec<String> {
    v["results"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn an_add_is_redacted_deduplicated_and_upserted_by_key() {
    let root = TestRoot::new();
    let secret = "Rotate weekly. password = hunter2 and key sk-abcdefghijklmnop1234 from the vault.";
    let a = json(&root.run(&[
        "--json",
        "memory",
        "add",
        secret,
        "-n",
        "long-term",
        "--key",
        "ops/rotation",
        "--tag",
        "ops",
    ]));
    assert_eq!(a["namespace"], "long-term");
    assert_eq!(
        a["summary"],
        "Rotate weekly. password = [REDACTED:secret-assignment] and key [REDACTED:openai-api-key] from the vault."
    );
    assert_eq!(
        (a["redacted"].as_u64(), a["deduplicated"].as_bool(), a["truncated"].as_bool()),
        (Some(2), Some(false), Some(false))
    );
    assert!(a.get("superseded").is_none());
    let id = a["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("m_") && id.len() == 14, "{id}");
    // The original never reaches the file.
    let text = root.read(".tmws/memory/long-term.jsonl");
    assert!(!text.contains("hunter2") && !text.contains("sk-abcdefghijklmnop1234"), "{text}");

    // The same content again: stored once.
    let again = json(&root.run(&["--json", "memory", "add", secret, "-n", "long-term"]));
    assert_eq!((again["id"].as_str(), again["deduplicated"].as_bool()), (Some(id.as_str()), Some(true)));
    assert_eq!(log_lines(&root, "long-term").len(), 1);

    // The same key: the old entry is deleted, the new one added.
    let b = json(&root.run(&[
        "--json",
        "memory",
        "add",
        "Rotate monthly now.",
        "-n",
        "long-term",
        "--key",
        "ops/rotation",
    ]));
    assert_eq!(b["superseded"], id.as_str());
    let lines = log_lines(&root, "long-term");
    assert_eq!(lines.len(), 3);
    assert_eq!((lines[1]["op"].as_str(), lines[1]["id"].as_str()), (Some("delete"), Some(id.as_str())));
    assert_eq!((lines[2]["op"].as_str(), lines[2]["key"].as_str()), (Some("add"), Some("ops/rotation")));
    let found = json(&root.run(&["--json", "memory", "search", "rotate"]));
    assert_eq!(ids(&found), [b["id"].as_str().unwrap()]);

    // Content from stdin, and the default namespace.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tmws"))
        .env("TMWS_CONFIG_HOME", super::util::user_config())
        .args(["--json", "memory", "add", "-", "--summary", "From a pipe."])
        .current_dir(root.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(b"Piped content with a token: abc123\n")?;
            child.wait_with_output()
        })
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["namespace"].as_str(), v["summary"].as_str(), v["redacted"].as_u64()),
        (Some("short-term"), Some("From a pipe."), Some(1))
    );
    assert!(root.read(".tmws/memory/short-term.jsonl").contains("token: [REDACTED:secret-assignment]"));
}

#[test]
fn namespaces_cut_content_evict_the_oldest_and_refuse_unknown_names() {
    let root =
        TestRoot::new().file(".tmws/config.toml", "[namespaces.tiny]\nmax_entries = 3\nmax_content_chars = 20\n");
    let long = "0123456789".repeat(1_000_000);
    let a = json(&root.run(&["--json", "memory", "add", &long[..50], "-n", "tiny"]));
    assert_eq!((a["truncated"].as_bool(), a["content_length"].as_u64()), (Some(true), Some(20)));
    assert_eq!(log_lines(&root, "tiny")[0]["content"], "01234567890123456789");
    // 10 MB through stdin: cut, not kept whole.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tmws"))
        .env("TMWS_CONFIG_HOME", super::util::user_config())
        .args(["--json", "memory", "add", "-n", "tiny"])
        .current_dir(root.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, format!("x{long}").as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["truncated"].as_bool(), v["content_length"].as_u64()), (Some(true), Some(20)));

    let mut added = vec![a["id"].as_str().unwrap().to_owned(), v["id"].as_str().unwrap().to_owned()];
    for text in ["third", "fourth"] {
        let r = json(&root.run(&["--json", "memory", "add", text, "-n", "tiny"]));
        added.push(r["id"].as_str().unwrap().to_owned());
        if text == "fourth" {
            assert_eq!(r["evicted"], serde_json::json!([added[0]]));
            // The eviction is the writer's: its delete says who made room.
            let evicted = log_lines(&root, "tiny").into_iter().find(|o| o["op"] == "delete").unwrap();
            assert_eq!((&evicted["id"], &evicted["author"]), (&json!(added[0]), &json!({"surface": "cli"})));
        }
    }
    let stats = json(&root.run(&["--json", "memory", "stats"]));
    assert_eq!(stats["by_namespace"]["tiny"], 3);

    let out = root.run(&["memory", "add", "x", "-n", "nope"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            2,
            "tmws: unknown namespace `nope`; known: long-term, short-term, tiny (add [namespaces.nope] to .tmws/config.toml)\n"
        )
    );
    let out = root.run(&["memory", "add", "x", "-n", "../etc"]);
    assert_eq!(out.code, 2);
    assert!(!root.path().join(".tmws/etc.jsonl").exists());
    let out = root.run(&["memory", "add", "   "]);
    assert_eq!((out.code, out.stderr.as_str()), (2, "tmws: empty content: give the text to remember (or a problem)\n"));
}

#[test]
fn get_delete_and_expiry() {
    let root = TestRoot::new().file(
        ".tmws/memory/long-term.jsonl",
        concat!(
            "{\"op\":\"add\",\"id\":\"m_000000000001\",\"ns\":\"long-term\",\"at\":\"2020-01-01T00:00:00Z\",",
            "\"expires_at\":\"2020-02-01T00:00:00+00:00\",\"content\":\"an expired deployment note\"}\n",
            "{\"op\":\"add\",\"id\":\"m_000000000002\",\"ns\":\"long-term\",\"at\":\"2026-01-01T00:00:00Z\",",
            "\"expires_at\":\"2099-01-01T00:00:00Z\",\"kind\":\"problem\",\"content\":\"a live deployment problem\",\"tags\":[\"ci\"]}\n",
            "{\"op\":\"add\",\"id\":\"m_0000000000",
        ),
    );
    // Expired entries are invisible to every query.
    let found = json(&root.run(&["--json", "memory", "search", "deployment"]));
    assert_eq!(ids(&found), ["m_000000000002"]);
    let out = root.run(&["memory", "get", "m_000000000001"]);
    assert_eq!((out.code, out.stderr.as_str()), (1, "tmws: no memory `m_000000000001`\n"));
    let stats = json(&root.run(&["--json", "memory", "stats"]));
    assert_eq!((stats["by_namespace"]["long-term"].as_u64(), stats["expired_pending"].as_u64()), (Some(1), Some(1)));

    let got = json(&root.run(&["--json", "memory", "get", "m_000000000002", "--content"]));
    assert_eq!(
        got,
        serde_json::json!({"id": "m_000000000002", "namespace": "long-term", "kind": "problem",
            "summary": "a live deployment problem", "tags": ["ci"], "created_at": "2026-01-01T00:00:00Z",
            "author": "unknown", "trust": 0.5, "source": "file", "content": "a live deployment problem", "expires_at": "2099-01-01T00:00:00Z", "importance": 0.5})
    );
    // An id as the query finds that entry.
    assert_eq!(ids(&json(&root.run(&["--json", "memory", "search", "m_000000000002"]))), ["m_000000000002"]);
    assert_eq!(
        ids(&json(&root.run(&["--json", "memory", "search", "deployment", "--kind", "note"]))),
        Vec::<String>::new()
    );

    // A new add after the torn line: the torn line stays alone, the add is whole.
    let added = json(&root.run(&["--json", "memory", "add", "after the torn line", "-n", "long-term"]));
    let text = root.read(".tmws/memory/long-term.jsonl");
    assert!(text.contains("{\"op\":\"add\",\"id\":\"m_0000000000\n{\"op\":\"add\""), "{text}");
    let check = root.run(&["check", "--format", "json"]);
    let diags: Value = serde_json::from_str(&check.stdout).unwrap();
    // (The hand-written lines above lack `summary` and `hash`; the add tmws wrote is clean.)
    let torn: Vec<(u64, &str)> = diags
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["line"].as_u64() >= Some(3))
        .map(|d| (d["line"].as_u64().unwrap(), d["message"].as_str().unwrap()))
        .collect();
    assert_eq!(torn, [(3, "invalid JSON: EOF while parsing a string; line skipped")]);
    assert_eq!(ids(&json(&root.run(&["--json", "memory", "search", "torn"]))), [added["id"].as_str().unwrap()]);

    let del = json(&root.run(&["--json", "memory", "delete", "m_000000000002"]));
    assert_eq!(del, serde_json::json!({"id": "m_000000000002", "namespace": "long-term", "deleted": true}));
    assert_eq!(ids(&json(&root.run(&["--json", "memory", "search", "deployment"]))), Vec::<String>::new());
    let out = root.run(&["memory", "delete", "m_000000000002"]);
    assert_eq!((out.code, out.stderr.as_str()), (1, "tmws: no memory `m_000000000002`\n"));
}

#[test]
fn concurrent_writers_in_separate_processes_lose_nothing() {
    const WORKERS: usize = 4;
    const EACH: usize = 60;
    let root = TestRoot::new().file(".tmws/config.toml", "[memory]\nfsync = false\n");
    let path = root.path().to_path_buf();
    let threads: Vec<_> = (0..WORKERS)
        .map(|w| {
            let path = path.clone();
            std::thread::spawn(move || {
                for i in 0..EACH {
                    let out = super::util::tmws(
                        &path,
                        &["memory", "add", &format!("worker {w} entry {i}"), "-n", "long-term"],
                    );
                    assert_eq!(out.code, 0, "{}", out.stderr);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let lines = log_lines(&root, "long-term");
    assert_eq!(lines.len(), WORKERS * EACH, "every line valid JSON, one per add");
    let unique: BTreeSet<&str> = lines.iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!(unique.len(), WORKERS * EACH);
    let stats = json(&root.run(&["--json", "memory", "stats"]));
    assert_eq!(stats["total"], WORKERS * EACH);
    let found = json(&root.run(&["--json", "memory", "search", "worker 3 entry 59", "--limit", "1"]));
    assert_eq!(found["found"], 1);
}

#[test]
fn an_add_in_one_process_is_found_by_a_search_in_another_beside_a_watcher() {
    let root = TestRoot::new();
    let mut watcher = std::process::Command::new(env!("CARGO_BIN_EXE_tmws"))
        .env("TMWS_CONFIG_HOME", super::util::user_config())
        .args(["watch"])
        .current_dir(root.path())
        .env_remove("TMWS_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the watcher's first sync.
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(watcher.stdout.take().unwrap()), &mut first).unwrap();
    assert!(first.starts_with("synced:"), "{first}");
    for i in 0..5 {
        let added = json(&root.run(&["--json", "memory", "add", &format!("read your writes number {i}")]));
        let id = added["id"].as_str().unwrap();
        // Right after, a search in another process (a reader: the watcher writes) finds it,
        // or, when the watcher has not committed within 200 ms, says `stale: true`: never a
        // silent miss. It is found once the watcher has committed.
        eventually(&format!("round {i}: the memory found"), || {
            let query = format!("read your writes number {i}");
            let found = json(&root.run(&["--json", "memory", "search", &query, "--limit", "1"]));
            if ids(&found) == [id] {
                return Ok(());
            }
            assert_eq!(found["stale"], true, "round {i}: missed without saying stale: {found}");
            Err(found)
        });
    }
    let _ = watcher.kill();
    let _ = watcher.wait();
}

#[test]
fn an_add_records_the_git_branch_and_commit_without_running_git() {
    let head = "0123456789abcdef0123456789abcdef01234567";
    // A loose ref.
    let root = TestRoot::new()
        .file(".git/HEAD", "ref: refs/heads/feature/auth\n")
        .file(".git/refs/heads/feature/auth", format!("{head}\n"));
    json(&root.run(&["--json", "memory", "add", "on a branch"]));
    assert_eq!(
        log_lines(&root, "short-term")[0]["git"],
        serde_json::json!({"branch": "feature/auth", "commit": "0123456789ab"})
    );
    // A packed ref.
    let root = TestRoot::new()
        .file(".git/HEAD", "ref: refs/heads/main\n")
        .file(".git/packed-refs", format!("# pack-refs with: peeled fully-peeled sorted\n{head} refs/heads/main\n"));
    json(&root.run(&["--json", "memory", "add", "on main"]));
    assert_eq!(
        log_lines(&root, "short-term")[0]["git"],
        serde_json::json!({"branch": "main", "commit": "0123456789ab"})
    );
    // A worktree: `.git` is a file pointing at the worktree's folder, refs in the common dir.
    let root = TestRoot::new()
        .file("main-repo/.git/refs/heads/topic", format!("{head}\n"))
        .file("main-repo/.git/worktrees/wt/HEAD", "ref: refs/heads/topic\n")
        .file("main-repo/.git/worktrees/wt/commondir", "../..\n")
        .file("wt/.tmws/config.toml", "")
        .file("wt/.git", "gitdir: ../main-repo/.git/worktrees/wt\n");
    let out = super::util::tmws(&root.path().join("wt"), &["--json", "memory", "add", "in a worktree"]);
    json(&out);
    let line: Value =
        serde_json::from_str(root.read("wt/.tmws/memory/short-term.jsonl").lines().next().unwrap()).unwrap();
    assert_eq!(line["git"], serde_json::json!({"branch": "topic", "commit": "0123456789ab"}));
    // Detached HEAD: the commit only.
    let root = TestRoot::new().file(".git/HEAD", format!("{head}\n"));
    json(&root.run(&["--json", "memory", "add", "detached"]));
    assert_eq!(log_lines(&root, "short-term")[0]["git"], serde_json::json!({"commit": "0123456789ab"}));
}

/// Regression: the same content added again with other tags or another kind reported
/// `deduplicated: true` and dropped them.
#[test]
fn a_repeated_add_merges_its_tags_and_kind_into_the_entry() {
    let root = TestRoot::new();
    let add = |extra: &[&str]| {
        let mut args = vec!["--json", "memory", "add", "Flaky test: the port is reused too soon.", "-n", "long-term"];
        args.extend_from_slice(extra);
        json(&root.run(&args))
    };
    let first = add(&["--tag", "ci"]);
    let id = first["id"].as_str().unwrap().to_owned();
    let again = add(&["--tag", "ports", "--tag", "ci", "--kind", "problem"]);
    assert_eq!((again["id"].as_str(), again["deduplicated"].as_bool()), (Some(id.as_str()), Some(true)));
    assert_eq!(again["updated"], serde_json::json!(["tags", "kind"]));
    let lines = log_lines(&root, "long-term");
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["op"], "update");
    let got = json(&root.run(&["--json", "memory", "get", &id]));
    assert_eq!((&got["tags"], &got["kind"]), (&serde_json::json!(["ci", "ports"]), &serde_json::json!("problem")));
    // Nothing new: nothing written.
    let third = add(&["--tag", "ports"]);
    assert!(third.get("updated").is_none(), "{third}");
    assert_eq!(log_lines(&root, "long-term").len(), 2);
}

/// `memory list`: what was remembered lately, newest first, by namespace, kind, tag and
/// time; never an expired or deleted entry. `memory get` shows what an entry carries.
#[test]
fn list_gives_the_newest_first_and_get_shows_every_field() {
    let now = chrono::Utc::now();
    let at = |ago: chrono::Duration| (now - ago).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let add = |id: &str, ns: &str, when: String, text: &str, extra: &str| {
        let kind = if extra.contains("\"kind\"") { "" } else { r#","kind":"note""# };
        format!(r#"{{"op":"add","id":"{id}","ns":"{ns}","at":"{when}","content":"{text}"{kind}{extra}}}"#)
    };
    let short = [
        add("m_000000000001", "short-term", at(chrono::Duration::days(40)), "Old news.", ""),
        add("m_000000000002", "short-term", at(chrono::Duration::hours(2)), "Two hours ago.", r#","tags":["t"]"#),
        add(
            "m_000000000003",
            "short-term",
            at(chrono::Duration::minutes(1)),
            "A minute ago.",
            &format!(
                r#","kind":"problem","importance":0.9,"agent":"claude","key":"ops/x","git":{{"branch":"feat"}},"expires_at":"{}""#,
                at(-chrono::Duration::days(10))
            ),
        ),
        add(
            "m_000000000004",
            "short-term",
            at(chrono::Duration::minutes(3)),
            "Expired.",
            &format!(r#","expires_at":"{}""#, at(chrono::Duration::minutes(2))),
        ),
        add("m_000000000005", "short-term", at(chrono::Duration::minutes(4)), "Deleted.", ""),
        format!(r#"{{"op":"delete","id":"m_000000000005","at":"{}"}}"#, at(chrono::Duration::minutes(3))),
    ];
    let long = [add("m_000000000006", "long-term", at(chrono::Duration::days(3)), "Three days ago.", "")];
    let root = TestRoot::new()
        .file(".tmws/memory/short-term.jsonl", short.join("\n") + "\n")
        .file(".tmws/memory/long-term.jsonl", long.join("\n") + "\n");

    let v = json(&root.run(&["--json", "memory", "list"]));
    assert_eq!(v["total"], 4);
    assert_eq!(ids(&v), ["m_000000000003", "m_000000000002", "m_000000000006", "m_000000000001"]);
    assert_eq!(
        v["results"][1],
        serde_json::json!({"id": "m_000000000002", "namespace": "short-term", "kind": "note", "summary": "Two hours ago.",
            "tags": ["t"], "created_at": at(chrono::Duration::hours(2)), "author": "unknown", "trust": 0.5,
            "source": "file"})
    );
    let v = json(&root.run(&["--json", "memory", "list", "--since", "1d"]));
    assert_eq!(
        (v["total"].as_u64(), ids(&v)),
        (Some(2), vec!["m_000000000003".to_owned(), "m_000000000002".to_owned()])
    );
    let day = (now - chrono::Duration::days(5)).format("%Y-%m-%d").to_string();
    let v = json(&root.run(&["--json", "memory", "list", "--since", &day, "--limit", "2"]));
    assert_eq!((v["total"].as_u64(), ids(&v).len()), (Some(3), 2), "total counts beyond the limit");
    let v = json(&root.run(&["--json", "memory", "list", "-n", "long-term"]));
    assert_eq!(ids(&v), ["m_000000000006"]);
    let v = json(&root.run(&["--json", "memory", "list", "--kind", "problem"]));
    assert_eq!(ids(&v), ["m_000000000003"]);
    let v = json(&root.run(&["--json", "memory", "list", "--tag", "t"]));
    assert_eq!(ids(&v), ["m_000000000002"]);
    let out = root.run(&["memory", "list", "--since", "last week"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.starts_with("tmws: --since: `last week` is not a date (2026-11-01)"), "{}", out.stderr);
    let out = root.run(&["memory", "list", "--limit", "0"]);
    assert_eq!((out.code, out.stderr.as_str()), (2, "tmws: --limit 0 is outside 1 to 100\n"));

    // get shows what the entry carries beyond its text.
    let v = json(&root.run(&["--json", "memory", "get", "m_000000000003"]));
    assert_eq!(
        (&v["importance"], &v["author"], &v["key"], &v["branch"], &v["kind"]),
        (
            &serde_json::json!(0.9),
            &serde_json::json!("claude"),
            &serde_json::json!("ops/x"),
            &serde_json::json!("feat"),
            &serde_json::json!("problem")
        )
    );
    assert_eq!(v["expires_at"], at(-chrono::Duration::days(10)));

    // An empty search says where the latest are.
    let out = root.run(&["memory", "search", ""]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            2,
            "tmws: empty query: give some words to search for\n  hint: to see what was remembered lately, use \
memory_list (`tmws memory list`)\n"
        )
    );
}

#[test]
fn an_extracted_summary_is_plain_text_and_the_content_keeps_its_markdown() {
    let root = TestRoot::new();
    let content = "**Deploy** with `make release` after [the checklist](docs/release.md).\n\nThen tag it.";
    let a = json(&root.run(&["--json", "memory", "add", content]));
    assert_eq!(a["summary"], "Deploy with make release after the checklist.");
    let id = a["id"].as_str().unwrap();
    let got = json(&root.run(&["--json", "memory", "get", id, "--content"]));
    assert_eq!(got["content"], content);
}

/// Regression: `memory get` and `memory delete` answered without `stale` while the index
/// was behind the logs, which every other memory tool says. Now both carry it: with the
/// process that keeps the index stopped and a line appended to a log since, each answer
/// says `stale: true`.
#[test]
fn get_and_delete_say_stale_while_the_index_is_behind_the_logs() {
    let root = TestRoot::new();
    let id = json(&root.run(&["--json", "memory", "add", "The build cache lives in target"]))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let keeper = super::util::Keeper::start(&root);
    let fresh = json(&root.run(&["--json", "memory", "get", &id]));
    assert_eq!(fresh.get("stale"), None, "{fresh}");
    keeper.signal("-STOP");
    // Another writer's line, which the stopped keeper does not index.
    let log = ".tmws/memory/short-term.jsonl";
    let line = root.read(log).lines().next().unwrap().replace(&id, "m_0123456789ab");
    root.write(log, format!("{}{line}\n", root.read(log)));
    let got = json(&root.run(&["--json", "memory", "get", &id]));
    assert_eq!((&got["id"], &got["stale"]), (&Value::from(id.clone()), &Value::from(true)), "{got}");
    let deleted = json(&root.run(&["--json", "memory", "delete", &id]));
    assert_eq!((&deleted["deleted"], &deleted["stale"]), (&Value::from(true), &Value::from(true)), "{deleted}");
}
