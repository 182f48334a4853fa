//! `cairn bench …`: measurements against the real Neo4j, each with its same-run baseline.

use clap::{Args, Subcommand};

use crate::bench;

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub which: BenchCommand,
}

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Capture throughput and ack latency vs. a plain UNWIND baseline.
    Ingest(Box<bench::ingest::IngestArgs>),
    /// Seed a graph and measure reconstruction, context and window latency over HTTP.
    Recall(Box<bench::recall::RecallBench>),
}

pub async fn run(args: BenchArgs) -> anyhow::Result<i32> {
    match args.which {
        BenchCommand::Ingest(a) => {
            let report = bench::ingest::run(*a).await?;
            bench::ingest::print(&report);
        }
        BenchCommand::Recall(b) => bench::recall::run(*b).await?,
    }
    Ok(0)
}
