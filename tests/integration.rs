//! One integration test binary: every test drives the real `tmws` binary or the library's
//! public API against real files.

mod it;
