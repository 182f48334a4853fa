//! Sessions, decisions and memories: wire shapes and validated records.

use poem_openapi::Object;
use serde::{Deserialize, Serialize};

use super::operation::NewOperation;

/// `POST /v1/sessions`.
#[derive(Clone, Debug, Serialize, Deserialize, Object)]
pub struct SessionStart {
    /// Project id: letters, digits, `.`, `_`, `-`; at most 128 characters.
    #[oai(validator(min_length = 1, max_length = 128, pattern = r"^\s*[A-Za-z0-9._-]+\s*$"))]
    pub project: String,
    /// The client's session id (idempotent); generated when absent.
    #[oai(validator(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
    ))]
    pub session_id: Option<String>,
    /// Which agent runs the session (`claude-code`, …).
    #[oai(validator(max_length = 100))]
    pub agent: Option<String>,
    /// What the session is for.
    #[oai(validator(max_length = 4096))]
    pub task: Option<String>,
    /// Id of an earlier session this one continues.
    #[oai(validator(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
    ))]
    pub continues: Option<String>,
    /// The working directory; file paths under it are stored project-relative.
    #[oai(validator(max_length = 1024))]
    pub cwd: Option<String>,
    /// A child session (a subagent's work): the id of the session that launched it, in the
    /// same project (`CHILD_OF`). The parent may arrive later; the link is made then.
    #[serde(default)]
    #[oai(validator(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
    ))]
    pub parent: Option<String>,
    /// A child session: the id of the operation (the Task/Agent tool call) that launched it
    /// (`SPAWNED_BY`); for Claude Code, `<parent session>/<tool_use_id>`. Linked when that
    /// operation is stored, before or after this start.
    #[serde(default)]
    #[oai(validator(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
    ))]
    pub spawned_by: Option<String>,
    /// A child session: the kind of subagent (`general-purpose`, `Explore`, …).
    #[serde(default)]
    #[oai(validator(max_length = 100))]
    pub agent_type: Option<String>,
    /// When the session began (RFC 3339); defaults to arrival time. An imported history
    /// states it, so the session is dated by its work rather than by its import. Without it,
    /// a new session's first operations dated earlier than its arrival date it instead.
    #[serde(default)]
    #[oai(validator(max_length = 64))]
    pub at: Option<String>,
}

/// A validated session start, as spooled.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NewSession {
    pub id: String,
    pub project: String,
    pub agent: Option<String>,
    pub task: Option<String>,
    pub continues: Option<String>,
    pub cwd: Option<String>,
    pub at: i64,
    /// Added after the first spool format: older records read as a top-level session.
    #[serde(default)]
    pub parent: Option<String>,
    #[serde(default)]
    pub spawned_by: Option<String>,
    #[serde(default)]
    pub agent_type: Option<String>,
}

/// `POST /v1/sessions/{id}/close`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, Object)]
pub struct SessionClose {
    /// What the session did. When absent (and none is stored), cairn derives one from what the
    /// session holds: its last compaction summary, else its last assistant turn and the state
    /// of its todo list (redacted, at most 400 tokens).
    pub summary: Option<String>,
    pub next_steps: Option<Vec<String>>,
    /// `closed` (default) or `abandoned`.
    #[oai(validator(pattern = r"^\s*(closed|abandoned)?\s*$"))]
    pub status: Option<String>,
    /// When the session ended (RFC 3339); defaults to arrival time. Closing a session that
    /// holds operations records `closed_at` and leaves its last activity at its last
    /// operation, so a history closed late is not taken for today's work.
    #[serde(default)]
    #[oai(validator(max_length = 64))]
    pub at: Option<String>,
}

/// A validated close, as spooled.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NewClose {
    pub id: String,
    pub project: String,
    pub summary: Option<String>,
    pub next_steps: Vec<String>,
    pub status: String,
    pub at: i64,
}

/// One belief a decision bears on.
#[derive(Clone, Debug, Serialize, Deserialize, Object)]
pub struct BeliefRef {
    pub id: String,
    /// `supports` (default) or `contradicts`.
    pub effect: Option<String>,
    /// 0..1, defaults to the decision's confidence.
    #[oai(validator(minimum(value = "0"), maximum(value = "1")))]
    pub weight: Option<f64>,
}

/// `POST /v1/decisions`. Limits: subject ≤ 512 chars, choice ≤ 4096, rationale ≤ 16384,
/// ≤ 50 alternatives, ≤ 50 beliefs, ≤ 200 files.
#[derive(Clone, Debug, Serialize, Deserialize, Object)]
pub struct DecisionInput {
    #[oai(validator(min_length = 1, max_length = 128, pattern = r"^\s*[A-Za-z0-9._-]+\s*$"))]
    pub project: String,
    /// The session the decision was made in; it is also recorded in that session's chain.
    #[oai(validator(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
    ))]
    pub session_id: Option<String>,
    /// What was decided about; a later decision on the same subject (case and spacing
    /// ignored) supersedes this one.
    #[oai(validator(min_length = 1, max_length = 512, pattern = r"\S"))]
    pub subject: String,
    #[oai(validator(min_length = 1, max_length = 4096, pattern = r"\S"))]
    pub choice: String,
    #[oai(validator(min_length = 1, max_length = 16384, pattern = r"\S"))]
    pub rationale: String,
    /// The alternatives considered and rejected.
    pub alternatives: Option<Vec<String>>,
    /// 0..1, default 0.7.
    #[oai(validator(minimum(value = "0"), maximum(value = "1")))]
    pub confidence: Option<f64>,
    /// Beliefs this decision bears on: belief ids, or `{"id", "effect": "supports" |
    /// "contradicts", "weight": 0..1}` objects.
    pub affects_beliefs: Option<Vec<serde_json::Value>>,
    pub files: Option<Vec<String>>,
}

/// A validated decision, as spooled.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NewDecision {
    pub id: String,
    pub project: String,
    pub session_id: Option<String>,
    pub subject: String,
    pub subject_key: String,
    pub choice: String,
    pub rationale: String,
    pub alternatives: Vec<String>,
    pub confidence: f64,
    pub beliefs: Vec<NewBeliefLink>,
    pub files: Vec<String>,
    pub at: i64,
    /// The `decision` operation that records it in its session's chain.
    pub operation: Option<NewOperation>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NewBeliefLink {
    pub id: String,
    pub effect: String,
    pub weight: f64,
}

/// `POST /v1/memories`.
#[derive(Clone, Debug, Serialize, Deserialize, Object)]
pub struct MemoryInput {
    #[oai(validator(min_length = 1, max_length = 128, pattern = r"^\s*[A-Za-z0-9._-]+\s*$"))]
    pub project: String,
    #[oai(validator(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
    ))]
    pub session_id: Option<String>,
    /// `fact`, `assumption`, `lesson` or `discovery`.
    #[oai(validator(pattern = r"^\s*(fact|assumption|lesson|discovery)\s*$"))]
    pub kind: String,
    /// At most 16384 characters.
    #[oai(validator(min_length = 1, max_length = 16384, pattern = r"\S"))]
    pub content: String,
    /// 0..1, default 0.8.
    #[oai(validator(minimum(value = "0"), maximum(value = "1")))]
    pub confidence: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NewMemory {
    pub id: String,
    pub project: String,
    pub session_id: Option<String>,
    pub kind: String,
    pub content: String,
    pub confidence: f64,
    pub tokens: i64,
    pub at: i64,
}

/// Decision subjects match case- and whitespace-insensitively.
pub fn subject_key(subject: &str) -> String {
    subject
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    #[test]
    fn subject_key_ignores_case_and_spacing() {
        assert_eq!(super::subject_key("  Database\tEngine "), "database engine");
        assert_eq!(super::subject_key("database  ENGINE"), "database engine");
    }
}
