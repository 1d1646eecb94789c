//! Registry and pool budgets (DESIGN §11) on a generated registry of 200 servers and 1,000
//! tools: `tmws mcp` from spawn to `initialize` and `tools/list` answered, `tool_search` in
//! process, and a lazy connect plus first call through the pool to the example server.
//!
//! Run with `cargo bench --bench pool` (after `cargo build --release --examples`, which
//! builds the example server `mcp_mock`).

use std::path::{Path, PathBuf};

use divan::Bencher;
use tmws::config::Config;
use tmws::index::{Index, SyncOptions};
use tmws::pool::{Pool, Settings};
use tmws::query::Workspace;
use tmws::query::tools::{self, Registry, ToolSearch};

mod support;

fn main() {
    divan::main();
}

fn mock() -> String {
    let tmws = PathBuf::from(env!("CARGO_BIN_EXE_tmws"));
    let mock = tmws.parent().unwrap().join("examples").join(format!("mcp_mock{}", std::env::consts::EXE_SUFFIX));
    assert!(mock.exists(), "{} is missing: run `cargo build --release --examples` first", mock.display());
    mock.display().to_string()
}

/// The generated root, made and indexed once per bench process.
fn root() -> &'static Path {
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let root = std::env::temp_dir().join("tmws-bench-registry-200");
        let _ = std::fs::remove_dir_all(&root);
        support::registry(&root, 200, 5, &mock());
        let mut ws = Workspace::open(&root).unwrap();
        ws.sync(&SyncOptions::default()).unwrap();
        root
    })
}

/// Spawn `tmws mcp`, send initialize, initialized and tools/list, read both answers.
#[divan::bench(sample_count = 30, sample_size = 1)]
fn mcp_spawn_to_tools_list_200_servers(bencher: Bencher) {
    let root = root();
    let bin = env!("CARGO_BIN_EXE_tmws");
    bencher.bench(|| support::mcp_spawn_to_tools_list(bin, root, "tool_search"));
}

const QUERIES: [&str; 8] = [
    "find symbol",
    "search index",
    "resolve library",
    "get memory",
    "list server pool",
    "token refresh",
    "delete cache",
    "fetch docs",
];

/// `tool_search` over 1,000 tools, in process.
#[divan::bench(sample_count = 200, sample_size = 10)]
fn tool_search_1000_tools(bencher: Bencher) {
    let root = root();
    let index = Index::open_reader(root).unwrap();
    let registry = Registry::new(root);
    let mut i = 0;
    bencher.bench_local(|| {
        i += 1;
        let req = ToolSearch { query: QUERIES[i % QUERIES.len()].to_owned(), limit: 8, ..ToolSearch::default() };
        let found = tools::search(&index, &registry, &req).unwrap();
        assert!(!found.results.is_empty());
        found
    });
}

/// A cold server: config-hash check, start, `initialize`, and the first `tools/call`
/// answered, through the pool (the usage line included). The server is closed outside
/// the timing.
#[divan::bench(sample_count = 30, sample_size = 1)]
fn lazy_connect_and_first_call(bencher: Bencher) {
    let root = root();
    let config = Config::load(root).unwrap();
    let registry = Registry::new(root);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let pools = std::cell::RefCell::new(Vec::new());
    bencher.with_inputs(|| Pool::new(Settings::from_config(&config.pool))).bench_local_values(|pool| {
        let args = serde_json::json!({"text": "hello"}).as_object().unwrap().clone();
        let called = rt.block_on(tools::call(root, &config, &registry, &pool, "s000", "echo", args)).unwrap();
        assert_eq!(called.result.is_error, Some(false));
        pools.borrow_mut().push(pool);
    });
    for pool in pools.into_inner() {
        rt.block_on(pool.shutdown());
    }
}

/// A call to a server that is already connected, for comparison.
#[divan::bench(sample_count = 100, sample_size = 1)]
fn warm_call(bencher: Bencher) {
    let root = root();
    let config = Config::load(root).unwrap();
    let registry = Registry::new(root);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let pool = Pool::new(Settings::from_config(&config.pool));
    let args = serde_json::json!({"text": "hello"}).as_object().unwrap().clone();
    rt.block_on(tools::call(root, &config, &registry, &pool, "s001", "echo", args.clone())).unwrap();
    bencher.bench_local(|| {
        rt.block_on(tools::call(root, &config, &registry, &pool, "s001", "echo", args.clone())).unwrap()
    });
    rt.block_on(pool.shutdown());
}
