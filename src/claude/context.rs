//! The context a SessionStart hook hands back (`hookSpecificOutput.additionalContext`): what
//! the project's latest sessions left (summary, next steps, open todos) and the decisions
//! that stand, as Markdown within a token budget. Read-only.

use serde::Deserialize;

use crate::config::Encoding;
use crate::domain::{operation::Todo, tokens};
use crate::graph::{decisions, statement, Store, StoreResult};

/// Default token budget of the SessionStart context.
pub const DEFAULT_BUDGET_TOKENS: usize = 1_500;
/// Largest budget a caller may ask for.
pub const MAX_BUDGET_TOKENS: usize = 32_000;

#[derive(Deserialize)]
struct RecentSession {
    id: String,
    status: String,
    task: Option<String>,
    summary: Option<String>,
    next_steps: Vec<String>,
    todos: Option<String>,
    at: i64,
    operations: i64,
}

/// The handover Markdown for a session starting in `project`; empty when nothing is known.
pub async fn session_start(
    store: &Store,
    project: &str,
    session_id: &str,
    budget_tokens: usize,
    encoding: Encoding,
) -> StoreResult<String> {
    let recent: Vec<RecentSession> = store
        .fetch(
            statement(include_str!("../../cypher/claude_recent_sessions.cypher"))
                .param("project", project)
                .param("session_id", session_id)
                .param("limit", 3_i64),
        )
        .await?;
    let standing: Vec<_> = decisions::list(
        store,
        project,
        &decisions::DecisionFilter {
            limit: 20,
            ..Default::default()
        },
    )
    .await?
    .into_iter()
    .filter(|d| d.superseded_by.is_none())
    .take(8)
    .collect();
    if recent.is_empty() && standing.is_empty() {
        return Ok(String::new());
    }
    let mut md = format!("# cairn: where project `{project}` stands\n");
    for (i, s) in recent.iter().enumerate() {
        let when = chrono::DateTime::from_timestamp_millis(s.at)
            .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
            .unwrap_or_default();
        let title = if i == 0 {
            "Last session"
        } else {
            "Earlier session"
        };
        md.push_str(&format!(
            "\n## {title} `{}` ({}, {when}, {} operations)\n",
            s.id, s.status, s.operations
        ));
        if let Some(task) = &s.task {
            md.push_str(&format!("Task: {task}\n"));
        }
        if let Some(summary) = &s.summary {
            md.push_str(&format!("\n{summary}\n"));
        }
        if !s.next_steps.is_empty() {
            md.push_str("\nNext steps:\n");
            for n in &s.next_steps {
                md.push_str(&format!("- {n}\n"));
            }
        }
        let open: Vec<Todo> = s
            .todos
            .as_deref()
            .and_then(|t| serde_json::from_str::<Vec<Todo>>(t).ok())
            .unwrap_or_default()
            .into_iter()
            .filter(|t| t.status != "completed")
            .collect();
        if !open.is_empty() {
            md.push_str("\nOpen todos:\n");
            for t in open {
                md.push_str(&format!("- [{}] {}\n", t.status, t.content));
            }
        }
    }
    if !standing.is_empty() {
        md.push_str("\n## Decisions in force\n");
        for d in standing {
            md.push_str(&format!(
                "- **{}**: {} — {}\n",
                d.subject, d.choice, d.rationale
            ));
        }
    }
    Ok(tokens::truncate(encoding, &md, budget_tokens))
}
