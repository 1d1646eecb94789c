//! Git as the sync engine (docs/memory-log.md): two clones of one bare
//! remote, each with the post-commit hook, go through what people do with branches —
//! fast-forward and three-way merges, `pull --rebase`, rebase, cherry-pick, `stash -u` and
//! `pop`, a linked worktree, branches deleted after a merge and unmerged, compaction on one
//! side and on both sides before a merge, appends from both clones at once. After every
//! step: the tree is clean once committed, every entry that should be visible is and no
//! other, no deleted entry is back, and `tmws check` passes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::memory_git::git;
use super::util::tmws;

/// One work tree: a clone, or a linked worktree.
struct Tree {
    dir: PathBuf,
}

impl Tree {
    fn git(&self, args: &[&str]) -> String {
        git(&self.dir, args)
    }

    fn tmws(&self, args: &[&str]) -> Value {
        let out = tmws(&self.dir, args);
        assert_eq!(out.code, 0, "tmws {args:?} in {}: {}{}", self.dir.display(), out.stdout, out.stderr);
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
    }

    /// Remembers `what` in `ns` and returns the entry's id.
    fn add(&self, what: &str, ns: &str) -> String {
        let content = format!("scenario note: {what}");
        self.tmws(&["--json", "memory", "add", &content, "-n", ns])["id"].as_str().unwrap().to_owned()
    }

    fn delete(&self, id: &str) {
        self.tmws(&["--json", "memory", "delete", id]);
    }

    fn commit(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-qm", message]);
        self.clean();
    }

    /// Nothing tmws did (the hook included) left the tree dirty.
    fn clean(&self) {
        assert_eq!(self.git(&["status", "--porcelain"]), "", "the tree is clean in {}", self.dir.display());
    }

    /// The ids a default search shows, and those any branch's would.
    fn ids(&self, branch: Option<&str>) -> BTreeSet<String> {
        let mut args = vec!["--json", "memory", "search", "scenario note", "--limit", "100", "--min-score", "0"];
        if let Some(b) = branch {
            args.extend(["--branch", b]);
        }
        let found = self.tmws(&args);
        found["results"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect()
    }

    /// Exactly `visible` is shown here, none of `deleted` is anywhere, and check passes.
    fn expect(&self, visible: &[&String], deleted: &[&String]) {
        let want: BTreeSet<String> = visible.iter().map(|s| (*s).clone()).collect();
        assert_eq!(self.ids(None), want, "visible in {}", self.dir.display());
        let all = self.ids(Some("*"));
        for d in deleted {
            assert!(!all.contains(*d), "deleted {d} is back in {}", self.dir.display());
        }
        let check = tmws(&self.dir, &["check"]);
        assert_eq!(check.code, 0, "check in {}: {}{}", self.dir.display(), check.stdout, check.stderr);
    }
}

/// A bare remote and two clones of it, `a` (which made the first commit) and `b`, both
/// with tmws' post-commit hook.
fn clones(top: &Path) -> (Tree, Tree) {
    let remote = top.join("remote.git");
    git(top, &["init", "-q", "--bare", "remote.git"]);
    let a = Tree { dir: top.join("a") };
    git(top, &["clone", "-q", remote.to_str().unwrap(), "a"]);
    assert_eq!(tmws(&a.dir, &["init"]).code, 0);
    a.git(&["checkout", "-qb", "main"]);
    a.commit("start");
    a.git(&["push", "-q", "origin", "main"]);
    git(top, &["clone", "-q", remote.to_str().unwrap(), "b"]);
    let b = Tree { dir: top.join("b") };
    for t in [&a, &b] {
        let hook = tmws(&t.dir, &["git-hook", "install"]);
        assert_eq!(hook.code, 0, "{}", hook.stderr);
    }
    (a, b)
}

#[test]
fn branches_merges_rebases_and_compactions_lose_hide_or_resurrect_nothing() {
    let top = tempfile::tempdir().unwrap();
    let (a, b) = clones(top.path());

    // A fast-forward: what A pushed, B sees.
    let alpha = a.add("alpha", "long-term");
    a.commit("alpha");
    a.git(&["push", "-q", "origin", "main"]);
    b.git(&["pull", "-q", "--no-rebase", "origin", "main"]);
    b.expect(&[&alpha], &[]);

    // A branch's memory shows on it, not on main until merged; then on main, also once the
    // branch is deleted.
    a.git(&["checkout", "-qb", "feat"]);
    let bravo = a.add("bravo, learned on a feature branch", "long-term");
    a.commit("bravo");
    a.expect(&[&alpha, &bravo], &[]);
    a.git(&["checkout", "-q", "main"]);
    a.expect(&[&alpha], &[]);
    a.git(&["merge", "-q", "--no-ff", "--no-edit", "feat"]);
    a.clean();
    a.git(&["branch", "-qd", "feat"]);
    a.expect(&[&alpha, &bravo], &[]);
    // An agent on main learns what was learned on the branch: MCP's memory_search has the
    // same default.
    let mcp = super::clients::Mcp::start(&a.dir);
    let found = mcp.call_fresh("memory_search", serde_json::json!({"query": "bravo feature branch", "format": "json"}));
    let found: Value = serde_json::from_str(found.text()).unwrap();
    assert_eq!(found["results"][0]["id"], Value::String(bravo.clone()), "{found}");
    mcp.stop();

    // A three-way merge of appends on both sides keeps both.
    let charlie = a.add("charlie", "long-term");
    a.commit("charlie");
    a.git(&["push", "-q", "origin", "main"]);
    let delta = b.add("delta", "long-term");
    b.commit("delta");
    b.git(&["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"]);
    b.clean();
    b.expect(&[&alpha, &bravo, &charlie, &delta], &[]);
    b.git(&["push", "-q", "origin", "main"]);
    a.git(&["pull", "-q", "--no-rebase", "origin", "main"]);
    a.expect(&[&alpha, &bravo, &charlie, &delta], &[]);

    // Compaction on one side: A deletes alpha and compacts; B appends meanwhile. The merge
    // keeps B's entry and does not bring alpha back.
    a.delete(&alpha);
    a.tmws(&["--json", "memory", "cleanup"]);
    a.commit("forget alpha");
    a.git(&["push", "-q", "origin", "main"]);
    let echo = b.add("echo", "long-term");
    b.commit("echo");
    b.git(&["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"]);
    b.clean();
    b.expect(&[&bravo, &charlie, &delta, &echo], &[&alpha]);
    b.git(&["push", "-q", "origin", "main"]);

    // Compaction on both sides: each deletes one entry and compacts, then they merge.
    a.git(&["pull", "-q", "--no-rebase", "origin", "main"]);
    a.delete(&charlie);
    a.tmws(&["--json", "memory", "cleanup"]);
    a.commit("forget charlie");
    a.git(&["push", "-q", "origin", "main"]);
    b.delete(&delta);
    b.tmws(&["--json", "memory", "cleanup"]);
    b.commit("forget delta");
    b.git(&["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"]);
    b.clean();
    b.expect(&[&bravo, &echo], &[&alpha, &charlie, &delta]);
    b.git(&["push", "-q", "origin", "main"]);

    // Appends from both clones at once, then `pull --rebase`: all of them, once.
    a.git(&["pull", "-q", "--no-rebase", "origin", "main"]);
    let from_a: Vec<String> = (0..5).map(|i| a.add(&format!("from a {i}"), "long-term")).collect();
    let from_b: Vec<String> = (0..5).map(|i| b.add(&format!("from b {i}"), "long-term")).collect();
    a.commit("five from a");
    b.commit("five from b");
    a.git(&["push", "-q", "origin", "main"]);
    b.git(&["pull", "-q", "--rebase", "origin", "main"]);
    b.clean();
    let mut all: Vec<&String> = vec![&bravo, &echo];
    all.extend(from_a.iter().chain(&from_b));
    b.expect(&all, &[&alpha, &charlie, &delta]);
    let lines = std::fs::read_to_string(b.dir.join(".tmws/memory/long-term.jsonl")).unwrap();
    for id in &all {
        let adds =
            lines.lines().filter(|l| l.contains(&format!("\"id\":\"{id}\"")) && l.contains("\"op\":\"add\"")).count();
        assert_eq!(adds, 1, "{id} is in the log once");
    }
    b.git(&["push", "-q", "origin", "main"]);
    a.git(&["pull", "-q", "--no-rebase", "origin", "main"]);
    a.expect(&all, &[&alpha, &charlie, &delta]);

    // Cherry-pick from a branch that is then deleted unmerged.
    a.git(&["checkout", "-qb", "hotfix"]);
    let foxtrot = a.add("foxtrot, a hotfix", "long-term");
    a.commit("foxtrot");
    let picked = a.git(&["rev-parse", "HEAD"]);
    a.git(&["checkout", "-q", "main"]);
    a.git(&["cherry-pick", picked.trim()]);
    a.clean();
    a.git(&["branch", "-qD", "hotfix"]);
    all.push(&foxtrot);
    a.expect(&all, &[&alpha, &charlie, &delta]);

    // Rebase a topic branch on a main that moved on.
    a.git(&["checkout", "-qb", "topic"]);
    let golf = a.add("golf, on a topic branch", "long-term");
    a.commit("golf");
    a.git(&["checkout", "-q", "main"]);
    let hotel = a.add("hotel", "long-term");
    a.commit("hotel");
    a.git(&["checkout", "-q", "topic"]);
    a.git(&["rebase", "-q", "main"]);
    a.clean();
    let mut on_topic = all.clone();
    on_topic.extend([&golf, &hotel]);
    a.expect(&on_topic, &[&alpha, &charlie, &delta]);
    a.git(&["checkout", "-q", "main"]);
    all.push(&hotel);
    a.expect(&all, &[&alpha, &charlie, &delta]);
    a.git(&["merge", "-q", "--no-edit", "topic"]);
    all.push(&golf);
    a.expect(&all, &[&alpha, &charlie, &delta]);

    // stash -u takes an uncommitted entry away, pop brings it back.
    let india = a.add("india, not committed yet", "long-term");
    a.git(&["stash", "-q", "-u"]);
    a.clean();
    a.expect(&all, &[&alpha, &charlie, &delta]);
    a.git(&["stash", "pop", "-q"]);
    all.push(&india);
    a.expect(&all, &[&alpha, &charlie, &delta]);
    a.commit("india");

    // A linked worktree on its own branch.
    let wt = Tree { dir: top.path().join("wt") };
    a.git(&["worktree", "add", "-q", "-b", "side", wt.dir.to_str().unwrap()]);
    wt.expect(&all, &[&alpha, &charlie, &delta]);
    let juliet = wt.add("juliet, written in a worktree", "long-term");
    wt.commit("juliet");
    a.expect(&all, &[&alpha, &charlie, &delta]);
    a.git(&["merge", "-q", "--no-edit", "side"]);
    all.push(&juliet);
    a.expect(&all, &[&alpha, &charlie, &delta]);
    wt.clean();
}

/// A log git does not track (here, a short-term log the project ignores) holds the
/// entries of every branch: those of the checked-out and default branch show, those of a
/// branch only once it is merged — and still after the branch is deleted — and those of a
/// branch deleted unmerged never, until gc-branches forgets them.
#[test]
fn in_an_untracked_log_merged_branches_show_and_deleted_unmerged_ones_do_not() {
    let top = tempfile::tempdir().unwrap();
    let (a, _) = clones(top.path());
    std::fs::write(a.dir.join(".gitignore"), ".tmws/cache/\n.tmws/memory/short-term.jsonl\n").unwrap();
    a.commit("keep short-term memories local");
    let on_main = a.add("kilo, on main", "short-term");
    a.clean();

    a.git(&["checkout", "-qb", "merged-later"]);
    let lima = a.add("lima, on a branch merged later", "short-term");
    std::fs::write(a.dir.join("lima.txt"), "lima\n").unwrap();
    a.commit("lima's change");
    a.expect(&[&on_main, &lima], &[]);

    a.git(&["checkout", "-q", "main"]);
    a.git(&["checkout", "-qb", "abandoned"]);
    let mike = a.add("mike, on a branch deleted unmerged", "short-term");
    std::fs::write(a.dir.join("mike.txt"), "mike\n").unwrap();
    a.commit("mike's change");
    a.git(&["checkout", "-q", "main"]);
    a.expect(&[&on_main], &[]);

    a.git(&["merge", "-q", "--no-ff", "--no-edit", "merged-later"]);
    a.expect(&[&on_main, &lima], &[]);
    a.git(&["branch", "-qd", "merged-later"]);
    a.expect(&[&on_main, &lima], &[]);
    a.git(&["branch", "-qD", "abandoned"]);
    a.expect(&[&on_main, &lima], &[]);
    assert!(a.ids(Some("*")).contains(&mike), "still in the log until gc-branches");

    let gc = a.tmws(&["--json", "memory", "gc-branches"]);
    assert_eq!(gc["ids"], serde_json::json!([mike]));
    a.expect(&[&on_main, &lima], &[&mike]);
}

/// The refIds of commits a search finds.
fn commit_hits(dir: &Path, query: &str) -> Vec<String> {
    let out = tmws(dir, &["--json", "search", query, "--kind", "commit"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let found: Value = serde_json::from_str(&out.stdout).unwrap();
    found["results"].as_array().unwrap().iter().map(|r| r["refId"].as_str().unwrap().to_owned()).collect()
}

/// Commits are searchable (kind `commit`): by subject, body, author and paths; an amended
/// commit replaces the old one, a reset takes commits away, and another branch brings its
/// own history.
#[test]
fn commits_of_the_current_history_are_searchable() {
    let top = tempfile::tempdir().unwrap();
    let (a, _) = clones(top.path());
    std::fs::create_dir_all(a.dir.join("src")).unwrap();
    std::fs::write(a.dir.join("src/retry.rs"), "// jitter\n").unwrap();
    a.git(&["add", "-A"]);
    a.git(&["commit", "-qm", "Retry with jitter", "-m", "Clients spread their retries over the window."]);
    let first = a.git(&["rev-parse", "HEAD"]).trim().to_owned();
    let id = format!("commit:{first}");
    assert_eq!(commit_hits(&a.dir, "retry jitter"), std::slice::from_ref(&id));
    assert_eq!(commit_hits(&a.dir, "spread their retries"), std::slice::from_ref(&id), "the body is searched");
    assert_eq!(commit_hits(&a.dir, "src/retry.rs"), std::slice::from_ref(&id), "and the paths");
    let all = tmws(&a.dir, &["--json", "search", "retry jitter"]);
    assert!(all.stdout.contains(&id), "a search of every kind answers with the commit: {}", all.stdout);

    // Amended: the old commit goes, the new one comes.
    a.git(&["commit", "-q", "--amend", "-m", "Retry with full jitter"]);
    let amended = a.git(&["rev-parse", "HEAD"]).trim().to_owned();
    assert_eq!(commit_hits(&a.dir, "retry jitter"), [format!("commit:{amended}")]);

    // Another branch has its own history; a reset takes commits away.
    a.git(&["checkout", "-qb", "side"]);
    std::fs::write(a.dir.join("side.txt"), "x\n").unwrap();
    a.git(&["add", "-A"]);
    a.git(&["commit", "-qm", "Side quest for the cache warmer"]);
    assert_eq!(commit_hits(&a.dir, "cache warmer").len(), 1);
    a.git(&["checkout", "-q", "main"]);
    assert!(commit_hits(&a.dir, "cache warmer").is_empty(), "main does not reach it");
    a.git(&["reset", "-q", "--hard", "HEAD~1"]);
    assert!(commit_hits(&a.dir, "retry jitter").is_empty());
    assert_eq!(commit_hits(&a.dir, "start").len(), 1);
}
