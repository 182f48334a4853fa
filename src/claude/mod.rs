//! Claude Code integration: the hook event shapes ([`events`]), the one mapping from an event
//! to capture calls ([`mapping`]) with what a tool call answered ([`outcome`]), secret redaction ([`redact`]), the SessionStart context
//! ([`context`]), the transcript parser ([`transcript`]) and `.claude/settings.json` merging
//! ([`settings`]). The HTTP route is `api::hooks`; the command hook, import and set-up are in
//! `cli`.

pub mod context;
pub mod events;
pub mod mapping;
pub mod outcome;
pub mod redact;
pub mod settings;
pub mod transcript;

use std::path::Path;

use crate::domain::limits::MAX_PROJECT_CHARS;

/// How long, in milliseconds, each answering event's answer may take by default: the command
/// hook's deadlines, and the bound the server puts on computing the answer itself, so an HTTP
/// hook (which has no deadline of its own but Claude Code's timeout) is answered as soon.
pub const SESSION_START_ANSWER_MS: u64 = 2_000;
/// UserPromptSubmit's: the memory recalled for a prompt ([`SESSION_START_ANSWER_MS`]).
pub const PROMPT_ANSWER_MS: u64 = 1_000;
/// PreToolUse's: a file's context ([`SESSION_START_ANSWER_MS`]).
pub const PRE_TOOL_ANSWER_MS: u64 = 500;

/// The id of the child session holding a subagent's work: `<parent>:agent-<agent_id>`, with
/// `agent_id` as Claude Code gives it (hook events' `agent_id`; 2.1.x transcripts keep that
/// subagent's lines in `subagents/agent-<agent_id>.jsonl`). Deterministic, so hooks and import
/// name the same child.
pub fn child_session_id(parent: &str, agent_id: &str) -> String {
    format!("{parent}:agent-{agent_id}")
}

/// The project of a working directory: the name of its git root (the nearest ancestor with
/// `.git`), else of the directory itself, reduced to the characters project ids allow.
pub fn project_from_cwd(cwd: &str) -> Option<String> {
    let dir = Path::new(cwd);
    let root = dir
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(dir);
    let name = root.file_name()?.to_string_lossy();
    let id: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(MAX_PROJECT_CHARS)
        .collect();
    let id = id.trim_matches('-').to_string();
    (!id.is_empty()).then_some(id)
}

/// `CAIRN_PROJECT` when set, else the git root name of `cwd`.
pub fn project_for(explicit: Option<&str>, cwd: Option<&str>) -> Option<String> {
    explicit
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .or_else(|| cwd.and_then(project_from_cwd))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_child_session_id_is_derived_from_its_parent_and_agent() {
        assert_eq!(super::child_session_id("s1", "a7f3"), "s1:agent-a7f3");
        assert_eq!(
            super::child_session_id("s1", "a7f3"),
            super::child_session_id("s1", "a7f3")
        );
        assert!(crate::domain::validate::id("id", &super::child_session_id("s1", "a7f3")).is_ok());
    }

    #[test]
    fn project_is_the_git_root_name() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("my repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        let cwd = root.join("src/deep");
        assert_eq!(
            super::project_from_cwd(cwd.to_str().unwrap()).as_deref(),
            Some("my-repo")
        );
        assert_eq!(
            super::project_for(Some("explicit"), cwd.to_str()).as_deref(),
            Some("explicit")
        );
    }
}
