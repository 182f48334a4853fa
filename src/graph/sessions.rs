//! Sessions: start (with the links of a child session to its parent and to the operation
//! that launched it), close, look up, the idle sweep, and what a session without a summary is
//! summed up from (`capture::summary`).

use serde::{Deserialize, Serialize};

use super::{now_ms, statement, Store, StoreResult, Tx};
use crate::capture::summary::{self, Material};
use crate::claude::mapping::COMPACTION_TOOL;
use crate::config::Encoding;
use crate::domain::{
    record::{NewClose, NewSession},
    turn_text,
};

/// A session as stored.
#[derive(Clone, Debug, Serialize, Deserialize, poem_openapi::Object)]
pub struct SessionRow {
    pub id: String,
    pub project: String,
    pub agent: Option<String>,
    pub task: Option<String>,
    pub cwd: Option<String>,
    pub status: String,
    pub summary: Option<String>,
    pub next_steps: Vec<String>,
    /// Epoch milliseconds.
    pub started_at: i64,
    pub closed_at: Option<i64>,
    pub last_activity_at: i64,
    pub operation_count: i64,
    pub continues: Option<String>,
    /// A child session (a subagent's work): the session that launched it.
    #[serde(default)]
    pub parent: Option<String>,
    /// A child session: the operation (Task/Agent tool call) that launched it.
    #[serde(default)]
    pub spawned_by: Option<String>,
    /// A child session: the kind of subagent.
    #[serde(default)]
    pub agent_type: Option<String>,
}

pub async fn start(tx: &mut Tx, cmd: &NewSession) -> StoreResult<()> {
    tx.run(
        statement(include_str!("../../cypher/session_start.cypher"))
            .param("id", cmd.id.as_str())
            .param("project", cmd.project.as_str())
            .param("agent", cmd.agent.clone())
            .param("task", cmd.task.clone())
            .param("cwd", cmd.cwd.clone())
            .param("continues", cmd.continues.clone().unwrap_or_default())
            .param("parent", cmd.parent.clone())
            .param("spawned_by", cmd.spawned_by.clone())
            .param("agent_type", cmd.agent_type.clone())
            .param("at", cmd.at),
    )
    .await
}

pub async fn close(tx: &mut Tx, cmd: &NewClose) -> StoreResult<()> {
    tx.run(
        statement(include_str!("../../cypher/session_close.cypher"))
            .param("id", cmd.id.as_str())
            .param("project", cmd.project.as_str())
            .param("status", cmd.status.as_str())
            .param("summary", cmd.summary.clone())
            .param("next_steps", cmd.next_steps.clone())
            .param(
                "search_text",
                turn_text::session_summary(cmd.summary.as_deref(), &cmd.next_steps),
            )
            .param("at", cmd.at),
    )
    .await
}

/// The session with this id, whatever its project (callers check the project).
pub async fn get(store: &Store, id: &str) -> StoreResult<Option<SessionRow>> {
    store
        .fetch_one(statement(include_str!("../../cypher/session_get.cypher")).param("id", id))
        .await
}

/// What the summary of session `id` would be derived from, read inside the transaction
/// that closes it (operations spooled before the close are written by then).
pub async fn summary_material(tx: &mut Tx, project: &str, id: &str) -> StoreResult<Material> {
    Ok(tx
        .fetch::<Material>(material_query(project, id))
        .await?
        .into_iter()
        .next()
        .unwrap_or_default())
}

fn material_query(project: &str, id: &str) -> neo4rs::Query {
    statement(include_str!("../../cypher/session_summary_material.cypher"))
        .param("id", id)
        .param("project", project)
        .param("compaction", COMPACTION_TOOL)
}

/// Marks sessions idle since before `cutoff_ms` as abandoned, each summed up from what it
/// holds when it has no summary; returns how many were abandoned.
pub async fn abandon_idle(store: &Store, cutoff_ms: i64, encoding: Encoding) -> StoreResult<i64> {
    #[derive(Deserialize)]
    struct Row {
        project: String,
        id: String,
        needs_summary: bool,
    }
    let rows: Vec<Row> = store
        .fetch(
            statement(include_str!("../../cypher/sessions_abandon_idle.cypher"))
                .param("cutoff", cutoff_ms)
                .param("now", now_ms()),
        )
        .await?;
    let mut derived = Vec::new();
    for r in rows.iter().filter(|r| r.needs_summary) {
        let Some(m) = store
            .fetch_one::<Material>(material_query(&r.project, &r.id))
            .await?
        else {
            continue;
        };
        if let Some(text) = summary::derive(&m, encoding) {
            derived.push(serde_json::json!({"project": r.project, "id": r.id, "summary": text}));
        }
    }
    if !derived.is_empty() {
        store
            .run(
                statement(include_str!("../../cypher/sessions_set_summary.cypher"))
                    .param("rows", super::param(&derived)?),
            )
            .await?;
    }
    Ok(rows.len() as i64)
}

/// Sessions and their operations on one day (days since the epoch, UTC).
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ActiveDay {
    pub day: i64,
    pub sessions: i64,
    pub operations: i64,
}

/// Days with sessions last active since `since_ms`, oldest first.
pub async fn activity(store: &Store, project: &str, since_ms: i64) -> StoreResult<Vec<ActiveDay>> {
    store
        .fetch(
            statement(include_str!("../../cypher/sessions_activity.cypher"))
                .param("project", project)
                .param("since", since_ms),
        )
        .await
}

/// An operation of a session triggered by another operation.
#[derive(Clone, Debug, Deserialize)]
pub struct Trigger {
    pub seq: i64,
    pub by_id: String,
    pub by_seq: Option<i64>,
    pub by_session: Option<String>,
}

/// What surrounds a session: the sessions continuing it, its parent, its triggered-by links.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct SessionLinks {
    pub continued_by: Vec<String>,
    pub parent: Option<String>,
    pub triggers: Vec<Trigger>,
}

/// The links around session `id` of `project` (empty when there is no such session).
pub async fn links(store: &Store, project: &str, id: &str) -> StoreResult<SessionLinks> {
    Ok(store
        .fetch_one(
            statement(include_str!("../../cypher/session_links.cypher"))
                .param("project", project)
                .param("session_id", id),
        )
        .await?
        .unwrap_or_default())
}
