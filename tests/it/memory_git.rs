//! Memories and a real git: the post-commit hook (installed beside an existing one) reads
//! each commit into the commit-link cache and writes nothing tracked, a session entry
//! sums up memories and commits, and a merge of two branches that both appended keeps
//! both sides' entries (`merge=union`).

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use super::util::{Output, TestRoot, eventually};

fn json(out: &Output) -> Value {
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// Runs git in `dir` with no user or system configuration but a fixed identity.
pub(super) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=Tester", "-c", "user.email=tester@example.invalid", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("TMWS_LOG")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn log_lines(root: &TestRoot, ns: &str) -> Vec<Value> {
    root.read(&format!(".tmws/memory/{ns}.jsonl")).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// A git repository with `tmws init` done and committed on `main`.
pub(super) fn repo() -> TestRoot {
    let root = TestRoot::bare();
    git(root.path(), &["init", "-q"]);
    assert_eq!(root.run(&["init"]).code, 0);
    root.write("README.md", "# demo\n");
    git(root.path(), &["add", "-A"]);
    git(root.path(), &["commit", "-qm", "start"]);
    root
}

#[test]
fn the_post_commit_hook_writes_nothing_tracked_and_keeps_the_hook_that_was_there() {
    let root = repo();
    // Someone's hook, already in place.
    root.write(".git/hooks/post-commit", "#!/bin/sh\necho ran >> \"$(git rev-parse --show-toplevel)/.git/hook-ran\"\n");
    make_executable(&root.path().join(".git/hooks/post-commit"));
    // tmws asks git where hooks go: with the same (empty) configuration as the commits.
    let install = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_tmws"))
            .env("TMWS_CONFIG_HOME", super::util::user_config())
            .args(args)
            .current_dir(root.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let installed: Value = serde_json::from_str(&install(&["--json", "git-hook", "install"])).unwrap();
    assert_eq!((&installed["installed"], &installed["chained"]), (&json!(true), &json!(true)));
    let again = install(&["git-hook", "install"]);
    assert!(again.starts_with("already installed: "), "{again}");
    let hook = root.read(".git/hooks/post-commit");
    assert!(!hook.contains("--root"), "the hook names no root, so the repository can move: {hook}");

    let before = git(root.path(), &["rev-parse", "HEAD"]);
    let added = json(&root.run(&["--json", "memory", "add", "the retry loop needs a jitter", "-n", "long-term"]));
    assert_eq!(log_lines(&root, "long-term")[0]["git"]["commit"], before.trim()[..12]);
    root.write("src/retry.rs", "// jitter\n");
    git(root.path(), &["add", "-A"]);
    git(root.path(), &["commit", "-qm", "retry with jitter"]);
    let head = git(root.path(), &["rev-parse", "HEAD"]);

    assert_eq!(root.read(".git/hook-ran"), "ran\n", "the hook that was there ran too");
    // Regression: the hook appended link ops to the tracked log, so the tree was dirty
    // right after every commit and `git checkout` refused to switch.
    assert_eq!(git(root.path(), &["status", "--porcelain"]), "", "the tree is clean after the commit");
    assert_eq!(log_lines(&root, "long-term").len(), 1);
    // The hook read the commit into the cache; answers show it.
    let cached: Value = serde_json::from_str(&root.read(".tmws/cache/commit-links.json")).unwrap();
    assert_eq!(cached["head"], head.trim());
    let introduced = json!({"commit": head.trim()[..12], "subject": "retry with jitter",
        "files": [".tmws/memory/long-term.jsonl", "src/retry.rs"]});
    let got = json(&root.run(&["--json", "memory", "get", added["id"].as_str().unwrap()]));
    assert_eq!(got["introduced_in"], introduced);
    let found = json(&root.run(&["--json", "memory", "search", "retry jitter"]));
    assert_eq!(found["results"][0]["introduced_in"], introduced);
    let linked = json(&root.run(&["--json", "memory", "link-commit"]));
    assert_eq!((&linked["linked"], &linked["ids"]), (&json!(1), &json!([added["id"]])));

    // Regression: the hook named the root by its absolute path, so after a move every
    // commit linked nothing, silently. Moved, it still reads each new commit.
    let elsewhere = tempfile::tempdir().unwrap();
    let moved = elsewhere.path().join("moved");
    std::fs::rename(root.path(), &moved).unwrap();
    let note =
        super::util::tmws(&moved, &["--json", "memory", "add", "moved repositories keep working", "-n", "long-term"]);
    assert_eq!(note.code, 0, "{}", note.stderr);
    git(&moved, &["add", "-A"]);
    git(&moved, &["commit", "-qm", "after the move"]);
    let head = git(&moved, &["rev-parse", "HEAD"]);
    let cached: Value =
        serde_json::from_str(&std::fs::read_to_string(moved.join(".tmws/cache/commit-links.json")).unwrap()).unwrap();
    assert_eq!(cached["head"], head.trim());
    assert_eq!(git(&moved, &["status", "--porcelain"]), "");
    std::fs::rename(&moved, root.path()).unwrap();
}

#[cfg(unix)]
fn make_executable(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[cfg(not(unix))]
fn make_executable(_: &Path) {}

#[test]
fn a_session_entry_sums_up_memories_commits_and_tool_calls() {
    let root = repo();
    let since = git(root.path(), &["log", "-1", "--format=%H"]);
    json(&root.run(&[
        "--json",
        "memory",
        "add",
        "flaky test traced to a shared port",
        "--kind",
        "problem",
        "--agent",
        "claude",
    ]));
    json(&root.run(&["--json", "memory", "add", "bind tests to port 0", "--agent", "codex"]));
    root.write("tests/net.rs", "// port 0\n");
    git(root.path(), &["add", "tests/net.rs"]);
    git(root.path(), &["commit", "-qm", "tests bind to port 0"]);
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    root.write(
        ".tmws/registry/usage.jsonl",
        format!(
            "{}\n{}\n{}\n",
            json!({"server": "serena", "tool": "find_symbol", "at": now, "ms": 12, "ok": true}),
            json!({"server": "serena", "tool": "find_symbol", "at": now, "ms": 9, "ok": false}),
            json!({"server": "context7", "tool": "get-library-docs", "at": "2020-01-01T00:00:00Z", "ms": 40, "ok": true})
        ),
    );
    let rec = json(&root.run(&["--json", "session", "record", "--since", since.trim(), "--agent", "claude"]));
    assert_eq!(
        (&rec["recorded"], &rec["memories"], &rec["commits"], &rec["tool_calls"]),
        (&json!(true), &json!(2), &json!(1), &json!(2))
    );
    let entry = log_lines(&root, "long-term").pop().unwrap();
    assert_eq!((&entry["kind"], &entry["id"]), (&json!("session"), &rec["id"]));
    let content = entry["content"].as_str().unwrap();
    assert!(content.contains("- [problem] flaky test traced to a shared port (m_"), "{content}");
    assert!(content.contains("tests bind to port 0 (tests/net.rs)"), "{content}");
    assert!(content.contains("- serena/find_symbol × 2, 1 failed"), "{content}");
    assert!(!content.contains("context7"), "calls before the window are left out: {content}");
    assert_eq!(entry["session"]["agents"], json!(["claude", "codex"]));
    assert!(
        entry["summary"]
            .as_str()
            .unwrap()
            .ends_with(": 2 memories (1 note, 1 problem), 1 commits, 2 tool calls; agents: claude, codex."),
        "{}",
        entry["summary"]
    );
    // Found as a session later; and a second record right after has nothing new.
    let found = json(&root.run(&["--json", "memory", "search", "flaky port", "--kind", "session"]));
    assert_eq!(found["results"][0]["id"], rec["id"]);
    let nothing = json(&root.run(&["--json", "session", "record"]));
    assert_eq!(nothing["recorded"], false);
    let bad = root.run(&["session", "record", "--since", "not-a-commit"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("is neither a time"), "{}", bad.stderr);
}

#[test]
fn a_merge_of_two_branches_that_both_appended_keeps_both_sides() {
    let root = repo();
    json(&root.run(&["--json", "memory", "add", "shared base entry", "-n", "long-term"]));
    git(root.path(), &["add", "-A"]);
    git(root.path(), &["commit", "-qm", "base memory"]);
    git(root.path(), &["checkout", "-qb", "feature"]);
    let theirs = json(&root.run(&["--json", "memory", "add", "written on the feature branch", "-n", "long-term"]));
    git(root.path(), &["commit", "-qam", "feature memory"]);
    git(root.path(), &["checkout", "-q", "main"]);
    let ours = json(&root.run(&["--json", "memory", "add", "written on main meanwhile", "-n", "long-term"]));
    git(root.path(), &["commit", "-qam", "main memory"]);
    git(root.path(), &["merge", "-q", "--no-edit", "feature"]);

    let lines = log_lines(&root, "long-term");
    assert_eq!(lines.len(), 3, "every line valid, none lost: {lines:?}");
    let found = json(&root.run(&["--json", "memory", "search", "written", "--branch", "*"]));
    let mut ids: Vec<&str> = found["results"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    let mut want = vec![theirs["id"].as_str().unwrap(), ours["id"].as_str().unwrap()];
    want.sort_unstable();
    assert_eq!(ids, want);
}

/// Regression: `session record` stored every changed file of every commit in its
/// structured field (one 49 KB line for a commit of 1,256 files).
#[test]
fn a_session_keeps_at_most_twenty_files_of_a_commit() {
    let root = repo();
    let since = git(root.path(), &["rev-parse", "HEAD"]);
    for i in 0..30 {
        root.write(&format!("gen/file{i:02}.txt"), "x\n");
    }
    git(root.path(), &["add", "-A"]);
    git(root.path(), &["commit", "-qm", "generate thirty files"]);
    let rec = json(&root.run(&["--json", "session", "record", "--since", since.trim()]));
    assert_eq!((&rec["recorded"], &rec["commits"]), (&json!(true), &json!(1)));
    let entry = log_lines(&root, "long-term").pop().unwrap();
    let commit = &entry["session"]["commits"][0];
    assert_eq!(commit["files"].as_array().unwrap().len(), 20);
    assert_eq!((&commit["files"][0], &commit["more_files"]), (&json!("gen/file00.txt"), &json!(10)));
    assert!(entry["session"].get("more_commits").is_none(), "{entry}");
}

/// Regression: the upkeep inside `tmws watch`, `mcp` and `serve` compacted every memory
/// log, tracked ones too: once a day, by itself, it rewrote a file git tracks and left the
/// tree dirty with nobody having asked. Now it leaves tracked logs as they are (and says
/// which), still compacts a log git does not track, and `memory cleanup` given by hand
/// compacts a tracked one.
#[test]
fn the_upkeep_leaves_tracked_logs_alone_and_the_tree_clean() {
    let root = repo();
    // Due at once (it never ran) and not again during the test: a second run, which finds
    // nothing to do, would replace the record of the first.
    root.write(".tmws/config.toml", "[upkeep]\nevery_secs = 3600\nidle_secs = 0\n");
    let past = (chrono::Utc::now() - chrono::Duration::days(1)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let line = |id: &str, ns: &str, content: &str, expires: &str| {
        json!({"op": "add", "id": id, "ns": ns, "at": past, "expires_at": expires, "kind": "note",
               "content": content, "summary": content, "tags": [], "source": "user"})
        .to_string()
    };
    let tracked = format!(
        "{}\n{}\n",
        line("m_00000000000a", "long-term", "expired and tracked", &past),
        line("m_00000000000b", "long-term", "lasting and tracked", "2099-01-01T00:00:00Z")
    );
    root.write(".tmws/memory/long-term.jsonl", &tracked);
    root.write(
        ".tmws/memory/short-term.jsonl",
        format!("{}\n", line("m_00000000000c", "short-term", "expired", &past)),
    );
    let ignore = root.read(".gitignore");
    root.write(".gitignore", format!("{ignore}.tmws/memory/short-term.jsonl\n"));
    git(root.path(), &["add", "-A"]);
    git(root.path(), &["commit", "-qm", "memories"]);
    assert_eq!(git(root.path(), &["status", "--porcelain"]), "");

    let mut watch = Command::new(env!("CARGO_BIN_EXE_tmws"))
        .arg("--root")
        .arg(root.path())
        .arg("watch")
        .env("TMWS_CONFIG_HOME", super::util::user_config())
        .env_remove("TMWS_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let upkeep = root.path().join(".tmws/cache/upkeep.json");
    let ran = eventually("the upkeep's record of its run", || std::fs::read(&upkeep));
    let _ = watch.kill();
    let _ = watch.wait();
    let ran: Value = serde_json::from_slice(&ran).unwrap();
    assert_eq!((&ran["removed_expired"], &ran["left_tracked"]), (&json!(1), &json!(["long-term"])), "{ran}");
    assert_eq!(root.read(".tmws/memory/short-term.jsonl"), "", "the untracked log is compacted");
    assert_eq!(root.read(".tmws/memory/long-term.jsonl"), tracked, "the tracked log is left as it was");
    assert_eq!(git(root.path(), &["status", "--porcelain"]), "");
    let listed = json(&root.run(&["--json", "memory", "list", "--namespace", "long-term"]));
    assert_eq!(listed["results"].as_array().unwrap().len(), 1, "an expired entry is hidden all the same: {listed}");

    let cleaned = json(&root.run(&["--json", "memory", "cleanup"]));
    assert_eq!(cleaned["removed_expired"], 1, "{cleaned}");
    assert_eq!(log_lines(&root, "long-term").len(), 1);
    assert_eq!(log_lines(&root, "long-term")[0]["id"], "m_00000000000b");
}

#[test]
fn memories_left_only_in_a_stash_are_a_finding_with_the_command_that_brings_them_back() {
    let root = repo();
    let stashed = json(&root.run(&["--json", "memory", "add", "the numbat note that ends up stashed"]))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    git(root.path(), &["stash", "-q", "-u"]);
    json(&root.run(&["--json", "memory", "add", "a note written while the stash waits"]));
    // The log exists again, so the stash does not pop: it stays, holding the first note.
    let pop = Command::new("git").args(["stash", "pop", "-q"]).current_dir(root.path()).output().unwrap();
    assert!(!pop.status.success(), "{}", String::from_utf8_lossy(&pop.stderr));

    let check = root.run(&["check", "--format", "json"]);
    assert_eq!(check.code, 0, "a warning: {check:?}");
    let findings: Value = serde_json::from_str(&check.stdout).unwrap();
    let stash: Vec<&Value> = findings.as_array().unwrap().iter().filter(|f| f["rule"] == "stashed-memory").collect();
    assert_eq!(stash.len(), 1, "{findings}");
    assert_eq!(stash[0]["path"], ".tmws/memory/short-term.jsonl");
    assert_eq!(stash[0]["severity"], "warning");
    assert_eq!(
        stash[0]["message"],
        format!("1 memory is only in stash@{{0}}^3 ({stashed}): no query sees it").as_str()
    );
    // The human output's hint is the command; run it as written.
    let human = root.run(&["check"]);
    let hint = human.stdout.lines().find_map(|l| l.trim().strip_prefix("= hint: ")).unwrap().to_owned();
    let command = hint.split("   (").next().unwrap();
    let ran = Command::new("sh").args(["-c", command]).current_dir(root.path()).output().unwrap();
    assert!(ran.status.success(), "{command}: {}", String::from_utf8_lossy(&ran.stderr));

    let found = json(&root.run(&["--json", "memory", "search", "numbat"]));
    assert_eq!(found["results"][0]["id"], stashed.as_str(), "{found}");
    let check = root.run(&["check", "--format", "json"]);
    assert!(!check.stdout.contains("stashed-memory"), "{check:?}");
}
