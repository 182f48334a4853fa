//! The one mapping from a Claude Code hook event to cairn capture calls. [`plan`] is pure
//! (event in, session start / operations / close out); [`apply`] hands the plan to the
//! capture service, the same write path as `POST /v1/sessions…`.
//!
//! Tool uses: Read → `read`; Write/Edit/MultiEdit/NotebookEdit → `write` with
//! `files_modified` and what it wrote as `content` (bounded, [`WRITTEN_CHARS`]); Bash → `tool_call`; Grep/Glob/WebSearch/WebFetch → `search`; TodoWrite →
//! `todo`; Task and anything else → `tool_call`. `tool_use_id` is the operation id, so Pre- and
//! PostToolUse of one call, or a resent event, store one node. What the call answered is
//! digested per tool and bounded ([`outcome`]), never stored whole.

use serde_json::{json, Value};

use super::events::{EventKind, HookEvent};
use super::outcome::{self, first_line};
use super::redact;
use crate::capture::{Applied, Capture};
use crate::domain::limits::{
    MAX_ALTERNATIVES, MAX_CHOICE_CHARS, MAX_CONTENT_CHARS, MAX_PATH_CHARS, MAX_RATIONALE_CHARS,
    MAX_SUBJECT_CHARS, MAX_SUMMARY_CHARS, MAX_TARGET_CHARS, MAX_TODOS, MAX_TODO_CHARS,
};
use crate::domain::operation::{OperationInput, Todo};
use crate::domain::record::{DecisionInput, SessionClose, SessionStart};
use crate::domain::validate;
use crate::error::{ApiError, ApiResult, Code};

/// The agent name sessions started from hooks and transcripts carry.
pub const AGENT: &str = "claude-code";
pub use super::outcome::RESPONSE_CHARS;
const SUMMARY_CHARS: usize = 300;
/// At most this much of what a file tool wrote is kept (the operation's `content`).
pub const WRITTEN_CHARS: usize = 1_000;

/// What the hook's answer carries, for the events whose answer Claude Code reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Nothing (`{}`).
    Nothing,
    /// SessionStart: the handover as `additionalContext` (what fits `source`).
    Handover { source: String },
    /// PreToolUse of a file tool: what is known about the file (standing decisions, active
    /// beliefs), once per file per session.
    FileContext { path: String },
    /// UserPromptSubmit: an answer of its own (`hookSpecificOutput` for the prompt).
    Prompt,
}

/// What one event asks of capture.
#[derive(Debug)]
pub struct Plan {
    /// The session the event belongs to: a subagent's events go to its child session.
    pub session_id: String,
    /// Always present: starting is idempotent, so an event whose SessionStart was missed
    /// still lands in a session.
    pub start: SessionStart,
    /// Child sessions this event tells more about (a finished Task/Agent call names the
    /// subagent it launched): started, or given their launching operation and task.
    pub children: Vec<SessionStart>,
    pub operations: Vec<OperationInput>,
    /// Decisions the user made in answer to the agent's questions (AskUserQuestion).
    pub decisions: Vec<DecisionInput>,
    pub close: Option<SessionClose>,
    pub reply: Reply,
}

/// Tools whose PreToolUse is answered with what is known about the file they touch.
pub const FILE_TOOLS: [&str; 5] = ["Read", "Edit", "Write", "MultiEdit", "NotebookEdit"];

/// Maps a (redacted) event of `project` to a plan. Fails only without a usable `session_id`.
pub fn plan(event: &HookEvent, project: &str) -> ApiResult<Plan> {
    let main_id = validate::id("session_id", event.session_id.as_deref().unwrap_or(""))?;
    let cwd = working_dir(event.cwd.as_deref());
    let subagent = event.subagent().map(|a| bounded(a.trim(), 200));
    let session_id = match &subagent {
        Some(agent) => validate::id("agent_id", &super::child_session_id(&main_id, agent))?,
        None => main_id.clone(),
    };
    let start = SessionStart {
        project: project.to_string(),
        session_id: Some(session_id.clone()),
        agent: Some(AGENT.into()),
        task: None,
        continues: None,
        cwd: cwd.clone(),
        parent: subagent.as_ref().map(|_| main_id.clone()),
        spawned_by: None,
        agent_type: subagent
            .as_ref()
            .and(event.agent_type.as_deref())
            .map(|a| bounded(a, 100)),
        at: None,
    };
    let mut plan = Plan {
        session_id,
        start,
        children: Vec::new(),
        operations: Vec::new(),
        decisions: Vec::new(),
        close: None,
        reply: Reply::Nothing,
    };
    let event_id = || {
        event
            .cairn_event_id
            .clone()
            .filter(|s| validate::id("id", s).is_ok())
    };
    let marker = |tool: &str, target: Option<&str>, summary: String| OperationInput {
        id: event_id(),
        tool: Some(tool.into()),
        target: target
            .filter(|t| !t.trim().is_empty())
            .map(|t| bounded(t, MAX_TARGET_CHARS)),
        summary: Some(bounded(&summary, SUMMARY_CHARS)),
        ..op("tool_call")
    };
    match event.kind() {
        EventKind::SessionStart => {
            plan.reply = Reply::Handover {
                source: bounded(event.source.as_deref().unwrap_or("startup"), 32),
            }
        }
        EventKind::UserPromptSubmit => {
            if let Some(p) = event.prompt.as_deref().filter(|p| !p.trim().is_empty()) {
                plan.operations
                    .push(message(event_id(), "user", p, turn_context(event)));
            }
            plan.reply = Reply::Prompt;
        }
        // A question, not a record: the PostToolUse (or its failure) is the record, with the
        // outcome; storing the call here first would keep the node without it.
        EventKind::PreToolUse => {
            let tool = event.tool_name.as_deref().unwrap_or("");
            let key = if tool == "NotebookEdit" {
                "notebook_path"
            } else {
                "file_path"
            };
            if let Some(path) = FILE_TOOLS
                .contains(&tool)
                .then(|| event.input_str(key))
                .flatten()
                .filter(|p| validate::path(key, p).is_ok())
            {
                plan.reply = Reply::FileContext {
                    path: path.to_string(),
                };
            }
        }
        EventKind::PostToolUse | EventKind::PostToolUseFailure => {
            let failed = event.kind() == EventKind::PostToolUseFailure;
            let o = tool_operation(event, failed, event_id());
            if let Some(child) = launched_child(event, project, &main_id, &plan, o.id.as_deref()) {
                plan.children.push(child);
            }
            if !failed && event.tool_name.as_deref() == Some("AskUserQuestion") {
                plan.decisions =
                    user_decisions(&event.tool_input, &event.tool_response, project, &plan);
            }
            plan.operations.push(o);
        }
        EventKind::PostToolBatch => {
            for call in &event.tool_calls {
                let Some(id) = call.tool_use_id.as_deref() else {
                    continue;
                };
                let o = tool_use(&ToolUse {
                    id: Some(operation_id(&main_id, id)),
                    name: call.tool_name.as_deref().unwrap_or("unknown"),
                    input: &call.tool_input,
                    response: (!call.tool_response.is_null()).then_some(&call.tool_response),
                    error: None,
                    cwd: event.cwd.as_deref(),
                });
                plan.operations
                    .push(with_context(o, turn_context(event).unwrap_or(Value::Null)));
            }
        }
        EventKind::PermissionDenied => {
            let mut o = tool_operation(event, true, event_id());
            o.summary = Some(bounded(
                &format!(
                    "{} permission denied: {}",
                    event.tool_name.as_deref().unwrap_or("a tool"),
                    event.reason.as_deref().unwrap_or("no reason given")
                ),
                SUMMARY_CHARS,
            ));
            plan.operations.push(o);
        }
        EventKind::Stop | EventKind::SubagentStop => {
            let stop = event.kind() == EventKind::SubagentStop;
            if let Some(m) = event
                .last_assistant_message
                .as_deref()
                .filter(|m| !m.trim().is_empty())
            {
                let mut ctx = turn_context(event).unwrap_or_else(|| json!({}));
                if let Some(a) = event.agent_type.as_deref().filter(|_| stop) {
                    ctx["subagent"] = Value::String(bounded(a, 100));
                }
                if let Some(t) = event.agent_transcript_path.as_deref() {
                    ctx["transcript_path"] = Value::String(bounded(t, MAX_PATH_CHARS));
                }
                let ctx = (ctx != json!({})).then_some(ctx);
                plan.operations
                    .push(message(event_id(), "assistant", m, ctx));
            }
            if stop && subagent.is_some() {
                plan.close = Some(SessionClose {
                    summary: event
                        .last_assistant_message
                        .as_deref()
                        .filter(|m| !m.trim().is_empty())
                        .map(|m| bounded(m.trim(), MAX_SUMMARY_CHARS)),
                    next_steps: None,
                    status: Some("closed".into()),
                    at: None,
                });
            }
        }
        EventKind::StopFailure => {
            let error = event.error.as_deref().unwrap_or("unknown");
            let text = event
                .last_assistant_message
                .as_deref()
                .filter(|m| !m.trim().is_empty())
                .map_or_else(|| format!("(the turn failed: {error})"), str::to_string);
            let mut ctx = turn_context(event).unwrap_or_else(|| json!({}));
            ctx["error"] = Value::String(bounded(error, 100));
            if let Some(d) = event.error_details.as_deref() {
                ctx["error_details"] = Value::String(bounded(d, RESPONSE_CHARS));
            }
            let mut o = message(event_id(), "assistant", &text, Some(ctx));
            o.status = Some("failed".into());
            plan.operations.push(o);
        }
        // The child session is started (with its parent and agent type) like any event's.
        EventKind::SubagentStart => {}
        EventKind::SessionEnd => {
            plan.close = Some(SessionClose {
                summary: None,
                next_steps: None,
                status: Some("closed".into()),
                at: None,
            })
        }
        EventKind::PreCompact => {
            let trigger = bounded(event.trigger.as_deref().unwrap_or("manual"), 32);
            plan.operations.push(marker(
                "PreCompact",
                Some(&trigger),
                format!("context compacted ({trigger})"),
            ));
        }
        EventKind::PostCompact => plan.operations.push(compaction(
            event_id(),
            event.trigger.as_deref().unwrap_or("manual"),
            event.compact_summary.as_deref(),
        )),
        EventKind::TaskCreated | EventKind::TaskCompleted => {
            let status = if event.kind() == EventKind::TaskCompleted {
                "completed"
            } else {
                "pending"
            };
            if let Some(t) = task_item(
                event.task_id.as_deref(),
                event.task_subject.as_deref(),
                status,
            ) {
                plan.operations.push(OperationInput {
                    id: event_id(),
                    tool: Some(event.hook_event_name.clone()),
                    todos: Some(vec![t]),
                    context: turn_context(event),
                    ..op("todo")
                });
            }
        }
        EventKind::CwdChanged => {
            let new = event.new_cwd.as_deref().unwrap_or("");
            plan.operations.push(marker(
                "CwdChanged",
                Some(new),
                format!(
                    "working directory {} → {new}",
                    event.old_cwd.as_deref().unwrap_or("?")
                ),
            ));
        }
        EventKind::FileChanged => {
            let path = event.file_path.as_deref().unwrap_or("");
            let what = match event.event.as_deref() {
                Some("add") => "added",
                Some("unlink") => "deleted",
                _ => "changed",
            };
            plan.operations.push(marker(
                "FileChanged",
                Some(path),
                format!("file {what} outside the agent: {path}"),
            ));
        }
        EventKind::WorktreeCreate => {
            let name = event.name.as_deref().unwrap_or("");
            plan.operations.push(marker(
                "WorktreeCreate",
                Some(name),
                format!("worktree created: {name}"),
            ));
        }
        EventKind::WorktreeRemove => {
            let path = event.worktree_path.as_deref().unwrap_or("");
            plan.operations.push(marker(
                "WorktreeRemove",
                Some(path),
                format!("worktree removed: {path}"),
            ));
        }
        EventKind::Other => {}
    }
    Ok(plan)
}

/// The child session a finished Task/Agent call launched (its response names the subagent's
/// `agentId`): started with its parent, the launching operation and the Task prompt as its
/// task (the prompt is the subagent's task, never a user turn).
fn launched_child(
    event: &HookEvent,
    project: &str,
    main_id: &str,
    plan: &Plan,
    launch: Option<&str>,
) -> Option<SessionStart> {
    let tool = event.tool_name.as_deref()?;
    if !crate::graph::operations::LAUNCHING_TOOLS.contains(&tool) {
        return None;
    }
    let agent = event
        .tool_response
        .get("agentId")
        .and_then(Value::as_str)
        .filter(|a| !a.trim().is_empty())?;
    let id = super::child_session_id(main_id, &bounded(agent.trim(), 200));
    validate::id("agentId", &id).ok()?;
    let task = event
        .input_str("description")
        .or(event.input_str("prompt"))
        .map(|t| bounded(t.trim(), MAX_SUMMARY_CHARS));
    Some(SessionStart {
        project: project.to_string(),
        session_id: Some(id),
        agent: Some(AGENT.into()),
        task,
        continues: None,
        cwd: plan.start.cwd.clone(),
        parent: Some(plan.session_id.clone()),
        spawned_by: launch.map(str::to_string),
        agent_type: event
            .tool_response
            .get("agentType")
            .and_then(Value::as_str)
            .or(event.input_str("subagent_type"))
            .map(|a| bounded(a, 100)),
        at: None,
    })
}

/// The user's answers to AskUserQuestion as decisions: the question's header (else the
/// question) is the subject, the answer the choice, the other options the alternatives
/// rejected, and the chosen option's description the rationale.
fn user_decisions(
    input: &Value,
    response: &Value,
    project: &str,
    plan: &Plan,
) -> Vec<DecisionInput> {
    let Some(answers) = response.get("answers").and_then(Value::as_object) else {
        return Vec::new();
    };
    let questions = input
        .get("questions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    questions
        .filter_map(|q| {
            let question = q.get("question").and_then(Value::as_str)?.trim();
            let answer = answers.get(question).and_then(Value::as_str)?.trim();
            if question.is_empty() || answer.is_empty() {
                return None;
            }
            let chosen: Vec<&str> = answer.split(", ").map(str::trim).collect();
            let options: Vec<(&str, &str)> = q
                .get("options")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|o| {
                    let label = o.get("label").and_then(Value::as_str)?;
                    let why = o.get("description").and_then(Value::as_str).unwrap_or("");
                    Some((label, why))
                })
                .collect();
            let rationale = options
                .iter()
                .filter(|(l, w)| chosen.contains(l) && !w.trim().is_empty())
                .map(|(_, w)| w.trim())
                .collect::<Vec<_>>()
                .join("; ");
            let subject = q
                .get("header")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|h| !h.is_empty())
                .unwrap_or(question);
            Some(DecisionInput {
                project: project.to_string(),
                session_id: Some(plan.session_id.clone()),
                subject: bounded(subject, MAX_SUBJECT_CHARS),
                choice: bounded(answer, MAX_CHOICE_CHARS),
                rationale: bounded(
                    &if rationale.is_empty() {
                        format!("the user chose it when asked: {question}")
                    } else {
                        rationale
                    },
                    MAX_RATIONALE_CHARS,
                ),
                alternatives: Some(
                    options
                        .iter()
                        .filter(|(l, _)| !chosen.contains(l))
                        .map(|(l, _)| bounded(l, MAX_CHOICE_CHARS))
                        .take(MAX_ALTERNATIVES)
                        .collect(),
                ),
                confidence: Some(0.9),
                affects_beliefs: None,
                files: None,
            })
        })
        .take(4)
        .collect()
}

/// `prompt_id` and `duration_ms` of an event, for its operation's `context`.
fn turn_context(event: &HookEvent) -> Option<Value> {
    let mut ctx = serde_json::Map::new();
    if let Some(p) = event.prompt_id.as_deref().filter(|p| !p.is_empty()) {
        ctx.insert("prompt_id".into(), Value::String(bounded(p, 200)));
    }
    if let Some(d) = event.duration_ms.filter(|d| d.is_finite() && *d >= 0.0) {
        ctx.insert("duration_ms".into(), json!(d.round() as i64));
    }
    (!ctx.is_empty()).then_some(Value::Object(ctx))
}

/// Runs the plan through capture. Operations are queued (durable), not awaited in Neo4j.
pub async fn apply(capture: &Capture, plan: &Plan) -> ApiResult<Applied> {
    let project = plan.start.project.as_str();
    let (_, mut applied) = capture.start_session(&plan.start).await?;
    if !plan.operations.is_empty() {
        capture
            .add_operations(&plan.session_id, Some(project), &plan.operations, false)
            .await?;
        applied = Applied::Queued;
    }
    for child in &plan.children {
        capture.start_session(child).await?;
    }
    for d in &plan.decisions {
        capture.record_decision(d).await?;
    }
    if let Some(close) = &plan.close {
        applied = capture
            .close_session(&plan.session_id, Some(project), close)
            .await?;
    }
    Ok(applied)
}

/// Redacts the raw event and parses it. Unknown fields are ignored; a body that is not an
/// object is `invalid_event`.
pub fn parse(mut raw: Value) -> ApiResult<HookEvent> {
    if !raw.is_object() {
        return Err(ApiError::invalid(
            Code::InvalidEvent,
            "body",
            "a hook event is a JSON object",
        ));
    }
    redact::value(&mut raw);
    serde_json::from_value(raw).map_err(|e| {
        ApiError::invalid(
            Code::InvalidEvent,
            "body",
            format!("the hook event does not have the documented shape: {e}"),
        )
    })
}

/// The operation id of a tool use: `<session>/<tool_use_id>`. Scoped by session because
/// operation ids are global and a resumed Claude Code session repeats earlier tool uses in
/// its transcript; hashed when that would pass the id limit.
pub fn operation_id(session_id: &str, tool_use_id: &str) -> String {
    let id = format!("{session_id}/{tool_use_id}");
    if validate::id("id", &id).is_ok() && id.trim() == id {
        return id;
    }
    use sha2::Digest;
    format!("cc-{}", hex::encode(sha2::Sha256::digest(id.as_bytes())))
}

fn op(kind: &str) -> OperationInput {
    OperationInput {
        id: None,
        kind: kind.into(),
        target: None,
        summary: None,
        tool: None,
        files_read: None,
        files_modified: None,
        triggered_by: None,
        informs_belief: None,
        effect: None,
        weight: None,
        rationale: None,
        role: None,
        content: None,
        todos: None,
        status: None,
        context: None,
        at: None,
    }
}

/// A conversation turn.
pub fn message(
    id: Option<String>,
    role: &str,
    text: &str,
    context: Option<Value>,
) -> OperationInput {
    OperationInput {
        id,
        role: Some(role.into()),
        content: Some(bounded(text.trim(), MAX_CONTENT_CHARS)),
        context,
        ..op("message")
    }
}

pub use super::redact::{bounded, clip};
pub use crate::domain::operation::COMPACTION_TOOL;

/// A compaction with the summary Claude Code wrote (PostCompact's `compact_summary`, a
/// transcript's `isCompactSummary` line): the session's own recap, kept in `content` of a
/// `tool_call`, never as a user turn.
pub fn compaction(id: Option<String>, trigger: &str, summary: Option<&str>) -> OperationInput {
    let trigger = bounded(trigger, 32);
    let summary = summary
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(|c| bounded(c, MAX_CONTENT_CHARS));
    OperationInput {
        id,
        tool: Some(COMPACTION_TOOL.into()),
        summary: Some(if summary.is_some() {
            format!("context compacted ({trigger}); its summary kept")
        } else {
            format!("context compacted ({trigger})")
        }),
        target: Some(trigger),
        content: summary,
        ..op("tool_call")
    }
}

/// One tool use (from a hook event or a transcript `tool_use` block).
pub struct ToolUse<'a> {
    pub id: Option<String>,
    pub name: &'a str,
    pub input: &'a Value,
    pub response: Option<&'a Value>,
    pub error: Option<&'a str>,
    pub cwd: Option<&'a str>,
}

fn tool_operation(e: &HookEvent, failed: bool, fallback_id: Option<String>) -> OperationInput {
    let error = if failed {
        Some(e.error.as_deref().unwrap_or("the tool failed"))
    } else {
        None
    };
    let response = (!e.tool_response.is_null()).then_some(&e.tool_response);
    let o = tool_use(&ToolUse {
        id: e
            .tool_use_id
            .as_deref()
            .zip(e.session_id.as_deref())
            .map(|(t, s)| operation_id(s, t))
            .or(fallback_id),
        name: e.tool_name.as_deref().unwrap_or("unknown"),
        input: &e.tool_input,
        response,
        error,
        cwd: e.cwd.as_deref(),
    });
    let mut extra = turn_context(e).unwrap_or_else(|| json!({}));
    if let Some(source) = e.mcp_server.as_ref().and_then(|m| m.source.as_deref()) {
        extra["mcp_source"] = Value::String(bounded(source, 64));
    }
    with_context(o, extra)
}

/// `o` with the fields of `extra` (an object) added to its `context`.
fn with_context(mut o: OperationInput, extra: Value) -> OperationInput {
    let Value::Object(extra) = extra else {
        return o;
    };
    if extra.is_empty() {
        return o;
    }
    let mut ctx = match o.context.take() {
        Some(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    ctx.extend(extra);
    o.context = Some(Value::Object(ctx));
    o
}

/// `(server, tool)` of an MCP tool name, `mcp__<server>__<tool>`.
pub fn mcp_names(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix("mcp__")?;
    let (server, tool) = rest.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

/// A todo of Claude Code's task list (TaskCreate / TaskUpdate, TaskCreated / TaskCompleted):
/// an update of one item, folded into the session's todo list by its `id`. Without a subject
/// (a status change) its content is `task <id>`, which the fold leaves under what it knows.
pub fn task_item(id: Option<&str>, subject: Option<&str>, status: &str) -> Option<Todo> {
    let id = id.map(str::trim).filter(|i| !i.is_empty());
    let subject = subject.map(str::trim).filter(|s| !s.is_empty());
    let content = match (subject, id) {
        (Some(s), _) => s.to_string(),
        (None, Some(i)) => format!("task {i}"),
        (None, None) => return None,
    };
    Some(Todo {
        content: bounded(&content, MAX_TODO_CHARS),
        status: status.to_string(),
        id: id.map(|i| bounded(i, 200)),
    })
}

/// AskUserQuestion as text: each question with its options, and the user's answers.
fn questions_and_answers(input: &Value, response: Option<&Value>) -> String {
    let answers = response.and_then(|r| r.get("answers"));
    let mut out = Vec::new();
    for q in input
        .get("questions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(text) = q.get("question").and_then(Value::as_str) else {
            continue;
        };
        let options: Vec<&str> = q
            .get("options")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|o| o.get("label").and_then(Value::as_str))
            .collect();
        let mut line = format!("Asked: {}", text.trim());
        if !options.is_empty() {
            line.push_str(&format!(" (options: {})", options.join(", ")));
        }
        if let Some(a) = answers.and_then(|a| a.get(text)).and_then(Value::as_str) {
            line.push_str(&format!(" → answered: {a}"));
        }
        out.push(line);
    }
    if let Some(r) = response
        .and_then(|r| r.get("response"))
        .and_then(Value::as_str)
    {
        out.push(format!("The user replied: {r}"));
    }
    if out.is_empty() {
        "asked the user a question".to_string()
    } else {
        out.join("\n")
    }
}

/// What a file tool wrote, bounded ([`WRITTEN_CHARS`]): an edit's new text (each of a
/// MultiEdit's, one per line), a written file's or notebook cell's source. A write is found
/// by the code it changed (`domain::turn_text`); its line in a history stays its summary.
fn written(tool: &str, input: &Value) -> Option<String> {
    fn text(v: Option<&Value>) -> Option<&str> {
        v.and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
    }
    let whole = match tool {
        "Edit" => text(input.get("new_string"))?.to_string(),
        "Write" => text(input.get("content"))?.to_string(),
        "NotebookEdit" => text(input.get("new_source"))?.to_string(),
        "MultiEdit" => {
            let edits = input.get("edits").and_then(Value::as_array)?;
            let parts: Vec<&str> = edits
                .iter()
                .filter_map(|e| text(e.get("new_string")))
                .collect();
            if parts.is_empty() {
                return None;
            }
            parts.join("\n")
        }
        _ => return None,
    };
    Some(bounded(&whole, WRITTEN_CHARS))
}

/// Maps one tool use to an operation; a failed one is a failed `tool_call`.
pub fn tool_use(t: &ToolUse<'_>) -> OperationInput {
    let s = |k: &str| {
        t.input
            .get(k)
            .and_then(Value::as_str)
            .filter(|v| !v.trim().is_empty())
    };
    let path = |k: &str| s(k).filter(|p| validate::path(k, p).is_ok());
    let name = t.name;
    let mut o = match name {
        "Read" => OperationInput {
            target: s("file_path").map(str::to_string),
            files_read: path("file_path").map(|p| vec![p.to_string()]),
            summary: Some(format!("read {}", s("file_path").unwrap_or("a file"))),
            ..op("read")
        },
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => {
            let key = if name == "NotebookEdit" {
                "notebook_path"
            } else {
                "file_path"
            };
            let verb = match name {
                "Write" => "wrote".to_string(),
                "MultiEdit" => {
                    let n = t
                        .input
                        .get("edits")
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len);
                    format!("edited ({n} edits)")
                }
                _ => "edited".to_string(),
            };
            OperationInput {
                target: s(key).map(str::to_string),
                files_modified: path(key).map(|p| vec![p.to_string()]),
                summary: Some(format!("{verb} {}", s(key).unwrap_or("a file"))),
                content: written(name, t.input),
                ..op("write")
            }
        }
        "Bash" | "PowerShell" => {
            let command = s("command").unwrap_or("");
            OperationInput {
                target: Some(command.to_string()).filter(|c| !c.is_empty()),
                summary: Some(
                    s("description")
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("ran {}", first_line(command))),
                ),
                ..op("tool_call")
            }
        }
        "Grep" | "Glob" => {
            let pattern = s("pattern").unwrap_or("");
            let scope = s("path")
                .or(s("glob"))
                .map(|p| format!(" in {p}"))
                .unwrap_or_default();
            OperationInput {
                target: Some(pattern.to_string()).filter(|p| !p.is_empty()),
                summary: Some(format!("{} {pattern}{scope}", name.to_lowercase())),
                ..op("search")
            }
        }
        "WebSearch" => OperationInput {
            target: s("query").map(str::to_string),
            summary: Some(format!("web search: {}", s("query").unwrap_or(""))),
            ..op("search")
        },
        "WebFetch" => OperationInput {
            target: s("url").map(str::to_string),
            summary: Some(format!("fetched {}", s("url").unwrap_or("a page"))),
            ..op("search")
        },
        "TodoWrite" => {
            let todos = todos(t.input.get("todos"));
            OperationInput {
                todos: Some(todos),
                ..op("todo")
            }
        }
        "TaskCreate" | "TaskUpdate" => {
            let id = s("taskId").or_else(|| {
                t.response
                    .and_then(|r| r.pointer("/task/id"))
                    .and_then(Value::as_str)
            });
            let status = match s("status") {
                Some("deleted" | "completed") => "completed",
                Some("in_progress") => "in_progress",
                _ => "pending",
            };
            match task_item(id, s("subject"), status) {
                Some(item) => OperationInput {
                    summary: Some(format!("task {}: {}", item.status, item.content)),
                    todos: Some(vec![item]),
                    ..op("todo")
                },
                None => OperationInput {
                    summary: Some(format!("{name} call")),
                    ..op("tool_call")
                },
            }
        }
        "ExitPlanMode" => {
            let plan = s("plan").or_else(|| {
                t.response
                    .and_then(|r| r.get("plan"))
                    .and_then(Value::as_str)
                    .filter(|p| !p.trim().is_empty())
            });
            match plan {
                Some(plan) => OperationInput {
                    role: Some("assistant".into()),
                    content: Some(bounded(
                        &format!("Plan:\n{}", plan.trim()),
                        MAX_CONTENT_CHARS,
                    )),
                    summary: Some(format!("plan: {}", first_line(plan))),
                    ..op("message")
                },
                None => OperationInput {
                    summary: Some("left plan mode".into()),
                    ..op("tool_call")
                },
            }
        }
        "AskUserQuestion" => {
            let text = questions_and_answers(t.input, t.response);
            OperationInput {
                role: Some("assistant".into()),
                summary: Some(format!("asked the user: {}", first_line(&text))),
                content: Some(bounded(&text, MAX_CONTENT_CHARS)),
                ..op("message")
            }
        }
        "Task" | "Agent" => OperationInput {
            target: s("subagent_type").map(str::to_string),
            summary: Some(format!(
                "subagent: {}",
                s("description").or(s("prompt")).unwrap_or("task")
            )),
            ..op("tool_call")
        },
        _ => OperationInput {
            target: first_string(t.input),
            summary: Some(match mcp_names(name) {
                Some((server, tool)) => format!("MCP {server} · {tool}"),
                None => format!("{name} call"),
            }),
            ..op("tool_call")
        },
    };
    let failure = t.error.map(|err| outcome::failure(name, err));
    if let Some(f) = &failure {
        o.kind = "tool_call".into();
        o.status = Some("failed".into());
        o.files_modified = None;
        o.files_read = None;
        o.todos = None;
        o.role = None;
        o.content = None;
        o.summary = Some(f.summary.clone());
    }
    o.id = t.id.clone();
    o.tool = Some(bounded(name, 200));
    o.target = o.target.map(|v| bounded(v.trim(), MAX_TARGET_CHARS));
    o.summary = o
        .summary
        .map(|v| bounded(v.trim(), SUMMARY_CHARS.min(MAX_SUMMARY_CHARS)));
    let mut context = serde_json::Map::new();
    if let Some(cwd) = working_dir(t.cwd) {
        context.insert("cwd".into(), Value::String(cwd));
    }
    let answered = match failure {
        Some(f) => f.outcome,
        None => t.response.and_then(|r| outcome::summarise(name, r)),
    };
    if let Some(r) = answered {
        context.insert("response".into(), Value::String(r));
    }
    if let Some((server, tool)) = mcp_names(name) {
        context.insert("mcp_server".into(), Value::String(bounded(server, 200)));
        context.insert("mcp_tool".into(), Value::String(bounded(tool, 200)));
    }
    if let Some(commit) = t.response.and_then(|r| r.pointer("/gitOperation/commit")) {
        if let Some(sha) = commit
            .get("sha")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty() && s.len() <= 64 && s.chars().all(|c| c.is_ascii_hexdigit()))
        {
            context.insert("commit".into(), Value::String(sha.to_string()));
            if let Some(kind) = commit.get("kind").and_then(Value::as_str) {
                context.insert("commit_kind".into(), Value::String(bounded(kind, 32)));
            }
            if let Some(branch) = commit.get("branch").and_then(Value::as_str) {
                context.insert("commit_branch".into(), Value::String(bounded(branch, 200)));
            }
        }
    }
    if !context.is_empty() {
        o.context = Some(Value::Object(context));
    }
    o
}

/// The agent's todo list, bounded; unknown statuses read as `pending`.
pub fn todos(v: Option<&Value>) -> Vec<Todo> {
    v.and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|t| {
                    let content = t.get("content").and_then(Value::as_str)?.trim();
                    if content.is_empty() {
                        return None;
                    }
                    let status = match t.get("status").and_then(Value::as_str) {
                        Some(s @ ("pending" | "in_progress" | "completed")) => s.to_string(),
                        _ => "pending".to_string(),
                    };
                    Some(Todo {
                        content: bounded(content, MAX_TODO_CHARS),
                        status,
                        id: t.get("id").and_then(Value::as_str).map(|i| bounded(i, 200)),
                    })
                })
                .take(MAX_TODOS)
                .collect()
        })
        .unwrap_or_default()
}

fn first_string(v: &Value) -> Option<String> {
    v.as_object()?
        .values()
        .find_map(|x| x.as_str().filter(|s| !s.trim().is_empty()))
        .map(|s| first_line(s).to_string())
}

/// A working directory as capture keeps it: none when empty, bounded like a path.
pub fn working_dir(cwd: Option<&str>) -> Option<String> {
    cwd.filter(|c| !c.is_empty())
        .map(|c| bounded(c, MAX_PATH_CHARS))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(v: Value) -> HookEvent {
        parse(v).unwrap()
    }

    #[test]
    fn a_write_keeps_what_it_wrote_bounded_and_redacted() {
        let written = |name: &str, input: Value| {
            let t = ToolUse {
                id: Some("t1".into()),
                name,
                input: &input,
                response: None,
                error: None,
                cwd: None,
            };
            tool_use(&t).content
        };
        let edit = written(
            "Edit",
            json!({"file_path": "/r/db.ts", "old_string": "a", "new_string": "  ALTER TABLE e ADD COLUMN is_imported  "}),
        );
        assert_eq!(
            edit.as_deref(),
            Some("ALTER TABLE e ADD COLUMN is_imported")
        );
        let multi = written(
            "MultiEdit",
            json!({"file_path": "/r/a", "edits": [{"new_string": "fn a()"}, {"new_string": " "}, {"new_string": "fn b()"}]}),
        );
        assert_eq!(multi.as_deref(), Some("fn a()\nfn b()"));
        let notebook = written(
            "NotebookEdit",
            json!({"notebook_path": "/r/n.ipynb", "new_source": "df.head()"}),
        );
        assert_eq!(notebook.as_deref(), Some("df.head()"));
        let long = "x".repeat(5 * WRITTEN_CHARS);
        let file = written("Write", json!({"file_path": "/r/a", "content": long})).unwrap();
        assert_eq!(file.chars().count(), WRITTEN_CHARS);
        let secret = written(
            "Write",
            json!({"file_path": "/r/.env", "content": "API_KEY=supersecret123"}),
        );
        assert!(!secret.unwrap().contains("supersecret123"));
        // Nothing written, nothing kept; a read keeps no content.
        assert_eq!(
            written("Edit", json!({"file_path": "/r/a", "new_string": ""})),
            None
        );
        assert_eq!(
            written("MultiEdit", json!({"file_path": "/r/a", "edits": []})),
            None
        );
        assert_eq!(written("Read", json!({"file_path": "/r/a"})), None);
    }

    #[test]
    fn tools_map_to_the_documented_operation_types() {
        let cases = [
            ("Read", json!({"file_path": "/r/src/a.rs"}), "read"),
            (
                "Write",
                json!({"file_path": "/r/a", "content": "x"}),
                "write",
            ),
            (
                "Edit",
                json!({"file_path": "/r/a", "old_string": "a", "new_string": "b"}),
                "write",
            ),
            (
                "MultiEdit",
                json!({"file_path": "/r/a", "edits": []}),
                "write",
            ),
            (
                "NotebookEdit",
                json!({"notebook_path": "/r/n.ipynb", "new_source": ""}),
                "write",
            ),
            ("Bash", json!({"command": "ls"}), "tool_call"),
            ("Grep", json!({"pattern": "fn main"}), "search"),
            ("Glob", json!({"pattern": "**/*.rs"}), "search"),
            ("WebSearch", json!({"query": "neo4j"}), "search"),
            (
                "WebFetch",
                json!({"url": "https://x", "prompt": "p"}),
                "search",
            ),
            (
                "TodoWrite",
                json!({"todos": [{"content": "a", "status": "pending", "activeForm": "A"}]}),
                "todo",
            ),
            (
                "Task",
                json!({"description": "d", "prompt": "p", "subagent_type": "general"}),
                "tool_call",
            ),
            ("mcp__github__list", json!({"repo": "r"}), "tool_call"),
        ];
        for (tool, input, kind) in cases {
            let e = event(json!({
                "hook_event_name": "PostToolUse", "session_id": "s", "cwd": "/r",
                "tool_name": tool, "tool_input": input, "tool_response": {"ok": true},
                "tool_use_id": format!("toolu_{tool}")
            }));
            let p = plan(&e, "p").unwrap();
            assert_eq!(p.operations.len(), 1, "{tool}");
            let o = &p.operations[0];
            assert_eq!(o.kind, kind, "{tool}");
            assert_eq!(o.id.as_deref(), Some(format!("s/toolu_{tool}").as_str()));
            assert_eq!(o.tool.as_deref(), Some(tool));
            if kind == "write" {
                assert_eq!(o.files_modified.as_ref().map(Vec::len), Some(1), "{tool}");
            }
        }
    }

    #[test]
    fn failures_are_failed_tool_calls_and_responses_are_bounded() {
        let e = event(json!({
            "hook_event_name": "PostToolUseFailure", "session_id": "s",
            "tool_name": "Edit", "tool_input": {"file_path": "/a"}, "tool_use_id": "t1",
            "error": "old_string not found"
        }));
        let o = &plan(&e, "p").unwrap().operations[0];
        assert_eq!(
            (o.kind.as_str(), o.status.as_deref()),
            ("tool_call", Some("failed"))
        );
        assert!(o.files_modified.is_none());
        let big = "y".repeat(100_000);
        let e = event(json!({
            "hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "Bash",
            "tool_input": {"command": "cat big"}, "tool_use_id": "t2",
            "tool_response": {"stdout": big, "stderr": "", "interrupted": false}
        }));
        let o = &plan(&e, "p").unwrap().operations[0];
        let ctx = o.context.as_ref().unwrap().to_string();
        assert!(ctx.len() < RESPONSE_CHARS + 200, "{}", ctx.len());
    }

    /// Inputs fuzzing found (`fuzz/`, target `hook_event`): each made capture refuse the
    /// mapped operation, so the whole event was lost.
    #[test]
    fn mapped_operations_pass_capture_validation() {
        let events = [
            json!({"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "Read",
                   "tool_input": {"file_path": "/r/a\nb.rs"}}),
            json!({"hook_event_name": "PreCompact", "session_id": "s", "trigger": "x".repeat(5_000)}),
        ];
        for e in events {
            for o in plan(&event(e.clone()), "p").unwrap().operations {
                let checked = validate::operation("o", &o, None, 0);
                assert!(checked.is_ok(), "{e}: {checked:?}");
            }
        }
    }

    /// Found by fuzzing: a tool response redacted key by key became, as JSON text, a
    /// secret-looking assignment (`"x_api_key":false`) that was stored as such.
    #[test]
    fn what_the_mapping_keeps_is_already_redacted() {
        let e = event(json!({"hook_event_name": "PostToolUse", "session_id": "s",
            "tool_name": "Probe", "tool_input": {"q": "MY_TOKEN"},
            "tool_response": {"interrupapi_keyted": false, "n": 1}}));
        let o = &plan(&e, "p").unwrap().operations[0];
        let response = o.context.as_ref().unwrap()["response"].as_str().unwrap();
        assert_eq!(redact::text(response), response);
        let joined = message(None, "user", "MY_TOKEN\n\n= hunter2", None);
        assert!(!joined.content.unwrap().contains("hunter2"));
    }

    #[test]
    fn lifecycle_events_map_to_turns_close_and_markers() {
        let ev = |name: &str, extra: Value| {
            let mut v = json!({"hook_event_name": name, "session_id": "s"});
            v.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            plan(&event(v), "p").unwrap()
        };
        assert!(matches!(
            ev("SessionStart", json!({"source": "startup"})).reply,
            Reply::Handover { .. }
        ));
        let p = ev("UserPromptSubmit", json!({"prompt": "fix it"}));
        assert_eq!(p.operations[0].role.as_deref(), Some("user"));
        let p = ev("Stop", json!({"last_assistant_message": "done"}));
        assert_eq!(p.operations[0].role.as_deref(), Some("assistant"));
        assert!(ev("Stop", json!({"stop_hook_active": false}))
            .operations
            .is_empty());
        assert!(ev("SessionEnd", json!({"reason": "logout"}))
            .close
            .is_some());
        assert_eq!(
            ev("PreCompact", json!({"trigger": "auto"})).operations[0].kind,
            "tool_call"
        );
        let p = ev("Notification", json!({"message": "hi"}));
        assert!(p.operations.is_empty() && p.close.is_none() && p.reply == Reply::Nothing);
        assert!(plan(&event(json!({"hook_event_name": "Stop"})), "p").is_err());
    }

    /// One fixture per hook event of Claude Code (`HOOK_EVENTS` of sdk.d.ts), in the official
    /// field shapes: each parses, and maps to what cairn keeps of it — or to nothing, on purpose.
    #[test]
    fn every_official_event_parses_and_maps_or_is_ignored_on_purpose() {
        use crate::claude::events::HOOK_EVENTS;
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/claude-code/hooks/events"
        );
        let mut seen = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let raw: Value = serde_json::from_str(
                &std::fs::read_to_string(&path)
                    .unwrap()
                    .replace("SESSION_ID", "s1"),
            )
            .unwrap();
            assert_eq!(raw["hook_event_name"], name.as_str());
            let p = plan(&event(raw), "p").unwrap_or_else(|e| panic!("{name}: {e:?}"));
            for o in &p.operations {
                let checked = validate::operation("o", o, Some("/home/dev/shop"), 0);
                assert!(checked.is_ok(), "{name}: {checked:?}");
            }
            let child = p.session_id != "s1";
            let kinds: Vec<&str> = p.operations.iter().map(|o| o.kind.as_str()).collect();
            match name.as_str() {
                "SessionStart" => assert_eq!(
                    p.reply,
                    Reply::Handover {
                        source: "startup".into()
                    }
                ),
                "PreToolUse" => {
                    assert!(kinds.is_empty());
                    assert_eq!(
                        p.reply,
                        Reply::FileContext {
                            path: "/home/dev/shop/src/cart.rs".into()
                        }
                    );
                }
                "UserPromptSubmit" => {
                    assert_eq!((kinds, &p.reply), (vec!["message"], &Reply::Prompt));
                    assert_eq!(
                        p.operations[0].context.as_ref().unwrap()["prompt_id"],
                        "5b8f0c7e-2f1a-4d0e-9a51-0c6f3f1f2a10"
                    );
                }
                "PostToolUse" => {
                    let ctx = p.operations[0].context.as_ref().unwrap();
                    assert_eq!(ctx["commit"], "4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39");
                    assert_eq!(ctx["duration_ms"], 412);
                }
                "PostToolUseFailure" => {
                    let o = &p.operations[0];
                    assert_eq!(o.status.as_deref(), Some("failed"));
                    let ctx = o.context.as_ref().unwrap();
                    assert_eq!(
                        (&ctx["mcp_server"], &ctx["mcp_tool"]),
                        (&json!("github"), &json!("create_issue"))
                    );
                }
                "PostToolBatch" => assert_eq!(kinds, vec!["read", "search"]),
                "PermissionDenied" => {
                    assert_eq!(p.operations[0].status.as_deref(), Some("failed"));
                    assert!(p.operations[0]
                        .summary
                        .as_deref()
                        .unwrap()
                        .contains("permission denied"));
                }
                "Stop" => assert_eq!(kinds, vec!["message"]),
                "StopFailure" => {
                    assert_eq!(kinds, vec!["message"]);
                    assert_eq!(p.operations[0].status.as_deref(), Some("failed"));
                }
                "SubagentStart" => {
                    assert!(child && kinds.is_empty());
                    assert_eq!(
                        p.session_id,
                        crate::claude::child_session_id("s1", "a1b2c3d4")
                    );
                    assert_eq!(
                        (p.start.parent.as_deref(), p.start.agent_type.as_deref()),
                        (Some("s1"), Some("Explore"))
                    );
                }
                "SubagentStop" => {
                    assert!(child && kinds == vec!["message"]);
                    let close = p.close.as_ref().unwrap();
                    assert_eq!(
                        close.summary.as_deref(),
                        Some("Found the totals in src/cart.rs:42.")
                    );
                    let ctx = p.operations[0].context.as_ref().unwrap();
                    assert!(ctx["transcript_path"]
                        .as_str()
                        .unwrap()
                        .ends_with("agent-a1b2c3d4.jsonl"));
                }
                "SessionEnd" => assert!(p.close.is_some() && kinds.is_empty()),
                "PreCompact" | "CwdChanged" | "FileChanged" | "WorktreeCreate"
                | "WorktreeRemove" => {
                    assert_eq!(kinds, vec!["tool_call"], "{name}")
                }
                "PostCompact" => assert_eq!(
                    p.operations[0].content.as_deref(),
                    Some("We added coupon support; tests for expiry are still open.")
                ),
                "TaskCreated" | "TaskCompleted" => {
                    let t = &p.operations[0].todos.as_ref().unwrap()[0];
                    assert_eq!(
                        (t.id.as_deref(), t.content.as_str()),
                        (Some("7"), "Write expiry tests")
                    );
                }
                // Nothing for memory in these: accepted and ignored.
                _ => {
                    assert!(kinds.is_empty() && p.close.is_none() && !child, "{name}");
                    assert_eq!(p.reply, Reply::Nothing, "{name}");
                }
            }
            seen.push(name);
        }
        seen.sort();
        let mut all: Vec<String> = HOOK_EVENTS.iter().map(|e| e.to_string()).collect();
        all.sort();
        assert_eq!(seen, all, "a fixture for every event, no other");
    }

    #[test]
    fn todays_tools_map_to_what_memory_needs() {
        let post = |tool: &str, input: Value, response: Value| {
            let e = event(json!({"hook_event_name": "PostToolUse", "session_id": "s",
                "tool_name": tool, "tool_input": input, "tool_response": response,
                "tool_use_id": format!("t-{tool}")}));
            plan(&e, "p").unwrap()
        };
        let p = post(
            "PowerShell",
            json!({"command": "Get-ChildItem"}),
            json!({"stdout": "x"}),
        );
        assert_eq!(p.operations[0].target.as_deref(), Some("Get-ChildItem"));
        let p = post(
            "ExitPlanMode",
            json!({"plan": "1. add coupons\n2. test"}),
            json!({}),
        );
        let o = &p.operations[0];
        assert_eq!(
            (o.kind.as_str(), o.role.as_deref()),
            ("message", Some("assistant"))
        );
        assert!(o.content.as_deref().unwrap().contains("1. add coupons"));
        let p = post(
            "mcp__docs__search",
            json!({"q": "neo4j"}),
            json!([{"type": "text", "text": "first"}, {"type": "image", "data": "…"}, {"type": "text", "text": "api_key=sk-live-0123456789abcdef0123"}]),
        );
        let ctx = p.operations[0].context.as_ref().unwrap();
        let response = ctx["response"].as_str().unwrap();
        assert!(response.starts_with("first\n[image]"), "{response}");
        assert!(
            !response.contains("sk-live-0123456789abcdef0123"),
            "{response}"
        );
        let p = post(
            "Agent",
            json!({"description": "find totals", "prompt": "Find where totals are computed", "subagent_type": "Explore"}),
            json!({"agentId": "a9", "status": "completed", "content": [], "prompt": "Find where totals are computed"}),
        );
        let c = &p.children[0];
        assert_eq!(c.session_id.as_deref(), Some("s:agent-a9"));
        assert_eq!(
            (c.parent.as_deref(), c.spawned_by.as_deref()),
            (Some("s"), Some("s/t-Agent"))
        );
        assert_eq!(
            (c.task.as_deref(), c.agent_type.as_deref()),
            (Some("find totals"), Some("Explore"))
        );
        assert!(
            p.operations
                .iter()
                .all(|o| o.role.as_deref() != Some("user")),
            "the Task prompt is no user turn"
        );
        let p = post(
            "AskUserQuestion",
            json!({"questions": [{"question": "Which store?", "header": "Store",
            "multiSelect": false, "options": [{"label": "Neo4j", "description": "graph queries"}, {"label": "Postgres", "description": "familiar"}]}]}),
            json!({"answers": {"Which store?": "Neo4j"}}),
        );
        let d = &p.decisions[0];
        assert_eq!(
            (d.subject.as_str(), d.choice.as_str(), d.rationale.as_str()),
            ("Store", "Neo4j", "graph queries")
        );
        assert_eq!(
            d.alternatives.as_deref(),
            Some(&["Postgres".to_string()][..])
        );
    }

    #[test]
    fn task_updates_fold_into_the_todo_list() {
        use crate::recall::reconstruction::{fold_todos, TodoOp};
        let op = |tool: &str, todos: Value| TodoOp {
            tool: Some(tool.into()),
            todos: Some(todos.to_string()),
        };
        let list = fold_todos(&[
            op(
                "TodoWrite",
                json!([{"content": "old list", "status": "pending"}]),
            ),
            op(
                "TodoWrite",
                json!([{"content": "a", "status": "pending", "id": "1"}]),
            ),
            op(
                "TaskCreate",
                json!([{"content": "b", "status": "pending", "id": "2"}]),
            ),
            op(
                "TaskUpdate",
                json!([{"content": "task 1", "status": "completed", "id": "1"}]),
            ),
            op(
                "TaskUpdate",
                json!([{"content": "b, renamed", "status": "in_progress", "id": "2"}]),
            ),
        ]);
        let got: Vec<(&str, &str)> = list
            .iter()
            .map(|t| (t.content.as_str(), t.status.as_str()))
            .collect();
        assert_eq!(got, vec![("a", "completed"), ("b, renamed", "in_progress")]);
    }
}
