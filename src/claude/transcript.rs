//! Claude Code transcripts (`~/.claude/projects/<dir>/<session>.jsonl`): one JSON object per
//! line, in both layouts Claude Code has written.
//!
//! - **Main thread.** `user` and `assistant` lines carry `sessionId`, `uuid`, `timestamp`,
//!   `cwd` and a `message` whose `content` is a string or a list of blocks (`text`,
//!   `tool_use`, `tool_result`, `thinking`, …). Each `tool_use` becomes an operation through
//!   the same [`mapping::tool_use`] as hooks; every `tool_result` of a line is matched to its
//!   tool use, with the line's `toolUseResult` (the structured result a hook sees as
//!   `tool_response`) as the response when the line answers one call.
//! - **Subagents.** 1.0.x writes a subagent's lines inline, marked `isSidechain: true`, each
//!   subagent one chain of `parentUuid`s; 2.1.x writes them to
//!   `<session>/subagents/agent-<agentId>.jsonl`, every line carrying the parent's
//!   `sessionId` and its `agentId`. Either way they become a child session
//!   ([`super::child_session_id`]), never part of the main one; its first prompt (the Task
//!   prompt) is the child's task, not a user turn. [`assemble`] links each child to the
//!   Task/Agent tool use that launched it: by `toolUseResult.agentId` or an `agent_progress`
//!   line (2.1.x), by the prompt (1.0.x).
//! - **Compaction.** An `isCompactSummary` user line is the compaction summary
//!   ([`mapping::compaction`]), not a user turn; `agent-acompact-*` runs are never sessions.
//! - **Not turns.** `isMeta` lines, command wrappers (`<command-name>`, `<local-command-stdout>`,
//!   …), task notifications and interruption markers are skipped.
//! - **Other lines.** `summary` lines name the session they sum up through `leafUuid`;
//!   `queue-operation` enqueues carry prompts typed while the agent worked, kept as user turns
//!   when the conversation does not repeat them; `progress`, `file-history-snapshot`, other
//!   `system` lines and unknown types are counted in [`Transcript::skipped`].
//!
//! Lines that are not JSON objects, or whose `sessionId` capture would refuse, are counted,
//! never fatal. Everything passes through [`redact`] first, and what a session holds is what
//! the API accepts: timestamps that are not RFC 3339 are dropped, working directories,
//! summaries and tasks bounded.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;

use serde_json::Value;

use super::{child_session_id, mapping, redact};
use crate::domain::record::{SessionClose, SessionStart};
use crate::domain::{
    limits::{MAX_RATIONALE_CHARS, MAX_SUMMARY_CHARS},
    operation::OperationInput,
    validate,
};

/// A session rebuilt from transcript lines.
#[derive(Debug, Default)]
pub struct Session {
    pub id: String,
    pub cwd: Option<String>,
    pub summary: Option<String>,
    /// RFC 3339 of the first line.
    pub first_at: Option<String>,
    /// RFC 3339 of the last line.
    pub last_at: Option<String>,
    pub operations: Vec<OperationInput>,
    /// For a subagent: the session that launched it.
    pub parent: Option<String>,
    /// For a subagent: the operation id of the Task/Agent tool use that launched it.
    pub spawned_by: Option<String>,
    /// For a subagent: its `subagent_type`.
    pub agent_type: Option<String>,
    /// For a subagent: the prompt it was given.
    pub task: Option<String>,
    /// For a subagent: its agent id (2.1.x `agentId`; 1.0.x the uuid of its first line).
    agent_id: Option<String>,
}

/// A Task/Agent tool use, as its parent's transcript shows it.
#[derive(Debug, Clone, Default)]
pub struct Spawn {
    pub session: String,
    pub operation_id: String,
    pub agent_id: Option<String>,
    pub prompt: Option<String>,
    pub subagent_type: Option<String>,
}

#[derive(Debug, Default)]
pub struct Transcript {
    /// Sessions in order of first appearance (a main session before its inline children).
    pub sessions: Vec<Session>,
    /// Task/Agent tool uses seen, for [`assemble`].
    pub spawns: Vec<Spawn>,
    pub lines: usize,
    pub bad_lines: usize,
    /// Lines skipped on purpose, by kind (`progress`, `file-history-snapshot`,
    /// `compaction-run`, …).
    pub skipped: BTreeMap<String, usize>,
}

struct PendingTool {
    session: usize,
    op: usize,
    name: String,
    input: Value,
    cwd: Option<String>,
    spawn: Option<usize>,
}

/// Internal agents Claude Code runs beside the conversation: compaction and prompt
/// suggestions. Their files are never sessions.
fn internal_agent(agent_id: &str) -> bool {
    agent_id.starts_with("acompact") || agent_id.starts_with("aprompt_suggestion")
}

/// Leading tags of user lines that Claude Code writes itself: slash-command wrappers, local
/// command output, background task notifications, reminders and `!` shell escapes.
const WRAPPERS: [&str; 11] = [
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<task-notification>",
    "<system-reminder>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
];

/// Whether a user text is something Claude Code wrote, not the user.
fn not_a_turn(text: &str) -> bool {
    let t = text.trim_start();
    WRAPPERS.iter().any(|w| t.starts_with(w))
        || t.starts_with("[Request interrupted by user")
        || t.starts_with("Caveat: The messages below were generated by the user while running")
}

/// Parses one transcript file. Never fails on content: unreadable lines are counted.
pub fn parse(reader: impl BufRead) -> Transcript {
    let mut p = Parser::default();
    for line in reader.lines() {
        match line {
            Ok(line) => p.line(&line),
            Err(_) => p.out.bad_lines += 1,
        }
    }
    p.finish()
}

#[derive(Default)]
struct Parser {
    out: Transcript,
    index: HashMap<String, usize>,
    owner_of_uuid: HashMap<String, usize>,
    /// 1.0.x inline sidechains: the first uuid of each line's chain.
    chain_root: HashMap<String, String>,
    summaries: Vec<(String, String)>,
    tools: HashMap<String, PendingTool>,
    /// The trigger of the last `compact_boundary`, for the summary line that follows it.
    compact_trigger: Option<String>,
    /// Prompts queued while the agent worked: session, position, text, time.
    queued: Vec<(usize, usize, String, Option<String>)>,
}

impl Parser {
    fn skip(&mut self, kind: &str) {
        *self.out.skipped.entry(kind.to_string()).or_default() += 1;
    }

    fn session(&mut self, id: &str) -> usize {
        if let Some(&i) = self.index.get(id) {
            return i;
        }
        self.out.sessions.push(Session {
            id: id.to_string(),
            ..Default::default()
        });
        self.index
            .insert(id.to_string(), self.out.sessions.len() - 1);
        self.out.sessions.len() - 1
    }

    fn line(&mut self, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        self.out.lines += 1;
        let mut v: Value = match serde_json::from_str(line) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                self.out.bad_lines += 1;
                return;
            }
        };
        redact::value(&mut v);
        let kind = str_of(&v, "type").unwrap_or("").to_string();
        match kind.as_str() {
            "summary" => {
                if let (Some(s), Some(leaf)) = (str_of(&v, "summary"), str_of(&v, "leafUuid")) {
                    self.summaries
                        .push((leaf.to_string(), mapping::bounded(s, MAX_RATIONALE_CHARS)));
                }
            }
            "user" | "assistant" => self.message(&v, &kind),
            "system" if str_of(&v, "subtype") == Some("compact_boundary") => {
                self.compact_trigger = v
                    .pointer("/compactMetadata/trigger")
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
            "progress" => self.progress(&v),
            "queue-operation" => self.queue(&v),
            "" => self.skip("untyped"),
            other => {
                let other = if other == "system" {
                    format!("system/{}", str_of(&v, "subtype").unwrap_or("other"))
                } else {
                    other.to_string()
                };
                self.skip(&other)
            }
        }
    }

    /// An `agent_progress` line names the agent a Task call runs (2.1.x); other progress
    /// (hooks, shell output, the subagent's own messages) is not the conversation.
    fn progress(&mut self, v: &Value) {
        if v.pointer("/data/type").and_then(Value::as_str) == Some("agent_progress") {
            let agent = v.pointer("/data/agentId").and_then(Value::as_str);
            let call = str_of(v, "parentToolUseID");
            if let (Some(agent), Some(call)) = (agent, call) {
                if let Some(s) = self.tools.get(call).and_then(|t| t.spawn) {
                    self.out.spawns[s].agent_id = Some(agent.to_string());
                }
            }
        }
        self.skip("progress");
    }

    /// `enqueue` with a prompt typed while the agent worked; kept for [`Self::finish`].
    fn queue(&mut self, v: &Value) {
        self.skip("queue-operation");
        if str_of(v, "operation") != Some("enqueue") {
            return;
        }
        let (Some(sid), Some(text)) = (
            str_of(v, "sessionId").and_then(|s| validate::id("sessionId", s).ok()),
            str_of(v, "content"),
        ) else {
            return;
        };
        if not_a_turn(text) || text.trim().is_empty() {
            return;
        }
        let si = self.session(&sid);
        let at = timestamp(v);
        let pos = self.out.sessions[si].operations.len();
        self.queued.push((si, pos, text.to_string(), at));
    }

    fn message(&mut self, v: &Value, kind: &str) {
        let Some(parent_sid) =
            str_of(v, "sessionId").and_then(|s| validate::id("sessionId", s).ok())
        else {
            self.out.bad_lines += 1;
            return;
        };
        let uuid = str_of(v, "uuid").map(str::to_string);
        let sidechain = v.get("isSidechain").and_then(Value::as_bool) == Some(true);
        // The session this line belongs to: the main one, or a subagent's.
        let (sid, agent_id) = if sidechain {
            let agent = match str_of(v, "agentId") {
                Some(a) => a.to_string(),
                None => {
                    let root = str_of(v, "parentUuid")
                        .and_then(|p| self.chain_root.get(p).cloned())
                        .or_else(|| uuid.clone())
                        .unwrap_or_else(|| "unknown".into());
                    if let Some(u) = &uuid {
                        self.chain_root.insert(u.clone(), root.clone());
                    }
                    root
                }
            };
            if internal_agent(&agent) {
                self.skip("compaction-run");
                return;
            }
            let child = child_session_id(&parent_sid, &agent);
            match validate::id("sessionId", &child) {
                Ok(c) => (c, Some(agent)),
                Err(_) => {
                    self.out.bad_lines += 1;
                    return;
                }
            }
        } else {
            (parent_sid.clone(), None)
        };
        let at = timestamp(v);
        let cwd = mapping::working_dir(str_of(v, "cwd"));
        let si = self.session(&sid);
        {
            let session = &mut self.out.sessions[si];
            if session.cwd.is_none() {
                session.cwd = cwd.clone();
            }
            if at.is_some() {
                if session.first_at.is_none() {
                    session.first_at = at.clone();
                }
                session.last_at = at.clone();
            }
            if let Some(agent) = agent_id {
                session.parent.get_or_insert(parent_sid);
                session.agent_id.get_or_insert(agent);
            }
        }
        if let Some(u) = &uuid {
            self.owner_of_uuid.insert(u.clone(), si);
        }
        let Some(message) = v.get("message") else {
            return;
        };
        let blocks: Vec<Value> = match message.get("content") {
            Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
            Some(Value::Array(items)) => items.clone(),
            _ => Vec::new(),
        };
        let flag = |k: &str| v.get(k).and_then(Value::as_bool) == Some(true);
        let text: Vec<&str> = blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .filter(|t| !t.trim().is_empty())
            .collect();
        let text = text.join("\n\n");
        let op_id = uuid.as_deref().map(|u| mapping::operation_id(&sid, u));
        // Lines Claude Code wrote itself are no turns: meta lines, API errors, wrappers.
        let written_by_claude_code =
            flag("isMeta") || flag("isApiErrorMessage") || (kind == "user" && not_a_turn(&text));
        if !text.is_empty() {
            let session = &mut self.out.sessions[si];
            if flag("isCompactSummary") {
                let trigger = self.compact_trigger.as_deref().unwrap_or("auto");
                let mut op = mapping::compaction(op_id.clone(), trigger, Some(&text));
                op.at = at.clone();
                session.operations.push(op);
            } else if written_by_claude_code {
                self.out
                    .skipped
                    .entry("not-a-turn".into())
                    .and_modify(|n| *n += 1)
                    .or_insert(1);
            } else if kind == "user" && session.parent.is_some() && session.task.is_none() {
                // A subagent's first prompt is the Task prompt: its task, not a turn.
                session.task = Some(mapping::bounded(text.trim(), MAX_SUMMARY_CHARS));
            } else {
                let role = if kind == "user" { "user" } else { "assistant" };
                let mut op = mapping::message(op_id, role, &text, None);
                op.at = at.clone();
                session.operations.push(op);
            }
        }
        let answers = blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            .count();
        for b in &blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("tool_use") => self.tool_use(si, &sid, b, cwd.clone(), at.clone()),
                Some("tool_result") => {
                    // The line's structured result belongs to its one tool result.
                    let structured = if answers == 1 {
                        v.get("toolUseResult")
                    } else {
                        None
                    };
                    self.tool_result(b, structured);
                }
                _ => {}
            }
        }
    }

    fn tool_use(
        &mut self,
        si: usize,
        sid: &str,
        b: &Value,
        cwd: Option<String>,
        at: Option<String>,
    ) {
        let (Some(tid), Some(name)) = (str_of(b, "id"), str_of(b, "name")) else {
            return;
        };
        let input = b.get("input").cloned().unwrap_or(Value::Null);
        let id = mapping::operation_id(sid, tid);
        let mut op = mapping::tool_use(&mapping::ToolUse {
            id: Some(id.clone()),
            name,
            input: &input,
            response: None,
            error: None,
            cwd: cwd.as_deref(),
        });
        op.at = at;
        let session = &mut self.out.sessions[si];
        session.operations.push(op);
        let spawn = matches!(name, "Task" | "Agent").then(|| {
            self.out.spawns.push(Spawn {
                session: sid.to_string(),
                operation_id: id,
                agent_id: None,
                prompt: input
                    .get("prompt")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                subagent_type: input
                    .get("subagent_type")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            });
            self.out.spawns.len() - 1
        });
        self.tools.insert(
            tid.to_string(),
            PendingTool {
                session: si,
                op: session.operations.len() - 1,
                name: name.to_string(),
                input,
                cwd,
                spawn,
            },
        );
    }

    /// Rewrites the tool use a result answers with its outcome.
    fn tool_result(&mut self, b: &Value, structured: Option<&Value>) {
        let Some(t) = str_of(b, "tool_use_id").and_then(|id| self.tools.remove(id)) else {
            return;
        };
        let content = result_text(b.get("content"));
        let failed = b.get("is_error").and_then(Value::as_bool) == Some(true);
        // A failed call's `toolUseResult` is its error text; a successful one's the
        // structured result, which the mapping summarises per tool.
        let response = match structured {
            Some(r @ (Value::Object(_) | Value::Array(_))) if !failed => r.clone(),
            _ => Value::String(content.clone()),
        };
        if let (Some(s), Some(agent)) = (
            t.spawn,
            structured
                .and_then(|r| r.get("agentId"))
                .and_then(Value::as_str),
        ) {
            self.out.spawns[s].agent_id = Some(agent.to_string());
        }
        let target = &mut self.out.sessions[t.session].operations[t.op];
        let at = target.at.clone();
        let mut op = mapping::tool_use(&mapping::ToolUse {
            id: target.id.clone(),
            name: &t.name,
            input: &t.input,
            response: (!failed).then_some(&response),
            error: failed.then_some(content.as_str()),
            cwd: t.cwd.as_deref(),
        });
        op.at = at;
        *target = op;
    }

    fn finish(mut self) -> Transcript {
        for (leaf, summary) in std::mem::take(&mut self.summaries) {
            if let Some(&si) = self.owner_of_uuid.get(&leaf) {
                self.out.sessions[si].summary = Some(summary);
            }
        }
        // A queued prompt the conversation repeats was delivered as a turn of its own.
        for (si, pos, text, at) in std::mem::take(&mut self.queued).into_iter().rev() {
            let session = &mut self.out.sessions[si];
            let kept = mapping::message(None, "user", &text, None);
            let repeated = session
                .operations
                .iter()
                .any(|o| o.role.as_deref() == Some("user") && o.content == kept.content);
            if repeated {
                continue;
            }
            let key = format!("queued-{}", at.as_deref().unwrap_or(&text));
            let mut op = mapping::message(
                Some(mapping::operation_id(&session.id, &key)),
                "user",
                &text,
                None,
            );
            op.at = at;
            session
                .operations
                .insert(pos.min(session.operations.len()), op);
        }
        self.out
    }
}

fn timestamp(v: &Value) -> Option<String> {
    str_of(v, "timestamp")
        .filter(|t| validate::instant("timestamp", Some(t), 0).is_ok())
        .map(str::to_string)
}

/// The text of a `tool_result` content (a string or text blocks).
fn result_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

impl Session {
    /// What `POST /v1/sessions` is sent for this session in `project`.
    pub fn start(&self, project: &str) -> SessionStart {
        SessionStart {
            project: project.to_string(),
            session_id: Some(self.id.clone()),
            agent: Some(mapping::AGENT.into()),
            task: self.task.clone(),
            continues: None,
            cwd: self.cwd.clone(),
            parent: self.parent.clone(),
            spawned_by: self.spawned_by.clone(),
            agent_type: self.agent_type.clone(),
            at: self.first_at.clone(),
        }
    }

    /// What `POST /v1/sessions/{id}/close` is sent when the session is closed on import.
    /// Without a `summary` line, cairn derives the summary from what the session holds.
    pub fn close(&self) -> SessionClose {
        SessionClose {
            summary: self.summary.clone(),
            at: self.last_at.clone(),
            ..Default::default()
        }
    }
}

/// The earlier of two RFC 3339 times (either when the other is absent or unreadable).
fn earlier(a: Option<String>, b: Option<String>) -> Option<String> {
    let at = |t: &Option<String>| {
        t.as_deref()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
    };
    match (at(&a), at(&b)) {
        (Some(x), Some(y)) if y < x => b,
        (None, Some(_)) => b,
        _ => a.or(b),
    }
}

/// The sessions of several transcripts, merged by id (a session resumed in another file, a
/// 2.1.x subagent file beside its parent), each subagent linked to the tool use that
/// launched it; parents come before their children, and a subagent that only warmed the
/// cache (a `Warmup` prompt) is dropped.
pub fn assemble(transcripts: Vec<Transcript>) -> Vec<Session> {
    let mut spawns = Vec::new();
    let mut map: BTreeMap<String, Session> = BTreeMap::new();
    for t in transcripts {
        spawns.extend(t.spawns);
        for s in t.sessions {
            match map.get_mut(&s.id) {
                Some(existing) => {
                    existing.operations.extend(s.operations);
                    existing.summary = s.summary.or(existing.summary.take());
                    existing.first_at = earlier(existing.first_at.take(), s.first_at);
                    existing.last_at = s.last_at.or(existing.last_at.take());
                    existing.cwd = existing.cwd.take().or(s.cwd);
                    existing.task = existing.task.take().or(s.task);
                    existing.parent = existing.parent.take().or(s.parent);
                    existing.agent_id = existing.agent_id.take().or(s.agent_id);
                }
                None => {
                    map.insert(s.id.clone(), s);
                }
            }
        }
    }
    map.retain(|_, s| !(s.parent.is_some() && s.task.as_deref() == Some("Warmup")));
    for s in map.values_mut() {
        let Some(parent) = s.parent.clone() else {
            continue;
        };
        // 2.1.x: a subagent launched by another subagent carries the root's `sessionId`; the
        // call that launched it is in that subagent's file, which then is its parent.
        let nested = format!("{parent}:agent-");
        let by_agent = spawns.iter().find(|sp| {
            (sp.session == parent || sp.session.starts_with(&nested))
                && sp.agent_id.is_some()
                && sp.agent_id == s.agent_id
                && sp.session != s.id
        });
        let by_prompt = || {
            let task = s.task.as_deref()?;
            spawns.iter().find(|sp| {
                sp.session == parent
                    && sp.agent_id.is_none()
                    && sp
                        .prompt
                        .as_deref()
                        .is_some_and(|p| mapping::bounded(p.trim(), MAX_SUMMARY_CHARS) == task)
            })
        };
        if let Some(sp) = by_agent.or_else(by_prompt) {
            s.parent = Some(sp.session.clone());
            s.spawned_by = Some(sp.operation_id.clone());
            s.agent_type = sp
                .subagent_type
                .as_deref()
                .map(|t| mapping::bounded(t, 100));
        }
    }
    let (mut roots, children): (Vec<Session>, Vec<Session>) =
        map.into_values().partition(|s| s.parent.is_none());
    roots.extend(children);
    roots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_resumed_in_two_files_begins_at_the_earlier() {
        let t = |s: &str| Some(s.to_string());
        let (a, b) = ("2025-06-02T09:00:00Z", "2025-06-02T05:00:00-06:00");
        assert_eq!(earlier(t(a), t(b)), t(a), "an offset is read as one");
        assert_eq!(earlier(t(b), t(a)), t(a));
        assert_eq!(earlier(None, t(b)), t(b));
        assert_eq!(earlier(t("not a time"), t(b)), t(b));
        assert_eq!(earlier(t(a), None), t(a));
    }

    /// What `cairn import` sends must be accepted whole: lines the API would refuse are bad
    /// lines, fields it would refuse are bounded or dropped.
    #[test]
    fn sessions_hold_only_what_the_api_accepts() {
        let line = |sid: &str, extra: serde_json::Value| {
            let mut v = serde_json::json!({"type": "user", "sessionId": sid, "uuid": "u1",
                "message": {"role": "user", "content": "hi"}});
            v.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            v.to_string()
        };
        let long = "x".repeat(20_000);
        let lines = [
            line("bad\u{1}id", serde_json::json!({})),
            line(&"s".repeat(300), serde_json::json!({})),
            line(
                "s1",
                serde_json::json!({"cwd": long, "timestamp": "yesterday"}),
            ),
            serde_json::json!({"type": "summary", "summary": long, "leafUuid": "u1"}).to_string(),
        ];
        let t = parse(lines.join("\n").as_bytes());
        let ids: Vec<usize> = t.sessions.iter().map(|s| s.id.len()).collect();
        assert_eq!((ids, t.bad_lines), (vec![2], 2));
        let s = &t.sessions[0];
        let start = crate::domain::validate::session_start(&s.start("p"), 0);
        assert!(start.is_ok(), "{:?}", start.err());
        let close = crate::domain::validate::session_close(s.id.clone(), "p".into(), &s.close(), 0);
        assert!(close.is_ok(), "{:?}", close.err());
        for o in &s.operations {
            let checked = crate::domain::validate::operation("o", o, None, 0);
            assert!(checked.is_ok(), "{:?}", checked.err());
        }
    }

    #[test]
    fn rebuilds_turns_tool_uses_results_and_summaries() {
        let lines = [
            r#"{"type":"summary","summary":"Added coupons","leafUuid":"u3"}"#,
            r#"{"type":"user","sessionId":"s1","uuid":"u1","timestamp":"2025-06-01T10:00:00Z","cwd":"/r","message":{"role":"user","content":"add coupons API_KEY=supersecret1"}}"#,
            "not json",
            r#"{"type":"assistant","sessionId":"s1","uuid":"u2","timestamp":"2025-06-01T10:00:05Z","cwd":"/r","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"Edit","input":{"file_path":"/r/a.rs"}}]}}"#,
            r#"{"type":"user","sessionId":"s1","uuid":"u3","timestamp":"2025-06-01T10:00:07Z","cwd":"/r","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"String not found","is_error":true}]}}"#,
        ];
        let t = parse(lines.join("\n").as_bytes());
        assert_eq!((t.lines, t.bad_lines), (5, 1));
        assert_eq!(t.sessions.len(), 1);
        let s = &t.sessions[0];
        assert_eq!(s.summary.as_deref(), Some("Added coupons"));
        let kinds: Vec<&str> = s.operations.iter().map(|o| o.kind.as_str()).collect();
        assert_eq!(kinds, ["message", "message", "tool_call"]);
        assert!(!s.operations[0]
            .content
            .as_ref()
            .unwrap()
            .contains("supersecret1"));
        let edit = &s.operations[2];
        assert_eq!(edit.status.as_deref(), Some("failed"));
        assert_eq!(edit.id.as_deref(), Some("s1/toolu_1"));
        assert_eq!(edit.at.as_deref(), Some("2025-06-01T10:00:05Z"));
    }

    #[test]
    fn every_result_of_a_line_is_matched_and_tool_use_result_is_the_response() {
        let lines = [
            r#"{"type":"assistant","sessionId":"s","uuid":"a1","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/r/a"}},{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"false"}}]}}"#,
            r#"{"type":"user","sessionId":"s","uuid":"u1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"one"},{"type":"tool_result","tool_use_id":"t2","content":"boom","is_error":true}]}}"#,
            r#"{"type":"assistant","sessionId":"s","uuid":"a2","message":{"role":"assistant","content":[{"type":"tool_use","id":"t3","name":"Read","input":{"file_path":"/r/b"}}]}}"#,
            r#"{"type":"user","sessionId":"s","uuid":"u2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t3","content":"     1→x"}]},"toolUseResult":{"type":"text","file":{"filePath":"/r/b","numLines":7,"totalLines":9}}}"#,
        ];
        let t = parse(lines.join("\n").as_bytes());
        let ops = &t.sessions[0].operations;
        assert_eq!(ops.len(), 3);
        let response = |i: usize| ops[i].context.as_ref().unwrap()["response"].clone();
        assert_eq!(response(0), "one");
        assert_eq!(ops[1].status.as_deref(), Some("failed"));
        assert_eq!(response(2), "7 lines of 9");
    }

    #[test]
    fn wrappers_meta_and_compaction_are_not_user_turns() {
        let user = |uuid: &str, extra: &str, content: &str| {
            format!(
                r#"{{"type":"user","sessionId":"s","uuid":"{uuid}",{extra}"message":{{"role":"user","content":{}}}}}"#,
                serde_json::json!(content)
            )
        };
        let lines = [
            user("u1", "", "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>"),
            user("u2", "", "<local-command-stdout></local-command-stdout>"),
            user("u3", r#""isMeta":true,"#, "Caveat: local commands"),
            user("u4", "", "[Request interrupted by user for tool use]"),
            r#"{"type":"system","subtype":"compact_boundary","sessionId":"s","compactMetadata":{"trigger":"auto","preTokens":1}}"#.into(),
            user("u5", r#""isCompactSummary":true,"#, "This session is being continued. Summary: coupons done."),
            user("u6", "", "and now the tests"),
            r#"{"type":"file-history-snapshot","messageId":"m","snapshot":{}}"#.into(),
            r#"{"type":"progress","sessionId":"s","data":{"type":"hook_progress"}}"#.into(),
            r#"{"type":"system","subtype":"turn_duration","sessionId":"s"}"#.into(),
        ];
        let t = parse(lines.join("\n").as_bytes());
        let ops = &t.sessions[0].operations;
        assert_eq!(ops.len(), 2, "{ops:?}");
        assert_eq!(ops[0].tool.as_deref(), Some(mapping::COMPACTION_TOOL));
        assert_eq!(ops[0].target.as_deref(), Some("auto"));
        assert!(ops[0].content.as_deref().unwrap().contains("coupons done"));
        assert_eq!(ops[1].content.as_deref(), Some("and now the tests"));
        assert_eq!(t.skipped["file-history-snapshot"], 1);
        assert_eq!(t.skipped["progress"], 1);
        assert_eq!(t.skipped["system/turn_duration"], 1);
    }

    #[test]
    fn inline_sidechains_are_children_linked_by_their_prompt() {
        let lines = [
            r#"{"type":"assistant","sessionId":"s","uuid":"a1","message":{"role":"assistant","content":[{"type":"tool_use","id":"task1","name":"Task","input":{"description":"look","prompt":"Find the parser","subagent_type":"general-purpose"}}]}}"#,
            r#"{"type":"user","isSidechain":true,"parentUuid":null,"sessionId":"s","uuid":"c1","message":{"role":"user","content":"Find the parser"}}"#,
            r#"{"type":"assistant","isSidechain":true,"parentUuid":"c1","sessionId":"s","uuid":"c2","message":{"role":"assistant","content":[{"type":"tool_use","id":"g1","name":"Grep","input":{"pattern":"fn parse"}}]}}"#,
            r#"{"type":"user","isSidechain":true,"parentUuid":"c2","sessionId":"s","uuid":"c3","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"g1","content":"src/p.rs"}]}}"#,
            r#"{"type":"user","sessionId":"s","uuid":"u2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"task1","content":[{"type":"text","text":"found it"}]}]},"toolUseResult":{"content":[{"type":"text","text":"found it"}],"totalToolUseCount":1}}"#,
        ];
        let sessions = assemble(vec![parse(lines.join("\n").as_bytes())]);
        assert_eq!(sessions.len(), 2);
        let (main, child) = (&sessions[0], &sessions[1]);
        assert_eq!(main.id, "s");
        assert_eq!(main.operations.len(), 1);
        assert_eq!(child.id, crate::claude::child_session_id("s", "c1"));
        assert_eq!(child.parent.as_deref(), Some("s"));
        assert_eq!(child.task.as_deref(), Some("Find the parser"));
        assert_eq!(child.spawned_by.as_deref(), Some("s/task1"));
        assert_eq!(child.agent_type.as_deref(), Some("general-purpose"));
        let kinds: Vec<&str> = child.operations.iter().map(|o| o.kind.as_str()).collect();
        assert_eq!(kinds, ["search"]);
    }

    #[test]
    fn subagent_files_are_children_and_compaction_runs_are_not_sessions() {
        let main = [
            r#"{"type":"assistant","sessionId":"s","uuid":"a1","message":{"role":"assistant","content":[{"type":"tool_use","id":"task1","name":"Task","input":{"prompt":"Survey","subagent_type":"Explore"}}]}}"#,
            r#"{"type":"progress","sessionId":"s","parentToolUseID":"task1","data":{"type":"agent_progress","agentId":"a77"}}"#,
            r#"{"type":"queue-operation","operation":"enqueue","sessionId":"s","timestamp":"2026-02-11T20:51:12.726Z","content":"check again"}"#,
            r#"{"type":"user","sessionId":"s","uuid":"u2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"task1","content":"done"}]},"toolUseResult":{"status":"completed","agentId":"a77","content":[]}}"#,
        ];
        let agent = [
            r#"{"type":"user","isSidechain":true,"agentId":"a77","sessionId":"s","uuid":"x1","message":{"role":"user","content":"Survey"}}"#,
            r#"{"type":"assistant","isSidechain":true,"agentId":"a77","sessionId":"s","uuid":"x2","message":{"role":"assistant","content":"Surveyed."}}"#,
        ];
        let compact = [
            r#"{"type":"user","isSidechain":true,"agentId":"acompact-1f","sessionId":"s","uuid":"k1","message":{"role":"user","content":"summarise"}}"#,
        ];
        let files = [&main[..], &agent[..], &compact[..]].map(|f| parse(f.join("\n").as_bytes()));
        assert_eq!(files[2].skipped["compaction-run"], 1);
        let sessions = assemble(files.into_iter().collect());
        assert_eq!(sessions.len(), 2, "{sessions:?}");
        let kinds: Vec<(&str, Option<&str>)> = sessions[0]
            .operations
            .iter()
            .map(|o| (o.kind.as_str(), o.content.as_deref()))
            .collect();
        assert_eq!(
            kinds,
            [("tool_call", None), ("message", Some("check again"))]
        );
        let child = &sessions[1];
        assert_eq!(child.id, crate::claude::child_session_id("s", "a77"));
        assert_eq!(child.spawned_by.as_deref(), Some("s/task1"));
        assert_eq!(child.agent_type.as_deref(), Some("Explore"));
        assert_eq!(child.task.as_deref(), Some("Survey"));
        assert_eq!(child.operations.len(), 1);
    }

    #[test]
    fn a_subagent_launched_by_a_subagent_is_its_child() {
        let main = [
            r#"{"type":"assistant","sessionId":"s","uuid":"a1","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Agent","input":{"prompt":"Plan"}}]}}"#,
            r#"{"type":"user","sessionId":"s","uuid":"u1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},"toolUseResult":{"agentId":"a1x","status":"completed","content":[]}}"#,
        ];
        let first = [
            r#"{"type":"user","isSidechain":true,"agentId":"a1x","sessionId":"s","uuid":"x1","message":{"role":"user","content":"Plan"}}"#,
            r#"{"type":"assistant","isSidechain":true,"agentId":"a1x","sessionId":"s","uuid":"x2","message":{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Agent","input":{"prompt":"Look"}}]}}"#,
            r#"{"type":"user","isSidechain":true,"agentId":"a1x","sessionId":"s","uuid":"x3","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"seen"}]},"toolUseResult":{"agentId":"a2y","status":"completed","content":[]}}"#,
        ];
        let second = [
            r#"{"type":"user","isSidechain":true,"agentId":"a2y","sessionId":"s","uuid":"y1","message":{"role":"user","content":"Look"}}"#,
        ];
        let sessions = assemble(
            [&main[..], &first[..], &second[..]]
                .map(|f| parse(f.join("\n").as_bytes()))
                .into_iter()
                .collect(),
        );
        let first_id = crate::claude::child_session_id("s", "a1x");
        let second = sessions
            .iter()
            .find(|s| s.id == crate::claude::child_session_id("s", "a2y"))
            .unwrap();
        assert_eq!(second.parent.as_deref(), Some(first_id.as_str()));
        assert_eq!(
            second.spawned_by,
            Some(mapping::operation_id(&first_id, "t2"))
        );
    }
}
