//! Memory budgets (docs/performance.md): `memory_add` with fsync until the entry is searchable,
//! `memory_search` (ranked by text × decay × trust) at 100k and 10k entries, in-process,
//! `recall` over 100k memories and 10k documents, and `memory cleanup` compacting a log of
//! 100k entries.
//!
//! Run with `cargo bench --bench memory`. The roots are generated once under the temp
//! folder (a long-term log written directly, then indexed). Entries draw their words from
//! a vocabulary of a few thousand with a Zipf-like spread (a few words are everywhere,
//! most are rare), as text written by people does.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use divan::Bencher;
use tmws::query::api::{FormatOnly, MemoryAddRequest, MemorySearchRequest, RecallRequest};
use tmws::query::memory::memory_id;

use support::memory::{add_line, content, letters, queries};
use tmws::query::{Engine, SyncOptions};

mod support;

// The binary's allocator, so that in-process figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    divan::main();
}

/// A long-term log of `n` entries, of which every `dead_every`-th is deleted again.
fn log_text(n: usize, dead_every: usize) -> String {
    let mut log = String::with_capacity(n * 300);
    for i in 0..n {
        log.push_str(&add_line(i, ""));
        if dead_every > 0 && i % dead_every == 0 {
            let id = memory_id("long-term", &content(i));
            let _ = writeln!(log, "{{\"op\":\"delete\",\"id\":\"{id}\",\"at\":\"2026-11-02T00:00:00Z\"}}");
        }
    }
    log
}

/// A root whose long-term log holds `n` live entries, indexed.
fn memory_root(n: usize) -> PathBuf {
    memory_root_with(n, true)
}

/// [`memory_root`], by words and meaning or (`meaning` false) by words only.
fn memory_root_with(n: usize, meaning: bool) -> PathBuf {
    let words_only = if meaning { "" } else { "-words-only" };
    let root = std::env::temp_dir().join(format!("tmws-bench-memory-{n}{words_only}"));
    let marker = root.join(".tmws/generated");
    let version = format!("{n} v3");
    if std::fs::read_to_string(&marker).is_ok_and(|t| t.trim() == version) {
        return root;
    }
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join(".tmws/memory")).unwrap();
    let semantic = if meaning { "" } else { "[semantic]\nmodel = \"off\"\n" };
    std::fs::write(root.join(".tmws/config.toml"), format!("[namespaces.long-term]\nmax_entries = 200000\n{semantic}"))
        .unwrap();
    std::fs::write(root.join(".tmws/memory/long-term.jsonl"), log_text(n, 0)).unwrap();
    Engine::open(&root).unwrap().sync(&SyncOptions::default()).unwrap();
    std::fs::write(&marker, version).unwrap();
    root
}

/// Searches through a serving engine (as `tmws mcp` answers), once its first sync is done.
fn search_bench(bencher: Bencher, n: usize) {
    search_bench_with(bencher, n, true);
}

fn search_bench_with(bencher: Bencher, n: usize, meaning: bool) {
    let root = memory_root_with(n, meaning);
    let engine = support::serving(&root);
    let queries = queries();
    let i = AtomicUsize::new(0);
    bencher.bench_local(|| {
        let q = &queries[i.fetch_add(1, Ordering::Relaxed) % queries.len()];
        engine.ask(&tmws::query::catalog::MemorySearch, &MemorySearchRequest::new(q.clone())).unwrap()
    });
}

/// `memory_search` over 100k entries (budget: 2 ms p50).
#[divan::bench(sample_count = 200, sample_size = 1)]
fn memory_search_100k(bencher: Bencher) {
    search_bench(bencher, 100_000);
}

/// `memory_search` over 100k entries by words only (`[semantic] model = "off"`): what
/// meaning adds is the difference to [`memory_search_100k`] (budget: 1 ms p50).
#[divan::bench(sample_count = 200, sample_size = 1)]
fn memory_search_100k_words_only(bencher: Bencher) {
    search_bench_with(bencher, 100_000, false);
}

/// `memory_search` over 10k entries: every match ranked by BM25 × decay × trust.
#[divan::bench(sample_count = 200, sample_size = 1)]
fn memory_search_10k(bencher: Bencher) {
    search_bench(bencher, 10_000);
}

/// Resident memory of a `tmws mcp` that has just read a 100k-entry memory log whole (its
/// index deleted first), once idle (budget: 60 MB); the time is spawn → synced. Each run
/// prints the idle and the peak resident memory.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn mcp_idle_resident_memory_after_100k_memory_reread(bencher: Bencher) {
    let root = memory_root(100_000);
    let bin = env!("CARGO_BIN_EXE_tmws");
    bencher
        .with_inputs(|| {
            let _ = std::fs::remove_dir_all(root.join(".tmws/cache"));
        })
        .bench_local_values(|()| {
            let mut mcp = support::start_mcp(bin, &root);
            mcp.until_synced("memory_search", r#"{"query":"deploy"}"#);
            let (rss, peak) = mcp.idle_memory(std::time::Duration::from_secs(3));
            eprintln!("idle tmws mcp after reading 100k memories: {rss} (peak {peak})");
        });
}

/// `recall` over 100k memories and a 10k-document workspace, through a serving engine
/// (budget: 10 ms p50): memories, decisions, lessons and commits ranked together.
#[divan::bench(sample_count = 200, sample_size = 1)]
fn recall_100k_memories_10k_docs(bencher: Bencher) {
    let root = recall_root();
    let engine = support::serving(&root);
    let queries = queries();
    let i = AtomicUsize::new(0);
    bencher.bench_local(|| {
        let q = &queries[i.fetch_add(1, Ordering::Relaxed) % queries.len()];
        engine.ask(&tmws::query::catalog::Recall, &RecallRequest::new(format!("{q} before the release"))).unwrap()
    });
}

/// The root of [`recall_100k_memories_10k_docs`]: 100k memories and a 10k-document
/// workspace, indexed.
fn recall_root() -> PathBuf {
    support::memory::docs_and_memories_root("tmws-bench-recall", "v1", 100_000, |_| Box::new(|_| String::new()))
}

/// `tmws brief` as a process, as a client's hook runs it, on 100k memories and 10k
/// documents with no server running (budget: 30 ms p95): each run a new client session,
/// so nothing is left out as briefed already.
fn brief_process(bencher: Bencher, event: &'static str, payload: fn(&std::path::Path, usize, &str) -> String) {
    use std::io::Write as _;
    let root = recall_root();
    let bin = env!("CARGO_BIN_EXE_tmws");
    let queries = queries();
    let n = AtomicUsize::new(0);
    bencher.bench(|| {
        let i = n.fetch_add(1, Ordering::Relaxed);
        let stdin = payload(&root, i, &queries[i % queries.len()]);
        let mut child = std::process::Command::new(bin)
            .args(["brief", "--event", event, "--client", "claude"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
    });
}

#[divan::bench(sample_count = 40, sample_size = 1)]
fn brief_process_prompt_100k_memories_10k_docs(bencher: Bencher) {
    brief_process(bencher, "prompt", |root, i, q| {
        serde_json::json!({"session_id": format!("bench-{i}"), "cwd": root, "prompt": format!("how do we handle {q}?")})
            .to_string()
    });
}

#[divan::bench(sample_count = 40, sample_size = 1)]
fn brief_process_pre_tool_100k_memories_10k_docs(bencher: Bencher) {
    brief_process(bencher, "pre-tool", |root, i, q| {
        let command = format!("./scripts/{} --target {q}", letters(i));
        serde_json::json!({"session_id": format!("bench-{i}"), "cwd": root, "tool_name": "Bash",
            "tool_input": {"command": command}})
        .to_string()
    });
}

#[divan::bench(sample_count = 40, sample_size = 1)]
fn brief_process_session_start_100k_memories_10k_docs(bencher: Bencher) {
    brief_process(bencher, "session-start", |root, i, _| {
        serde_json::json!({"session_id": format!("bench-{i}"), "cwd": root, "source": "startup"}).to_string()
    });
}

/// `memory cleanup` of a log of 100k entries, a fifth of them deleted (budget: 1 s).
#[divan::bench(sample_count = 10, sample_size = 1)]
fn cleanup_100k(bencher: Bencher) {
    let root = std::env::temp_dir().join("tmws-bench-memory-cleanup");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join(".tmws/memory")).unwrap();
    std::fs::write(root.join(".tmws/config.toml"), "[namespaces.long-term]\nmax_entries = 200000\n").unwrap();
    let engine = Engine::open(&root).unwrap();
    let log = log_text(100_000, 5);
    let path = root.join(".tmws/memory/long-term.jsonl");
    bencher.with_inputs(|| std::fs::write(&path, &log).unwrap()).bench_local_values(|()| {
        let done = engine.ask(&tmws::query::catalog::MemoryCleanup, &FormatOnly::default()).unwrap();
        assert!(done.answer.compacted_bytes > 0);
    });
}

/// `memory_add` with fsync, then the writer's sync, until a search finds it: the floor of
/// what a server's watcher gives (it adds the debounce).
#[divan::bench(sample_count = 30, sample_size = 1)]
fn memory_add_fsync_to_searchable(bencher: Bencher) {
    let root = std::env::temp_dir().join("tmws-bench-memory-add");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join(".tmws")).unwrap();
    // A one-shot engine syncs before it searches: add, sync, search.
    let engine = Engine::open(&root).unwrap();
    assert!(engine.config().memory.fsync);
    engine.sync(&SyncOptions::default()).unwrap();
    let n = AtomicUsize::new(0);
    bencher.bench_local(|| {
        let i = n.fetch_add(1, Ordering::Relaxed);
        let word = letters(i);
        let added = engine
            .ask(&tmws::query::catalog::MemoryAdd, &MemoryAddRequest::new(format!("bench note about {word}")))
            .unwrap()
            .answer;
        let found =
            engine.ask(&tmws::query::catalog::MemorySearch, &MemorySearchRequest::new(word.clone())).unwrap().answer;
        assert_eq!(found.results[0].id, added.id, "{found:?}");
    });
}

/// `tmws memory add` as a process, into a full long-term log (20,000 entries, its default
/// `max_entries`): what an agent's hook pays per note. The process folds the log it
/// appends to (dedupe, upsert by key, eviction of the oldest); the index is not synced.
#[divan::bench(sample_count = 20, sample_size = 1)]
fn memory_add_process_full_20k_log(bencher: Bencher) {
    let root = std::env::temp_dir().join("tmws-bench-memory-add-20k");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join(".tmws/memory")).unwrap();
    let log = log_text(20_000, 0);
    let path = root.join(".tmws/memory/long-term.jsonl");
    std::fs::write(&path, &log).unwrap();
    let bin = env!("CARGO_BIN_EXE_tmws");
    let n = AtomicUsize::new(0);
    bencher.bench(|| {
        let note = format!("hook note about {}", letters(n.fetch_add(1, Ordering::Relaxed)));
        let out = std::process::Command::new(bin)
            .arg("--root")
            .arg(&root)
            .args(["memory", "add", "--namespace", "long-term", &note])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    });
}

/// `memory_add` in-process into a full long-term log (20,000 entries): the writer alone
/// (its fold kept from the add before, the append, the fold brought up to the end), without
/// a process start or an index sync.
#[divan::bench(sample_count = 200, sample_size = 1)]
fn memory_add_in_process_full_20k_log(bencher: Bencher) {
    let root = std::env::temp_dir().join("tmws-bench-memory-add-20k-in-process");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join(".tmws/memory")).unwrap();
    std::fs::write(root.join(".tmws/memory/long-term.jsonl"), log_text(20_000, 0)).unwrap();
    let engine = Engine::open(&root).unwrap();
    let n = AtomicUsize::new(0);
    bencher.bench_local(|| {
        let mut req =
            MemoryAddRequest::new(format!("in-process note about {}", letters(n.fetch_add(1, Ordering::Relaxed))));
        req.namespace = Some("long-term".into());
        engine.ask(&tmws::query::catalog::MemoryAdd, &req).unwrap()
    });
}

/// `memory_add` in-process into a log of a few hundred entries, without fsync: what the
/// writer costs beyond the disk (redaction, the op, the append and bringing its fold up to
/// the end), with no eviction to look for.
#[divan::bench(sample_count = 500, sample_size = 1)]
fn memory_add_in_process_small_log_no_fsync(bencher: Bencher) {
    let root = std::env::temp_dir().join("tmws-bench-memory-add-small");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join(".tmws/memory")).unwrap();
    std::fs::write(root.join(".tmws/config.toml"), "[memory]\nfsync = false\n").unwrap();
    std::fs::write(root.join(".tmws/memory/long-term.jsonl"), log_text(200, 0)).unwrap();
    let engine = Engine::open(&root).unwrap();
    let n = AtomicUsize::new(0);
    bencher.bench_local(|| {
        let note = format!("small-log note about {}", letters(n.fetch_add(1, Ordering::Relaxed)));
        let mut req = MemoryAddRequest::new(note);
        req.namespace = Some("long-term".into());
        engine.ask(&tmws::query::catalog::MemoryAdd, &req).unwrap()
    });
}
