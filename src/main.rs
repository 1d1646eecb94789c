//! The `tmws` binary: everything happens in the library; this only picks the allocator and
//! hands over.

// mimalloc: a full index build takes a quarter less CPU than with glibc's malloc (see
// `sys.rs` for what tmws asks of it besides).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // tmws re-executed by its pool to supervise a downstream server (Linux).
    if let Some(code) = tmws::supervise_if_asked() {
        return code;
    }
    tmws::surface::cli::run()
}
