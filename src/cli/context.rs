//! `cairn context`: prints token-budgeted context for a session or a task, fetched from
//! `POST /v1/context`. The text goes to stdout (ready to paste into a prompt); warnings about
//! what was left out go to stderr; `--json` prints the whole answer instead.

use anyhow::Context as _;
use clap::{ArgGroup, Args};
use serde_json::json;

use super::client::{ApiClient, ClientSettings};
use crate::request::TokenBudget;

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("about").required(true).multiple(true).args(["session", "task"])))]
pub struct ContextArgs {
    #[command(flatten)]
    pub client: ClientSettings,
    /// Context for this session (its history and the sessions it continues).
    #[arg(long)]
    pub session: Option<String>,
    /// Context for this task (related sessions of the project).
    #[arg(long)]
    pub task: Option<String>,
    /// Token budget, 16 to 1,000,000.
    #[arg(long, value_parser = TokenBudget::from_flag)]
    pub budget: TokenBudget,
    /// `o200k_base` or `cl100k_base` (default: the server's).
    #[arg(long)]
    pub encoding: Option<String>,
    /// Print the whole JSON answer (sections, warnings, token counts).
    #[arg(long)]
    pub json: bool,
}

pub async fn run(args: ContextArgs) -> anyhow::Result<i32> {
    let project = args.client.require_project()?;
    let client = ApiClient::new(&args.client)?;
    let body = json!({
        "project": project,
        "session_id": args.session,
        "task": args.task,
        "budget_tokens": args.budget.get(),
        "encoding": args.encoding,
    });
    let answer: serde_json::Value = client.post_json("/v1/context", &body).await?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&answer).context("could not print the answer")?
        );
        return Ok(0);
    }
    println!("{}", answer["text"].as_str().unwrap_or_default());
    for w in answer["warnings"].as_array().into_iter().flatten() {
        eprintln!("note: {}", w.as_str().unwrap_or_default());
    }
    eprintln!(
        "{} of {} tokens ({})",
        answer["tokens_used"],
        answer["budget_tokens"],
        answer["encoding"].as_str().unwrap_or_default()
    );
    Ok(0)
}
