//! `tmws check` throughput (≥ 30,000 files/s on 2 cores: docs/performance.md).
//!
//! Run with `cargo bench --bench check`. The 100k-file root is generated once under the
//! system temp folder and reused; the real-world corpora are read from the folder
//! `TMWS_CORPORA` names.

use std::path::PathBuf;

use divan::Bencher;
use divan::counter::ItemsCount;
use tmws::check::CheckOptions;
use tmws::query::Engine;

mod support;

// The binary's allocator, so that in-process figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    divan::main();
}

fn check(root: PathBuf, paths: Vec<PathBuf>) -> usize {
    let opts = CheckOptions { root: Some(root.clone()), paths, cwd: root, progress: None };
    Engine::check(&opts).expect("check runs").files
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn check_100k_files(bencher: Bencher) {
    let (root, n) = support::cached_root(100_000);
    assert_eq!(check(root.clone(), Vec::new()), n);
    bencher.counter(ItemsCount::new(n)).bench(|| check(root.clone(), Vec::new()));
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn check_real_world_corpora(bencher: Bencher) {
    let Some(corpora) = std::env::var_os("TMWS_CORPORA").map(PathBuf::from).filter(|c| c.is_dir()) else {
        eprintln!("check_real_world_corpora: TMWS_CORPORA names no folder; skipped");
        return;
    };
    let corpora = corpora.canonicalize().unwrap();
    let n = check(corpora.clone(), Vec::new());
    bencher.counter(ItemsCount::new(n)).bench(|| check(corpora.clone(), Vec::new()));
}
