//! Citations checked against the code (docs/citations.md).
//!
//! - `warm_check_100`: 100 citations of spans of 100 settled files, checked once cold (one
//!   `git cat-file` process, results kept in `.tmws/cache/cites.json`), then timed warm
//!   from a new checker that reads the cache: a `stat` and a lookup per citation, no git
//!   (budget: 0.2 ms per item).
//! - `recall_100k_memories_10_percent_cited`: `recall` through a serving engine over 100k
//!   memories (one in ten citing a span of a committed file, one in ten of those stale)
//!   and a 10k-document workspace (budget: 12 ms p50); compare `memory::recall_100k_memories_10k_docs`,
//!   the same without citations.
//! - `verify_10k_cites_50k_commits_cold` / `_warm`: `tmws verify` over 10k memories citing
//!   spans at commits spread over a history of 50k commits (one in ten without a hash, read
//!   from git at its commit), with no cache and with the cache of the run before (budget:
//!   2 s).
//!
//! Run with `cargo bench --bench cites`. The repositories are generated once under the temp
//! folder (the 50k-commit one through `git fast-import`, in about a minute).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use divan::Bencher;
use tmws::query::api::RecallRequest;
use tmws::query::cites::{Checker, Cite};

mod support;

use support::git;
use support::memory::queries;

fn main() {
    divan::main();
}

const FILES: usize = 100;

/// A repository of 100 files of 200 lines, modified an hour ago, and a citation of lines
/// 50–60 of each at HEAD.
fn repo() -> (PathBuf, Vec<Cite>) {
    let root = std::env::temp_dir().join("tmws-bench-cites-v1");
    let marker = root.join(".git/tmws-generated");
    if !marker.exists() {
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join(".tmws")).unwrap();
        for f in 0..FILES {
            let text: String = (0..200).map(|l| format!("fn f{f}_{l}() {{ let x = {l}; }}\n")).collect();
            std::fs::write(root.join(format!("f{f}.rs")), text).unwrap();
        }
        git(&root, &["init", "-q"]);
        git(&root, &["add", "."]);
        git(&root, &["commit", "-q", "-m", "files"]);
        std::fs::write(&marker, "v1").unwrap();
    }
    let old = SystemTime::now() - Duration::from_secs(3600);
    for f in 0..FILES {
        let file = std::fs::File::options().write(true).open(root.join(format!("f{f}.rs"))).unwrap();
        file.set_modified(old).unwrap();
    }
    let head = git(&root, &["rev-parse", "HEAD"]).trim().to_owned();
    let cites = (0..FILES)
        .map(|f| Cite {
            path: format!("f{f}.rs"),
            lines: Some([50, 60]),
            commit: Some(head.clone()),
            ..Cite::default()
        })
        .collect();
    (root, cites)
}

#[divan::bench(sample_count = 100, sample_size = 1)]
fn warm_check_100(bencher: Bencher) {
    let (root, cites) = repo();
    let mut cold = Checker::new(&root);
    for c in &cites {
        cold.check(c);
    }
    cold.save();
    bencher.with_inputs(|| Checker::new(&root)).bench_local_refs(|checker| {
        for c in &cites {
            divan::black_box(checker.check(c));
        }
        assert_eq!(checker.git_runs, 0, "a warm check runs no git");
    });
}

/// The text of source file `f` of a generated repository: `lines` lines, each its own.
fn source(f: usize, lines: usize) -> String {
    (0..lines).map(|l| format!("fn f{f}_{l}() {{ let x = {l}; }}\n")).collect()
}

/// blake3 (hex) of lines `a` to `b` (from 1) of `text`, each with its line end.
fn span_hash(text: &str, a: usize, b: usize) -> String {
    let span: String = text.split_inclusive('\n').skip(a - 1).take(b - a + 1).collect();
    blake3::hash(span.as_bytes()).to_hex().to_string()
}

/// Sets the modification time of every file under `dir` an hour back: a check of a file
/// modified in the last two seconds is not kept, and these have settled.
fn settle(dir: &Path) {
    let old = SystemTime::now() - Duration::from_secs(3600);
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::File::options().write(true).open(path).unwrap().set_modified(old).unwrap();
        }
    }
}

const SOURCES: usize = 1_000;

/// The root of [`recall_100k_memories_10_percent_cited`]: a 10k-document workspace, 1,000
/// committed source files and 100k memories, every tenth citing lines of one of them at
/// HEAD (with the hash of their text; every hundredth with a hash that no longer matches,
/// as if the code had changed since), indexed.
fn recall_cited_root() -> PathBuf {
    let root = support::memory::docs_and_memories_root("tmws-bench-recall-cited", "v2", 100_000, |root| {
        std::fs::create_dir_all(root.join("src")).unwrap();
        for f in 0..SOURCES {
            std::fs::write(root.join(format!("src/f{f}.rs")), source(f, 200)).unwrap();
        }
        git(root, &["init", "-q"]);
        git(root, &["add", "src"]);
        git(root, &["commit", "-q", "-m", "sources"]);
        let head = git(root, &["rev-parse", "HEAD"]).trim().to_owned();
        Box::new(move |i| {
            if i % 10 != 0 {
                return String::new();
            }
            let f = (i / 10) % SOURCES;
            let a = 1 + (i / 10) % 180;
            let hash = if i % 100 == 0 { "0".repeat(64) } else { span_hash(&source(f, 200), a, a + 10) };
            format!(
                ",\"cites\":[{{\"path\":\"src/f{f}.rs\",\"lines\":[{a},{}],\"commit\":\"{head}\",\"hash\":\"{hash}\"}}]",
                a + 10
            )
        })
    });
    settle(&root.join("src"));
    root
}

/// `recall` over 100k memories, one in ten with a citation, and 10k documents (budget:
/// 12 ms p50). The first round fills the citation cache, as a serving engine's first
/// answers do.
#[divan::bench(sample_count = 200, sample_size = 1)]
fn recall_100k_memories_10_percent_cited(bencher: Bencher) {
    let root = recall_cited_root();
    let engine = support::serving(&root);
    let queries = queries();
    let ask = |q: &str| {
        engine.ask(&tmws::query::catalog::Recall, &RecallRequest::new(format!("{q} before the release"))).unwrap()
    };
    for q in &queries {
        ask(q);
    }
    let i = AtomicUsize::new(0);
    bencher.bench_local(|| ask(&queries[i.fetch_add(1, Ordering::Relaxed) % queries.len()]));
}

const COMMITS: usize = 50_000;
const HISTORY_FILES: usize = 500;
const HISTORY_LINES: usize = 50;

/// The text of history file `f` after commit `c` (from 0) changed it: each commit rewrites
/// one line of one file, so a file is changed every 500 commits, a line every 25,000.
fn history_text(f: usize, last: Option<usize>) -> String {
    (0..HISTORY_LINES)
        .map(|l| {
            // The last commit that touched line l of file f, if any, at or before `last`.
            let touched = last.and_then(|c| {
                let round = c / HISTORY_FILES;
                (0..=round)
                    .rev()
                    .map(|r| r * HISTORY_FILES + f)
                    .find(|&k| k <= c && (k / HISTORY_FILES) % HISTORY_LINES == l)
            });
            match touched {
                Some(k) => format!("fn h{f}_{l}() {{ let changed_in = {k}; }}\n"),
                None => format!("fn h{f}_{l}() {{ let x = {l}; }}\n"),
            }
        })
        .collect()
}

/// A repository of 500 files and 50k commits (made with `git fast-import`), and a log of 10k
/// memories, each citing 5 lines of a file at a commit spread over the history, with the
/// hash of their text at the work tree's (valid, or changed where a later commit touched
/// them); one in ten without a hash.
fn history_root() -> PathBuf {
    let root = std::env::temp_dir().join("tmws-bench-cites-history");
    let marker = root.join(".tmws/generated");
    if !std::fs::read_to_string(&marker).is_ok_and(|t| t.trim() == "v1") {
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join(".tmws/memory")).unwrap();
        git(&root, &["init", "-q"]);
        let mut import = std::process::Command::new("git")
            .args(["fast-import", "--quiet"])
            .current_dir(&root)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        {
            let mut w = std::io::BufWriter::new(import.stdin.take().unwrap());
            for c in 0..COMMITS {
                let f = c % HISTORY_FILES;
                let text = history_text(f, Some(c));
                let message = format!("commit {c}");
                write!(
                    w,
                    "commit refs/heads/main\nmark :{}\ncommitter Bench <bench@example.invalid> {} +0000\n",
                    c + 1,
                    1_700_000_000 + c
                )
                .unwrap();
                write!(w, "data {}\n{message}\n", message.len() + 1).unwrap();
                if c == 0 {
                    // The first commit holds every file as it starts.
                    for g in 0..HISTORY_FILES {
                        let start = if g == f { text.clone() } else { history_text(g, None) };
                        write!(w, "M 100644 inline h{g}.rs\ndata {}\n{start}\n", start.len()).unwrap();
                    }
                } else {
                    write!(w, "from :{c}\nM 100644 inline h{f}.rs\ndata {}\n{text}\n", text.len()).unwrap();
                }
            }
        }
        assert!(import.wait().unwrap().success());
        git(&root, &["checkout", "-q", "-f", "main"]);
        let marks: Vec<String> = git(&root, &["rev-list", "--reverse", "main"]).lines().map(str::to_owned).collect();
        assert_eq!(marks.len(), COMMITS);
        let mut log = String::new();
        for i in 0..10_000 {
            let c = (i * 4_999) % COMMITS;
            let f = (i * 7) % HISTORY_FILES;
            let a = 1 + (i * 13) % (HISTORY_LINES - 5);
            let now = std::fs::read_to_string(root.join(format!("h{f}.rs"))).unwrap();
            let hash = if i % 10 == 0 { String::new() } else { format!(",\"hash\":\"{}\"", span_hash(&now, a, a + 4)) };
            let _ = writeln!(
                log,
                "{{\"op\":\"add\",\"id\":\"m_{i:012x}\",\"ns\":\"long-term\",\"at\":\"2026-11-01T00:00:00Z\",\"content\":\"memory {i}\",\"cites\":[{{\"path\":\"h{f}.rs\",\"lines\":[{a},{}],\"commit\":\"{}\"{hash}}}]}}",
                a + 4,
                marks[c]
            );
        }
        std::fs::write(root.join(".tmws/memory/long-term.jsonl"), log).unwrap();
        std::fs::write(&marker, "v1").unwrap();
    }
    settle(&root);
    root
}

/// `tmws verify` over 10k citations in a 50k-commit repository with no cache (budget: 2 s).
#[divan::bench(sample_count = 5, sample_size = 1)]
fn verify_10k_cites_50k_commits_cold(bencher: Bencher) {
    let root = history_root();
    let cache = root.join(tmws::query::cites::CACHE_FILE);
    bencher
        .with_inputs(|| {
            let _ = std::fs::remove_file(&cache);
        })
        .bench_local_values(|()| {
            let report = tmws::query::verify::verify(&root).unwrap();
            assert_eq!(report.checked, 10_000);
            report
        });
}

/// The same with the cache the run before left.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn verify_10k_cites_50k_commits_warm(bencher: Bencher) {
    let root = history_root();
    tmws::query::verify::verify(&root).unwrap();
    bencher.bench_local(|| tmws::query::verify::verify(&root).unwrap());
}
