//! Generates a synthetic tmws root to try the commands on a large tree:
//!
//! ```sh
//! cargo run --release --example gen_root -- /tmp/big-root 100000
//! cargo run --release -- check --root /tmp/big-root
//! cargo run --release --example gen_root -- --win32 /tmp/win32-root 48212
//! ```
//!
//! `--win32` writes pages shaped like the win32 documentation (long bodies, `ms.*` keys)
//! under `desktop-src/`, with a config that includes that folder.

#[path = "../benches/support/mod.rs"]
mod support;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let win32 = args.first().is_some_and(|a| a == "--win32");
    if win32 {
        args.remove(0);
    }
    let (Some(dir), count) = (args.first(), args.get(1)) else {
        eprintln!("usage: gen_root [--win32] DIR [FILES]   (default 10000 files)");
        std::process::exit(2);
    };
    let files = count.and_then(|c| c.parse().ok()).unwrap_or(10_000);
    let dir = std::path::Path::new(dir);
    let written = if win32 { support::generate_win32(dir, files) } else { support::generate(dir, files) };
    eprintln!("wrote {written} files under {}", dir.display());
}
