//! `tmws watch` as a real process: file events become index changes, a second process
//! follows and takes over, and kill -9 mid-sync converges on the next run.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use super::util::{PATIENCE, TestRoot, eventually, tmws_at};

/// A running `tmws watch` whose stdout lines arrive on a channel.
struct Watch {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Watch {
    fn start(root: &TestRoot) -> Watch {
        Watch::start_with(root, &["watch"])
    }

    /// `tmws` with `args` (a watch with flags).
    fn start_with(root: &TestRoot, args: &[&str]) -> Watch {
        Watch::start_exe(std::path::Path::new(env!("CARGO_BIN_EXE_tmws")), root, args)
    }

    /// The tmws binary at `exe` (a copy of the one built) with `args`.
    fn start_exe(exe: &std::path::Path, root: &TestRoot, args: &[&str]) -> Watch {
        let mut child = Command::new(exe)
            .env("TMWS_CONFIG_HOME", super::util::user_config())
            .args(args)
            .current_dir(root.path())
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Both streams arrive as lines on one channel (errors go to stderr).
        let (tx, rx) = channel();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        fn forward(stream: impl std::io::Read + Send + 'static, tx: std::sync::mpsc::Sender<String>) {
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        forward(stdout, tx.clone());
        forward(stderr, tx);
        Watch { child, lines: rx, seen: Vec::new() }
    }

    /// Waits for a line that starts with `prefix`.
    fn expect(&mut self, prefix: &str) -> String {
        self.expect_where(prefix, |line| line.starts_with(prefix))
    }

    /// Waits for a line that holds `text`.
    fn expect_holding(&mut self, text: &str) -> String {
        self.expect_where(text, |line| line.contains(text))
    }

    fn expect_where(&mut self, what: &str, found: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if found(&line) {
                        return line;
                    }
                }
                Err(_) => break,
            }
        }
        panic!("no line like {what:?}; saw {:?}", self.seen);
    }

    fn signal(&self, sig: &str) {
        let ok = Command::new("kill").args([sig, &self.child.id().to_string()]).status().unwrap().success();
        assert!(ok);
    }

    fn wait(mut self) -> i32 {
        let status = eventually("the exit of watch", || self.child.try_wait().unwrap());
        status.code().unwrap_or(-1)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn lesson(word: &str) -> String {
    format!("---\nname: {word}\ndescription: about {word}\ncreated: 2026-11-22\n---\n{word} body\n")
}

fn found(root: &TestRoot, q: &str) -> Vec<String> {
    let out = root.run(&["--json", "search", q]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    v["results"].as_array().unwrap().iter().map(|h| h["refId"].as_str().unwrap().to_owned()).collect()
}

const L: &str = "resources/workspaces/w/_lessons";

#[test]
fn creates_edits_renames_deletes_and_new_folders_are_applied() {
    let root = TestRoot::new().file(&format!("{L}/260101-a.md"), lesson("alpha"));
    let mut w = Watch::start(&root);
    w.expect("synced: 1 new, 0 changed, 0 removed");

    root.write(&format!("{L}/260102-b.md"), lesson("bravo"));
    assert_eq!(w.expect("new "), format!("new      {L}/260102-b.md"));
    assert_eq!(found(&root, "bravo"), vec![format!("{L}/260102-b.md")]);

    root.write(&format!("{L}/260101-a.md"), lesson("charlie"));
    assert_eq!(w.expect("changed "), format!("changed  {L}/260101-a.md"));
    assert_eq!(found(&root, "charlie"), vec![format!("{L}/260101-a.md")]);
    assert!(found(&root, "alpha").is_empty());

    std::fs::rename(root.path().join(format!("{L}/260102-b.md")), root.path().join(format!("{L}/260103-b.md")))
        .unwrap();
    w.expect(&format!("new      {L}/260103-b.md"));
    assert_eq!(found(&root, "bravo"), vec![format!("{L}/260103-b.md")]);

    // mkdir -p then write at once: inotify reports only the top folder.
    root.write("resources/workspaces/w/d/r/_plans/261122-deep.md", lesson("delta"));
    w.expect("new      resources/workspaces/w/d/r/_plans/261122-deep.md");

    std::fs::remove_dir_all(root.path().join("resources/workspaces/w/d")).unwrap();
    w.expect("removed  resources/workspaces/w/d/r/_plans/261122-deep.md");
    assert!(found(&root, "delta").is_empty());

    // A bad file is indexed anyway and the loop goes on.
    root.write(&format!("{L}/260104-bad.md"), "---\nname: [oops\n---\necho body\n");
    w.expect(&format!("new      {L}/260104-bad.md"));
    root.write(&format!("{L}/260105-fox.md"), lesson("foxtrot"));
    w.expect(&format!("new      {L}/260105-fox.md"));
    assert_eq!(found(&root, "echo"), vec![format!("{L}/260104-bad.md")]);

    w.signal("-INT");
    assert_eq!(w.wait(), 0);
}

#[test]
fn watch_json_prints_one_object_per_applied_change() {
    let root = TestRoot::new().file(&format!("{L}/260101-a.md"), lesson("alpha"));
    let mut w = Watch::start_with(&root, &["watch", "--json"]);
    let synced: serde_json::Value = serde_json::from_str(&w.expect("{\"event\":\"synced\"")).unwrap();
    assert_eq!(
        (&synced["new"], &synced["changed"], &synced["removed"], &synced["items"], &synced["rebuilt"]),
        (&1.into(), &0.into(), &0.into(), &1.into(), &false.into())
    );
    root.write(&format!("{L}/260102-b.md"), lesson("bravo"));
    assert_eq!(
        w.expect("{\"event\":\"change\""),
        format!("{{\"event\":\"change\",\"change\":\"new\",\"path\":\"{L}/260102-b.md\"}}")
    );
    std::fs::remove_file(root.path().join(format!("{L}/260101-a.md"))).unwrap();
    assert_eq!(
        w.expect("{\"event\":\"change\""),
        format!("{{\"event\":\"change\",\"change\":\"removed\",\"path\":\"{L}/260101-a.md\"}}")
    );
    // A broken file is a problem object on stdout, with the fields of `check --json`.
    root.write(&format!("{L}/260103-bad.md"), "---\nname: [oops\n---\nbody\n");
    let problem: serde_json::Value = serde_json::from_str(&w.expect("{\"event\":\"problem\"")).unwrap();
    assert_eq!(
        (&problem["path"], &problem["severity"], &problem["rule"]),
        (&format!("{L}/260103-bad.md").into(), &"error".into(), &"yaml-syntax".into())
    );
    // Every line on stdout was one JSON object (stderr says only where it watches).
    for line in w.seen.iter().filter(|l| !l.starts_with("watching ")) {
        assert!(serde_json::from_str::<serde_json::Value>(line).is_ok_and(|v| v.is_object()), "{line}");
    }
    w.signal("-INT");
    assert_eq!(w.wait(), 0);
}

#[test]
fn ignored_files_stay_out_when_they_change_under_the_watcher() {
    let root = TestRoot::new()
        .file(".gitignore", "*.draft.md\n")
        .file("resources/workspaces/w/.tmwsignore", "private/\n")
        .file(&format!("{L}/260101-a.md"), lesson("alpha"));
    let mut w = Watch::start(&root);
    w.expect("synced: 1 new, 0 changed, 0 removed");
    root.write(&format!("{L}/260102-b.draft.md"), lesson("draftword"));
    root.write("resources/workspaces/w/private/_lessons/260102-p.md", lesson("privateword"));
    root.write(&format!("{L}/260103-c.md"), lesson("charlie"));
    // Events arrive in order: once the last file is applied, the others were seen.
    assert_eq!(w.expect("new "), format!("new      {L}/260103-c.md"));
    assert!(found(&root, "draftword").is_empty());
    assert!(found(&root, "privateword").is_empty());
    // A full sync agrees with what the watcher did.
    let out = root.run(&["--json", "index", "--rebuild"]);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["items"], 2, "{}", out.stdout);
}

#[test]
fn an_appended_memory_is_searchable_through_the_watcher() {
    let log = ".tmws/memory/short-term.jsonl";
    let add = |id: &str, word: &str| {
        format!("{{\"op\":\"add\",\"id\":\"{id}\",\"ns\":\"short-term\",\"content\":\"{word} happened\"}}\n")
    };
    let root = TestRoot::new().file(log, add("m_000000000001", "alpha"));
    let mut w = Watch::start(&root);
    w.expect("synced: 1 new, 0 changed, 0 removed");
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(root.path().join(log)).unwrap();
        f.write_all(add("m_000000000002", "bravo").as_bytes()).unwrap();
    }
    assert_eq!(w.expect("changed "), format!("changed  {log}"));
    assert_eq!(found(&root, "bravo"), vec!["m_000000000002".to_owned()]);
    assert_eq!(found(&root, "alpha"), vec!["m_000000000001".to_owned()]);
}

#[test]
fn an_edited_registry_is_indexed_again_through_the_watcher() {
    let reg = |tool: &str| {
        serde_json::json!({"version": "1", "servers": {"serena": {
            "description": "Code navigation", "config_hash": "h", "connection": {"type": "stdio", "command": "serena"},
            "tools": {tool: {"description": format!("The {tool} tool."), "input_schema": {"type": "object"}}}
        }}})
        .to_string()
    };
    let file = ".tmws/registry/index.json";
    let root = TestRoot::new().file(file, reg("find_symbol"));
    let mut w = Watch::start(&root);
    w.expect("synced: 1 new, 0 changed, 0 removed");
    assert_eq!(found(&root, "symbol"), vec!["serena/find_symbol".to_owned()]);
    root.write(file, reg("get_library_docs"));
    assert_eq!(w.expect("changed "), format!("changed  {file}"));
    assert!(found(&root, "symbol").is_empty());
    assert_eq!(found(&root, "library docs"), vec!["serena/get_library_docs".to_owned()]);
}

#[test]
fn a_memory_log_edited_by_hand_is_read_again_through_the_watcher() {
    let log = ".tmws/memory/short-term.jsonl";
    let add = |id: &str, word: &str| {
        format!("{{\"op\":\"add\",\"id\":\"{id}\",\"ns\":\"short-term\",\"content\":\"{word} happened\"}}\n")
    };
    let first = add("m_000000000001", "alpha");
    let second = add("m_000000000002", "bravo");
    let root = TestRoot::new().file(log, format!("{first}{second}"));
    let mut w = Watch::start(&root);
    w.expect("synced: 1 new, 0 changed, 0 removed");
    assert_eq!(found(&root, "alpha"), vec!["m_000000000001".to_owned()]);
    // A person deletes the first line and fixes a word in the second, and saves the way
    // editors do: a new file renamed over the log.
    std::fs::write(root.path().join(".short-term.jsonl.swp"), second.replace("bravo", "charlie")).unwrap();
    std::fs::rename(root.path().join(".short-term.jsonl.swp"), root.path().join(log)).unwrap();
    assert_eq!(w.expect("changed "), format!("changed  {log}"));
    assert!(found(&root, "alpha").is_empty());
    assert!(found(&root, "bravo").is_empty());
    assert_eq!(found(&root, "charlie"), vec!["m_000000000002".to_owned()]);
}

#[test]
fn editor_save_patterns_end_with_the_new_content() {
    let target = format!("{L}/260101-note.md");
    let root = TestRoot::new().file(&target, lesson("original"));
    let mut w = Watch::start(&root);
    w.expect("synced:");
    let abs = |rel: &str| root.path().join(rel);
    // VS Code and most tools: write a temp file, rename it over the target.
    std::fs::write(abs(&format!("{L}/.260101-note.md.tmp")), lesson("vscode")).unwrap();
    std::fs::rename(abs(&format!("{L}/.260101-note.md.tmp")), abs(&target)).unwrap();
    w.expect(&format!("changed  {target}"));
    assert_eq!(found(&root, "vscode"), vec![target.clone()]);
    // vim: move the original to a backup, write anew, delete the backup.
    std::fs::rename(abs(&target), abs(&format!("{target}~"))).unwrap();
    std::fs::write(abs(&target), lesson("vim")).unwrap();
    std::fs::remove_file(abs(&format!("{target}~"))).unwrap();
    w.expect(&format!("changed  {target}"));
    assert_eq!(found(&root, "vim"), vec![target.clone()]);
    // JetBrains: write ___jb_tmp___, move the original to ___jb_old___, rename, delete.
    std::fs::write(abs(&format!("{target}___jb_tmp___")), lesson("jetbrains")).unwrap();
    std::fs::rename(abs(&target), abs(&format!("{target}___jb_old___"))).unwrap();
    std::fs::rename(abs(&format!("{target}___jb_tmp___")), abs(&target)).unwrap();
    std::fs::remove_file(abs(&format!("{target}___jb_old___"))).unwrap();
    w.expect(&format!("changed  {target}"));
    assert_eq!(found(&root, "jetbrains"), vec![target.clone()]);
    assert!(found(&root, "original").is_empty());
}

#[test]
fn a_checkout_of_hundreds_of_files_is_applied() {
    let root = TestRoot::new();
    let mut w = Watch::start(&root);
    w.expect("synced:");
    for i in 0..400 {
        root.write(
            &format!("resources/workspaces/w/_plans/2601{:02}-p{i}.md", 1 + i % 28),
            lesson(&format!("plan{i}")),
        );
    }
    // Well applied, it takes a few batches (under a second on a quiet host); only a run
    // that loses changes waits the tests' whole patience.
    eventually("400 items in the index", || {
        let out = root.run(&["--json", "index"]);
        let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        if v["items"].as_u64() == Some(400) { Ok(()) } else { Err(out.stdout) }
    });
    assert_eq!(found(&root, "plan399").len(), 1);
}

#[test]
fn a_sync_that_failed_is_made_good_without_another_change() {
    let root = TestRoot::new();
    let mut w = Watch::start(&root);
    w.expect("synced:");
    // A folder in the way of the sync's marker file makes the next sync fail.
    let blocker = root.path().join(format!("{}/syncing", tmws::INDEX_HOME));
    std::fs::create_dir_all(blocker.join("in-the-way")).unwrap();
    root.write(&format!("{L}/260102-b.md"), lesson("bravo"));
    let failed = w.expect("tmws: sync failed:");
    assert!(failed.ends_with("(the whole root is synced again shortly)"), "{failed}");
    // Nothing changes after the way is clear, and the file is indexed all the same.
    std::fs::remove_dir_all(&blocker).unwrap();
    w.expect("synced: 1 new, 0 changed, 0 removed");
    assert_eq!(found(&root, "bravo"), vec![format!("{L}/260102-b.md")]);
}

#[test]
fn a_second_process_follows_then_takes_over_when_the_writer_exits() {
    let root = TestRoot::new().file(&format!("{L}/260101-a.md"), lesson("alpha"));
    let mut first = Watch::start(&root);
    first.expect("synced:");
    let mut second = Watch::start(&root);
    second.expect("another tmws process holds the index");
    first.signal("-KILL");
    first.wait();
    second.expect("the index writer went away: this process took over");
    second.expect("synced:");
    root.write(&format!("{L}/260102-b.md"), lesson("bravo"));
    second.expect(&format!("new      {L}/260102-b.md"));
    assert_eq!(found(&root, "bravo"), vec![format!("{L}/260102-b.md")]);
}

#[test]
fn kill_9_during_a_sync_converges_on_the_next_run() {
    let root = TestRoot::new();
    for i in 0..3000 {
        root.write(
            &format!("resources/workspaces/w/d{}/_plans/2601{:02}-p{i}.md", i % 10, 1 + i % 28),
            lesson(&format!("word{}", i % 50)),
        );
    }
    let queries = ["word7", "word49", "plan", "about"];
    // The reference: a clean build in a copy.
    let reference = TestRoot::new();
    for (rel, bytes) in super::util::copy_tree(root.path()) {
        reference.write(&rel, bytes);
    }
    let answers = |r: &TestRoot| -> Vec<Vec<(String, u64)>> {
        queries
            .iter()
            .map(|q| {
                let out = r.run(&["--json", "search", q, "--limit", "50"]);
                let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap_or_default();
                v["results"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|h| (h["refId"].as_str().unwrap_or("").to_owned(), h["score"].as_u64().unwrap_or(0)))
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .collect()
    };
    let expect = answers(&reference);
    for delay in [30, 120, 400] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tmws"))
            .env("TMWS_CONFIG_HOME", super::util::user_config())
            .args(["index", "--rebuild"])
            .current_dir(root.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay));
        let _ = child.kill();
        let _ = child.wait();
        let got = answers(&root);
        for (i, (g, e)) in got.iter().zip(&expect).enumerate() {
            let first_diff = g.iter().zip(e).position(|(a, b)| a != b);
            assert!(
                g == e,
                "after a kill at {delay} ms, `{}` differs: {} vs {} results, first difference at {first_diff:?}: {:?} vs {:?}",
                queries[i],
                g.len(),
                e.len(),
                first_diff.map(|j| &g[j]),
                first_diff.map(|j| &e[j])
            );
        }
    }
}

/// A commit made while `tmws watch` runs is searchable soon after, without a file event in
/// the watched folders (HEAD is what moved).
#[test]
fn a_commit_is_searchable_while_the_watcher_runs() {
    let root = super::memory_git::repo();
    let mut watch = Watch::start(&root);
    watch.expect("watching ");
    root.write("notes.txt", "x\n");
    super::memory_git::git(root.path(), &["add", "-A"]);
    super::memory_git::git(root.path(), &["commit", "-qm", "Teach the watcher about commits"]);
    let head = super::memory_git::git(root.path(), &["rev-parse", "HEAD"]).trim().to_owned();
    // The search is a reader (the watcher holds the writer): it finds what the watcher
    // committed.
    eventually("the commit in the index", || {
        let out = root.run(&["--json", "search", "teach watcher commits", "--kind", "commit"]);
        if out.stdout.contains(&format!("commit:{head}")) {
            Ok(())
        } else {
            Err(format!("{}{}", out.stdout, out.stderr))
        }
    });
}

/// The pid of the process that keeps the index of `root`, as `tmws index` reports it (None
/// when `tmws index` had to sync itself).
fn keeper_pid(root: &TestRoot) -> Option<u64> {
    let out = root.run(&["--json", "index"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    v["by_pid"].as_u64()
}

/// Whether process `pid` runs (a zombie does not).
fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')))
}

/// Regression: without a running tmws process, every `tmws search` stat'ed every file of
/// the root before it answered (112 ms at 48k files). Now a query that had to do so on a
/// root of `[watch] auto_min_files` files starts `tmws watch --idle-exit` in the
/// background: the next queries follow it, an edit in place (no folder changes) is found
/// without a scan of theirs, no second watcher starts, and it stops by itself once no
/// query asked for `auto_idle_secs`.
#[test]
fn a_query_on_a_large_root_starts_a_watcher_that_stops_when_idle() {
    // Idle for 10 s: far more than the time between two queries below, however busy the
    // machine, so that it stops only once they are done.
    let root = searched_with("auto_min_files = 10\nauto_idle_secs = 10");
    let started = started_watchers(&root);
    assert_eq!(started.len(), 1, "the query started one watcher: {started:?}");
    let pid = eventually("a watcher keeps the index", || keeper_pid(&root));
    assert_eq!(started, [pid]);
    assert!(alive(pid));
    let lesson = "resources/workspaces/nihongo/mobile/_lessons/260915-connection-pool.md";
    root.write(lesson, root.read(lesson) + "\nA zanzibar-shaped pool.\n");
    eventually("the edit is found", || {
        let out = root.run(&["--json", "search", "zanzibar"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stdout.contains(lesson).then_some(())
    });
    assert_eq!(keeper_pid(&root), Some(pid), "the same watcher keeps the index");
    eventually("the idle watcher stops", || (!alive(pid)).then_some(()));
    assert_eq!(keeper_pid(&root), None, "nobody keeps the index once the watcher stopped");
}

/// `[watch] auto = false`: a query never starts a watcher, however large the root.
#[test]
fn no_watcher_starts_when_auto_is_off() {
    let root = searched_with("auto = false\nauto_min_files = 1");
    // A query starts its watcher before it exits (the test above sees it at once).
    assert_eq!(started_watchers(&root), Vec::<u64>::new());
    assert_eq!(keeper_pid(&root), None);
}

/// The pids of the `tmws watch --idle-exit` processes started for `root`, which a query
/// starts before it exits.
fn started_watchers(root: &TestRoot) -> Vec<u64> {
    let root = root.path().as_os_str().as_encoded_bytes();
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u64>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else { continue };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        if args.contains(&&b"--idle-exit"[..]) && args.contains(&root) && alive(pid) {
            pids.push(pid);
        }
    }
    pids
}

/// A copy of the sample root with `watch` as its `[watch]` settings, searched once.
fn searched_with(watch: &str) -> TestRoot {
    let root = TestRoot::sample();
    let config = root.read(".tmws/config.toml");
    root.write(".tmws/config.toml", format!("{config}\n[watch]\n{watch}\n"));
    let out = root.run(&["search", "pool"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    root
}

/// A started watcher whose root is deleted stops at once, not after its idle limit.
#[test]
fn a_started_watcher_stops_when_its_root_is_deleted() {
    let root = searched_with("auto_min_files = 10");
    let pid = eventually("a watcher keeps the index", || keeper_pid(&root));
    drop(root);
    eventually("the watcher of a deleted root stops", || (!alive(pid)).then_some(()));
}

/// Regression: a watcher that a query started went on running the binary it was started
/// from after an upgrade, for as long as queries kept it alive. Now it stops once its
/// binary is replaced (a new file renamed over it, as installers do), and the next query
/// starts one of the new binary.
#[test]
fn a_started_watcher_stops_when_its_binary_is_replaced_and_the_next_query_starts_the_new_one() {
    let (_bin, exe) = copy_of_the_binary();
    let root = TestRoot::sample();
    let config = root.read(".tmws/config.toml");
    root.write(".tmws/config.toml", format!("{config}\n[watch]\nauto_min_files = 10\n"));
    let run = |args: &[&str]| {
        let out = tmws_at(&exe, root.path(), args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out
    };
    let keeper = || -> Option<u64> {
        let v: serde_json::Value = serde_json::from_str(&run(&["--json", "index"]).stdout).unwrap();
        v["by_pid"].as_u64()
    };
    run(&["search", "pool"]);
    let old = eventually("a watcher keeps the index", keeper);
    upgrade(&exe);
    eventually("the watcher of the replaced binary stops", || (!alive(old)).then_some(()));
    run(&["search", "pool"]);
    let new = eventually("a watcher of the new binary keeps the index", keeper);
    assert_ne!(new, old);
    assert!(alive(new));
}

/// A watch a person started (and, alike, `tmws mcp` and `serve`) goes on after its binary
/// is replaced, on its own version's index, and says once that it runs the old binary.
#[test]
fn a_watch_a_person_started_says_once_that_its_binary_was_replaced_and_goes_on() {
    let (_bin, exe) = copy_of_the_binary();
    let root = TestRoot::sample();
    let mut watch = Watch::start_exe(&exe, &root, &["watch"]);
    watch.expect("watching ");
    upgrade(&exe);
    let line = watch.expect_holding("binary was replaced");
    assert!(line.contains("goes on with the old one until it is restarted"), "{line}");
    let lesson = "resources/workspaces/nihongo/mobile/_lessons/260915-connection-pool.md";
    root.write(lesson, root.read(lesson) + "\nA quokka-shaped pool.\n");
    watch.expect(&format!("changed  {lesson}"));
    assert!(watch.child.try_wait().unwrap().is_none(), "the watch goes on");
    assert_eq!(watch.seen.iter().filter(|l| l.contains("binary was replaced")).count(), 1, "{:?}", watch.seen);
}

/// A copy of the tmws binary in a folder of its own (kept while the folder lives).
fn copy_of_the_binary() -> (tempfile::TempDir, std::path::PathBuf) {
    let bin = tempfile::tempdir().unwrap();
    let exe = bin.path().join("tmws");
    std::fs::copy(env!("CARGO_BIN_EXE_tmws"), &exe).unwrap();
    (bin, exe)
}

/// Replaces the binary at `exe` as installers do: a new file renamed over it.
fn upgrade(exe: &std::path::Path) {
    let new_file = exe.with_extension("new");
    std::fs::copy(env!("CARGO_BIN_EXE_tmws"), &new_file).unwrap();
    std::fs::rename(&new_file, exe).unwrap();
}

/// Regression: `watch` said a changed file's YAML errors but not what `tmws check` finds
/// in it (a missing field, a date that is not one). Now `watch --json` gives every finding
/// of `tmws check` for the changed file, with the same rules, lines and messages, and the
/// text mode says them too.
#[test]
fn watch_says_every_check_finding_of_a_changed_file() {
    let root = TestRoot::new().file(&format!("{L}/260101-a.md"), lesson("alpha"));
    let bad = format!("{L}/260102-bad.md");
    let text = "---\nname: Bad\ncreated: yesterday\n---\nbody\n";
    let fields = |v: &serde_json::Value| {
        ["path", "line", "column", "severity", "rule", "message"].map(|k| v[k].to_string()).join(" ")
    };

    let mut w = Watch::start_with(&root, &["watch", "--json"]);
    w.expect("{\"event\":\"synced\"");
    root.write(&bad, text);
    w.expect("{\"event\":\"change\"");
    let check = root.run(&["--json", "check", &bad]);
    assert_eq!(check.code, 1, "{}", check.stdout);
    let want: Vec<String> =
        serde_json::from_str::<Vec<serde_json::Value>>(&check.stdout).unwrap().iter().map(fields).collect();
    assert_eq!(want.len(), 2, "a missing description and a bad date: {want:?}");
    let got: Vec<String> =
        want.iter().map(|_| fields(&serde_json::from_str(&w.expect("{\"event\":\"problem\"")).unwrap())).collect();
    assert_eq!(got, want);
    w.signal("-INT");
    assert_eq!(w.wait(), 0);

    // The text mode: each finding as `tmws check` names it.
    std::fs::remove_file(root.path().join(&bad)).unwrap();
    let mut w = Watch::start(&root);
    w.expect("synced: ");
    root.write(&bad, text);
    assert_eq!(
        w.expect_holding("[missing-field]"),
        format!("{bad}:1:1: error[missing-field]: missing required field `description`")
    );
    assert_eq!(
        w.expect_holding("[invalid-date]"),
        format!("{bad}:3:10: error[invalid-date]: `created` must be a real date written YYYY-MM-DD; found `yesterday`")
    );
    w.signal("-INT");
    assert_eq!(w.wait(), 0);
}

/// Regression: a burst of queries on a large root started up to four background watchers
/// at once, each query then paying for the others: a query that became the writer between
/// the exit of the one that started a watcher and that watcher's start started another.
/// Now the query that starts one holds a lock file that it hands to the watcher, the others
/// start none and leave the writer role to it: four streams of queries, each query right
/// after the one before, log one start, and one watcher runs.
#[test]
fn many_queries_at_once_start_one_watcher() {
    let root = TestRoot::sample();
    let config = root.read(".tmws/config.toml");
    root.write(".tmws/config.toml", format!("{config}\n[watch]\nauto_min_files = 10\nauto_idle_secs = 30\n"));
    let query = || {
        let out = Command::new(env!("CARGO_BIN_EXE_tmws"))
            .env("TMWS_CONFIG_HOME", super::util::user_config())
            .env("TMWS_LOG", "info")
            .args(["search", "pool"])
            .current_dir(root.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let stderr: Vec<String> = std::thread::scope(|s| {
        let streams: Vec<_> = (0..4).map(|_| s.spawn(|| (0..8).map(|_| query()).collect::<Vec<_>>())).collect();
        streams.into_iter().flat_map(|t| t.join().unwrap()).collect()
    });
    let starts: Vec<&str> = stderr
        .iter()
        .flat_map(|e| e.lines())
        .filter(|l| l.contains("started `tmws watch` in the background"))
        .collect();
    assert_eq!(starts.len(), 1, "one query started a watcher: {starts:?}");
    let running = started_watchers(&root);
    assert_eq!(running.len(), 1, "{running:?}");
    assert!(starts[0].contains(&format!("(pid {})", running[0])), "{starts:?} {running:?}");
    let pid = eventually("the watcher keeps the index", || keeper_pid(&root));
    assert_eq!(pid, running[0]);
    drop(root);
    eventually("the watcher of a deleted root stops", || (!alive(pid)).then_some(()));
}
