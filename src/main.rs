//! The `tmws` binary: everything happens in the library; this only hands over.

fn main() -> std::process::ExitCode {
    tmws::surface::cli::run()
}
