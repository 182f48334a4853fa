//! The Claude Code hook event shapes, after the public hooks reference: every event carries
//! `session_id`, `transcript_path`, `cwd`, `permission_mode` and `hook_event_name`; the rest
//! depends on the event. Every field is optional here and unknown fields are ignored, so a
//! newer Claude Code never breaks capture. cairn's own additions start with `cairn_`.

use serde::Deserialize;
use serde_json::Value;

/// One hook event as Claude Code sends it (stdin of a command hook, body of an HTTP hook).
/// Field names and shapes follow `sdk.d.ts` of `@anthropic-ai/claude-agent-sdk` (see
/// `docs/claude-code.md` for the version followed).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct HookEvent {
    pub hook_event_name: String,
    pub session_id: Option<String>,
    pub transcript_path: Option<String>,
    pub cwd: Option<String>,
    pub permission_mode: Option<String>,
    /// Correlates a user prompt with every event up to the next prompt.
    pub prompt_id: Option<String>,
    /// SessionStart: `startup`, `resume`, `clear`, `compact` or `fork`.
    pub source: Option<String>,
    pub model: Option<String>,
    /// UserPromptSubmit.
    pub prompt: Option<String>,
    /// PreToolUse, PostToolUse, PostToolUseFailure, PermissionDenied.
    pub tool_name: Option<String>,
    pub tool_input: Value,
    pub tool_response: Value,
    pub tool_use_id: Option<String>,
    /// Tool execution time (PostToolUse, PostToolUseFailure).
    pub duration_ms: Option<f64>,
    /// The MCP server of an `mcp__*` tool: `{name, source}`.
    pub mcp_server: Option<McpServer>,
    /// PostToolBatch: the batch's tool calls.
    pub tool_calls: Vec<BatchedCall>,
    /// PostToolUseFailure; StopFailure (an error kind).
    pub error: Option<String>,
    pub error_details: Option<String>,
    pub is_interrupt: Option<bool>,
    /// Stop, SubagentStop, StopFailure.
    pub stop_hook_active: Option<bool>,
    pub last_assistant_message: Option<String>,
    /// Present on every event fired inside a subagent (and on SubagentStart/Stop).
    pub agent_id: Option<String>,
    pub agent_type: Option<String>,
    /// SubagentStop.
    pub agent_transcript_path: Option<String>,
    /// SessionEnd: `clear`, `logout`, `prompt_input_exit`, `other`, …; PermissionDenied: why.
    pub reason: Option<String>,
    /// PreCompact, PostCompact: `manual` or `auto`.
    pub trigger: Option<String>,
    pub custom_instructions: Option<String>,
    /// PostCompact: the conversation summary compaction produced.
    pub compact_summary: Option<String>,
    /// TaskCreated, TaskCompleted.
    pub task_id: Option<String>,
    pub task_subject: Option<String>,
    pub task_description: Option<String>,
    /// CwdChanged.
    pub old_cwd: Option<String>,
    pub new_cwd: Option<String>,
    /// FileChanged (with `event`: `change`, `add`, `unlink`).
    pub file_path: Option<String>,
    pub event: Option<String>,
    /// WorktreeCreate.
    pub name: Option<String>,
    /// WorktreeRemove.
    pub worktree_path: Option<String>,
    /// Set by `cairn hook` when the event is first seen: the idempotency key of events that
    /// have no `tool_use_id`, so a spooled event sent twice is stored once.
    pub cairn_event_id: Option<String>,
}

/// `mcp_server` of an MCP tool's events.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct McpServer {
    pub name: Option<String>,
    pub source: Option<String>,
}

/// One tool call of a PostToolBatch.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct BatchedCall {
    pub tool_name: Option<String>,
    pub tool_input: Value,
    pub tool_use_id: Option<String>,
    pub tool_response: Value,
}

/// The events cairn maps; anything else is accepted and ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    PostToolBatch,
    PermissionDenied,
    Stop,
    StopFailure,
    SubagentStart,
    SubagentStop,
    SessionEnd,
    PreCompact,
    PostCompact,
    TaskCreated,
    TaskCompleted,
    CwdChanged,
    FileChanged,
    WorktreeCreate,
    WorktreeRemove,
    Other,
}

/// Every hook event of Claude Code's `HOOK_EVENTS` (sdk.d.ts), mapped or not.
pub const HOOK_EVENTS: [&str; 33] = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "PreModelSwitch",
    "PostModelSwitch",
    "PermissionRequest",
    "PermissionDenied",
    "Setup",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "Elicitation",
    "ElicitationResult",
    "ConfigChange",
    "WorktreeCreate",
    "WorktreeRemove",
    "InstructionsLoaded",
    "CwdChanged",
    "FileChanged",
    "DirectoryAdded",
    "MessageDisplay",
];

impl HookEvent {
    pub fn kind(&self) -> EventKind {
        match self.hook_event_name.as_str() {
            "SessionStart" => EventKind::SessionStart,
            "UserPromptSubmit" => EventKind::UserPromptSubmit,
            "PreToolUse" => EventKind::PreToolUse,
            "PostToolUse" => EventKind::PostToolUse,
            "PostToolUseFailure" => EventKind::PostToolUseFailure,
            "PostToolBatch" => EventKind::PostToolBatch,
            "PermissionDenied" => EventKind::PermissionDenied,
            "Stop" => EventKind::Stop,
            "StopFailure" => EventKind::StopFailure,
            "SubagentStart" => EventKind::SubagentStart,
            "SubagentStop" => EventKind::SubagentStop,
            "SessionEnd" => EventKind::SessionEnd,
            "PreCompact" => EventKind::PreCompact,
            "PostCompact" => EventKind::PostCompact,
            "TaskCreated" => EventKind::TaskCreated,
            "TaskCompleted" => EventKind::TaskCompleted,
            "CwdChanged" => EventKind::CwdChanged,
            "FileChanged" => EventKind::FileChanged,
            "WorktreeCreate" => EventKind::WorktreeCreate,
            "WorktreeRemove" => EventKind::WorktreeRemove,
            _ => EventKind::Other,
        }
    }

    /// A string field of `tool_input`.
    pub fn input_str(&self, key: &str) -> Option<&str> {
        self.tool_input
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
    }

    /// The subagent this event was fired in, if any (a non-empty `agent_id`).
    pub fn subagent(&self) -> Option<&str> {
        self.agent_id.as_deref().filter(|a| !a.trim().is_empty())
    }
}

/// Strings in `v` longer than `max` characters are cut (with a note of how much was left
/// out), so a huge tool response never travels or waits in a spool whole.
pub fn shrink(v: &mut Value, max: usize) {
    match v {
        Value::String(s) => {
            let n = s.chars().count();
            if n > max {
                let mut cut: String = s.chars().take(max).collect();
                cut.push_str(&format!("… [{} more characters]", n - max));
                *s = cut;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| shrink(i, max)),
        Value::Object(map) => map.values_mut().for_each(|i| shrink(i, max)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_events_and_fields_parse() {
        let e: HookEvent = serde_json::from_value(serde_json::json!({
            "hook_event_name": "Notification",
            "session_id": "s",
            "message": "Claude needs your permission",
            "brand_new_field": {"x": 1}
        }))
        .unwrap();
        assert_eq!(e.kind(), EventKind::Other);
        assert_eq!(e.session_id.as_deref(), Some("s"));
        assert!(e.tool_input.is_null());
    }

    #[test]
    fn shrink_bounds_every_string() {
        let mut v = serde_json::json!({"a": "x".repeat(50), "b": ["y".repeat(5)]});
        shrink(&mut v, 10);
        assert!(v["a"].as_str().unwrap().starts_with("xxxxxxxxxx… [40 more"));
        assert_eq!(v["b"][0], "yyyyy");
    }
}
