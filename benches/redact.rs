//! Redaction cost (budget, docs/performance.md: `memory add` of 100 KB of ordinary prose at
//! most 10 % slower than without redaction): `redact` over 100 KB of real documentation, next
//! to `memory_add` of the same 100 KB (fsync on, the default), whose difference is what
//! redaction may cost.
//!
//! Run with `cargo bench --bench redact`. The prose is the Markdown of the thanos docs in
//! the corpora (`TMWS_CORPORA`, by default `../shared/corpora`): ordinary English with the
//! words that wake the rules (`token`, `key`, `secret`, `password`) but no secret; without
//! the corpora, the sample root's documents repeated.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use divan::Bencher;
use tmws::query::Engine;
use tmws::query::api::MemoryAddRequest;

// The binary's allocator, so that in-process figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    if std::env::var_os("TMWS_BENCH_REDACT_ONCE").is_some() {
        // A child of `first_redaction_in_a_process`: one answer-sized text, then exit.
        let r = tmws::redact::redact("summary: the deploy token rotates weekly; see the key vault runbook");
        assert_eq!(r.count, 0);
        return;
    }
    divan::main();
}

const SIZE: usize = 100 * 1024;

/// Every Markdown file below `dir`, in name order.
fn markdown(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            markdown(&p, out);
        } else if p.extension().is_some_and(|e| e == "md") {
            out.push(p);
        }
    }
}

/// 100 KB of ordinary prose, cut at a character boundary.
fn prose() -> String {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let corpora = std::env::var_os("TMWS_CORPORA").map_or_else(|| manifest.join("../shared/corpora"), PathBuf::from);
    let mut files = Vec::new();
    markdown(&corpora.join("thanos-docs"), &mut files);
    if files.is_empty() {
        markdown(&manifest.join("testdata/sample"), &mut files);
    }
    let mut text = String::with_capacity(SIZE + 4096);
    'fill: loop {
        for f in &files {
            text.push_str(&std::fs::read_to_string(f).unwrap_or_default());
            text.push('\n');
            if text.len() >= SIZE {
                break 'fill;
            }
        }
        assert!(!text.is_empty(), "no prose to redact");
    }
    let mut end = SIZE;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text
}

/// `redact` over 100 KB of prose.
#[divan::bench(sample_count = 100, sample_size = 1)]
fn redact_prose_100k(bencher: Bencher) {
    let text = prose();
    bencher.bench_local(|| tmws::redact::redact(divan::black_box(&text)));
}

/// The same prose as the lines of a JSON log (`{"content":"…"}`, its quotes escaped): every
/// line is looked at again decoded, where an escaped secret would show.
#[divan::bench(sample_count = 100, sample_size = 1)]
fn redact_json_escaped_prose_100k(bencher: Bencher) {
    let prose = prose();
    let mut text = String::with_capacity(SIZE + 4096);
    for chunk in prose.as_bytes().chunks(800) {
        text.push_str(&serde_json::json!({"op": "add", "content": String::from_utf8_lossy(chunk)}).to_string());
        text.push('\n');
    }
    bencher.bench_local(|| tmws::redact::redact(divan::black_box(&text)));
}

/// The same with a text that wakes no rule but the one that always runs: the floor.
#[divan::bench(sample_count = 100, sample_size = 1)]
fn redact_plain_100k(bencher: Bencher) {
    let text = "Lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor. ".repeat(SIZE / 80);
    bencher.bench_local(|| tmws::redact::redact(divan::black_box(&text)));
}

/// `memory_add` of 100 KB of prose (a new entry each time), redaction included.
#[divan::bench(sample_count = 30, sample_size = 1)]
fn memory_add_prose_100k(bencher: Bencher) {
    let root = std::env::temp_dir().join("tmws-bench-redact-add");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join(".tmws")).unwrap();
    let engine = Engine::open(&root).unwrap();
    let text = prose();
    let n = AtomicUsize::new(0);
    bencher.bench_local(|| {
        let i = n.fetch_add(1, Ordering::Relaxed);
        let mut req = MemoryAddRequest::new(format!("{i} {text}"));
        req.namespace = Some("long-term".into());
        engine.ask(&tmws::query::catalog::MemoryAdd, &req).unwrap()
    });
}

/// The first redaction of a process (what a one-shot CLI command pays): the keyword
/// automaton and the expressions of the rules the text wakes, compiled, in a new process.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn first_redaction_in_a_process(bencher: Bencher) {
    let exe = std::env::current_exe().unwrap();
    bencher.bench_local(|| {
        let out = std::process::Command::new(&exe).env("TMWS_BENCH_REDACT_ONCE", "1").output().unwrap();
        assert!(out.status.success());
    });
}
