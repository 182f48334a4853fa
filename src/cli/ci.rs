//! `cairn ci`: what is known about the files a change touches, for a PR comment.
//!
//! Changed files come from `git diff --name-only <base>...HEAD` (or `--stdin`, one per line).
//! With `--fail-on-contradiction` the command exits 3 when a changed file carries a standing
//! decision one of whose *rejected* alternatives is named in the branch's commit messages
//! (`git log <base>..HEAD`): the alternative, lower-cased, appears in the messages as a whole
//! word or phrase (alternatives shorter than 3 characters are ignored). It is a heuristic: it
//! flags "we are doing the thing we decided against" for a human to look at.

use std::io::Read;
use std::process::Command;

use anyhow::{bail, Context};
use clap::Args;

use super::client::{ApiClient, ClientSettings};
use crate::knowledge::KnowledgeReport;
use crate::request::TokenBudget;

#[derive(Args, Debug)]
pub struct CiArgs {
    /// The ref the change is compared with.
    #[arg(long, default_value = "origin/main")]
    pub base: String,
    /// Read changed files from stdin (one per line) instead of git.
    #[arg(long)]
    pub stdin: bool,
    /// `markdown` or `json`.
    #[arg(long, default_value = "markdown", value_parser = ["markdown", "json"])]
    pub format: String,
    /// Token budget of the Markdown report, 16 to 1,000,000.
    #[arg(long, default_value = "2000", value_parser = TokenBudget::from_flag)]
    pub budget_tokens: TokenBudget,
    /// Exit 3 when the branch's commit messages name an alternative a standing decision on a
    /// changed file rejected.
    #[arg(long)]
    pub fail_on_contradiction: bool,
    #[command(flatten)]
    pub client: ClientSettings,
}

fn git(args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("git")
        .args(args)
        .output()
        .context("could not run git")?;
    if !out.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub async fn run(args: CiArgs) -> anyhow::Result<i32> {
    let files: Vec<String> = if args.stdin {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("could not read stdin")?;
        s.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    } else {
        git(&["diff", "--name-only", &format!("{}...HEAD", args.base)])
            .with_context(|| format!("is `{}` a ref here? pass --base or --stdin", args.base))?
            .lines()
            .map(str::to_string)
            .collect()
    };
    if files.is_empty() {
        eprintln!("no changed files");
        return Ok(0);
    }
    let files: Vec<String> = files.into_iter().take(200).collect();
    let project = args.client.require_project()?;
    let client = ApiClient::new(&args.client)?;
    let report: KnowledgeReport = client
        .get_json(
            "/v1/knowledge",
            &[
                ("project", project),
                ("files", files.join(",")),
                ("budget_tokens", args.budget_tokens.get().to_string()),
            ],
        )
        .await?;
    let contradictions = if args.fail_on_contradiction {
        let messages = if args.stdin {
            String::new()
        } else {
            git(&["log", "--format=%B", &format!("{}..HEAD", args.base)])?
        };
        contradictions(&report, &messages)
    } else {
        Vec::new()
    };
    if args.format == "json" {
        let mut value = serde_json::to_value(&report)?;
        value["contradictions"] = serde_json::to_value(&contradictions)?;
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        println!("{}", report.markdown);
        if !contradictions.is_empty() {
            println!("\n### Possible contradictions");
            for c in &contradictions {
                println!("- {c}");
            }
        }
    }
    Ok(if contradictions.is_empty() { 0 } else { 3 })
}

/// Standing decisions on changed files whose rejected alternatives the messages name.
pub fn contradictions(report: &KnowledgeReport, messages: &str) -> Vec<String> {
    let text = format!(" {} ", normalise(messages));
    let mut out = Vec::new();
    for f in &report.files {
        for d in f.decisions.iter().filter(|d| !d.superseded) {
            for alt in &d.rejected {
                let needle = normalise(alt);
                if needle.chars().count() >= 3 && text.contains(&format!(" {needle} ")) {
                    out.push(format!(
                        "`{}`: the commits mention \"{alt}\", which decision \"{}\" (→ {}) rejected",
                        f.path, d.subject, d.choice
                    ));
                }
            }
        }
    }
    out
}

/// Lower-case words separated by single spaces (punctuation becomes a space).
fn normalise(s: &str) -> String {
    s.to_lowercase()
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '.' || c == '-' || c == '_' {
                c
            } else {
                ' '
            }
        })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knowledge::{FileKnowledge, KnownDecision};

    fn report(superseded: bool) -> KnowledgeReport {
        KnowledgeReport {
            project: "p".into(),
            files: vec![FileKnowledge {
                path: "db.rs".into(),
                decisions: vec![KnownDecision {
                    id: "d".into(),
                    subject: "database".into(),
                    choice: "Postgres".into(),
                    rationale: "r".into(),
                    rejected: vec!["MongoDB".into(), "db".into()],
                    confidence: 0.9,
                    at: String::new(),
                    superseded,
                    superseded_by: None,
                    session_id: None,
                }],
                beliefs: vec![],
                sessions: vec![],
                open_todos: vec![],
            }],
            markdown: String::new(),
            markdown_tokens: 0,
            budget_tokens: 100,
            truncated: false,
        }
    }

    #[test]
    fn flags_rejected_alternatives_named_in_commits() {
        assert_eq!(
            contradictions(&report(false), "Switch storage to mongodb, finally!").len(),
            1
        );
        assert!(
            contradictions(&report(false), "use mongodbx driver").is_empty(),
            "whole words only"
        );
        assert!(
            contradictions(&report(false), "refactor db layer").is_empty(),
            "short alternatives ignored"
        );
        assert!(
            contradictions(&report(true), "Switch to MongoDB").is_empty(),
            "superseded decisions do not count"
        );
    }
}
