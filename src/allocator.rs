//! What a binary whose global allocator is mimalloc (`cairn`, `cairn-bench`) asks of the
//! library: the embedding thread, once idle, hands its freed memory back to the system.

/// Installs the embedding thread's idle hook: mimalloc purges freed memory lazily, on the
/// owning thread's next allocation, which an idle thread never makes; the hook collects that
/// thread's heap. Only for binaries that declare `mimalloc::MiMalloc` as global allocator.
pub fn collect_idle_embedding_heap() {
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
