// The benchmarks run the server in this process: its future nests deeply (request spans
// around every middleware layer).
#![recursion_limit = "256"]

use clap::Parser;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    cairn::allocator::run_main("cairn-bench", run());
}

async fn run() {
    let args = cairn_bench::cli::BenchArgs::parse();
    cairn::telemetry::init_logging("info,neo4rs=warn");
    cairn::cli::exit_with(cairn_bench::cli::run(args).await);
}
