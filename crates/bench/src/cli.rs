//! The `cairn-bench` command line: a subcommand per benchmark (`cairn bench …` before the
//! benchmarks left the product binary; same subcommands, same flags).

use clap::{Parser, Subcommand};

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
    Ingest(Box<crate::ingest::IngestArgs>),
    /// Seed a graph and measure reconstruction, context and window latency over HTTP.
    Recall(Box<crate::recall::RecallBench>),
    /// Evidence recall of task context at 500/1000/2000 tokens, session recall@5, MRR and
    /// latency on long multi-session conversations (LoCoMo), for fulltext, vectors and hybrid.
    RecallQuality(Box<crate::quality::QualityBench>),
    /// Sign in to the web UI and request every kind of page of the seeded project: p50/p95/max
    /// and size per page, next to /healthz and /readyz.
    Ui(Box<crate::ui::UiBench>),
    /// Labelled synthetic histories: recall@5 and MRR of fulltext-only and hybrid search
    /// (with a local embedding stub over HTTP), and search latency.
    Search(Box<crate::search::SearchBench>),
    /// The embedded embedding model: texts/s and batch latency for short and long texts,
    /// length-sorted vs arrival-order batches, peak RSS, `cairn serve` idle RSS.
    Embed(Box<crate::embed::EmbedBench>),
    /// Many concurrent clients mixing capture, context and search against a `cairn serve`
    /// child process; per-route latency, errors and peak RSS, next to a /healthz baseline.
    Load(Box<crate::load::LoadArgs>),
    /// Grow a project in steps (10k → 100k → 1M operations) through a `cairn serve` child:
    /// ingest throughput vs. a plain UNWIND baseline, recall latency and memory at each step.
    Growth(Box<crate::growth::GrowthArgs>),
    /// Capture load against a `cairn serve` child through faults (Neo4j outage, SIGKILL, full
    /// spool, LLM failures, slow Neo4j); each ends with an exactly-once check in Neo4j.
    /// Exits 1 when something did not hold.
    Faults(Box<crate::faults::FaultsArgs>),
    /// The Claude Code command hook as Claude Code runs it (one process per event) against a
    /// `cairn serve` child with 1,000 sessions: p50/p99 per event type with cairn up and down,
    /// and the share of SessionStarts answered with context under the default deadline while
    /// every core is busy.
    Hooks(Box<crate::hooks::HooksArgs>),
    /// Capture through `cairn serve` replicas on one Neo4j: clients with a session each
    /// through 1 replica vs several (same run), and all clients in one session.
    Replicas(Box<crate::replicas::ReplicasArgs>),
}

/// Runs the parsed benchmark; returns the process exit code.
pub async fn run(args: BenchArgs) -> anyhow::Result<i32> {
    match args.which {
        BenchCommand::Ingest(a) => {
            let report = crate::ingest::run(*a).await?;
            crate::ingest::print(&report);
        }
        BenchCommand::Recall(b) => crate::recall::run(*b).await?,
        BenchCommand::Ui(b) => {
            if let Some(report) = crate::ui::run(*b).await? {
                crate::ui::print(&report);
            }
        }
        BenchCommand::Search(b) => crate::search::run(*b).await?,
        BenchCommand::RecallQuality(b) => crate::quality::run(*b).await?,
        BenchCommand::Load(b) => crate::load::run(*b).await?,
        BenchCommand::Embed(b) => crate::embed::run(*b).await?,
        BenchCommand::Growth(b) => crate::growth::run(*b).await?,
        BenchCommand::Replicas(b) => crate::replicas::print(&crate::replicas::run(*b).await?),
        BenchCommand::Hooks(b) => {
            let report = crate::hooks::run(*b).await?;
            crate::hooks::print(&report);
            if report.loaded_answered < report.loaded_runs {
                return Ok(1);
            }
        }
        BenchCommand::Faults(b) => {
            let reports = crate::faults::run(*b).await?;
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
