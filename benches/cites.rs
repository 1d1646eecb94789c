//! Citations checked against the code (docs/citations.md): what a warm check of a recalled
//! item costs (budget: 0.2 ms per item).
//!
//! - `warm_check_100`: 100 citations of spans of 100 settled files, checked once cold (one
//!   `git cat-file` process, results kept in `.tmws/cache/cites.json`), then timed warm
//!   from a new checker that reads the cache: a `stat` and a lookup per citation, no git.
//!
//! Run with `cargo bench --bench cites`. The repository is generated once under the temp
//! folder.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use divan::Bencher;
use tmws::query::cites::{Checker, Cite};

mod support;

use support::git;

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
