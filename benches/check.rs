//! `tmws check` throughput (DESIGN §11: ≥ 30,000 files/s on 2 cores).
//!
//! Run with `cargo bench --bench check`. The 100k-file root is generated once under the
//! system temp folder and reused; the real-world corpora are read from ../shared/corpora.

use std::path::PathBuf;

use divan::Bencher;
use divan::counter::ItemsCount;
use tmws::check::{CheckOptions, run};

mod support;

fn main() {
    divan::main();
}

fn check(root: PathBuf, paths: Vec<PathBuf>) -> usize {
    let opts = CheckOptions { root: Some(root.clone()), paths, cwd: root, progress: None };
    run(&opts).expect("check runs").files
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn check_100k_files(bencher: Bencher) {
    let (root, n) = support::cached_root(100_000);
    assert_eq!(check(root.clone(), Vec::new()), n);
    bencher.counter(ItemsCount::new(n)).bench(|| check(root.clone(), Vec::new()));
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn check_real_world_corpora(bencher: Bencher) {
    let corpora = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora");
    if !corpora.is_dir() {
        return;
    }
    let corpora = corpora.canonicalize().unwrap();
    let n = check(corpora.clone(), Vec::new());
    bencher.counter(ItemsCount::new(n)).bench(|| check(corpora.clone(), Vec::new()));
}
