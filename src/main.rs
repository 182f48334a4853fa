// The server future nests deeply (request spans around every middleware layer).
#![recursion_limit = "256"]

use clap::Parser;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() {
    cairn::allocator::collect_idle_embedding_heap();
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
