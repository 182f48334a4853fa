//! The `cairn` command line: one subcommand per file, each with `run`.

pub mod bench;
pub mod bench_search;
pub mod ci;
pub mod client;
pub mod context;
pub mod keys;
pub mod migrate;
pub mod serve;

use clap::{Parser, Subcommand};

use crate::config::{Neo4jSettings, Settings};

#[derive(Parser, Debug)]
#[command(
    name = "cairn",
    version,
    about = "A durable, queryable memory for AI coding agents, kept in Neo4j."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve the HTTP API (and MCP at /mcp); applies the schema on start.
    Serve(Box<Settings>),
    /// Apply cypher/schema*.cypher (constraints, indexes); idempotent.
    Migrate(Neo4jSettings),
    /// Run the pattern-extraction job over finished sessions.
    Extract(Pending),
    /// Claude Code command hook: event JSON on stdin, never blocks the agent.
    Hook(Pending),
    /// Backfill sessions from Claude Code transcript files.
    Import(Pending),
    /// Print token-budgeted context for a session or a task.
    Context(context::ContextArgs),
    /// What is known about the files changed since a git ref, as Markdown.
    Ci(ci::CiArgs),
    /// Create, list or revoke API keys (talks to Neo4j directly).
    Keys(keys::KeysArgs),
    /// Write cairn's hook and MCP entries into .claude/settings.json.
    Setup(Pending),
    /// Benchmarks against a real Neo4j (`bench recall`: the read path's latency).
    Bench(bench::BenchArgs),
}

/// Arguments of a command that is not built yet (accepted so `--help` stays honest).
#[derive(clap::Args, Debug)]
pub struct Pending {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub args: Vec<String>,
}

/// Runs the parsed command; returns the process exit code.
pub async fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Serve(settings) => serve::run(*settings).await.map(|_| 0),
        Command::Migrate(neo4j) => migrate::run(neo4j).await.map(|_| 0),
        Command::Extract(_) => not_yet("extract"),
        Command::Hook(_) => not_yet("hook"),
        Command::Import(_) => not_yet("import"),
        Command::Context(args) => context::run(args).await,
        Command::Ci(args) => ci::run(args).await,
        Command::Keys(args) => keys::run(args).await,
        Command::Setup(_) => not_yet("setup"),
        Command::Bench(args) => bench::run(args).await,
    }
}

fn not_yet(name: &str) -> anyhow::Result<i32> {
    eprintln!("cairn {name}: not available yet");
    Ok(2)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
