//! `recall` (docs/tools.md), problems and their solutions, sessions recorded without being
//! asked, the upkeep and their metrics — through the CLI, MCP (rmcp over `tmws mcp`) and
//! HTTP (`tmws serve` with reqwest).

use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::clients::{Mcp, Serve};
use super::util::{TestRoot, eventually, user_config};

fn json_of(out: &super::util::Output) -> Value {
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// The `add` lines of a memory log, as JSON.
fn adds(root: &TestRoot, ns: &str) -> Vec<Value> {
    let path = root.path().join(format!(".tmws/memory/{ns}.jsonl"));
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|v| v["op"] == "add").collect()
}

fn sessions(root: &TestRoot) -> Vec<Value> {
    adds(root, "long-term").into_iter().filter(|v| v["kind"] == "session").collect()
}

fn git(root: &TestRoot, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(root.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Adds the watcher problem through the CLI, with `more` flags; the answer.
fn add_watcher_problem(root: &TestRoot, more: &[&str]) -> Value {
    let mut args = vec![
        "--json",
        "memory",
        "add",
        "--problem",
        "the watcher misses files written into folders made by mkdir -p",
        "--solution",
        "rescan the subtree of every folder create event",
        "--file",
        "src/store/watch.rs",
    ];
    args.extend_from_slice(more);
    json_of(&root.run(&args))
}

#[test]
fn a_problem_is_stored_with_its_solution_long_term_and_shown_as_a_pair() {
    let root = TestRoot::sample();
    let added = add_watcher_problem(&root, &["--agent", "fixer"]);
    assert_eq!(added["namespace"], "long-term");
    assert_eq!(added["summary"], "Problem: the watcher misses files written into folders made by mkdir -p");
    let line = adds(&root, "long-term").into_iter().find(|v| v["id"] == added["id"]).unwrap();
    assert_eq!(
        (&line["kind"], &line["problem"], &line["solution"], &line["outcome"], &line["files"]),
        (
            &json!("problem"),
            &json!("the watcher misses files written into folders made by mkdir -p"),
            &json!("rescan the subtree of every folder create event"),
            &json!("solved"),
            &json!(["src/store/watch.rs"])
        )
    );
    assert_eq!(
        line["content"],
        "Problem: the watcher misses files written into folders made by mkdir -p\n\nSolution: rescan the subtree of \
every folder create event"
    );
    let found = json_of(&root.run(&["--json", "memory", "search", "mkdir folders", "--kind", "problem"]));
    assert_eq!(found["found"], 1, "{found}");
    let hit = &found["results"][0];
    assert_eq!(
        (&hit["id"], &hit["solution"], &hit["outcome"], &hit["files"]),
        (
            &added["id"],
            &json!("rescan the subtree of every folder create event"),
            &json!("solved"),
            &json!(["src/store/watch.rs"])
        )
    );
    let got = json_of(&root.run(&["--json", "memory", "get", added["id"].as_str().unwrap()]));
    assert_eq!(got["problem"], "the watcher misses files written into folders made by mkdir -p");
    // An open problem, a secret in its solution, and the mistakes refused.
    let open = json_of(&root.run(&[
        "--json",
        "memory",
        "add",
        "--problem",
        "deploys hang",
        "--solution",
        "export GITHUB_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB then retry",
        "--outcome",
        "workaround",
    ]));
    assert_eq!(open["redacted"], 1);
    let line = adds(&root, "long-term").into_iter().find(|v| v["id"] == open["id"]).unwrap();
    assert_eq!((&line["outcome"], line["solution"].as_str().unwrap().contains("ghp_")), (&json!("workaround"), false));
    let out = root.run(&["memory", "add", "--solution", "x", "a note"]);
    assert_eq!(
        (out.code, out.stderr.trim()),
        (2, "tmws: `--solution`, `--outcome` and `--file` belong to a problem: give `--problem` too")
    );
    let out = root.run(&["memory", "add", "--problem", "x", "--outcome", "fixed"]);
    assert_eq!((out.code, out.stderr.trim()), (2, "tmws: --outcome `fixed` is not one of solved, workaround, open"));
}

#[test]
fn recall_ranks_problems_lessons_decisions_and_memories_together_on_the_scope_ladder() {
    let root = TestRoot::sample();
    let note = json_of(&root.run(&["--json", "memory", "add", "The watcher misses files in new folders sometimes"]));
    let problem = add_watcher_problem(&root, &[]);
    // A session record names every memory: it is not what recall is for.
    assert_eq!(root.run(&["session", "record"]).code, 0);
    let r = json_of(&root.run(&["--json", "recall", "the", "watcher", "misses", "files", "in", "new", "folders"]));
    let ids: Vec<&str> = r["results"].as_array().unwrap().iter().map(|x| x["refId"].as_str().unwrap()).collect();
    // What holds every word of the task comes first (the note, in fewer words, then the
    // lesson); the problem, which lacks `new`, comes after them though lifted for its
    // solution.
    assert_eq!(
        ids,
        [
            note["id"].as_str().unwrap(),
            "resources/workspaces/devtools/_lessons/260415-notify-mkdir-p.md",
            problem["id"].as_str().unwrap(),
        ],
        "{r}"
    );
    let third = &r["results"][2];
    assert_eq!(
        (&third["kind"], &third["solution"], &third["outcome"]),
        (&json!("problem"), &json!("rescan the subtree of every folder create event"), &json!("solved"))
    );
    assert_eq!(third["why"], "words: watcher, misses, files, folders; solved problem with its solution");
    assert_eq!(
        (&r["results"][0]["kind"], &r["results"][0]["score"], &r["results"][0]["why"]),
        (&json!("memory"), &json!(100), &json!("words: watcher, misses, files, new, folders"))
    );
    assert_eq!((&r["results"][1]["kind"], &r["results"][1]["scope"]), (&json!("lesson"), &json!("devtools")));

    // The ladder: a decision of `devtools` applies to `devtools/common`, not to `nihongo`.
    let single = |scope: &str| {
        let r = json_of(&root.run(&["--json", "recall", "--scope", scope, "single", "binary"]));
        r["results"].as_array().unwrap().iter().map(|x| x["refId"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    // Keywords rank by their words: the plan of `devtools/common` that holds one of them
    // is far below the decision named by both, under `min_score`.
    assert_eq!(single("devtools/common"), ["resources/workspaces/devtools/_decisions/260310-single-binary.md"]);
    assert_eq!(single("nihongo"), Vec::<String>::new());
    let r = json_of(&root.run(&["--json", "recall", "--scope", "nihongo/mobile", "接続プールの枯渇"]));
    assert_eq!(
        (&r["results"][0]["refId"], &r["results"][0]["kind"], &r["results"][0]["why"]),
        (
            &json!("resources/workspaces/nihongo/mobile/_lessons/260915-connection-pool.md"),
            &json!("lesson"),
            &json!("words: 接続プールの枯渇")
        )
    );
    // The cap is honoured exactly, and an empty task or an unknown scope is refused.
    let out = root.run(&["recall", "--max-chars", "200", "watcher", "misses", "files"]);
    assert_eq!(out.code, 0);
    assert!(out.stdout.chars().count() <= 200 && out.stdout.contains("truncated: true"), "{}", out.stdout);
    let out = root.run(&["recall", "--scope", "../etc", "x"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
}

#[test]
fn a_client_session_is_recorded_once_when_it_ends_with_everything_it_did() {
    let root = TestRoot::sample();
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "sample"]);
    git(&root, &["checkout", "-q", "-b", "fix/watcher"]);
    let mcp = Mcp::start(root.path());
    mcp.call_fresh("recall", json!({"task": "watcher misses files"}));
    // Asked again at once (as a client retries a stale answer): one question of the session.
    mcp.call("recall", json!({"task": "watcher misses files"}));
    let added = mcp.call(
        "memory_add",
        json!({"problem": "watcher misses new folders", "solution": "rescan on create", "format": "json"}),
    );
    let added: Value = serde_json::from_str(added.text()).unwrap();
    mcp.call_fresh("workspace_search", json!({"query": "connection pool"}));
    mcp.call("trust_verify", json!({"agent": "writer-bot", "success": true, "evidence": "tests pass"}));
    let failed = mcp.call("tool_call", json!({"server": "nobody", "tool": "x", "arguments": {}}));
    assert!(matches!(failed, super::clients::Answer::Err(..)));
    root.write("NOTES.md", "fixed\n");
    git(&root, &["add", "NOTES.md"]);
    git(&root, &["commit", "-q", "-m", "Rescan new folders"]);
    assert!(sessions(&root).is_empty(), "nothing is recorded while the session lasts");
    // The server has exited when stop returns: what it records at the end is written.
    mcp.stop();
    let all = sessions(&root);
    assert_eq!(all.len(), 1, "{all:?}");
    let s = &all[0]["session"];
    assert_eq!(
        s["queries"],
        json!([
            {"tool": "recall", "query": "watcher misses files"},
            {"tool": "workspace_search", "query": "connection pool"}
        ])
    );
    assert_eq!(s["memories"], json!([added["id"]]));
    assert_eq!(s["verifications"], json!([{"agent": "writer-bot", "success": true, "trust": 0.55}]));
    assert_eq!(s["tool_calls"], json!({"nobody/x": {"calls": 1, "failed": 1}}));
    assert_eq!((&s["branch"], &s["automatic"]), (&json!("fix/watcher"), &json!(true)));
    assert_eq!(s["agents"], json!([super::clients::CLIENT]));
    assert_eq!(
        (&s["commits"][0]["subject"], &s["commits"][0]["files"]),
        (&json!("Rescan new folders"), &json!(["NOTES.md"]))
    );
    assert_eq!(s["commits"].as_array().unwrap().len(), 1);
    // Commits are recalled with the rest.
    let r = json_of(&root.run(&["--json", "recall", "rescan", "new", "folders"]));
    let commit =
        r["results"].as_array().unwrap().iter().find(|x| x["kind"] == "commit").unwrap_or_else(|| panic!("{r}"));
    assert!(commit["summary"].as_str().unwrap().starts_with("Rescan new folders: "), "{commit}");
    assert!(s["duration_secs"].as_i64().unwrap() >= 0 && s["since"].as_str() <= s["until"].as_str(), "{s}");
    let summary = all[0]["summary"].as_str().unwrap();
    assert!(
        summary
            .contains(": 1 recalls, 1 searches, 1 memories, 1 verifications, 1 tool calls, 1 commits on fix/watcher."),
        "{summary}"
    );

    // A session that recorded itself with session_record is not recorded again; what
    // came after the record is. session_record holds what the session did until then, as
    // the record at its end would have: queries, memories, verifications, branch, duration.
    let mcp = Mcp::start(root.path());
    mcp.call_fresh("workspace_search", json!({"query": "connection pool"}));
    let by_hand = mcp.call("memory_add", json!({"content": "recorded by hand", "format": "json"}));
    let by_hand: Value = serde_json::from_str(by_hand.text()).unwrap();
    mcp.call("trust_verify", json!({"agent": "other-bot", "success": false, "evidence": "its build fails"}));
    let asked = mcp.call("session_record", json!({"format": "json"}));
    let asked: Value = serde_json::from_str(asked.text()).unwrap();
    assert_eq!((&asked["recorded"], &asked["memories"]), (&json!(true), &json!(1)), "{asked}");
    mcp.stop();
    let all = sessions(&root);
    assert_eq!(all.len(), 2, "{all:?}");
    let s = &all[1]["session"];
    assert_eq!(s["automatic"], json!(false), "the second is session_record's: {s}");
    assert_eq!(s["queries"], json!([{"tool": "workspace_search", "query": "connection pool"}]));
    assert_eq!(s["memories"], json!([by_hand["id"]]));
    assert_eq!(s["verifications"], json!([{"agent": "other-bot", "success": false, "trust": 0.4}]));
    assert_eq!((&s["branch"], &s["agents"]), (&json!("fix/watcher"), &json!([super::clients::CLIENT])));
    assert!(s["duration_secs"].as_i64().unwrap() >= 0, "{s}");
    let mcp = Mcp::start(root.path());
    mcp.call("session_record", json!({}));
    mcp.call("memory_add", json!({"content": "added after the record"}));
    mcp.call_fresh("memory_search", json!({"query": "recorded by hand"}));
    mcp.stop();
    assert_eq!(sessions(&root).len(), 3, "nothing happened before session_record: it recorded nothing");
    assert_eq!(
        sessions(&root)[2]["session"]["queries"],
        json!([{"tool": "memory_search", "query": "recorded by hand"}])
    );
    // An idle session is recorded while its client stays, and again for what comes later.
    // One call each (a stale answer is recorded all the same): a retry could come after the
    // idle time on a busy machine, and be a session of its own.
    root.write(".tmws/config.toml", "[sessions]\nidle_minutes = 0.02\n");
    let mcp = Mcp::start(root.path());
    mcp.call("memory_add", json!({"content": "idle at first"}));
    eventually("the idle session's entry", || (sessions(&root).len() == 4).then_some(()));
    mcp.call("memory_add", json!({"content": "busy again"}));
    eventually("the second idle entry", || (sessions(&root).len() == 5).then_some(()));
    mcp.stop();
    let all = sessions(&root);
    assert_eq!(all.len(), 5, "nothing left to record at the end");
    assert!(all[3]["content"].as_str().unwrap().contains("idle at first"), "{}", all[3]);
    assert!(all[4]["content"].as_str().unwrap().contains("busy again"), "{}", all[4]);
    root.write(".tmws/config.toml", "");
    // A session that did nothing leaves nothing; one that only searched, read and
    // recalled leaves nothing either; `auto = false` records nothing.
    let mcp = Mcp::start(root.path());
    mcp.call("workspace_list", json!({}));
    mcp.stop();
    let short_term = || adds(&root, "short-term").len();
    let before = short_term();
    let mcp = Mcp::start(root.path());
    mcp.call_fresh("recall", json!({"task": "watcher misses files"}));
    mcp.call_fresh("workspace_search", json!({"query": "connection pool"}));
    mcp.call("workspace_read", json!({"ref_id": "resources/workspaces/devtools/OVERVIEW.md"}));
    mcp.stop();
    assert_eq!(sessions(&root).len(), 5, "a session that only looked is no memory");
    assert_eq!(short_term(), before, "nor a short-term note");
    root.write(".tmws/config.toml", "[sessions]\nauto = false\n");
    let mcp = Mcp::start(root.path());
    mcp.call("memory_add", json!({"content": "not recorded"}));
    mcp.stop();
    assert_eq!(sessions(&root).len(), 5);
}

#[test]
fn the_upkeep_runs_inside_watch_and_stats_and_metrics_show_it() {
    // Due at once (it never ran) and not again during the test: a second run, which finds
    // nothing to do, would replace the record of the first.
    let root = TestRoot::new()
        .file(".tmws/config.toml", "[upkeep]\nevery_secs = 3600\nidle_secs = 0\n[memory]\nprune_below = 0.3\n");
    let now = chrono::Utc::now();
    let at = |days: i64| (now - chrono::Duration::days(days)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let line = |id: &str, content: &str, added: String, expires: String, importance: f64| {
        json!({"op": "add", "id": id, "ns": "short-term", "at": added, "expires_at": expires, "kind": "note",
               "content": content, "summary": content, "tags": [], "source": "user", "importance": importance})
        .to_string()
    };
    let log = [
        line("m_000000000001", "expired yesterday", at(20), at(1), 0.9),
        line("m_000000000002", "faded away", at(1), at(-13), 0.1),
        line("m_000000000003", "still matters", at(1), at(-13), 0.9),
    ]
    .join("\n");
    root.write(".tmws/memory/short-term.jsonl", format!("{log}\n"));
    let mut watch = Command::new(env!("CARGO_BIN_EXE_tmws"))
        .arg("--root")
        .arg(root.path())
        .arg("watch")
        .env("TMWS_CONFIG_HOME", user_config())
        .env_remove("TMWS_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let upkeep = root.path().join(".tmws/cache/upkeep.json");
    let ran = eventually("the upkeep's record of its run", || std::fs::read(&upkeep));
    let _ = watch.kill();
    let _ = watch.wait();
    let ran: Value = serde_json::from_slice(&ran).unwrap();
    assert_eq!(
        (&ran["removed_expired"], &ran["pruned"], &ran["gc_removed"]),
        (&json!(1), &json!(1), &json!(0)),
        "{ran}"
    );
    let text = root.read(".tmws/memory/short-term.jsonl");
    assert!(!text.contains("expired yesterday"), "compacted away: {text}");
    // The prune is tmws' own: its delete says the upkeep made it.
    let delete = text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).find(|o| o["op"] == "delete");
    let delete = delete.unwrap_or_else(|| panic!("{text}"));
    assert_eq!((&delete["id"], &delete["author"]), (&json!("m_000000000002"), &json!({"surface": "upkeep"})));
    let live = json_of(&root.run(&["--json", "memory", "list"]));
    let summaries: Vec<&str> =
        live["results"].as_array().unwrap().iter().map(|r| r["summary"].as_str().unwrap()).collect();
    assert_eq!(summaries, ["still matters"]);
    let stats = json_of(&root.run(&["--json", "memory", "stats"]));
    assert_eq!(stats["upkeep"], ran);
    // A log with nothing to take out is not rewritten (a tracked log stays clean): the
    // first cleanup takes out the pruned entry's line, the second finds nothing.
    let cleaned = json_of(&root.run(&["--json", "memory", "cleanup"]));
    assert_eq!(cleaned["removed_expired"], 0);
    assert!(cleaned["compacted_bytes"].as_u64().unwrap() > 0, "{cleaned}");
    let path = root.path().join(".tmws/memory/short-term.jsonl");
    // A rewrite replaces the file (a new inode), however soon after the first it comes.
    let stamp = || {
        let m = std::fs::metadata(&path).unwrap();
        (std::os::unix::fs::MetadataExt::ino(&m), m.modified().unwrap())
    };
    let before = stamp();
    let cleaned = json_of(&root.run(&["--json", "memory", "cleanup"]));
    assert_eq!((&cleaned["removed_expired"], &cleaned["compacted_bytes"]), (&json!(0), &json!(0)));
    assert_eq!(stamp(), before);

    // /metrics: when it ran, trust per agent, importance by namespace, recall latency.
    assert_eq!(root.run(&["trust", "verify", "--agent", "writer-bot", "--success", "--evidence", "ok"]).code, 0);
    let serve = Serve::start(root.path(), None);
    let r = serve.get("/recall?task=still%20matters&format=json");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["results"][0]["refId"], "m_000000000003");
    let metrics = serve.get("/metrics").body;
    let at = chrono::DateTime::parse_from_rfc3339(ran["at"].as_str().unwrap()).unwrap().timestamp();
    for line in [
        format!("tmws_upkeep_last_run_timestamp_seconds {at}"),
        "tmws_recall_latency_seconds_count 1".to_owned(),
        "tmws_tool_search_latency_seconds_count 0".to_owned(),
        "tmws_trust{agent=\"writer-bot\"} 0.55".to_owned(),
        "tmws_memory_importance_bucket{namespace=\"short-term\",le=\"0.25\"} 0".to_owned(),
        "tmws_memory_importance_bucket{namespace=\"short-term\",le=\"1\"} 1".to_owned(),
        "tmws_memory_importance_count{namespace=\"short-term\"} 1".to_owned(),
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in:\n{metrics}");
    }
}

#[test]
fn a_solution_whose_agent_was_verified_ranks_above_the_same_from_an_unverified_one() {
    let root = TestRoot::new();
    let add = |agent: &str, solution: &str| {
        json_of(&root.run(&[
            "--json",
            "memory",
            "add",
            "--problem",
            "the release build fails to link on musl",
            "--solution",
            solution,
            "--agent",
            agent,
        ]))["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let first = add("alpha", "link against the static libgcc");
    let second = add("beta", "link with the static libgcc");
    let order = |args: &[&str]| -> Vec<String> {
        let r = json_of(&root.run(args));
        r["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["id"].as_str().or(x["refId"].as_str()).unwrap().to_owned())
            .collect()
    };
    let search = ["--json", "memory", "search", "release build fails to link", "--kind", "problem"];
    let recall = ["--json", "recall", "the", "release", "build", "fails", "to", "link"];
    let unverified = order(&search);
    assert_eq!(unverified.len(), 2);
    // Whichever came first, verifying the other's work puts it first.
    let lifted = if unverified[0] == first { &second } else { &first };
    let agent = if *lifted == first { "alpha" } else { "beta" };
    let verified = root.run(&["trust", "verify", "--agent", agent, "--success", "--evidence", "the build links"]);
    assert_eq!(verified.code, 0, "{}", verified.stderr);
    assert_eq!(&order(&search)[0], lifted);
    assert_eq!(&order(&recall)[0], lifted);
    let r = json_of(&root.run(&recall));
    let top = &r["results"][0];
    assert_eq!((&top["author"], &top["trust"], &top["source"]), (&json!(agent), &json!(0.55), &json!("cli")), "{r}");
}

#[test]
fn the_upkeep_runs_inside_tmws_mcp_too() {
    // Due at once (it never ran) and not again during the test: a second run, which finds
    // nothing to do, would replace the record of the first.
    let root = TestRoot::new().file(".tmws/config.toml", "[upkeep]\nevery_secs = 3600\nidle_secs = 0\n");
    let past = (chrono::Utc::now() - chrono::Duration::days(1)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let line = json!({"op": "add", "id": "m_00000000000a", "ns": "short-term", "at": past, "expires_at": past,
                      "kind": "note", "content": "gone", "summary": "gone", "tags": [], "source": "user"});
    root.write(".tmws/memory/short-term.jsonl", format!("{line}\n"));
    let mcp = Mcp::start(root.path());
    let upkeep = root.path().join(".tmws/cache/upkeep.json");
    let ran = eventually("the upkeep's record of its run", || std::fs::read(&upkeep));
    mcp.stop();
    let ran: Value = serde_json::from_slice(&ran).unwrap();
    assert_eq!(ran["removed_expired"], 1, "{ran}");
    assert_eq!(root.read(".tmws/memory/short-term.jsonl"), "");
}

/// A root holding one of each kind `recall` knows: an ADR in an `index.include` folder, a
/// runbook and a plan of the `shop` workspace, a runbook of another workspace, a memory and
/// a commit.
fn every_kind() -> TestRoot {
    let root = TestRoot::new()
        .file(".tmws/config.toml", "[index]\ninclude = [\"docs/adr\"]\n")
        .file(
            "docs/adr/0002-do-not-use-numbers-in-headings.md",
            "# Do not use numbers in headings\n\n## Context and Problem Statement\n\nShould the headings of a \
record carry its number, as in `2. Do not use numbers`? The number is already in the file name.\n\n## Decision \
Outcome\n\nChosen option: headings without numbers, because renumbering a record would change its title and \
every link to it.\n",
        )
        .file(
            "resources/workspaces/shop/_runbooks/260301-restore-orders-database.md",
            "---\nname: Restore the orders database\ndescription: Bring the orders database back from the nightly \
backup after data loss.\ncreated: 2026-03-01\n---\n## Steps\n\n1. Stop the order workers.\n2. Fetch last night's \
dump from the backup bucket.\n3. Load it with pg_restore into a fresh instance, then point the service at it.\n",
        )
        .file(
            "resources/workspaces/shop/_plans/260310-search-service.md",
            "---\nname: Move product search to its own service\ndescription: Split search out of the monolith \
over the next quarter.\nstatus: in_progress\ncreated: 2026-03-10\n---\n## Milestones\n\nFirst a read-only search service fed by \
change events, then the monolith's search pages switch to it.\n",
        )
        .file(
            "resources/workspaces/warehouse/_runbooks/260302-restore-stock-database.md",
            "---\nname: Restore the stock database\ndescription: Bring the stock database back from its \
backup.\ncreated: 2026-03-02\n---\nLoad the latest dump into a fresh instance.\n",
        );
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "Import the records, runbooks and plans about headings and backups"]);
    let added = root.run(&[
        "memory",
        "add",
        "The nightly database backup finishes at 02:30; restores before that get the previous night",
    ]);
    assert_eq!(added.code, 0, "{}", added.stderr);
    root
}

/// The refId and kind of each result of `tmws recall` with `args`.
fn recalled(root: &TestRoot, args: &[&str]) -> Vec<(String, String)> {
    let mut all = vec!["--json", "recall"];
    all.extend_from_slice(args);
    let r = json_of(&root.run(&all));
    r["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["refId"].as_str().unwrap().to_owned(), x["kind"].as_str().unwrap().to_owned()))
        .collect()
}

/// The commit `HEAD` names, as `recall` gives it.
fn head_commit(root: &TestRoot) -> String {
    let out = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(root.path()).output().unwrap();
    format!("commit:{}", String::from_utf8_lossy(&out.stdout).trim())
}

#[test]
fn recall_finds_indexed_docs_runbooks_and_plans_first_for_their_questions_each_with_its_kind() {
    let root = every_kind();
    let commit = head_commit(&root);
    let pair = |id: &str, kind: &str| (id.to_owned(), kind.to_owned());
    let adr = "docs/adr/0002-do-not-use-numbers-in-headings.md";
    let shop = "resources/workspaces/shop/_runbooks/260301-restore-orders-database.md";
    let stock = "resources/workspaces/warehouse/_runbooks/260302-restore-stock-database.md";
    let memory = "m_de63ccef75ab";
    // The record that settles the question comes first, above the commit that imported it.
    assert_eq!(
        recalled(&root, &["should", "we", "use", "numbers", "in", "headings"]),
        [pair(adr, "doc"), pair(&commit, "commit")]
    );
    // The runbook for its task, above the commit that added it (whose file names hold the
    // task's words), a memory holding some of them and the runbook of another workspace.
    let restore = ["restore", "the", "orders", "database", "from", "a", "backup"];
    assert_eq!(
        recalled(&root, &restore),
        [pair(shop, "runbook"), pair(&commit, "commit"), pair(memory, "memory"), pair(stock, "runbook")]
    );
    assert_eq!(
        recalled(&root, &["split", "search", "out", "of", "the", "monolith"]),
        [pair("resources/workspaces/shop/_plans/260310-search-service.md", "plan")]
    );
    // A scope keeps the entries of its ladder only; memories, documents and commits are
    // everyone's.
    let mut scoped = vec!["--scope", "warehouse"];
    scoped.extend_from_slice(&restore);
    assert_eq!(recalled(&root, &scoped), [pair(&commit, "commit"), pair(memory, "memory"), pair(stock, "runbook")]);
    let mut scoped = vec!["--scope", "warehouse"];
    scoped.extend_from_slice(&["numbers", "in", "headings"]);
    assert_eq!(recalled(&root, &scoped), [pair(adr, "doc"), pair(&commit, "commit")]);
}
