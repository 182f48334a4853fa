// The server future nests deeply (request spans around every middleware layer).
#![recursion_limit = "256"]

use clap::Parser;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The embedding thread, once idle, hands its freed batch buffers back to the system: mimalloc
/// purges freed memory lazily, on the owning thread's next allocation, which an idle thread
/// never makes.
fn collect_thread_heap() {
    extern "C" {
        fn mi_collect(force: bool);
    }
    // SAFETY: mi_collect only walks the calling thread's own mimalloc heap (the global
    // allocator above), which is what it is for; it takes and returns nothing else.
    unsafe { mi_collect(true) }
}

#[tokio::main]
async fn main() {
    cairn::embed::local::set_idle_hook(collect_thread_heap);
    let cli = cairn::cli::Cli::parse();
    cairn::telemetry::init_logging("info,neo4rs=warn");
    match cairn::cli::run(cli).await {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::exit(1);
        }
    }
}
