//! `cairn-bench …`: measurements against the real Neo4j, each with its same-run baseline
//! (`cairn bench …` before the benchmarks left the product binary; same subcommands, same
//! flags).

use cairn_bench as bench;
use clap::{Parser, Subcommand};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "cairn-bench",
    version,
    about = "cairn's benchmarks against the real Neo4j, each next to a same-run baseline."
)]
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
    /// Evidence recall of task context at 500/1000/2000 tokens, session recall@5, MRR and
    /// latency on long multi-session conversations (LoCoMo), for fulltext, vectors and hybrid.
    RecallQuality(Box<bench::quality::QualityBench>),
    /// Labelled synthetic histories: recall@5 and MRR of fulltext-only and hybrid search
    /// (with a local embedding stub over HTTP), and search latency.
    Search(Box<bench::search::SearchBench>),
    /// The embedded embedding model: texts/s and batch latency for short and long texts,
    /// length-sorted vs arrival-order batches, peak RSS, `cairn serve` idle RSS.
    Embed(Box<bench::embed::EmbedBench>),
    /// Many concurrent clients mixing capture, context and search against a `cairn serve`
    /// child process; per-route latency, errors and peak RSS, next to a /healthz baseline.
    Load(Box<bench::load::LoadArgs>),
    /// Grow a project in steps (10k → 100k → 1M operations) through a `cairn serve` child:
    /// ingest throughput vs. a plain UNWIND baseline, recall latency and memory at each step.
    Growth(Box<bench::growth::GrowthArgs>),
    /// Capture load against a `cairn serve` child through faults (Neo4j outage, SIGKILL, full
    /// spool, LLM failures, slow Neo4j); each ends with an exactly-once check in Neo4j.
    /// Exits 1 when something did not hold.
    Faults(Box<bench::faults::FaultsArgs>),
    /// The Claude Code command hook as Claude Code runs it (one process per event) against a
    /// `cairn serve` child with 1,000 sessions: p50/p99 per event type with cairn up and down,
    /// and the share of SessionStarts answered with context under the default deadline while
    /// every core is busy.
    Hooks(Box<bench::hooks::HooksArgs>),
}

#[tokio::main]
async fn main() {
    cairn::allocator::collect_idle_embedding_heap();
    let args = BenchArgs::parse();
    cairn::telemetry::init_logging("info,neo4rs=warn");
    match run(args).await {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::exit(1);
        }
    }
}

async fn run(args: BenchArgs) -> anyhow::Result<i32> {
    match args.which {
        BenchCommand::Ingest(a) => {
            let report = bench::ingest::run(*a).await?;
            bench::ingest::print(&report);
        }
        BenchCommand::Recall(b) => bench::recall::run(*b).await?,
        BenchCommand::Search(b) => bench::search::run(*b).await?,
        BenchCommand::RecallQuality(b) => bench::quality::run(*b).await?,
        BenchCommand::Load(b) => bench::load::run(*b).await?,
        BenchCommand::Embed(b) => bench::embed::run(*b).await?,
        BenchCommand::Growth(b) => bench::growth::run(*b).await?,
        BenchCommand::Hooks(b) => {
            let report = bench::hooks::run(*b).await?;
            bench::hooks::print(&report);
            if report.loaded_answered < report.loaded_runs {
                return Ok(1);
            }
        }
        BenchCommand::Faults(b) => {
            let reports = bench::faults::run(*b).await?;
            if reports.iter().any(|r| !r.passed()) {
                return Ok(1);
            }
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        super::BenchArgs::command().debug_assert();
    }
}
