//! `cairn search`: turn-level search from the command line, through `POST /v1/search`. Prints
//! one block per turn found (kind, session, place, date, score, why it matched, snippet);
//! `--json` prints the whole answer instead.

use std::io::Write;

use anyhow::Context as _;
use clap::Args;
use serde_json::{json, Value};

use super::client::{ApiClient, ClientSettings};
use crate::domain::shown;
use crate::request::Limit;

#[derive(Args, Debug)]
pub struct SearchArgs {
    #[command(flatten)]
    pub client: ClientSettings,
    /// Turns to show: 1 to 50.
    #[arg(long, default_value = "10", value_parser = |s: &str| Limit::TURNS.from_flag(s))]
    pub limit: usize,
    /// Keep only these kinds (repeatable): message, decision, tool_call, write, read, search,
    /// todo, memory, summary.
    #[arg(long = "type")]
    pub types: Vec<String>,
    /// Print the whole JSON answer.
    #[arg(long)]
    pub json: bool,
    /// What to look for, in plain words.
    #[arg(required = true, num_args = 1..)]
    pub query: Vec<String>,
}

pub async fn run(args: SearchArgs, out: &mut impl Write) -> anyhow::Result<i32> {
    let project = args.client.require_project()?;
    let client = ApiClient::new(&args.client)?;
    let body = json!({
        "project": project,
        "query": args.query.join(" "),
        "limit": args.limit,
        "types": (!args.types.is_empty()).then_some(&args.types),
    });
    let answer: Value = client.post_json("/v1/search", &body).await?;
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&answer).context("could not print the answer")?
        )?;
    } else {
        render(&answer, out)?;
    }
    Ok(0)
}

/// Stored text as one terminal-safe line: control characters (escape sequences) and
/// direction overrides as spaces (`domain::shown`).
fn plain(v: &Value) -> String {
    shown::one_line(v.as_str().unwrap_or_default())
}

/// The readable form of an answer.
pub fn render(answer: &Value, out: &mut impl Write) -> std::io::Result<()> {
    let hits = answer["operations"].as_array().map_or(&[][..], |a| a);
    if hits.is_empty() {
        writeln!(out, "nothing found")?;
    }
    for (i, h) in hits.iter().enumerate() {
        let date = h["at"]
            .as_i64()
            .and_then(chrono::DateTime::from_timestamp_millis)
            .map(|d| d.format("%Y-%m-%d %H:%M").to_string())
            .unwrap_or_default();
        let role = h["role"]
            .as_str()
            .map(|r| format!(" ({})", plain(&Value::from(r))))
            .unwrap_or_default();
        writeln!(
            out,
            "{}. {}{role} — session {} #{} — {date} — score {:.2} ({})",
            i + 1,
            plain(&h["type"]),
            plain(&h["session_id"]),
            h["seq"],
            h["score"].as_f64().unwrap_or_default(),
            plain(&h["matched_by"]),
        )?;
        writeln!(out, "   {}", plain(&h["snippet"]))?;
    }
    let mut footer = format!("mode: {}", plain(&answer["mode"]));
    if let Some(n) = answer["pending_embeddings"].as_i64().filter(|n| *n > 0) {
        footer.push_str(&format!(
            "; {n} operations not embedded yet (found by their words)"
        ));
    }
    if let Some(why) = answer["degraded"].as_str() {
        footer.push_str(&format!("; {}", plain(&Value::from(why))));
    }
    writeln!(out, "{footer}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_hits_readably_and_escape_sequences_harmlessly() {
        let answer = json!({"mode": "hybrid", "pending_embeddings": 3, "operations": [
            {"type": "decision", "session_id": "s1", "seq": 4, "at": 0, "score": 0.8123,
             "matched_by": "both", "snippet": "decided x\u{1b}[2J: y"}]});
        let mut out = Vec::new();
        render(&answer, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("1. decision — session s1 #4 — 1970-01-01 00:00 — score 0.81 (both)\n   decided x [2J: y\n"),
            "{text}"
        );
        assert!(text.contains("mode: hybrid; 3 operations not embedded yet"));
        assert!(!text.contains('\u{1b}'));
        let mut out = Vec::new();
        render(&json!({"mode": "fulltext", "operations": []}), &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "nothing found\nmode: fulltext\n"
        );
    }
}
