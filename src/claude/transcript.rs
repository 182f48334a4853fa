//! Claude Code transcripts (`~/.claude/projects/<dir>/<session>.jsonl`): one JSON object per
//! line. `user` and `assistant` lines carry `sessionId`, `uuid`, `timestamp`, `cwd` and a
//! `message` whose `content` is a string or a list of blocks (`text`, `tool_use`,
//! `tool_result`, `thinking`, …); `summary` lines name the session they sum up through
//! `leafUuid`. [`parse`] rebuilds each session's turns, tool uses (through the same
//! [`mapping::tool_use`] as hooks, with the matching `tool_result` as response) and todos,
//! with their timestamps. Lines that are not JSON objects, or whose `sessionId` capture would
//! refuse, are counted, never fatal; other line types are skipped. Everything passes through
//! [`redact`] first, and what a session holds is what the API accepts: timestamps that are
//! not RFC 3339 are dropped, working directories and summaries bounded.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;

use serde_json::Value;

use super::{mapping, redact};
use crate::domain::record::{SessionClose, SessionStart};
use crate::domain::{limits::MAX_RATIONALE_CHARS, operation::OperationInput, validate};

/// A session rebuilt from transcript lines.
#[derive(Debug, Default)]
pub struct Session {
    pub id: String,
    pub cwd: Option<String>,
    pub summary: Option<String>,
    /// RFC 3339 of the last line.
    pub last_at: Option<String>,
    pub operations: Vec<OperationInput>,
}

#[derive(Debug, Default)]
pub struct Transcript {
    /// Sessions in order of first appearance.
    pub sessions: Vec<Session>,
    pub lines: usize,
    pub bad_lines: usize,
}

struct PendingTool {
    session: usize,
    op: usize,
    name: String,
    input: Value,
    cwd: Option<String>,
}

/// Parses one transcript. Never fails on content: unreadable lines are counted.
pub fn parse(reader: impl BufRead) -> Transcript {
    let mut out = Transcript::default();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut owner_of_uuid: HashMap<String, usize> = HashMap::new();
    let mut summaries: Vec<(String, String)> = Vec::new();
    let mut tools: HashMap<String, PendingTool> = HashMap::new();
    for line in reader.lines() {
        let Ok(line) = line else {
            out.bad_lines += 1;
            continue;
        };
        if line.trim().is_empty() {
            continue;
        }
        out.lines += 1;
        let mut v: Value = match serde_json::from_str(&line) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                out.bad_lines += 1;
                continue;
            }
        };
        redact::value(&mut v);
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "summary" {
            if let (Some(s), Some(leaf)) = (str_of(&v, "summary"), str_of(&v, "leafUuid")) {
                summaries.push((leaf.to_string(), mapping::bounded(s, MAX_RATIONALE_CHARS)));
            }
            continue;
        }
        if kind != "user" && kind != "assistant" {
            continue;
        }
        let sid = str_of(&v, "sessionId").and_then(|s| validate::id("sessionId", s).ok());
        let Some(sid) = sid else {
            out.bad_lines += 1;
            continue;
        };
        let at = str_of(&v, "timestamp")
            .filter(|t| validate::instant("timestamp", Some(t), 0).is_ok())
            .map(str::to_string);
        let cwd = mapping::working_dir(str_of(&v, "cwd"));
        let uuid = str_of(&v, "uuid").map(str::to_string);
        let si = *index.entry(sid.clone()).or_insert_with(|| {
            out.sessions.push(Session {
                id: sid.clone(),
                ..Default::default()
            });
            out.sessions.len() - 1
        });
        let session = &mut out.sessions[si];
        if session.cwd.is_none() {
            session.cwd = cwd.clone();
        }
        if at.is_some() {
            session.last_at = at.clone();
        }
        if let Some(u) = &uuid {
            owner_of_uuid.insert(u.clone(), si);
        }
        let Some(message) = v.get("message") else {
            continue;
        };
        let role = if kind == "user" { "user" } else { "assistant" };
        let blocks: Vec<Value> = match message.get("content") {
            Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
            Some(Value::Array(items)) => items.clone(),
            _ => Vec::new(),
        };
        let meta = v.get("isMeta").and_then(Value::as_bool) == Some(true);
        let text: Vec<&str> = blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .filter(|t| !t.trim().is_empty())
            .collect();
        if !text.is_empty() && !meta {
            let id = uuid.as_deref().map(|u| mapping::operation_id(&sid, u));
            let mut op = mapping::message(id, role, &text.join("\n\n"), None);
            op.at = at.clone();
            session.operations.push(op);
        }
        for b in &blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("tool_use") => {
                    let (Some(tid), Some(name)) = (str_of(b, "id"), str_of(b, "name")) else {
                        continue;
                    };
                    let input = b.get("input").cloned().unwrap_or(Value::Null);
                    let mut op = mapping::tool_use(&mapping::ToolUse {
                        id: Some(mapping::operation_id(&sid, tid)),
                        name,
                        input: &input,
                        response: None,
                        error: None,
                        cwd: cwd.as_deref(),
                    });
                    op.at = at.clone();
                    session.operations.push(op);
                    tools.insert(
                        tid.to_string(),
                        PendingTool {
                            session: si,
                            op: session.operations.len() - 1,
                            name: name.to_string(),
                            input,
                            cwd: cwd.clone(),
                        },
                    );
                }
                Some("tool_result") => {
                    let Some(t) = str_of(b, "tool_use_id").and_then(|id| tools.remove(id)) else {
                        continue;
                    };
                    let content = result_text(b.get("content"));
                    let failed = b.get("is_error").and_then(Value::as_bool) == Some(true);
                    let target = &mut out.sessions[t.session].operations[t.op];
                    let at = target.at.clone();
                    let response = Value::String(content.clone());
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
                    break;
                }
                _ => {}
            }
        }
    }
    for (leaf, summary) in summaries {
        if let Some(&si) = owner_of_uuid.get(&leaf) {
            out.sessions[si].summary = Some(summary);
        }
    }
    out
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
            task: None,
            continues: None,
            cwd: self.cwd.clone(),
            parent: None,
            spawned_by: None,
            agent_type: None,
        }
    }

    /// What `POST /v1/sessions/{id}/close` is sent when the session is closed on import.
    pub fn close(&self) -> SessionClose {
        SessionClose {
            summary: self.summary.clone(),
            ..Default::default()
        }
    }
}

/// Groups operations of `sessions` by id (for callers that merge several files).
pub fn by_id(sessions: Vec<Session>) -> BTreeMap<String, Session> {
    let mut map: BTreeMap<String, Session> = BTreeMap::new();
    for s in sessions {
        match map.get_mut(&s.id) {
            Some(existing) => {
                existing.operations.extend(s.operations);
                existing.summary = s.summary.or(existing.summary.take());
                existing.last_at = s.last_at.or(existing.last_at.take());
                existing.cwd = existing.cwd.take().or(s.cwd);
            }
            None => {
                map.insert(s.id.clone(), s);
            }
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
