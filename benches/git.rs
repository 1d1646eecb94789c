//! Git as the sync engine: what it costs (docs/performance.md).
//!
//! - `commits_index_50k`: a full sync of a root whose repository has 50,000 commits (goal:
//!   under 10 s): the history read with `git log` and indexed as kind `commit`.
//! - `commit_to_searchable_with_watch`: from the end of `git commit` to the commit being
//!   found by a search in another process, while `tmws watch` runs (goal: under 1 s).
//! - `memory_search_100k_by_ancestry`: `memory_search` over 100k entries of a log git does
//!   not track, written on the current branch, on merged, open and deleted branches, at
//!   commits in and out of HEAD's history: visibility by ancestry on (budget: 2 ms p50).
//!
//! Run with `cargo bench --bench git`. The repositories are generated once under the temp
//! folder (`git fast-import` for the 50,000 commits).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use divan::Bencher;
use tmws::query::api::{MemorySearchRequest, SearchRequest};
use tmws::query::memory::memory_id;
use tmws::query::{Engine, SyncOptions};

mod support;

use support::git;

// The binary's allocator, so that in-process figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    divan::main();
}

const WORDS: [&str; 16] = [
    "retry", "cache", "index", "deploy", "schema", "worker", "queue", "token", "merge", "branch", "latency", "pool",
    "config", "session", "watcher", "release",
];

/// A repository of `n` commits on `main`, each changing one of 500 files, made by
/// `git fast-import`, with a `.tmws/` so that it is a tmws root.
fn history_root(n: usize) -> PathBuf {
    let root = std::env::temp_dir().join(format!("tmws-bench-git-{n}"));
    let marker = root.join(".git/tmws-generated");
    if std::fs::read_to_string(&marker).is_ok_and(|t| t.trim() == "v1") {
        return root;
    }
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join(".tmws")).unwrap();
    git(&root, &["init", "-q"]);
    let mut stream = String::with_capacity(n * 200);
    for i in 0..n {
        let (a, b) = (WORDS[i % WORDS.len()], WORDS[(i / 16) % WORDS.len()]);
        let message = format!("Change {a} near {b} ({i})\n\nThe {a} of module {} needed a {b} fix.\n", i % 500);
        let data = format!("version {i}\n");
        let _ = write!(
            stream,
            "commit refs/heads/main\nmark :{m}\ncommitter Bench <bench@example.invalid> {t} +0000\ndata {ml}\n{message}",
            m = i + 1,
            t = 1_700_000_000 + i * 60,
            ml = message.len()
        );
        if i > 0 {
            let _ = writeln!(stream, "from :{i}");
        }
        let _ = write!(stream, "M 644 inline src/f{:03}.txt\ndata {}\n{data}\n", i % 500, data.len());
    }
    let mut child =
        Command::new("git").args(["fast-import", "--quiet"]).current_dir(&root).stdin(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(stream.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
    git(&root, &["checkout", "-q", "main"]);
    std::fs::write(&marker, "v1").unwrap();
    root
}

/// Indexing the history of 50,000 commits from scratch (the index removed before each run).
#[divan::bench(sample_count = 3, sample_size = 1)]
fn commits_index_50k(bencher: Bencher) {
    let root = history_root(50_000);
    bencher
        .with_inputs(|| {
            let _ = std::fs::remove_dir_all(root.join(".tmws/cache"));
        })
        .bench_local_values(|()| {
            let engine = Engine::open(&root).unwrap();
            let report = engine.sync(&SyncOptions::default()).unwrap();
            assert!(report.items >= 50_000, "{report:?}");
        });
}

/// The end of `git commit` to the commit found by a search in another process, while
/// `tmws watch` holds the writer.
#[divan::bench(sample_count = 20, sample_size = 1)]
fn commit_to_searchable_with_watch(bencher: Bencher) {
    let root = std::env::temp_dir().join("tmws-bench-git-watch");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join(".tmws")).unwrap();
    git(&root, &["init", "-q"]);
    std::fs::write(root.join("a.txt"), "0\n").unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "start"]);
    let mut watch = Command::new(env!("CARGO_BIN_EXE_tmws"))
        .args(["watch"])
        .current_dir(&root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // A reader, as a client of the watcher's index.
    std::thread::sleep(Duration::from_millis(500));
    let reader = Engine::open(&root).unwrap();
    let n = AtomicUsize::new(0);
    bencher
        .with_inputs(|| {
            let i = n.fetch_add(1, Ordering::Relaxed);
            let word = format!("zq{}", letters(i));
            std::fs::write(root.join("a.txt"), format!("{i}\n")).unwrap();
            git(&root, &["add", "-A"]);
            git(&root, &["commit", "-qm", &format!("Commit {word}")]);
            word
        })
        .bench_local_values(|word| {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let mut req = SearchRequest::new(word.clone());
                req.kinds = vec!["commit".into()];
                if !reader.ask(&tmws::query::catalog::Search, &req).unwrap().answer.results.is_empty() {
                    break;
                }
                assert!(Instant::now() < deadline, "commit {word} not indexed");
                std::thread::sleep(Duration::from_millis(5));
            }
        });
    let _ = watch.kill();
    let _ = watch.wait();
}

/// A word of letters only, one per number.
fn letters(mut i: usize) -> String {
    let mut w = String::new();
    loop {
        w.push(char::from(b'a' + u8::try_from(i % 26).unwrap_or(0)));
        i /= 26;
        if i == 0 {
            return w;
        }
    }
}

/// A repository with branches (merged, open, deleted) and a short-term log git does not
/// track, of `n` entries spread over them.
fn ancestry_root(n: usize) -> PathBuf {
    let root = std::env::temp_dir().join(format!("tmws-bench-ancestry-{n}"));
    let marker = root.join(".tmws/generated");
    if std::fs::read_to_string(&marker).is_ok_and(|t| t.trim() == "v2") {
        return root;
    }
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join(".tmws/memory")).unwrap();
    std::fs::write(root.join(".tmws/config.toml"), "[namespaces.short-term]\nmax_entries = 200000\n").unwrap();
    std::fs::write(root.join(".gitignore"), ".tmws/cache/\n.tmws/memory/\n").unwrap();
    git(&root, &["init", "-q"]);
    let mut main_commits = Vec::new();
    for i in 0..10 {
        std::fs::write(root.join("m.txt"), format!("{i}\n")).unwrap();
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-qm", &format!("main {i}")]);
        main_commits.push(git(&root, &["rev-parse", "HEAD"]).trim()[..12].to_owned());
    }
    // Five merged branches (at main's commits), five open ones with commits of their own.
    for i in 0..5 {
        git(&root, &["branch", &format!("merged-{i}"), &format!("HEAD~{}", i + 1)]);
    }
    let mut open_commits = Vec::new();
    for i in 0..5 {
        git(&root, &["checkout", "-qb", &format!("open-{i}"), "main"]);
        std::fs::write(root.join("o.txt"), format!("{i}\n")).unwrap();
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-qm", &format!("open {i}")]);
        open_commits.push(git(&root, &["rev-parse", "HEAD"]).trim()[..12].to_owned());
    }
    git(&root, &["checkout", "-q", "main"]);
    let mut log = String::with_capacity(n * 320);
    for i in 0..n {
        // Half on main, the rest on merged, open and deleted branches (whose commits are in
        // HEAD's history or not).
        let (branch, commit) = match i % 10 {
            0..=4 => ("main".to_owned(), main_commits[i % 10].clone()),
            5 | 6 => (format!("merged-{}", i % 5), main_commits[(i / 10) % 10].clone()),
            7 => (format!("open-{}", i % 5), open_commits[i % 5].clone()),
            8 => (format!("gone-{}", i % 20), main_commits[(i / 10) % 10].clone()),
            _ => (format!("gone-open-{}", i % 20), open_commits[(i / 10) % 5].clone()),
        };
        let content = support::memory::content(i);
        let id = memory_id("short-term", &content);
        let _ = writeln!(
            log,
            "{{\"op\":\"add\",\"id\":\"{id}\",\"ns\":\"short-term\",\"at\":\"2026-11-20T00:00:00Z\",\"expires_at\":\"2036-11-01T00:00:00Z\",\"kind\":\"note\",\"content\":\"{content}\",\"summary\":\"{content}\",\"tags\":[],\"importance\":0.5,\"git\":{{\"branch\":\"{branch}\",\"commit\":\"{commit}\"}}}}"
        );
    }
    std::fs::write(root.join(".tmws/memory/short-term.jsonl"), log).unwrap();
    Engine::open(&root).unwrap().sync(&SyncOptions::default()).unwrap();
    std::fs::write(&marker, "v2").unwrap();
    root
}

/// `memory_search` over 100k entries with visibility by ancestry (budget: 2 ms p50).
#[divan::bench(sample_count = 200, sample_size = 1)]
fn memory_search_100k_by_ancestry(bencher: Bencher) {
    // The entries and queries of `memory_search_100k` (benches/memory.rs).
    let root = ancestry_root(100_000);
    let engine = support::serving(&root);
    let queries = support::memory::queries();
    let i = AtomicUsize::new(0);
    bencher.bench_local(|| {
        let q = &queries[i.fetch_add(1, Ordering::Relaxed) % queries.len()];
        let found = engine.ask(&tmws::query::catalog::MemorySearch, &MemorySearchRequest::new(q.clone())).unwrap();
        assert!(found.answer.results.iter().all(|r| !r.id.is_empty()));
        found
    });
}

/// The same searches with `branch: "*"` (no visibility filter): what visibility adds is the
/// difference from `memory_search_100k_by_ancestry`.
#[divan::bench(sample_count = 200, sample_size = 1)]
fn memory_search_100k_every_branch(bencher: Bencher) {
    let root = ancestry_root(100_000);
    let engine = support::serving(&root);
    let queries = support::memory::queries();
    let i = AtomicUsize::new(0);
    bencher.bench_local(|| {
        let q = &queries[i.fetch_add(1, Ordering::Relaxed) % queries.len()];
        let mut req = MemorySearchRequest::new(q.clone());
        req.branch = Some("*".into());
        engine.ask(&tmws::query::catalog::MemorySearch, &req).unwrap()
    });
}
