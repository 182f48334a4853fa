//! Operations: what an agent did. The wire shape ([`OperationInput`]) and the validated,
//! ready-to-store shape ([`NewOperation`]) with its token count.

use poem_openapi::{Enum, Object};
use serde::{Deserialize, Serialize};

use super::tokens;
use crate::config::Encoding;

/// The `tool` of the operation that keeps a compaction summary (Claude Code's compaction).
pub const COMPACTION_TOOL: &str = "PostCompact";

/// The kinds of operation the contract names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Enum)]
#[serde(rename_all = "snake_case")]
#[oai(rename_all = "snake_case")]
pub enum OpType {
    Read,
    Write,
    ToolCall,
    Search,
    Decision,
    Message,
    Todo,
}

impl OpType {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "read" => Self::Read,
            "write" => Self::Write,
            "tool_call" => Self::ToolCall,
            "search" => Self::Search,
            "decision" => Self::Decision,
            "message" => Self::Message,
            "todo" => Self::Todo,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::ToolCall => "tool_call",
            Self::Search => "search",
            Self::Decision => "decision",
            Self::Message => "message",
            Self::Todo => "todo",
        }
    }

    pub const ALL: [&'static str; 7] = [
        "read",
        "write",
        "tool_call",
        "search",
        "decision",
        "message",
        "todo",
    ];
}

/// One item of an agent's todo list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Object)]
pub struct Todo {
    /// What is to be done (at most 2000 characters).
    #[oai(validator(min_length = 1, max_length = 2000, pattern = r"\S"))]
    pub content: String,
    /// `pending`, `in_progress` or `completed`.
    #[oai(
        default = "default_todo_status",
        validator(pattern = r"^(pending|in_progress|completed)$")
    )]
    #[serde(default = "default_todo_status")]
    pub status: String,
    #[oai(skip_serializing_if_is_none)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

fn default_todo_status() -> String {
    "pending".into()
}

/// An operation as a client sends it. Limits: `id` ≤ 200 chars, `summary` ≤ 4096,
/// `content` ≤ 65536, `target` ≤ 2048, each path ≤ 1024 and ≤ 200 paths per list,
/// ≤ 200 todos, `context` ≤ 16 KiB of JSON.
#[derive(Clone, Debug, Serialize, Deserialize, Object)]
pub struct OperationInput {
    /// The client's idempotency key: the same id sent twice stores one node.
    #[oai(validator(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
    ))]
    pub id: Option<String>,
    /// One of `read`, `write`, `tool_call`, `search`, `decision`, `message`, `todo`.
    #[oai(
        rename = "type",
        validator(pattern = r"^(read|write|tool_call|search|decision|message|todo)$")
    )]
    #[serde(rename = "type")]
    pub kind: String,
    /// What was acted on: a path, a command, a query, a URL.
    pub target: Option<String>,
    /// One line on what happened. Required except for `message` and `todo`, where it is
    /// derived from `content` / `todos` when absent.
    pub summary: Option<String>,
    /// The tool that performed it (`Read`, `Bash`, …).
    pub tool: Option<String>,
    pub files_read: Option<Vec<String>>,
    pub files_modified: Option<Vec<String>>,
    /// Id of an earlier operation (stored or in this batch) that caused this one.
    #[oai(validator(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
    ))]
    pub triggered_by: Option<String>,
    /// Id of a belief this operation is evidence for.
    #[oai(validator(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
    ))]
    pub informs_belief: Option<String>,
    /// `supports` (default) or `contradicts`, with `informs_belief`.
    #[oai(validator(pattern = r"^(supports|contradicts)$"))]
    pub effect: Option<String>,
    /// Weight of the evidence in 0..1 (default 1), with `informs_belief`.
    #[oai(validator(minimum(value = "0"), maximum(value = "1")))]
    pub weight: Option<f64>,
    pub rationale: Option<String>,
    /// `user` or `assistant`, for `message`.
    pub role: Option<String>,
    /// The text of a `message`; of another operation, what it holds (a `write`'s new text):
    /// found by search.
    pub content: Option<String>,
    /// The whole todo list, for `todo`.
    pub todos: Option<Vec<Todo>>,
    /// `ok` (default) or `failed`.
    #[oai(validator(pattern = r"^\s*(ok|failed)?\s*$"))]
    pub status: Option<String>,
    /// Free-form context; `cwd` in it makes file paths project-relative; a `tool_call`'s
    /// `response` (a string) is what it answered: found by search, shown in a task context.
    pub context: Option<serde_json::Value>,
    /// When it happened (RFC 3339); defaults to arrival time.
    pub at: Option<String>,
}

/// A validated operation, as spooled and then written. `tokens` is the token count of
/// [`render_line`] in the configured encoding: counted by the writer just before the operation
/// is stored (off the acknowledgement path), never again afterwards.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NewOperation {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: OpType,
    pub target: Option<String>,
    pub summary: String,
    pub tool: Option<String>,
    pub files_read: Vec<String>,
    pub files_modified: Vec<String>,
    pub triggered_by: Option<String>,
    pub informs_belief: Option<String>,
    pub effect: String,
    pub weight: f64,
    pub rationale: Option<String>,
    pub role: Option<String>,
    pub content: Option<String>,
    /// The todo list as JSON text (Neo4j has no nested maps as properties).
    pub todos: Option<String>,
    pub status: String,
    pub context: Option<String>,
    /// Milliseconds since the epoch.
    pub at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<i64>,
}

impl NewOperation {
    /// The line this operation contributes to narratives and context.
    pub fn line(&self) -> String {
        render_line(
            self.kind,
            self.target.as_deref(),
            &self.summary,
            self.role.as_deref(),
            self.content.as_deref(),
        )
    }

    /// Counts the tokens of [`Self::line`] unless they are counted already.
    pub fn count_tokens(&mut self, encoding: Encoding) -> i64 {
        if let Some(n) = self.tokens {
            return n;
        }
        let n = tokens::count(encoding, &self.line()) as i64;
        self.tokens = Some(n);
        n
    }
}

/// [`render_line`] of a stored operation, whose kind is text: an unknown kind renders as a
/// tool call.
pub fn render_stored_line(
    kind: &str,
    target: Option<&str>,
    summary: &str,
    role: Option<&str>,
    content: Option<&str>,
) -> String {
    let kind = OpType::parse(kind).unwrap_or(OpType::ToolCall);
    render_line(kind, target, summary, role, content)
}

/// The one-line text an operation contributes to narratives and context.
pub fn render_line(
    kind: OpType,
    target: Option<&str>,
    summary: &str,
    role: Option<&str>,
    content: Option<&str>,
) -> String {
    match kind {
        OpType::Message => {
            let who = if role == Some("user") {
                "User"
            } else {
                "Assistant"
            };
            format!("{who}: {}", content.unwrap_or(summary))
        }
        _ => match target {
            Some(t) if !t.is_empty() && !summary.contains(t) => {
                format!("[{}] {t}: {summary}", kind.as_str())
            }
            _ => format!("[{}] {summary}", kind.as_str()),
        },
    }
}
