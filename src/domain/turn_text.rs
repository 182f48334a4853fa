//! The bounded text a turn is found by (`search_text`): what a conversation turn, a tool call,
//! a decision, a memory or a session summary says, in a few thousand characters at most. The
//! capture writer stores it with the node; the turn index (BM25) and the embeddings read it.
//! A tool call is found by what it answered too (its `context.response`, [`outcome`]): the
//! failing test a run printed, the report a subagent returned. Pure: no I/O.

/// Characters of a search text at most. A long reply often says what matters last (the
/// notes after a worked example, the conclusion after the analysis), so the bound holds a
/// few pages; its passages (`domain::passages`) let the model read all of it.
pub const MAX_CHARS: usize = 8_000;

/// The form of the texts [`operation`] makes, recorded once every stored text was made again
/// in it (`recall::turn_index::Retexting`): 1, a tool call's outcome is part of its text.
pub const FORM: i64 = 1;

/// Joins the non-empty parts with " — " and bounds the result; `None` when nothing is left.
fn bounded<'a>(parts: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut out = String::new();
    let mut chars = 0usize;
    for part in parts.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
        if chars >= MAX_CHARS {
            break;
        }
        if !out.is_empty() {
            out.push_str(" — ");
            chars += 3;
        }
        for c in part.chars() {
            if chars >= MAX_CHARS {
                break;
            }
            out.push(c);
            chars += 1;
        }
    }
    (!out.trim().is_empty()).then_some(out)
}

/// The fields of an operation a search text is made of.
#[derive(Clone, Copy, Debug, Default)]
pub struct OperationText<'a> {
    pub kind: &'a str,
    pub role: Option<&'a str>,
    pub summary: &'a str,
    pub content: Option<&'a str>,
    pub target: Option<&'a str>,
    pub tool: Option<&'a str>,
    pub rationale: Option<&'a str>,
    /// The free-form context as stored (JSON text): a tool call's holds what it answered
    /// ([`stored_outcome`]), read only for a tool call.
    pub context: Option<&'a str>,
}

/// What an operation's free-form context says it answered: its `response`, a string.
pub fn outcome(context: Option<&serde_json::Value>) -> Option<&str> {
    context?
        .get("response")?
        .as_str()
        .filter(|r| !r.trim().is_empty())
}

/// [`outcome`] of a context stored as JSON text; `None` when it is no JSON object.
pub fn stored_outcome(context: Option<&str>) -> Option<String> {
    let context = context.filter(|c| c.contains("\"response\""))?;
    let value: serde_json::Value = serde_json::from_str(context).ok()?;
    outcome(Some(&value)).map(str::to_string)
}

/// An operation's search text, or `None` when it has nothing worth finding: a plain read
/// (the file's path is in the graph already) says nothing of its own.
pub fn operation(op: &OperationText<'_>) -> Option<String> {
    let rationale = op.rationale.unwrap_or_default();
    match op.kind {
        "read" if rationale.trim().is_empty() => None,
        // A turn is its words; the summary stands in when the content was not sent.
        "message" => bounded([op.content.unwrap_or(op.summary), rationale]),
        "tool_call" => bounded([
            op.tool.unwrap_or_default(),
            op.target.unwrap_or_default(),
            op.summary,
            stored_outcome(op.context).as_deref().unwrap_or_default(),
            rationale,
        ]),
        _ => bounded([op.summary, op.content.unwrap_or_default(), rationale]),
    }
}

/// A decision's search text: subject, choice, rationale and what was rejected.
pub fn decision(subject: &str, choice: &str, rationale: &str, rejected: &[String]) -> String {
    let rejected = if rejected.is_empty() {
        String::new()
    } else {
        format!("rejected: {}", rejected.join(", "))
    };
    let head = format!("decided {subject}: {choice}");
    bounded([head.as_str(), rationale, rejected.as_str()]).unwrap_or(head)
}

/// A memory's search text.
pub fn memory(kind: &str, content: &str) -> Option<String> {
    let head = format!("{kind}:");
    bounded([content]).map(|c| format!("{head} {c}"))
}

/// A closed session's search text: its summary and next steps.
pub fn session_summary(summary: Option<&str>, next_steps: &[String]) -> Option<String> {
    let next = if next_steps.is_empty() {
        String::new()
    } else {
        format!("next: {}", next_steps.join("; "))
    };
    bounded([summary.unwrap_or_default(), next.as_str()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_are_bounded_and_reads_skipped() {
        let long = "word ".repeat(2_000);
        let turn = operation(&OperationText {
            kind: "message",
            role: Some("assistant"),
            summary: "s",
            content: Some(&long),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(turn.chars().count(), MAX_CHARS);
        let read = OperationText {
            kind: "read",
            summary: "read src/a.rs",
            ..Default::default()
        };
        assert_eq!(operation(&read), None);
        let tool = operation(&OperationText {
            kind: "tool_call",
            tool: Some("Bash"),
            target: Some("cargo test"),
            summary: "2 failed",
            ..Default::default()
        });
        assert_eq!(tool.as_deref(), Some("Bash — cargo test — 2 failed"));
    }

    #[test]
    fn a_tool_call_is_found_by_what_it_answered() {
        let context = serde_json::json!({"cwd": "/r", "response": "test parse_config ... FAILED"});
        let answered = outcome(Some(&context));
        assert_eq!(answered, Some("test parse_config ... FAILED"));
        let stored = context.to_string();
        let text = operation(&OperationText {
            kind: "tool_call",
            tool: Some("Bash"),
            target: Some("cargo test"),
            summary: "Run the tests",
            context: Some(&stored),
            ..Default::default()
        });
        assert_eq!(
            text.as_deref(),
            Some("Bash — cargo test — Run the tests — test parse_config ... FAILED")
        );
        assert_eq!(
            stored_outcome(Some(&stored)).as_deref(),
            Some("test parse_config ... FAILED")
        );
        // Only a string answers; a blank one, another shape or no JSON at all says nothing.
        for context in [
            r#"{"response": "  "}"#,
            r#"{"response": {"a": 1}}"#,
            "response",
            "{",
        ] {
            assert_eq!(stored_outcome(Some(context)), None, "{context}");
        }
        assert_eq!(outcome(Some(&serde_json::json!(["response"]))), None);
        // A write is found by what it wrote (its content), not by its outcome.
        let write = operation(&OperationText {
            kind: "write",
            summary: "edited src/db.ts",
            content: Some("ALTER TABLE evaluations ADD COLUMN is_imported"),
            context: Some(r#"{"response": "update"}"#),
            ..Default::default()
        });
        assert_eq!(
            write.as_deref(),
            Some("edited src/db.ts — ALTER TABLE evaluations ADD COLUMN is_imported")
        );
    }

    #[test]
    fn decisions_name_what_was_rejected() {
        let t = decision(
            "token expiry",
            "sliding 30 min",
            "fewer re-logins",
            &["fixed 24h".into(), "none".into()],
        );
        assert_eq!(
            t,
            "decided token expiry: sliding 30 min — fewer re-logins — rejected: fixed 24h, none"
        );
        assert_eq!(session_summary(None, &[]), None);
        assert_eq!(memory("lesson", "  "), None);
        assert_eq!(
            memory("fact", "CI runs on 2 cores").as_deref(),
            Some("fact: CI runs on 2 cores")
        );
    }
}
