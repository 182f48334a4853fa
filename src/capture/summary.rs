//! Every session ends with a summary. A session closed without one (SessionEnd, an import, a
//! client that sent none) or marked abandoned by the idle sweep is summed up from what it
//! holds: the last compaction summary when Claude Code compacted it (the most faithful recap
//! there is), else its last assistant turn and the state of its todo list. [`derive()`] is pure;
//! the writer and the sweep feed it what `graph::sessions::summary_material` reads. What it
//! returns is redacted, at most [`SUMMARY_TOKENS`] tokens and within the close limits.

use crate::claude::redact;
use crate::config::Encoding;
use crate::domain::{limits::MAX_RATIONALE_CHARS, operation::Todo, tokens};
pub use crate::graph::sessions::Material;
use crate::recall::reconstruction::fold_todos;

/// The largest derived summary, in tokens of the configured encoding.
pub const SUMMARY_TOKENS: usize = 400;
/// Each todo named in a derived summary keeps at most this many characters.
const TODO_CHARS: usize = 120;

/// The summary a session without one gets, or `None` when it has one or nothing to go on.
pub fn derive(m: &Material, encoding: Encoding) -> Option<String> {
    if m.summary.as_deref().is_some_and(|s| !s.trim().is_empty()) {
        return None;
    }
    let text = match m.compaction.as_deref().map(recap).filter(|c| !c.is_empty()) {
        Some(recap) => tokens::cut(encoding, &recap, SUMMARY_TOKENS),
        None => {
            let todos = todo_state(&fold_todos(&m.todos));
            let room = SUMMARY_TOKENS
                - todos
                    .as_deref()
                    .map_or(0, |t| tokens::count(encoding, t) + 2)
                    .min(SUMMARY_TOKENS / 2);
            let last = m
                .last_assistant
                .as_deref()
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map(|a| tokens::cut(encoding, &redact::text(a), room));
            match (last, todos) {
                (None, None) => return None,
                (Some(a), None) => a,
                (None, Some(t)) => t,
                (Some(a), Some(t)) => format!("{a}\n\n{t}"),
            }
        }
    };
    let text = redact::bounded(text.trim(), MAX_RATIONALE_CHARS);
    Some(tokens::cut(encoding, &text, SUMMARY_TOKENS)).filter(|t| !t.is_empty())
}

/// The recap of a compaction summary: without Claude Code's framing ("This session is being
/// continued…", "Please continue…") and, when it has one, from its `Summary:` part on.
fn recap(summary: &str) -> String {
    let lines: Vec<&str> = summary
        .lines()
        .filter(|l| {
            let l = l.trim_start();
            !(l.starts_with("This session is being continued from a previous conversation")
                || l.starts_with("If you need specific details from before compaction")
                || l.starts_with("Please continue the conversation from where we left"))
        })
        .collect();
    let from = lines
        .iter()
        .position(|l| matches!(l.trim(), "Summary:" | "<summary>" | "## Summary"))
        .map_or(0, |i| i + 1);
    lines[from..]
        .join("\n")
        .replace("</summary>", "")
        .trim()
        .to_string()
}

/// "Todos: 2 of 5 completed; in progress: …; pending: …".
fn todo_state(todos: &[Todo]) -> Option<String> {
    if todos.is_empty() {
        return None;
    }
    let named = |status: &str| -> Vec<String> {
        todos
            .iter()
            .filter(|t| t.status == status)
            .map(|t| redact::clip(t.content.trim(), TODO_CHARS))
            .collect()
    };
    let done = todos.iter().filter(|t| t.status == "completed").count();
    let mut out = format!("Todos: {done} of {} completed", todos.len());
    for (label, status) in [("in progress", "in_progress"), ("pending", "pending")] {
        let items = named(status);
        if !items.is_empty() {
            out.push_str(&format!("; {label}: {}", items.join("; ")));
        }
    }
    Some(redact::text(&out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::operations::TodoOp;

    const ENC: Encoding = Encoding::O200kBase;

    #[test]
    fn a_stored_summary_is_kept() {
        let m = Material {
            summary: Some("done".into()),
            last_assistant: Some("all green".into()),
            ..Default::default()
        };
        assert_eq!(derive(&m, ENC), None);
        assert_eq!(derive(&Material::default(), ENC), None);
    }

    #[test]
    fn the_compaction_recap_comes_first() {
        let m = Material {
            compaction: Some(
                "This session is being continued from a previous conversation that ran out of context.\n\nAnalysis:\nlong thinking\n\nSummary:\n1. Primary Request: add coupons\n2. Pending: tests\n\nPlease continue the conversation from where we left off."
                    .into(),
            ),
            last_assistant: Some("ignored".into()),
            ..Default::default()
        };
        assert_eq!(
            derive(&m, ENC).as_deref(),
            Some("1. Primary Request: add coupons\n2. Pending: tests")
        );
    }

    #[test]
    fn else_the_last_turn_and_the_todo_state_bounded_and_redacted() {
        let todos = serde_json::json!([
            {"content": "write the parser", "status": "completed"},
            {"content": "add tests", "status": "in_progress"},
            {"content": "update the README", "status": "pending"}
        ]);
        let long = "word ".repeat(5_000);
        let list = |tool: &str, todos: serde_json::Value| TodoOp {
            tool: Some(tool.into()),
            todos: Some(todos.to_string()),
        };
        // A whole list, then a task update folded into it.
        let ops = vec![
            list("TodoWrite", todos.clone()),
            list(
                "TaskCreate",
                serde_json::json!([{"id": "9", "content": "ship it", "status": "pending"}]),
            ),
        ];
        let m = Material {
            last_assistant: Some(format!("Parser done. GITHUB_TOKEN=ghp_secretsecret {long}")),
            todos: ops,
            ..Default::default()
        };
        let s = derive(&m, ENC).unwrap();
        assert!(s.starts_with("Parser done."), "{s}");
        assert!(!s.contains("ghp_secretsecret"), "{s}");
        assert!(s.ends_with(
            "Todos: 1 of 4 completed; in progress: add tests; pending: update the README; ship it"
        ));
        assert!(tokens::count(ENC, &s) <= SUMMARY_TOKENS);
        let only_todos = Material {
            todos: vec![list("TodoWrite", todos)],
            ..Default::default()
        };
        assert!(derive(&only_todos, ENC)
            .unwrap()
            .starts_with("Todos: 1 of 3"));
    }
}
