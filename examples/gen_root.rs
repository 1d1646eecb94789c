//! Generates a synthetic tmws root to try the commands on a large tree:
//!
//! ```sh
//! cargo run --release --example gen_root -- /tmp/big-root 100000
//! cargo run --release -- check --root /tmp/big-root
//! ```

#[path = "../benches/support/mod.rs"]
mod support;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), count) = (args.next(), args.next()) else {
        eprintln!("usage: gen_root DIR [FILES]   (default 10000 files)");
        std::process::exit(2);
    };
    let files = count.and_then(|c| c.parse().ok()).unwrap_or(10_000);
    let written = support::generate(std::path::Path::new(&dir), files);
    eprintln!("wrote {written} files under {dir}");
}
