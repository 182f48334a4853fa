//! Merging cairn into a project's Claude Code configuration without clobbering it: hooks into
//! `.claude/settings.json` or `.claude/settings.local.json` (`hooks.<Event>[]`), the pinned
//! project into their `env`, the MCP server into `.mcp.json` (`mcpServers.cairn`, enabled
//! through `enabledMcpjsonServers`). Everything already there is kept; running it twice
//! changes nothing the second time.

use serde_json::{json, Map, Value};

use super::mapping::FILE_TOOLS;

/// The events cairn installs hooks for. PreToolUse only for the file tools (its answer is the
/// file's context); WorktreeCreate never (such a hook replaces git's worktree creation).
pub const EVENTS: [&str; 15] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionDenied",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "TaskCreated",
    "TaskCompleted",
    "SessionEnd",
];

/// Events whose hook may be `type: "http"` (`--http`); the others stay command hooks (see
/// `docs/claude-code.md`).
pub const HTTP_EVENTS: [&str; 9] = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionDenied",
    "UserPromptSubmit",
    "Stop",
    "SubagentStop",
    "TaskCreated",
    "TaskCompleted",
];

/// Seconds Claude Code waits for a cairn hook: well above the command hook's longest
/// deadline (SessionStart, 2 s by default).
pub const HOOK_TIMEOUT_SECS: u64 = 10;

/// Name of the MCP server entry.
pub const SERVER: &str = "cairn";

/// The matcher of an event's hook group: tool events match tools, PreToolUse only the file
/// tools; the others take none.
fn matcher(event: &str) -> Option<String> {
    match event {
        "PreToolUse" => Some(FILE_TOOLS.join("|")),
        e if e.contains("ToolUse") || e == "PermissionDenied" => Some("*".into()),
        _ => None,
    }
}

/// How the hooks reach cairn.
#[derive(Clone, Debug)]
pub enum Hook {
    /// `type: "command"` running this command line.
    Command(String),
    /// `type: "http"` posting to this URL (the key from `$CAIRN_API_KEY`).
    Http(String),
}

impl Hook {
    fn entry(&self) -> Value {
        match self {
            Hook::Command(c) => {
                json!({"type": "command", "command": c, "timeout": HOOK_TIMEOUT_SECS})
            }
            Hook::Http(url) => json!({
                "type": "http",
                "url": url,
                "timeout": HOOK_TIMEOUT_SECS,
                "headers": {"Authorization": "Bearer $CAIRN_API_KEY"},
                "allowedEnvVars": ["CAIRN_API_KEY"]
            }),
        }
    }

    /// Whether `h` (an entry of a hook group) is this hook.
    fn is(&self, h: &Value) -> bool {
        match self {
            Hook::Command(c) => h.get("command").and_then(Value::as_str) == Some(c),
            Hook::Http(u) => h.get("url").and_then(Value::as_str) == Some(u),
        }
    }
}

/// `settings` with `hook` for each of `events` (unless it is there already). Fails when the
/// document or one of the parts cairn touches is not the documented shape (it is left alone
/// then).
pub fn merge_hooks(mut settings: Value, events: &[&str], hook: &Hook) -> Result<Value, String> {
    let root = settings
        .as_object_mut()
        .ok_or("the settings file is not a JSON object")?;
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("`hooks` is not an object")?;
    for &event in events {
        let groups = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .ok_or_else(|| format!("`hooks.{event}` is not a list"))?;
        let present = groups.iter().any(|g| {
            g.get("hooks")
                .and_then(Value::as_array)
                .is_some_and(|hs| hs.iter().any(|h| hook.is(h)))
        });
        if present {
            continue;
        }
        let mut group = json!({"hooks": [hook.entry()]});
        if let Some(m) = matcher(event) {
            group["matcher"] = Value::String(m);
        }
        groups.push(group);
    }
    Ok(settings)
}

/// [`merge_hooks`] for every event in [`EVENTS`] with a command hook, and the cairn MCP server
/// enabled.
pub fn merge_settings(settings: Value, command: &str) -> Result<Value, String> {
    let merged = merge_hooks(settings, &EVENTS, &Hook::Command(command.into()))?;
    enable_mcp(merged)
}

/// `settings` with the cairn MCP server in `enabledMcpjsonServers`.
pub fn enable_mcp(mut settings: Value) -> Result<Value, String> {
    let root = settings
        .as_object_mut()
        .ok_or("the settings file is not a JSON object")?;
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

/// `settings` with `env.<name>` set to `value` (Claude Code passes `env` to hook commands).
pub fn set_env(mut settings: Value, name: &str, value: &str) -> Result<Value, String> {
    let root = settings
        .as_object_mut()
        .ok_or("the settings file is not a JSON object")?;
    let env = root
        .entry("env")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("`env` is not an object")?;
    env.insert(name.into(), Value::String(value.into()));
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

/// The project id pinned for a repository: its `origin` remote, normalised
/// (`git@github.com:Acme/API.git` and `https://github.com/acme/api` are both
/// `github.com-acme-api`); `None` when the URL has nothing usable.
pub fn project_from_remote(url: &str) -> Option<String> {
    let url = url.trim().trim_end_matches('/');
    let url = url.strip_suffix(".git").unwrap_or(url);
    let rest = match url.split_once("://") {
        Some((_, rest)) => rest.to_string(),
        // scp-like `user@host:path`.
        None => url.replacen(':', "/", 1),
    };
    // Credentials and port never belong to the identity.
    let rest = rest.rsplit_once('@').map_or(rest.as_str(), |(_, r)| r);
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let host = host.split(':').next().unwrap_or(host);
    let joined = format!("{host}/{path}").to_lowercase();
    id_chars(&joined)
}

/// `s` reduced to a project id: letters, digits, `.`, `_`, `-` (others become `-`), at most
/// 128 characters, no leading or trailing `-`.
pub fn id_chars(s: &str) -> Option<String> {
    let id: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let mut id = id.trim_matches('-').to_string();
    while id.contains("--") {
        id = id.replace("--", "-");
    }
    if id.len() > crate::domain::limits::MAX_PROJECT_CHARS {
        use sha2::Digest;
        let hash = hex::encode(sha2::Sha256::digest(id.as_bytes()));
        id = format!(
            "{}-{}",
            &id[..crate::domain::limits::MAX_PROJECT_CHARS - 13],
            &hash[..12]
        );
    }
    (!id.is_empty()).then_some(id)
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
        assert_eq!(
            once["hooks"]["PreToolUse"][0]["matcher"],
            "Read|Edit|Write|MultiEdit|NotebookEdit"
        );
        assert!(once["hooks"].get("WorktreeCreate").is_none());
        assert!(once["hooks"]["SessionStart"][0].get("matcher").is_none());
        assert_eq!(once["enabledMcpjsonServers"], json!(["github", "cairn"]));
        let twice = merge_settings(once.clone(), "cairn hook claude-code").unwrap();
        assert_eq!(twice, once);
        assert!(merge_settings(json!({"hooks": []}), "c").is_err());
        assert!(merge_settings(json!([1]), "c").is_err());
    }

    #[test]
    fn http_hooks_send_the_key_from_the_environment() {
        let s = merge_hooks(
            json!({}),
            &HTTP_EVENTS,
            &Hook::Http("http://h/v1/hooks/claude-code".into()),
        )
        .unwrap();
        let h = &s["hooks"]["PostToolUse"][0]["hooks"][0];
        assert_eq!(h["type"], "http");
        assert_eq!(h["headers"]["Authorization"], "Bearer $CAIRN_API_KEY");
        assert_eq!(h["allowedEnvVars"], json!(["CAIRN_API_KEY"]));
        assert!(s["hooks"].get("SessionStart").is_none());
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

    #[test]
    fn a_remote_pins_one_project_whatever_its_spelling() {
        for url in [
            "git@github.com:Acme/API.git",
            "https://github.com/acme/api",
            "https://user:token@github.com/acme/api.git/",
            "ssh://git@github.com:22/acme/api.git",
        ] {
            assert_eq!(
                project_from_remote(url).as_deref(),
                Some("github.com-acme-api"),
                "{url}"
            );
        }
        assert_ne!(
            project_from_remote("git@github.com:acme/api.git"),
            project_from_remote("git@github.com:other/api.git")
        );
        assert!(id_chars(&"x".repeat(300)).unwrap().len() <= 128);
    }
}
