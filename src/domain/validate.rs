//! Validation of everything that comes in, before anything is written: a rejected request
//! writes nothing. Each failure names the field at fault as a JSON path.

use crate::config::Encoding;
use crate::error::{ApiError, ApiResult, Code};

use super::field::Field;
use super::limits::*;
use super::operation::{NewOperation, OpType, OperationInput};
use super::paths;
use super::record::{
    subject_key, BeliefRef, DecisionInput, MemoryInput, NewBeliefLink, NewClose, NewDecision,
    NewMemory, NewSession, SessionClose, SessionStart,
};
use super::state::SessionStatus;
use super::tokens;

/// A new server-side id (time-ordered).
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Project ids: 1..=128 chars of `[A-Za-z0-9._-]`.
pub fn project<'f>(field: impl Into<Field<'f>>, value: &str) -> ApiResult<String> {
    let field = field.into();
    let v = value.trim();
    if v.is_empty() {
        return Err(ApiError::missing(field));
    }
    if v.chars().count() > MAX_PROJECT_CHARS {
        return Err(ApiError::too_long(field, MAX_PROJECT_CHARS, "characters"));
    }
    if !v
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Err(ApiError::invalid(
            Code::InvalidProject,
            field,
            "a project id may contain only letters, digits, '.', '_' and '-'",
        ));
    }
    Ok(v.to_string())
}

/// Client ids (session, operation, belief references): non-empty, bounded, no control chars.
pub fn id<'f>(field: impl Into<Field<'f>>, value: &str) -> ApiResult<String> {
    let field = field.into();
    let v = value.trim();
    if v.is_empty() {
        return Err(ApiError::missing(field));
    }
    if v.len() > MAX_ID_CHARS && v.chars().count() > MAX_ID_CHARS {
        return Err(ApiError::too_long(field, MAX_ID_CHARS, "characters"));
    }
    if v.chars().any(char::is_control) {
        return Err(ApiError::invalid(
            Code::InvalidId,
            field,
            "ids may not contain control characters",
        ));
    }
    Ok(v.to_string())
}

/// Required text: trimmed non-empty, at most `max` characters.
pub fn text<'f>(field: impl Into<Field<'f>>, value: &str, max: usize) -> ApiResult<String> {
    let field = field.into();
    let v = value.trim();
    if v.is_empty() {
        return Err(ApiError::missing(field));
    }
    bounded(field, v, max)
}

/// Optional text: empty becomes `None`.
pub fn opt_text<'f>(
    field: impl Into<Field<'f>>,
    value: Option<&str>,
    max: usize,
) -> ApiResult<Option<String>> {
    let field = field.into();
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => bounded(field, v, max).map(Some),
    }
}

fn bounded<'f>(field: impl Into<Field<'f>>, v: &str, max: usize) -> ApiResult<String> {
    let field = field.into();
    // A string has at least as many bytes as characters: most are settled by their length.
    if v.len() > max && v.chars().count() > max {
        return Err(ApiError::too_long(field, max, "characters"));
    }
    Ok(v.to_string())
}

/// A number in 0..=1.
pub fn unit<'f>(field: impl Into<Field<'f>>, value: Option<f64>, default: f64) -> ApiResult<f64> {
    let field = field.into();
    match value {
        None => Ok(default),
        Some(v) if v.is_finite() && (0.0..=1.0).contains(&v) => Ok(v),
        Some(_) => Err(ApiError::invalid(
            Code::OutOfRange,
            field,
            "must be a number between 0 and 1",
        )),
    }
}

/// `supports` or `contradicts`.
pub fn effect<'f>(field: impl Into<Field<'f>>, value: Option<&str>) -> ApiResult<String> {
    let field = field.into();
    match value.unwrap_or("supports") {
        e @ ("supports" | "contradicts") => Ok(e.to_string()),
        _ => Err(ApiError::invalid(
            Code::InvalidEffect,
            field,
            "effect must be `supports` or `contradicts`",
        )),
    }
}

/// RFC 3339 timestamp → epoch ms; absent → `now`.
pub fn instant<'f>(field: impl Into<Field<'f>>, value: Option<&str>, now: i64) -> ApiResult<i64> {
    match value.map(str::trim) {
        None | Some("") => Ok(now),
        Some(v) => timestamp(field, v),
    }
}

/// RFC 3339 timestamp → epoch ms; blank is no timestamp either.
pub fn timestamp<'f>(field: impl Into<Field<'f>>, value: &str) -> ApiResult<i64> {
    let field = field.into();
    chrono::DateTime::parse_from_rfc3339(value.trim())
        .map(|t| t.timestamp_millis())
        .map_err(|_| {
            ApiError::invalid(
                Code::InvalidTimestamp,
                field,
                "timestamps are RFC 3339, e.g. 2026-01-31T12:00:00Z",
            )
        })
}

/// One file path as sent, before normalisation: trimmed, non-empty, bounded, and free of
/// control characters.
pub fn path<'f>(field: impl Into<Field<'f>>, value: &str) -> ApiResult<String> {
    let field = field.into();
    let p = text(field, value, MAX_PATH_CHARS)?;
    if p.chars().any(char::is_control) {
        return Err(ApiError::invalid(
            Code::InvalidPath,
            field,
            "paths may not contain control characters",
        ));
    }
    Ok(p)
}

/// A list of file paths, each normalised (project-relative under `cwd`), deduplicated.
pub fn files<'f>(
    field: impl Into<Field<'f>>,
    value: Option<&[String]>,
    cwd: Option<&str>,
) -> ApiResult<Vec<String>> {
    let field = field.into();
    let Some(list) = value else {
        return Ok(Vec::new());
    };
    if list.len() > MAX_FILES_PER_OPERATION {
        return Err(ApiError::too_long(field, MAX_FILES_PER_OPERATION, "paths"));
    }
    let mut out: Vec<String> = Vec::with_capacity(list.len());
    for (i, p) in list.iter().enumerate() {
        let p = path(field.item(i), p)?;
        let n = paths::normalize(&p, cwd);
        if !out.contains(&n) {
            out.push(n);
        }
    }
    Ok(out)
}

fn string_list<'f>(
    field: impl Into<Field<'f>>,
    value: Option<&[String]>,
    max_items: usize,
    max_chars: usize,
) -> ApiResult<Vec<String>> {
    let field = field.into();
    let Some(list) = value else {
        return Ok(Vec::new());
    };
    if list.len() > max_items {
        return Err(ApiError::too_long(field, max_items, "items"));
    }
    list.iter()
        .enumerate()
        .map(|(i, s)| text(field.item(i), s, max_chars))
        .collect()
}

/// Validates one operation. `field` is its JSON path (`operations[3]`); `cwd` comes from its
/// context or from the session.
pub fn operation<'f>(
    field: impl Into<Field<'f>>,
    op: &OperationInput,
    session_cwd: Option<&str>,
    now: i64,
) -> ApiResult<NewOperation> {
    let field = field.into();
    let f = |name| field.member(name);
    let kind = OpType::parse(op.kind.trim()).ok_or_else(|| {
        ApiError::invalid(
            Code::UnknownOperationType,
            f("type"),
            format!(
                "unknown operation type `{}`; use one of {}",
                op.kind.chars().take(40).collect::<String>(),
                OpType::ALL.join(", ")
            ),
        )
    })?;
    let id = match &op.id {
        Some(v) => id(f("id"), v)?,
        None => new_id(),
    };
    let context = match &op.context {
        None | Some(serde_json::Value::Null) => None,
        Some(v) => {
            if !v.is_object() {
                return Err(ApiError::invalid(
                    Code::InvalidContext,
                    f("context"),
                    "context must be a JSON object",
                ));
            }
            let s = v.to_string();
            if s.len() > MAX_CONTEXT_BYTES {
                return Err(ApiError::too_long(
                    f("context"),
                    MAX_CONTEXT_BYTES,
                    "bytes of JSON",
                ));
            }
            Some(s)
        }
    };
    let cwd = op
        .context
        .as_ref()
        .and_then(|c| c.get("cwd"))
        .and_then(|c| c.as_str())
        .or(session_cwd);
    let role = match (kind, op.role.as_deref().map(str::trim)) {
        (OpType::Message, Some(r @ ("user" | "assistant"))) => Some(r.to_string()),
        (OpType::Message, _) => {
            return Err(ApiError::invalid(
                Code::InvalidRole,
                f("role"),
                "a message needs `role`: `user` or `assistant`",
            ))
        }
        (_, r) => opt_text(f("role"), r, 32)?,
    };
    let content = opt_text(f("content"), op.content.as_deref(), MAX_CONTENT_CHARS)?;
    if kind == OpType::Message && content.is_none() {
        return Err(ApiError::missing(f("content")));
    }
    let todos = match &op.todos {
        None => None,
        Some(list) => {
            if list.len() > MAX_TODOS {
                return Err(ApiError::too_long(f("todos"), MAX_TODOS, "items"));
            }
            for (i, t) in list.iter().enumerate() {
                let todos = f("todos");
                let todo = todos.item(i);
                text(todo.member("content"), &t.content, MAX_TODO_CHARS)?;
                if !matches!(t.status.as_str(), "pending" | "in_progress" | "completed") {
                    return Err(ApiError::invalid(
                        Code::InvalidTodoStatus,
                        todo.member("status"),
                        "todo status is `pending`, `in_progress` or `completed`",
                    ));
                }
            }
            Some(serde_json::to_string(list).map_err(ApiError::internal)?)
        }
    };
    if kind == OpType::Todo && todos.is_none() {
        return Err(ApiError::missing(f("todos")));
    }
    let summary = match opt_text(f("summary"), op.summary.as_deref(), MAX_SUMMARY_CHARS)? {
        Some(s) => s,
        None => match kind {
            OpType::Message => first_line(content.as_deref().unwrap_or_default()),
            OpType::Todo => todo_summary(op.todos.as_deref().unwrap_or_default()),
            _ => return Err(ApiError::missing(f("summary"))),
        },
    };
    let status = match op.status.as_deref().map(str::trim) {
        None | Some("") | Some("ok") => "ok".to_string(),
        Some("failed") => "failed".to_string(),
        Some(_) => {
            return Err(ApiError::invalid(
                Code::InvalidStatus,
                f("status"),
                "status is `ok` or `failed`",
            ))
        }
    };
    let target = opt_text(f("target"), op.target.as_deref(), MAX_TARGET_CHARS)?;
    Ok(NewOperation {
        tokens: None,
        id,
        kind,
        target,
        summary,
        tool: opt_text(f("tool"), op.tool.as_deref(), 200)?,
        files_read: files(f("files_read"), op.files_read.as_deref(), cwd)?,
        files_modified: files(f("files_modified"), op.files_modified.as_deref(), cwd)?,
        triggered_by: op
            .triggered_by
            .as_deref()
            .map(|t| self::id(f("triggered_by"), t))
            .transpose()?,
        informs_belief: op
            .informs_belief
            .as_deref()
            .map(|t| self::id(f("informs_belief"), t))
            .transpose()?,
        effect: effect(f("effect"), op.effect.as_deref())?,
        weight: unit(f("weight"), op.weight, 1.0)?,
        rationale: opt_text(f("rationale"), op.rationale.as_deref(), MAX_RATIONALE_CHARS)?,
        role,
        content,
        todos,
        status,
        context,
        at: instant(f("at"), op.at.as_deref(), now)?,
    })
}

fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    line.chars().take(200).collect()
}

fn todo_summary(todos: &[super::operation::Todo]) -> String {
    let done = todos.iter().filter(|t| t.status == "completed").count();
    format!("todo list: {done}/{} completed", todos.len())
}

/// Validates a session start; the id is generated when none is sent.
pub fn session_start(input: &SessionStart, now: i64) -> ApiResult<NewSession> {
    Ok(NewSession {
        project: project("project", &input.project)?,
        id: match &input.session_id {
            Some(s) => id("session_id", s)?,
            None => new_id(),
        },
        continues: input
            .continues
            .as_deref()
            .map(|c| id("continues", c))
            .transpose()?,
        agent: opt_text("agent", input.agent.as_deref(), MAX_AGENT_CHARS)?,
        task: opt_text("task", input.task.as_deref(), MAX_SUMMARY_CHARS)?,
        cwd: opt_text("cwd", input.cwd.as_deref(), MAX_PATH_CHARS)?,
        at: instant("at", input.at.as_deref(), now)?,
        parent: input
            .parent
            .as_deref()
            .map(|c| id("parent", c))
            .transpose()?,
        spawned_by: input
            .spawned_by
            .as_deref()
            .map(|c| id("spawned_by", c))
            .transpose()?,
        agent_type: opt_text("agent_type", input.agent_type.as_deref(), MAX_AGENT_CHARS)?,
    })
}

/// Validates a decision; `operation` (its place in the session chain) is built by the caller.
pub fn decision(input: &DecisionInput, cwd: Option<&str>, now: i64) -> ApiResult<NewDecision> {
    let project = project("project", &input.project)?;
    let subject = text("subject", &input.subject, MAX_SUBJECT_CHARS)?;
    let confidence = unit("confidence", input.confidence, 0.7)?;
    let beliefs =
        match &input.affects_beliefs {
            None => Vec::new(),
            Some(list) => {
                if list.len() > MAX_BELIEF_REFS {
                    return Err(ApiError::too_long(
                        "affects_beliefs",
                        MAX_BELIEF_REFS,
                        "items",
                    ));
                }
                let mut out = Vec::new();
                for (i, v) in list.iter().enumerate() {
                    let refs = Field::Name("affects_beliefs");
                    let field = refs.item(i);
                    let r: BeliefRef =
                        match v {
                            serde_json::Value::String(s) => BeliefRef {
                                id: s.clone(),
                                effect: None,
                                weight: None,
                            },
                            serde_json::Value::Object(_) => serde_json::from_value(v.clone())
                                .map_err(|_| {
                                    ApiError::invalid(
                Code::InvalidBeliefRef,
                            field,
                            "a belief reference is an id or {\"id\", \"effect\", \"weight\"}",
                        )
                                })?,
                            _ => return Err(ApiError::invalid(
                                Code::InvalidBeliefRef,
                                field,
                                "a belief reference is an id or {\"id\", \"effect\", \"weight\"}",
                            )),
                        };
                    out.push(NewBeliefLink {
                        id: id(field.member("id"), &r.id)?,
                        effect: effect(field.member("effect"), r.effect.as_deref())?,
                        weight: unit(field.member("weight"), r.weight, confidence)?,
                    });
                }
                out
            }
        };
    Ok(NewDecision {
        id: new_id(),
        session_id: input
            .session_id
            .as_deref()
            .map(|s| id("session_id", s))
            .transpose()?,
        subject_key: subject_key(&subject),
        subject,
        choice: text("choice", &input.choice, MAX_CHOICE_CHARS)?,
        rationale: text("rationale", &input.rationale, MAX_RATIONALE_CHARS)?,
        alternatives: string_list(
            "alternatives",
            input.alternatives.as_deref(),
            MAX_ALTERNATIVES,
            MAX_CHOICE_CHARS,
        )?,
        confidence,
        beliefs,
        files: files("files", input.files.as_deref(), cwd)?,
        at: now,
        operation: None,
        project,
    })
}

/// Validates an explicit memory.
pub fn memory(input: &MemoryInput, encoding: Encoding, now: i64) -> ApiResult<NewMemory> {
    let kind = match input.kind.trim() {
        k @ ("fact" | "assumption" | "lesson" | "discovery") => k.to_string(),
        _ => {
            return Err(ApiError::invalid(
                Code::InvalidMemoryKind,
                "kind",
                "kind is `fact`, `assumption`, `lesson` or `discovery`",
            ))
        }
    };
    let content = text("content", &input.content, MAX_RATIONALE_CHARS)?;
    Ok(NewMemory {
        id: new_id(),
        project: project("project", &input.project)?,
        session_id: input
            .session_id
            .as_deref()
            .map(|s| id("session_id", s))
            .transpose()?,
        tokens: tokens::count(encoding, &format!("- ({kind}) {content}")) as i64,
        kind,
        content,
        confidence: unit("confidence", input.confidence, 0.8)?,
        at: now,
    })
}

/// Validates the close of session `id` (already looked up) of `project`.
pub fn session_close(
    id: String,
    project: String,
    input: &SessionClose,
    now: i64,
) -> ApiResult<NewClose> {
    let status = match input.status.as_deref().map(str::trim) {
        None | Some("") => SessionStatus::Closed.as_str(),
        Some(s) if SessionStatus::parse(s).is_some_and(|s| SessionStatus::ENDINGS.contains(&s)) => {
            s
        }
        Some(_) => {
            return Err(ApiError::invalid(
                Code::InvalidStatus,
                "status",
                "status is `closed` or `abandoned`",
            ))
        }
    };
    Ok(NewClose {
        id,
        project,
        summary: opt_text("summary", input.summary.as_deref(), MAX_RATIONALE_CHARS)?,
        next_steps: string_list(
            "next_steps",
            input.next_steps.as_deref(),
            MAX_NEXT_STEPS,
            MAX_TODO_CHARS,
        )?,
        status: status.into(),
        at: instant("at", input.at.as_deref(), now)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(kind: &str) -> OperationInput {
        serde_json::from_value(serde_json::json!({"type": kind, "summary": "did a thing"})).unwrap()
    }

    #[test]
    fn project_ids_are_checked() {
        assert_eq!(project("project", " my-app_1.2 ").unwrap(), "my-app_1.2");
        assert_eq!(
            project("project", "bad project!").unwrap_err().code(),
            "invalid_project"
        );
        assert_eq!(project("project", "").unwrap_err().code(), "missing_field");
        assert_eq!(
            project("project", &"a".repeat(129)).unwrap_err().code(),
            "field_too_large"
        );
    }

    #[test]
    fn unknown_type_names_the_field() {
        let err = operation("operations[2]", &op("teleport"), None, 0).unwrap_err();
        assert_eq!(err.code(), "unknown_operation_type");
        assert_eq!(err.field(), Some("operations[2].type"));
    }

    #[test]
    fn oversize_summary_is_rejected() {
        let mut o = op("read");
        o.summary = Some("x".repeat(MAX_SUMMARY_CHARS + 1));
        let err = operation("operations[0]", &o, None, 0).unwrap_err();
        assert_eq!(err.code(), "field_too_large");
        assert_eq!(err.field(), Some("operations[0].summary"));
    }

    #[test]
    fn message_needs_role_and_content_and_gets_a_summary() {
        let mut o = op("message");
        o.summary = None;
        o.role = Some("user".into());
        o.content = Some("\n  please fix the build\nand more".into());
        let mut v = operation("o", &o, None, 5).unwrap();
        assert_eq!(v.summary, "please fix the build");
        assert_eq!(v.tokens, None);
        let n = v.count_tokens(Encoding::O200kBase);
        assert!(n > 3);
        assert_eq!(v.tokens, Some(n));
        o.role = None;
        assert_eq!(
            operation("o", &o, None, 5).unwrap_err().code(),
            "invalid_role"
        );
    }

    #[test]
    fn files_are_normalised_against_context_cwd() {
        let mut o = op("write");
        o.files_modified = Some(vec!["/repo/src/a.rs".into(), "src/a.rs".into()]);
        o.context = Some(serde_json::json!({"cwd": "/repo"}));
        let v = operation("o", &o, None, 0).unwrap();
        assert_eq!(v.files_modified, vec!["src/a.rs"]);
    }
}
