// The server future nests deeply (request spans around every middleware layer).
#![recursion_limit = "256"]

use clap::Parser;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    cairn::allocator::run_main("cairn", run());
}

async fn run() {
    let cli = cairn::cli::Cli::parse();
    cairn::telemetry::init_logging("info,neo4rs=warn");
    cairn::cli::exit_with(cairn::cli::run(cli).await);
}
