//! Registry and pool budgets (docs/performance.md) on a generated registry of 200 servers and 1,000
//! tools: `tmws mcp` from spawn to `initialize` and `tools/list` answered, `tool_search` in
//! process, and a lazy connect plus first call through the pool to the example server.
//!
//! Run with `cargo bench --bench pool` (after `cargo build --release --examples`, which
//! builds the example server `mcp_mock`).

use std::path::{Path, PathBuf};

use divan::Bencher;
use tmws::query::api::{ToolCallRequest, ToolDescribeRequest, ToolSearchRequest};
use tmws::query::{Engine, SyncOptions};

mod support;

// The binary's allocator, so that in-process figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
        Engine::open(&root).unwrap().sync(&SyncOptions::default()).unwrap();
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

/// `tool_search` over 1,000 tools in a serving engine (as `tmws mcp` answers it).
#[divan::bench(sample_count = 200, sample_size = 10)]
fn tool_search_1000_tools(bencher: Bencher) {
    let engine = support::serving(root());
    let mut i = 0;
    bencher.bench_local(|| {
        i += 1;
        let found =
            engine.ask(&tmws::query::catalog::ToolSearch, &ToolSearchRequest::new(QUERIES[i % QUERIES.len()])).unwrap();
        assert!(!found.answer.results.is_empty());
        found.text()
    });
}

/// `tool_call` as a client of a server calls it.
async fn tool_call(engine: &Engine, req: &ToolCallRequest) -> tmws::Result<tmws::query::tools::ToolCallAnswer> {
    let session = engine.session();
    tmws::query::catalog::ToolCall::call(tmws::query::catalog::Cx { engine, session: &session }, req).await
}

fn echo(server: &str) -> ToolCallRequest {
    let arguments = serde_json::json!({"text": "hello"}).as_object().unwrap().clone();
    ToolCallRequest { server: server.into(), tool: "echo".into(), arguments }
}

/// A cold server: config-hash check, start, `initialize`, and the first `tools/call`
/// answered, through the pool (the usage line included). The server is closed outside
/// the timing.
#[divan::bench(sample_count = 30, sample_size = 1)]
fn lazy_connect_and_first_call(bencher: Bencher) {
    let root = root();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let engines = std::cell::RefCell::new(Vec::new());
    // A server's engine has read the registry already (it is read once and kept).
    let fresh = || {
        let engine = Engine::open(root).unwrap();
        engine
            .ask(
                &tmws::query::catalog::ToolDescribe,
                &ToolDescribeRequest { server: "s000".into(), tool: "echo".into(), ..Default::default() },
            )
            .unwrap();
        engine
    };
    bencher.with_inputs(fresh).bench_local_values(|engine| {
        let called = rt.block_on(tool_call(&engine, &echo("s000"))).unwrap();
        assert!(!called.is_error);
        engines.borrow_mut().push(engine);
    });
    for engine in engines.into_inner() {
        rt.block_on(engine.shutdown());
    }
}

/// A call to a server that is already connected, for comparison.
#[divan::bench(sample_count = 100, sample_size = 1)]
fn warm_call(bencher: Bencher) {
    let engine = Engine::open(root()).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(tool_call(&engine, &echo("s001"))).unwrap();
    bencher.bench_local(|| rt.block_on(tool_call(&engine, &echo("s001"))).unwrap());
    rt.block_on(engine.shutdown());
}
