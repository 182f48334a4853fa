//! The Claude Code hook event shapes, after the public hooks reference: every event carries
//! `session_id`, `transcript_path`, `cwd`, `permission_mode` and `hook_event_name`; the rest
//! depends on the event. Every field is optional here and unknown fields are ignored, so a
//! newer Claude Code never breaks capture. cairn's own additions start with `cairn_`.

use serde::Deserialize;
use serde_json::Value;

/// One hook event as Claude Code sends it (stdin of a command hook, body of an HTTP hook).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct HookEvent {
    pub hook_event_name: String,
    pub session_id: Option<String>,
    pub transcript_path: Option<String>,
    pub cwd: Option<String>,
    pub permission_mode: Option<String>,
    /// SessionStart: `startup`, `resume`, `clear` or `compact`.
    pub source: Option<String>,
    pub model: Option<String>,
    /// UserPromptSubmit.
    pub prompt: Option<String>,
    /// PreToolUse, PostToolUse, PostToolUseFailure.
    pub tool_name: Option<String>,
    pub tool_input: Value,
    pub tool_response: Value,
    pub tool_use_id: Option<String>,
    /// PostToolUseFailure.
    pub error: Option<String>,
    pub is_interrupt: Option<bool>,
    /// Stop, SubagentStop.
    pub stop_hook_active: Option<bool>,
    pub last_assistant_message: Option<String>,
    pub agent_id: Option<String>,
    pub agent_type: Option<String>,
    /// SessionEnd: `clear`, `logout`, `prompt_input_exit`, `other`, …
    pub reason: Option<String>,
    /// PreCompact: `manual` or `auto`.
    pub trigger: Option<String>,
    pub custom_instructions: Option<String>,
    /// Set by `cairn hook` when the event is first seen: the idempotency key of events that
    /// have no `tool_use_id`, so a spooled event sent twice is stored once.
    pub cairn_event_id: Option<String>,
}

/// The events cairn maps; anything else is accepted and ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    Stop,
    SubagentStop,
    SessionEnd,
    PreCompact,
    Other,
}

impl HookEvent {
    pub fn kind(&self) -> EventKind {
        match self.hook_event_name.as_str() {
            "SessionStart" => EventKind::SessionStart,
            "UserPromptSubmit" => EventKind::UserPromptSubmit,
            "PreToolUse" => EventKind::PreToolUse,
            "PostToolUse" => EventKind::PostToolUse,
            "PostToolUseFailure" => EventKind::PostToolUseFailure,
            "Stop" => EventKind::Stop,
            "SubagentStop" => EventKind::SubagentStop,
            "SessionEnd" => EventKind::SessionEnd,
            "PreCompact" => EventKind::PreCompact,
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
