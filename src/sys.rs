//! What tmws asks of the operating system beyond files.
//!
//! A sync of a large root allocates tens of megabytes (the manifest, the scan) from several
//! threads and frees them at the end; glibc keeps freed memory in its per-thread arenas, so
//! an idle server would go on holding it. `release_free_memory` gives it back.

/// Returns the heap's free memory to the operating system (glibc's `malloc_trim`); a no-op
/// elsewhere.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn release_free_memory() {
    // SAFETY: malloc_trim takes no pointers and may be called at any time from any thread;
    // it only returns unused pages of the allocator's arenas to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Returns the heap's free memory to the operating system (glibc's `malloc_trim`); a no-op
/// elsewhere.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release_free_memory() {}
