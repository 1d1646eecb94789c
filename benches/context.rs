//! Context and MCP budgets (docs/performance.md): `workspace_get_context` in-process on a workspace
//! of 10k files, `tmws context` as a process, and `tmws mcp` from spawn to `initialize` and
//! `tools/list` answered.
//!
//! Run with `cargo bench --bench context`. Uses the 100k-document root of the index
//! benches (10 workspaces of 10k files each), generated once under the temp folder.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use divan::Bencher;
use tmws::query::api::ContextRequest;
use tmws::query::{Engine, SyncOptions};

mod support;

// The binary's allocator, so that in-process figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    divan::main();
}

fn built() -> PathBuf {
    let (root, _) = support::cached_root(100_000);
    Engine::open(&root).unwrap().sync(&SyncOptions::default()).unwrap();
    root
}

fn request(topics: &[&str], scope: (&str, Option<&str>, Option<&str>)) -> ContextRequest {
    ContextRequest {
        workspace: scope.0.into(),
        domain: scope.1.map(Into::into),
        repository: scope.2.map(Into::into),
        topics: topics.iter().map(|t| (*t).to_owned()).collect(),
        ..ContextRequest::default()
    }
}

/// `workspace_get_context` in a serving engine (as `tmws mcp` answers it): freshness
/// check, the answer, its YAML text within the cap.
fn bench_context(bencher: Bencher, req: &ContextRequest) {
    let root = built();
    let engine = support::serving(&root);
    bencher.bench_local(|| engine.ask(&tmws::query::catalog::Context, req).unwrap().text());
}

/// Defaults for a whole workspace of 10k files (the answer is cut to 24,000 chars).
#[divan::bench(sample_count = 30, sample_size = 1)]
fn context_defaults_10k_workspace(bencher: Bencher) {
    bench_context(bencher, &request(&[], ("w0", None, None)));
}

/// Defaults plus every topic of the same workspace.
#[divan::bench(sample_count = 20, sample_size = 1)]
fn context_all_topics_10k_workspace(bencher: Bencher) {
    bench_context(bencher, &request(&["*"], ("w0", None, None)));
}

/// Defaults for one repository.
#[divan::bench(sample_count = 50, sample_size = 1)]
fn context_defaults_repository(bencher: Bencher) {
    bench_context(bencher, &request(&[], ("w0", Some("d0"), Some("r0"))));
}

/// `tmws context` as a process while a watcher keeps the index (so the process reads).
#[divan::bench(sample_count = 20, sample_size = 1)]
fn tmws_context_process_with_watcher(bencher: Bencher) {
    let root = built();
    let bin = env!("CARGO_BIN_EXE_tmws");
    let mut watcher = Command::new(bin)
        .arg("--root")
        .arg(&root)
        .arg("watch")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    bencher.bench(|| {
        let out =
            Command::new(bin).arg("--root").arg(&root).args(["context", "-w", "w0", "-d", "d0"]).output().unwrap();
        assert!(out.status.success());
    });
    let _ = watcher.kill();
    let _ = watcher.wait();
}

/// Spawn `tmws mcp`, send initialize, initialized and tools/list, read both answers.
#[divan::bench(sample_count = 20, sample_size = 1)]
fn mcp_spawn_to_tools_list(bencher: Bencher) {
    let root = built();
    let bin = env!("CARGO_BIN_EXE_tmws");
    bencher.bench(|| support::mcp_spawn_to_tools_list(bin, &root, "workspace_get_context"));
}

/// Resident memory of an idle `tmws mcp` over the 100k-document root once its first sync is
/// done (budget: 60 MB). The time measured is spawn → synced; each run prints the RSS.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn mcp_idle_resident_memory_100k(bencher: Bencher) {
    let root = built();
    let bin = env!("CARGO_BIN_EXE_tmws");
    bencher.bench(|| {
        let mut mcp = support::start_mcp(bin, &root);
        mcp.until_synced("workspace_search", r#"{"query":"index"}"#);
        let (rss, _) = mcp.idle_memory(Duration::from_secs(2));
        eprintln!("idle tmws mcp, 100k documents: {rss}");
    });
}
