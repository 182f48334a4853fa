//! Merging cairn into a project's Claude Code configuration without clobbering it: the command
//! hook into `.claude/settings.json` (`hooks.<Event>[]`), the MCP server into `.mcp.json`
//! (`mcpServers.cairn`, enabled through `enabledMcpjsonServers`). Everything already there is
//! kept; running it twice changes nothing the second time.

use serde_json::{json, Map, Value};

/// The events cairn listens to. PreToolUse is left out: PostToolUse carries the same tool use
/// with its outcome.
pub const EVENTS: [&str; 8] = [
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "SessionEnd",
];

/// Name of the MCP server entry.
pub const SERVER: &str = "cairn";

fn is_tool_event(event: &str) -> bool {
    event.contains("ToolUse")
}

/// `settings` with a `command` hook for every event in [`EVENTS`] (unless one running
/// `command` is there already) and the cairn MCP server enabled. Fails when the document or
/// one of the parts cairn touches is not the documented shape (it is left alone then).
pub fn merge_settings(mut settings: Value, command: &str) -> Result<Value, String> {
    let root = settings
        .as_object_mut()
        .ok_or("the settings file is not a JSON object")?;
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("`hooks` is not an object")?;
    for event in EVENTS {
        let groups = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .ok_or_else(|| format!("`hooks.{event}` is not a list"))?;
        let present = groups.iter().any(|g| {
            g.get("hooks").and_then(Value::as_array).is_some_and(|hs| {
                hs.iter()
                    .any(|h| h.get("command").and_then(Value::as_str) == Some(command))
            })
        });
        if present {
            continue;
        }
        let hook = json!({"type": "command", "command": command, "timeout": 5});
        groups.push(if is_tool_event(event) {
            json!({"matcher": "*", "hooks": [hook]})
        } else {
            json!({"hooks": [hook]})
        });
    }
    let enabled = root
        .entry("enabledMcpjsonServers")
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or("`enabledMcpjsonServers` is not a list")?;
    if !enabled.iter().any(|s| s.as_str() == Some(SERVER)) {
        enabled.push(Value::String(SERVER.into()));
    }
    Ok(settings)
}

/// `.mcp.json` with the cairn server (streamable HTTP at `<url>/mcp`, the key read from
/// `CAIRN_API_KEY` when Claude Code starts). Other servers are kept; an existing cairn entry
/// is replaced.
pub fn merge_mcp(mut mcp: Value, url: &str) -> Result<Value, String> {
    let root = mcp
        .as_object_mut()
        .ok_or("the .mcp.json file is not a JSON object")?;
    let servers = root
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("`mcpServers` is not an object")?;
    servers.insert(
        SERVER.into(),
        json!({
            "type": "http",
            "url": format!("{}/mcp", url.trim_end_matches('/')),
            "headers": {"Authorization": "Bearer ${CAIRN_API_KEY}"}
        }),
    );
    Ok(mcp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_what_is_there_and_is_idempotent() {
        let existing = json!({
            "permissions": {"allow": ["Bash(cargo test)"]},
            "hooks": {"PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "prettier"}]}]},
            "enabledMcpjsonServers": ["github"]
        });
        let once = merge_settings(existing, "cairn hook claude-code").unwrap();
        assert_eq!(once["permissions"]["allow"][0], "Bash(cargo test)");
        let post = once["hooks"]["PostToolUse"].as_array().unwrap();
        assert_eq!(post.len(), 2);
        assert_eq!(post[0]["hooks"][0]["command"], "prettier");
        assert_eq!(post[1]["matcher"], "*");
        assert!(once["hooks"]["SessionStart"][0].get("matcher").is_none());
        assert_eq!(once["enabledMcpjsonServers"], json!(["github", "cairn"]));
        let twice = merge_settings(once.clone(), "cairn hook claude-code").unwrap();
        assert_eq!(twice, once);
        assert!(merge_settings(json!({"hooks": []}), "c").is_err());
        assert!(merge_settings(json!([1]), "c").is_err());
    }

    #[test]
    fn the_mcp_entry_joins_other_servers() {
        let mcp = merge_mcp(
            json!({"mcpServers": {"github": {"command": "gh-mcp"}}}),
            "http://h:1/",
        )
        .unwrap();
        assert_eq!(mcp["mcpServers"]["github"]["command"], "gh-mcp");
        assert_eq!(mcp["mcpServers"]["cairn"]["url"], "http://h:1/mcp");
        assert_eq!(mcp["mcpServers"]["cairn"]["type"], "http");
    }
}
