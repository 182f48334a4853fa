//! What a binary whose global allocator is mimalloc (`cairn`, `cairn-bench`) asks of the
//! library: memory in small pages, not transparent huge ones, and the embedding thread, once
//! idle, handing its freed memory back to the system.

/// Keeps this process's memory out of transparent huge pages. mimalloc advises huge pages for
/// the regions it reserves (`madvise(MADV_HUGEPAGE)`), and Linux then makes each 2 MiB they
/// touch resident whole: an idle `cairn serve` with the embedded model held ~205 MB, of which
/// ~140 MB in huge pages, against ~175 MB without. Linux-only; a kernel that refuses changes
/// nothing but the memory held. Set first by [`run_main`]: the flag covers every later page
/// fault.
fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes plain integers and sets a flag of this process only.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Runs a binary's `main` (`name` says whose, in an error): memory kept out of huge pages
/// first, then the multi-threaded runtime, then `main` on it with the embedding thread's
/// idle hook installed.
pub fn run_main(name: &str, main: impl std::future::Future<Output = ()>) {
    no_transparent_huge_pages();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{name}: cannot start the async runtime (its threads, its I/O driver): {e}");
            std::process::exit(1);
        }
    };
    collect_idle_embedding_heap();
    runtime.block_on(main);
}

/// Installs the embedding thread's idle hook: mimalloc purges freed memory lazily, on the
/// owning thread's next allocation, which an idle thread never makes; the hook collects that
/// thread's heap. Only for binaries that declare `mimalloc::MiMalloc` as global allocator.
fn collect_idle_embedding_heap() {
    crate::embed::local::set_idle_hook(collect_thread_heap);
}

// Links mimalloc wherever the library is, so that `mi_collect` resolves in every binary.
extern crate mimalloc;

fn collect_thread_heap() {
    extern "C" {
        fn mi_collect(force: bool);
    }
    // SAFETY: mi_collect only walks the calling thread's own mimalloc heap (the binary's
    // global allocator), which is what it is for; it takes and returns nothing else.
    unsafe { mi_collect(true) }
}
