//! What tmws asks of its memory allocator beyond allocating, and of the kernel for the
//! pages of index files it has read once.
//!
//! The binary allocates through mimalloc (declared in `main.rs`: a full index build spends
//! most of its time creating and dropping small strings and vectors on several threads, and
//! mimalloc's thread-local free lists made it ~25 % cheaper in CPU than glibc's malloc,
//! docs/performance.md, full build). A program that links the library with another allocator loses
//! nothing here: these calls then act on mimalloc's empty heap.
//!
//! mimalloc returns freed memory to the operating system one second (ten for whole arenas)
//! after it was freed, and only when the program next allocates: right for a command that
//! exits, wrong for a server that goes idle after its first sync of a large root and would
//! go on holding tens of megabytes. Long-running commands call [`lean`] first, as does a
//! large sync, and the servers call [`release_free_memory`] after each whole sync.

use std::os::raw::c_int;

/// The number of files to read from which a sync makes the process [`lean`].
pub const LARGE_SYNC: usize = 5_000;

/// `mi_option_purge_delay` in mimalloc 3's `mi_option_e` (the `libmimalloc-sys` we pin has
/// no constant for it; `purge_delay_is_the_option_we_mean` checks the number).
const MI_OPTION_PURGE_DELAY: c_int = 15;

/// Makes the allocator give freed memory back at once rather than after a delay, and turns
/// transparent huge pages off for the process (mimalloc asks for them; a 2 MiB page stays
/// resident while any 4 KiB of it is in use). For processes that stay up and idle (`mcp`,
/// `serve`, `watch`: their first sync is ~10 % slower, their idle footprint a third
/// smaller), and for a sync about to read [`LARGE_SYNC`] files or more, whose peak it
/// lowers by a fifth (fat LTO, writer buffers of 96 MB: 100k synthetic pages 225–241 →
/// 176–188 MB in the same time; win32-shaped 48k 256–287 → 211–217 MB, medians 7.95 →
/// 8.47 s over three interleaved runs). A small command keeps both: turning huge pages
/// off made a one-shot `memory add` ~10 % slower, with twice the page faults.
#[allow(unsafe_code)]
pub fn lean() {
    // SAFETY: mi_option_set takes two integers and only stores the value in mimalloc's
    // option table, which may be changed at any time from any thread.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0);
    }
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes integers only and changes a flag of this process;
    // a kernel without it answers EINVAL, which changes nothing and is ignored.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Returns the allocator's free memory to the operating system now (mimalloc's
/// `mi_collect(force)`).
#[allow(unsafe_code)]
pub fn release_free_memory() {
    // SAFETY: mi_collect takes no pointers and may be called at any time from any thread;
    // it only frees the calling thread's empty pages and purges memory already freed.
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
}

/// Asks the kernel to take back the pages that hold `bytes` and that no other process maps
/// (`MADV_PAGEOUT`): for a part of a memory-mapped index file that has been read once and
/// copied out, whose pages would otherwise stay resident as long as the file is mapped.
/// The contents are kept either way: a file's pages are read again from the file if they
/// are touched later, and anonymous memory is only ever swapped out, never dropped. Only
/// whole pages inside `bytes` are named; a kernel without the advice (before Linux 5.4)
/// answers EINVAL, which is ignored, and other systems do nothing.
#[allow(unsafe_code)]
pub fn page_out(bytes: &[u8]) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf takes an integer and returns one.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(0);
        if page == 0 {
            return;
        }
        let start = (bytes.as_ptr() as usize).next_multiple_of(page);
        let end = (bytes.as_ptr() as usize + bytes.len()) / page * page;
        if end > start {
            // SAFETY: the range lies inside `bytes`, memory this process has mapped, and
            // MADV_PAGEOUT never changes what it reads back (see above); the call takes
            // no other pointer and its failure changes nothing.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_PAGEOUT);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = bytes;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[global_allocator]
    static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

    #[test]
    fn paged_out_bytes_read_back_the_same_from_a_mapped_file_and_from_the_heap() {
        use tantivy::directory::{Directory, MmapDirectory};
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..5 * 4096 + 123).map(|i: u32| (i * 7 % 251) as u8).collect();
        std::fs::write(dir.path().join("f"), &data).unwrap();
        let mapped = MmapDirectory::open(dir.path()).unwrap();
        let bytes = mapped.open_read(std::path::Path::new("f")).unwrap().read_bytes().unwrap();
        assert_eq!(bytes.as_slice(), &data[..]);
        // Twice, and from an offset that is not a page's: what is read back never changes.
        for from in [0, 100] {
            page_out(&bytes.as_slice()[from..]);
            assert_eq!(bytes.as_slice(), &data[..]);
        }
        let heap = data.clone();
        page_out(&heap);
        page_out(&heap[..10]);
        assert_eq!(heap, data);
    }

    #[test]
    #[allow(unsafe_code)]
    fn purge_delay_is_the_option_we_mean() {
        // mimalloc 3 gives purge_delay a default of 1000 ms, and no other option that value.
        // SAFETY: reads one integer from mimalloc's option table.
        let value = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(value, 1000, "option {MI_OPTION_PURGE_DELAY} is not mimalloc's purge_delay");
    }
}
