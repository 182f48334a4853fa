//! The `cairn` command line: one subcommand per file, each with `run`.

pub mod bench;
pub mod ci;
pub mod client;
pub mod context;
pub mod extract;
pub mod hook;
pub mod import;
pub mod keys;
pub mod migrate;
pub mod search;
pub mod serve;
pub mod setup;

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
    Extract(Box<extract::ExtractArgs>),
    /// Claude Code command hook: event JSON on stdin, never blocks the agent.
    Hook(hook::HookArgs),
    /// Backfill sessions from Claude Code transcript files.
    Import(import::ImportArgs),
    /// Print token-budgeted context for a session or a task.
    Context(context::ContextArgs),
    /// What is known about the files changed since a git ref, as Markdown.
    Ci(ci::CiArgs),
    /// Turn-level search: the operations, decisions, memories and summaries that match.
    Search(search::SearchArgs),
    /// Create, list or revoke API keys (talks to Neo4j directly).
    Keys(keys::KeysArgs),
    /// Write cairn's hook and MCP entries into the project's Claude Code settings.
    Setup(setup::SetupArgs),
    /// The benchmarks: runs `cairn-bench` with these arguments (`cairn bench --help`).
    Bench(bench::BenchArgs),
}

/// Runs the parsed command; returns the process exit code.
/// Ends a binary's process with a command's outcome: its exit code, or 1 after printing the
/// error with its causes.
pub fn exit_with(outcome: anyhow::Result<i32>) -> ! {
    match outcome {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::exit(1);
        }
    }
}

pub async fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Serve(settings) => serve::run(*settings).await.map(|_| 0),
        Command::Migrate(neo4j) => migrate::run(neo4j).await.map(|_| 0),
        Command::Extract(args) => extract::run(*args).await,
        Command::Hook(args) => hook::run(args).await,
        Command::Import(args) => import::run(args).await,
        Command::Context(args) => context::run(args).await,
        Command::Ci(args) => ci::run(args).await,
        Command::Search(args) => search::run(args, &mut std::io::stdout().lock()).await,
        Command::Keys(args) => keys::run(args).await,
        Command::Bench(args) => bench::run(args),
        Command::Setup(args) => {
            let mut out = Vec::new();
            let code = setup::run(args, &mut out).await;
            std::io::Write::write_all(&mut std::io::stdout().lock(), &out)?;
            code
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
