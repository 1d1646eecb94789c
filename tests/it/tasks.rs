//! Tasks and worktrees with real git, through the real binary: a task started on its own
//! branch and linked worktree, worked on there by an agent over MCP, finished with a merge
//! and found from the main worktree; a merge that conflicts refused with nothing changed;
//! a worktree deleted and a branch renamed under a task; approvals and `init` in a linked
//! worktree, which joins the main worktree's project.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::clients::{Answer, Mcp};
use super::memory_git::git;
use super::util::{Output, TestRoot, mock, tmws};

/// A repository `app` inside a temporary folder (so that the default worktrees folder,
/// `../app-worktrees`, is inside it too), initialised by tmws and committed.
struct Project {
    dir: TestRoot,
}

impl Project {
    fn new() -> Project {
        let dir = TestRoot::bare();
        let p = Project { dir };
        std::fs::create_dir_all(p.main()).unwrap();
        git(&p.main(), &["init", "-q"]);
        // The merges tmws makes are commits: they need a name, which the repository's
        // own config gives every worktree.
        git(&p.main(), &["config", "user.name", "Tester"]);
        git(&p.main(), &["config", "user.email", "tester@example.invalid"]);
        std::fs::write(p.main().join("a.txt"), "one\n").unwrap();
        assert_eq!(tmws(&p.main(), &["init"]).code, 0);
        git(&p.main(), &["add", "-A"]);
        git(&p.main(), &["commit", "-q", "-m", "start"]);
        p
    }

    fn main(&self) -> PathBuf {
        self.dir.path().join("app")
    }

    fn worktree(&self, name: &str) -> PathBuf {
        self.dir.path().join("app-worktrees").join(name)
    }

    /// `tmws --json ARGS` in the main worktree.
    fn json(&self, args: &[&str]) -> Value {
        json_of(&self.main(), args)
    }
}

fn json_of(cwd: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = tmws(cwd, &all);
    assert_eq!(out.code, 0, "tmws {args:?}: {out:?}");
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

fn commit_file(dir: &Path, file: &str, text: &str, message: &str) {
    std::fs::write(dir.join(file), text).unwrap();
    git(dir, &["add", file]);
    git(dir, &["commit", "-q", "-m", message]);
}

fn branches(dir: &Path) -> Vec<String> {
    git(dir, &["branch", "--format=%(refname:short)"]).lines().map(str::to_owned).collect()
}

/// The task lines of the main worktree's long-term log.
fn task_ops(main: &Path) -> Vec<Value> {
    let log = std::fs::read_to_string(main.join(".tmws/memory/long-term.jsonl")).unwrap_or_default();
    log.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|v| v["kind"] == "task").collect()
}

/// Makes `root` a git repository with one commit, whose tasks' worktrees go to
/// `worktrees`: for the tests that call every tool.
pub(super) fn in_git(root: &TestRoot, worktrees: &Path) {
    let config = std::fs::read_to_string(root.path().join(".tmws/config.toml")).unwrap_or_default();
    let tasks = format!("\n[tasks]\nworktrees_dir = {:?}\n", worktrees.display().to_string());
    root.write(".tmws/config.toml", config + &tasks);
    // The cache is this machine's, never committed (a committed one is set aside).
    root.write(".gitignore", ".tmws/cache/\n");
    git(root.path(), &["init", "-q"]);
    git(root.path(), &["config", "user.name", "Tester"]);
    git(root.path(), &["config", "user.email", "tester@example.invalid"]);
    git(root.path(), &["add", "-A"]);
    git(root.path(), &["commit", "-q", "-m", "start"]);
}

/// The one error line of a failed run.
fn error_line(out: &Output) -> &str {
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
    out.stderr.trim_end()
}

#[test]
fn a_task_worked_on_over_mcp_and_merged_is_found_from_the_main_worktree() {
    let p = Project::new();
    let started = p.json(&["task", "start", "login-fix", "--issue", "#12"]);
    let wt = p.worktree("login-fix");
    assert_eq!(
        started,
        json!({
            "name": "login-fix",
            "branch": "login-fix",
            "from": "main",
            "worktree": wt.canonicalize().unwrap().display().to_string(),
            "issue": "#12",
            "memory": started["memory"],
        })
    );
    assert!(wt.join("a.txt").is_file());
    assert_eq!(branches(&p.main()), ["login-fix", "main"]);
    assert!(git(&p.main(), &["worktree", "list"]).contains("[login-fix]"));
    let ops = task_ops(&p.main());
    assert_eq!(ops.len(), 1, "{ops:?}");
    assert_eq!(ops[0]["key"], "task/login-fix");
    assert_eq!(ops[0]["task"]["state"], "open");
    assert_eq!(ops[0]["task"]["issue"], "#12");
    assert_eq!(ops[0]["task"]["branch"], "login-fix");
    assert_eq!(ops[0]["task"]["worktree"], started["worktree"]);

    // An agent works in the worktree: a memory, a commit, and its session recorded when
    // it ends.
    let mcp = Mcp::start(&wt);
    let added =
        mcp.call("memory_add", json!({"content": "Login tokens refresh with jitter so that clients spread out."}));
    assert!(matches!(added, Answer::Ok(_)), "{added:?}");
    mcp.stop();
    commit_file(&wt, "b.txt", "two\n", "Refresh tokens with jitter");

    let listed = p.json(&["task", "list"]);
    let task = &listed["tasks"][0];
    assert_eq!(
        (&task["name"], &task["branch"], &task["worktree_exists"], &task["issue"]),
        (&json!("login-fix"), &json!("login-fix"), &json!(true), &json!("#12"))
    );
    assert_eq!((&task["sessions"], &task["memories"], &task["commits"]), (&json!(1), &json!(2), &json!(1)), "{task}");

    let done = p.json(&["task", "done", "login-fix", "--merge", "--outcome", "tokens refresh with jitter"]);
    assert_eq!(
        (&done["merged"], &done["worktree_removed"], &done["branch_deleted"], &done["memories_kept"], &done["commits"]),
        (&json!(true), &json!(true), &json!(true), &json!(2), &json!(1)),
        "{done}"
    );
    assert!(!wt.exists());
    assert_eq!(branches(&p.main()), ["main"]);
    assert_eq!(git(&p.main(), &["log", "-1", "--format=%s"]).trim(), "Merge task login-fix");
    assert_eq!(std::fs::read_to_string(p.main().join("b.txt")).unwrap(), "two\n");

    // From the main worktree: the agent's memory, and the task as done.
    let recalled = tmws(&p.main(), &["recall", "login tokens refresh jitter"]);
    assert!(recalled.stdout.contains("Login tokens refresh with jitter so that clients spread out."), "{recalled:?}");
    assert_eq!(p.json(&["task", "list"]), json!({"tasks": []}));
    let all = p.json(&["task", "list", "--all"]);
    assert_eq!((&all["tasks"][0]["state"], &all["tasks"][0]["commits"]), (&json!("done"), &json!(1)));
    let ops = task_ops(&p.main());
    let last = ops.last().unwrap();
    assert_eq!(
        (&last["task"]["state"], &last["task"]["merged"], &last["task"]["outcome"]),
        (&json!("done"), &json!(true), &json!("tokens refresh with jitter"))
    );
    assert_eq!(last["task"]["commits"][0]["subject"], "Refresh tokens with jitter");
    assert_eq!(last["task"]["sessions"].as_array().map(Vec::len), Some(1), "{last}");
}

/// Regression: with the memory logs tracked, the task's own entry, written in the main
/// worktree's log when it started, made git refuse to merge a branch that added to the
/// same log.
#[test]
fn a_task_merges_into_a_main_worktree_whose_tracked_log_holds_its_entry() {
    let p = Project::new();
    assert_eq!(tmws(&p.main(), &["memory", "add", "Releases go out on Tuesdays.", "-n", "long-term"]).code, 0);
    git(&p.main(), &["add", ".tmws/memory"]);
    git(&p.main(), &["commit", "-q", "-m", "Memories"]);
    p.json(&["task", "start", "tracked"]);
    let wt = p.worktree("tracked");
    let added = tmws(&wt, &["memory", "add", "The billing queue retries three times.", "-n", "long-term"]);
    assert_eq!(added.code, 0, "{added:?}");
    git(&wt, &["add", ".tmws/memory"]);
    git(&wt, &["commit", "-q", "-m", "A memory of the task"]);

    let done = p.json(&["task", "done", "tracked", "--merge"]);
    assert_eq!((&done["merged"], &done["worktree_removed"]), (&json!(true), &json!(true)), "{done}");
    let log = std::fs::read_to_string(p.main().join(".tmws/memory/long-term.jsonl")).unwrap();
    for text in ["Releases go out on Tuesdays.", "The billing queue retries three times.", "\"task/tracked\""] {
        assert!(log.contains(text), "{text}: {log}");
    }
    // The task's entries are the one change left in the main worktree, as before.
    assert_eq!(git(&p.main(), &["status", "--porcelain", "--untracked-files=no"]), " M .tmws/memory/long-term.jsonl\n");
    assert_eq!(git(&p.main(), &["stash", "list"]), "");
    let recalled = tmws(&p.main(), &["recall", "billing queue retries"]);
    assert!(recalled.stdout.contains("The billing queue retries three times."), "{recalled:?}");
}

#[test]
fn a_merge_that_conflicts_is_refused_and_changes_nothing() {
    let p = Project::new();
    p.json(&["task", "start", "clash"]);
    let wt = p.worktree("clash");
    commit_file(&wt, "a.txt", "theirs\n", "Theirs");
    commit_file(&p.main(), "a.txt", "ours\n", "Ours");
    let before = |dir: &Path| git(dir, &["rev-parse", "main", "clash"]);
    let revs = before(&p.main());
    let log = std::fs::read(p.main().join(".tmws/memory/long-term.jsonl")).unwrap();

    let out = tmws(&p.main(), &["task", "done", "clash", "--merge"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        error_line(&out),
        "tmws: task `clash`: clash does not merge cleanly into main (conflicts in a.txt); nothing was changed: merge \
it by hand, or run task done without --merge"
    );
    assert_eq!(before(&p.main()), revs);
    assert_eq!(git(&p.main(), &["status", "--porcelain", "--untracked-files=no"]), "");
    assert!(!p.main().join(".git/MERGE_HEAD").exists());
    assert_eq!(std::fs::read_to_string(p.main().join("a.txt")).unwrap(), "ours\n");
    assert_eq!(std::fs::read_to_string(wt.join("a.txt")).unwrap(), "theirs\n");
    assert_eq!(std::fs::read(p.main().join(".tmws/memory/long-term.jsonl")).unwrap(), log);
    assert_eq!(p.json(&["task", "list"])["tasks"][0]["name"], "clash");

    // Uncommitted work in the worktree is refused too, before any merge.
    std::fs::write(wt.join("c.txt"), "wip\n").unwrap();
    let out = tmws(&p.main(), &["task", "done", "clash", "--merge"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(error_line(&out).contains("has changes not committed (c.txt)"), "{out:?}");
    assert_eq!(before(&p.main()), revs);
}

#[test]
fn a_deleted_worktree_is_listed_as_gone_and_the_task_can_still_be_done() {
    let p = Project::new();
    p.json(&["task", "start", "gone"]);
    let wt = p.worktree("gone");
    commit_file(&wt, "g.txt", "g\n", "G");
    std::fs::remove_dir_all(&wt).unwrap();
    git(&p.main(), &["worktree", "prune"]);
    let task = &p.json(&["task", "list"])["tasks"][0];
    assert_eq!(task["worktree_exists"], false);
    assert_eq!(task["notes"], json!([format!("worktree {} is gone", task["worktree"].as_str().unwrap())]));
    assert_eq!(task["commits"], 1);
    let done = p.json(&["task", "done", "gone", "--merge"]);
    assert_eq!(
        (&done["merged"], &done["worktree_removed"], &done["branch_deleted"]),
        (&json!(true), &json!(false), &json!(true))
    );
    assert!(p.main().join("g.txt").is_file());
    assert_eq!(branches(&p.main()), ["main"]);
}

#[test]
fn a_renamed_branch_is_followed_through_its_worktree() {
    let p = Project::new();
    p.json(&["task", "start", "old-name"]);
    let wt = p.worktree("old-name");
    git(&wt, &["branch", "-m", "new-name"]);
    commit_file(&wt, "r.txt", "r\n", "R");
    let task = &p.json(&["task", "list"])["tasks"][0];
    assert_eq!((&task["name"], &task["branch"], &task["commits"]), (&json!("old-name"), &json!("new-name"), &json!(1)));
    assert_eq!(task["notes"], json!(["branch renamed from old-name to new-name"]));
    let done = p.json(&["task", "done", "old-name", "--merge"]);
    assert_eq!((&done["branch"], &done["merged"]), (&json!("new-name"), &json!(true)));
    assert_eq!(branches(&p.main()), ["main"]);
    assert!(!wt.exists());
}

#[test]
fn a_linked_worktree_shares_the_approvals_of_its_main_worktree() {
    let p = Project::new();
    let config = json!({"mcpServers": {"srv": {"command": mock(), "args": ["--name", "srv"]}}});
    commit_file(&p.main(), ".mcp.json", &config.to_string(), "A server");
    let approved = tmws(&p.main(), &["registry", "approve", "srv", "--yes"]);
    assert_eq!(approved.code, 0, "{approved:?}");
    // The registry it built is the project's, and committed as such.
    git(&p.main(), &["add", ".tmws/registry"]);
    git(&p.main(), &["commit", "-q", "-m", "The registry"]);
    p.json(&["task", "start", "shared"]);
    let wt = p.worktree("shared");
    assert_eq!(json_of(&wt, &["registry", "list"])[0]["approval"], "approved");
    let echoed = tmws(&wt, &["registry", "call", "srv", "echo", r#"{"text":"from the worktree"}"#]);
    assert_eq!((echoed.code, echoed.stdout.as_str()), (0, "from the worktree\n"), "{echoed:?}");
    // The call is in the usage log of the project, the main worktree's.
    let usage = std::fs::read_to_string(p.main().join(".tmws/cache/usage.jsonl")).unwrap();
    assert!(usage.contains(r#""server":"srv","tool":"echo""#), "{usage}");
    assert!(!wt.join(".tmws/cache/usage.jsonl").exists());
}

#[test]
fn init_in_a_linked_worktree_names_the_project_it_joins() {
    let p = Project::new();
    p.json(&["task", "start", "joined"]);
    let wt = p.worktree("joined");
    let out = tmws(&wt, &["init"]);
    assert_eq!(out.code, 0, "{out:?}");
    let main = p.main().canonicalize().unwrap();
    assert!(
        out.stdout.contains(&format!(
            "linked git worktree: joins the project of {} (approvals, usage and commit links are shared with it)\n",
            main.display()
        )),
        "{}",
        out.stdout
    );
    // The tracked config is the branch's: init keeps it, and makes no second one.
    assert!(out.stdout.contains("unchanged  .tmws/config.toml"), "{}", out.stdout);
    assert_eq!(json_of(&wt, &["init"])["joins"], main.display().to_string());
    assert_eq!(json_of(&p.main(), &["init"]).get("joins"), None);
}

/// Regression: in a project whose `.tmws/` git does not track, tmws run in a task's
/// worktree found no root.
#[test]
fn a_task_worktree_is_a_root_even_when_git_does_not_track_tmws_files() {
    let dir = TestRoot::bare();
    let main = dir.path().join("app");
    std::fs::create_dir_all(&main).unwrap();
    git(&main, &["init", "-q"]);
    commit_file(&main, "a.txt", "one\n", "start");
    assert_eq!(tmws(&main, &["init"]).code, 0);
    json_of(&main, &["task", "start", "untracked"]);
    let wt = dir.path().join("app-worktrees/untracked");
    let added = tmws(&wt, &["memory", "add", "Kept in the worktree."]);
    assert_eq!(added.code, 0, "{added:?}");
    assert!(
        std::fs::read_to_string(wt.join(".tmws/memory/short-term.jsonl")).unwrap().contains("Kept in the worktree.")
    );
}

#[test]
fn task_names_and_requests_that_cannot_be_taken_fail_with_one_clear_line() {
    let p = Project::new();
    for (args, code, line) in [
        (
            vec!["task", "start", "../escape"],
            2,
            "tmws: task name `../escape`: it must start with a letter or a digit; use 1 to 64 letters, digits, `.`, \
`_` or `-`, starting with a letter or a digit",
        ),
        (
            vec!["task", "start", "a/b"],
            2,
            "tmws: task name `a/b`: `/` is not allowed; use 1 to 64 letters, digits, `.`, `_` or `-`, starting with a \
letter or a digit",
        ),
        (vec!["task", "start", "x", "--from", "nope"], 1, "tmws: no branch `nope` to start the task from"),
        (
            vec!["task", "start", "main"],
            1,
            "tmws: a branch `main` exists already: choose another task name, or delete the branch",
        ),
        (vec!["task", "done", "nothing"], 1, "tmws: no open task `nothing` (tmws task list shows the open ones)"),
    ] {
        let out = tmws(&p.main(), &args);
        assert_eq!((out.code, error_line(&out)), (code, line), "{args:?}");
    }
    assert!(!p.dir.path().join("escape").exists());
    // A repository's config cannot send a worktree elsewhere on the machine.
    let config = std::fs::read_to_string(p.main().join(".tmws/config.toml")).unwrap();
    std::fs::write(
        p.main().join(".tmws/config.toml"),
        config + "\n[tasks]\nworktrees_dir = \"../../../../elsewhere\"\n",
    )
    .unwrap();
    let out = tmws(&p.main(), &["task", "start", "away"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(error_line(&out).starts_with("tmws: tasks.worktrees_dir names /elsewhere, outside "), "{out:?}");
    assert_eq!(branches(&p.main()), ["main"]);
    // Outside git, a task cannot start.
    let plain = TestRoot::new();
    let out = plain.run(&["task", "list"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(error_line(&out).ends_with("is not in one (git init, then commit)"), "{out:?}");
}
