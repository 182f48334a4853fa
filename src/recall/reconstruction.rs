//! Session reconstruction: the operations of one session (filtered, and when cut the most
//! important kept), its decisions, the beliefs it informed, what it left unfinished, and a
//! narrative built deterministically from the graph (or the extraction job's LLM summary).

use std::borrow::Borrow;
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use poem_openapi::Object;
use serde::{Deserialize, Serialize};

pub use super::logs::OperationView;
use super::logs::{self, Logs};
use super::SessionHead;
use crate::domain::operation::{OpType, Todo};
use crate::error::ApiResult;
pub use crate::graph::beliefs::BeliefAffected;
pub use crate::graph::operations::TodoOp;
pub use crate::graph::sessions::ChildSession;
use crate::graph::{beliefs, decisions, decisions::DecisionView, sessions, Store, StoreResult};

/// Most operations a reconstruction returns.
pub const MAX_OPERATIONS: usize = 5_000;

/// Something the session left open.
#[derive(Clone, Debug, Serialize, Deserialize, Object, PartialEq)]
pub struct Unfinished {
    pub content: String,
    /// `todo` (from the session's last todo list) or `next_step` (from its close).
    pub source: String,
    /// The todo's status (`pending`, `in_progress`); absent for next steps.
    #[oai(skip_serializing_if_is_none)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// Which operations to return.
#[derive(Clone, Copy, Debug)]
pub struct Filter {
    pub decisions: bool,
    pub reads: bool,
    pub writes: bool,
    pub max_operations: usize,
}

impl Default for Filter {
    fn default() -> Self {
        Self {
            decisions: true,
            reads: true,
            writes: true,
            max_operations: 1_000,
        }
    }
}

impl ChildSession {
    /// One line: who, what for, how it ended.
    pub fn line(&self) -> String {
        format!(
            "subagent {} (`{}`, {} operations, {}): {} — {}",
            self.agent_type.as_deref().unwrap_or("agent"),
            self.id,
            self.operations,
            self.status.as_deref().unwrap_or("unknown"),
            self.task.as_deref().unwrap_or("(no task)"),
            self.summary.as_deref().unwrap_or("no summary")
        )
    }
}

/// Child sessions named at most, one line each.
pub const CHILDREN: usize = 8;

/// The child sessions of `session_id`, oldest first, at most [`CHILDREN`].
pub async fn children(
    store: &Store,
    project: &str,
    session_id: &str,
) -> StoreResult<Vec<ChildSession>> {
    sessions::children(store, project, session_id, CHILDREN).await
}

/// A reconstructed session.
#[derive(Clone, Debug, Serialize, Object)]
pub struct Reconstruction {
    pub session_id: String,
    pub task: Option<String>,
    pub status: String,
    /// What the session read, decided, wrote and left open, in prose.
    pub narrative: String,
    /// `graph` (built from the stored operations) or `llm` (the extraction job's summary).
    pub narrative_source: String,
    /// In seq order.
    pub operations: Vec<OperationView>,
    /// Operations the session holds (before filters and the cut).
    pub operations_total: u64,
    /// Operations that passed the filters but were cut by `max_operations`.
    pub operations_omitted: u64,
    /// Oldest first; empty when `include_decisions=false`.
    pub decisions: Vec<DecisionView>,
    pub beliefs_affected: Vec<BeliefAffected>,
    pub unfinished: Vec<Unfinished>,
    /// Child sessions (subagents this session launched), oldest first.
    pub children: Vec<ChildSession>,
}

/// How much an operation kind matters when a reconstruction must be cut (lower keeps).
fn importance(kind: &str) -> u8 {
    match OpType::parse(kind) {
        Some(OpType::Decision) => 0,
        Some(OpType::Write) => 1,
        Some(OpType::ToolCall) => 2,
        Some(OpType::Todo) => 3,
        Some(OpType::Search) => 4,
        Some(OpType::Message) => 5,
        Some(OpType::Read) | None => 6,
    }
}

/// Keeps at most `max` operations, the most important first (newer before older within a
/// kind), then restores seq order. `ops` must be in seq order.
pub fn cut<T: Borrow<OperationView>>(ops: Vec<T>, max: usize) -> Vec<T> {
    if ops.len() <= max {
        return ops;
    }
    let mut ranked: Vec<(u8, i64, usize)> = ops
        .iter()
        .map(Borrow::borrow)
        .enumerate()
        .map(|(i, o)| (importance(&o.kind), -o.seq, i))
        .collect();
    ranked.sort_unstable();
    let keep: HashSet<usize> = ranked.into_iter().take(max).map(|(_, _, i)| i).collect();
    ops.into_iter()
        .enumerate()
        .filter(|(i, _)| keep.contains(i))
        .map(|(_, o)| o)
        .collect()
}

fn passes(f: &Filter, kind: &str) -> bool {
    match kind {
        "read" => f.reads,
        "write" => f.writes,
        "decision" => f.decisions,
        _ => true,
    }
}

/// Rebuilds a session of `project` (the caller has checked it exists via `head`).
pub async fn reconstruct(
    store: &Store,
    logs: &Logs,
    project: &str,
    head: SessionHead,
    filter: Filter,
) -> ApiResult<Reconstruction> {
    let sid = head.id.as_str();
    let started = std::time::Instant::now();
    let log_head = logs::Head {
        id: sid,
        started_at: head.started_at,
        operation_count: head.operation_count,
    };
    let (log, decisions, beliefs, open, kids) = tokio::join!(
        logs.load(store, project, log_head),
        decisions::of_session(store, project, sid),
        beliefs::affected_by_session(store, project, sid),
        unfinished(store, project, sid),
        children(store, project, sid),
    );
    let (log, decisions, beliefs_affected, unfinished, children) =
        (log?, decisions?, beliefs?, open?, kids?);
    let ops = &log.ops;
    let fetched_ms = started.elapsed().as_millis() as u64;
    let (mut narrative, narrative_source) = match head.llm_summary.as_deref() {
        Some(s) if !s.trim().is_empty() => (s.to_string(), "llm"),
        _ => (narrate(&head, ops, &decisions, &unfinished), "graph"),
    };
    for c in &children {
        narrative.push_str(&format!("\n- {}", c.line()));
    }
    let total = ops.len();
    let kept: Vec<&OperationView> = ops
        .iter()
        .map(Arc::as_ref)
        .filter(|o| passes(&filter, &o.kind))
        .collect();
    let passing = kept.len();
    // Cut first, so only what is returned is copied out of the shared log.
    let operations: Vec<OperationView> = cut(kept, filter.max_operations)
        .into_iter()
        .cloned()
        .collect();
    tracing::debug!(
        session.id = %sid,
        operations.total = total,
        operations.returned = operations.len(),
        fetched_ms,
        duration_ms = started.elapsed().as_millis() as u64,
        "session reconstructed"
    );
    Ok(Reconstruction {
        session_id: head.id.clone(),
        task: head.task.clone(),
        status: head.status.clone(),
        narrative,
        narrative_source: narrative_source.into(),
        operations_omitted: (passing - operations.len()) as u64,
        operations,
        operations_total: total as u64,
        decisions: if filter.decisions {
            decisions
        } else {
            Vec::new()
        },
        beliefs_affected,
        unfinished,
        children,
    })
}

/// What a session left open: the todos of its last todo list that are not completed, then
/// the next steps given when it closed (a next step already listed as a todo is not
/// repeated). Nothing is inferred beyond those two sources.
pub async fn unfinished(
    store: &Store,
    project: &str,
    session_id: &str,
) -> StoreResult<Vec<Unfinished>> {
    let Some((lists, next_steps)) = sessions::unfinished(store, project, session_id).await? else {
        return Ok(Vec::new());
    };
    let todos = serde_json::to_string(&fold_todos(&lists)).ok();
    Ok(open_items(todos.as_deref(), &next_steps))
}

/// Tools (and Claude Code hook events) whose `todo` operation updates single items of the
/// list, by id, rather than giving the whole list.
pub const TODO_UPDATES: [&str; 4] = ["TaskCreate", "TaskUpdate", "TaskCreated", "TaskCompleted"];

/// The session's todo list after its todo operations in order: a whole list (TodoWrite, the
/// API) replaces it; an update (TaskCreate, TaskUpdate, …) changes the item with its id, or
/// adds it. An update without a subject (`task <id>`) keeps the content already known.
pub fn fold_todos(ops: &[TodoOp]) -> Vec<Todo> {
    let mut list: Vec<Todo> = Vec::new();
    for op in ops {
        let items: Vec<Todo> = op
            .todos
            .as_deref()
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default();
        if !op
            .tool
            .as_deref()
            .is_some_and(|t| TODO_UPDATES.contains(&t))
        {
            list = items;
            continue;
        }
        for item in items {
            let found = item
                .id
                .as_ref()
                .and_then(|id| list.iter_mut().find(|t| t.id.as_ref() == Some(id)));
            match found {
                Some(t) => {
                    t.status = item.status;
                    if Some(&item.content) != item.id.as_ref().map(|i| format!("task {i}")).as_ref()
                    {
                        t.content = item.content;
                    }
                }
                None => list.push(item),
            }
        }
    }
    list
}

/// The pure half of [`unfinished`].
pub fn open_items(todos_json: Option<&str>, next_steps: &[String]) -> Vec<Unfinished> {
    let todos: Vec<Todo> = todos_json
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_default();
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    for t in todos {
        if t.status == "completed" || t.content.trim().is_empty() {
            continue;
        }
        if seen.insert(t.content.trim().to_lowercase()) {
            out.push(Unfinished {
                content: t.content,
                source: "todo".into(),
                status: Some(t.status),
            });
        }
    }
    for step in next_steps {
        if !step.trim().is_empty() && seen.insert(step.trim().to_lowercase()) {
            out.push(Unfinished {
                content: step.clone(),
                source: "next_step".into(),
                status: None,
            });
        }
    }
    out
}

/// Lists up to `max` items, then "and N more".
fn listing(items: &BTreeSet<&str>, max: usize) -> String {
    let shown: Vec<&str> = items.iter().take(max).copied().collect();
    let mut s = shown.join(", ");
    if items.len() > max {
        s.push_str(&format!(" and {} more", items.len() - max));
    }
    s
}

/// The deterministic narrative: what the session set out to do, read, decided, wrote, ran,
/// and left open, from the stored operations only.
pub fn narrate(
    head: &SessionHead,
    ops: &[Arc<OperationView>],
    decisions: &[DecisionView],
    open: &[Unfinished],
) -> String {
    let mut parts = Vec::new();
    let who = head.agent.as_deref().unwrap_or("an agent");
    match head.task.as_deref() {
        Some(t) if !t.trim().is_empty() => parts.push(format!(
            "Session {} ({who}, {}) worked on: {}.",
            head.id,
            head.status,
            t.trim()
        )),
        _ => parts.push(format!("Session {} ({who}, {}).", head.id, head.status)),
    }
    if let Some(s) = head.summary.as_deref().filter(|s| !s.trim().is_empty()) {
        parts.push(format!("Summary: {}.", s.trim().trim_end_matches('.')));
    }
    let mut read = BTreeSet::new();
    let mut written = BTreeSet::new();
    let (mut tools, mut searches, mut turns, mut failed) = (0, 0, 0, 0);
    for o in ops {
        read.extend(o.files_read.iter().map(String::as_str));
        written.extend(o.files_modified.iter().map(String::as_str));
        match o.kind.as_str() {
            "tool_call" => tools += 1,
            "search" => searches += 1,
            "message" => turns += 1,
            _ => {}
        }
        if o.status.as_deref() == Some("failed") {
            failed += 1;
        }
    }
    if ops.is_empty() {
        parts.push("No operations were recorded.".into());
    }
    if !read.is_empty() {
        parts.push(format!(
            "It read {} file(s): {}.",
            read.len(),
            listing(&read, 8)
        ));
    }
    if !decisions.is_empty() {
        let ds: Vec<String> = decisions
            .iter()
            .map(|d| format!("{} → {}", d.subject, d.choice))
            .collect();
        parts.push(format!("It decided: {}.", ds.join("; ")));
    }
    if !written.is_empty() {
        parts.push(format!(
            "It wrote {} file(s): {}.",
            written.len(),
            listing(&written, 8)
        ));
    }
    if tools + searches + turns > 0 {
        parts.push(format!(
            "It ran {tools} tool call(s) and {searches} search(es) over {turns} conversation turn(s)."
        ));
    }
    if failed > 0 {
        parts.push(format!("{failed} operation(s) failed."));
    }
    if !open.is_empty() {
        let items: Vec<&str> = open.iter().map(|u| u.content.as_str()).collect();
        parts.push(format!("Left open: {}.", items.join("; ")));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(seq: i64, kind: &str) -> OperationView {
        OperationView {
            id: format!("o{seq}"),
            seq,
            kind: kind.into(),
            target: None,
            summary: format!("{kind} {seq}"),
            status: Some("ok".into()),
            at: seq,
            tokens: 3,
            ..Default::default()
        }
    }

    #[test]
    fn cut_keeps_the_most_important_in_seq_order() {
        let ops = vec![
            op(1, "read"),
            op(2, "decision"),
            op(3, "search"),
            op(4, "write"),
            op(5, "tool_call"),
            op(6, "read"),
        ];
        let kept: Vec<i64> = cut(ops.clone(), 3).iter().map(|o| o.seq).collect();
        assert_eq!(kept, vec![2, 4, 5]);
        let kept: Vec<i64> = cut(ops.clone(), 5).iter().map(|o| o.seq).collect();
        assert_eq!(kept, vec![2, 3, 4, 5, 6], "the newer read wins");
        assert_eq!(cut(ops, 10).len(), 6);
    }

    #[test]
    fn open_items_are_open_todos_then_new_next_steps() {
        let todos = r#"[{"content":"write tests","status":"completed"},
                        {"content":"Fix the parser","status":"in_progress"},
                        {"content":"ship","status":"pending"}]"#;
        let got = open_items(
            Some(todos),
            &["fix the parser".into(), "tag a release".into()],
        );
        let contents: Vec<&str> = got.iter().map(|u| u.content.as_str()).collect();
        assert_eq!(contents, vec!["Fix the parser", "ship", "tag a release"]);
        assert_eq!(got[2].source, "next_step");
        assert!(open_items(None, &[]).is_empty());
        assert!(open_items(Some("not json"), &[]).is_empty());
    }
}
