//! Memory budgets (DESIGN §11): `memory_add` with fsync until the entry is searchable, and
//! `memory_search` at 100k entries, in-process.
//!
//! Run with `cargo bench --bench memory`. The 100k-entry root is generated once under the
//! temp folder (a long-term log written directly, then indexed).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use divan::Bencher;
use tmws::config::Config;
use tmws::index::{Index, SyncOptions};
use tmws::query::memory::{self, AddRequest, MemorySearch};

fn main() {
    divan::main();
}

const WORDS: [&str; 24] = [
    "deploy",
    "cache",
    "token",
    "refresh",
    "database",
    "pool",
    "timeout",
    "retry",
    "staging",
    "release",
    "index",
    "watcher",
    "schema",
    "migration",
    "latency",
    "queue",
    "worker",
    "config",
    "secret",
    "branch",
    "merge",
    "lock",
    "compaction",
    "session",
];

/// A root whose long-term log holds `n` live entries, indexed.
fn memory_root(n: usize) -> PathBuf {
    let root = std::env::temp_dir().join(format!("tmws-bench-memory-{n}"));
    let marker = root.join(".tmws/generated");
    if std::fs::read_to_string(&marker).is_ok_and(|t| t.trim() == n.to_string()) {
        return root;
    }
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join(".tmws/memory")).unwrap();
    std::fs::write(root.join(".tmws/config.toml"), "[namespaces.long-term]\nmax_entries = 200000\n").unwrap();
    let mut log = String::with_capacity(n * 300);
    for i in 0..n {
        let w = |k: usize| WORDS[(i * 7 + k * 13) % WORDS.len()];
        let content = format!("Entry {i}: the {} {} needs a {} after the {} ({})", w(0), w(1), w(2), w(3), i % 97);
        let id = memory::memory_id("long-term", &content);
        let _ = writeln!(
            log,
            "{{\"op\":\"add\",\"id\":\"{id}\",\"ns\":\"long-term\",\"at\":\"2026-11-01T00:00:00Z\",\"expires_at\":\"2036-11-01T00:00:00Z\",\"kind\":\"note\",\"content\":\"{content}\",\"summary\":\"{content}\",\"tags\":[\"{}\"],\"importance\":0.5}}",
            w(4)
        );
    }
    std::fs::write(root.join(".tmws/memory/long-term.jsonl"), log).unwrap();
    let config = Config::load(&root).unwrap();
    let mut index = Index::open(&root).unwrap();
    index.sync(&config, &SyncOptions::default()).unwrap();
    std::fs::write(&marker, n.to_string()).unwrap();
    root
}

/// `memory_search` over 100k entries: words from the generated vocabulary.
#[divan::bench(sample_count = 200, sample_size = 1)]
fn memory_search_100k(bencher: Bencher) {
    let root = memory_root(100_000);
    let config = Config::load(&root).unwrap();
    let index = Index::open_reader(&root).unwrap();
    let queries = ["deploy cache", "token refresh timeout", "database pool", "staging release", "lock compaction"];
    let i = AtomicUsize::new(0);
    bencher.bench_local(|| {
        let q = queries[i.fetch_add(1, Ordering::Relaxed) % queries.len()];
        let req = MemorySearch { query: q.to_owned(), ..MemorySearch::default() };
        memory::search(&root, &config, &index, &req).unwrap()
    });
}

/// A word of letters only, one per number (digits would be split off by the analyzer).
fn letters(mut i: usize) -> String {
    let mut w = String::from("zq");
    loop {
        w.push(char::from(b'a' + u8::try_from(i % 26).unwrap_or(0)));
        i /= 26;
        if i == 0 {
            return w;
        }
    }
}

/// `memory_add` with fsync, then the writer's sync, until a search finds it: the floor of
/// what a server's watcher gives (it adds the debounce).
#[divan::bench(sample_count = 30, sample_size = 1)]
fn memory_add_fsync_to_searchable(bencher: Bencher) {
    let root = std::env::temp_dir().join("tmws-bench-memory-add");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join(".tmws")).unwrap();
    let config = Config::load(&root).unwrap();
    assert!(config.memory.fsync);
    let mut index = Index::open(&root).unwrap();
    index.sync(&config, &SyncOptions::default()).unwrap();
    let n = AtomicUsize::new(0);
    bencher.bench_local(|| {
        let i = n.fetch_add(1, Ordering::Relaxed);
        let word = letters(i);
        let req = AddRequest { content: format!("bench note about {word}"), ..AddRequest::default() };
        let added = memory::add(&root, &config, &req, chrono::Utc::now()).unwrap();
        index.sync(&config, &SyncOptions::default()).unwrap();
        let found =
            memory::search(&root, &config, &index, &MemorySearch { query: word.clone(), ..MemorySearch::default() })
                .unwrap();
        assert_eq!(found["results"][0]["id"], added.id.as_str(), "{found}");
    });
}
