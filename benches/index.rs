//! Index budgets (docs/performance.md): full build (and of a win32-shaped tree), no-op sync,
//! search, save → searchable through the watcher, `tmws search` as a process, and indexing the
//! real-world corpora.
//!
//! Run with `cargo bench --bench index`. The 100k-document root is generated once under
//! the system temp folder and reused.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use divan::Bencher;
use divan::counter::ItemsCount;
use tmws::query::api::SearchRequest;
use tmws::query::{Engine, SyncOptions};

mod support;

// The binary's allocator, so that in-process figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    divan::main();
}

const QUERIES: [&str; 8] = [
    "token refresh",
    "watcher",
    "compaction decay",
    "schema",
    "lock append",
    "ranking latency",
    "plan",
    "manifest checkpoint",
];

fn built(files: usize) -> (PathBuf, usize) {
    let (root, n) = support::cached_root(files);
    Engine::open(&root).unwrap().sync(&SyncOptions::default()).unwrap();
    (root, n)
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn full_build_100k(bencher: Bencher) {
    let (root, n) = support::cached_root(100_000);
    bencher
        .counter(ItemsCount::new(n))
        .bench(|| Engine::open(&root).unwrap().sync(&SyncOptions { rebuild: true, ..SyncOptions::default() }).unwrap());
}

/// A full build of a tree shaped like the win32 documentation: 48,212 pages of about
/// 4 KB (long bodies, identifiers, `ms.*` keys) in an included folder.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn full_build_win32_48k(bencher: Bencher) {
    let (root, n) = support::cached_win32(48_212);
    bencher
        .counter(ItemsCount::new(n))
        .bench(|| Engine::open(&root).unwrap().sync(&SyncOptions { rebuild: true, ..SyncOptions::default() }).unwrap());
}

/// [`full_build_win32_48k`] by words only: the vectors' share of a build is the
/// difference (budget: +25 %).
#[divan::bench(sample_count = 3, sample_size = 1)]
fn full_build_win32_48k_words_only(bencher: Bencher) {
    let (root, n) = support::cached_win32(48_212);
    let _off = support::WordsOnly::set(&root);
    bencher
        .counter(ItemsCount::new(n))
        .bench(|| Engine::open(&root).unwrap().sync(&SyncOptions { rebuild: true, ..SyncOptions::default() }).unwrap());
}

/// The floor [`full_build_win32_48k_words_only`] is judged against: a plain tantivy
/// program over the same pages, with none of tmws' work. Each file is read and its whole
/// text indexed in one field by tantivy's default tokenizer (no stemming, no identifier
/// splitting), two indexing threads, 64 MB, into a new folder; committed, merges waited.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn tantivy_floor_win32_48k(bencher: Bencher) {
    use tantivy::schema::{Schema, TEXT};
    let (root, n) = support::cached_win32(48_212);
    let mut files = Vec::new();
    let mut dirs = vec![root.join("desktop-src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() { dirs.push(path) } else { files.push(path) }
        }
    }
    files.sort();
    assert_eq!(files.len(), n);
    bencher.counter(ItemsCount::new(n)).bench(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut schema = Schema::builder();
        let body = schema.add_text_field("body", TEXT);
        let index = tantivy::Index::create_in_dir(dir.path(), schema.build()).unwrap();
        let mut writer: tantivy::IndexWriter = index.writer_with_num_threads(2, 64 << 20).unwrap();
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            writer.add_document(tantivy::doc!(body => text)).unwrap();
        }
        writer.commit().unwrap();
        writer.wait_merging_threads().unwrap();
    });
}

/// [`full_build_100k`] by words only.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn full_build_100k_words_only(bencher: Bencher) {
    let (root, n) = support::cached_root(100_000);
    let _off = support::WordsOnly::set(&root);
    bencher
        .counter(ItemsCount::new(n))
        .bench(|| Engine::open(&root).unwrap().sync(&SyncOptions { rebuild: true, ..SyncOptions::default() }).unwrap());
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn noop_sync_100k(bencher: Bencher) {
    let (root, _) = built(100_000);
    let engine = Engine::open(&root).unwrap();
    bencher.bench_local(|| {
        let r = engine.sync(&SyncOptions::default()).unwrap();
        assert_eq!((r.new, r.changed, r.removed), (0, 0, 0));
    });
}

/// `workspace_search` in a serving engine (as `tmws mcp` answers it): freshness check,
/// search, answer as YAML text within its cap.
#[divan::bench(sample_count = 200, sample_size = 1)]
fn search_100k(bencher: Bencher) {
    let (root, _) = built(100_000);
    let engine = support::serving(&root);
    let mut i = 0;
    bencher.bench_local(|| {
        i += 1;
        engine.ask(&tmws::query::catalog::Search, &SearchRequest::new(QUERIES[i % QUERIES.len()])).unwrap().text()
    });
}

/// The same, query by query (which ones cost what).
#[divan::bench(sample_count = 50, sample_size = 1, args = QUERIES)]
fn search_100k_by_query(bencher: Bencher, query: &str) {
    let (root, _) = built(100_000);
    let engine = support::serving(&root);
    let req = SearchRequest::new(query);
    bencher.bench_local(|| engine.ask(&tmws::query::catalog::Search, &req).unwrap().text());
}

#[divan::bench(sample_count = 30, sample_size = 1)]
fn tmws_search_process_100k(bencher: Bencher) {
    let (root, _) = built(100_000);
    let bin = env!("CARGO_BIN_EXE_tmws");
    bencher.bench(|| search_process(bin, &root));
}

/// The same, while a `tmws watch` process holds the writer: the CLI then reads without a
/// sync of its own, which is how an editor session runs.
#[divan::bench(sample_count = 30, sample_size = 1)]
fn tmws_search_process_100k_with_watcher(bencher: Bencher) {
    let (root, _) = built(100_000);
    let bin = env!("CARGO_BIN_EXE_tmws");
    let watcher = WatchProcess::start(&root);
    bencher.bench(|| search_process(bin, &root));
    watcher.stop();
}

/// A `tmws watch` process over a root, its output drained so it never blocks on a pipe.
struct WatchProcess {
    child: std::process::Child,
    drain: std::thread::JoinHandle<()>,
}

impl WatchProcess {
    /// Starts one and returns once its first sync is reported (its watches are set up
    /// before that sync).
    fn start(root: &Path) -> WatchProcess {
        use std::io::BufRead;
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tmws"))
            .arg("--root")
            .arg(root)
            .arg("watch")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        assert!(lines.by_ref().any(|l| l.is_ok_and(|l| l.starts_with("synced"))), "the watcher never synced");
        WatchProcess { child, drain: std::thread::spawn(move || lines.for_each(drop)) }
    }

    /// Ctrl-C: the watcher commits and exits.
    fn stop(mut self) {
        #[allow(unsafe_code)]
        // SAFETY: kill takes integers only; the pid is of a child not yet waited for.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGINT);
        }
        self.child.wait().unwrap();
        self.drain.join().unwrap();
    }
}

/// One saved file until a reader finds it, through a `tmws watch` process (50 ms debounce)
/// as an editor session runs it: with the allocator settings of a long-running process.
#[divan::bench(sample_count = 40, sample_size = 1, args = [10_000, 100_000])]
fn save_to_searchable(bencher: Bencher, docs: usize) {
    save_and_search(bencher, docs, Duration::ZERO);
}

/// The same with saves 1.5 s apart, as an editor makes them: the watcher has let go of its
/// manifest in between and reads the part it needs again for each save.
#[divan::bench(sample_count = 15, sample_size = 1, args = [100_000])]
fn save_to_searchable_after_idle(bencher: Bencher, docs: usize) {
    save_and_search(bencher, docs, Duration::from_millis(1500));
}

fn save_and_search(bencher: Bencher, docs: usize, pause: Duration) {
    let (root, _) = built(docs);
    let watcher = WatchProcess::start(&root);
    // A reader beside the watcher's writer, as a `tmws search` process is.
    let reader = Engine::open(&root).unwrap();
    let mut n = 0;
    // The pause and the write are outside the timing: it starts once the file is saved.
    bencher
        .with_inputs(|| {
            std::thread::sleep(pause);
            n += 1;
            let word = format!("zqxsaved{n}");
            let path = root.join(format!("resources/workspaces/w0/d0/r0/_lessons/261122-bench-{n}.md"));
            write(&path, &format!("---\nname: {word}\ndescription: d\ncreated: 2026-11-22\n---\n"));
            word
        })
        .bench_local_values(|word| {
            let start = Instant::now();
            let req = SearchRequest { limit: 1, ..SearchRequest::new(word) };
            loop {
                if !reader.ask(&tmws::query::catalog::Search, &req).unwrap().answer.results.is_empty() {
                    break;
                }
                assert!(start.elapsed() < Duration::from_secs(10), "never became searchable");
                std::thread::sleep(Duration::from_millis(1));
            }
        });
    watcher.stop();
    for k in 1..=n {
        let _ = std::fs::remove_file(root.join(format!("resources/workspaces/w0/d0/r0/_lessons/261122-bench-{k}.md")));
    }
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn index_real_world_corpora(bencher: Bencher) {
    let Some(corpora) = std::env::var_os("TMWS_CORPORA").map(PathBuf::from).filter(|c| c.is_dir()) else {
        eprintln!("index_real_world_corpora: TMWS_CORPORA names no folder; skipped");
        return;
    };
    let root = std::env::temp_dir().join("tmws-bench-corpora-root");
    let _ = std::fs::remove_dir_all(&root);
    write(&root.join(".tmws/config.toml"), "[index]\ninclude = [\"corpora\"]\n");
    copy_tree(&corpora, &root.join("corpora"));
    let mut n = 0;
    n += Engine::open(&root).unwrap().sync(&SyncOptions::default()).unwrap().items as usize;
    bencher
        .counter(ItemsCount::new(n))
        .bench(|| Engine::open(&root).unwrap().sync(&SyncOptions { rebuild: true, ..SyncOptions::default() }).unwrap());
}

/// One `tmws search` run as a separate process.
fn search_process(bin: &str, root: &Path) {
    let out =
        std::process::Command::new(bin).arg("--root").arg(root).args(["search", "token refresh"]).output().unwrap();
    assert!(out.status.success());
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let target = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &target);
        } else if p.extension().is_some_and(|x| x == "md") {
            std::fs::create_dir_all(to).unwrap();
            std::fs::copy(&p, &target).unwrap();
        }
    }
}
